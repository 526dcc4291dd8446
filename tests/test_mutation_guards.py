"""Guards for behaviours a mutation review found unprotected: replay scheduling, clipping, skipping,
set_env, saved counters, inference aliases, validation, seeding, kept LSTM states, presets, buffer files.
"""

from __future__ import annotations

import io
import pathlib

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env

from sb3_acer import ACER
from sb3_acer.presets import _whole
from sb3_acer.segment import Segment
from sb3_acer.serialization.replay_file import ReplayBufferFileError, load_buffer, save_buffer


def flat_weights(model: ACER) -> th.Tensor:
    return th.cat([p.detach().flatten().clone() for p in model.policy.parameters()])


# ---------------------------------------------------------------------------------------------- replay


def test_replay_starts_once_memory_holds_replay_start_steps() -> None:
    """Replay begins in the very segment after which the memory holds ``replay_start`` steps per env."""
    model = ACER(
        "MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=50, replay_start=5, buffer_size=100, seed=0
    ).learn(5)
    assert model.replay_buffer is not None and model.replay_buffer.has_at_least(5)
    assert model._n_replay_updates > 0


def test_replay_count_per_update_is_poisson(monkeypatch: pytest.MonkeyPatch) -> None:
    """The number of replayed updates after each segment is drawn from Poisson(replay_ratio), not rounded."""
    model = ACER(
        "MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0.5, replay_start=5, buffer_size=100, seed=0
    )
    counts: list[int] = []
    train = model.train

    def counting_train(segment: Segment) -> None:
        before = model._n_replay_updates
        train(segment)
        counts.append(model._n_replay_updates - before)

    monkeypatch.setattr(model, "train", counting_train)
    model.learn(500)
    assert len(counts) == 100
    assert 25 <= sum(counts) <= 80  # mean 50 = 0.5 x 100 segments
    assert 0 in counts and 1 in counts and max(counts) >= 2  # varies from segment to segment


# ---------------------------------------------------------------------------------------------- updates


def test_max_grad_norm_clips_the_update_step() -> None:
    """With ``max_grad_norm`` the applied step is scaled down to about lr x max_grad_norm (RMSProp ms ~ 1)."""

    def step_norm(max_grad_norm: float | None) -> float:
        model = ACER(
            "MlpPolicy",
            "CartPole-v1",
            n_steps=5,
            replay_ratio=0,
            max_grad_norm=max_grad_norm,
            lr_schedule="constant",
            seed=0,
        )
        before = flat_weights(model)
        model.learn(5)
        assert model._n_updates == 1
        return float((flat_weights(model) - before).norm())

    clipped, unclipped = step_norm(1e-6), step_norm(None)
    assert 0.0 < clipped <= 1.1 * 7e-4 * 1e-6
    assert unclipped > 1e-4


def test_update_with_non_finite_gradients_is_skipped() -> None:
    """An update with a non-finite gradient norm (finite loss) is skipped, counted and not applied."""
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0, lr_schedule="constant", seed=0)
    weight = model.policy.action_net.weight
    weight.register_hook(lambda grad: grad * float("inf"))
    model.learn(10)
    assert model.n_skipped_updates == 2
    assert model._n_updates == 0
    assert all(bool(th.isfinite(p).all()) for p in model.policy.parameters())


# ---------------------------------------------------------------------------------------------- set_env


def test_set_env_on_model_loaded_without_env_creates_replay_memory(tmp_path: pathlib.Path) -> None:
    """``set_env`` on a model loaded without an env makes the replay memory, so that replay then happens."""
    path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_start=5, buffer_size=100, seed=0).save(path)
    model = ACER.load(path)
    assert model.replay_buffer is None
    model.set_env(gym.make("CartPole-v1"))
    model.learn(100)
    assert model.replay_buffer is not None
    assert model._n_replay_updates > 0


def test_set_env_with_other_number_of_envs_resets_even_without_force_reset() -> None:
    """``set_env(force_reset=False)`` still resets when the number of envs changes."""
    model = ACER("MlpPolicy", make_vec_env("CartPole-v1", n_envs=1), n_steps=5, seed=0).learn(10)
    model.set_env(make_vec_env("CartPole-v1", n_envs=2), force_reset=False)
    assert model._last_obs is None
    model.learn(20)
    assert model._last_obs is not None and model._last_obs.shape == (2, 4)


# ---------------------------------------------------------------------------------------------- save / load


def test_skipped_updates_and_total_timesteps_survive_save_load(tmp_path: pathlib.Path) -> None:
    """``n_skipped_updates`` and ``_total_timesteps`` are saved and restored."""
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, seed=0).learn(50)
    model.n_skipped_updates = 3
    path = tmp_path / "model.zip"
    model.save(path)
    loaded = ACER.load(path)
    assert loaded.n_skipped_updates == 3
    assert loaded._total_timesteps == 50


# ---------------------------------------------------------------------------------------------- inference


def test_action_probability_logp_without_actions_returns_log_probabilities() -> None:
    """``action_probability(obs, logp=True)`` gives the log of every action's probability."""
    model = ACER("MlpPolicy", "CartPole-v1", seed=0)
    obs = np.array([0.1, -0.2, 0.03, 0.4], dtype=np.float32)
    probs = model.action_probability(obs)
    logp = model.action_probability(obs, logp=True)
    assert logp.shape == (2,)
    np.testing.assert_allclose(logp, np.log(probs), rtol=1e-6)
    assert (logp < 0).all()


def test_predict_mask_alias_resets_recurrent_state() -> None:
    """SB2's ``mask=`` in ``predict`` marks episode starts: the LSTM state is reset as for a fresh predict."""
    model = ACER("MlpLstmPolicy", "CartPole-v1", seed=0)
    obs = np.ones((1, 4), dtype=np.float32)
    _, state = model.predict(obs)
    assert state is not None
    _, carried = model.predict(obs, state=state)
    _, masked = model.predict(obs, state=state, mask=np.array([True]))
    _, fresh = model.predict(obs)
    assert masked is not None and fresh is not None and carried is not None
    np.testing.assert_allclose(masked[0], fresh[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(masked[1], fresh[1], rtol=1e-6, atol=1e-7)
    assert not np.allclose(carried[0], fresh[0])


# ---------------------------------------------------------------------------------------------- validation


def test_rprop_alpha_accepts_one_and_refuses_outside_zero_one() -> None:
    """``rprop_alpha`` must lie in (0, 1]: 1.0 is accepted, 0 and 1.0001 are refused."""
    model = ACER("MlpPolicy", "CartPole-v1", rprop_alpha=1.0)
    assert model.rprop_alpha == 1.0
    with pytest.raises(ValueError, match=r"^rprop_alpha must be in \(0, 1\], got 0$"):
        ACER("MlpPolicy", "CartPole-v1", rprop_alpha=0)
    with pytest.raises(ValueError, match=r"^rprop_alpha must be in \(0, 1\], got 1\.0001$"):
        ACER("MlpPolicy", "CartPole-v1", rprop_alpha=1.0001)


# ------------------------------------------------------------------------------------------- learn / seeding


def test_learn_with_reset_num_timesteps_clears_episode_statistics() -> None:
    """``learn(reset_num_timesteps=True)`` starts the episode statistics afresh."""
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, seed=0).learn(300)
    monitor = model.get_env().envs[0]  # type: ignore[union-attr]
    n_before = len(monitor.get_episode_rewards())
    assert len(model.ep_info_buffer) == n_before > 0
    model.learn(5, reset_num_timesteps=True)
    assert len(model.ep_info_buffer) == len(monitor.get_episode_rewards()) - n_before == 0


def test_set_random_seed_reseeds_replay_sampling() -> None:
    """``set_random_seed(s)`` reseeds the replay memory: the same seed gives the same sample."""
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, buffer_size=100, replay_start=5, seed=0).learn(100)
    assert model.replay_buffer is not None
    samples = []
    for _ in range(2):
        model.set_random_seed(1)
        samples.append(
            (model.replay_buffer.sample_slots().copy(), model.replay_buffer.sample().actions.copy())
        )
    np.testing.assert_array_equal(samples[0][0], samples[1][0])
    np.testing.assert_array_equal(samples[0][1], samples[1][1])


# ---------------------------------------------------------------------------------------------- policies


def test_forward_sequence_keeps_state_after_second_to_last_step() -> None:
    """``keep_states_at=[[T-2, 0]]`` returns the state after step T-2, i.e. that of running T-1 steps."""
    model = ACER("MlpLstmPolicy", "CartPole-v1", seed=0)
    policy = model.policy
    n_steps = 4
    generator = th.Generator().manual_seed(0)
    obs = th.randn(n_steps, 1, 4, generator=generator)
    starts = th.zeros(n_steps, 1, dtype=th.bool)
    state = policy.initial_state(1)
    with th.no_grad():
        out = policy.forward_sequence(obs, starts, state, keep_states_at=np.array([[n_steps - 2, 0]]))
        ref = policy.forward_sequence(obs[: n_steps - 1], starts[: n_steps - 1], state)
        full = policy.forward_sequence(obs, starts, state)
    assert out.kept_state is not None
    for kept, expected in zip(out.kept_state, ref.state, strict=True):
        assert tuple(kept.shape) == (1, 1, policy.n_lstm)
        th.testing.assert_close(kept, expected)
    th.testing.assert_close(out.logits, full.logits)
    th.testing.assert_close(out.state[0], full.state[0])


# ---------------------------------------------------------------------------------------------- presets


@pytest.mark.parametrize("key", ["n_envs", "n_timesteps"])
def test_preset_counts_must_be_positive(key: str) -> None:
    """A preset's ``n_envs`` / ``n_timesteps`` of 0 is refused; 1 and ``1e6`` are accepted."""
    with pytest.raises(ValueError, match=rf"^{key} must be a positive integer, got 0$"):
        _whole(0, key)
    assert _whole(1, key) == 1
    assert _whole("1e6", key) == 1_000_000


# ---------------------------------------------------------------------------------------------- buffer files


def test_saved_buffer_with_next_idx_at_capacity_is_refused() -> None:
    """A replay buffer file whose ``next_idx`` equals the capacity (one past the end) is refused on load."""
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, buffer_size=20, replay_start=5, seed=0).learn(10)
    buffer = model.replay_buffer
    assert buffer is not None and buffer.capacity == 4
    buffer.next_idx = buffer.capacity
    handle = io.BytesIO()
    save_buffer(buffer, handle)
    handle.seek(0)
    with pytest.raises(ReplayBufferFileError, match=r"next_idx=4 outside \[0, 3\]"):
        load_buffer(handle)

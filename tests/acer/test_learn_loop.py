"""The learn loop (``ACER.learn``): when replay starts and how often it runs, clipped and skipped updates, the
learning-rate schedule across calls, ``set_env`` between calls, and reseeding."""

from __future__ import annotations

import csv
import pathlib
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import IdentityEnv
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER
from sb3_acer.common.callbacks import make_callback
from sb3_acer.common.rollout import StepRecord, collect_segment
from sb3_acer.common.type_aliases import Segment
from tests.helpers.acer_envs import ResetCounter


def read_csv_log(folder: pathlib.Path) -> list[dict[str, str]]:
    with open(folder / "progress.csv") as handle:
        return list(csv.DictReader(handle))


def flat_weights(model: ACER) -> th.Tensor:
    return th.cat([p.detach().flatten().clone() for p in model.policy.parameters()])


# ---------------------------------------------------------------------------------------------- replay


def test_learn_runs_on_policy_and_replay_updates() -> None:
    # End to end: construct, learn a few iterations with replay, predict.
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_start=10, buffer_size=50, seed=0)
    model.learn(total_timesteps=200)
    assert model.num_timesteps == 200
    assert model._n_updates > 40  # 40 on-policy updates plus the replayed ones
    assert model._n_replay_updates > 0
    action, state = model.predict(np.zeros(4, dtype=np.float32))
    assert state is None
    assert action.shape == ()


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


def test_replay_ratio_zero_disables_replay(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", replay_ratio=0, **small_settings)
    assert model.replay_buffer is None
    model.learn(100)
    assert model.replay_buffer is None
    assert model._n_updates == 20
    assert model._n_replay_updates == 0


def test_replay_starts_only_after_replay_start() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, buffer_size=100, replay_start=50, seed=0)
    model.learn(45)  # 9 segments stored, replay needs 50 // 5 = 10
    assert model._n_updates == 9
    assert model._n_replay_updates == 0
    assert model.replay_buffer is not None and len(model.replay_buffer) == 9
    model.learn(200, reset_num_timesteps=False)  # 40 more iterations, each with Poisson(4) replays
    assert model._n_updates - model._n_replay_updates == 49
    assert 100 < model._n_replay_updates < 220
    assert len(model.replay_buffer) == 20  # capacity buffer_size // n_steps


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


# ------------------------------------------------------------------------------------ steps and learning rate


def test_learn_overshoots_to_a_whole_segment() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", replay_ratio=0, n_steps=10).learn(95)
    assert model.num_timesteps == 100


def test_learn_without_env_raises(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings)
    model.env = None
    with pytest.raises(ValueError, match="no environment"):
        model.learn(10)


def test_reset_num_timesteps_false_continues_steps_and_lr_schedule(tmp_path: pathlib.Path) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=10, replay_ratio=0, learning_rate=1e-3, seed=0)
    logger = configure(str(tmp_path), ["csv"])
    model.set_logger(logger)
    model.learn(100, log_interval=1)
    assert model.num_timesteps == 100
    assert model.current_learning_rate() == 0.0
    model.learn(100, log_interval=1, reset_num_timesteps=False)
    logger.close()
    assert model.num_timesteps == 200
    assert model._total_timesteps == 200

    rows = read_csv_log(tmp_path)
    steps = np.array([int(row["time/total_timesteps"]) for row in rows])
    learning_rates = np.array([float(row["train/learning_rate"]) for row in rows])
    np.testing.assert_array_equal(steps, np.arange(10, 201, 10))
    # First call: progress num_timesteps / 100; second call continues: num_timesteps / (100 + 100).
    expected = np.concatenate([1e-3 * (1 - steps[:10] / 100), 1e-3 * (1 - steps[10:] / 200)])
    np.testing.assert_allclose(learning_rates, expected, rtol=1e-6, atol=1e-12)
    assert (learning_rates >= 0).all()
    assert model.optimizer.param_groups[0]["lr"] == 0.0


def test_learning_rate_never_negative_when_total_is_not_a_multiple_of_the_batch() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=10, replay_ratio=0).learn(95)
    assert model._current_progress_remaining == 0.0
    assert model.current_learning_rate() == 0.0
    assert model.optimizer.param_groups[0]["lr"] == 0.0


def test_learning_rate_schedule_callable() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=10, replay_ratio=0, learning_rate=lambda p: 1e-3 * p)
    model.learn(40)
    assert model.current_learning_rate() == pytest.approx(0.0)
    model._current_progress_remaining = 0.25
    assert model.current_learning_rate() == pytest.approx(2.5e-4)


def test_repeated_learn_does_not_reset_the_env() -> None:
    """SB2's test_multiple_learn: 4 x learn(400) -> one reset; set_env(new env) -> one more, there."""

    def make() -> tuple[DummyVecEnv, ResetCounter]:
        counter = ResetCounter(IdentityEnv(dim=2, ep_length=10**10))
        return DummyVecEnv([lambda: counter]), counter

    venv, counter = make()
    model = ACER("MlpPolicy", venv, seed=0, n_steps=20, replay_start=200, buffer_size=400)
    for _ in range(4):
        model.learn(400)
    assert counter.n_resets == 1
    assert model.num_timesteps == 400  # reset_num_timesteps=True restarts the counter, not the env

    new_venv, new_counter = make()
    model.set_env(new_venv)
    for _ in range(4):
        model.learn(400)
    assert new_counter.n_resets == 1
    assert counter.n_resets == 1


def test_learn_with_reset_num_timesteps_clears_episode_statistics() -> None:
    """``learn(reset_num_timesteps=True)`` starts the episode statistics afresh."""
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, seed=0).learn(300)
    monitor = model.get_env().envs[0]  # type: ignore[union-attr]
    n_before = len(monitor.get_episode_rewards())
    assert len(model.ep_info_buffer) == n_before > 0
    model.learn(5, reset_num_timesteps=True)
    assert len(model.ep_info_buffer) == len(monitor.get_episode_rewards()) - n_before == 0


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


# ---------------------------------------------------------------------------------------------- seeding


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


def test_lr_schedule_is_sb3s_callable_and_takes_sb3s_idiom(small_settings: dict[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", learning_rate=1e-3, lr_schedule="linear", **small_settings)
    assert model.lr_schedule_name == "linear"
    assert model.lr_schedule(1.0) == pytest.approx(1e-3) and model.lr_schedule(0.25) == pytest.approx(2.5e-4)
    model.lr_schedule = "constant"  # one of SB2's names
    assert model.lr_schedule(0.25) == pytest.approx(1e-3)
    model.lr_schedule = lambda _: 0.0  # SB3's idiom: freeze the weights
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(40)
    assert model.current_learning_rate() == 0.0
    assert all(th.equal(p, q) for p, q in zip(before, model.policy.parameters(), strict=True))
    with pytest.raises(ValueError, match=r"^unknown lr_schedule 'cosine'; choose one of"):
        model.lr_schedule = "cosine"


class OwnCollector:
    """A collector of its own, as ``learn(..., actors=...)`` takes one: it steps an env of its own with
    ``collect_segment`` and drives the model through its public hook (``setup_learn``,
    ``learn_from_segment``), as Ray's learner does."""

    def __init__(self, seed: int, stop_at: int | None = None) -> None:
        self.env = make_vec_env("CartPole-v1", n_envs=2, seed=seed)
        self.stop_at = stop_at
        self.results: list[bool] = []

    def learn(self, model: ACER, total_timesteps: int, callback: Any, *args: Any) -> None:
        log_interval, tb_log_name, reset_num_timesteps, progress_bar = args
        total, callback_obj = model.setup_learn(
            total_timesteps,
            callback,
            reset_num_timesteps=reset_num_timesteps,
            tb_log_name=tb_log_name,
            progress_bar=progress_bar,
        )
        if self.stop_at is not None:
            callback_obj = make_callback(lambda locals_, globals_: model.num_timesteps < self.stop_at, False)
            callback_obj.init_callback(model)
        callback_obj.on_training_start(locals(), globals())
        obs, starts = self.env.reset(), np.ones(self.env.num_envs, dtype=bool)
        while model.num_timesteps < total:
            steps: list[StepRecord] = []
            result = collect_segment(
                env=self.env,
                policy=model.policy,
                n_steps=model.n_steps,
                last_obs=obs,
                last_episode_starts=starts,
                on_step=lambda record, steps=steps: steps.append(record) is None,  # every step, never stop
            )
            obs, starts = result.last_obs, result.last_episode_starts
            dones = [record.dones for record in steps]
            infos = [record.infos for record in steps]
            self.results.append(model.learn_from_segment(result.segment, dones, infos, callback_obj, total))
            if not self.results[-1]:
                break
        callback_obj.on_training_end()


def test_a_collector_of_its_own_drives_the_same_updates_through_the_public_hook() -> None:
    """The same segments, learned through ``learn_from_segment``, give the synchronous loop's weights."""
    settings: dict[str, Any] = dict(seed=3, n_steps=5, buffer_size=100, replay_start=10)
    synchronous = ACER("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=3), **settings).learn(60)
    driven = ACER("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=3), **settings)
    collector = OwnCollector(seed=3)
    assert driven.learn(60, actors=collector) is driven
    assert collector.results == [True] * 6
    assert driven.num_timesteps == synchronous.num_timesteps == 60
    assert driven._n_updates == synchronous._n_updates > 6  # replayed updates too
    assert th.equal(flat_weights(driven), flat_weights(synchronous))
    assert len(driven.ep_info_buffer) == len(synchronous.ep_info_buffer)


def test_learn_from_segment_trains_on_nothing_once_a_callback_stops() -> None:
    model = ACER(
        "MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), seed=0, n_steps=5, replay_ratio=0
    )
    before = flat_weights(model)
    collector = OwnCollector(seed=0, stop_at=14)  # stops at the second segment's second step (14 steps)
    model.learn(100, actors=collector)
    assert collector.results == [True, False]
    assert model.num_timesteps == 14
    assert model._n_updates == 1
    assert not th.equal(flat_weights(model), before)

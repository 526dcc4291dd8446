"""The public API: construction, validation, learn, predict and action_probability."""

from __future__ import annotations

import csv
import pathlib
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from acer_envs import CounterEnv, ObservationSpaceEnv, ResetCounter
from gymnasium import spaces
from gymnasium.wrappers import TimeLimit
from stable_baselines3.common.envs import IdentityEnv
from stable_baselines3.common.logger import configure
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.policies import ActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, FlattenExtractor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from sb3_acer import ACER, CnnPolicy, MlpPolicy, UnsupportedSpaceError
from sb3_acer import functional as F
from sb3_acer.rollout import collect_segment
from sb3_acer.segment import Segment
from sb3_acer.update import UpdateConfig, compute_gradients

SMALL = dict(n_steps=5, buffer_size=50, replay_start=10)


def read_csv_log(folder: pathlib.Path) -> list[dict[str, str]]:
    with open(folder / "progress.csv") as handle:
        return list(csv.DictReader(handle))


# ---------------------------------------------------------------------------------------------- construction


def test_env_as_id_string() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **SMALL)
    assert isinstance(model.get_env(), DummyVecEnv)
    assert model.n_envs == 1
    assert model.observation_space == gym.make("CartPole-v1").observation_space
    assert model.action_space == spaces.Discrete(2)


def test_gymnasium_env_is_wrapped_in_monitor_and_dummy_vec_env() -> None:
    model = ACER("MlpPolicy", gym.make("CartPole-v1"), **SMALL)
    env = model.get_env()
    assert isinstance(env, DummyVecEnv)
    assert isinstance(env.envs[0], Monitor)


def test_dummy_vec_env_with_three_envs_learns() -> None:
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1") for _ in range(3)])
    model = ACER("MlpPolicy", venv, seed=0, **SMALL).learn(60)
    assert model.n_envs == 3
    assert model.num_timesteps == 60  # 4 segments of 5 steps x 3 envs
    assert model.replay_buffer is not None and model.replay_buffer.n_envs == 3


def test_subproc_vec_env_learns() -> None:
    venv = SubprocVecEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    try:
        model = ACER("MlpPolicy", venv, seed=0, **SMALL).learn(60)
        assert model.num_timesteps == 60
        assert model._n_replay_updates > 0
        actions, _ = model.predict(venv.reset())
        assert actions.shape == (2,)
    finally:
        venv.close()


def test_policy_by_class_and_by_name() -> None:
    assert ACER(MlpPolicy, "CartPole-v1").policy_class is MlpPolicy
    assert ACER("MlpPolicy", "CartPole-v1").policy_class is MlpPolicy
    assert isinstance(ACER("MlpPolicy", "CartPole-v1").policy, MlpPolicy)
    assert ACER("CnnPolicy", "CartPole-v1", _init_setup_model=False).policy_class is CnnPolicy


def test_unknown_policy_name_raises() -> None:
    with pytest.raises(ValueError, match="unknown policy 'LstmPolicy'"):
        ACER("LstmPolicy", "CartPole-v1")


def test_policy_class_of_another_algorithm_raises() -> None:
    with pytest.raises(ValueError, match="ACERPolicy subclass"):
        ACER(ActorCriticPolicy, "CartPole-v1")  # type: ignore[arg-type]


class _ActionSpaceEnv(gym.Env):
    def __init__(self, action_space: spaces.Space) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = action_space


@pytest.mark.parametrize(
    ("action_space", "name"),
    [
        (spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32), "Box"),
        (spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32), "Box"),
        (spaces.MultiDiscrete([2, 3]), "MultiDiscrete"),
        (spaces.MultiBinary(3), "MultiBinary"),
    ],
)
def test_non_discrete_action_spaces_are_refused(action_space: spaces.Space, name: str) -> None:
    with pytest.raises(UnsupportedSpaceError, match=f"{name} actions are not supported") as info:
        ACER("MlpPolicy", _ActionSpaceEnv(action_space))
    assert str(action_space) in str(info.value)
    assert isinstance(info.value, ValueError)


def test_discrete_spaces_with_non_zero_start_are_refused() -> None:
    with pytest.raises(
        UnsupportedSpaceError, match=r"Discrete action spaces that start at 0, got Discrete\(3, start=1\)"
    ):
        ACER("MlpPolicy", _ActionSpaceEnv(spaces.Discrete(3, start=1)))
    env = ObservationSpaceEnv(spaces.MultiDiscrete([2, 3], start=[0, 1]))
    with pytest.raises(UnsupportedSpaceError, match="MultiDiscrete observation spaces that start at 0"):
        ACER("MlpPolicy", env)


@pytest.mark.parametrize("policy", ["MlpPolicy", MlpPolicy])
def test_dict_observation_space_is_refused(policy: str | type[MlpPolicy]) -> None:
    env = ObservationSpaceEnv(spaces.Dict({"a": spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)}))
    with pytest.raises(UnsupportedSpaceError, match="observations, got Dict"):
        ACER(policy, env)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(n_steps=0), "n_steps must be positive"),
        (dict(n_steps=-3), "n_steps must be positive"),
        (dict(n_steps=2.5), "n_steps must be an integer"),
        (dict(n_steps=20, buffer_size=19), "buffer_size must be at least n_steps"),
        (dict(buffer_size=100, replay_start=101), "replay_start must not exceed buffer_size"),
        (dict(replay_ratio=-1), "replay_ratio must be non-negative"),
        (dict(correction_term=0.0), "correction_term must be positive"),
        (dict(correction_term=-1.0), "correction_term must be positive"),
        (dict(delta=0.0), "delta must be positive"),
        (dict(alpha=1.0), r"alpha must be in \[0, 1\)"),
        (dict(alpha=-0.1), r"alpha must be in \[0, 1\)"),
        (dict(gamma=1.01), r"gamma must be in \[0, 1\]"),
        (dict(gamma=-0.5), r"gamma must be in \[0, 1\]"),
        (dict(lr_schedule="cosine"), "unknown lr_schedule 'cosine'"),
        (dict(learning_rate=0.0), "learning_rate must be a positive finite number"),
        (dict(max_grad_norm=0.0), "max_grad_norm must be a positive number"),
        (dict(num_procs=0), "num_procs must be a positive integer"),
        (dict(trust_region="False"), "trust_region must be True or False, got 'False'"),
        (dict(handle_timeout_termination=0), "handle_timeout_termination must be True or False, got 0"),
        (dict(retrace_lambda=1.5), r"retrace_lambda must be a number in \[0, 1\], got 1.5"),
        (dict(retrace_lambda=-0.1), r"retrace_lambda must be a number in \[0, 1\], got -0.1"),
        (dict(retrace_lambda="0.9"), r"retrace_lambda must be a number in \[0, 1\], got '0.9'"),
        (dict(q_lr_ratio=0.0), "q_lr_ratio must be a positive number, got 0.0"),
        (dict(q_lr_ratio=-2), "q_lr_ratio must be a positive number, got -2"),
        (dict(q_lr_ratio=float("inf")), "q_lr_ratio must be a positive number, got inf"),
        (dict(q_lr_ratio="3"), "q_lr_ratio must be a positive number, got '3'"),
    ],
)
def test_invalid_hyperparameters_raise_value_error_naming_them(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ACER("MlpPolicy", "CartPole-v1", **kwargs)


def test_boundary_hyperparameters_are_accepted() -> None:
    # The ends of the documented ranges are valid; a small buffer is fine without replay.
    ACER("MlpPolicy", "CartPole-v1", gamma=1.0, alpha=0.0, _init_setup_model=False)
    ACER("MlpPolicy", "CartPole-v1", gamma=0.0, _init_setup_model=False)
    ACER("MlpPolicy", "CartPole-v1", retrace_lambda=0.0, _init_setup_model=False)
    ACER("MlpPolicy", "CartPole-v1", retrace_lambda=1, _init_setup_model=False)
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=20, buffer_size=1, replay_ratio=0)
    assert model.replay_buffer is None


def test_unknown_policy_kwargs_raise() -> None:
    with pytest.raises(ValueError, match="Unknown keywords for policy: \\['bad'\\]"):
        ACER("MlpPolicy", "CartPole-v1", policy_kwargs=dict(bad=1))


def test_num_procs_sets_torch_threads() -> None:
    # The autouse fixture in conftest.py restores the thread count afterwards.
    ACER("MlpPolicy", "CartPole-v1", num_procs=2, _init_setup_model=False)
    assert th.get_num_threads() == 2
    ACER("MlpPolicy", "CartPole-v1", num_procs=1, _init_setup_model=False)
    assert th.get_num_threads() == 1


# ---------------------------------------------------------------------------------------------- learn


def test_replay_ratio_zero_disables_replay() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", replay_ratio=0, seed=0, **SMALL)
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


def test_learn_overshoots_to_a_whole_segment() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", replay_ratio=0, n_steps=10).learn(95)
    assert model.num_timesteps == 100


def test_learn_rejects_bad_total_timesteps() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **SMALL)
    with pytest.raises(ValueError, match="total_timesteps"):
        model.learn(-1)


def test_learn_without_env_raises() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **SMALL)
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


# ---------------------------------------------------------------------------------------------- truncation


def _truncation_venv() -> DummyVecEnv:
    # env 0 is cut by TimeLimit after 3 steps; env 1 terminates by itself after 3 steps.
    return DummyVecEnv(
        [lambda: TimeLimit(CounterEnv(terminate_at=100), max_episode_steps=3), lambda: CounterEnv(3)]
    )


def _truncation_segment(handle_timeout_termination: bool = True) -> tuple[Segment, ACER]:
    venv = _truncation_venv()
    model = ACER("MlpPolicy", venv, replay_ratio=0, seed=0)
    result = collect_segment(
        env=venv,
        policy=model.policy,
        n_steps=7,
        last_obs=venv.reset(),
        last_episode_starts=np.ones(2, dtype=bool),
        on_step=lambda record: True,
        handle_timeout_termination=handle_timeout_termination,
    )
    assert result.segment is not None
    return result.segment, model


def test_collect_segment_marks_truncation_and_termination() -> None:
    segment, _ = _truncation_segment()
    cut = np.array([0, 0, 1, 0, 0, 1, 0], dtype=bool)
    np.testing.assert_array_equal(segment.truncated[:, 0], cut)
    np.testing.assert_array_equal(segment.terminated[:, 0], np.zeros(7, dtype=bool))
    np.testing.assert_array_equal(segment.terminated[:, 1], cut)
    np.testing.assert_array_equal(segment.truncated[:, 1], np.zeros(7, dtype=bool))
    np.testing.assert_array_equal(segment.final_index, [[2, 0], [5, 0]])
    np.testing.assert_array_equal(segment.final_observations, [[3.0], [3.0]])
    # x_{t+1} after a cut is the reset observation of the next episode, for both envs.
    np.testing.assert_array_equal(segment.observations[:, 0, 0], [0, 1, 2, 0, 1, 2, 0, 1])
    np.testing.assert_array_equal(segment.observations[:, 1, 0], [0, 1, 2, 0, 1, 2, 0, 1])
    np.testing.assert_array_equal(segment.episode_starts[:, 0], [1, 0, 0, 1, 0, 0, 1, 0])
    np.testing.assert_array_equal(segment.rewards, np.ones((7, 2)))


def test_collect_segment_records_timeouts_as_terminations_when_not_handled() -> None:
    segment, _ = _truncation_segment(handle_timeout_termination=False)
    cut = np.array([0, 0, 1, 0, 0, 1, 0], dtype=bool)
    np.testing.assert_array_equal(segment.terminated[:, 0], cut)
    np.testing.assert_array_equal(segment.terminated[:, 1], cut)
    assert not segment.truncated.any()
    assert segment.final_index.shape == (0, 2)
    assert segment.final_observations.shape == (0, 1)


@pytest.mark.parametrize("handle", [True, False])
def test_acer_passes_handle_timeout_termination_to_the_rollout(handle: bool) -> None:
    model = ACER(
        "MlpPolicy", _truncation_venv(), n_steps=7, replay_ratio=0, seed=0, handle_timeout_termination=handle
    )
    segments: list[Segment] = []
    original = model.train
    model.train = lambda segment: (segments.append(segment), original(segment))[1]  # type: ignore[method-assign]
    model.learn(14)
    assert len(segments) == 1
    assert segments[0].truncated[:, 0].any() == handle
    assert segments[0].terminated[:, 0].any() == (not handle)


def test_retrace_targets_bootstrap_on_truncation_and_cut_on_termination() -> None:
    segment, _ = _truncation_segment()
    gamma = 0.9

    def value(obs: np.ndarray) -> th.Tensor:
        return th.as_tensor(10.0 + obs[..., 0], dtype=th.float32)

    rewards = th.as_tensor(segment.rewards)
    values = value(segment.observations)
    truncation_values = th.zeros_like(rewards)
    index = segment.final_index
    truncation_values[index[:, 0], index[:, 1]] = value(segment.final_observations)
    common = dict(rewards=rewards, q_i=th.zeros_like(rewards), values=values, gamma=gamma)
    # rho_bar = 0 makes Q_ret a one-step target: r_t + gamma * (1 - terminated_t) * V(next x).
    q_ret = F.retrace_targets(
        **common,
        rho_bar=th.zeros_like(rewards),
        terminated=th.as_tensor(segment.terminated),
        truncated=th.as_tensor(segment.truncated),
        truncation_values=truncation_values,
    )
    next_values = 10.0 + segment.observations[1:, :, 0]
    expected = 1.0 + gamma * next_values
    expected[[2, 5], 0] = 1.0 + gamma * 13.0  # V(terminal observation [3]), not V(reset observation [0])
    expected[[2, 5], 1] = 1.0  # terminated: no bootstrap
    np.testing.assert_allclose(q_ret.numpy(), expected, rtol=1e-6)

    # Treating the truncation as a termination (SB2) cuts env 0's return instead.
    q_ret_sb2 = F.retrace_targets(
        **common,
        rho_bar=th.zeros_like(rewards),
        terminated=th.as_tensor(segment.terminated | segment.truncated),
    )
    assert q_ret_sb2[2, 0].item() == pytest.approx(1.0)
    assert q_ret[2, 0].item() == pytest.approx(1.0 + gamma * 13.0)


def _flat_q_targets(
    terminated: np.ndarray, truncated: np.ndarray, gamma: float, lam: float = 1.0
) -> np.ndarray:
    """Loop oracle of the Retrace targets of ``_truncation_segment`` (rewards 1) for a critic with
    Q = V = 10 everywhere and on-policy traces lam * min(1, rho) = lam."""
    q_ret = np.zeros(terminated.shape)
    for env in range(terminated.shape[1]):
        carry = 10.0
        for t in reversed(range(terminated.shape[0])):
            following = 10.0 if truncated[t, env] else carry
            q_ret[t, env] = 1.0 + gamma * (1.0 - terminated[t, env]) * following
            carry = lam * (q_ret[t, env] - 10.0) + 10.0
    return q_ret


def test_update_uses_truncation_bootstrap() -> None:
    segment, model = _truncation_segment()
    # Q(x, a) = 10 everywhere, so V = 10, and on-policy rho_bar = 1 (to 1e-5): Q_ret is a plain return.
    with th.no_grad():
        model.policy.q_net.weight.zero_()
        model.policy.q_net.bias.fill_(10.0)
    as_terminated = Segment(
        observations=segment.observations,
        actions=segment.actions,
        rewards=segment.rewards,
        mu_probs=segment.mu_probs,
        terminated=segment.terminated | segment.truncated,
        truncated=np.zeros_like(segment.truncated),
        episode_starts=segment.episode_starts,
        final_index=np.zeros((0, 2), dtype=np.int64),
        final_observations=np.zeros((0, 1), dtype=np.float32),
    )
    gamma = 0.9
    config = UpdateConfig(
        gamma=gamma, q_coef=0.5, ent_coef=0.01, correction_term=10.0, trust_region=True, delta=1.0
    )

    for seg in (segment, as_terminated):
        _, stats = compute_gradients(
            policy=model.policy, avg_policy=model.policy_avg, segment=seg, config=config
        )
        expected = _flat_q_targets(seg.terminated, seg.truncated, gamma)
        assert stats.loss_q == pytest.approx(float(0.5 * np.mean((expected - 10.0) ** 2)), rel=1e-4)
    # Cutting env 0's return at the time limit (SB2) would give it targets near 1 instead of near 10.
    cut = _flat_q_targets(as_terminated.terminated, as_terminated.truncated, gamma)
    bootstrapped = _flat_q_targets(segment.terminated, segment.truncated, gamma)
    assert 0.5 * np.mean((cut - 10.0) ** 2) - 0.5 * np.mean((bootstrapped - 10.0) ** 2) > 5.0


@pytest.mark.parametrize("lam", [1.0, 0.5, 0.0])
def test_update_uses_retrace_lambda(lam: float) -> None:
    """Retrace(lambda): the traces are lambda * min(1, rho). With Q = V = 10 everywhere and on-policy rho = 1,
    the targets follow carry = lambda (Q_ret - 10) + 10 (lambda 0: one-step targets r + gamma 10)."""
    segment, model = _truncation_segment()
    with th.no_grad():
        model.policy.q_net.weight.zero_()
        model.policy.q_net.bias.fill_(10.0)
    gamma = 0.9
    config = UpdateConfig(
        gamma=gamma,
        q_coef=0.5,
        ent_coef=0.01,
        correction_term=10.0,
        trust_region=True,
        delta=1.0,
        retrace_lambda=lam,
    )
    q_ret = _flat_q_targets(segment.terminated, segment.truncated, gamma, lam)
    _, stats = compute_gradients(
        policy=model.policy, avg_policy=model.policy_avg, segment=segment, config=config
    )
    assert stats.loss_q == pytest.approx(float(0.5 * np.mean((q_ret - 10.0) ** 2)), rel=1e-4)
    if lam == 0.0:
        assert np.allclose(q_ret, 1.0 + gamma * (1.0 - segment.terminated) * 10.0)


# ------------------------------------------------------------------------------------------ q_lr_ratio


def _one_update_deltas(q_lr_ratio: float, **kwargs: Any) -> tuple[ACER, dict[str, th.Tensor]]:
    """Parameter changes of one on-policy update (no replay) from the seed-0 initialisation."""
    model = ACER(
        "MlpPolicy", "CartPole-v1", seed=0, n_steps=5, replay_ratio=0, q_lr_ratio=q_lr_ratio, **kwargs
    )
    before = {name: p.detach().clone() for name, p in model.policy.named_parameters()}
    model.learn(5)
    assert model._n_updates == 1
    return model, {name: p.detach() - before[name] for name, p in model.policy.named_parameters()}


@pytest.mark.parametrize("policy_kwargs", [None, dict(net_arch=[16, dict(pi=[8], qf=[8])])])
def test_q_lr_ratio_scales_the_critics_own_step_only(policy_kwargs: dict | None) -> None:
    """RMSProp's first step is lr g / sqrt(alpha + (1 - alpha) g^2 + eps) for both models (same
    initialisation, same segment), so the critic's own parameters move exactly 3 times as far and every
    other parameter, shared layers included, moves the same."""
    kwargs = dict(learning_rate=1e-3, lr_schedule="constant", policy_kwargs=policy_kwargs)
    model, base = _one_update_deltas(1.0, **kwargs)
    scaled_model, scaled = _one_update_deltas(3.0, **kwargs)
    assert len(model.optimizer.param_groups) == 1
    assert [group["lr"] for group in scaled_model.optimizer.param_groups] == [1e-3, pytest.approx(3e-3)]
    q_names = {
        name
        for name, _ in scaled_model.policy.named_parameters()
        if name.startswith(("q_net", "mlp_extractor.value_net"))
    }
    assert q_names and any(name.startswith("q_net") for name in q_names)
    for name, delta in base.items():
        assert delta.abs().max() > 0, name
        factor = 3.0 if name in q_names else 1.0
        th.testing.assert_close(scaled[name], factor * delta, rtol=1e-4, atol=1e-7, msg=name)
    if policy_kwargs is not None:
        assert any(name.startswith("shared_net") for name in base)


@pytest.mark.parametrize(
    ("policy", "policy_kwargs", "shared"),
    [
        ("MlpPolicy", dict(net_arch=[32, 32]), "shared_net"),
        ("MlpLstmPolicy", dict(n_lstm=8, net_arch=[8, "lstm", dict(pi=[4], qf=[4])]), "lstm"),
    ],
)
def test_q_lr_ratio_groups_hold_the_critics_own_parameters(
    policy: str, policy_kwargs: dict, shared: str
) -> None:
    model = ACER(policy, "CartPole-v1", n_steps=5, q_lr_ratio=0.5, policy_kwargs=policy_kwargs)
    names = {id(p): name for name, p in model.policy.named_parameters()}
    policy_group, q_group = (
        [names[id(p)] for p in group["params"]] for group in model.optimizer.param_groups
    )
    assert sorted(policy_group + q_group) == sorted(names.values())
    assert all(name.startswith(("q_net", "mlp_extractor.value_net")) for name in q_group)
    assert {"q_net.weight", "q_net.bias"} <= set(q_group)
    assert any(name.startswith(shared) for name in policy_group)


# ---------------------------------------------------------------------------------------------- predict


@pytest.fixture(scope="module")
def cartpole_model() -> ACER:
    return ACER("MlpPolicy", "CartPole-v1", seed=0, **SMALL).learn(100)


def test_predict_single_and_batch_shapes(cartpole_model: ACER) -> None:
    obs = np.array([0.01, -0.02, 0.03, 0.04], dtype=np.float32)
    action, state = cartpole_model.predict(obs)
    assert state is None
    assert action.shape == ()
    assert action in (0, 1)
    batch = np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32)
    actions, _ = cartpole_model.predict(batch)
    assert actions.shape == (7,)
    assert set(actions.tolist()) <= {0, 1}


def test_predict_deterministic_is_argmax(cartpole_model: ACER) -> None:
    batch = np.random.default_rng(1).normal(size=(50, 4)).astype(np.float32) * 2
    actions, _ = cartpole_model.predict(batch, deterministic=True)
    probs = cartpole_model.action_probability(batch)
    np.testing.assert_array_equal(actions, probs.argmax(axis=1))


def test_predict_accepts_sb2_mask_alias(cartpole_model: ACER) -> None:
    obs = np.zeros((1, 4), dtype=np.float32)
    action, state = cartpole_model.predict(obs, mask=np.array([True]), deterministic=True)
    assert state is None
    assert action.shape == (1,)
    assert action[0] == cartpole_model.predict(obs, deterministic=True)[0][0]


@pytest.mark.parametrize("shape", [(3,), (2, 3), (4, 1), ()])
def test_predict_wrong_observation_shape_raises(cartpole_model: ACER, shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="observation"):
        cartpole_model.predict(np.zeros(shape, dtype=np.float32))
    with pytest.raises(ValueError, match="observation"):
        cartpole_model.action_probability(np.zeros(shape, dtype=np.float32))


def test_action_probability_shapes_and_logp(cartpole_model: ACER) -> None:
    obs = np.array([0.01, -0.02, 0.03, 0.04], dtype=np.float32)
    probs = cartpole_model.action_probability(obs)
    assert probs.shape == (2,)
    assert probs.sum() == pytest.approx(1.0, abs=1e-6)

    batch = np.random.default_rng(2).normal(size=(10, 4)).astype(np.float32)
    batch_probs = cartpole_model.action_probability(batch)
    assert batch_probs.shape == (10, 2)
    np.testing.assert_allclose(batch_probs.sum(axis=1), 1.0, atol=1e-6)

    actions = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 0])
    chosen = cartpole_model.action_probability(batch, actions=actions)
    assert chosen.shape == (10, 1)
    np.testing.assert_array_equal(chosen[:, 0], batch_probs[np.arange(10), actions])
    logp = cartpole_model.action_probability(batch, actions=actions, logp=True)
    assert logp.shape == (10, 1)
    np.testing.assert_allclose(np.exp(logp), chosen, rtol=1e-6)

    single = cartpole_model.action_probability(obs, actions=1)
    assert single.shape == (1,)
    assert single[0] == probs[1]
    single_logp = cartpole_model.action_probability(obs, actions=np.array([1]), logp=True)
    assert np.exp(single_logp[0]) == pytest.approx(probs[1], rel=1e-6)


def test_action_probability_rejects_bad_actions(cartpole_model: ACER) -> None:
    batch = np.zeros((3, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="got 2 actions for 3 observation"):
        cartpole_model.action_probability(batch, actions=np.array([0, 1]))
    with pytest.raises(ValueError, match="actions must be integers in \\[0, 2\\)"):
        cartpole_model.action_probability(batch, actions=np.array([0, 1, 2]))


def test_vec_env_type_is_kept(cartpole_model: ACER) -> None:
    assert isinstance(cartpole_model.get_env(), VecEnv)


# ---------------------------------------------------------------------- found by review (stop 40)


@pytest.mark.parametrize(
    ("observation_space", "message"),
    [
        (spaces.Box(-1.0, 1.0, shape=(), dtype=np.float32), r"Box observations of shape \(\) \(a scalar\)"),
        (
            spaces.MultiDiscrete([[2, 3], [4, 2]]),
            r"MultiDiscrete observations of one dimension, got nvec of shape",
        ),
    ],
)
def test_observation_spaces_the_networks_cannot_take_are_refused_up_front(
    observation_space: spaces.Space, message: str
) -> None:
    with pytest.raises(UnsupportedSpaceError, match=message):
        ACER("MlpPolicy", ObservationSpaceEnv(observation_space))


# ---------------------------------------------------------------------- found by review (stop 41)

FLOAT_IMAGE_LAST = spaces.Box(0.0, 1.0, (36, 36, 1), np.float32)
FLOAT_IMAGE_FIRST = spaces.Box(0.0, 1.0, (1, 36, 36), np.float32)
CNN_NEEDS = r"needs image observations: uint8 \[H, W, C\] or \[C, H, W\]"


@pytest.mark.parametrize("policy", ["CnnPolicy", "CnnLstmPolicy", "CnnLnLstmPolicy"])
@pytest.mark.parametrize(
    ("observation_space", "policy_kwargs", "message"),
    [
        (FLOAT_IMAGE_LAST, {}, CNN_NEEDS + r".*normalize_images=False.*got Box\(0.0, 1.0, \(36, 36, 1\)"),
        (spaces.Box(-1.0, 1.0, (6,), np.float32), {}, CNN_NEEDS),
        # Float images are not transposed: they must come channel-first.
        (FLOAT_IMAGE_LAST, {"normalize_images": False}, r"float images must be channel-first \[C, H, W\]"),
        # ... also where the network would build, taking the height for the channels (found by review).
        (
            spaces.Box(0.0, 1.0, (40, 41, 39), np.float32),
            {"normalize_images": False},
            r"float images must be channel-first \[C, H, W\]",
        ),
    ],
)
def test_a_cnn_policy_names_the_observations_it_needs(
    policy: str, observation_space: spaces.Box, policy_kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(UnsupportedSpaceError, match=message):
        ACER(policy, ObservationSpaceEnv(observation_space), n_steps=4, policy_kwargs=policy_kwargs)


class _VectorFeatures(BaseFeaturesExtractor):
    def __init__(self, observation_space: gym.spaces.Box) -> None:
        super().__init__(observation_space, features_dim=8)
        self.linear = th.nn.Linear(int(np.prod(observation_space.shape)), 8)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.linear(observations.flatten(1))


class _VectorCnnPolicy(CnnPolicy):
    """A CnnPolicy subclass whose own default extractor takes vectors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("features_extractor_class", _VectorFeatures)
        super().__init__(*args, **kwargs)


class _ScaledCnnPolicy(CnnPolicy):
    """A CnnPolicy subclass for images the env already scales."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["normalize_images"] = False
        super().__init__(*args, **kwargs)


@pytest.mark.parametrize("shape", [(48, 40, 40), (12, 36, 64), (1, 36, 36)])
def test_channel_first_float_images_with_many_channels_are_taken(shape: tuple[int, ...]) -> None:
    # Found by review (stop 41): SB3's guess (the smallest side is the channels) refused (48, 40, 40).
    space = spaces.Box(0.0, 1.0, shape, np.float32)
    model = ACER(
        "CnnPolicy", ObservationSpaceEnv(space), n_steps=4, policy_kwargs={"normalize_images": False}
    )
    assert model.policy.features_extractor.cnn[0].in_channels == shape[0]


@pytest.mark.parametrize(
    ("policy", "observation_space"),
    [(_VectorCnnPolicy, spaces.Box(-1.0, 1.0, (6,), np.float32)), (_ScaledCnnPolicy, FLOAT_IMAGE_FIRST)],
)
def test_cnn_policy_subclasses_that_build_are_not_second_guessed(
    policy: type, observation_space: spaces.Box
) -> None:
    # Found by review (stop 41): the check read the defaults of CnnPolicy, not what the subclass builds.
    model = ACER(policy, ObservationSpaceEnv(observation_space), n_steps=4, buffer_size=40, replay_start=8)
    assert model.learn(16).num_timesteps == 16


@pytest.mark.parametrize("policy", ["CnnPolicy", "CnnLstmPolicy"])
def test_a_cnn_policy_learns_from_scaled_channel_first_float_images(policy: str) -> None:
    model = ACER(
        policy,
        ObservationSpaceEnv(FLOAT_IMAGE_FIRST),
        n_steps=4,
        buffer_size=40,
        replay_start=8,
        seed=0,
        policy_kwargs={"normalize_images": False},
    )
    model.learn(40)
    assert model.num_timesteps == 40 and model._n_updates > 0


class DropoutExtractor(FlattenExtractor):
    """A features extractor with dropout: its output differs between training and evaluation mode."""

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        super().__init__(observation_space)
        self.dropout = th.nn.Dropout(0.5)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.dropout(super().forward(observations))


def test_action_probability_evaluates_the_policy_in_evaluation_mode() -> None:
    model = ACER(
        "MlpPolicy",
        "CartPole-v1",
        n_steps=5,
        seed=0,
        policy_kwargs=dict(features_extractor_class=DropoutExtractor),
    )
    model.learn(20)
    obs = np.full((3, 4), 0.3, dtype=np.float32)
    first = model.action_probability(obs)
    for _ in range(5):
        np.testing.assert_array_equal(model.action_probability(obs), first)


@pytest.mark.parametrize("policy", ["MlpPolicy", "MlpLstmPolicy"])
def test_policy_save_and_load_keep_the_features_extractor(policy: str, tmp_path: pathlib.Path) -> None:
    """SB3's policy.save / Policy.load (not ACER's model files): the loaded policy is the same network."""
    kwargs = dict(features_extractor_class=DropoutExtractor)
    model = ACER(policy, "CartPole-v1", n_steps=5, seed=0, policy_kwargs=kwargs)
    model.policy.save(tmp_path / "policy.pth")
    loaded = type(model.policy).load(tmp_path / "policy.pth")
    assert type(loaded.features_extractor) is DropoutExtractor
    saved, restored = model.policy.state_dict(), loaded.state_dict()
    assert saved.keys() == restored.keys()
    assert all(th.equal(saved[key], restored[key]) for key in saved)

"""The LSTM policies on Box, MultiDiscrete and MultiBinary actions (``SDNMlpLstmPolicy`` and the others): the
update reproduces the behaviour statistics from the stored state, an episode start resets the memory, the
memory is used, and predict / action_probability / save-load take and give the state."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER, MlpLstmPolicy, MlpPolicy
from sb3_acer.common.policies import (
    CnnLnLstmPolicy,
    CnnLstmPolicy,
    DuelingHead,
    MlpLnLstmPolicy,
    MultiInputLstmPolicy,
)
from sb3_acer.common.policies import RecurrentACERPolicy as RecurrentSDNPolicy
from sb3_acer.common.type_aliases import Segment
from sb3_acer.common.update import network_outputs
from tests.helpers.acer_envs import collect

SDNMlpLnLstmPolicy = ACER.taken_policy_aliases["SDNMlpLnLstmPolicy"]

TINY = dict(n_lstm=8, net_arch=[8, "lstm", dict(pi=[8], qf=[8])])

ACTION_SPACES = {
    "box": spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32),
    "multidiscrete": spaces.MultiDiscrete([3, 2]),
    "multibinary": spaces.MultiBinary(3),
}


class RandomWalkEnv(gym.Env):
    """Random observations, no reward, never terminates: episodes end at the time limit it is made with."""

    observation_space = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)

    def __init__(self, action_space: spaces.Space) -> None:
        self.action_space = action_space

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict]:
        return self.observation_space.sample(), float(self.np_random.normal()), False, False, {}


def short_episode_envs(action_space: spaces.Space, limits: tuple[int, ...] = (3, 5, 7)) -> DummyVecEnv:
    """One env per time limit, so that episodes start and are truncated inside segments."""
    return DummyVecEnv(
        [
            lambda limit=limit: gym.wrappers.TimeLimit(RandomWalkEnv(action_space), max_episode_steps=limit)
            for limit in limits
        ]
    )


# ------------------------------------------------------------------------------------------- the classes


def test_the_stochastic_dueling_names_of_0_1_are_the_lstm_policies() -> None:
    for named in (MlpLstmPolicy, MlpLnLstmPolicy, CnnLstmPolicy, CnnLnLstmPolicy, MultiInputLstmPolicy):
        assert ACER.taken_policy_aliases[f"SDN{named.__name__}"] is named
        assert f"SDN{named.__name__}" not in ACER.policy_aliases


@pytest.mark.parametrize("space", sorted(ACTION_SPACES))
def test_a_users_policy_class_acts_in_every_action_space(space: str) -> None:
    class MyPolicy(MlpLstmPolicy):
        pass

    policy = MyPolicy(spaces.Box(-1, 1, (3,)), ACTION_SPACES[space], **TINY)
    assert isinstance(policy.head, DuelingHead) and policy.recurrent
    assert type(MlpPolicy(spaces.Box(-1, 1, (3,)), ACTION_SPACES[space]).head) is DuelingHead


@pytest.mark.parametrize("policy", ["MlpLstmPolicy", "MlpLnLstmPolicy"])
@pytest.mark.parametrize("space", sorted(ACTION_SPACES))
def test_the_named_lstm_policies_build_and_train(
    policy: str, space: str, small_settings: Mapping[str, Any]
) -> None:
    model = ACER(policy, short_episode_envs(ACTION_SPACES[space]), policy_kwargs=TINY, **small_settings)
    assert isinstance(model.policy, RecurrentSDNPolicy) and model.policy.layer_norm == ("Ln" in policy)
    assert model.policy.net_arch == TINY["net_arch"]
    model.learn(60)  # replays from step 10
    assert model.num_timesteps == 60 and model.n_skipped_updates == 0
    assert model.replay_buffer is not None and model.replay_buffer.state_size == 8


# ------------------------------------------------------------------------------------------- the memory


@pytest.mark.parametrize("layer_norm", [False, True])
def test_an_episode_start_resets_the_memory_and_a_sequence_equals_its_steps(layer_norm: bool) -> None:
    th.manual_seed(0)
    policy = RecurrentSDNPolicy(spaces.Box(-1, 1, (3,)), ACTION_SPACES["box"], layer_norm=layer_norm, **TINY)
    obs = th.randn(6, 2, 3)
    starts = th.zeros(6, 2, dtype=th.bool)
    starts[3, 1] = True
    state = (th.randn(1, 2, 8), th.randn(1, 2, 8))
    with th.no_grad():
        output, final, _ = policy.evaluate_sequence(obs, starts, state)
        stats = output.stats.view(6, 2, -1)
        # Sequence 1 from its episode start equals a fresh run of the same observations.
        fresh_starts = th.tensor([[True], [False], [False]])
        fresh, _, _ = policy.evaluate_sequence(obs[3:, 1:], fresh_starts, policy.initial_state(1))
        th.testing.assert_close(stats[3:, 1], fresh.stats, rtol=0, atol=1e-6)
        # One step at a time gives the same statistics and final state.
        step_state = state
        for t in range(6):
            step_stats, step_state = policy.step_statistics(obs[t], step_state, starts[t])
            th.testing.assert_close(stats[t], step_stats, rtol=0, atol=1e-6)
        th.testing.assert_close(final[0], step_state[0], rtol=0, atol=1e-6)
    # Without the reset the memory changes what the policy does.
    with th.no_grad():
        unreset, _, _ = policy.evaluate_sequence(obs, th.zeros(6, 2, dtype=th.bool), state)
    assert (unreset.stats.view(6, 2, -1)[3, 1] - fresh.stats[0]).abs().max() > 1e-4


@pytest.mark.parametrize("policy", ["MlpLstmPolicy", "MlpLnLstmPolicy"])
@pytest.mark.parametrize("space", ["box", "multidiscrete"])
def test_the_update_reproduces_the_behaviour_statistics_from_the_stored_state(
    policy: str, space: str
) -> None:
    model = ACER(
        policy,
        short_episode_envs(ACTION_SPACES[space]),
        n_steps=8,
        replay_ratio=0,
        seed=0,
        policy_kwargs=TINY,
    )
    model.learn(48)  # away from the initial weights, with memory carried into the next segment
    for _ in range(3):
        segment = collect(model)
        assert segment.initial_state is not None and np.abs(segment.initial_state[0]).max() > 0
        assert segment.episode_starts[1:].any() and len(segment.final_index) > 0
        with th.no_grad():
            forward = network_outputs(model.policy, model.policy_avg, segment)
        # On-policy: pi is mu, so every importance weight is one.
        np.testing.assert_allclose(forward.stats.numpy(), segment.mu_probs, rtol=0, atol=2e-6)
        # SB2 / baselines start every segment from zeros: the statistics would differ.
        zeros = tuple(np.zeros_like(part) for part in segment.initial_state)
        with th.no_grad():
            from_zeros = network_outputs(
                model.policy, model.policy_avg, Segment(**{**segment.__dict__, "initial_state": zeros})
            )
        assert np.abs(from_zeros.stats.numpy() - segment.mu_probs).max() > 2e-5  # 10 times the tolerance
        model.train(segment)


def test_a_truncated_episode_bootstraps_from_the_state_reached_in_it() -> None:
    model = ACER(
        "MlpLnLstmPolicy",
        short_episode_envs(ACTION_SPACES["box"]),
        n_steps=8,
        replay_ratio=0,
        seed=0,
        policy_kwargs=TINY,
    )
    segment = collect(model)
    policy = model.policy
    assert isinstance(policy, RecurrentSDNPolicy) and segment.initial_state is not None
    assert len(segment.final_index) >= 3
    with th.no_grad():
        forward = network_outputs(policy, model.policy_avg, segment)
        for row, (t, env) in enumerate(segment.final_index):
            state = tuple(th.as_tensor(part[env : env + 1]).unsqueeze(0) for part in segment.initial_state)
            for step in range(t + 1):
                _, state = policy.step_statistics(
                    th.as_tensor(segment.observations[step, env : env + 1]),
                    state,  # type: ignore[arg-type]
                    th.as_tensor(segment.episode_starts[step, env : env + 1]),
                )
            final, _, _ = policy.evaluate_sequence(
                th.as_tensor(segment.final_observations[row : row + 1]).unsqueeze(0),
                th.zeros((1, 1), dtype=th.bool),
                state,  # type: ignore[arg-type]
            )
            th.testing.assert_close(forward.truncation_values[t, env], final.values[0], rtol=0, atol=1e-5)


class CueEnv(gym.Env):
    """A sign shown at the first of five steps only; each step pays ``1 - |a - sign| / 2``. Without memory
    the best policy earns 3 (1 at the first step, then ``a = 0``); with it, 5."""

    observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
    action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.cue, self.t = float(self.np_random.choice([-1.0, 1.0])), 0
        return np.array([self.cue, 1.0], dtype=np.float32), {}

    def step(self, action: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        reward = 1.0 - abs(float(np.clip(action[0], -1.0, 1.0)) - self.cue) / 2
        return np.zeros(2, dtype=np.float32), reward, self.t >= 5, False, {}


def test_the_memory_carries_a_cue_a_feed_forward_policy_cannot_see() -> None:
    model = ACER(
        "MlpLstmPolicy",
        make_vec_env(CueEnv, n_envs=4, seed=0),
        n_steps=5,
        lr_schedule="constant",
        learning_rate=1e-3,
        replay_start=100,
        buffer_size=2000,
        seed=0,
        policy_kwargs=dict(n_lstm=32, net_arch=[32, "lstm"]),
    )
    model.learn(5000)
    mean, _ = evaluate_policy(model, make_vec_env(CueEnv, n_envs=1, seed=1), n_eval_episodes=50)
    assert mean >= 4.5  # a feed-forward policy earns at most 3


# ------------------------------------------------------------------------------------------- the API


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> ACER:
    model = ACER(
        "MlpLstmPolicy",
        short_episode_envs(ACTION_SPACES["box"]),
        n_steps=5,
        buffer_size=50,
        replay_start=10,
        seed=0,
        policy_kwargs=TINY,
    )
    return model.learn(60)


def test_predict_carries_the_state_and_an_episode_start_resets_it(trained: ACER) -> None:
    obs = np.random.default_rng(0).uniform(-1, 1, (3, 3)).astype(np.float32)
    first, state = trained.predict(obs, deterministic=True)
    assert first.shape == (3, 2) and state[0].shape == (1, 3, 8)
    carried, _ = trained.predict(obs, state=state, deterministic=True)
    assert np.abs(carried - first).max() > 1e-6
    restarted, _ = trained.predict(obs, state=state, episode_start=np.ones(3), deterministic=True)
    np.testing.assert_array_equal(restarted, first)
    single, single_state = trained.predict(obs[0], deterministic=True)
    assert single.shape == (2,) and single_state[0].shape == (1, 1, 8)
    np.testing.assert_allclose(single, first[0], rtol=0, atol=1e-6)


def test_action_probability_takes_state_and_mask(trained: ACER) -> None:
    obs = np.random.default_rng(1).uniform(-1, 1, (3, 3)).astype(np.float32)
    _, state = trained.predict(obs, deterministic=True)
    stats = trained.action_probability(obs)
    assert stats.shape == (3, 4)  # mean and log-std of 2 values
    carried = trained.action_probability(obs, state=state, mask=np.zeros(3))
    assert np.abs(carried - stats).max() > 1e-6
    np.testing.assert_array_equal(trained.action_probability(obs, state=state, mask=np.ones(3)), stats)
    actions = stats[:, :2]  # the means: density (2 pi sigma^2)^(-1/2) per value
    density = trained.action_probability(obs, state=state, mask=np.ones(3), actions=actions)
    sigma = np.exp(stats[:, 2:])
    np.testing.assert_allclose(density[:, 0], np.prod(1 / np.sqrt(2 * np.pi * sigma**2), axis=1), rtol=1e-5)


@pytest.mark.parametrize("space", sorted(ACTION_SPACES))
def test_save_load_round_trip_predicts_the_same_with_the_same_state(
    space: str, small_settings: Mapping[str, Any], tmp_path: pathlib.Path
) -> None:
    model = ACER(
        "MlpLnLstmPolicy", short_episode_envs(ACTION_SPACES[space]), policy_kwargs=TINY, **small_settings
    )
    model.learn(30)
    model.save(tmp_path / "model.zip")
    loaded = ACER.load(tmp_path / "model.zip", env=short_episode_envs(ACTION_SPACES[space]))
    assert type(loaded.policy) is SDNMlpLnLstmPolicy and loaded.policy.net_arch == TINY["net_arch"]
    obs = np.random.default_rng(2).uniform(-1, 1, (3, 3)).astype(np.float32)
    _, state = model.predict(obs, deterministic=True)
    mine, my_state = model.predict(obs, state=state, deterministic=True)
    theirs, their_state = loaded.predict(obs, state=state, deterministic=True)
    np.testing.assert_array_equal(mine, theirs)
    for part, other in zip(my_state, their_state, strict=True):
        np.testing.assert_array_equal(part, other)
    loaded.learn(10)  # and trains on

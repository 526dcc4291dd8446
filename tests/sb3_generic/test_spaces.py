"""Observation and action spaces, adapted from stable-baselines3 tests/test_spaces.py (MIT, Copyright (c)
2019 Antonin Raffin): the algorithm-generic cases, with ACER as the only algorithm.

Like A2C and PPO, ACER takes every action space but ``Dict``/``Tuple``, and ``Dict`` observations with
``MultiInputPolicy``. Left out: SAC's gSDE case, and A2C's refusal of multi-dimensional ``MultiBinary``
actions (ACER takes them: its factorised Bernoulli policy flattens the axes).
"""

from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.spaces.space import Space
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_acer import ACER

from .common import SMALL

BOX_SPACE_FLOAT64 = spaces.Box(low=-1, high=1, shape=(2,), dtype=np.float64)
BOX_SPACE_FLOAT32 = spaces.Box(low=-1, high=1, shape=(2,), dtype=np.float32)


@dataclass
class DummyEnv(gym.Env):
    observation_space: Space
    action_space: Space

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            super().reset(seed=seed)
        return self.observation_space.sample(), {}


class DummyMultidimensionalAction(DummyEnv):
    def __init__(self):
        super().__init__(
            BOX_SPACE_FLOAT32,
            spaces.Box(low=-1, high=1, shape=(2, 2), dtype=np.float32),
        )


class DummyMultiBinary(DummyEnv):
    def __init__(self, n):
        super().__init__(
            spaces.MultiBinary(n),
            BOX_SPACE_FLOAT32,
        )


class DummyMultiDiscreteSpace(DummyEnv):
    def __init__(self, nvec):
        super().__init__(
            spaces.MultiDiscrete(nvec),
            BOX_SPACE_FLOAT32,
        )


@pytest.mark.parametrize(
    "env",
    [
        DummyMultiDiscreteSpace([4, 3]),
        DummyMultiBinary(8),
        DummyMultiBinary((3, 2)),
        DummyMultidimensionalAction(),
    ],
)
def test_env(env):
    # Check the env used for testing
    check_env(env, skip_render_check=True)


@pytest.mark.parametrize("model_class", [ACER])
@pytest.mark.parametrize(
    "env", [DummyMultiDiscreteSpace([4, 3]), DummyMultiBinary(8), DummyMultiBinary((3, 2))]
)
def test_identity_spaces(model_class, env):
    """
    Additional tests to check observation space support
    for MultiDiscrete and MultiBinary.
    """
    # ACER, as DQN in SB3's test: a discrete action space with these observations (the MultiDiscrete
    # and MultiBinary action spaces are test_action_spaces' business).
    env.action_space = spaces.Discrete(4)

    env = gym.wrappers.TimeLimit(env, max_episode_steps=100)

    model = model_class("MlpPolicy", env, gamma=0.5, seed=1, policy_kwargs=dict(net_arch=[64]))
    model.learn(total_timesteps=500)

    evaluate_policy(model, env, n_eval_episodes=5, warn=False)


@pytest.mark.parametrize("model_class", [ACER])
@pytest.mark.parametrize(
    "env",
    [
        "Pendulum-v1",
        "CartPole-v1",
        DummyMultidimensionalAction(),
    ],
)
def test_action_spaces(model_class, env):
    # ACER, as A2C and PPO in SB3's test.
    supported_action_space = True
    kwargs = dict(SMALL)

    if supported_action_space:
        model = model_class("MlpPolicy", env, **kwargs)
        if isinstance(env, DummyMultidimensionalAction):
            model.learn(64)
    else:
        with pytest.raises(AssertionError):
            model_class("MlpPolicy", env)


# Gymnasium warns that Taxi-v3 is out of date (this suite's warnings are errors); SB3's fallback to v4 is
# for the Gymnasium versions that refuse it.
@pytest.mark.filterwarnings("ignore:.*The environment Taxi-v3 is out of date:DeprecationWarning")
@pytest.mark.parametrize("model_class", [ACER])
@pytest.mark.parametrize("env", ["Taxi-v3"])
def test_discrete_obs_space(model_class, env):
    env = _make_env_safe(env, n_envs=2, seed=0)
    kwargs = dict(SMALL)
    model_class("MlpPolicy", env, **kwargs).learn(256)


@pytest.mark.parametrize("model_class", [ACER])
@pytest.mark.parametrize(
    "obs_space",
    [
        BOX_SPACE_FLOAT32,
        BOX_SPACE_FLOAT64,
        spaces.Dict({"a": BOX_SPACE_FLOAT32, "b": BOX_SPACE_FLOAT32}),
        spaces.Dict({"a": BOX_SPACE_FLOAT32, "b": BOX_SPACE_FLOAT64}),
    ],
)
@pytest.mark.parametrize(
    "action_space",
    [
        BOX_SPACE_FLOAT32,
        BOX_SPACE_FLOAT64,
    ],
)
def test_float64_action_space(model_class, obs_space, action_space):
    env = DummyEnv(obs_space, action_space)
    env = gym.wrappers.TimeLimit(env, max_episode_steps=200)
    if isinstance(env.observation_space, spaces.Dict):  # noqa: SIM108 (as SB3 writes it)
        policy = "MultiInputPolicy"
    else:
        policy = "MlpPolicy"

    # ACER: as PPO and A2C in SB3's test, with ACER's small budget.
    kwargs = dict(policy_kwargs=dict(net_arch=[12]), **SMALL)

    model = model_class(policy, env, **kwargs)
    model.learn(64)
    initial_obs, _ = env.reset()
    action, _ = model.predict(initial_obs, deterministic=False)
    assert action.dtype == env.action_space.dtype


def _make_env_safe(env_id, **kwargs):
    try:
        return make_vec_env(env_id, **kwargs)
    except gym.error.DeprecatedEnv:
        # map deprecated to new (better extendability for this)
        fallback_map = {
            # as of gymnasium 1.3.0 Taxi-v3 is deprecated
            "Taxi-v3": "Taxi-v4",
        }
        if env_id in fallback_map:
            return make_vec_env(fallback_map[env_id], **kwargs)
        raise

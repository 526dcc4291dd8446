"""An algorithm on ``VecNormalize``, adapted from stable-baselines3 tests/test_vec_normalize.py (MIT,
Copyright (c) 2019 Antonin Raffin): the case of the algorithms with a replay memory, with ACER as the
only algorithm, on ``CartPole-v1`` (SB3: SAC and TD3 on ``Pendulum-v1``).

Left out: the cases of ``VecNormalize`` alone, and HER's.
"""

import gymnasium as gym
import pytest
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from sb3_acer import ACER

from .common import SMALL

ENV_ID = "CartPole-v1"


def make_env():
    return Monitor(gym.make(ENV_ID))


@pytest.mark.parametrize("model_class", [ACER])
def test_offpolicy_normalization(model_class):
    env = DummyVecEnv([make_env])
    env = VecNormalize(env, norm_obs=True, norm_reward=True, clip_obs=10.0, clip_reward=10.0)

    eval_env = DummyVecEnv([make_env])
    eval_env = VecNormalize(
        eval_env, training=False, norm_obs=True, norm_reward=False, clip_obs=10.0, clip_reward=10.0
    )

    # ACER: replay_start (SB3's learning_starts) counts steps per env, and its small budget.
    model = model_class("MlpPolicy", env, verbose=1, policy_kwargs=dict(net_arch=[64]), **SMALL)

    # Check that VecNormalize object is correctly updated
    assert model.get_vec_normalize_env() is env
    model.set_env(eval_env)
    assert model.get_vec_normalize_env() is eval_env
    model.learn(total_timesteps=10)
    model.set_env(env)
    model.learn(total_timesteps=150)
    # Check getter
    assert isinstance(model.get_vec_normalize_env(), VecNormalize)

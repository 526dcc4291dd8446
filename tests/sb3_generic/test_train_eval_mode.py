"""Train and eval modes (batch norm, dropout), adapted from stable-baselines3 tests/test_train_eval_mode.py
(MIT, Copyright (c) 2019 Antonin Raffin): the cases of the on-policy algorithms A2C and PPO, with ACER as
the only algorithm.

ACER runs the cases on ``Pendulum-v1`` and ``CartPole-v1`` as A2C and PPO do. Left out: the cases of DQN's,
SAC's and TD3's target networks and critics.
"""

import gymnasium as gym
import numpy as np
import pytest
import torch as th
import torch.nn as nn
from stable_baselines3.common.preprocessing import get_flattened_obs_dim
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from sb3_acer import ACER

from .common import SMALL, deliberate

MODEL_LIST = [ACER]

ENV_IDS = ["Pendulum-v1", "CartPole-v1"]


class FlattenBatchNormDropoutExtractor(BaseFeaturesExtractor):
    """
    Feature extract that flatten the input and applies batch normalization and dropout.
    Used as a placeholder when feature extraction is not needed.

    :param observation_space:
    """

    def __init__(self, observation_space: gym.Space):
        super().__init__(
            observation_space,
            get_flattened_obs_dim(observation_space),
        )
        self.flatten = nn.Flatten()
        self.batch_norm = nn.BatchNorm1d(self._features_dim)
        self.dropout = nn.Dropout(0.5)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        result = self.flatten(observations)
        result = self.batch_norm(result)
        result = self.dropout(result)
        return result


def clone_batch_norm_stats(batch_norm: nn.BatchNorm1d) -> (th.Tensor, th.Tensor):
    """
    Clone the bias and running mean from the given batch norm layer.

    :param batch_norm:
    :return: the bias and running mean
    """
    return batch_norm.bias.clone(), batch_norm.running_mean.clone()


def clone_on_policy_batch_norm(model: ACER) -> (th.Tensor, th.Tensor):
    return clone_batch_norm_stats(model.policy.features_extractor.batch_norm)


CLONE_HELPERS = {
    ACER: clone_on_policy_batch_norm,
}


@pytest.mark.parametrize("model_class", MODEL_LIST)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a2c_ppo_train_with_batch_norm(model_class, env_id):
    model = model_class(
        "MlpPolicy",
        env_id,
        policy_kwargs=dict(net_arch=[16, 16], features_extractor_class=FlattenBatchNormDropoutExtractor),
        seed=1,
        **SMALL,
    )

    bias_before, running_mean_before = clone_on_policy_batch_norm(model)

    model.learn(total_timesteps=200)

    bias_after, running_mean_after = clone_on_policy_batch_norm(model)

    assert ~th.isclose(bias_before, bias_after).all()
    assert ~th.isclose(running_mean_before, running_mean_after).all()


@pytest.mark.parametrize("model_class", MODEL_LIST)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a2c_ppo_collect_rollouts_with_batch_norm(model_class, env_id):
    model = model_class(
        "MlpPolicy",
        env_id,
        policy_kwargs=dict(net_arch=[16, 16], features_extractor_class=FlattenBatchNormDropoutExtractor),
        seed=1,
        n_steps=64,
    )

    bias_before, running_mean_before = clone_on_policy_batch_norm(model)

    _total_timesteps, callback = model._setup_learn(total_timesteps=2 * 64)

    for _ in range(2):
        # ACER: one segment of n_steps per call (SB3's collect_rollouts into its rollout buffer).
        model._collect(callback)

    bias_after, running_mean_after = clone_on_policy_batch_norm(model)

    assert th.isclose(bias_before, bias_after).all()
    assert th.isclose(running_mean_before, running_mean_after).all()


@deliberate(
    "ACER collects one segment at a time into its replay memory; it has no rollout buffer and no "
    "collect_rollouts (SB3's on-policy loop)",
    raises=AttributeError,
)
def test_collect_rollouts_sb3():
    """SB3's call of ``collect_rollouts``, as SB3 writes it in its batch-norm rollout test."""
    model = ACER("MlpPolicy", "CartPole-v1", policy_kwargs=dict(net_arch=[16]), seed=1, **SMALL)
    _total_timesteps, callback = model._setup_learn(total_timesteps=2 * 8)
    model.collect_rollouts(model.get_env(), callback, model.rollout_buffer, n_rollout_steps=8)


@pytest.mark.parametrize("model_class", MODEL_LIST)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_predict_with_dropout_batch_norm(model_class, env_id):
    model_kwargs = dict(seed=1)
    clone_helper = CLONE_HELPERS[model_class]

    model_kwargs["n_steps"] = 64

    policy_kwargs = dict(
        features_extractor_class=FlattenBatchNormDropoutExtractor,
        net_arch=[16, 16],
    )
    model = model_class("MlpPolicy", env_id, policy_kwargs=policy_kwargs, verbose=1, **model_kwargs)

    batch_norm_stats_before = clone_helper(model)

    env = model.get_env()
    observation = env.reset()
    first_prediction, _ = model.predict(observation, deterministic=True)
    for _ in range(5):
        prediction, _ = model.predict(observation, deterministic=True)
        np.testing.assert_allclose(first_prediction, prediction)

    batch_norm_stats_after = clone_helper(model)

    # No change in batch norm params
    for param_before, param_after in zip(batch_norm_stats_before, batch_norm_stats_after, strict=True):
        assert th.isclose(param_before, param_after).all()

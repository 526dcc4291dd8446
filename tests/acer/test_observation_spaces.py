"""Every supported observation space learns with replay, predicts, and survives save/load."""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.envs import FakeImageEnv
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import VecTransposeImage

from sb3_acer import ACER
from tests.helpers.acer_envs import ObservationSpaceEnv


@pytest.fixture(scope="module")
def small_settings(small_settings: Mapping[str, Any]) -> Mapping[str, Any]:
    """The shared small settings (conftest.py) with the 100-step memory these tests always had."""
    return {**small_settings, "buffer_size": 100}


OBSERVATION_SPACES = {
    "box": spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32),
    "box2d": spaces.Box(-1.0, 1.0, shape=(2, 3), dtype=np.float32),
    "discrete": spaces.Discrete(5),
    "multidiscrete": spaces.MultiDiscrete([3, 4]),
    "multibinary": spaces.MultiBinary(4),
}


@pytest.mark.parametrize("name", list(OBSERVATION_SPACES))
def test_observation_space_learns_with_replay_and_predicts(
    name: str, small_settings: Mapping[str, Any]
) -> None:
    space = OBSERVATION_SPACES[name]
    model = ACER("MlpPolicy", ObservationSpaceEnv(space), **small_settings).learn(300)
    assert model.num_timesteps == 300
    assert model._n_replay_updates > 0
    assert model.replay_buffer is not None
    assert model.replay_buffer.observations.dtype == space.dtype
    assert model.n_skipped_updates == 0

    single = space.sample()
    action, _ = model.predict(single, deterministic=True)
    assert action.shape == ()
    batch = np.stack([space.sample() for _ in range(6)])
    actions, _ = model.predict(batch)
    assert actions.shape == (6,)
    assert ((actions >= 0) & (actions < 3)).all()
    assert model.action_probability(single).shape == (3,)
    assert model.action_probability(batch).shape == (6, 3)

    buffer = io.BytesIO()
    model.save(buffer)
    buffer.seek(0)
    loaded = ACER.load(buffer)
    assert loaded.observation_space == model.observation_space
    np.testing.assert_array_equal(loaded.action_probability(batch), model.action_probability(batch))


def test_discrete_observation_as_python_int(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", ObservationSpaceEnv(spaces.Discrete(5)), **small_settings)
    action, _ = model.predict(3, deterministic=True)
    assert action.shape == ()
    # One-hot: observation 3 and 4 are different inputs.
    assert not np.array_equal(model.action_probability(3), model.action_probability(4))


def test_image_observations_with_cnn_policy(small_settings: Mapping[str, Any]) -> None:
    env = Monitor(FakeImageEnv(action_dim=3, screen_height=36, screen_width=36, n_channels=1))
    model = ACER("CnnPolicy", env, **small_settings)
    # The env is channel-last; SB3 transposes it for the network and the buffer keeps uint8.
    assert isinstance(model.get_env(), VecTransposeImage)
    assert model.observation_space.shape == (1, 36, 36)
    model.learn(100)
    assert model._n_replay_updates > 0
    assert model.replay_buffer is not None
    assert model.replay_buffer.observations.dtype == np.uint8
    assert model.replay_buffer.observations.shape[-3:] == (1, 36, 36)

    channel_last = np.random.default_rng(0).integers(0, 256, size=(36, 36, 1), dtype=np.uint8)
    channel_first = np.transpose(channel_last, (2, 0, 1))
    action, _ = model.predict(channel_last, deterministic=True)
    assert action.shape == ()
    assert action == model.predict(channel_first, deterministic=True)[0]
    np.testing.assert_array_equal(
        model.action_probability(channel_last), model.action_probability(channel_first)
    )
    assert model.predict(np.stack([channel_last] * 4))[0].shape == (4,)
    assert model.action_probability(np.stack([channel_first] * 4)).shape == (4, 3)
    with pytest.raises(ValueError, match="observation"):
        model.predict(np.zeros((35, 36, 1), dtype=np.uint8))

    # evaluate_policy feeds the un-wrapped (channel-last) env's observations to predict.
    mean_reward, _ = evaluate_policy(model, env, n_eval_episodes=2)
    assert isinstance(mean_reward, float)


def test_image_observations_with_mlp_policy_are_normalised(small_settings: Mapping[str, Any]) -> None:
    env = FakeImageEnv(action_dim=2, screen_height=8, screen_width=8, n_channels=3)
    model = ACER("MlpPolicy", env, **small_settings).learn(50)
    assert model.policy.normalize_images
    assert model.replay_buffer is not None and model.replay_buffer.observations.dtype == np.uint8
    assert model.predict(np.zeros((8, 8, 3), dtype=np.uint8))[0].shape == ()

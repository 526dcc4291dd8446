"""Files written by an earlier version load and predict as they did (``tests/data/format_v1``).

The files were written by ``tests/data/format_v1/make_files.py`` with the code as it was before the
package's redesign; the actions and probabilities recorded beside them are what that code predicted.
"""

from __future__ import annotations

import json
import pathlib
import zipfile

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER

DATA = pathlib.Path(__file__).parents[2] / "data" / "format_v1"
EXPECTED = json.loads((DATA / "expected.json").read_text())


@pytest.mark.parametrize("name", ["cartpole_mlp", "image_cnn"])
def test_feed_forward_model_predicts_as_saved(name: str) -> None:
    model = ACER.load(DATA / f"{name}.zip")
    case = EXPECTED[name]
    dtype = np.uint8 if name == "image_cnn" else np.float32
    observations = np.asarray(case["observations"], dtype=dtype)
    actions, _ = model.predict(observations, deterministic=True)
    np.testing.assert_array_equal(actions, case["actions"])
    np.testing.assert_allclose(model.action_probability(observations), case["probs"], rtol=1e-6, atol=1e-7)
    assert model.replay_buffer is not None and len(model.replay_buffer) > 0


def test_recurrent_model_predicts_as_saved() -> None:
    model = ACER.load(DATA / "cartpole_lstm.zip")
    case = EXPECTED["cartpole_lstm"]
    actions, _ = model.predict(np.asarray(case["observations"], dtype=np.float32), deterministic=True)
    np.testing.assert_array_equal(actions, case["actions"])


def test_model_with_embedded_replay_keeps_training() -> None:
    env = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    model = ACER.load(DATA / "cartpole_mlp.zip", env=env)
    stored = len(model.replay_buffer)
    steps = model.num_timesteps
    model.learn(20, reset_num_timesteps=False)
    assert model.num_timesteps == steps + 20
    assert len(model.replay_buffer) >= stored
    env.close()


def test_replay_file_loads_into_a_fresh_model() -> None:
    env = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    model = ACER("MlpPolicy", env, n_steps=5, buffer_size=50, replay_start=10, seed=0)
    model.load_replay_buffer(DATA / "cartpole_mlp_replay.pkl")
    saved = ACER.load(DATA / "cartpole_mlp.zip").replay_buffer
    assert len(model.replay_buffer) == len(saved) > 0
    first, second = model.replay_buffer.sample(), saved.sample()
    assert first.observations.shape == second.observations.shape
    env.close()


def test_files_of_the_first_format_were_not_trained_normalised() -> None:
    # sb3-acer 0.1 did not record VecNormalize in the model file: its models load as not normalised.
    assert not ACER.load(DATA / "cartpole_mlp.zip").trained_with_vec_normalize


def test_the_model_file_records_training_on_vec_normalize(tmp_path: pathlib.Path) -> None:
    from stable_baselines3.common.vec_env import VecNormalize

    env = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    model = ACER("MlpPolicy", env, n_steps=5, replay_ratio=0)
    assert model.trained_with_vec_normalize
    model.save(tmp_path / "model.zip")
    assert ACER.load(tmp_path / "model.zip").trained_with_vec_normalize
    # Its weights learned on normalised observations, whatever env it is given next.
    raw = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    assert ACER.load(tmp_path / "model.zip", env=raw).trained_with_vec_normalize
    raw.close()
    env.close()


def test_stable_baselines3_reads_the_model_file(tmp_path: pathlib.Path) -> None:
    import torch as th
    from stable_baselines3.common.save_util import load_from_zip_file

    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0, seed=0)
    model.save(tmp_path / "model.zip")
    data, params, pytorch_variables = load_from_zip_file(tmp_path / "model.zip")
    assert data is not None and data["format"] == "sb3-acer" and data["format_version"] == 2
    assert data["policy_class"] == "MlpPolicy"  # a policy of sb3-acer, by its name
    assert set(params) == {"policy", "policy_avg", "optimizer"}
    for name, tensor in model.policy.state_dict().items():
        assert th.equal(params["policy"][name], tensor)
    assert pytorch_variables == {}
    with zipfile.ZipFile(tmp_path / "model.zip") as archive:
        import stable_baselines3

        assert archive.read("_stable_baselines3_version").decode() == stable_baselines3.__version__
        assert "Stable-Baselines3" in archive.read("system_info.txt").decode()

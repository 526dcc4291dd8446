"""Files written by earlier versions load, predict and keep training as they did (``tests/data/``), and
a file written now records what SB3 reads.

``tests/data/format_v1``: written by its ``make_files.py`` with the code as it was before the package's
redesign. ``tests/data/format_v2``: written by its ``make_files.py`` with the code of the commit that added
them: CartPole (feed-forward with a replay file, and LSTM), Dict observations, and Box, MultiDiscrete and
MultiBinary actions, each with its replay memory. The actions and probabilities (for Box actions the
statistics) recorded beside them are what that code predicted.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import zipfile
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER

DATA = pathlib.Path(__file__).parents[2] / "data"
V1, V2 = DATA / "format_v1", DATA / "format_v2"
EXPECTED_V1 = json.loads((V1 / "expected.json").read_text())
EXPECTED_V2 = json.loads((V2 / "expected.json").read_text())
V2_NAMES = sorted(EXPECTED_V2)

_spec = importlib.util.spec_from_file_location("format_v2_make_files", V2 / "make_files.py")
assert _spec is not None and _spec.loader is not None
MAKE_FILES = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(MAKE_FILES)

# ------------------------------------------------------------------------------------------------ format 1


@pytest.mark.parametrize("name", ["cartpole_mlp", "image_cnn"])
def test_format_1_feed_forward_model_predicts_as_saved(name: str) -> None:
    model = ACER.load(V1 / f"{name}.zip")
    case = EXPECTED_V1[name]
    dtype = np.uint8 if name == "image_cnn" else np.float32
    observations = np.asarray(case["observations"], dtype=dtype)
    actions, _ = model.predict(observations, deterministic=True)
    np.testing.assert_array_equal(actions, case["actions"])
    np.testing.assert_allclose(model.action_probability(observations), case["probs"], rtol=1e-6, atol=1e-7)
    assert model.replay_buffer is not None and len(model.replay_buffer) > 0


def test_format_1_recurrent_model_predicts_as_saved() -> None:
    model = ACER.load(V1 / "cartpole_lstm.zip")
    case = EXPECTED_V1["cartpole_lstm"]
    actions, _ = model.predict(np.asarray(case["observations"], dtype=np.float32), deterministic=True)
    np.testing.assert_array_equal(actions, case["actions"])


def test_format_1_model_with_embedded_replay_keeps_training() -> None:
    env = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    model = ACER.load(V1 / "cartpole_mlp.zip", env=env)
    stored = len(model.replay_buffer)
    steps = model.num_timesteps
    model.learn(20, reset_num_timesteps=False)
    assert model.num_timesteps == steps + 20
    assert len(model.replay_buffer) >= stored
    env.close()


def test_format_1_replay_file_loads_into_a_fresh_model() -> None:
    env = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    model = ACER("MlpPolicy", env, n_steps=5, buffer_size=50, replay_start=10, seed=0)
    model.load_replay_buffer(V1 / "cartpole_mlp_replay.pkl")
    saved = ACER.load(V1 / "cartpole_mlp.zip").replay_buffer
    assert len(model.replay_buffer) == len(saved) > 0
    first, second = model.replay_buffer.sample(), saved.sample()
    assert first.observations.shape == second.observations.shape
    env.close()


def test_format_1_files_were_not_trained_normalised() -> None:
    # sb3-acer 0.1 did not record VecNormalize in the model file: its models load as not normalised.
    assert not ACER.load(V1 / "cartpole_mlp.zip").trained_with_vec_normalize


# ------------------------------------------------------------------------------------------------ format 2


def _observations(model: ACER, recorded: Any) -> Any:
    space = model.observation_space
    if isinstance(recorded, dict):
        return {key: np.asarray(value, dtype=space[key].dtype) for key, value in recorded.items()}
    return np.asarray(recorded, dtype=space.dtype)


def _env(name: str) -> DummyVecEnv:
    return DummyVecEnv([MAKE_FILES.ENVS[name]] * 2)


def test_format_2_every_file_is_recorded() -> None:
    assert set(V2_NAMES) == {
        "box",
        "cartpole_lstm",
        "cartpole_mlp",
        "dict_obs",
        "multibinary",
        "multidiscrete",
    }


@pytest.mark.parametrize("name", V2_NAMES)
def test_format_2_model_predicts_as_saved(name: str) -> None:
    model = ACER.load(V2 / f"{name}.zip")
    case = EXPECTED_V2[name]
    observations = _observations(model, case["observations"])
    actions, _ = model.predict(observations, deterministic=True)
    if name == "box":  # the mean of the Gaussian
        np.testing.assert_allclose(actions, case["actions"], rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(actions, case["actions"])
    np.testing.assert_allclose(model.action_probability(observations), case["probs"], rtol=1e-6, atol=1e-7)
    assert model.replay_buffer is not None and len(model.replay_buffer) > 0


@pytest.mark.parametrize("name", V2_NAMES)
def test_format_2_model_with_embedded_replay_keeps_training(name: str) -> None:
    th.set_num_threads(1)
    env = _env(name)
    model = ACER.load(V2 / f"{name}.zip", env=env)
    stored, steps, updates = len(model.replay_buffer), model.num_timesteps, model._n_replay_updates
    model.learn(20, reset_num_timesteps=False)
    assert model.num_timesteps == steps + 20
    assert len(model.replay_buffer) >= stored
    assert model._n_replay_updates > updates  # it replayed from the loaded memory
    env.close()


def test_format_2_replay_file_loads_into_a_fresh_model() -> None:
    env = _env("cartpole_mlp")
    model = ACER("MlpPolicy", env, n_steps=5, buffer_size=50, replay_start=10, seed=0)
    model.load_replay_buffer(V2 / "cartpole_mlp_replay.pkl")
    saved = ACER.load(V2 / "cartpole_mlp.zip").replay_buffer
    assert len(model.replay_buffer) == len(saved) > 0
    # Saved at the same moment, sampling generators included: the same batches come out.
    first, second = model.replay_buffer.sample(), saved.sample()
    np.testing.assert_array_equal(first.observations, second.observations)
    np.testing.assert_array_equal(first.actions, second.actions)
    np.testing.assert_array_equal(first.mu_probs, second.mu_probs)
    env.close()


@pytest.mark.parametrize("name", V2_NAMES)
def test_stable_baselines3_reads_the_committed_files_of_format_2(name: str) -> None:
    data, params, pytorch_variables = load_from_zip_file(V2 / f"{name}.zip")
    assert data is not None and data["format"] == "sb3-acer" and data["format_version"] == 2
    assert set(params) == {"policy", "policy_avg", "optimizer"}
    assert pytorch_variables == {}
    model = ACER.load(V2 / f"{name}.zip")
    for key, tensor in model.policy.state_dict().items():
        assert th.equal(params["policy"][key], tensor)


# ------------------------------------------------------------------------------------------ files written now


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

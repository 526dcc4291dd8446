"""Files of format 2 load, predict and keep training as they did (``tests/data/format_v2``).

The files were written by ``tests/data/format_v2/make_files.py`` with the code of the commit that added
them: CartPole (feed-forward with a replay file, and LSTM), Dict observations, and Box, MultiDiscrete and
MultiBinary actions, each with its replay memory. The actions and probabilities (for Box actions the
statistics) recorded beside them are what that code predicted.
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
from typing import Any

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.save_util import load_from_zip_file
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER

DATA = pathlib.Path(__file__).parents[2] / "data" / "format_v2"
EXPECTED = json.loads((DATA / "expected.json").read_text())
NAMES = sorted(EXPECTED)

_spec = importlib.util.spec_from_file_location("format_v2_make_files", DATA / "make_files.py")
assert _spec is not None and _spec.loader is not None
MAKE_FILES = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(MAKE_FILES)


def _observations(model: ACER, recorded: Any) -> Any:
    space = model.observation_space
    if isinstance(recorded, dict):
        return {key: np.asarray(value, dtype=space[key].dtype) for key, value in recorded.items()}
    return np.asarray(recorded, dtype=space.dtype)


def _env(name: str) -> DummyVecEnv:
    return DummyVecEnv([MAKE_FILES.ENVS[name]] * 2)


def test_every_file_is_recorded() -> None:
    assert set(NAMES) == {"box", "cartpole_lstm", "cartpole_mlp", "dict_obs", "multibinary", "multidiscrete"}


@pytest.mark.parametrize("name", NAMES)
def test_model_predicts_as_saved(name: str) -> None:
    model = ACER.load(DATA / f"{name}.zip")
    case = EXPECTED[name]
    observations = _observations(model, case["observations"])
    actions, _ = model.predict(observations, deterministic=True)
    if name == "box":  # the mean of the Gaussian
        np.testing.assert_allclose(actions, case["actions"], rtol=1e-6, atol=1e-7)
    else:
        np.testing.assert_array_equal(actions, case["actions"])
    np.testing.assert_allclose(model.action_probability(observations), case["probs"], rtol=1e-6, atol=1e-7)
    assert model.replay_buffer is not None and len(model.replay_buffer) > 0


@pytest.mark.parametrize("name", NAMES)
def test_model_with_embedded_replay_keeps_training(name: str) -> None:
    th.set_num_threads(1)
    env = _env(name)
    model = ACER.load(DATA / f"{name}.zip", env=env)
    stored, steps, updates = len(model.replay_buffer), model.num_timesteps, model._n_replay_updates
    model.learn(20, reset_num_timesteps=False)
    assert model.num_timesteps == steps + 20
    assert len(model.replay_buffer) >= stored
    assert model._n_replay_updates > updates  # it replayed from the loaded memory
    env.close()


def test_replay_file_loads_into_a_fresh_model() -> None:
    env = _env("cartpole_mlp")
    model = ACER("MlpPolicy", env, n_steps=5, buffer_size=50, replay_start=10, seed=0)
    model.load_replay_buffer(DATA / "cartpole_mlp_replay.pkl")
    saved = ACER.load(DATA / "cartpole_mlp.zip").replay_buffer
    assert len(model.replay_buffer) == len(saved) > 0
    # Saved at the same moment, sampling generators included: the same batches come out.
    first, second = model.replay_buffer.sample(), saved.sample()
    np.testing.assert_array_equal(first.observations, second.observations)
    np.testing.assert_array_equal(first.actions, second.actions)
    np.testing.assert_array_equal(first.mu_probs, second.mu_probs)
    env.close()


@pytest.mark.parametrize("name", NAMES)
def test_stable_baselines3_reads_the_model_file(name: str) -> None:
    data, params, pytorch_variables = load_from_zip_file(DATA / f"{name}.zip")
    assert data is not None and data["format"] == "sb3-acer" and data["format_version"] == 2
    assert set(params) == {"policy", "policy_avg", "optimizer"}
    assert pytorch_variables == {}
    model = ACER.load(DATA / f"{name}.zip")
    for key, tensor in model.policy.state_dict().items():
        assert th.equal(params["policy"][key], tensor)

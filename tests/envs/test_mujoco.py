"""Gymnasium's MuJoCo tasks: a missing ``mujoco`` package is one clear line, and continuous ACER runs a few
segments on a MuJoCo env and keeps its predictions through save and load."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

from sb3_acer import ACER
from sb3_acer.cli.environments import resolve_env
from sb3_acer.cli.errors import CLIError
from sb3_acer.envs.mujoco import MUJOCO_INSTALL, MuJoCoNotInstalledError, is_mujoco_id, require_mujoco


@pytest.fixture
def no_mujoco(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import mujoco`` fails, as where the package is not installed."""
    monkeypatch.setitem(sys.modules, "mujoco", None)


def test_mujoco_ids() -> None:
    assert is_mujoco_id("InvertedPendulum-v5")
    assert is_mujoco_id("gymnasium:Hopper-v5")
    assert not is_mujoco_id("CartPole-v1")
    assert not is_mujoco_id("NoSuchEnv-v0")


@pytest.mark.usefixtures("no_mujoco")
def test_missing_mujoco_is_one_line() -> None:
    with pytest.raises(MuJoCoNotInstalledError) as raised:
        ACER("MlpPolicy", "Hopper-v5")
    message = str(raised.value)
    assert "\n" not in message
    assert MUJOCO_INSTALL in message and "Hopper-v5" in message
    with pytest.raises(CLIError, match=r'pip install "sb3-acer\[mujoco\]"'):
        resolve_env("InvertedPendulum-v5")
    require_mujoco("CartPole-v1")  # other envs do not need it


def test_a_few_segments_and_save_load(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("mujoco")
    model = ACER("MlpPolicy", "InvertedPendulum-v5", n_steps=10, replay_start=20, buffer_size=200, seed=0)
    model.learn(100)
    assert model.num_timesteps == 100
    observations = np.stack([model.env.observation_space.sample() for _ in range(8)])
    actions, _ = model.predict(observations, deterministic=True)
    assert actions.shape == (8, 1)
    model.save(tmp_path / "model.zip")
    loaded = ACER.load(tmp_path / "model.zip")
    np.testing.assert_array_equal(loaded.predict(observations, deterministic=True)[0], actions)

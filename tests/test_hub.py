"""Sharing models on the Hugging Face Hub with ``huggingface_sb3`` (from ``sb3-team-hf-integration``, which
rl-zoo3 installs): an ACER model is packaged with its model card, evaluation and replay video, and a
model fetched with ``load_from_hub`` loads with ``ACER.load``. The network is stubbed out."""

from __future__ import annotations

import json
import pathlib
import shutil
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER

huggingface_sb3 = pytest.importorskip("huggingface_sb3")
pytest.importorskip("moviepy")


class _Repo:
    repo_id = "someone/acer-CartPole-v1"


@pytest.fixture
def offline_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> pathlib.Path:
    """A Hub whose uploads land in a local folder and whose downloads come from it."""
    from huggingface_hub import HfApi

    hub = tmp_path / "hub"

    def upload_folder(self: Any, *, repo_id: str, folder_path: Any, **kwargs: Any) -> None:
        shutil.copytree(folder_path, hub / repo_id)

    def download(repo_id: str, filename: str, **kwargs: Any) -> str:
        return str(hub / repo_id / filename)

    monkeypatch.setattr(HfApi, "create_repo", lambda self, repo_id, **kwargs: _Repo())
    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    monkeypatch.setattr("huggingface_hub.hf_hub_download", download)
    return hub


def test_package_to_hub_then_load_from_hub(
    offline_hub: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0, seed=0)
    model.learn(50)
    eval_env = DummyVecEnv([lambda: Monitor(gym.make("CartPole-v1", render_mode="rgb_array"))])
    huggingface_sb3.package_to_hub(
        model=model,
        model_name="acer-CartPole-v1",
        model_architecture="ACER",
        env_id="CartPole-v1",
        eval_env=eval_env,
        repo_id=_Repo.repo_id,
        n_eval_episodes=2,
        video_length=20,
    )
    uploaded = offline_hub / _Repo.repo_id
    names = {path.name for path in uploaded.iterdir()}
    # replay.mp4 too where the ffmpeg program is installed (huggingface_sb3 converts the video with it)
    assert {"acer-CartPole-v1.zip", "config.json", "results.json", "README.md"} <= names
    config = json.loads((uploaded / "config.json").read_text())
    assert config["format"] == "sb3-acer" and config["algorithm"] == "ACER"  # read from the zip's data
    card = (uploaded / "README.md").read_text()
    assert "ACER" in card and "CartPole-v1" in card
    obs = np.random.default_rng(0).uniform(-0.1, 0.1, size=(5, 4)).astype(np.float32)
    expected = model.predict(obs, deterministic=True)[0]
    # huggingface_hub's download, then ACER.load, which never unpickles anything.
    from huggingface_hub import hf_hub_download

    path = hf_hub_download(repo_id=_Repo.repo_id, filename="acer-CartPole-v1.zip")
    np.testing.assert_array_equal(ACER.load(path).predict(obs, deterministic=True)[0], expected)
    # load_from_hub guards against SB3's pickles until TRUST_REMOTE_CODE is set; ACER's file holds none.
    monkeypatch.setenv("TRUST_REMOTE_CODE", "True")
    path = huggingface_sb3.load_from_hub(repo_id=_Repo.repo_id, filename="acer-CartPole-v1.zip")
    np.testing.assert_array_equal(ACER.load(path).predict(obs, deterministic=True)[0], expected)
    eval_env.close()

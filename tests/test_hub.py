"""Sharing models on the Hugging Face Hub, with the network replaced by a local folder (``offline_hub``).

``huggingface_sb3.package_to_hub`` packages an ACER model with its card, evaluation and replay video, and a
model fetched with ``hf_hub_download`` or ``load_from_hub`` loads with ``ACER.load``. Through the zoo,
``python -m sb3_acer.zoo push_to_hub`` uploads a zoo run with a card whose commands work as written
(``load_from_hub``, ``enjoy``, ``sb3-acer enjoy``, ``ACER.load``), the replay video made with imageio-ffmpeg's
binary, and ``load_from_hub`` checks every file it downloads before the zoo writes the folder."""

from __future__ import annotations

import json
import pathlib
import re
import runpy
import shlex
import shutil
import sys
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest
import yaml
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER

huggingface_sb3 = pytest.importorskip("huggingface_sb3")
pytest.importorskip("moviepy")
pytest.importorskip("rl_zoo3")
pytest.importorskip("imageio_ffmpeg")

from sb3_acer.zoo import bundled_ffmpeg, main  # noqa: E402

REPO_ID = "someone/acer-CartPole-v1"
#: The files rl-zoo3's push_to_hub uploads (and the model unzipped, a folder).
ZOO_FILES = {
    "acer-CartPole-v1.zip",
    "args.yml",
    "config.yml",
    "env_kwargs.yml",
    "train_eval_metrics.zip",
    "results.json",
    "README.md",
    "replay.mp4",
}
OBS = np.random.default_rng(0).uniform(-0.1, 0.1, size=(5, 4)).astype(np.float32)


def _is_h264_video(path: pathlib.Path) -> bool:
    """An MP4 file whose video is H.264 (the codec huggingface_sb3 asks ffmpeg for)."""
    data = path.read_bytes()
    return data[4:8] == b"ftyp" and b"avc1" in data


@pytest.fixture
def no_system_ffmpeg(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """An ``ffmpeg`` program first on PATH that only leaves a marker (returned) and fails: a system ffmpeg
    that must not be the one used."""
    bin_folder = tmp_path / "system_bin"
    bin_folder.mkdir()
    marker = tmp_path / "SYSTEM_FFMPEG_RAN"
    program = bin_folder / "ffmpeg"
    program.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(marker))}\nexit 1\n")
    program.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_folder}:/usr/bin:/bin")
    return marker


def test_package_to_hub_then_load_from_hub(
    offline_hub: pathlib.Path, monkeypatch: pytest.MonkeyPatch, no_system_ffmpeg: pathlib.Path
) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0, seed=0)
    model.learn(50)
    eval_env = DummyVecEnv([lambda: Monitor(gym.make("CartPole-v1", render_mode="rgb_array"))])
    with bundled_ffmpeg():  # huggingface_sb3 runs the program ffmpeg for the replay video
        huggingface_sb3.package_to_hub(
            model=model,
            model_name="acer-CartPole-v1",
            model_architecture="ACER",
            env_id="CartPole-v1",
            eval_env=eval_env,
            repo_id=REPO_ID,
            n_eval_episodes=2,
            video_length=20,
        )
    uploaded = offline_hub / REPO_ID
    names = {path.name for path in uploaded.iterdir()}
    assert {"acer-CartPole-v1.zip", "config.json", "results.json", "README.md", "replay.mp4"} <= names
    assert _is_h264_video(uploaded / "replay.mp4") and not no_system_ffmpeg.exists()
    config = json.loads((uploaded / "config.json").read_text())
    assert config["format"] == "sb3-acer" and config["algorithm"] == "ACER"  # read from the zip's data
    card = (uploaded / "README.md").read_text()
    assert "ACER" in card and "CartPole-v1" in card
    expected = model.predict(OBS, deterministic=True)[0]
    # huggingface_hub's download, then ACER.load, which never unpickles anything.
    from huggingface_hub import hf_hub_download

    path = hf_hub_download(repo_id=REPO_ID, filename="acer-CartPole-v1.zip")
    np.testing.assert_array_equal(ACER.load(path).predict(OBS, deterministic=True)[0], expected)
    # load_from_hub guards against SB3's pickles until TRUST_REMOTE_CODE is set; ACER's file holds none.
    monkeypatch.setenv("TRUST_REMOTE_CODE", "True")
    path = huggingface_sb3.load_from_hub(repo_id=REPO_ID, filename="acer-CartPole-v1.zip")
    np.testing.assert_array_equal(ACER.load(path).predict(OBS, deterministic=True)[0], expected)
    eval_env.close()


def test_bundled_ffmpeg_needs_imageio_ffmpeg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # not installed
    needs = r"^the replay video needs imageio-ffmpeg's ffmpeg: pip install"
    with pytest.raises(ImportError, match=needs), bundled_ffmpeg():
        pass


# ------------------------------------------------------------------------------------ through the zoo

TRAIN = ["train", "--env", "CartPole-v1", "-f", "logs", "-n", "400", "--eval-freq", "-1", "--seed", "0"]
PUSH = ["push_to_hub", "--env", "CartPole-v1", "-f", "logs", "-orga", "someone", "-n", "20"]
LOAD = ["load_from_hub", "--env", "CartPole-v1", "-f", "downloads", "-orga", "someone"]
DOWNLOADED = pathlib.Path("downloads", "acer", "CartPole-v1_1")


@pytest.fixture(scope="module")
def zoo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """A folder where the zoo trained ACER on CartPole for 400 steps (``logs/acer/CartPole-v1_1``)."""
    folder = tmp_path_factory.mktemp("zoo")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        main(TRAIN)
        yield folder


@pytest.fixture
def pushed(
    zoo_run: pathlib.Path,
    offline_hub: pathlib.Path,
    no_system_ffmpeg: pathlib.Path,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
) -> pathlib.Path:
    """The zoo run pushed with ``python -m sb3_acer.zoo push_to_hub`` (from a copy, in ``tmp_path``, the
    current folder): the Hub's repository folder."""
    shutil.copytree(zoo_run / "logs", tmp_path / "logs")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    main(PUSH)
    assert not no_system_ffmpeg.exists()  # the video was made with imageio-ffmpeg's binary
    return offline_hub / REPO_ID


def _card(repo: pathlib.Path) -> tuple[dict, str]:
    """The metadata and the text of a repository's model card."""
    _, header, text = (repo / "README.md").read_text().split("---\n", 2)
    return yaml.safe_load(header), text


def _card_commands(text: str) -> list[list[str]]:
    """The commands of the card's shell blocks, in order."""
    blocks = re.findall(r"^```bash\n(.*?)^```$", text, re.M | re.S)
    commands = [shlex.split(line, comments=True) for block in blocks for line in block.splitlines()]
    return [argv for argv in commands if argv]


def _run_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run a command of the card as a user would (``pip install`` is checked, not run); its output."""
    from sb3_acer.cli import main as cli_main

    capsys.readouterr()
    if argv[:2] == ["pip", "install"]:
        assert argv[2:] == ["sb3-acer[zoo,hub]"]
    elif argv[:3] == ["python", "-m", "sb3_acer.zoo"]:
        cuts = {"enjoy": ["--no-render", "-n", "50"], "train": ["-n", "200", "--eval-freq", "-1"]}
        main(argv[3:] + cuts.get(argv[3], []))
    else:
        assert argv[0] == "sb3-acer", argv
        assert cli_main([*argv[1:], "--episodes", "1"]) == 0
    return capsys.readouterr().out


def test_the_zoo_pushes_a_run_with_a_card_whose_commands_work(
    pushed: pathlib.Path,
    zoo_run: pathlib.Path,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert {path.name for path in pushed.iterdir()} >= ZOO_FILES
    assert _is_h264_video(pushed / "replay.mp4")
    metadata, text = _card(pushed)
    assert metadata["library_name"] == "stable-baselines3"
    assert metadata["tags"] == [
        "CartPole-v1",
        "deep-reinforcement-learning",
        "reinforcement-learning",
        "stable-baselines3",
        "sb3-acer",
        "acer",
    ]
    assert metadata["model-index"][0]["name"] == "ACER"
    assert "## Hyperparameters" in text and "'n_steps'" in text  # the zoo's section, kept
    commands = _card_commands(text)
    assert not [argv for argv in commands if "rl_zoo3" in " ".join(argv)]  # the zoo's own have no acer
    assert "from stable_baselines3" not in text and "from sb3_acer import ACER" in text
    assert [shlex.join(argv) for argv in commands[:4]] == [
        "pip install 'sb3-acer[zoo,hub]'",
        "python -m sb3_acer.zoo load_from_hub --algo acer --env CartPole-v1 -orga someone -f logs/",
        "python -m sb3_acer.zoo enjoy --algo acer --env CartPole-v1 -f logs/",
        "sb3-acer enjoy logs/acer/CartPole-v1_1/CartPole-v1.zip --env CartPole-v1",
    ]
    # A reader of the card, in an empty folder: the commands as written, then its Python.
    reader = tmp_path / "reader"
    reader.mkdir()
    monkeypatch.chdir(reader)
    outputs = [_run_command(argv, capsys) for argv in commands[:4]]
    assert "Episode Reward" in outputs[2] and "return" in outputs[3].lower()
    run = reader / "logs" / "acer" / "CartPole-v1_1"
    assert {path.name for path in run.iterdir()} >= {"CartPole-v1.zip", "CartPole-v1", "0.monitor.csv"}
    expected = ACER.load(zoo_run / "logs" / "acer" / "CartPole-v1_1" / "CartPole-v1.zip").predict(
        OBS, deterministic=True
    )[0]
    downloaded = ACER.load(run / "CartPole-v1.zip").predict(OBS, deterministic=True)[0]
    np.testing.assert_array_equal(downloaded, expected)
    python = re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)[0]  # then the hyperparameters
    (reader / "card.py").write_text(python)
    model = runpy.run_path(str(reader / "card.py"))["model"]
    np.testing.assert_array_equal(model.predict(OBS, deterministic=True)[0], expected)
    assert [shlex.join(argv) for argv in commands[4:]] == [  # training: train, then push again
        "python -m sb3_acer.zoo train --algo acer --env CartPole-v1 -f logs/",
        "python -m sb3_acer.zoo push_to_hub --algo acer --env CartPole-v1 -f logs/ -orga someone",
    ]
    for argv in commands[4:]:
        _run_command(argv, capsys)
    assert ACER.load(pushed / "acer-CartPole-v1.zip").num_timesteps == 200  # the reader's run, pushed

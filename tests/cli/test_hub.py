"""Sharing models on the Hugging Face Hub, with the network replaced by a local folder (``offline_hub``).

``huggingface_sb3.package_to_hub`` packages an ACER model with its card, evaluation and replay video, and a
model fetched with ``hf_hub_download`` or ``load_from_hub`` loads with ``ACER.load``. Through the zoo,
``python -m sb3_acer.zoo push_to_hub`` uploads a zoo run with a card whose commands work as written
(``load_from_hub``, ``enjoy``, ``sb3-acer enjoy``, ``ACER.load``), the replay video made with imageio-ffmpeg's
binary, and ``load_from_hub`` checks every file it downloads before the zoo writes the folder."""

from __future__ import annotations

import json
import pathlib
import pickle
import re
import runpy
import shlex
import shutil
import sys
import zipfile
from collections.abc import Iterator

import gymnasium as gym
import numpy as np
import pytest
import yaml
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER
from tests.helpers.hostile import MarkerPayload

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


def refused(argv: list[str]) -> str:
    """The one-line message ``main(argv)`` exits with."""
    with pytest.raises(SystemExit) as raised:
        main(argv)
    message = raised.value.code
    assert isinstance(message, str) and "\n" not in message, message
    return message


def test_push_without_imageio_ffmpeg_is_one_line_and_uploads_nothing(
    zoo_run: pathlib.Path, offline_hub: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(zoo_run)
    monkeypatch.setitem(sys.modules, "imageio_ffmpeg", None)  # not installed
    assert refused(PUSH) == (
        "sb3_acer.zoo push_to_hub: error: the replay video needs imageio-ffmpeg's ffmpeg: pip install "
        "'sb3-acer[hub]'; or pass --no-render to push without one"
    )
    assert not (offline_hub / REPO_ID).exists()


def _metrics(repo: pathlib.Path, members: dict[str, bytes]) -> None:
    with zipfile.ZipFile(repo / "train_eval_metrics.zip", "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)


#: How each case tampers with the Hub's repository, and what the refusal says (after the file's path).
HOSTILE_REPOS = {
    "config.yml tag": (
        lambda repo: (repo / "config.yml").write_text('!!python/object/apply:os.system ["touch MARKER"]\n'),
        r"config\.yml, line 1: refusing the YAML tag !!python/object/apply:os\.system, which the zoo's "
        r"loader \(yaml\.UnsafeLoader\) would run; ",
    ),
    "args.yml tag": (
        lambda repo: (repo / "args.yml").write_text("env: !!python/object/apply:os.system [touch MARKER]\n"),
        r"args\.yml, line 1: refusing the YAML tag !!python/object/apply:os\.system, ",
    ),
    "env_kwargs.yml tag": (
        lambda repo: (repo / "env_kwargs.yml").write_text("!!python/object/apply:os.system [touch MARKER]\n"),
        r"env_kwargs\.yml, line 1: refusing the YAML tag !!python/object/apply:os\.system, ",
    ),
    "vec_normalize.pkl": (
        lambda repo: (repo / "vec_normalize.pkl").write_bytes(pickle.dumps(MarkerPayload(repo / "MARKER"))),
        r"vec_normalize\.pkl holds pickled VecNormalize statistics, and unpickling a file can run any code; "
        r"refusing it; ",
    ),
    "metrics over the run's settings": (
        lambda repo: _metrics(repo, {"CartPole-v1/config.yml": b"!!python/object/apply:os.system [x]\n"}),
        r"train_eval_metrics\.zip: refusing 'CartPole-v1/config\.yml': the zoo writes plain file names "
        r"there, and extracting this one would write into the run's folders \(over its checked settings\); ",
    ),
    "metrics bomb": (
        lambda repo: _metrics(repo, {"0.monitor.csv": bytes(2_000_000)}),
        r"train_eval_metrics\.zip would extract 2000000 bytes, more than the zoo's metrics hold \(at most "
        r"1000000\); ",
    ),
    "metrics not a zip": (
        lambda repo: (repo / "train_eval_metrics.zip").write_bytes(b"not a zip"),
        r"train_eval_metrics\.zip is not a zip archive: File is not a zip file$",
    ),
    "no config.yml": (
        lambda repo: (repo / "config.yml").unlink(),
        r"someone/acer-CartPole-v1 has no config\.yml: not a repository of the zoo's push_to_hub$",
    ),
}


@pytest.fixture
def hub_repo(
    zoo_run: pathlib.Path, offline_hub: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> pathlib.Path:
    """The zoo run pushed without a video (the current folder is then an empty ``tmp_path/reader``): the
    Hub's repository folder."""
    monkeypatch.chdir(zoo_run)
    main([*PUSH, "--no-render"])
    shutil.rmtree(zoo_run / "hub")  # the zoo's copy of what it uploaded
    (tmp_path / "reader").mkdir()
    monkeypatch.chdir(tmp_path / "reader")
    return offline_hub / REPO_ID


@pytest.mark.parametrize("case", sorted(HOSTILE_REPOS))
def test_a_downloaded_file_that_would_run_code_is_refused_before_the_folder_is_written(
    hub_repo: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, case: str
) -> None:
    tamper, expected = HOSTILE_REPOS[case]
    tamper(hub_repo)
    monkeypatch.setattr("sb3_acer.cli.zoo.hub.MAX_METRICS_BYTES", 1_000_000)
    message = refused(LOAD)
    assert message.startswith("sb3_acer.zoo load_from_hub: error: "), message
    assert re.search(expected, message), message
    if not expected.endswith("$"):
        assert message.endswith("pass --trust-log-folder if you trust someone/acer-CartPole-v1"), message
    assert not (tmp_path / "reader" / "downloads").exists()  # nothing written
    assert not list(tmp_path.rglob("MARKER")) and not list(hub_repo.rglob("MARKER"))


def test_an_honest_download_without_statistics_plays(hub_repo: pathlib.Path, capsys) -> None:
    assert not (hub_repo / "vec_normalize.pkl").exists()
    main(LOAD)  # huggingface_hub's "not found" for vec_normalize.pkl is the zoo's "no statistics"
    assert "No normalization file" in capsys.readouterr().out
    assert (DOWNLOADED / "CartPole-v1" / "config.yml").is_file()
    assert not (DOWNLOADED / "CartPole-v1" / "vecnormalize.pkl").exists()
    main(["enjoy", "--env", "CartPole-v1", "-f", "downloads", "--no-render", "-n", "50"])
    assert "Episode Reward" in capsys.readouterr().out


# ----------------------------------------------------------------------------- a normalized run (a pickle)


@pytest.fixture(scope="module")
def normalized_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """A folder where the zoo trained ACER on CartPole with VecNormalize (``vecnormalize.pkl``, a pickle)."""
    folder = tmp_path_factory.mktemp("zoo_normalized")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        main([*TRAIN, "-params", "normalize:True"])
        yield folder


def test_a_normalized_run_is_pushed_and_played_only_when_trusted(
    normalized_run: pathlib.Path,
    offline_hub: pathlib.Path,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shutil.copytree(normalized_run / "logs", tmp_path / "logs")
    monkeypatch.chdir(tmp_path)
    statistics = pathlib.Path("logs", "acer", "CartPole-v1_1", "CartPole-v1", "vecnormalize.pkl")
    push = [*PUSH, "--no-render"]
    assert refused(push) == (  # push_to_hub reads the run folder as enjoy does
        f"sb3_acer.zoo push_to_hub: error: {statistics} holds pickled VecNormalize statistics, and "
        f"unpickling a file can run any code; refusing it; pass --trust-log-folder if you trust "
        f"{statistics.parents[1]}"
    )
    assert not (offline_hub / REPO_ID).exists()
    main([*push, "--trust-log-folder"])  # the user's own run
    repo = offline_hub / REPO_ID
    assert (repo / "vec_normalize.pkl").is_file()
    _, text = _card(repo)
    assert "`vec_normalize.pkl`: a pickle" in text
    commands = [shlex.join(argv) for argv in _card_commands(text)]
    assert commands[1:3] == [
        "python -m sb3_acer.zoo load_from_hub --algo acer --env CartPole-v1 -orga someone -f logs/ "
        "--trust-log-folder",
        "python -m sb3_acer.zoo enjoy --algo acer --env CartPole-v1 -f logs/ --trust-log-folder",
    ]
    assert not [command for command in commands if command.startswith("sb3-acer")]  # it reads no pickle
    (tmp_path / "reader").mkdir()
    monkeypatch.chdir(tmp_path / "reader")
    load = "python -m sb3_acer.zoo load_from_hub --algo acer --env CartPole-v1 -orga someone -f logs/"
    assert refused(shlex.split(load)[3:]).endswith(
        "vec_normalize.pkl holds pickled VecNormalize statistics, and unpickling a file can run any code; "
        "refusing it; pass --trust-log-folder if you trust someone/acer-CartPole-v1"
    )
    assert not pathlib.Path("logs").exists()
    outputs = [_run_command(shlex.split(command), capsys) for command in commands[1:3]]
    assert "Loading running average" in outputs[1] and "Episode Reward" in outputs[1]  # with its statistics
    assert pathlib.Path("logs", "acer", "CartPole-v1_1", "CartPole-v1", "vecnormalize.pkl").is_file()
    enjoy = ["enjoy", "--env", "CartPole-v1", "-f", "logs", "--no-render", "-n", "20"]
    assert refused(enjoy).endswith("pass --trust-log-folder if you trust logs/acer/CartPole-v1_1")


@pytest.mark.parametrize("script", ["push_to_hub", "load_from_hub"])
def test_the_hub_scripts_import_and_know_acer(
    script: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    # rl_zoo3.push_to_hub imports generate_metadata, which sb3-team-hf-integration 3.x does not have.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as raised:
        main([script, "--help"])
    assert raised.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: rl_zoo3.{script} [-h]") and ",acer}" in out
    assert not list(tmp_path.iterdir())

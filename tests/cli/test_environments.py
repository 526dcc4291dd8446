"""Environments from other packages on the command line: ``--gym-packages``, ``module:EnvId`` ids, and
``env_wrapper`` naming any wrapper class by its import path (MiniGrid's ``ImgObsWrapper``); and a received run
folder, whose ``model.json`` never chooses a module to import."""

from __future__ import annotations

import importlib.util
import json
import pathlib
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import NamedTuple

import gymnasium as gym
import pytest

from sb3_acer import ACER
from sb3_acer.cli import main
from tests.helpers.cli_helpers import FAST, assert_one_line_error, run

needs_minigrid = pytest.mark.skipif(importlib.util.find_spec("minigrid") is None, reason="needs minigrid")

GRID = "MiniGrid-Empty-5x5-v0"
IMAGE = ["--hyperparams", "env_wrapper=minigrid.wrappers.ImgObsWrapper"]
SHORT = ["--timesteps", "100", "--n-envs", "2", "--no-progress-bar"]


@needs_minigrid
def test_gym_packages_registers_the_env_and_enjoy_imports_it_when_named_again(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "train", GRID, "--gym-packages", "minigrid", *IMAGE, *SHORT,
                         "--log-folder", str(tmp_path))  # fmt: skip
    assert code == 0, err
    run_dir = tmp_path / f"{GRID}_0"
    assert f"watch it: sb3-acer enjoy {run_dir / 'model.zip'} --gym-packages minigrid\n" in out
    info = json.loads((run_dir / "model.json").read_text())
    assert info["gym_packages"] == ["minigrid"]
    assert info["env_wrapper"] == [{"minigrid.wrappers.ImgObsWrapper": {}}]
    model = ACER.load(run_dir / "model.zip")
    assert model.observation_space.shape == (3, 7, 7)  # the image alone (ImgObsWrapper), channel-first
    code, out, err = run(capsys, "enjoy", str(run_dir), "--episodes", "1", "--gym-packages", "minigrid")
    assert code == 0, err
    assert f"{GRID}: mean return over 1 episode " in out


@needs_minigrid
def test_minigrid_without_a_wrapper_names_its_text_key(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: "'NoneType' object is not iterable"; now the API's message, naming the key."""
    code, _, err = run(
        capsys, "train", GRID, "--gym-packages", "minigrid", *SHORT, "--log-folder", str(tmp_path)
    )
    assert_one_line_error(
        code,
        err,
        2,
        f"ACER cannot use {GRID}: key 'mission' of the Dict observation space: ACER supports Box",
    )
    assert not any(tmp_path.iterdir())


@needs_minigrid
def test_a_module_prefixed_id_imports_the_module(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "train", f"minigrid:{GRID}", *IMAGE, *SHORT, "--log-folder", str(tmp_path))
    assert code == 0, err
    run_dir = tmp_path / f"{GRID}_0"  # the folder is named by the registered id
    assert json.loads((run_dir / "model.json").read_text())["env_id"] == f"minigrid:{GRID}"
    code, _, err = run(capsys, "enjoy", str(run_dir), "--episodes", "1", "--env", f"minigrid:{GRID}")
    assert code == 0, err


@needs_minigrid
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "CartPole-v1", "--gym-packages", "no_such_package"],
         "--gym-packages: cannot import no_such_package"),
        (["train", "no_such_module:CartPole-v1"], "environment id no_such_module:CartPole-v1: cannot import"),
        (["train", "CartPole-v1", "--hyperparams", "env_wrapper=NoSuchWrapper"],
         "--hyperparams env_wrapper: unknown wrapper 'NoSuchWrapper'; accepted: "),
        (["train", "CartPole-v1", "--hyperparams", "env_wrapper=collections.OrderedDict"],
         "--hyperparams env_wrapper: collections.OrderedDict is not a gymnasium.Wrapper class"),
        (["train", "CartPole-v1", "--hyperparams", "env_wrapper=minigrid.wrappers.NoSuchWrapper"],
         "--hyperparams env_wrapper minigrid.wrappers.NoSuchWrapper: minigrid.wrappers has no NoSuchWrapper"),
    ],
)  # fmt: skip
def test_packages_and_wrappers_that_cannot_be_used_are_one_line(
    argv: list[str], message: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, *argv, *SHORT, "--log-folder", str(tmp_path))
    assert code in (1, 2)
    assert_one_line_error(code, err, code, message)
    assert not any(tmp_path.iterdir())


@needs_minigrid
def test_enjoy_imports_a_wrapper_module_only_if_imported_or_named(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = run(capsys, "train", "CartPole-v1", *SHORT, "--log-folder", str(tmp_path))
    assert code == 0, err
    info_path = tmp_path / "CartPole-v1_0" / "model.json"
    info = json.loads(info_path.read_text())
    info["env_wrapper"] = [{"minigrid.wrappers.ImgObsWrapper": {}}]  # a file naming another package's class
    info_path.write_text(json.dumps(info))
    for name in [name for name in sys.modules if name == "minigrid" or name.startswith("minigrid.")]:
        monkeypatch.delitem(sys.modules, name)  # as in a new process: not imported yet
    code, _, err = run(capsys, "enjoy", str(info_path.parent), "--episodes", "1")
    assert_one_line_error(
        code,
        err,
        1,
        f"{info_path}: env_wrapper: minigrid.wrappers.ImgObsWrapper is in minigrid.wrappers, which is not "
        "imported and not in a package named on the command line (a run folder does not choose what runs): "
        "pass --gym-packages minigrid if you trust it",
    )
    assert "minigrid" not in sys.modules


# A received run folder: its model.json names a module shipped beside it, which writes a marker file when it
# runs. enjoy imports it only when the user names it on the command line.

#: The module a received run folder ships: it writes MARKER (and, for the shadowing check, the file
#: netrc was imported from), registers an env and holds a wrapper class.
RECEIVED_MODULE = """\
import pathlib
import netrc
import gymnasium as gym

pathlib.Path({marker!r}).write_text(netrc.__file__)
gym.register({env!r}, entry_point="gymnasium.envs.classic_control.cartpole:CartPoleEnv", max_episode_steps=30)


class Wrap(gym.Wrapper):
    pass
"""


class Received(NamedTuple):
    folder: pathlib.Path
    module: str
    env: str
    marker: pathlib.Path

    def describe(self, **changes: object) -> None:
        """Edit the folder's model.json."""
        path = self.folder / "model.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


@pytest.fixture(scope="module")
def cartpole_run(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    logs = tmp_path_factory.mktemp("logs")
    assert main(["train", "CartPole-v1", *FAST, "--timesteps", "100", "--log-folder", str(logs)]) == 0
    return logs / "CartPole-v1_0"


@pytest.fixture
def received(cartpole_run: pathlib.Path, tmp_path: pathlib.Path) -> Iterator[Received]:
    """A copy of a CartPole run folder shipping a module (a new name each time: none is imported yet)."""
    folder = tmp_path / "received"
    shutil.copytree(cartpole_run, folder)
    name = f"received_{uuid.uuid4().hex}"
    case = Received(folder, name, f"Received{name[9:17]}-v0", tmp_path / "MARKER")
    (folder / f"{name}.py").write_text(RECEIVED_MODULE.format(marker=str(case.marker), env=case.env))
    # In the folder, as the module would shadow netrc if the folder came first on sys.path.
    (folder / "netrc.py").write_text(f"import pathlib\npathlib.Path({str(tmp_path / 'SHADOW')!r}).touch()\n")
    yield case
    sys.modules.pop(name, None)
    gym.registry.pop(case.env, None)


def _named_by_the_file(field: str, case: Received) -> tuple[dict[str, object], list[str]]:
    """How model.json names the received module in ``field``, and the option that names it on the command
    line."""
    if field == "gym_packages":
        return dict(gym_packages=[case.module], env_id=case.env), ["--gym-packages", case.module]
    if field == "env_id":
        return dict(env_id=f"{case.module}:{case.env}"), ["--env", f"{case.module}:{case.env}"]
    return dict(env_wrapper=[{f"{case.module}.Wrap": {}}]), ["--gym-packages", case.module]


@pytest.mark.parametrize("field", ["gym_packages", "env_id", "env_wrapper"])
def test_a_module_only_a_received_file_names_is_never_imported(
    field: str, received: Received, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    change, option = _named_by_the_file(field, received)
    received.describe(**change)
    monkeypatch.chdir(received.folder)  # in-process, as the console script: the folder is not on sys.path
    code, _, err = run(capsys, "enjoy", ".", "--episodes", "1")
    assert_one_line_error(code, err, 1, f"model.json: {field}")
    assert f"pass --gym-packages {received.module} if you trust it" in err
    assert not received.marker.exists() and received.module not in sys.modules
    # Named on the command line, it is the user's to import: from the working directory, which comes last.
    code, out, err = run(capsys, "enjoy", ".", "--episodes", "1", *option)
    assert code == 0, err
    assert " mean return over 1 episode " in out
    assert received.marker.exists() and received.module in sys.modules
    assert received.marker.read_text() != str(received.folder / "netrc.py")  # the installed one
    assert not (received.folder.parent / "SHADOW").exists()
    assert str(received.folder) not in sys.path  # appended only while it was imported


def test_train_imports_a_wrapper_the_user_names_from_the_working_directory(
    received: Received, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(received.folder)  # in-process, as the console script: the folder is not on sys.path
    wrapper = f"env_wrapper={received.module}.Wrap"  # the module is imported for its wrapper alone
    code, out, err = run(
        capsys, "train", "CartPole-v1", *FAST, "--timesteps", "100", "--hyperparams", wrapper
    )
    assert code == 0, err
    assert received.marker.exists() and str(received.folder) not in sys.path
    assert f"watch it: sb3-acer enjoy logs/CartPole-v1_0/model.zip --gym-packages {received.module}\n" in out
    info = json.loads((received.folder / "logs" / "CartPole-v1_0" / "model.json").read_text())
    assert info["env_wrapper"] == [{f"{received.module}.Wrap": {}}]


#: The console script as pip installs it: its own folder, not the working directory, is first on sys.path.
CONSOLE_SCRIPT = "import sys\nfrom sb3_acer.entry import main\nsys.exit(main())\n"


@pytest.mark.parametrize("launch", ["console script", "python -m"])
def test_both_launch_modes_import_what_the_user_names_and_nothing_the_file_names(
    launch: str, received: Received, tmp_path: pathlib.Path
) -> None:
    script = tmp_path / "bin" / "sb3-acer"
    script.parent.mkdir()
    script.write_text(CONSOLE_SCRIPT)
    command = (
        [sys.executable, str(script)] if launch == "console script" else [sys.executable, "-m", "sb3_acer"]
    )
    received.describe(gym_packages=[received.module], env_id=received.env)
    if launch == "python -m":  # it puts the folder first on sys.path itself: its netrc.py would be taken
        (received.folder / "netrc.py").unlink()

    def enjoy(*extra: str) -> subprocess.CompletedProcess[str]:
        argv = [*command, "enjoy", ".", "--episodes", "1", *extra]
        return subprocess.run(argv, cwd=received.folder, capture_output=True, text=True, timeout=300)

    refused = enjoy()
    assert refused.returncode == 1, refused.stderr
    assert (
        refused.stderr.startswith("error: model.json: gym_packages names ")
        and refused.stderr.count("\n") == 1
    )
    assert not received.marker.exists()
    played = enjoy("--gym-packages", received.module)
    assert played.returncode == 0, played.stderr
    assert f"{received.env}: mean return over 1 episode " in played.stdout
    assert received.marker.exists()
    assert received.marker.read_text() != str(received.folder / "netrc.py")  # the installed one

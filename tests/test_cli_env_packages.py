"""Environments from other packages on the command line: ``--gym-packages``, ``module:EnvId`` ids, and
``env_wrapper`` naming any wrapper class by its import path (MiniGrid's ``ImgObsWrapper``)."""

from __future__ import annotations

import json
import pathlib

import pytest
from cli_helpers import assert_one_line_error, run

from sb3_acer import ACER

pytest.importorskip("minigrid")

GRID = "MiniGrid-Empty-5x5-v0"
IMAGE = ["--hyperparams", "env_wrapper=minigrid.wrappers.ImgObsWrapper"]
SHORT = ["--timesteps", "100", "--n-envs", "2", "--no-progress-bar"]


def test_gym_packages_registers_the_env_and_enjoy_imports_it_again(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "train", GRID, "--gym-packages", "minigrid", *IMAGE, *SHORT,
                         "--log-folder", str(tmp_path))  # fmt: skip
    assert code == 0, err
    run_dir = tmp_path / f"{GRID}_0"
    info = json.loads((run_dir / "model.json").read_text())
    assert info["gym_packages"] == ["minigrid"]
    assert info["env_wrapper"] == [{"minigrid.wrappers.ImgObsWrapper": {}}]
    model = ACER.load(run_dir / "model.zip")
    assert model.observation_space.shape == (3, 7, 7)  # the image alone (ImgObsWrapper), channel-first
    code, out, err = run(capsys, "enjoy", str(run_dir), "--episodes", "1")
    assert code == 0, err
    assert f"{GRID}: mean return over 1 episode " in out


def test_a_module_prefixed_id_imports_the_module(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "train", f"minigrid:{GRID}", *IMAGE, *SHORT, "--log-folder", str(tmp_path))
    assert code == 0, err
    run_dir = tmp_path / f"{GRID}_0"  # the folder is named by the registered id
    assert json.loads((run_dir / "model.json").read_text())["env_id"] == f"minigrid:{GRID}"
    code, _, err = run(capsys, "enjoy", str(run_dir), "--episodes", "1")
    assert code == 0, err


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


def test_enjoy_imports_only_wrappers_of_the_packages_the_env_needs(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "train", "CartPole-v1", *SHORT, "--log-folder", str(tmp_path))
    assert code == 0, err
    info_path = tmp_path / "CartPole-v1_0" / "model.json"
    info = json.loads(info_path.read_text())
    info["env_wrapper"] = [{"minigrid.wrappers.ImgObsWrapper": {}}]  # a file naming another package's class
    info_path.write_text(json.dumps(info))
    code, _, err = run(capsys, "enjoy", str(info_path.parent), "--episodes", "1")
    assert_one_line_error(
        code, err, 1, f"{info_path}: env_wrapper: minigrid.wrappers.ImgObsWrapper is not in a"
    )
    assert "pass --gym-packages minigrid to allow it" in err

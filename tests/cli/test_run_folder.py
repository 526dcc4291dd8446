"""The run-folder policy of ``sb3-acer train`` (:mod:`sb3_acer.cli.run_folder`): paths checked before
anything is written, an earlier run replaced only with ``--overwrite`` and put back when the new run keeps
nothing, the run lock, and a model kept (elsewhere, if need be) when training or its save fails or
Ctrl-C arrives."""

from __future__ import annotations

import inspect
import json
import os
import pathlib
import signal
import tempfile
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

import sb3_acer
import sb3_acer.cli.run_folder
import sb3_acer.cli.train.run
import sb3_acer.cli.train.start
from sb3_acer import ACER
from sb3_acer.cli.errors import CLIError
from sb3_acer.cli.run_folder import LOCK_NAME, run_lock
from tests.helpers.acer_envs import fill_the_disk_for
from tests.helpers.cli_helpers import (
    EVALUATED,
    FAST,
    assert_one_line_error,
    run,
    snapshot,
    train,
)


def _a_run(capsys: pytest.CaptureFixture[str], tmp: pathlib.Path) -> tuple[list[str], str]:
    """An earlier run in the run folder (the new one, with fewer envs, must leave no stale Monitor rank)."""
    assert train(capsys, tmp / "logs", "--timesteps", "100")[0] == 0
    return ["--n-envs", "2"], f"{tmp / 'logs' / 'CartPole-v1_0'} already holds a run"


def _its_model_alone(capsys: pytest.CaptureFixture[str], tmp: pathlib.Path) -> tuple[list[str], str]:
    """The model alone is a run too."""
    extra, refusal = _a_run(capsys, tmp)
    for path in (tmp / "logs" / "CartPole-v1_0").glob("*.monitor.csv"):
        path.unlink()
    return extra, refusal


def _a_file_at_the_save_path(capsys: pytest.CaptureFixture[str], tmp: pathlib.Path) -> tuple[list[str], str]:
    (tmp / "mine.zip").write_text("precious")
    (tmp / "mine.json").write_text('{"precious": 1}')
    return ["--save-path", str(tmp / "mine.zip")], f"{tmp / 'mine.zip'} exists; pass --overwrite"


def _a_link_at_the_save_path(capsys: pytest.CaptureFixture[str], tmp: pathlib.Path) -> tuple[list[str], str]:
    """Decided: --overwrite replaces this run's files; a file elsewhere that a link points to is not one."""
    (tmp / "kept.zip").write_text("precious")
    (tmp / "mine.zip").symlink_to(tmp / "kept.zip")
    return ["--save-path", str(tmp / "mine.zip")], f"{tmp / 'mine.zip'} exists; pass --overwrite"


@pytest.mark.parametrize(
    "earlier", [_a_run, _its_model_alone, _a_file_at_the_save_path, _a_link_at_the_save_path]
)
def test_an_earlier_run_is_replaced_only_with_overwrite(
    capsys: pytest.CaptureFixture[str],
    tmp_path: pathlib.Path,
    earlier: Callable[[pytest.CaptureFixture[str], pathlib.Path], tuple[list[str], str]],
) -> None:
    extra, refusal = earlier(capsys, tmp_path)
    logs = tmp_path / "logs"
    before, paths_before = snapshot(tmp_path), sorted(tmp_path.rglob("*"))
    code, out, err = train(capsys, logs, "--timesteps", "100", *extra)
    assert_one_line_error(code, err, 2, refusal)
    assert out == "" and snapshot(tmp_path) == before and sorted(tmp_path.rglob("*")) == paths_before
    code, _, err = train(capsys, logs, "--timesteps", "100", *extra, "--overwrite")
    assert code == 0, err
    model = pathlib.Path(extra[1]) if extra[0] == "--save-path" else logs / "CartPole-v1_0" / "model.zip"
    assert ACER.load(model).num_timesteps >= 100
    assert json.loads(model.with_suffix(".json").read_text())["env_id"] == "CartPole-v1"
    if earlier is _a_run:
        monitors = sorted(path.name for path in (logs / "CartPole-v1_0").glob("*.monitor.csv"))
        assert monitors == ["0.monitor.csv", "1.monitor.csv"]
    if earlier is _a_link_at_the_save_path:
        assert not model.is_symlink() and (tmp_path / "kept.zip").read_text() == "precious"


def test_a_failed_overwrite_keeps_the_previous_run(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    logs = tmp_path / "logs"
    assert train(capsys, logs, "--timesteps", "100")[0] == 0
    before = snapshot(tmp_path)
    code, out, err = train(capsys, logs, "--timesteps", "100", "--overwrite", "--hyperparams", "n_steps=0")
    assert_one_line_error(code, err, 2, "invalid settings: n_steps must be positive")
    assert out == "" and snapshot(tmp_path) == before


@pytest.mark.skipif(not pathlib.Path("/proc/self").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("flag", ["--save-path", "--log-folder"])
def test_a_folder_that_refuses_new_files_is_found_before_training(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, flag: str
) -> None:
    # Found by review (stop 41): as root, os.access says /proc is writable, but no file can be made there;
    # the run trained to the end and then failed (exit 1), losing the model and leaving its Monitor logs.
    target = "/proc/acer.zip" if flag == "--save-path" else "/proc/acer-logs"
    logs = ["--log-folder", str(tmp_path / "logs")] if flag == "--save-path" else []
    code, out, err = run(capsys, "train", "CartPole-v1", *FAST, *logs, flag, target)
    what = f"{flag} {target}" if flag == "--save-path" else f"the run folder {target}/CartPole-v1_0"
    # (Without root the permission bits already say no.)
    reason = "/proc refuses new files" if os.access("/proc", os.W_OK) else "no write permission in /proc"
    assert_one_line_error(code, err, 2, f"{what} cannot be written: {reason}")
    assert out == "" and not (tmp_path / "logs").exists()


@pytest.mark.parametrize("refusing", ["the --save-path", "the run folder too"])
def test_a_save_that_fails_after_training_keeps_the_model_elsewhere(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, refusing: str
) -> None:
    # A disk that fills up during training: the trained model is saved where it can be (the run folder,
    # else a new temporary folder), and said so.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    run_dir = tmp_path / "logs" / "CartPole-v1_0"
    if refusing == "the --save-path":
        target, extra = tmp_path / "mine.zip", ["--save-path", str(tmp_path / "mine.zip")]
    else:
        target, extra = run_dir / "model.zip", []
    fill_the_disk_for(monkeypatch, target)
    code, _, err = train(capsys, tmp_path / "logs", *extra, "--timesteps", "100")
    rescue_folders = list((tmp_path / "tmp").glob("sb3-acer-*"))
    if refusing == "the --save-path":
        assert rescue_folders == []
        rescued = run_dir / "model.zip"
    else:
        (rescue_folder,) = rescue_folders
        rescued = rescue_folder / "model.zip"
    assert_one_line_error(
        code,
        err,
        1,
        f"cannot save the model to {target}: No space left on device; the trained model is in {rescued}",
    )
    assert ACER.load(rescued).num_timesteps >= 100
    assert json.loads(rescued.with_suffix(".json").read_text())["env_id"] == "CartPole-v1"
    assert not target.exists()


@pytest.mark.parametrize("spelling", ["{folder}", "{folder}/"])
def test_a_save_path_or_plot_out_naming_a_folder_writes_inside_it(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    # Found by review (stop 41): --save-path models/ wrote models.zip beside the folder, and plot --out
    # plots/ wrote plots.png beside it.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    code, out, err = train(capsys, tmp_path / "logs", "--save-path", spelling.format(folder="models"))
    assert code == 0, err
    assert sorted(path.name for path in (tmp_path / "models").iterdir()) == ["model.json", "model.zip"]
    assert f"model: {pathlib.Path('models') / 'model.zip'}" in out and not (tmp_path / "models.zip").exists()
    # A new folder: a trailing separator says it is one.
    if spelling.endswith("/"):
        assert train(capsys, tmp_path / "logs", "--save-path", "new/", "--seed", "1")[0] == 0
        assert (tmp_path / "new" / "model.zip").is_file()
    (tmp_path / "plots").mkdir()
    code, out, err = run(capsys, "plot", str(tmp_path / "logs"), "--out", spelling.format(folder="plots"))
    assert code == 0, err
    assert [path.name for path in (tmp_path / "plots").iterdir()] == ["learning_curves.png"]
    assert not (tmp_path / "plots.png").exists()


BEST_RUN = ["--timesteps", "400", *EVALUATED]


def around_best_model_saves(monkeypatch: pytest.MonkeyPatch, before: Callable[[int], None]) -> list[int]:
    """Call ``before(count)`` ahead of each save of ``best_model.zip`` (``count``: 1 for the first);
    returns the list of the steps at which they were made."""
    save = ACER.save
    saves: list[int] = []

    def watched(self: ACER, path: Any, *args: Any, **kwargs: Any) -> None:
        if pathlib.Path(path).name == "best_model.zip":
            saves.append(self.num_timesteps)
            before(len(saves))
        save(self, path, *args, **kwargs)

    monkeypatch.setattr(ACER, "save", watched)
    return saves


def test_a_best_model_that_cannot_be_saved_does_not_stop_training(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by review (stop 41): a full disk at a best-model save ended the run and lost the model.
    def full_from_second_best(count: int) -> None:
        if count >= 2:
            raise OSError(28, "No space left on device")

    saves = around_best_model_saves(monkeypatch, full_from_second_best)
    code, out, err = train(capsys, tmp_path, *BEST_RUN)
    assert code == 0, err
    run_dir = tmp_path / "CartPole-v1_0"
    assert err.startswith(
        f"warning: cannot save the best model to {run_dir / 'best_model.zip'}: No space left"
    )
    assert len(saves) >= 2, "the scenario needs a second best"
    assert ACER.load(run_dir / "model.zip").num_timesteps >= 400
    # No best model is better than one whose files disagree: the set is removed and the summary says so.
    assert not any(run_dir.glob("best_model*")) and "best model:" not in out
    assert all(line.startswith("warning: cannot save the best model") for line in err.splitlines())


def test_ctrl_c_during_a_best_model_save_keeps_its_files_together(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ctrl_c_at_second_best(count: int) -> None:
        if count == 2:
            os.kill(os.getpid(), signal.SIGINT)  # between the model and its description

    saves = around_best_model_saves(monkeypatch, ctrl_c_at_second_best)
    code, _, err = train(capsys, tmp_path, *BEST_RUN)
    assert code == 130, err
    run_dir = tmp_path / "CartPole-v1_0"
    best = ACER.load(run_dir / "best_model.zip").num_timesteps
    assert len(saves) == 2 and best == saves[1]
    assert json.loads((run_dir / "best_model.json").read_text())["num_timesteps"] == best
    # Training stopped there (the interrupted segment is undone, as for any Ctrl-C in a callback).
    assert ACER.load(run_dir / "model.zip").num_timesteps <= best < 400


def test_save_path_cannot_be_the_best_model(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    best = tmp_path / "CartPole-v1_0" / "best_model.zip"
    code, _, err = train(capsys, tmp_path, "--eval-freq", "50", "--save-path", str(best))
    assert_one_line_error(code, err, 2, f"--save-path {best}: the run keeps its best model there")
    assert train(capsys, tmp_path, "--save-path", str(best))[0] == 0  # without evaluations it is free


class _CrashingCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole that raises at its 60th step, as a buggy environment can hours into a run."""

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.steps = 0

    def step(self, action: Any) -> Any:
        self.steps += 1
        if self.steps == 60:
            raise RuntimeError("the simulator crashed")
        return self.env.step(action)


def test_an_env_that_fails_during_training_keeps_the_model_trained_so_far(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # Found by review (stop 41): the failure was a traceback and the model was lost.
    gym.register("CrashingCartPole-v0", entry_point=_CrashingCartPole)
    code, _, err = run(
        capsys,
        "train",
        "CrashingCartPole-v0",
        *FAST,
        "--n-envs",
        "1",
        "--timesteps",
        "200",
        "--log-folder",
        str(tmp_path),
    )
    model_path = tmp_path / "CrashingCartPole-v0_0" / "model.zip"
    assert_one_line_error(
        code,
        err,
        1,
        # n_steps 20 (no preset): the segment the crash broke off is not kept
        "training stopped at step 40 by RuntimeError: the simulator crashed; the model trained so far is in "
        f"{model_path}",
    )
    assert ACER.load(model_path).num_timesteps == 40
    assert json.loads(model_path.with_suffix(".json").read_text())["num_timesteps"] == 40


class _FailingCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole whose ``how`` fails: ``reset`` at once, a NaN observation or an empty assertion at step 30."""

    def __init__(self, how: str) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.how, self.steps = how, 0

    def reset(self, **kwargs: Any) -> Any:
        if self.how == "reset":
            raise ValueError("bad level name")
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        self.steps += 1
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.steps == 30 and self.how == "nan":
            obs = np.full_like(obs, np.nan)
        if self.steps == 30 and self.how == "assert":
            raise AssertionError
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize(
    ("how", "extra", "message"),
    [
        (
            "reset",
            [],
            "training stopped at step 0 by ValueError: bad level name; nothing was trained, so no ",
        ),
        (
            "nan",
            ["--hyperparams", "normalize=True"],
            "training stopped at step 20 by ValueError: env 0 returned a non-finite observation",
        ),
        (
            "assert",
            [],
            "training stopped at step 20 by AssertionError (no message); the model trained so far is",
        ),
    ],
)
def test_a_failure_never_saves_what_cannot_be_used_and_always_names_its_cause(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, how: str, extra: list[str], message: str
) -> None:
    # Found by review (stop 41): an untrained model, NaN statistics, or an empty reason.
    gym.register(f"Failing{how}-v0", entry_point=_FailingCartPole, kwargs={"how": how})
    argv = ["--n-envs", "1", "--timesteps", "200", "--no-progress-bar", *extra]
    code, _, err = run(capsys, "train", f"Failing{how}-v0", *argv, "--log-folder", str(tmp_path))
    assert_one_line_error(code, err, 1, message)
    run_dir = tmp_path / f"Failing{how}-v0_0"
    saved = (run_dir / "model.zip").exists()
    assert saved == (how == "assert"), err
    if how == "nan":
        assert "the normalisation statistics hold NaN or inf, so no model was saved" in err
    if how == "reset":  # nothing of the run is left: the same command works again without --overwrite
        assert not list(run_dir.glob("*"))


class _FlakyCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole whose ``reset`` fails while the class attribute ``down`` is set."""

    down = False

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))

    def reset(self, **kwargs: Any) -> Any:
        if _FlakyCartPole.down:
            raise RuntimeError("simulator not reachable")
        return self.env.reset(**kwargs)

    def close(self) -> None:
        if _FlakyCartPole.down:
            raise RuntimeError("simulator not reachable")
        self.env.close()


@pytest.mark.parametrize("how", ["reset and close fail", "Ctrl-C at the first reset", "statistics overflow"])
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning"
)  # Monitor's file, if close fails
def test_an_overwrite_that_saves_nothing_keeps_the_earlier_run(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # Found by review (stop 41): the earlier run's files were deleted once the model was built, or left
    # aside, mixed with this run's best model and evaluations.
    for env_id, entry_point in (
        ("FlakyCartPole-v0", _FlakyCartPole),
        ("SpikeOverwriteCartPole-v0", _SpikeCartPole),
    ):
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point)
    env_id = "SpikeOverwriteCartPole-v0" if how == "statistics overflow" else "FlakyCartPole-v0"
    argv = ["train", env_id, "--n-envs", "1", "--timesteps", "100", "--no-progress-bar", "--seed", "3"]
    argv += ["--log-folder", str(tmp_path / "logs"), "--save-path", str(tmp_path / "saved" / "m.zip")]
    argv += ["--hyperparams", "normalize=True"]
    if how == "statistics overflow":
        monkeypatch.setattr(_SpikeCartPole, "spike_at", 10**9)  # the earlier run is a normal one
    assert run(capsys, *argv)[0] == 0
    before = snapshot(tmp_path)
    if how == "reset and close fail":
        monkeypatch.setattr(_FlakyCartPole, "down", True)
        expected = (1, "training stopped at step 0 by RuntimeError: simulator not reachable")
    elif how == "Ctrl-C at the first reset":
        monkeypatch.setattr(
            _FlakyCartPole, "reset", lambda self, **kwargs: (_ for _ in ()).throw(KeyboardInterrupt)
        )
        expected = (130, "interrupted before the first step: nothing was trained, so no model was saved")
    else:
        monkeypatch.setattr(_SpikeCartPole, "spike_at", 30)
        expected = (1, "the normalisation statistics hold NaN or inf, so no model was saved")
    code, out, err = run(capsys, *argv, "--overwrite", "--eval-freq", "20")
    assert code == expected[0], err
    if how == "Ctrl-C at the first reset":  # one line, no "saving the model" (found by review)
        assert err == expected[1] + "\n" and "saving the model" not in out
    else:
        assert_one_line_error(code, err, 1, expected[1])
    assert snapshot(tmp_path) == before  # no file of this run, every file of the earlier one


class _SpikeCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole with one finite but huge observation (1e200) at step 30: VecNormalize's variance overflows."""

    spike_at = 30

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.observation_space = spaces.Box(-np.inf, np.inf, (4,), np.float64)
        self.steps = 0

    def step(self, action: Any) -> Any:
        self.steps += 1
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.steps == _SpikeCartPole.spike_at:
            obs = np.full(4, 1e200)
        return obs.astype(np.float64), reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> Any:
        obs, info = self.env.reset(**kwargs)
        return obs.astype(np.float64), info


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_statistics_that_overflowed_are_never_saved(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # Found by review (stop 41): a run that ended normally saved an infinite variance, which enjoy refuses.
    gym.register("SpikeCartPole-v0", entry_point=_SpikeCartPole)
    argv = ["train", "SpikeCartPole-v0", "--n-envs", "1", "--timesteps", "100", "--no-progress-bar"]
    code, _, err = run(capsys, *argv, "--hyperparams", "normalize=True", "--log-folder", str(tmp_path))
    assert_one_line_error(code, err, 1, "the normalisation statistics hold NaN or inf, so no model was saved")
    assert not list(tmp_path.glob("*/model*"))


def test_a_failed_training_whose_save_fails_too_says_both(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gym.register("Failingassert-v1", entry_point=_FailingCartPole, kwargs={"how": "assert"})
    target = tmp_path / "mine.zip"
    fill_the_disk_for(monkeypatch, target)
    argv = ["--n-envs", "1", "--timesteps", "200", "--no-progress-bar", "--save-path", str(target)]
    code, _, err = run(capsys, "train", "Failingassert-v1", *argv, "--log-folder", str(tmp_path))
    rescued = tmp_path / "Failingassert-v1_0" / "model.zip"
    assert_one_line_error(
        code,
        err,
        1,
        "training stopped at step 20 by AssertionError (no message); cannot save the model to "
        f"{target}: No space left on device; the model trained so far is in {rescued}",
    )


def test_overwrite_removes_every_file_of_the_previous_run(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    run_dir = tmp_path / "CartPole-v1_0"
    first = ["--timesteps", "100", "--eval-freq", "50", "--hyperparams", "normalize=True"]
    assert train(capsys, tmp_path, *first)[0] == 0
    assert {"model.vecnormalize.npz", "evaluations.npz"} <= {path.name for path in run_dir.iterdir()}
    # A run without normalisation saved elsewhere: the folder keeps none of the old run's files, so
    # neither enjoy nor plot can mistake them for this run's.
    second = ["--timesteps", "100", "--n-envs", "1", "--overwrite", "--save-path", str(tmp_path / "m.zip")]
    assert train(capsys, tmp_path, *second)[0] == 0
    assert sorted(path.name for path in run_dir.iterdir()) == ["0.monitor.csv"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--policy", "CnnPolicy"],
            "CnnPolicy needs image observations (uint8, [H, W, C] or [C, H, W]); CartPole-v1",
        ),
        (
            ["--hyperparams", "device=bogus"],
            "--hyperparams device: unusable torch device 'bogus'; use one of auto, cpu, cuda, cuda:N",
        ),
        (["--seed", "-1"], "argument --seed: expected a seed in [0, 2**32 - 1], got '-1'"),
        (["--timesteps", "1e400"], "argument --timesteps: expected a positive integer, got '1e400'"),
        (["--timesteps", "1.5e0"], "argument --timesteps: expected a positive integer, got '1.5e0'"),
        (
            ["--tensorboard-log", "{tmp}/notes.txt"],
            "--tensorboard-log {tmp}/notes.txt is a file, not a folder",
        ),
        (["--save-path", "{tmp}/saved.zip"], "--save-path {tmp}/saved.zip is a folder, not a file"),
        (
            ["--save-path", "{tmp}/notes.txt/m.zip"],
            "--save-path {tmp}/notes.txt/m.zip cannot be created: {tmp}/notes.txt is a file",
        ),
        (
            ["--log-folder", "{tmp}/notes.txt"],
            "the run folder {tmp}/notes.txt/CartPole-v1_0 cannot be created",
        ),
        (["--log-folder", "{tmp}/{long}"], "the run folder {tmp}/{long}/CartPole-v1_0: File name too long"),
        (
            ["--save-path", "{tmp}/{long_zip}"],
            "--save-path {tmp}/{long_zip}: the file name is too long to be saved safely; shorten it",
        ),
    ],
)
def test_setup_errors_are_one_line_before_anything_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, extra: list[str], message: str
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "saved.zip").mkdir()
    logs = tmp_path / "logs"
    names = dict(tmp=tmp_path, long="d" * 300, long_zip="m" * 245 + ".zip")
    extra = [arg.format(**names) for arg in extra]
    code, out, err = run(capsys, "train", "CartPole-v1", *FAST, "--log-folder", str(logs), *extra)
    assert_one_line_error(code, err, 2, message.format(**names))
    assert out == "" and sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt", "saved.zip"]


def test_ctrl_c_before_training_exits_130_without_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sb3_acer.cli.train.run, "make_env", interrupted)
    code, _, err = train(capsys, tmp_path)
    assert code == 130 and err == "interrupted\n"
    assert not (tmp_path / "CartPole-v1_0").exists()


def test_overwrite_of_the_run_model_under_another_spelling(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert train(capsys, pathlib.Path("logs"), "--timesteps", "100")[0] == 0
    absolute = tmp_path / "logs" / "CartPole-v1_0" / "model.zip"
    code, _, err = train(
        capsys, pathlib.Path("logs"), "--timesteps", "100", "--overwrite", "--save-path", str(absolute)
    )
    assert code == 0, err
    assert ACER.load(absolute).num_timesteps >= 100 and (absolute.parent / "0.monitor.csv").exists()


def test_files_in_the_way_are_reported_before_anything_is_removed(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    logs = tmp_path / "logs"
    assert train(capsys, logs, "--timesteps", "100")[0] == 0
    (tmp_path / "m.json").mkdir()
    before = snapshot(tmp_path)
    code, _, err = train(
        capsys, logs, "--timesteps", "100", "--overwrite", "--save-path", str(tmp_path / "m.zip")
    )
    assert_one_line_error(code, err, 2, f"--save-path {tmp_path / 'm.json'} is a folder, not a file")
    code, _, err = train(capsys, logs, "--timesteps", "100", "--save-path", str(tmp_path / "m.json"))
    assert_one_line_error(code, err, 2, f"--save-path {tmp_path / 'm.json'}: the model file must end in .zip")
    (logs / "CartPole-v1_5").symlink_to(tmp_path / "gone")
    code, _, err = train(capsys, logs, "--timesteps", "100", "--seed", "5")
    assert_one_line_error(code, err, 2, f"the run folder {logs / 'CartPole-v1_5'} cannot be created: ")
    # Without write permission in the run folder (simulated: root may write anywhere).
    run_dir = logs / "CartPole-v1_0"
    real_access = os.access
    monkeypatch.setattr(
        sb3_acer.cli.run_folder.os,
        "access",
        lambda path, mode: pathlib.Path(path) != run_dir and real_access(path, mode),
    )
    code, _, err = train(capsys, logs, "--timesteps", "100", "--overwrite")
    assert_one_line_error(
        code, err, 2, f"the run folder {run_dir} cannot be written: no write permission in {run_dir}"
    )
    code, _, err = train(
        capsys, logs, "--timesteps", "100", "--seed", "1", "--save-path", str(run_dir / "m.zip")
    )
    assert_one_line_error(code, err, 2, f"--save-path {run_dir / 'm.zip'} cannot be written")
    assert snapshot(tmp_path) == before


def _failing_on_second_build(failure: BaseException) -> type[ACER]:
    """ACER whose second construction raises ``failure``: ``train``'s check passes, building the run fails."""
    calls: list[int] = []

    class Failing(ACER):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            calls.append(1)
            if len(calls) == 2:
                raise failure
            super().__init__(*args, **kwargs)

    # train checks a preset's keys against ACER's signature: keep it.
    Failing.__init__.__signature__ = inspect.signature(ACER.__init__)  # type: ignore[attr-defined]
    return Failing


def test_a_run_that_fails_to_start_puts_the_earlier_run_back(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    assert train(capsys, tmp_path, "--timesteps", "100")[0] == 0
    before = snapshot(tmp_path)
    for failure, expected_code in (
        (MemoryError("Unable to allocate 5.57 GiB"), 2),
        (KeyboardInterrupt(), 130),
    ):
        failing = _failing_on_second_build(failure)
        monkeypatch.setattr(sb3_acer.cli.train.start, "ACER", failing)
        monkeypatch.setattr(sb3_acer.cli.train.run, "ACER", failing)
        code, _, err = train(capsys, tmp_path, "--timesteps", "100", "--n-envs", "2", "--overwrite")
        assert code == expected_code, err
        assert snapshot(tmp_path) == before  # no .previous file left, no new Monitor log


def test_an_env_needing_a_missing_module_and_a_plot_of_a_name_too_long_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # A --log-folder or --save-path name too long: test_setup_errors_are_one_line_before_anything_is_written.
    gym.register("NeedsAMissingModule-v0", entry_point="sb3_acer_no_such_module:Env")
    code, _, err = run(capsys, "train", "NeedsAMissingModule-v0", *FAST, "--log-folder", str(tmp_path))
    assert_one_line_error(code, err, 1, "NeedsAMissingModule-v0 needs a module that is not installed")
    long_name = str(tmp_path / ("d" * 300))
    code, _, err = run(capsys, "plot", long_name)
    assert code in (1, 2) and err.count("\n") == 1 and "Traceback" not in err


def test_ctrl_c_while_saving_still_writes_every_file_of_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second Ctrl-C (or a first one just after training) lands while the model is being saved: the save
    # goes on, the run description and statistics beside the model are written, and the command exits 130.
    save = ACER.save

    def interrupted_while_saving(self: ACER, *args: Any, **kwargs: Any) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        save(self, *args, **kwargs)

    monkeypatch.setattr(ACER, "save", interrupted_while_saving)
    code, out, err = train(capsys, tmp_path, "--hyperparams", "normalize=True")
    run_dir = tmp_path / "CartPole-v1_0"
    assert code == 130, err
    assert "Ctrl-C: finishing the save first" in err and "Traceback" not in err
    assert sorted(path.name for path in run_dir.glob("model.*")) == [
        "model.json",
        "model.vecnormalize.npz",
        "model.zip",
    ]
    assert json.loads((run_dir / "model.json").read_text())["num_timesteps"] == 520
    assert ACER.load(run_dir / "model.zip").num_timesteps == 520
    assert f"model: {run_dir / 'model.zip'}" in out
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_a_second_train_into_the_same_run_folder_stops_while_the_first_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two runs of the same env and seed (a shell loop that forgot --seed) started together both pass the
    # checks; the second to reach the run folder finds it locked by the first and stops, changing nothing.
    fcntl = pytest.importorskip("fcntl")  # POSIX: elsewhere runs are not locked

    assert train(capsys, tmp_path)[0] == 0
    run_dir = tmp_path / "CartPole-v1_0"
    before = snapshot(run_dir)
    assert not (run_dir / ".sb3-acer-train.lock").exists()  # released and removed after the run
    with open(run_dir / ".sb3-acer-train.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the first run, still training
        code, _, err = train(capsys, tmp_path, "--overwrite")
    assert_one_line_error(code, err, 1, f"another sb3-acer train is writing to {run_dir}")
    (run_dir / ".sb3-acer-train.lock").unlink()
    assert snapshot(run_dir) == before

    # A run that passed its checks while the first was still training, and gets the folder once the first
    # has finished, finds the first run's files there: without --overwrite it stops.
    previous_files = sb3_acer.cli.train.run.previous_files
    calls: list[int] = []

    def first_run_finishes_in_between(*args: Any) -> list[pathlib.Path]:
        calls.append(1)
        return [] if len(calls) == 1 else previous_files(*args)

    monkeypatch.setattr(sb3_acer.cli.train.start, "previous_files", first_run_finishes_in_between)
    monkeypatch.setattr(sb3_acer.cli.train.run, "previous_files", first_run_finishes_in_between)
    code, _, err = train(capsys, tmp_path)
    assert_one_line_error(code, err, 2, f"{run_dir} already holds a run; pass --overwrite")
    assert snapshot(run_dir) == before


def test_the_run_lock_is_held_by_one_run_at_a_time_even_as_the_lock_file_is_replaced(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Run B opened the lock file just before run A, ending, removed it; B then locks that removed file,
    # while run C has created and locked a new one. B must see that its file is no longer the lock, take
    # the path's file instead, find it held by C, and stop.
    fcntl = pytest.importorskip("fcntl")
    run_dir = tmp_path / "run"
    lock_path = run_dir / LOCK_NAME
    run_dir.mkdir()
    busy = f"another sb3-acer train is writing to {run_dir}"
    with run_lock(run_dir, busy=busy):  # run A
        orphan = open(lock_path)  # noqa: SIM115 - B's early open
    assert not lock_path.exists()
    with open(lock_path, "w") as run_c:
        fcntl.flock(run_c, fcntl.LOCK_EX | fcntl.LOCK_NB)
        opened = []

        def open_as_b(path: Any, *args: Any, **kwargs: Any) -> Any:
            opened.append(path)
            return orphan if len(opened) == 1 else open(path, *args, **kwargs)

        monkeypatch.setattr(sb3_acer.cli.run_folder, "open", open_as_b, raising=False)
        stopped = pytest.raises(CLIError, match=busy)
        with stopped, run_lock(run_dir, busy=busy):
            pytest.fail("run B got the lock while run C holds it")
    assert orphan.closed


def test_save_elsewhere_tries_each_folder_but_the_target_then_a_temporary_one(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sb3_acer.cli.run_folder import save_elsewhere

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    tried: list[pathlib.Path] = []

    def save_outside(refused: pathlib.Path) -> Callable[[pathlib.Path], None]:
        def save(path: pathlib.Path) -> None:
            tried.append(path)
            if path.parent == refused:
                raise OSError(28, "No space left on device")
            path.write_text("model")

        return save

    run_dir, other = tmp_path / "run", tmp_path / "other"
    run_dir.mkdir()
    other.mkdir()
    target = run_dir / "model.zip"
    # The target's own folder is skipped (the same file), a refusing folder is passed over.
    assert save_elsewhere(save_outside(other), target, "model.zip", [run_dir, other]) is not None
    (rescue,) = (tmp_path / "tmp").glob("sb3-acer-*/model.zip")
    assert tried == [other / "model.zip", rescue] and rescue.read_text() == "model"
    assert save_elsewhere(save_outside(run_dir), tmp_path / "m.zip", "model.zip", [run_dir, other]) == (
        other / "model.zip"
    )

    def no_temporary_folder(*args: Any, **kwargs: Any) -> str:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "mkdtemp", no_temporary_folder)
    assert save_elsewhere(save_outside(other), target, "model.zip", [other]) is None


def test_set_aside_puts_back_what_it_moved_when_one_cannot_move(tmp_path: pathlib.Path) -> None:
    from sb3_acer.cli.run_folder import put_back, set_aside

    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_text("a")
    second.write_text("b")
    aside = set_aside([first, second])
    assert aside == [(first, tmp_path / ".a.csv.previous"), (second, tmp_path / ".b.csv.previous")]
    assert sorted(path.name for path in tmp_path.iterdir()) == [".a.csv.previous", ".b.csv.previous"]
    (tmp_path / ".b.csv.previous").unlink()  # gone meanwhile: cannot come back, the others do
    put_back(aside)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.csv"]
    with pytest.raises(CLIError, match="cannot prepare the run: "):
        set_aside([first, tmp_path / "missing.csv"])
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.csv"]  # the first was put back


def test_set_aside_never_replaces_an_earlier_set_aside_file(tmp_path: pathlib.Path) -> None:
    from sb3_acer.cli.run_folder import set_aside

    first, second = tmp_path / "a.csv", tmp_path / "actors.monitor.csv"
    first.write_text("a")
    second.write_text("new")
    (tmp_path / ".actors.monitor.csv.previous").write_text("earlier")  # a killed run's
    with pytest.raises(CLIError, match=r"cannot prepare the run: .*set-aside file is in the way"):
        set_aside([first, second])
    assert snapshot(tmp_path) == {
        "a.csv": b"a",
        "actors.monitor.csv": b"new",
        ".actors.monitor.csv.previous": b"earlier",
    }


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
@pytest.mark.parametrize("left", ["actors.monitor.csv", "model.zip", "mine.json"])
def test_train_refuses_a_run_folder_where_a_killed_run_set_files_aside(
    left: str, overwrite: list[str], capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    """A killed ``--overwrite`` run leaves the earlier run's files set aside: the next run names them and
    changes nothing (it would set its own files aside over them), as run_atari does."""
    logs, run_dir = tmp_path / "logs", tmp_path / "logs" / "CartPole-v1_0"
    run_dir.mkdir(parents=True)
    (run_dir / "0.monitor.csv").write_text("the killed run's log")
    (run_dir / f".{left}.previous").write_text("the earlier run's")
    before = snapshot(tmp_path)
    save = ["--save-path", str(run_dir / "mine.zip")] if left == "mine.json" else []
    code, out, err = train(capsys, logs, "--timesteps", "100", *save, *overwrite)
    assert_one_line_error(
        code,
        err,
        2,
        f"{run_dir / f'.{left}.previous'} is an earlier run's file, set aside by a run that was stopped "
        f"before it could put it back; rename it to {run_dir / left} (over that run's own file, if there "
        "is one), or remove it",
    )
    assert out == "" and snapshot(tmp_path) == before


def test_train_saves_its_model_when_a_set_aside_file_went_missing(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier run's file that ``--overwrite`` set aside and that went away during training (removed by
    hand) does not stop the run from keeping and saving its model, as in run_atari (before, train ended in
    ``error: [Errno 2] No such file or directory`` with no model saved)."""
    logs, run_dir = tmp_path / "logs", tmp_path / "logs" / "CartPole-v1_0"
    assert train(capsys, logs, "--timesteps", "100")[0] == 0
    aside = run_dir / ".model.json.previous"
    learn = ACER.learn

    def removes_the_set_aside_file(self: ACER, *args: Any, **kwargs: Any) -> ACER:
        aside.unlink()
        return learn(self, *args, **kwargs)

    monkeypatch.setattr(ACER, "learn", removes_the_set_aside_file)
    code, _, err = train(capsys, logs, "--timesteps", "100", "--overwrite")
    assert code == 0, err
    assert ACER.load(run_dir / "model.zip").num_timesteps >= 100
    assert json.loads((run_dir / "model.json").read_text())["env_id"] == "CartPole-v1"
    assert not list(run_dir.glob(".*.previous"))

"""What the CLI tests share: running the command in-process, a short ``train``, the one-line error check,
the files of a folder, and train settings from a given preset table."""

from __future__ import annotations

import pathlib
from typing import Any

import pytest

from sb3_acer.cli import main

FAST = ["--timesteps", "500", "--no-progress-bar"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def train(capsys: pytest.CaptureFixture[str], logs: pathlib.Path, *extra: str) -> tuple[int, str, str]:
    return run(capsys, "train", "CartPole-v1", *FAST, "--log-folder", str(logs), *extra)


def assert_one_line_error(code: int, err: str, expected_code: int, starts_with: str) -> None:
    assert code == expected_code
    assert err.startswith(f"error: {starts_with}"), err
    assert err.count("\n") == 1 and "Traceback" not in err


def snapshot(folder: pathlib.Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


#: A normalised run evaluated every 50 steps.
EVALUATED = ["--eval-freq", "50", "--eval-episodes", "2", "--hyperparams", "normalize=True"]


def use_presets(monkeypatch: pytest.MonkeyPatch, entries: dict[str, Any]) -> None:
    import sb3_acer.presets.loader

    monkeypatch.setattr(sb3_acer.presets.loader, "_read", lambda: entries)


def settings_of(*argv: str) -> Any:
    from sb3_acer.cli import build_parser
    from sb3_acer.cli.train.settings import train_settings

    return train_settings(build_parser().parse_args(["train", *argv]))

"""The example that ``make run`` runs: trains, saves, reloads, evaluates; its options are checked first."""

from __future__ import annotations

import pathlib

import pytest

from sb3_acer import ACER
from sb3_acer.examples.cartpole import main

QUICK = ["--timesteps", "200", "--eval-episodes", "1", "--no-progress-bar"]


def test_the_example_saves_where_it_says_and_evaluates_the_saved_model(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mean_return = main([*QUICK, "--save-path", str(tmp_path / "mine")])
    out = capsys.readouterr().out
    assert f"saved to {tmp_path / 'mine.zip'}\n" in out  # the file ACER.save writes, named as it is
    assert ACER.load(tmp_path / "mine.zip").num_timesteps >= 200
    assert f"evaluation over 1 episodes: {mean_return:.1f} +/- 0.0" in out and mean_return >= 8
    main([*QUICK, "--save-path", f"{tmp_path}/folder/"])  # a folder gets the default name
    assert (tmp_path / "folder" / "acer_cartpole.zip").is_file()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--timesteps", "-5"], "argument --timesteps: expected a positive integer, got '-5'"),
        (["--eval-episodes", "0"], "argument --eval-episodes: expected a positive integer, got '0'"),
        (["--seed", "-1"], "argument --seed: expected a seed in [0, 2**32 - 1], got '-1'"),
        (["--save-path", "{tmp}/afile/model.zip"], "--save-path {tmp}/afile/model.zip cannot be created"),
    ],
)
def test_the_example_refuses_bad_options_before_training(
    argv: list[str],
    message: str,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "afile").write_text("")
    before = sorted(tmp_path.rglob("*"))
    monkeypatch.chdir(tmp_path)  # the default save path is relative
    with pytest.raises(SystemExit) as raised:
        main([*QUICK, *[arg.format(tmp=tmp_path) for arg in argv]])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {message.format(tmp=tmp_path)}" in err and "Traceback" not in err
    assert sorted(tmp_path.rglob("*")) == before

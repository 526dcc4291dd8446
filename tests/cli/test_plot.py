"""``sb3-acer plot``: learning curves from Monitor logs, and its one-line errors."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from sb3_acer.cli.plot import learning_curves
from tests.helpers.cli_helpers import (
    assert_one_line_error,
    run,
    snapshot,
    train,
)


def test_plot_without_monitor_logs(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    code, _, err = run(capsys, "plot", str(tmp_path), "--out", str(tmp_path / "x.png"))
    assert_one_line_error(code, err, 1, "no Monitor logs (*.monitor.csv) in")


def write_monitor(run_dir: pathlib.Path, returns: list[float], lengths: list[int]) -> None:
    run_dir.mkdir(parents=True)
    rows = "".join(f"{r},{n},{i + 1}.0\n" for i, (r, n) in enumerate(zip(returns, lengths, strict=True)))
    (run_dir / "0.monitor.csv").write_text('#{"t_start": 0.0, "env_id": "X"}\nr,l,t\n' + rows)


def test_runs_that_share_no_steps_are_not_averaged(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, the mean was one point at the short run's end, where the long run's smoothed curve had no
    value yet (np.interp held its first value)."""
    write_monitor(tmp_path / "exp" / "CartPole-v1_0", [9], [9])
    write_monitor(tmp_path / "exp" / "CartPole-v1_1", [float(i) for i in range(20)], [10] * 20)
    write_monitor(tmp_path / "exp" / "Acrobot-v1_0", [-5, -3], [20, 30])
    curves = learning_curves([str(tmp_path / "exp")], window=10)
    assert [curve.label for curve in curves] == ["Acrobot-v1"]
    assert capsys.readouterr().err == (
        "CartPole-v1: its 2 runs share no range of steps (a smoothed curve starts at 100 steps, another "
        "ends at 9), skipped\n"
    )
    (tmp_path / "exp" / "Acrobot-v1_0" / "0.monitor.csv").unlink()
    code, _, err = run(
        capsys, "plot", str(tmp_path / "exp"), "--window", "10", "--out", str(tmp_path / "c.png")
    )
    assert code == 1 and not (tmp_path / "c.png").exists()
    assert err == (
        "error: nothing to draw: CartPole-v1: its 2 runs share no range of steps (a smoothed curve starts at "
        "100 steps, another ends at 9)\n"
    )


def test_learning_curves_average_the_seeds_of_an_experiment(tmp_path: pathlib.Path) -> None:
    write_monitor(tmp_path / "exp" / "CartPole-v1_0", [1, 2, 3, 4], [10, 10, 10, 10])
    write_monitor(tmp_path / "exp" / "CartPole-v1_1", [3, 4, 5, 6], [10, 10, 10, 10])
    write_monitor(tmp_path / "exp" / "Acrobot-v1_0", [-5, -3], [20, 30])
    write_monitor(tmp_path / "other" / "Acrobot-v1_7", [-9, -9, -9], [5, 5, 40])
    curves = {c.label: c for c in learning_curves([str(tmp_path / "exp"), str(tmp_path / "other")], window=1)}
    assert sorted(curves) == ["CartPole-v1", "exp/Acrobot-v1", "other/Acrobot-v1"]
    cartpole = curves["CartPole-v1"]
    assert cartpole.n_runs == 2
    assert cartpole.steps[0] == 10 and cartpole.steps[-1] == 40
    np.testing.assert_allclose(cartpole.mean, 2 + (cartpole.steps - 10) / 10)
    np.testing.assert_allclose(cartpole.std, 1.0)
    assert curves["exp/Acrobot-v1"].n_runs == 1 and curves["exp/Acrobot-v1"].mean[-1] == -3
    # A moving average over 2 episodes starts at the second episode's end.
    smoothed = learning_curves([str(tmp_path / "exp" / "CartPole-v1_0")], window=2)[0]
    assert smoothed.steps[0] == 20 and smoothed.mean[0] == 1.5 and smoothed.mean[-1] == 3.5


def test_train_two_seeds_then_plot_a_png(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    from matplotlib import image

    logs = tmp_path / "logs"
    for seed in ("0", "1"):
        assert train(capsys, logs, "--seed", seed)[0] == 0
    out_png = tmp_path / "plots" / "curves.png"
    code, out, err = run(capsys, "plot", str(logs), "--out", str(out_png), "--window", "5")
    assert code == 0, err
    assert "CartPole-v1: 2 runs, return" in out
    assert out_png.stat().st_size > 10_000
    pixels = image.imread(out_png)
    assert pixels.shape[:2] == (540, 840)  # 7 x 4.5 inches at 120 dpi
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 50  # a drawing, not a blank


def test_plot_errors_are_one_line_and_write_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    write_monitor(tmp_path / "logs" / "X_0", [1, 2, 3], [10, 10, 10])
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "old.png").mkdir()
    before = snapshot(tmp_path)
    logs = str(tmp_path / "logs")
    for extra, expected_code, message in (
        (
            ["--out", "curves.xyz"],
            2,
            "--out curves.xyz: unknown image format '.xyz'; use one of .png, .pdf, .svg, .jpg, .jpeg",
        ),
        (["--out", f"{tmp_path}/old.png"], 2, f"--out {tmp_path}/old.png is a folder, not a file"),
        (["--out", f"{tmp_path}/notes.txt/c.png"], 2, f"--out {tmp_path}/notes.txt/c.png cannot be created"),
        (["--dpi", "100000"], 2, "argument --dpi: expected a resolution in [1, 1000] dots per inch"),
    ):
        code, _, err = run(capsys, "plot", logs, *extra)
        assert_one_line_error(code, err, expected_code, message)
    assert snapshot(tmp_path) == before
    (tmp_path / "logs" / "X_0" / "0.monitor.csv").write_text("r,l,t\n1,10,1.0\n")
    code, _, err = run(capsys, "plot", logs, "--out", str(tmp_path / "c.png"))
    assert_one_line_error(
        code,
        err,
        1,
        f"{tmp_path / 'logs' / 'X_0' / '0.monitor.csv'} is not a readable Monitor log: its first line is not",
    )


def test_plot_of_a_run_in_progress_and_of_a_run_given_twice(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "X_0"
    write_monitor(run_dir, [1, 2, 3], [10, 10, 10])
    with open(run_dir / "0.monitor.csv", "a") as file:
        file.write("12.0,1")  # the line Monitor is writing: r and l, but l may be cut short
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "plot", "X_0", str(run_dir), "--out", "curves", "--window", "1")
    assert code == 0, err
    assert out.splitlines() == ["X: 1 run, return 3.00 +/- 0.00 at 30 steps", "saved curves.png"]
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_plot_reports_unreadable_monitor_logs_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    write_monitor(tmp_path / "X_0", [1, 2], [10, 10])
    monitor = tmp_path / "X_0" / "0.monitor.csv"
    for content, reason in (
        (b"\xff\xfe\x00garbage\n", "'utf-8' codec can't decode"),
        (b'#{"t_start": 0.0}\nx,y\n1,2\n', "no r, l, t columns"),
        (b'#{"t_start": "soon"}\nr,l,t\n1,10,1.0\n', ""),
        (b'#{"t_start": 0.0}\nr,l,t\n1,10,1.0\nabc,def,2.0\n', "column r holds a value that is not a number"),
    ):
        monitor.write_bytes(content)
        code, _, err = run(capsys, "plot", str(tmp_path / "X_0"), "--out", str(tmp_path / "c.png"))
        assert_one_line_error(code, err, 1, f"{monitor} is not a readable Monitor log: {reason}")
    code, _, err = run(capsys, "plot", str(tmp_path / "X_0"), "--out", str(tmp_path / "c.pgf"))
    assert_one_line_error(code, err, 2, f"--out {tmp_path / 'c.pgf'}: unknown image format '.pgf'")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["X_0"]


def test_plot_of_a_folder_that_is_a_run_and_holds_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    write_monitor(tmp_path / "mixed", [1, 2], [10, 10])
    write_monitor(tmp_path / "mixed" / "CartPole-v1_0", [3, 4], [10, 10])
    labels = sorted(curve.label for curve in learning_curves([str(tmp_path / "mixed")], window=1))
    assert labels == ["CartPole-v1", "mixed"]

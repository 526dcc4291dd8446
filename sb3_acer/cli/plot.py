"""``sb3-acer plot RUN_DIR...``: episode return against environment steps from the ``Monitor`` logs of
runs, the mean and standard deviation over the seeds of each experiment, drawn to an image."""

from __future__ import annotations

import argparse
import io
import json
import pathlib
import re
import sys
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from sb3_acer.cli.arguments import integer, positive_int
from sb3_acer.cli.errors import PROG, CLIError, UsageError, count, one_line
from sb3_acer.cli.run_folder import check_can_create, in_folder

__all__ = ["Curve", "add_parser", "cmd_plot", "find_runs", "learning_curves"]

PLOT_EXAMPLES = f"""\
examples:
  {PROG} plot logs/CartPole-v1_0 logs/CartPole-v1_1 logs/CartPole-v1_2 --out cartpole.png
  {PROG} plot logs/ --out curves.png            # every run folder in logs/
  {PROG} plot baseline/ tuned/ --window 50      # compare two experiments

Each RUN_DIR is a run folder (holding *.monitor.csv files, as written by '{PROG} train') or a folder of
run folders. Runs whose folder names differ only by a '_<seed>' suffix, in the same parent folder, form
one experiment: its curve is the mean over the runs, with a band of +/- one standard deviation, drawn
over the steps all of them reached. Steps are the summed lengths of the finished episodes."""


class Curve(NamedTuple):
    """Learning curve of one experiment: mean and standard deviation over its runs on a common grid."""

    label: str
    n_runs: int
    steps: np.ndarray
    mean: np.ndarray
    std: np.ndarray


def find_runs(paths: Sequence[str]) -> dict[tuple[str, str], list[pathlib.Path]]:
    """Group run folders into experiments, keyed by (parent folder, name without the ``_<seed>`` suffix).

    Each path is a run folder (it holds ``*.monitor.csv`` files) or a folder of run folders.
    """
    from stable_baselines3.common.monitor import get_monitor_files

    groups: dict[tuple[str, str], list[pathlib.Path]] = {}
    for text in paths:
        path = pathlib.Path(text)
        if not path.is_dir():
            raise UsageError(f"{text!r} is not a folder")
        # A run folder, a folder of run folders, or both (Monitor files beside run folders).
        runs = [path] if get_monitor_files(str(path)) else []
        runs += sorted(sub for sub in path.iterdir() if sub.is_dir() and get_monitor_files(str(sub)))
        if not runs:
            raise CLIError(f"no Monitor logs (*.monitor.csv) in {text} or its subfolders")
        for run in runs:
            run = run.resolve()  # the same folder given twice, or by two paths, is one run
            key = (str(run.parent), re.sub(r"_\d+$", "", run.name))
            if run not in groups.setdefault(key, []):
                groups[key].append(run)
    return groups


def _monitor_results(run: pathlib.Path) -> Any:
    """The finished episodes of a run's Monitor logs, as SB3's ``load_results`` gives them (a ``DataFrame``
    of ``r``, ``l``, ``t``, ordered by time).

    A line without its newline yet (a run still training) is left out; a file that is not a Monitor log is
    an error naming it.
    """
    import pandas
    from stable_baselines3.common.monitor import get_monitor_files

    frames, starts = [], []
    for name in get_monitor_files(str(run)):
        try:
            with open(name) as file:
                text = file.read()
            first, _, body = text.partition("\n")
            if not first.startswith("#"):
                raise ValueError("its first line is not the '#{...}' header")
            header = json.loads(first[1:])
            frame = pandas.read_csv(io.StringIO(body[: body.rfind("\n") + 1]), index_col=None)
            if not {"r", "l", "t"} <= set(frame.columns):
                raise ValueError("no r, l, t columns")
            for column in ("r", "l", "t"):
                try:
                    frame[column] = pandas.to_numeric(frame[column])
                except (ValueError, TypeError):
                    raise ValueError(f"column {column} holds a value that is not a number") from None
            frame["t"] += header["t_start"]
        except (
            OSError,
            UnicodeDecodeError,
            ValueError,
            KeyError,
            TypeError,
            pandas.errors.ParserError,
        ) as error:
            raise CLIError(f"{name} is not a readable Monitor log: {one_line(error)}") from None
        starts.append(header["t_start"])
        frames.append(frame)
    frames = [frame for frame in frames if not frame.empty]
    if not frames:
        return pandas.DataFrame(columns=["r", "l", "t"])
    results = pandas.concat(frames).sort_values("t").reset_index()
    results["t"] -= min(starts)
    return results


def learning_curves(paths: Sequence[str], window: int, points: int = 200) -> list[Curve]:
    """Episode return against environment steps, smoothed over ``window`` episodes, per experiment.

    The runs of an experiment are interpolated onto the steps that all of them reached (an experiment whose
    runs share no steps is skipped, with a line on stderr); ``std`` is 0 for an experiment of one run.
    """
    from stable_baselines3.common.results_plotter import X_TIMESTEPS, ts2xy, window_func

    groups = find_runs(paths)
    names = [name for _, name in groups]
    curves = []
    apart = []  # experiments whose runs share no steps: a mean there would extrapolate
    for (parent, name), runs in groups.items():
        label = name if names.count(name) == 1 else f"{pathlib.Path(parent).name}/{name}"
        xy = []
        for run in runs:
            steps, returns = ts2xy(_monitor_results(run), X_TIMESTEPS)
            steps, returns = np.asarray(steps, dtype=float), np.asarray(returns, dtype=float)
            if len(returns) == 0:
                continue
            width = min(window, len(returns))
            if width > 1:
                steps, returns = window_func(steps, returns, width, np.mean)
            xy.append((steps, returns))
        if not xy:
            print(f"{label}: no finished episode, skipped", file=sys.stderr)
            continue
        low = max(steps[0] for steps, _ in xy)
        high = min(steps[-1] for steps, _ in xy)
        if high < low:
            apart.append(
                f"{label}: its {len(xy)} runs share no range of steps (a smoothed curve starts at {low:.0f} "
                f"steps, another ends at {high:.0f})"
            )
            continue
        grid = np.linspace(low, high, points) if high > low else np.array([high])
        values = np.stack([np.interp(grid, steps, returns) for steps, returns in xy])
        curves.append(Curve(label, len(xy), grid, values.mean(axis=0), values.std(axis=0)))
    if not curves:
        raise CLIError(f"nothing to draw: {'; '.join(apart)}" if apart else "no finished episode in any run")
    for reason in apart:
        print(f"{reason}, skipped", file=sys.stderr)
    return curves


#: Image formats of ``plot --out`` (matplotlib writes them without external programs).
PLOT_FORMATS = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


def cmd_plot(args: argparse.Namespace) -> int:
    try:
        import pandas  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise CLIError("plotting needs matplotlib and pandas: pip install 'sb3-acer[plot]'") from None
    figure = Figure(figsize=(7, 4.5), dpi=args.dpi)
    FigureCanvasAgg(figure)
    out = pathlib.Path(in_folder(args.out, "learning_curves.png"))
    if not out.suffix:
        out = out.with_suffix(".png")
    if out.suffix.lower() not in PLOT_FORMATS:
        raise UsageError(
            f"--out {args.out}: unknown image format {out.suffix!r}; use one of {', '.join(PLOT_FORMATS)}"
        )
    check_can_create(out, "--out", folder=False)
    curves = learning_curves(args.run_dirs, window=args.window)
    axes = figure.add_subplot()
    for curve in curves:
        runs = count(curve.n_runs, "run")
        marker = "o" if len(curve.steps) == 1 else None
        (line,) = axes.plot(curve.steps, curve.mean, marker=marker, label=f"{curve.label} ({runs})")
        if curve.n_runs > 1:
            axes.fill_between(
                curve.steps, curve.mean - curve.std, curve.mean + curve.std, color=line.get_color(), alpha=0.2
            )
        print(
            f"{curve.label}: {runs}, return {curve.mean[-1]:.2f} +/- {curve.std[-1]:.2f} "
            f"at {int(curve.steps[-1])} steps"
        )
    axes.set_xlabel("environment steps")
    axes.set_ylabel(f"episode return (moving mean of up to {args.window} episodes)")
    axes.set_title(args.title or "ACER learning curves (mean +/- std over seeds)")
    axes.grid(alpha=0.3)
    axes.legend(loc="best")
    figure.tight_layout()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(out)
    except OSError as error:
        raise CLIError(f"cannot write {out}: {one_line(error)}") from None
    print(f"saved {out}")
    return 0


def _dpi(text: str) -> int:
    return integer(text, "a resolution in [1, 1000] dots per inch", minimum=1, maximum=1000)


def add_parser(commands: Any) -> None:
    """Add the ``plot`` command to ``commands`` (the subparsers of the ``sb3-acer`` parser)."""
    plot = commands.add_parser(
        "plot",
        help="draw learning curves from Monitor logs to a PNG",
        description="Draw episode return vs environment steps (mean +/- std over seeds) to a PNG.",
        epilog=PLOT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    plot.add_argument("run_dirs", metavar="RUN_DIR", nargs="+", help="run folder or folder of run folders")
    plot.add_argument(
        "--out",
        default="learning_curves.png",
        help="image file, replaced if it exists, or a folder for learning_curves.png (one that exists, or "
        "a name ending in /); .png is added to a name without suffix, .pdf, .svg and .jpg also work "
        "(default: learning_curves.png)",
    )
    plot.add_argument("--window", type=positive_int, default=10, help="episodes per moving average (10)")
    plot.add_argument("--title", help="figure title")
    plot.add_argument("--dpi", type=_dpi, default=120, help="resolution, at most 1000 (default 120)")
    plot.set_defaults(func=cmd_plot)

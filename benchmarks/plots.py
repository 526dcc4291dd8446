"""The figures of the results page, drawn from the records' learning curves (``python -m benchmarks.report
--plots``; needs matplotlib). Each function takes the runs ``report.py`` read and writes one PNG."""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np

Runs = list[dict[str, Any]]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def lunarlander(curves: list[tuple[str, Runs]], zoo: float, out: pathlib.Path) -> None:
    """The learning curves (mean ± std over seeds) of each ``(label, runs)`` of ``curves``, and the SB2
    zoo's agent (``zoo``) as a line."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, runs in curves:
        x = np.array([step for step, _ in runs[0]["learning_curve"]])
        y = np.array([[ret for _, ret in run["learning_curve"]] for run in runs])
        ax.plot(x, y.mean(0), label=f"{label}, {len(runs)} seeds")
        ax.fill_between(x, y.mean(0) - y.std(0), y.mean(0) + y.std(0), alpha=0.2)
    ax.axhline(zoo, ls="--", c="gray", label="SB2 zoo's one agent (v2)")
    ax.set(xlabel="environment steps", ylabel="training return (mean of each tenth)", title="LunarLander")
    ax.legend(loc="lower right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)


def _mean_curve(ax: Any, runs: Runs, axis: str, end: float, label: str) -> None:
    """The runs' mean training return (± std over seeds) against ``curve_<axis>`` up to ``end``, each
    seed's curve interpolated on a common grid."""
    grid = np.linspace(0, end, 101)
    y = np.array([np.interp(grid, run[f"curve_{axis}"], run["curve_returns"]) for run in runs])
    ax.plot(grid, y.mean(0), label=label)
    ax.fill_between(grid, y.mean(0) - y.std(0), y.mean(0) + y.std(0), alpha=0.2)


def curves(by_algo: dict[str, Runs], title: str, out: pathlib.Path, legend: str = "upper left") -> None:
    """Each algorithm's mean training return against env steps (left) and against training seconds
    (right, up to the seconds its slowest seed took, so that each curve ends where its runs did)."""
    plt = _pyplot()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig, (by_steps, by_seconds) = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    for algo, runs in by_algo.items():
        label = f"{algo} ({len(runs)} seeds)"
        _mean_curve(by_steps, runs, "steps", min(run["n_timesteps"] for run in runs), label)
        _mean_curve(by_seconds, runs, "seconds", max(run["curve_seconds"][-1] for run in runs), label)
    by_steps.set(xlabel="environment steps", ylabel="return, last 100 training episodes", title=title)
    by_seconds.set(xlabel="training seconds (one core)", title=f"{title}, against wall-clock")
    by_steps.legend(loc=legend)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)

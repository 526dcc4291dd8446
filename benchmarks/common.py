"""Shared pieces of the benchmark scripts: threshold tracking over training episodes, and the JSON record
of a run (its results with the command, date and machine that produced them)."""

from __future__ import annotations

import ast
import json
import platform
import shlex
import subprocess
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback


def parse_overrides(pairs: list[str]) -> dict[str, Any]:
    """``--set key=value`` pairs as a dict: each value a Python literal, else the text itself."""
    overrides: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {pair!r}")
        try:
            overrides[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            overrides[key] = text
    return overrides


def command_line(script: str, args: list[str]) -> str:
    """``python benchmarks/<script> <args>``, shell-quoted so that it pastes back as the same arguments."""
    return shlex.join(["python", f"benchmarks/{script}", *args])


def git_commit() -> str | None:
    """The short commit checked out, ``+changes`` when tracked files differ from it; ``None`` outside this
    project's own git checkout (an unpacked sdist, even inside some other repository)."""
    root = Path(__file__).resolve().parent.parent
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        if Path(top).resolve() != root:
            return None
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        changed = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+changes" if changed else "")


def write_results(
    path: Path, *, script: str, args: list[str], machine: str, results: Iterable[Any], **extra: Any
) -> None:
    """Write ``{"meta": ..., "results": [...]}`` to ``path``: the dataclass ``results`` with the command
    (``command_line``), the date, the commit (``git_commit``), ``machine``, the Python and torch versions and
    ``extra`` meta entries."""
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "command": command_line(script, args),
        "date": time.strftime("%Y-%m-%d"),
        "commit": git_commit(),
        "machine": machine,
        "python": platform.python_version(),
        "torch": th.__version__,
        **extra,
    }
    path.write_text(json.dumps({"meta": meta, "results": [asdict(r) for r in results]}, indent=1))


class ThresholdTracker(BaseCallback):
    """Records the env step and wall-clock time at which the mean return of the last ``window`` training
    episodes (from ``Monitor``) first reaches ``threshold``; optionally stops training there."""

    def __init__(self, threshold: float, window: int = 20, stop: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.returns: deque[float] = deque(maxlen=window)
        self.window = window
        self.stop = stop
        self.steps_to_threshold: int | None = None
        self.seconds_to_threshold: float | None = None
        self.all_returns: list[tuple[int, float]] = []
        self._start = 0.0

    def _on_training_start(self) -> None:
        self._start = time.perf_counter()

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            episode = info.get("episode")
            if episode is None:
                continue
            self.returns.append(float(episode["r"]))
            self.all_returns.append((self.num_timesteps, float(episode["r"])))
            if (
                self.steps_to_threshold is None
                and len(self.returns) == self.window
                and np.mean(self.returns) >= self.threshold
            ):
                self.steps_to_threshold = self.num_timesteps
                self.seconds_to_threshold = time.perf_counter() - self._start
                if self.stop:
                    return False
        return True

"""Shared pieces of the benchmark scripts: their command-line options, the Markdown tables they print (and
``report.py`` writes into the docs), threshold tracking over training episodes, the JSON record of a run
(its results with the command, date, machine and commit that produced them), and runs kept one by one
(``--run-dir``) so that a long benchmark goes on where it stopped."""

from __future__ import annotations

import argparse
import ast
import functools
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from benchmarks.provenance import command_line, source_commit


def script_parser(doc: str | None) -> argparse.ArgumentParser:
    """A script's parser, with its module docstring (``doc``) as the help text, laid out as written."""
    return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)


def add_out_option(parser: argparse.ArgumentParser, required: bool = False) -> None:
    """``--out PATH``: where the script writes its JSON record."""
    parser.add_argument(
        "--out", type=Path, default=None, required=required, help="write all results as JSON here"
    )


def check_overrides(overrides: dict[str, Any], known: Iterable[str]) -> None:
    """Stop, before any run, on a ``--set`` key that names no setting in ``known``."""
    unknown = set(overrides) - set(known)
    if unknown:
        raise SystemExit(f"--set: unknown ACER settings {sorted(unknown)}")


def machine_description(threads: int, jobs: int | None = None) -> str:
    """The ``machine`` of a record: architecture, processor, cores, torch threads (and parallel jobs)."""
    described = f"{platform.machine()}, {platform.processor() or 'cpu'}, {os.cpu_count()} cores"
    described += f", torch threads {threads}"
    return described if jobs is None else f"{described}, {jobs} parallel job(s)"


def mean_std(values: Sequence[float], digits: int = 1) -> str:
    """``mean ± std`` over seeds (the population std, as every record was summarised)."""
    return f"{statistics.fmean(values):.{digits}f} ± {statistics.pstdev(values):.{digits}f}"


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> str:
    """A Markdown table; ``align`` holds one ``l`` or ``r`` per column (left by default)."""
    align = align or "l" * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = [header, rule, *[[str(cell) for cell in row] for row in rows]]
    return "".join(f"| {' | '.join(line)} |\n" for line in lines)


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


@functools.cache
def commit_at_start() -> str:
    """The commit of the code that runs (:func:`~benchmarks.provenance.source_commit`), read once, when a
    script's ``main`` starts: it stops there, before any run, where no commit can be recorded, and a
    checkout that moves on during a long benchmark does not change what its runs record."""
    return source_commit()


def write_results(
    path: Path, *, script: str, args: list[str], machine: str, results: Iterable[Any], **extra: Any
) -> None:
    """Write ``{"meta": ..., "results": [...]}`` to ``path``: the dataclass ``results`` with the command
    (``command_line``), the date, the commit (``commit_at_start``), ``machine``, the Python and torch
    versions and ``extra`` meta entries."""
    path.parent.mkdir(parents=True, exist_ok=True)
    meta = {
        "command": command_line(script, args),
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit_at_start(),
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


# ---------------------------------------------------------------------- kept runs (--run-dir, --collect)

#: A benchmark job: (algorithm, env or game, seed, timesteps, evaluation episodes, ACER overrides, env steps
#: between evaluations during training, 0 for none).
Job = tuple[str, str, int, int, int, dict[str, Any], int]


def add_run_dir_options(parser: argparse.ArgumentParser, name: str) -> None:
    """``--run-dir`` (keep each finished run as ``<name>_<algo>_<seed>.json``, resume) and ``--collect``."""
    parser.add_argument(
        "--run-dir",
        type=Path,
        default=None,
        help=f"keep each finished run as <{name}>_<algo>_<seed>.json here, and take a run found there "
        "instead of running it again (a long benchmark then goes on where it stopped)",
    )
    parser.add_argument(
        "--collect",
        action="store_true",
        help="run nothing: write --out from the runs kept in --run-dir, naming the runs still missing",
    )


def run_file(run_dir: Path, job: Job) -> Path:
    """Where ``--run-dir`` keeps the result of ``job``."""
    algo, name, seed = job[:3]
    return run_dir / f"{name}_{algo}_{seed}.json"


def job_settings(job: Job, describe: Callable[[str, str, dict[str, Any]], dict[str, Any]]) -> dict[str, Any]:
    """What a kept run must have been run with to stand for ``job`` (as JSON reads it back)."""
    algo, name, _, timesteps, eval_episodes, overrides, eval_every = job
    settings = dict(
        timesteps=timesteps, eval_episodes=eval_episodes, settings=describe(algo, name, overrides)
    )
    if eval_every:  # runs kept before evaluations during training existed stand for eval_every 0
        settings["eval_every"] = eval_every
    return json.loads(json.dumps(settings))


def run_or_load(
    job: Job,
    run_dir: Path | None,
    run: Callable[[], Any],
    result_class: type,
    describe: Callable[[str, str, dict[str, Any]], dict[str, Any]],
) -> Any:
    """The result of ``job``: the one kept in ``run_dir`` (refused if kept for other settings), or
    ``run()``'s, printed and then kept there."""
    wanted = job_settings(job, describe)
    path = None if run_dir is None else run_file(run_dir, job)
    if path is not None and path.exists():
        kept = json.loads(path.read_text())
        if kept["job"] != wanted:
            raise SystemExit(f"{path}: kept for other settings {kept['job']}; move it away to run again")
        return result_class(**kept["result"])
    result = run()
    print(json.dumps({k: v for k, v in asdict(result).items() if not k.startswith("curve_")}), flush=True)
    if path is not None:
        record = dict(
            job=wanted,
            finished=time.strftime("%Y-%m-%dT%H:%M:%S"),
            commit=commit_at_start(),
            result=asdict(result),
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(record, indent=1))
    return result


def jobs_to_run(jobs: list[Job], run_dir: Path | None, collect: bool) -> list[Job]:
    """``jobs``, or with ``--collect`` only those kept in ``run_dir`` (the others named on stderr)."""
    if not collect:
        return jobs
    if run_dir is None:
        raise SystemExit("--collect needs --run-dir")
    missing = [run_file(run_dir, job).name for job in jobs if not run_file(run_dir, job).exists()]
    if missing:
        print(f"not run yet ({len(missing)}): {', '.join(missing)}", file=sys.stderr)
    return [job for job in jobs if run_file(run_dir, job).exists()]


def run_jobs(
    run_job: Callable[[Job, Path | None], Any], jobs: list[Job], run_dir: Path | None, n_jobs: int
) -> list:
    """``run_job(job, run_dir)`` of every job, in order: one after the other, or in ``n_jobs`` spawned
    processes (``run_job`` must then be a module-level function; each run's steps/s then shares the
    machine with the others)."""
    if n_jobs > 1:
        with multiprocessing.get_context("spawn").Pool(n_jobs) as pool:
            return pool.starmap(run_job, [(job, run_dir) for job in jobs], chunksize=1)
    return [run_job(job, run_dir) for job in jobs]


def add_eval_every_option(parser: argparse.ArgumentParser) -> None:
    """``--eval-every STEPS``: deterministic evaluations during training, with the training wall-clock."""
    parser.add_argument(
        "--eval-every",
        type=int,
        default=0,
        metavar="STEPS",
        help="also evaluate the policy deterministically every STEPS env steps during training, recording "
        "the training wall-clock there (the evaluations' own time left out of every clock); 0: only after "
        "training",
    )


def add_jobs_option(parser: argparse.ArgumentParser) -> None:
    """``--jobs N``: runs in N parallel processes."""
    parser.add_argument(
        "--jobs", type=int, default=1, help="runs in parallel processes (1 torch thread each)"
    )


def add_overrides_option(parser: argparse.ArgumentParser, example: str) -> None:
    """``--set KEY=VALUE ...`` (repeatable) into ``args.overrides``, for :func:`parse_overrides`."""
    parser.add_argument(
        "--set",
        dest="overrides",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help=f"override an entry of ACER's presets (a Python literal), e.g. --set {example}",
    )


def kept_runs(run_dir: Path, jobs: list[Job]) -> dict[str, dict[str, Any]]:
    """When and from which commit each kept run of ``jobs`` finished (the runs may span several sessions)."""
    kept = {}
    for job in jobs:
        path = run_file(run_dir, job)
        if path.exists():
            record = json.loads(path.read_text())
            kept[path.name] = {"finished": record.get("finished"), "commit": record.get("commit")}
    return kept

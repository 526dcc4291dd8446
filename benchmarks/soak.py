"""Soak test: resident memory of a long ACER run with replay on CartPole-v1.

ACER (default hyperparameters: ``n_steps=20``, ``buffer_size=5000``, ``replay_ratio=4``,
``replay_start=1000``) trains on ``--n-envs`` CartPole-v1 environments (``DummyVecEnv``) for
``--timesteps`` env steps with one torch thread. Every ``--sample-every`` steps the process's resident set
size (RSS, from psutil) is recorded. The replay memory is full after ``buffer_size`` steps per env; from
then on nothing should grow, so the check is that the RSS after the buffer is full stays within
``--max-growth-mb`` of its value when the buffer became full (the maximum over all later samples minus the
first sample after full).

Usage::

    python -m benchmarks.soak --timesteps 1000000 --out soak.json

prints one JSON line per sample while running, then the summary as JSON and as a Markdown table; the exit
status is 1 if the growth exceeds the limit.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env

import sb3_acer
from benchmarks.common import command_line, commit_at_start, machine_description, script_parser
from sb3_acer import ACER

MB = 1024 * 1024


class MemorySampler(BaseCallback):
    """Records the step, the seconds, the RSS in MB and the replay segments every ``every`` steps."""

    def __init__(self, every: int) -> None:
        super().__init__()
        self.every = every
        self.samples: list[dict[str, Any]] = []
        self.full_at: int | None = None
        self._next = 0
        self._start = 0.0
        self._process = psutil.Process()

    def _on_training_start(self) -> None:
        self._start = time.perf_counter()
        self._sample()

    def _sample(self) -> None:
        buffer = self.model.replay_buffer  # type: ignore[attr-defined]
        segments = len(buffer) if buffer is not None else 0
        full = buffer is not None and segments == buffer.capacity
        if full and self.full_at is None:
            self.full_at = self.num_timesteps
        sample = dict(
            timesteps=self.num_timesteps,
            seconds=round(time.perf_counter() - self._start, 1),
            rss_mb=round(self._process.memory_info().rss / MB, 1),
            segments=segments,
            buffer_full=full,
        )
        self.samples.append(sample)
        print(json.dumps(sample), flush=True)
        self._next = self.num_timesteps + self.every

    def _on_step(self) -> bool:
        if self.num_timesteps >= self._next:
            self._sample()
        return True

    def _on_training_end(self) -> None:
        if self.samples[-1]["timesteps"] != self.num_timesteps:
            self._sample()


def summarize(samples: list[dict[str, Any]], max_growth_mb: float) -> dict[str, Any]:
    after_full = [sample for sample in samples if sample["buffer_full"]]
    if not after_full:
        raise SystemExit("soak: the replay memory never became full; run longer")
    at_full = after_full[0]["rss_mb"]
    growth = max(sample["rss_mb"] for sample in after_full) - at_full
    return dict(
        rss_start_mb=samples[0]["rss_mb"],
        buffer_full_at=after_full[0]["timesteps"],
        rss_at_full_mb=at_full,
        rss_max_after_full_mb=max(sample["rss_mb"] for sample in after_full),
        rss_end_mb=samples[-1]["rss_mb"],
        growth_after_full_mb=round(growth, 1),
        max_growth_mb=max_growth_mb,
        passed=growth < max_growth_mb,
    )


def markdown(samples: list[dict[str, Any]], summary: dict[str, Any], rows: int = 11) -> str:
    step = max(1, (len(samples) - 1) // (rows - 1))
    shown = samples[::step]
    if shown[-1] is not samples[-1]:
        shown.append(samples[-1])
    lines = ["| env steps | seconds | RSS (MB) | replay segments |", "| ---: | ---: | ---: | ---: |"]
    lines += [
        f"| {s['timesteps']:,} | {s['seconds']:.0f} | {s['rss_mb']:.1f} | {s['segments']}"
        f"{' (full)' if s['buffer_full'] else ''} |"
        for s in shown
    ]
    verdict = "passed" if summary["passed"] else "FAILED"
    lines.append("")
    lines.append(
        f"RSS when the replay memory became full ({summary['buffer_full_at']:,} steps): "
        f"{summary['rss_at_full_mb']:.1f} MB; maximum afterwards: {summary['rss_max_after_full_mb']:.1f} MB; "
        f"growth {summary['growth_after_full_mb']:.1f} MB "
        f"(limit {summary['max_growth_mb']:.0f} MB: {verdict})."
    )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """This script's command line (tests/docs/test_code_blocks.py parses the documented ones with it)."""
    parser = script_parser(__doc__)
    parser.add_argument("--timesteps", type=int, default=1_000_000, help="env steps (default 1000000)")
    parser.add_argument("--n-envs", type=int, default=4, help="CartPole-v1 envs (default 4)")
    parser.add_argument("--sample-every", type=int, default=10_000, help="env steps between samples")
    parser.add_argument("--max-growth-mb", type=float, default=50.0, help="allowed growth after full")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="write samples and summary as JSON here")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    commit_at_start()  # stops here, before any run, where no commit can be recorded

    th.set_num_threads(1)
    env = make_vec_env("CartPole-v1", n_envs=args.n_envs, seed=args.seed)
    model = ACER("MlpPolicy", env, seed=args.seed)
    sampler = MemorySampler(args.sample_every)
    start = time.perf_counter()
    model.learn(args.timesteps, callback=sampler, log_interval=100)
    seconds = time.perf_counter() - start

    summary = summarize(sampler.samples, args.max_growth_mb)
    result = dict(
        command=command_line("soak.py", argv if argv is not None else sys.argv[1:]),
        date=time.strftime("%Y-%m-%d"),
        commit=commit_at_start(),
        timesteps=model.num_timesteps,
        n_envs=args.n_envs,
        seconds=round(seconds, 1),
        updates=model._n_updates,
        replay_updates=model._n_replay_updates,
        skipped_updates=model.n_skipped_updates,
        versions=dict(
            sb3_acer=sb3_acer.__version__,
            torch=th.__version__,
            python=platform.python_version(),
            machine=machine_description(threads=th.get_num_threads()),
        ),
        summary=summary,
        samples=sampler.samples,
    )
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1))
    print(json.dumps({key: value for key, value in result.items() if key != "samples"}, indent=1))
    print(markdown(sampler.samples, summary))
    return 0 if summary["passed"] else 1


if __name__ == "__main__":
    raise SystemExit(main())

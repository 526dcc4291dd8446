"""What a user gets without a preset: ``sb3-acer train`` on an env with no entry in ``acer.yml``, against
SB3's A2C with its defaults on the same env, steps and envs.

The command line falls back to ``MlpPolicy`` on ``DEFAULT_N_ENVS`` environments for ``DEFAULT_TIMESTEPS``
steps with :data:`sb3_acer.cli.train.settings.FALLBACK_HYPERPARAMETERS` over the constructor's defaults
(SB2's, kept for API compatibility). This script trains, side by side in one process, one after the other,
with ``torch.set_num_threads(1)``:

* ``A2C``: ``A2C("MlpPolicy", env)``, SB3's defaults;
* ``ACER-constructor``: ``ACER("MlpPolicy", env)``, the constructor's (SB2's) defaults;
* ``ACER-fallback``: the command line's fallback (``--set key=value`` overrides it, for choosing it),

on envs given by id, whatever presets they have (the presets are not used). For each run: the mean return of
the last 100 training episodes, a deterministic evaluation of the final policy (20 episodes on a separately
seeded env), env steps per second.

Usage::

    python -m benchmarks.fallback_defaults --envs CartPole-v1 Acrobot-v1 LunarLander-v3 --seeds 30 31 32 \\
        --out benchmarks/results/fallback_defaults.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import torch as th
from stable_baselines3 import A2C
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from benchmarks.common import (
    add_out_option,
    commit_at_start,
    machine_description,
    markdown_table,
    mean_std,
    parse_overrides,
    script_parser,
    write_results,
)
from sb3_acer import ACER
from sb3_acer.cli.train.settings import DEFAULT_N_ENVS, DEFAULT_TIMESTEPS, FALLBACK_HYPERPARAMETERS

CONFIGS = ("A2C", "ACER-constructor", "ACER-fallback")
WINDOW = 100


@dataclass
class RunResult:
    config: str
    env_id: str
    seed: int
    n_timesteps: int
    n_episodes: int
    final_train_return: float | None  # mean of the last WINDOW training episodes
    final_eval_mean: float
    final_eval_std: float
    steps_per_second: float
    train_seconds: float
    settings: dict[str, Any]


class EpisodeReturns(BaseCallback):
    """The returns of the last ``window`` training episodes (``Monitor``)."""

    def __init__(self, window: int = WINDOW) -> None:
        super().__init__()
        self.returns: deque[float] = deque(maxlen=window)
        self.n_episodes = 0

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            if "episode" in info:
                self.returns.append(float(info["episode"]["r"]))
                self.n_episodes += 1
        return True


def settings_of(config: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The constructor keyword arguments of ``config`` (besides policy, env and seed)."""
    if config == "ACER-fallback":
        return {**FALLBACK_HYPERPARAMETERS, **overrides}
    return {}


def make_model(config: str, env_id: str, seed: int, overrides: dict[str, Any]) -> BaseAlgorithm:
    env = make_vec_env(env_id, n_envs=DEFAULT_N_ENVS, seed=seed)
    cls = A2C if config == "A2C" else ACER
    return cls("MlpPolicy", env, seed=seed, **settings_of(config, overrides))


def run_one(config: str, env_id: str, seed: int, timesteps: int, overrides: dict[str, Any]) -> RunResult:
    th.set_num_threads(1)
    model = make_model(config, env_id, seed, overrides)
    returns = EpisodeReturns()
    start = time.perf_counter()
    model.learn(timesteps, callback=returns)
    train_seconds = time.perf_counter() - start
    eval_env = make_vec_env(env_id, n_envs=1, seed=seed + 10_000)
    mean, std = evaluate_policy(model, eval_env, n_eval_episodes=20, deterministic=True)
    result = RunResult(
        config=config,
        env_id=env_id,
        seed=seed,
        n_timesteps=model.num_timesteps,
        n_episodes=returns.n_episodes,
        final_train_return=float(np.mean(returns.returns)) if returns.returns else None,
        final_eval_mean=float(mean),  # type: ignore[arg-type]
        final_eval_std=float(std),  # type: ignore[arg-type]
        steps_per_second=model.num_timesteps / train_seconds,
        train_seconds=train_seconds,
        settings={"n_envs": DEFAULT_N_ENVS, **settings_of(config, overrides)},
    )
    print(json.dumps(asdict(result)), flush=True)
    return result


def summarise(results: list[RunResult]) -> str:
    """A markdown table: per env and config, mean ± std over seeds of the final training return and of the
    evaluation, and the median steps/s as a ratio to A2C's in the same run."""
    header = [
        "env",
        "config",
        "seeds",
        "final return, last 100 training episodes",
        "deterministic eval",
        "steps/s / A2C's",
    ]
    rows = []
    for env_id in dict.fromkeys(r.env_id for r in results):
        speed = {
            config: statistics.median(
                [r.steps_per_second for r in results if (r.env_id, r.config) == (env_id, config)]
            )
            for config in {r.config for r in results if r.env_id == env_id}
        }
        for config in [c for c in CONFIGS if c in speed]:
            runs = [r for r in results if (r.env_id, r.config) == (env_id, config)]
            finals = [r.final_train_return for r in runs if r.final_train_return is not None]
            ratio = f"{speed[config] / speed['A2C']:.2f}" if "A2C" in speed else "-"
            evaluation = mean_std([r.final_eval_mean for r in runs])
            rows.append([env_id, config, len(runs), mean_std(finals) if finals else "-", evaluation, ratio])
    return markdown_table(header, rows)


def build_parser() -> argparse.ArgumentParser:
    """This script's command line."""
    parser = script_parser(__doc__)
    parser.add_argument("--envs", nargs="+", default=["CartPole-v1", "Acrobot-v1", "LunarLander-v3"])
    parser.add_argument("--configs", nargs="+", choices=CONFIGS, default=list(CONFIGS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[30, 31, 32])
    parser.add_argument("--timesteps", type=int, default=DEFAULT_TIMESTEPS)
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override the fallback",
    )
    add_out_option(parser)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    commit_at_start()  # stops here, before any run, where no commit can be recorded
    overrides = parse_overrides(args.overrides)
    results = [
        run_one(config, env_id, seed, args.timesteps, overrides)
        for env_id in args.envs
        for seed in args.seeds
        for config in args.configs
    ]
    print(summarise(results))
    if args.out is not None:
        write_results(
            args.out,
            script="fallback_defaults.py",
            args=argv or sys.argv[1:],
            machine=machine_description(threads=1),
            results=results,
            fallback_overrides=overrides,
            window=WINDOW,
        )


if __name__ == "__main__":
    main()

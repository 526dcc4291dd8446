"""Measure ACER's presets (``sb3_acer/presets/acer.yml``) over several seeds, against the SB2 zoo's table.

For each (environment, seed) the script trains ACER with the preset (``make_vec_env`` + ``Monitor``,
``VecNormalize`` when the preset normalises), then evaluates the final policy on a separately seeded env:

* with **stochastic** actions, as the SB2 zoo's benchmark table did (``mean_reward`` there is the mean Monitor
  return of a trained agent sampling its actions), and
* with **deterministic** (greedy) actions, as SB3's ``evaluate_policy`` does by default.

It also records the evaluation episodes' mean length and the fraction that ran to the env's time limit (an
agent that hovers instead of finishing shows there), the mean return of the last 100 training episodes, the
mean training return in each tenth of the run, the training wall-clock and env steps per second. Across
seeds it reports the mean and the standard deviation of the per-seed means.

Seeds can run in parallel processes (``--jobs``), each with one torch thread; wall-clock figures from parallel
runs share the machine, so the timing benchmark is ``classic_control.py``, not this script.

Usage::

    python -m benchmarks.presets --envs MountainCar-v0 --seeds 0 1 2 --jobs 2 \\
        --out benchmarks/results/presets_mountaincar.json

``--set key=value`` overrides a preset entry (for tuning; results written with overrides say so).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from collections import deque
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from benchmarks.common import (
    ThresholdTracker,
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
from sb3_acer.presets import (
    env_wrappers,
    evaluation_normalization,
    load_preset,
    normalize_kwargs,
    resolve_policy_kwargs,
    wrapper_class,
)

# The SB2 rl-baselines-zoo benchmark table (stochastic actions, ~150k evaluation steps of one trained agent).
SB2_ZOO = {
    "CartPole-v1": 498.620,
    "Acrobot-v1": -90.850,
    "MountainCar-v0": -131.213,
    "LunarLander-v3": 185.210,  # the table's LunarLander-v2; v3 fixed bugs in the environment, same task
}
# Returns at which each task counts as solved (Gymnasium's reward_threshold where it has one).
THRESHOLDS = {"CartPole-v1": 475.0, "Acrobot-v1": -100.0, "MountainCar-v0": -110.0, "LunarLander-v3": 200.0}


@dataclass
class PresetResult:
    env_id: str
    seed: int
    n_timesteps: int
    overrides: dict[str, Any]
    eval_stochastic_mean: float
    eval_stochastic_std: float
    eval_deterministic_mean: float
    eval_deterministic_std: float
    # Mean episode length, and the fraction of episodes that ran to the env's time limit.
    eval_stochastic_mean_length: float
    eval_deterministic_mean_length: float
    eval_stochastic_timeout_frac: float
    eval_deterministic_timeout_frac: float
    last100_train_mean: float
    steps_to_threshold: int | None
    learning_curve: list[tuple[int, float]]
    train_seconds: float
    steps_per_second: float


def run_one(env_id: str, seed: int, overrides: dict[str, Any], eval_episodes: int) -> PresetResult:
    th.set_num_threads(1)
    preset = load_preset(env_id)
    settings: dict[str, Any] = {
        "n_envs": preset.n_envs,
        "n_timesteps": preset.n_timesteps,
        "policy": preset.policy,
        "normalize": preset.normalize_kwargs if preset.normalize else False,
        "env_wrapper": [{spec.name: spec.kwargs} for spec in preset.env_wrapper],
        **preset.hyperparameters,
        **overrides,
    }
    n_envs = int(settings.pop("n_envs"))
    n_timesteps = int(float(settings.pop("n_timesteps")))
    policy = str(settings.pop("policy"))
    vec_normalize_kwargs = normalize_kwargs(settings.pop("normalize"))
    wrap = wrapper_class(env_wrappers(settings.pop("env_wrapper")))
    if "policy_kwargs" in settings:
        settings["policy_kwargs"] = resolve_policy_kwargs(settings["policy_kwargs"])
    env: VecEnv = make_vec_env(env_id, n_envs=n_envs, seed=seed, wrapper_class=wrap)
    if vec_normalize_kwargs is not None:
        env = VecNormalize(env, gamma=float(settings.get("gamma", 0.99)), **vec_normalize_kwargs)
    model = ACER(policy, env, seed=seed, **settings)
    tracker = ThresholdTracker(THRESHOLDS.get(env_id, float("inf")), window=100)
    start = time.perf_counter()
    model.learn(n_timesteps, callback=tracker)
    train_seconds = time.perf_counter() - start

    time_limit = gym.spec(env_id).max_episode_steps
    evals: dict[bool, tuple[float, float, float, float]] = {}
    for deterministic in (False, True):
        eval_env: VecEnv = make_vec_env(env_id, n_envs=1, seed=seed + 10_000, wrapper_class=wrap)
        if isinstance(env, VecNormalize):
            eval_env = evaluation_normalization(eval_env, like=env)
        returns, lengths = evaluate_policy(
            model,
            eval_env,
            n_eval_episodes=eval_episodes,
            deterministic=deterministic,
            return_episode_rewards=True,
        )
        timeouts = [length == time_limit for length in lengths] if time_limit else [False]
        evals[deterministic] = (
            float(np.mean(returns)),
            float(np.std(returns)),
            float(np.mean(lengths)),
            float(np.mean(timeouts)),
        )
    last = deque((r for _, r in tracker.all_returns), maxlen=100)
    # Mean training return in each tenth of the run (end step of the tenth, mean): the shape of the curve.
    curve = []
    for tenth in range(1, 11):
        lo, hi = (tenth - 1) * n_timesteps / 10, tenth * n_timesteps / 10
        returns = [r for step, r in tracker.all_returns if lo < step <= hi]
        curve.append((int(hi), float(np.mean(returns)) if returns else float("nan")))
    return PresetResult(
        env_id=env_id,
        seed=seed,
        n_timesteps=model.num_timesteps,
        overrides=overrides,
        eval_stochastic_mean=evals[False][0],
        eval_stochastic_std=evals[False][1],
        eval_deterministic_mean=evals[True][0],
        eval_deterministic_std=evals[True][1],
        eval_stochastic_mean_length=evals[False][2],
        eval_deterministic_mean_length=evals[True][2],
        eval_stochastic_timeout_frac=evals[False][3],
        eval_deterministic_timeout_frac=evals[True][3],
        last100_train_mean=float(np.mean(last)) if last else float("nan"),
        steps_to_threshold=tracker.steps_to_threshold,
        learning_curve=curve,
        train_seconds=train_seconds,
        steps_per_second=model.num_timesteps / train_seconds,
    )


def _run_packed(job: tuple[str, int, dict[str, Any], int]) -> PresetResult:
    return run_one(*job)


def summarise(results: list[PresetResult]) -> str:
    header = [
        "env",
        "seeds",
        "env steps",
        "eval, stochastic (mean ± std over seeds)",
        "eval, deterministic",
        "last 100 training episodes",
        "seeds reaching threshold",
        "SB2 zoo",
    ]
    rows = []
    for env_id in sorted({r.env_id for r in results}):
        runs = [r for r in results if r.env_id == env_id]
        solved = sum(r.steps_to_threshold is not None for r in runs)
        zoo = SB2_ZOO.get(env_id)
        rows.append(
            [
                env_id,
                len(runs),
                f"{runs[0].n_timesteps:,}",
                mean_std([r.eval_stochastic_mean for r in runs]),
                mean_std([r.eval_deterministic_mean for r in runs]),
                mean_std([r.last100_train_mean for r in runs]),
                f"{solved}/{len(runs)}",
                "-" if zoo is None else f"{zoo:.2f}",
            ]
        )
    return markdown_table(header, rows)


def build_parser() -> argparse.ArgumentParser:
    """This script's command line (tests/docs/test_code_blocks.py parses the documented ones with it)."""
    parser = script_parser(__doc__)
    parser.add_argument("--envs", nargs="+", required=True)
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--jobs", type=int, default=1, help="seeds trained in parallel processes")
    parser.add_argument(
        "--set",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="override preset entries (repeatable: each --set adds to the previous ones)",
    )
    add_out_option(parser)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    commit_at_start()  # stops here, before any run, where no commit can be recorded

    overrides = parse_overrides(args.set)
    jobs = [(env_id, seed, overrides, args.eval_episodes) for env_id in args.envs for seed in args.seeds]
    results: list[PresetResult] = []
    if args.jobs > 1:
        with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
            for result in pool.imap(_run_packed, jobs):
                results.append(result)
                print(json.dumps(asdict(result)), flush=True)
    else:
        for job in jobs:
            results.append(_run_packed(job))
            print(json.dumps(asdict(results[-1])), flush=True)
    table = summarise(results)
    print(table)
    if args.out is not None:
        write_results(
            args.out,
            script="presets.py",
            args=argv or sys.argv[1:],
            machine=machine_description(threads=1, jobs=args.jobs),
            results=results,
        )


if __name__ == "__main__":
    main()

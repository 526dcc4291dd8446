"""ACER against SB3's A2C and PPO (and SAC on Pendulum; rl-baselines3-zoo hyperparameters) on CartPole-v1,
Acrobot-v1 and Pendulum-v1.

All runs happen side by side in one process, one after the other, with ``torch.set_num_threads(1)``. For each
(algorithm, environment, seed) the script reports:

* the env steps (and wall-clock seconds) until the mean return of the last 20 *training* episodes (Monitor)
  first reaches the threshold (CartPole-v1: 475, Acrobot-v1: -100, Pendulum-v1: -200, which Gymnasium leaves
  unset);
* the final deterministic evaluation return (20 episodes on a separately seeded env);
* the training throughput in env steps per second.

Usage::

    python -m benchmarks.classic_control --seeds 0 1 2 --out benchmarks/results/classic_control.json

``docs/results.md`` gives the commands of its tables and the records they wrote.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym
import torch as th
from stable_baselines3 import A2C, PPO, SAC
from stable_baselines3.common.base_class import BaseAlgorithm
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
    script_parser,
    write_results,
)
from sb3_acer import ACER
from sb3_acer.presets import evaluation_normalization, load_preset, wrapper_class

THRESHOLDS = {"CartPole-v1": 475.0, "Acrobot-v1": -100.0, "Pendulum-v1": -200.0}


def linear(initial: float) -> Callable[[float], float]:
    return lambda progress_remaining: progress_remaining * initial


# rl-baselines3-zoo hyperparameters (hyperparams/{a2c,ppo}.yml) for the peers. The training budgets are cut
# from the zoo's (CartPole 1e5 PPO / 5e5 A2C, Acrobot 1e6 / 5e5) to what reaching the threshold needs here;
# ACER's budgets come from its presets.
ZOO: dict[tuple[str, str], dict[str, Any]] = {
    ("PPO", "CartPole-v1"): dict(
        n_envs=8,
        n_timesteps=60_000,
        normalize=False,
        kwargs=dict(
            n_steps=32,
            batch_size=256,
            gae_lambda=0.8,
            gamma=0.98,
            n_epochs=20,
            ent_coef=0.0,
            learning_rate=linear(1e-3),
            clip_range=linear(0.2),
        ),
    ),
    ("A2C", "CartPole-v1"): dict(n_envs=8, n_timesteps=150_000, normalize=False, kwargs=dict(ent_coef=0.0)),
    ("PPO", "Acrobot-v1"): dict(
        n_envs=16,
        n_timesteps=100_000,
        normalize=True,
        kwargs=dict(n_steps=256, gae_lambda=0.94, gamma=0.99, n_epochs=4, ent_coef=0.0),
    ),
    ("A2C", "Acrobot-v1"): dict(n_envs=16, n_timesteps=100_000, normalize=True, kwargs=dict(ent_coef=0.0)),
    # Pendulum-v1: the zoo's budgets, uncut (PPO 1e5, A2C 1e6, SAC 2e4); both on-policy peers use gSDE.
    ("PPO", "Pendulum-v1"): dict(
        n_envs=4,
        n_timesteps=100_000,
        normalize=False,
        kwargs=dict(
            n_steps=1024,
            gae_lambda=0.95,
            gamma=0.9,
            n_epochs=10,
            ent_coef=0.0,
            learning_rate=1e-3,
            clip_range=0.2,
            use_sde=True,
            sde_sample_freq=4,
        ),
    ),
    ("A2C", "Pendulum-v1"): dict(
        n_envs=8,
        n_timesteps=1_000_000,
        normalize=True,
        kwargs=dict(
            ent_coef=0.0,
            max_grad_norm=0.5,
            n_steps=8,
            gae_lambda=0.9,
            vf_coef=0.4,
            gamma=0.9,
            use_rms_prop=True,
            normalize_advantage=False,
            learning_rate=linear(7e-4),
            use_sde=True,
            policy_kwargs=dict(log_std_init=-2, ortho_init=False),
        ),
    ),
    ("SAC", "Pendulum-v1"): dict(
        n_envs=1, n_timesteps=20_000, normalize=False, kwargs=dict(learning_rate=1e-3)
    ),
}


@dataclass
class RunResult:
    algo: str
    env_id: str
    seed: int
    n_timesteps: int
    steps_to_threshold: int | None
    seconds_to_threshold: float | None
    final_eval_mean: float
    final_eval_std: float
    steps_per_second: float
    train_seconds: float


def make_run(
    algo: str, env_id: str, seed: int, budget_scale: float
) -> tuple[BaseAlgorithm, VecEnv, int, Callable[[gym.Env], gym.Env] | None]:
    if algo == "ACER":
        preset = load_preset(env_id)
        n_envs, n_timesteps = preset.n_envs, preset.n_timesteps
        normalize = preset.normalize_kwargs if preset.normalize else None
        wrap = wrapper_class(preset.env_wrapper)
        kwargs = dict(preset.hyperparameters)
    else:
        spec = ZOO[(algo, env_id)]
        n_envs, n_timesteps = spec["n_envs"], spec["n_timesteps"]
        normalize = {} if spec["normalize"] else None
        wrap = None
        kwargs = dict(spec["kwargs"])
    env: VecEnv = make_vec_env(env_id, n_envs=n_envs, seed=seed, wrapper_class=wrap)
    if normalize is not None:
        env = VecNormalize(env, gamma=kwargs.get("gamma", 0.99), **normalize)
    cls = {"ACER": ACER, "A2C": A2C, "PPO": PPO, "SAC": SAC}[algo]
    model = cls("MlpPolicy", env, seed=seed, **kwargs)
    return model, env, int(n_timesteps * budget_scale), wrap


def run_one(algo: str, env_id: str, seed: int, budget_scale: float, eval_episodes: int) -> RunResult:
    model, env, n_timesteps, wrap = make_run(algo, env_id, seed, budget_scale)
    tracker = ThresholdTracker(THRESHOLDS[env_id], window=20)
    start = time.perf_counter()
    model.learn(n_timesteps, callback=tracker)
    train_seconds = time.perf_counter() - start
    # The training env's wrappers, outside its Monitor (a preset's env_wrapper).
    eval_env: VecEnv = make_vec_env(env_id, n_envs=1, seed=seed + 10_000, wrapper_class=wrap)
    if isinstance(env, VecNormalize):
        eval_env = evaluation_normalization(eval_env, like=env)
    mean, std = evaluate_policy(model, eval_env, n_eval_episodes=eval_episodes, deterministic=True)
    return RunResult(
        algo=algo,
        env_id=env_id,
        seed=seed,
        n_timesteps=model.num_timesteps,
        steps_to_threshold=tracker.steps_to_threshold,
        seconds_to_threshold=tracker.seconds_to_threshold,
        final_eval_mean=float(mean),  # type: ignore[arg-type]
        final_eval_std=float(std),
        steps_per_second=model.num_timesteps / train_seconds,
        train_seconds=train_seconds,
    )


def summarise(results: list[RunResult]) -> str:
    header = [
        "env",
        "algo",
        "seeds solved",
        "median steps to threshold",
        "median seconds to threshold",
        "final eval (mean ± std over seeds)",
        "env steps/s",
    ]
    rows = []
    for env_id, algo in sorted({(r.env_id, r.algo) for r in results}):
        runs = [r for r in results if r.env_id == env_id and r.algo == algo]
        solved = [r for r in runs if r.steps_to_threshold is not None]
        # An unsolved seed counts as infinitely slow, so the median is over every seed, not the solved ones.
        inf = float("inf")
        steps = statistics.median(
            [inf if r.steps_to_threshold is None else r.steps_to_threshold for r in runs]
        )
        secs = statistics.median(
            [inf if r.seconds_to_threshold is None else r.seconds_to_threshold for r in runs]
        )
        rows.append(
            [
                env_id,
                algo,
                f"{len(solved)}/{len(runs)}",
                "-" if steps == inf else f"{steps:,.0f}",
                "-" if secs == inf else f"{secs:.1f}",
                mean_std([r.final_eval_mean for r in runs]),
                f"{statistics.median([r.steps_per_second for r in runs]):,.0f}",
            ]
        )
    return markdown_table(header, rows)


def build_parser() -> argparse.ArgumentParser:
    """This script's command line (tests/docs/test_code_blocks.py parses the documented ones with it)."""
    parser = script_parser(__doc__)
    parser.add_argument("--envs", nargs="+", default=list(THRESHOLDS))
    parser.add_argument("--algos", nargs="+", default=["ACER", "PPO", "A2C"], help="also SAC (Pendulum-v1)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--budget-scale", type=float, default=1.0, help="multiply every training budget")
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads for every run")
    add_out_option(parser)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    commit_at_start()  # stops here, before any run, where no commit can be recorded

    th.set_num_threads(args.threads)
    results: list[RunResult] = []
    for env_id in args.envs:
        for algo in args.algos:
            for seed in args.seeds:
                result = run_one(algo, env_id, seed, args.budget_scale, args.eval_episodes)
                results.append(result)
                print(json.dumps(asdict(result)), flush=True)
    table = summarise(results)
    print(table)
    if args.out is not None:
        write_results(
            args.out,
            script="classic_control.py",
            args=argv or sys.argv[1:],
            machine=machine_description(threads=args.threads),
            results=results,
        )


if __name__ == "__main__":
    main()

"""Recurrent ACER against feed-forward ACER on CartPole-v1 without velocities (a task that needs memory).

The observation keeps only the cart position and the pole angle (SB2's ``CartPoleNoVelEnv``): a feed-forward
policy cannot tell which way the pole is moving, a recurrent one can infer it from consecutive observations.
``MlpLstmPolicy`` and ``MlpPolicy`` train with the same hyperparameters, the same budget and the same
observation normalisation (``VecNormalize``, observations only: the pole angle is a small number, and its
change from one step to the next is what the memory has to pick up); for each (policy, seed) the script
reports:

* the final deterministic evaluation return (``evaluate_policy``, ``--eval-episodes`` episodes on a
  separately seeded env; the recurrent policy carries its state through each episode);
* the mean return of the last 20 training episodes (Monitor);
* the time per sample of the ACER update (on-policy and replayed updates together: the time spent in
  ``train`` divided by the number of transitions those updates processed), and env steps per second.

All runs happen in one process, one after the other, with ``torch.set_num_threads(--threads)``.

Usage::

    python -m benchmarks.recurrent_cartpole --seeds 0 1 2 --out benchmarks/results/recurrent_cartpole.json
    python -m benchmarks.recurrent_cartpole --with-velocities --policies MlpPolicy \
        --out benchmarks/results/recurrent_cartpole_control.json

prints one JSON line per run, then a markdown table. The second command is the control: the same
feed-forward configuration on CartPole-v1 with its velocities.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
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
from sb3_acer.common.type_aliases import Segment


class NoVelocityObservation(gym.ObservationWrapper):
    """Keep the cart position ``x`` and the pole angle ``theta`` of CartPole; drop both velocities."""

    KEEP = (0, 2)

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        box = env.observation_space
        assert isinstance(box, spaces.Box)
        keep = list(self.KEEP)
        self.observation_space = spaces.Box(box.low[keep], box.high[keep], dtype=np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        return np.asarray(observation, dtype=np.float32)[list(self.KEEP)]


def make_env(**kwargs: Any) -> gym.Env:
    return NoVelocityObservation(gym.make("CartPole-v1", **kwargs))


def make_full_env(**kwargs: Any) -> gym.Env:
    """The control: CartPole-v1 with its velocities."""
    return gym.make("CartPole-v1", **kwargs)


def make_training_env(n_envs: int, seed: int, velocities: bool = False) -> VecNormalize:
    """``n_envs`` Monitor-wrapped envs, observations normalised by running statistics."""
    maker = make_full_env if velocities else make_env
    return VecNormalize(make_vec_env(maker, n_envs=n_envs, seed=seed), norm_obs=True, norm_reward=False)


def make_eval_env(training_env: VecNormalize, seed: int, velocities: bool = False) -> VecEnv:
    """One env normalised with the (frozen) statistics of ``training_env``."""
    maker = make_full_env if velocities else make_env
    env = VecNormalize(make_vec_env(maker, n_envs=1, seed=seed), training=False, norm_reward=False)
    env.obs_rms = training_env.obs_rms
    return env


#: Shared by both policies; ``policy_kwargs`` only for the recurrent one.
HYPERPARAMETERS: dict[str, Any] = dict(
    n_steps=10,
    gamma=0.99,
    ent_coef=0.0,
    learning_rate=2e-3,
    lr_schedule="linear",
    replay_ratio=4,
    replay_start=200,
    buffer_size=5000,
)
N_ENVS = 8
N_TIMESTEPS = 150_000
RECURRENT_POLICY_KWARGS: dict[str, Any] = dict(n_lstm=64)


class TimedACER(ACER):
    """ACER that measures the time spent in updates and the samples they processed."""

    update_seconds = 0.0
    update_samples = 0

    def _gradient_step(self, segment: Segment, on_policy: bool) -> Any:
        start = time.perf_counter()
        result = super()._gradient_step(segment, on_policy)
        self.update_seconds += time.perf_counter() - start
        self.update_samples += segment.n_steps * segment.n_envs
        return result


@dataclass
class RunResult:
    policy: str
    velocities: bool
    seed: int
    n_timesteps: int
    final_eval_mean: float
    final_eval_std: float
    last_train_returns_mean: float
    update_us_per_sample: float
    n_updates: int
    steps_per_second: float
    train_seconds: float


def run_one(
    policy: str,
    seed: int,
    n_timesteps: int,
    eval_episodes: int,
    overrides: dict[str, Any],
    velocities: bool = False,
) -> RunResult:
    env = make_training_env(overrides.pop("n_envs", N_ENVS), seed, velocities)
    kwargs = {**HYPERPARAMETERS, **overrides}
    if policy != "MlpPolicy":
        kwargs["policy_kwargs"] = dict(RECURRENT_POLICY_KWARGS, **kwargs.get("policy_kwargs", {}))
    else:
        kwargs.pop("policy_kwargs", None)
    model = TimedACER(policy, env, seed=seed, **kwargs)
    tracker = ThresholdTracker(threshold=float("inf"), window=20)
    start = time.perf_counter()
    model.learn(n_timesteps, callback=tracker)
    train_seconds = time.perf_counter() - start
    eval_env = make_eval_env(env, seed + 10_000, velocities)
    mean, std = evaluate_policy(model, eval_env, n_eval_episodes=eval_episodes, deterministic=True)
    last = [r for _, r in tracker.all_returns[-20:]]
    return RunResult(
        policy=policy,
        velocities=velocities,
        seed=seed,
        n_timesteps=model.num_timesteps,
        final_eval_mean=float(mean),  # type: ignore[arg-type]
        final_eval_std=float(std),
        last_train_returns_mean=float(np.mean(last)) if last else float("nan"),
        update_us_per_sample=1e6 * model.update_seconds / max(model.update_samples, 1),
        n_updates=model._n_updates,
        steps_per_second=model.num_timesteps / train_seconds,
        train_seconds=train_seconds,
    )


def summarise(results: list[RunResult]) -> str:
    header = [
        "observation",
        "policy",
        "seeds",
        "final eval return (mean ± std over seeds)",
        "per seed",
        "last 20 training episodes",
        "update µs / sample",
        "env steps/s",
    ]
    rows = []
    for velocities, policy in dict.fromkeys((r.velocities, r.policy) for r in results):
        runs = [r for r in results if r.policy == policy and r.velocities == velocities]
        evals = [r.final_eval_mean for r in runs]
        rows.append(
            [
                "x, x_dot, theta, theta_dot" if velocities else "x, theta",
                policy,
                len(runs),
                mean_std(evals),
                ", ".join(f"{e:.0f}" for e in evals),
                f"{statistics.mean(r.last_train_returns_mean for r in runs):.1f}",
                f"{statistics.median(r.update_us_per_sample for r in runs):.0f}",
                f"{statistics.median(r.steps_per_second for r in runs):,.0f}",
            ]
        )
    return markdown_table(header, rows)


def build_parser() -> argparse.ArgumentParser:
    """This script's command line (tests/docs/test_code_blocks.py parses the documented ones with it)."""
    parser = script_parser(__doc__)
    parser.add_argument("--policies", nargs="+", default=["MlpLstmPolicy", "MlpPolicy"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--timesteps", type=int, default=N_TIMESTEPS, help="env steps per run")
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads for every run")
    parser.add_argument(
        "--set",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="override a hyperparameter (a Python literal, else text); repeatable",
    )
    parser.add_argument(
        "--with-velocities",
        action="store_true",
        help="control: train on CartPole-v1 with its velocities (any policy should solve it)",
    )
    add_out_option(parser)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    commit_at_start()  # stops here, before any run, where no commit can be recorded

    overrides = parse_overrides(args.set)
    th.set_num_threads(args.threads)
    results: list[RunResult] = []
    for policy in args.policies:
        for seed in args.seeds:
            result = run_one(
                policy, seed, args.timesteps, args.eval_episodes, dict(overrides), args.with_velocities
            )
            results.append(result)
            print(json.dumps(asdict(result)), flush=True)
    table = summarise(results)
    print(table)
    if args.out is not None:
        write_results(
            args.out,
            script="recurrent_cartpole.py",
            args=argv or sys.argv[1:],
            machine=machine_description(threads=args.threads),
            results=results,
            hyperparameters={**HYPERPARAMETERS, "n_envs": N_ENVS, **overrides},
            recurrent_policy_kwargs=RECURRENT_POLICY_KWARGS,
        )


if __name__ == "__main__":
    main()

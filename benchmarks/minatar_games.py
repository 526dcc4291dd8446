"""ACER against SB3's PPO, A2C and DQN on MinAtar (Young & Tian 2019), with the same network and budget.

Every algorithm learns from the channel-first float view of MinAtar's boolean frames
(:class:`sb3_acer.envs.minatar.MinAtarObservation`) with the MinAtar paper's network,
:class:`sb3_acer.common.policies.MinAtarCNN` (a 3x3 convolution with 16 channels, then 128 units), the heads
directly on its features (``net_arch=[]``), for the same number of env steps, with the games' defaults
(``MinAtar/<Game>-v1``: minimal action set, sticky actions with probability 0.1, difficulty ramping).
Runs go one after the other in one process with ``torch.set_num_threads(1)`` (``--jobs N``: N processes,
whose steps/s then share the machine). For each (game, algorithm, seed) the script records:

* the mean return of the last 100 training episodes (``Monitor``; the final return of the issue's table);
* a deterministic evaluation of the final policy (``--eval-episodes`` on a separately seeded env, each
  episode cut at ``EVAL_STEP_LIMIT`` steps in case a greedy policy never loses);
* the learning curve: the mean return of the last 100 training episodes at (about) 100 evenly spaced steps,
  with the training wall-clock there;
* with ``--eval-every N``, a deterministic evaluation of five episodes every N env steps, with the
  training wall-clock there (the evaluations' own time is left out of every clock);
* env steps per second of training, and the machine.

The peers' settings (:data:`PEERS`) are rl-baselines3-zoo's Atari settings for PPO and A2C and the MinAtar
paper's DQN, adapted to MinAtar and the budget as their comments say. ACER's (:data:`ACER_PRESETS`) are
the candidate MinAtar presets, in ``acer.yml``'s keys; ``--set key=value`` overrides them (for tuning).

Usage::

    python -m benchmarks.minatar_games --games Breakout SpaceInvaders --seeds 10 11 12 --timesteps 1000000 \\
        --run-dir benchmarks/results/minatar_1m_runs --out benchmarks/results/minatar_1m.json
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3 import A2C, DQN, PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from stable_baselines3.common.vec_env import VecEnv

from benchmarks.common import (
    Job,
    add_eval_every_option,
    add_jobs_option,
    add_out_option,
    add_overrides_option,
    add_run_dir_options,
    check_overrides,
    commit_at_start,
    jobs_to_run,
    kept_runs,
    machine_description,
    markdown_table,
    mean_std,
    parse_overrides,
    run_jobs,
    run_or_load,
    script_parser,
    write_results,
)
from sb3_acer import ACER
from sb3_acer.common.policies import MinAtarCNN
from sb3_acer.envs.minatar import MINATAR_GAMES, make_minatar_env, minatar_id

#: Every algorithm's network: the paper's CNN, the policy/value/Q heads directly on its 128 features.
NETWORK: dict[str, Any] = dict(features_extractor_class=MinAtarCNN, net_arch=[])

#: A greedy policy may never lose (Breakout's bricks come back): evaluation episodes end here.
EVAL_STEP_LIMIT = 10_000

#: Training episodes the final return and each point of the learning curve average over.
WINDOW = 100


def linear(initial: float) -> Callable[[float], float]:
    """SB3 schedule from ``initial`` down to 0 (the zoo's ``lin_<initial>``)."""
    return lambda progress_remaining: progress_remaining * initial


# Candidate ACER presets (acer.yml's keys). The single-seed runs at 500k steps (ACER's defaults:
# n_steps 20, 7e-4) found that the default linear decay of the step to 0 costs most of the return
# (SpaceInvaders 14.1 -> 30.7 with a constant step) and that more replay pays (replay_ratio 8: 52.0, twice
# PPO's and A2C's). So: a constant step and replay ratio 8, otherwise the defaults (ent_coef 0.01 and the
# trust region's delta 1 suit MinAtar's rewards, which are 0 or 1 per step like clipped Atari rewards).
# 16 envs as A2C's zoo settings; the replay memory holds the last 16 x 5000 = 80k steps (float32 frames:
# 137 MB for Breakout, 339 MB for Seaquest). SpaceInvaders, Breakout and Asterix take these settings.
ACER_DEFAULT: dict[str, Any] = dict(
    n_envs=16,
    policy="CnnPolicy",
    policy_kwargs="dict(features_extractor_class=MinAtarCNN, net_arch=[])",
    n_steps=20,
    learning_rate=7e-4,
    lr_schedule="constant",
    replay_ratio=8,
    buffer_size=5000,
    replay_start=1000,
    ent_coef=0.01,
)
# Freeway and Seaquest, where ACER's training return trailed PPO's at 1M steps with these settings, were tuned
# further on seed 0 at 1M steps (results/tuning/minatar_tuning_1m_seed0/): their rewards are sparse,
# and the entropy bonus of 0.01 outweighed the policy gradient for a long time. A smaller one starts the
# learning sooner: Freeway 28.4 (ent_coef 0.01), 32.4 (0.001), 35.8 (0.003); Seaquest 1.3 (0.01), 2.2 (0.001).
ACER_PRESETS: dict[str, dict[str, Any]] = {game: dict(ACER_DEFAULT) for game in MINATAR_GAMES}
ACER_PRESETS["Freeway"]["ent_coef"] = 0.003
ACER_PRESETS["Seaquest"]["ent_coef"] = 0.001

# The peers, each as (n_envs, constructor keyword arguments); the network (NETWORK) is added to each.
PEERS: dict[str, tuple[int, dict[str, Any]]] = {
    # rl-baselines3-zoo hyperparams/ppo.yml, atari: 8 envs x 128 steps, 4 epochs of minibatches of 256,
    # step 2.5e-4 and clip range 0.1 both decaying linearly to 0, ent_coef 0.01, vf_coef 0.5. Unchanged:
    # the zoo's budget is 10M Atari steps, and PPO on MinAtar is commonly run with these settings.
    "PPO": (
        8,
        dict(
            n_steps=128,
            n_epochs=4,
            batch_size=256,
            learning_rate=linear(2.5e-4),
            clip_range=linear(0.1),
            vf_coef=0.5,
            ent_coef=0.01,
        ),
    ),
    # rl-baselines3-zoo hyperparams/a2c.yml, atari: 16 envs x 5 steps, ent_coef 0.01, vf_coef 0.25,
    # RMSprop as TensorFlow's (eps 1e-5), SB3's constant step 7e-4.
    "A2C": (
        16,
        dict(
            ent_coef=0.01,
            vf_coef=0.25,
            policy_kwargs=dict(optimizer_class=RMSpropTFLike, optimizer_kwargs=dict(eps=1e-5)),
        ),
    ),
    # The MinAtar paper's DQN (examples/dqn.py in kenjyoung/MinAtar): one env, an update of a batch of 32
    # after every step, replay memory of 100k, updates from 5000 steps on, target network copied every 1000
    # steps, epsilon from 1 to 0.1 over the first 100k steps, Huber loss (SB3's), gamma 0.99, centred RMSprop
    # (step 2.5e-4, decay 0.95, eps 0.01). Scaled to the budget: epsilon decays over the first 10% of the
    # run (the paper's 100k steps at 1M; the paper ran 5M, 2%). SB3 clips the gradient's norm at 10 (the
    # paper does not clip). The frames are stored once (optimize_memory_usage; MinAtar never truncates an
    # episode, so no timeout handling is lost). One change: an update every 4 env steps (train_freq 4, the
    # Nature DQN's and the zoo's Atari cadence) instead of every step. At one update per step SB3's DQN ran
    # at about 100 env steps/s here, 3 hours per 1M-step run, 45 hours for the 15 runs; the paper's
    # every-step DQN at 5M frames is quoted beside the table as the anchor instead.
    "DQN": (
        1,
        dict(
            buffer_size=100_000,
            learning_starts=5000,
            batch_size=32,
            train_freq=4,
            gradient_steps=1,
            target_update_interval=1000,
            exploration_fraction=0.1,
            exploration_initial_eps=1.0,
            exploration_final_eps=0.1,
            gamma=0.99,
            learning_rate=2.5e-4,
            optimize_memory_usage=True,
            replay_buffer_kwargs=dict(handle_timeout_termination=False),
            policy_kwargs=dict(
                optimizer_class=th.optim.RMSprop,
                optimizer_kwargs=dict(alpha=0.95, eps=0.01, centered=True),
            ),
        ),
    ),
}

ALGOS = ("ACER", "PPO", "A2C", "DQN")


@dataclass
class RunResult:
    algo: str
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
    curve_steps: list[int] = field(default_factory=list)
    curve_returns: list[float] = field(default_factory=list)
    curve_seconds: list[float] = field(default_factory=list)  # training wall-clock at each curve point
    # --eval-every: the deterministic evaluations during training, with the training wall-clock at each
    eval_curve_steps: list[int] = field(default_factory=list)
    eval_curve_returns: list[float] = field(default_factory=list)
    eval_curve_seconds: list[float] = field(default_factory=list)


class CurveRecorder(BaseCallback):
    """Records the mean return of the last ``window`` training episodes (``Monitor``) and the training
    wall-clock every ``every`` env steps, and the number of episodes."""

    def __init__(self, every: int, window: int = WINDOW) -> None:
        super().__init__()
        self.every = max(1, every)
        self.returns: deque[float] = deque(maxlen=window)
        self.n_episodes = 0
        self.steps: list[int] = []
        self.means: list[float] = []
        self.seconds: list[float] = []
        self._start = 0.0
        #: Seconds of evaluations during training, left out of :meth:`elapsed`.
        self.paused = 0.0

    def _on_training_start(self) -> None:
        self._start = time.perf_counter()

    def elapsed(self) -> float:
        """Training wall-clock so far, without the evaluations made during training."""
        return time.perf_counter() - self._start - self.paused

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            if "episode" in info:
                self.returns.append(float(info["episode"]["r"]))
                self.n_episodes += 1
        if self.returns and (not self.steps or self.num_timesteps - self.steps[-1] >= self.every):
            self.steps.append(self.num_timesteps)
            self.means.append(float(np.mean(self.returns)))
            self.seconds.append(self.elapsed())
        return True

    def final(self) -> float | None:
        return float(np.mean(self.returns)) if self.returns else None


#: Episodes of each evaluation during training (``--eval-every``).
CURVE_EPISODES = 5


class EvalCurve(BaseCallback):
    """Every ``every`` env steps, ``evaluate(model)`` (a deterministic mean return) with the training
    wall-clock of ``clock`` there; the evaluation's own time is left out of ``clock``'s."""

    def __init__(self, every: int, evaluate: Callable[[BaseAlgorithm], float], clock: CurveRecorder) -> None:
        super().__init__()
        self.every = every
        self.evaluate = evaluate
        self.clock = clock
        self.steps: list[int] = []
        self.returns: list[float] = []
        self.seconds: list[float] = []

    def _on_step(self) -> bool:
        if self.num_timesteps >= (len(self.steps) + 1) * self.every:
            start = time.perf_counter()
            self.returns.append(self.evaluate(self.model))
            self.clock.paused += time.perf_counter() - start
            self.steps.append(self.num_timesteps)
            self.seconds.append(self.clock.elapsed())
        return True


def callbacks(
    timesteps: int, eval_every: int, evaluate: Callable[[BaseAlgorithm], float]
) -> tuple[CurveRecorder, EvalCurve | None]:
    """The learning curve's recorder, and the evaluations during training where ``eval_every`` asks."""
    recorder = CurveRecorder(every=timesteps // 100)
    return recorder, EvalCurve(eval_every, evaluate, recorder) if eval_every else None


def curve_fields(recorder: CurveRecorder, evaluations: EvalCurve | None) -> dict[str, list[Any]]:
    """The :class:`RunResult` curves of a run."""
    return dict(
        curve_steps=recorder.steps,
        curve_returns=recorder.means,
        curve_seconds=recorder.seconds,
        eval_curve_steps=[] if evaluations is None else evaluations.steps,
        eval_curve_returns=[] if evaluations is None else evaluations.returns,
        eval_curve_seconds=[] if evaluations is None else evaluations.seconds,
    )


def acer_kwargs(preset: dict[str, Any]) -> tuple[int, str, dict[str, Any]]:
    """``(n_envs, policy, constructor keyword arguments)`` of an :data:`ACER_PRESETS` entry (its
    ``policy_kwargs`` string read as acer.yml would give it, with MinAtarCNN by name)."""
    kwargs = dict(preset)
    n_envs, policy = kwargs.pop("n_envs"), kwargs.pop("policy")
    kwargs.pop("policy_kwargs")  # the string documents the preset; the classes are NETWORK's
    kwargs["policy_kwargs"] = dict(NETWORK)
    return n_envs, policy, kwargs


def make_model(algo: str, game: str, seed: int, overrides: dict[str, Any]) -> tuple[BaseAlgorithm, VecEnv]:
    env_kwargs = dict(env_id=minatar_id(game))
    if algo == "ACER":
        n_envs, policy, kwargs = acer_kwargs({**ACER_PRESETS[game], **overrides})
        env = make_vec_env(make_minatar_env, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs)
        return ACER(policy, env, seed=seed, **kwargs), env
    n_envs, peer = PEERS[algo]
    kwargs = dict(peer)
    kwargs["policy_kwargs"] = {**NETWORK, **kwargs.get("policy_kwargs", {})}
    env = make_vec_env(make_minatar_env, n_envs=n_envs, seed=seed, env_kwargs=env_kwargs)
    cls = {"PPO": PPO, "A2C": A2C, "DQN": DQN}[algo]
    return cls("CnnPolicy", env, seed=seed, **kwargs), env


def describe(algo: str, game: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The settings of a run as JSON can hold them (schedules and classes by name)."""
    if algo == "ACER":
        return {**ACER_PRESETS[game], **overrides}
    n_envs, kwargs = PEERS[algo]

    def text(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: text(item) for key, item in value.items()}
        if isinstance(value, type):
            return value.__qualname__
        if callable(value):
            return f"linear from {value(1.0)} to 0"
        return value

    return {"n_envs": n_envs, "policy": "CnnPolicy", **text(kwargs), "network": "MinAtarCNN, net_arch=[]"}


def greedy_env(game: str, seed: int) -> VecEnv:
    """An env for deterministic evaluations, its episodes cut at ``EVAL_STEP_LIMIT`` steps."""
    env_kwargs = dict(env_id=minatar_id(game), max_episode_steps=EVAL_STEP_LIMIT)
    return make_vec_env(make_minatar_env, n_envs=1, seed=seed, env_kwargs=env_kwargs)


def greedy_return(model: BaseAlgorithm, env: VecEnv, episodes: int) -> tuple[float, float]:
    mean, std = evaluate_policy(model, env, n_eval_episodes=episodes, deterministic=True)
    return float(mean), float(std)  # type: ignore[arg-type]


def run_one(
    algo: str,
    game: str,
    seed: int,
    timesteps: int,
    eval_episodes: int,
    overrides: dict[str, Any],
    eval_every: int = 0,
) -> RunResult:
    th.set_num_threads(1)
    model, env = make_model(algo, game, seed, overrides if algo == "ACER" else {})
    during = greedy_env(game, seed + 20_000)
    recorder, evaluations = callbacks(
        timesteps, eval_every, lambda m: greedy_return(m, during, CURVE_EPISODES)[0]
    )
    start = time.perf_counter()
    model.learn(timesteps, callback=[recorder] if evaluations is None else [recorder, evaluations])
    train_seconds = time.perf_counter() - start - recorder.paused
    env.close()
    during.close()
    eval_env = greedy_env(game, seed + 10_000)
    mean, std = greedy_return(model, eval_env, eval_episodes)
    eval_env.close()
    return RunResult(
        algo=algo,
        env_id=minatar_id(game),
        seed=seed,
        n_timesteps=model.num_timesteps,
        n_episodes=recorder.n_episodes,
        final_train_return=recorder.final(),
        final_eval_mean=mean,
        final_eval_std=std,
        steps_per_second=model.num_timesteps / train_seconds,
        train_seconds=train_seconds,
        settings=describe(algo, game, overrides),
        **curve_fields(recorder, evaluations),
    )


def summarise(results: list[RunResult]) -> str:
    """A markdown table: per game and algorithm, the mean (± std over seeds) of the final training return
    and of the evaluation, the median steps/s and its ratio to ACER's in the same run."""
    header = [
        "game",
        "algo",
        "seeds",
        "final return, last 100 training episodes",
        "deterministic eval",
        "env steps/s",
        "steps/s / ACER's",
    ]
    rows = []
    for env_id in sorted({r.env_id for r in results}):
        speed = {
            algo: statistics.median(
                [r.steps_per_second for r in results if (r.env_id, r.algo) == (env_id, algo)]
            )
            for algo in {r.algo for r in results if r.env_id == env_id}
        }
        for algo in [a for a in ALGOS if a in speed]:
            runs = [r for r in results if (r.env_id, r.algo) == (env_id, algo)]
            finals = [r.final_train_return for r in runs if r.final_train_return is not None]
            ratio = f"{speed[algo] / speed['ACER']:.2f}" if "ACER" in speed else "-"
            final = mean_std(finals) if finals else "-"
            evaluation = mean_std([r.final_eval_mean for r in runs])
            rows.append([env_id, algo, len(runs), final, evaluation, f"{speed[algo]:,.0f}", ratio])
    return markdown_table(header, rows)


def build_parser() -> argparse.ArgumentParser:
    """This script's command line."""
    parser = script_parser(__doc__)
    parser.add_argument("--games", nargs="+", choices=MINATAR_GAMES, default=list(MINATAR_GAMES))
    parser.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--timesteps", type=int, default=1_000_000, help="env steps of every run")
    parser.add_argument("--eval-episodes", type=int, default=20)
    add_eval_every_option(parser)
    add_jobs_option(parser)
    add_overrides_option(parser, "replay_ratio=4")
    add_out_option(parser)
    add_run_dir_options(parser, "game")
    return parser


def run_job(job: Job, run_dir: Path | None = None) -> RunResult:
    """``job``'s result, kept in (or taken from) ``run_dir`` when given."""
    return run_or_load(job, run_dir, lambda: run_one(*job), RunResult, describe)


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    commit_at_start()  # stops here, before any run, where no commit can be recorded
    overrides = parse_overrides(args.overrides)
    check_overrides(overrides, set(ACER_DEFAULT) | set(inspect.signature(ACER).parameters))
    # Seed by seed, the algorithms one after the other: whatever else the machine runs meanwhile slows them
    # alike, and a stopped benchmark leaves whole seeds.
    jobs: list[Job] = [
        (algo, game, seed, args.timesteps, args.eval_episodes, overrides, args.eval_every)
        for game in args.games
        for seed in args.seeds
        for algo in args.algos
    ]
    jobs = jobs_to_run(jobs, args.run_dir, args.collect)
    results = run_jobs(run_job, jobs, args.run_dir, args.jobs)
    print(summarise(results))
    if args.out is not None:
        write_results(
            args.out,
            script="minatar_games.py",
            args=argv or sys.argv[1:],
            machine=machine_description(threads=1, jobs=args.jobs),
            results=results,
            acer_overrides=overrides,
            window=WINDOW,
            eval_step_limit=EVAL_STEP_LIMIT,
            kept_runs=kept_runs(args.run_dir, jobs) if args.run_dir is not None else None,
        )


if __name__ == "__main__":
    main()

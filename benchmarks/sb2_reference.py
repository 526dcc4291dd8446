"""Train and evaluate Stable Baselines (v2)'s own ACER with the rl-baselines-zoo configuration, over seeds.

The SB2 zoo's table gives one trained agent per environment (LunarLander-v2: 185.2, one agent, seed 0).
This script measures what that configuration scores *over seeds* with SB2 itself, so that the presets of
this library (``benchmarks/presets.py``) can be compared with SB2 like for like: the same statistic (mean and
standard deviation over seeds of each seed's 100-episode evaluation), the same evaluation protocol (a
separately seeded env, sampled and greedy actions), the same training-curve summary.

It runs under its own Python 3.7 environment with TensorFlow 1.15 and stable-baselines 2.10.2, not under this
package's virtualenv; docs/results.md ("Against SB2's own ACER") gives the set-up commands. The training
set-up follows the zoo's ``train.py`` of 2018: ``DummyVecEnv`` of ``n_envs`` envs, env ``rank`` seeded with
``seed + rank`` and wrapped in ``Monitor``, the model built from ``hyperparams/acer.yml`` with everything else
left at SB2's defaults. Time limits end episodes as terminal states, as SB2 did.

Usage (from the repository root, with the SB2 environment's interpreter)::

    python -m benchmarks.sb2_reference --env LunarLander-v2 --seeds 0 1 2 3 --jobs 2 \\
        --out benchmarks/results/sb2_reference_lunarlander.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
import warnings

from benchmarks.provenance import command_line, source_commit

# rl-baselines-zoo hyperparams/acer.yml (2018), the entries that are not SB2 defaults; n_envs and n_timesteps
# are the zoo's too. The stored agents' pickles confirm lr_schedule "linear" (SB2's default).
# ``normalize: true`` there means SB2's ``VecNormalize`` with its defaults (observations and rewards) in
# training, and the zoo's enjoy.py evaluated with the saved observation statistics, frozen, and raw rewards.
ZOO = {
    "CartPole-v1": {
        "n_envs": 8,
        "n_timesteps": 500_000,
        "normalize": False,
        "hyperparams": {"ent_coef": 0.0},
    },
    "Acrobot-v1": {"n_envs": 16, "n_timesteps": 500_000, "normalize": True, "hyperparams": {"ent_coef": 0.0}},
    "MountainCar-v0": {
        "n_envs": 16,
        "n_timesteps": 1_000_000,
        "normalize": True,
        "hyperparams": {"ent_coef": 0.0},
    },
    "LunarLander-v2": {
        "n_envs": 16,
        "n_timesteps": 1_000_000,
        "normalize": False,
        "hyperparams": {"gamma": 0.999},
    },
}


def run_one(job: tuple[str, int, int, int]) -> dict:
    env_id, seed, n_timesteps, eval_episodes = job
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    warnings.filterwarnings("ignore")
    import gym
    import numpy as np
    from stable_baselines import ACER
    from stable_baselines.bench import Monitor
    from stable_baselines.common import set_global_seeds
    from stable_baselines.common.vec_env import DummyVecEnv, VecNormalize

    config = ZOO[env_id]
    n_envs = int(config["n_envs"])

    def make_env(rank: int):
        def _init():
            set_global_seeds(seed + rank)
            env = gym.make(env_id)
            env.seed(seed + rank)
            return Monitor(env, None, allow_early_resets=True)

        return _init

    set_global_seeds(seed)
    monitored = DummyVecEnv([make_env(rank) for rank in range(n_envs)])
    env = VecNormalize(monitored) if config["normalize"] else monitored
    model = ACER("MlpPolicy", env, seed=seed, n_cpu_tf_sess=1, verbose=0, **config["hyperparams"])
    start = time.perf_counter()
    model.learn(n_timesteps)
    train_seconds = time.perf_counter() - start

    # The envs step in lockstep: an episode ending after k of its env's steps ends at global step ~k * n_envs.
    episodes = []
    for monitor in monitored.envs:
        ends = np.cumsum(monitor.get_episode_lengths()) * n_envs
        episodes.extend(zip(ends.tolist(), monitor.get_episode_rewards()))  # noqa: B905 (no strict= in 3.7)
    episodes.sort()
    returns_in_order = [r for _, r in episodes]
    curve = []
    for tenth in range(1, 11):
        lo, hi = (tenth - 1) * n_timesteps / 10, tenth * n_timesteps / 10
        window = [r for step, r in episodes if lo < step <= hi]
        curve.append((int(hi), float(np.mean(window)) if window else float("nan")))

    time_limit = gym.spec(env_id).max_episode_steps
    evals = {}
    for deterministic in (False, True):
        eval_env = gym.make(env_id)
        eval_env.seed(seed + 10_000)
        returns, lengths = [], []
        for _ in range(eval_episodes):
            obs, done, total, length = eval_env.reset(), False, 0.0, 0
            while not done:
                seen = env.normalize_obs(obs) if config["normalize"] else obs
                action, _ = model.predict(seen, deterministic=deterministic)
                obs, reward, done, _ = eval_env.step(action)
                total += float(reward)
                length += 1
            returns.append(total)
            lengths.append(length)
        evals[deterministic] = (
            float(np.mean(returns)),
            float(np.std(returns)),
            float(np.mean(lengths)),
            float(np.mean([n == time_limit for n in lengths])),
        )
        eval_env.close()
    env.close()
    return {
        "env_id": env_id,
        "seed": seed,
        "n_timesteps": int(model.num_timesteps),
        "hyperparams": config["hyperparams"],
        "normalize": config["normalize"],
        "eval_stochastic_mean": evals[False][0],
        "eval_stochastic_std": evals[False][1],
        "eval_deterministic_mean": evals[True][0],
        "eval_deterministic_std": evals[True][1],
        "eval_stochastic_mean_length": evals[False][2],
        "eval_deterministic_mean_length": evals[True][2],
        "eval_stochastic_timeout_frac": evals[False][3],
        "eval_deterministic_timeout_frac": evals[True][3],
        "last100_train_mean": float(np.mean(returns_in_order[-100:])),
        "learning_curve": curve,
        "train_seconds": train_seconds,
        "steps_per_second": model.num_timesteps / train_seconds,
    }


# benchmarks/presets.py's summary, restated because that module imports torch and SB3, which SB2's Python 3.7
# environment does not have.
def _mean_std(values: list[float]) -> str:
    return f"{statistics.mean(values):.1f} ± {statistics.pstdev(values):.1f}"


def _without_out(argv: list[str]) -> list[str]:
    """The command line without ``--out PATH``: where a result was written is not part of how it was made."""
    kept, skip = [], False
    for arg in argv:
        if skip or arg == "--out" or arg.startswith("--out="):
            skip = arg == "--out"
            continue
        kept.append(arg)
    return kept


def build_parser() -> argparse.ArgumentParser:
    """This script's command line (tests/docs/test_code_blocks.py parses the documented ones with it)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="LunarLander-v2", choices=sorted(ZOO))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--jobs", type=int, default=1, help="seeds trained in parallel processes")
    parser.add_argument("--timesteps", type=int, default=None, help="default: the zoo's n_timesteps")
    parser.add_argument("--eval-episodes", type=int, default=100)
    parser.add_argument("--out", type=str, default=None)
    return parser


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    commit = source_commit()  # stops here, before any run, where no commit can be recorded
    n_timesteps = args.timesteps or int(ZOO[args.env]["n_timesteps"])
    jobs = [(args.env, seed, n_timesteps, args.eval_episodes) for seed in args.seeds]
    with multiprocessing.get_context("spawn").Pool(args.jobs, maxtasksperchild=1) as pool:
        results = pool.map(run_one, jobs, chunksize=1)
    import gym
    import stable_baselines
    import tensorflow as tf

    for name in ("eval_stochastic_mean", "eval_deterministic_mean", "last100_train_mean"):
        print(f"{name}: {_mean_std([r[name] for r in results])}")
    for r in results:
        print("seed {seed}: {eval_stochastic_mean:.1f} (greedy {eval_deterministic_mean:.1f})".format(**r))
    if args.out:
        meta = {
            "command": command_line("sb2_reference", _without_out(argv)),
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
            "commit": commit,
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, TF session threads 1",
            "python": platform.python_version(),
            "stable_baselines": stable_baselines.__version__,
            "tensorflow": tf.__version__,
            "gym": gym.__version__,
        }
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()

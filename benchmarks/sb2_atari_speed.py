"""Atari training speed, SB2's ACER against sb3-acer, each with its own ``run_atari`` set-up, on one machine.

The same script runs under both libraries' environments (``--library sb2`` under SB2's Python 3.7
environment, see docs/results.md "Against SB2's own ACER"; ``--library sb3-acer`` under this
package's), so both sides are timed by the same code:

* SB2 (``stable_baselines/acer/run_atari.py``): ``make_atari_env`` (``SubprocVecEnv`` of ``--n-envs`` games
  with DeepMind's wrappers) and ``VecFrameStack(4)``, ``ACER(CnnPolicy, lr_schedule="constant",
  buffer_size=5000)``, SB2's other defaults;
* sb3-acer (``python -m sb3_acer.run_atari``): ``make_atari_vec_env`` with ``--sampler`` (``ale-vector``,
  its default, or ``wrappers``: SB3's Atari wrappers), the same ACER settings (this library's defaults are
  SB2's).

Only ``learn`` is timed (the env and the model are built before). Threads are left at each library's
default (TensorFlow's session and torch use every core), as a user of either ``run_atari`` gets them. The
process's resident memory is recorded before and after ``learn``: run long enough to fill the replay memory
(5000 steps per env: 80,000 steps with 16 envs), the growth is mostly the replay memory.

Usage::

    sb2/bin/python -m benchmarks.sb2_atari_speed --library sb2 --out sb2.json
    python -m benchmarks.sb2_atari_speed --library sb3-acer --sampler ale-vector --out sb3acer.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings

from benchmarks.provenance import command_line, source_commit


def build_model(library: str, env_id: str, n_envs: int, seed: int, sampler: str):
    """The env and the model of ``library``'s ``run_atari``, with SB2's Atari settings."""
    if library == "sb2":
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        warnings.filterwarnings("ignore")
        from stable_baselines import ACER
        from stable_baselines.common.cmd_util import make_atari_env
        from stable_baselines.common.policies import CnnPolicy
        from stable_baselines.common.vec_env import VecFrameStack

        env = VecFrameStack(make_atari_env(env_id, n_envs, seed), 4)
        return env, ACER(CnnPolicy, env, lr_schedule="constant", buffer_size=5000, seed=seed)
    from sb3_acer import ACER
    from sb3_acer.envs.atari import make_atari_vec_env

    env = make_atari_vec_env(env_id, n_envs, seed=seed, sampler=sampler)
    return env, ACER("CnnPolicy", env, lr_schedule="constant", buffer_size=5000, seed=seed)


def resident_mb() -> float:
    """This process's resident memory now, in MB (Linux)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def versions(library: str) -> dict[str, str]:
    if library == "sb2":
        import stable_baselines
        import tensorflow as tf

        return {"stable_baselines": stable_baselines.__version__, "tensorflow": tf.__version__}
    import torch

    import sb3_acer

    return {"sb3_acer": sb3_acer.__version__, "torch": torch.__version__}


def build_parser() -> argparse.ArgumentParser:
    """This script's command line (tests/docs/test_code_blocks.py parses the documented ones with it)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", choices=["sb2", "sb3-acer"], required=True)
    parser.add_argument("--env", default="PongNoFrameskip-v4")
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--timesteps", type=int, default=48_000, help="agent steps timed (all envs)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sampler", choices=["ale-vector", "wrappers"], default="ale-vector")
    parser.add_argument("--out", default=None)
    return parser


def main(argv: list[str] | None = None) -> dict:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    commit = source_commit()  # stops here, before the run, where no commit can be recorded
    env, model = build_model(args.library, args.env, args.n_envs, args.seed, args.sampler)
    before = resident_mb()
    start = time.perf_counter()
    model.learn(args.timesteps)
    seconds = time.perf_counter() - start
    after = resident_mb()
    env.close()
    result = {
        "library": args.library,
        "sampler": "SubprocVecEnv + VecFrameStack" if args.library == "sb2" else args.sampler,
        "env_id": args.env,
        "n_envs": args.n_envs,
        "timesteps": int(model.num_timesteps),
        "train_seconds": seconds,
        "steps_per_second": model.num_timesteps / seconds,
        # The learner process only: SB2's games run in subprocesses, sb3-acer's in this process (threads).
        "resident_mb_before_learn": before,
        "resident_mb_after_learn": after,
        "command": command_line("sb2_atari_speed", argv),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "commit": commit,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "python": platform.python_version(),
        **versions(args.library),
    }
    print(json.dumps(result))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main()

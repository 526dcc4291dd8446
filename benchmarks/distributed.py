"""The synchronous loop against Ray actors feeding one learner, side by side in one run.

Measured, in this order:

* for each of ``--envs`` (presets: CartPole-v1, LunarLander-v3), the preset trained by the synchronous loop
  and by 1 actor + the learner (the same settings: the actor steps the preset's envs while the learner
  updates on the previous segment), each until the mean return of the last 20 training episodes reaches
  the threshold (CartPole-v1 475, LunarLander-v3 200), ``--steps`` or ``--seconds``: agent steps/s, steps
  and wall-clock seconds to the threshold, and for the actors the learner's idle fraction and the policy
  lag;
* the learner's cost per received segment: getting a segment from Ray's object store and copying it out
  (it arrives read-only: "receive", what actors add to the synchronous loop's work), and storing it in the
  replay memory ("store", which the synchronous loop does too), against one update on a segment, for each
  env of ``--envs`` and for ``--atari`` (if given); with the bytes of one segment in the object store;
* with ``--atari GAME``: Atari throughput for each of ``--actor-counts`` (0: the synchronous loop), each
  trained for ``--seconds`` with ``CnnPolicy``, ``--n-envs`` games per actor (and in the synchronous loop),
  replay from the second segment on; agent steps/s over the last two thirds of the time, as the learner
  waits less once every actor runs.

Usage::

    python -m benchmarks.distributed --envs CartPole-v1 LunarLander-v3 --out results.json
    python -m benchmarks.distributed --envs --atari PongNoFrameskip-v4 --actor-counts 0 1 2 4 8 14 \\
        --seconds 25 --device cuda --out pong.json

prints a markdown table and writes the JSON of all numbers to ``--out``. A local Ray cluster is started
(``--num-cpus`` CPUs; the default: all of them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import Logger

from benchmarks.common import ThresholdTracker, command_line, commit_at_start, script_parser
from sb3_acer import ACER, CnnPolicy
from sb3_acer.cli.actors import TrainEnvFactory
from sb3_acer.cli.environments import EnvInfo, make_env, resolve_env
from sb3_acer.common.rollout import collect_segment
from sb3_acer.distributed import RayActors
from sb3_acer.distributed.actors import SegmentMessage
from sb3_acer.distributed.pool import writable
from sb3_acer.envs.atari import make_atari_vec_env
from sb3_acer.presets import load_preset

THRESHOLDS = {"CartPole-v1": 475.0, "LunarLander-v3": 200.0}


class StopAfter(BaseCallback):
    """Stops training after ``seconds``; records ``(seconds, steps)`` at the end of every segment."""

    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds
        self.points: list[tuple[float, int]] = []
        self.start = 0.0

    def _on_training_start(self) -> None:
        self.start = time.perf_counter()

    def _on_step(self) -> bool:
        return time.perf_counter() - self.start < self.seconds

    def _on_rollout_end(self) -> None:
        self.points.append((time.perf_counter() - self.start, self.num_timesteps))

    def steps_per_s(self, skip: float = 0.0) -> float:
        """Steps per second after the first ``skip`` fraction of the time (all of it with 0)."""
        points = [(0.0, 0), *self.points]
        first = next((p for p in points if p[0] >= skip * points[-1][0]), points[0])
        last = points[-1]
        return (last[1] - first[1]) / max(last[0] - first[0], 1e-9)


def classic_run(env_id: str, n_actors: int, steps: int, seconds: float, seed: int) -> dict[str, Any]:
    """The preset of ``env_id`` by the synchronous loop (``n_actors=0``) or by actors."""
    preset = load_preset(env_id)
    info = resolve_env(env_id)
    env = make_env(info, preset.n_envs, seed, wrappers=preset.env_wrapper, env_kwargs=preset.env_kwargs)
    model = ACER(preset.policy, env, seed=seed, **preset.hyperparameters)
    tracker = ThresholdTracker(THRESHOLDS[env_id], window=20, stop=True)
    timer = StopAfter(seconds)
    actors = None
    if n_actors:
        factory = TrainEnvFactory(info, preset.env_wrapper, preset.env_kwargs)
        actors = RayActors(factory, n_actors=n_actors)
    start = time.perf_counter()
    model.learn(min(steps, preset.n_timesteps), callback=[tracker, timer], actors=actors)
    elapsed = time.perf_counter() - start
    env.close()
    return {
        "env": env_id,
        "loop": f"{n_actors} actor(s) + learner" if n_actors else "synchronous",
        "n_envs": preset.n_envs,
        "steps": model.num_timesteps,
        "seconds": elapsed,
        "steps_per_s": timer.steps_per_s(),
        "steps_to_threshold": tracker.steps_to_threshold,
        "seconds_to_threshold": tracker.seconds_to_threshold,
        "actors": None if actors is None else actors.stats,
    }


def _message(model: ACER, n_steps: int) -> SegmentMessage:
    """One segment collected by ``model``'s policy in its env, as an actor sends it."""
    env = model.get_env()
    assert env is not None
    obs = np.asarray(env.reset())
    result = collect_segment(
        env=env,
        policy=model.policy,
        n_steps=n_steps,
        last_obs=obs,
        last_episode_starts=np.ones(env.num_envs, dtype=bool),
        on_step=lambda record: True,
    )
    assert result.segment is not None
    dones = np.zeros((n_steps, env.num_envs), dtype=bool)
    infos = [[{} for _ in range(env.num_envs)] for _ in range(n_steps)]
    return SegmentMessage(result.segment, 0, 0, dones, infos, 0.0)


def receive_cost(name: str, model: ACER, repeats: int) -> dict[str, Any]:
    """Seconds to get a segment out of the object store (deserialising it, copying it out: it arrives
    read-only) and to store it in the replay memory, against one update on it."""
    import ray

    message = _message(model, model.n_steps)
    ref = ray.put(message)
    buffer = model.replay_buffer
    assert buffer is not None
    model.set_logger(Logger(None, []))
    segment = writable(ray.get(ref)).segment
    model._gradient_step(segment, on_policy=False)  # warm-up (CUDA kernels, allocations)

    def seconds(work: Any) -> float:
        if model.device.type == "cuda":
            th.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(repeats):
            work()
        if model.device.type == "cuda":
            th.cuda.synchronize()
        return (time.perf_counter() - start) / repeats

    receive = seconds(lambda: writable(ray.get(ref)))
    store = seconds(lambda: buffer.put(segment))
    update = seconds(lambda: model._gradient_step(segment, on_policy=False))
    nbytes = sum(value.nbytes for value in vars(segment).values() if isinstance(value, np.ndarray))
    return {
        "env": name,
        "segment": f"{model.n_steps} steps x {model.n_envs} envs",
        "segment_bytes": int(nbytes),
        "bytes_per_step": nbytes / (model.n_steps * model.n_envs),
        "receive_ms": 1e3 * receive,
        "store_ms": 1e3 * store,
        "update_ms": 1e3 * update,
        "receive_and_store_per_update": (receive + store) / update,
        "receive_per_update": receive / update,
        "receive_and_store_per_segment_work": (receive + store) / ((1 + model.replay_ratio) * update),
    }


def classic_receive_cost(env_id: str, repeats: int) -> dict[str, Any]:
    preset = load_preset(env_id)
    info = resolve_env(env_id)
    env = make_env(info, preset.n_envs, 0, wrappers=preset.env_wrapper, env_kwargs=preset.env_kwargs)
    return receive_cost(env_id, ACER(preset.policy, env, seed=0, **preset.hyperparameters), repeats)


def atari_model(game: str, n_envs: int, device: str) -> ACER:
    """SB2's run_atari settings, with replay from the second segment on (every update after it replays)."""
    # The synchronous loop steps these games, with one emulator thread per core as run_atari does.
    env = make_atari_vec_env(game, n_envs, seed=0, sampler="ale-vector")
    return ACER(CnnPolicy, env, lr_schedule="constant", replay_start=20, device=device, seed=0)


def atari_run(game: str, n_actors: int, n_envs: int, seconds: float, device: str) -> dict[str, Any]:
    model = atari_model(game, n_envs, device)
    timer = StopAfter(seconds)
    actors = (
        RayActors(TrainEnvFactory(EnvInfo(game, atari=True), sampler="ale-vector"), n_actors=n_actors)
        if n_actors
        else None
    )
    model.learn(10**9, callback=timer, actors=actors, log_interval=None)
    model.get_env().close()  # type: ignore[union-attr]
    return {
        "env": game,
        "actors": n_actors,
        "loop": f"{n_actors} actor(s) + learner" if n_actors else "synchronous",
        "n_envs_per_actor": n_envs,
        "steps": model.num_timesteps,
        "seconds": timer.points[-1][0] if timer.points else 0.0,
        "steps_per_s": timer.steps_per_s(skip=1 / 3),
        "updates_per_s": model._n_updates / max(timer.points[-1][0], 1e-9) if timer.points else 0.0,
        "actor_stats": None if actors is None else actors.stats,
    }


def markdown(results: dict[str, Any]) -> str:
    lines = ["| env | loop | steps | steps/s | steps to threshold | seconds to threshold | learner idle |"]
    lines.append("|---|---|---|---|---|---|---|")
    for run in results["classic"]:
        idle = f"{run['actors']['actors/learner_idle']:.2f}" if run["actors"] else ""
        lines.append(
            f"| {run['env']} | {run['loop']} | {run['steps']:,} | {run['steps_per_s']:,.0f} | "
            f"{run['steps_to_threshold'] or 'not reached'} | "
            f"{'' if run['seconds_to_threshold'] is None else round(run['seconds_to_threshold'], 1)} | "
            f"{idle} |"
        )
    lines += [
        "",
        "| segment of | size | bytes/step | receive ms | store ms | update ms | (receive + store) / update |",
    ]
    lines.append("|---|---|---|---|---|---|---|")
    for cost in results["receive_cost"]:
        lines.append(
            f"| {cost['env']} | {cost['segment']} | {cost['bytes_per_step']:,.0f} | "
            f"{cost['receive_ms']:.2f} | {cost['store_ms']:.2f} | {cost['update_ms']:.2f} | "
            f"{cost['receive_and_store_per_update']:.3f} |"
        )
    if results["atari"]:
        lines += [
            "",
            "| game | loop | steps | agent steps/s | updates/s | learner idle |",
            "|---|---|---|---|---|---|",
        ]
        for run in results["atari"]:
            idle = f"{run['actor_stats']['actors/learner_idle']:.2f}" if run["actor_stats"] else ""
            lines.append(
                f"| {run['env']} | {run['loop']} | {run['steps']:,} | {run['steps_per_s']:,.0f} | "
                f"{run['updates_per_s']:,.1f} | {idle} |"
            )
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = script_parser(__doc__)
    parser.add_argument("--envs", nargs="*", default=list(THRESHOLDS), choices=list(THRESHOLDS))
    parser.add_argument("--steps", type=int, default=10**7, help="at most this many steps (and the preset's)")
    parser.add_argument("--seconds", type=float, default=600.0, help="at most this long, each run")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=20, help="of the receive-cost measurement")
    parser.add_argument(
        "--atari", metavar="GAME", help="also Atari throughput on GAME, e.g. PongNoFrameskip-v4"
    )
    parser.add_argument("--actor-counts", type=int, nargs="+", default=[0, 1], help="0: the synchronous loop")
    parser.add_argument("--n-envs", type=int, default=16, help="Atari games per actor (and synchronous)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--num-cpus", type=int, default=None, help="CPUs of the local Ray cluster")
    parser.add_argument("--out", type=Path)
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = build_parser().parse_args(argv)
    commit_at_start()  # stops here, before any run, where no commit can be recorded
    import ray

    # The actors' processes import this checkout's sb3_acer (the raylet passes them this environment).
    root = str(Path(__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    th.set_num_threads(1)
    results: dict[str, Any] = {
        "command": command_line("distributed.py", sys.argv[1:] if argv is None else argv),
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit_at_start(),
        "machine": f"{os.cpu_count()} CPUs, torch {th.__version__}, Python {platform.python_version()}, "
        f"ray {ray.__version__}" + (f", {th.cuda.get_device_name(0)}" if th.cuda.is_available() else ""),
        "load_average_before": list(os.getloadavg()),
        "classic": [],
        "receive_cost": [],
        "atari": [],
    }

    def add(kind: str, result: dict[str, Any]) -> None:
        # Written after every measurement, so that a run cut short by a time limit keeps what it measured.
        results[kind].append(result)
        print(json.dumps(result), flush=True)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))

    for env_id in args.envs:
        for n_actors in (0, 1):
            add("classic", classic_run(env_id, n_actors, args.steps, args.seconds, args.seed))
        add("receive_cost", classic_receive_cost(env_id, args.repeats))
    if args.atari:
        model = atari_model(args.atari, args.n_envs, args.device)
        add("receive_cost", receive_cost(args.atari, model, args.repeats))
        model.get_env().close()  # type: ignore[union-attr]
        del model
        for n_actors in args.actor_counts:
            add("atari", atari_run(args.atari, n_actors, args.n_envs, args.seconds, args.device))
    results["load_average_after"] = list(os.getloadavg())
    ray.shutdown()
    print(markdown(results))
    if args.out:
        args.out.write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()

"""Atari throughput side by side in one run: emulator ceiling, each sampler, ACER training, replay memory.

Measured, in this order, on one game:

* raw emulator: one ``ale_py.ALEInterface`` stepping random actions (frames/s on one core; the ceiling);
* each sampler alone (``ale-vector``: ale-py's C++ ``AtariVectorEnv``; ``wrappers``: SB3's Atari wrappers
  in a ``DummyVecEnv``) with ``--n-envs`` games and random actions, preprocessing and frame stacking
  included: agent steps/s and frames/s (4 frames a step);
* ACER training with ``CnnPolicy``, ``--n-envs`` games, ``n_steps=20``, ``replay_ratio=4`` for each sampler,
  with the frame-deduplicated replay memory; replay starts after the first segment so that every update
  after it replays (``replay_start=20``). One warm-up update is not timed. The time is split into stepping
  the environments, choosing actions (policy forward passes during the rollout) and learning;
* the peers, SB3's A2C, PPO and DQN with ``CnnPolicy`` and rl-baselines3-zoo's Atari hyperparameters
  (hyperparams/{a2c,ppo,dqn}.yml: A2C 16 envs x 5 steps with RMSpropTFLike; PPO 8 envs x 128 steps, 4 epochs
  of batches of 256; DQN one env, a gradient step every 4 steps on batches of 32), trained on the same
  sampler for the same number of agent steps after an untimed warm-up, and ACER's speed as a ratio of
  theirs. DQN starts learning after 1,000 steps here (the zoo: 100,000) so that the timed steps learn;
* replay memory per stored transition at SB2's Atari set-up (``buffer_size=5000``, T=20, 16 envs): frames
  stored once against SB2's layout (whole 4x84x84 stacks, kept by ``SegmentReplayBuffer``) and against
  the zoo DQN's replay buffer (100,000 transitions, observation and next observation stored).

Usage::

    python -m benchmarks.atari_throughput --sampler-steps 500 --train-steps 3200 --out results.json

prints a markdown table and the JSON of all numbers (also written to ``--out``).
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
from gymnasium import spaces
from stable_baselines3 import A2C, DQN, PPO
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.buffers import ReplayBuffer
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper
from stable_baselines3.common.vec_env.base_vec_env import VecEnvStepReturn

from benchmarks.common import command_line, commit_at_start, script_parser
from sb3_acer import ACER
from sb3_acer.common.buffers import FrameStackReplayBuffer, SegmentReplayBuffer, make_replay_buffer
from sb3_acer.envs import frame_stack_size
from sb3_acer.envs.atari import SAMPLERS, ale_game_name, make_atari_vec_env

FRAMES_PER_STEP = 4


class StepTimer(VecEnvWrapper):
    """Adds up the wall-clock time spent in the wrapped env's ``step``."""

    def __init__(self, venv: VecEnv) -> None:
        super().__init__(venv)
        self.seconds = 0.0

    def reset(self) -> Any:
        return self.venv.reset()

    def step_wait(self) -> VecEnvStepReturn:
        start = time.perf_counter()
        result = self.venv.step_wait()
        self.seconds += time.perf_counter() - start
        return result

    def step_async(self, actions: np.ndarray) -> None:
        start = time.perf_counter()
        self.venv.step_async(actions)
        self.seconds += time.perf_counter() - start


class RolloutTimer(BaseCallback):
    """Adds up the time between ``on_rollout_start`` and ``on_rollout_end`` (collecting a segment)."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0
        self._start = 0.0

    def _on_rollout_start(self) -> None:
        self._start = time.perf_counter()

    def _on_rollout_end(self) -> None:
        self.seconds += time.perf_counter() - self._start

    def _on_step(self) -> bool:
        return True


def raw_emulator(env_id: str, frames: int) -> dict[str, float]:
    from ale_py import ALEInterface, LoggerMode, roms

    ALEInterface.setLoggerMode(LoggerMode.Error)
    ale = ALEInterface()
    ale.setInt("random_seed", 0)
    ale.setFloat("repeat_action_probability", 0.0)
    ale.loadROM(roms.get_rom_path(ale_game_name(env_id)))
    actions = ale.getMinimalActionSet()
    rng = np.random.default_rng(0)
    choice = rng.integers(len(actions), size=frames)
    start = time.perf_counter()
    for index in choice:
        ale.act(actions[index])
        if ale.game_over():
            ale.reset_game()
    seconds = time.perf_counter() - start
    return {"frames_per_s": frames / seconds, "steps_per_s": frames / seconds / FRAMES_PER_STEP}


def sampler_alone(env_id: str, sampler: str, n_envs: int, steps: int) -> dict[str, float]:
    env = make_atari_vec_env(env_id, n_envs, seed=0, sampler=sampler)
    env.reset()
    rng = np.random.default_rng(0)
    actions = rng.integers(env.action_space.n, size=(steps, n_envs))  # type: ignore[attr-defined]
    env.step(actions[0])
    start = time.perf_counter()
    for row in actions[1:]:
        env.step(row)
    seconds = time.perf_counter() - start
    env.close()
    steps_per_s = (steps - 1) * n_envs / seconds
    return {"steps_per_s": steps_per_s, "frames_per_s": steps_per_s * FRAMES_PER_STEP}


def acer_training(env_id: str, sampler: str, n_envs: int, steps: int, device: str) -> dict[str, Any]:
    env = StepTimer(make_atari_vec_env(env_id, n_envs, seed=0, sampler=sampler))
    model = ACER(
        "CnnPolicy", env, n_steps=20, replay_ratio=4, replay_start=20, buffer_size=5000, seed=0, device=device
    )
    # ACER does not see through the timing wrapper (a wrapper it does not know may change observations), so
    # it would keep whole stacks; give it the frame memory it builds for the bare env.
    buffer = make_replay_buffer(
        n_stack=frame_stack_size(env.venv),
        observation_space=model.observation_space,
        buffer_size=model.buffer_size,
        n_steps=model.n_steps,
        n_envs=n_envs,
        n_actions=int(model.action_space.n),  # type: ignore[attr-defined]
        seed=0,
    )
    assert isinstance(buffer, FrameStackReplayBuffer), type(buffer)
    model.replay_buffer = buffer
    model.learn(n_envs * model.n_steps)  # warm-up: first allocations, first replay
    env.seconds = 0.0
    updates_before = model._n_updates
    timer = RolloutTimer()
    start = time.perf_counter()
    model.learn(steps, callback=timer, reset_num_timesteps=False)
    total = time.perf_counter() - start
    env.close()
    # Rebuilding the stacks of one replay batch (E segments of T + 1 observations), part of "learning".
    start = time.perf_counter()
    for _ in range(10):
        buffer.sample()
    sample_ms = (time.perf_counter() - start) / 10 * 1000
    trained = model.num_timesteps - n_envs * model.n_steps
    return {
        "steps": trained,
        "updates": model._n_updates - updates_before,
        "seconds": total,
        "steps_per_s": trained / total,
        "frames_per_s": trained * FRAMES_PER_STEP / total,
        "env_step_s": env.seconds,
        "acting_s": timer.seconds - env.seconds,
        "learning_s": total - timer.seconds,
        "sampling_fraction": timer.seconds / total,
        "replay_sample_ms": sample_ms,
        "updates_per_s": (model._n_updates - updates_before) / total,
    }


# rl-baselines3-zoo's Atari hyperparameters (hyperparams/{a2c,ppo,dqn}.yml, "atari" entry): number of games,
# constructor arguments, and the untimed warm-up in agent steps (DQN's includes its learning_starts).
PEERS: dict[str, tuple[type[BaseAlgorithm], int, dict[str, Any], int]] = {
    "A2C": (
        A2C,
        16,
        dict(
            ent_coef=0.01,
            vf_coef=0.25,
            policy_kwargs=dict(optimizer_class=RMSpropTFLike, optimizer_kwargs=dict(eps=1e-5)),
        ),
        16 * 5,
    ),
    "PPO": (
        PPO,
        8,
        dict(
            n_steps=128,
            n_epochs=4,
            batch_size=256,
            learning_rate=2.5e-4,
            clip_range=0.1,
            vf_coef=0.5,
            ent_coef=0.01,
        ),
        8 * 128,
    ),
    "DQN": (
        DQN,
        1,
        dict(
            buffer_size=100_000,
            learning_rate=1e-4,
            batch_size=32,
            learning_starts=1_000,
            target_update_interval=1_000,
            train_freq=4,
            gradient_steps=1,
            exploration_fraction=0.1,
            exploration_final_eps=0.01,
            optimize_memory_usage=False,
        ),
        1_000 + 100,
    ),
}


def peer_training(algo: str, env_id: str, sampler: str, steps: int, device: str) -> dict[str, Any]:
    """Agent steps/s of one SB3 peer trained with ``CnnPolicy`` for ``steps`` agent steps after its warm-up
    (a whole rollout; DQN: past ``learning_starts``). On-policy peers round ``steps`` up to whole rollouts."""
    cls, n_envs, kwargs, warm_up = PEERS[algo]
    env = make_atari_vec_env(env_id, n_envs, seed=0, sampler=sampler)
    model = cls("CnnPolicy", env, seed=0, device=device, **kwargs)
    model.learn(warm_up)
    before = model.num_timesteps
    start = time.perf_counter()
    model.learn(steps, reset_num_timesteps=False)
    total = time.perf_counter() - start
    env.close()
    trained = model.num_timesteps - before
    return {
        "n_envs": n_envs,
        "steps": trained,
        "seconds": total,
        "steps_per_s": trained / total,
        "frames_per_s": trained * FRAMES_PER_STEP / total,
    }


def replay_memory(n_actions: int) -> dict[str, float]:
    capacity, n_steps, n_envs, shape = 5000 // 20, 20, 16, (4, 84, 84)
    transitions = capacity * n_steps * n_envs
    frames = FrameStackReplayBuffer.estimate_nbytes(capacity, n_steps, n_envs, shape, 4, np.uint8, n_actions)
    whole = SegmentReplayBuffer.estimate_nbytes(
        capacity, n_steps, n_envs, shape, np.dtype(np.uint8), n_actions
    )
    # The zoo DQN's buffer, as SB3 allocates it (numpy zeros: pages are not touched, so this costs nothing).
    dqn = ReplayBuffer(
        100_000,
        spaces.Box(0, 255, (4, 84, 84), np.uint8),
        spaces.Discrete(n_actions),
        device="cpu",
        n_envs=1,
        optimize_memory_usage=False,
        handle_timeout_termination=True,
    )
    dqn_bytes = sum(
        array.nbytes
        for array in (
            dqn.observations,
            dqn.next_observations,
            dqn.actions,
            dqn.rewards,
            dqn.dones,
            dqn.timeouts,
        )
    )
    del dqn
    return {
        "transitions": transitions,
        "frame_bytes_per_transition": frames / transitions,
        "sb2_bytes_per_transition": whole / transitions,
        "frame_total_gb": frames / 1e9,
        "sb2_total_gb": whole / 1e9,
        "dqn_transitions": 100_000,
        "dqn_bytes_per_transition": dqn_bytes / 100_000,
        "dqn_total_gb": dqn_bytes / 1e9,
    }


def markdown(results: dict[str, Any]) -> str:
    lines = [
        f"{results['env']}, {results['n_envs']} envs, {results['machine']}",
        "",
        "| what | agent steps/s | frames/s | time split (env / acting / learning) |",
        "| --- | ---: | ---: | --- |",
    ]
    raw = results["raw_emulator"]
    lines.append(
        f"| raw emulator, 1 core (ceiling) | {raw['steps_per_s']:.0f} | {raw['frames_per_s']:.0f} | |"
    )
    for sampler, row in results["samplers"].items():
        lines.append(f"| {sampler} sampler alone | {row['steps_per_s']:.0f} | {row['frames_per_s']:.0f} | |")
    for sampler, row in results["training"].items():
        split = (
            f"{row['env_step_s'] / row['seconds']:.0%} / {row['acting_s'] / row['seconds']:.0%} / "
            f"{row['learning_s'] / row['seconds']:.0%} ({row['updates_per_s']:.2f} updates/s, "
            f"replay batch rebuilt in {row['replay_sample_ms']:.0f} ms)"
        )
        lines.append(
            f"| ACER CnnPolicy, replay_ratio 4, {sampler} | {row['steps_per_s']:.0f} | "
            f"{row['frames_per_s']:.0f} | {split} |"
        )
    for sampler, peers in results.get("peers", {}).items():
        acer = results["training"].get(sampler)
        for algo, row in peers.items():
            ratio = f"ACER / {algo}: {acer['steps_per_s'] / row['steps_per_s']:.2f}" if acer else ""
            lines.append(
                f"| {algo} CnnPolicy (zoo), {row['n_envs']} env{'s' * (row['n_envs'] > 1)}, {sampler} | "
                f"{row['steps_per_s']:.0f} | "
                f"{row['frames_per_s']:.0f} | {ratio} |"
            )
    memory = results["replay_memory"]
    lines += [
        "",
        "| replay memory (buffer_size 5000, T=20, 16 envs, 4 actions) | bytes/transition | total |",
        "| --- | ---: | ---: |",
        f"| frames stored once (FrameStackReplayBuffer) | {memory['frame_bytes_per_transition']:.0f} | "
        f"{memory['frame_total_gb']:.2f} GB |",
        f"| whole stacks (SB2's layout, SegmentReplayBuffer) | {memory['sb2_bytes_per_transition']:.0f} | "
        f"{memory['sb2_total_gb']:.2f} GB |",
        f"| zoo DQN (SB3 ReplayBuffer, 100,000 transitions) | {memory['dqn_bytes_per_transition']:.0f} | "
        f"{memory['dqn_total_gb']:.2f} GB |",
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """This script's command line (tests/docs/test_code_blocks.py parses the documented ones with it)."""
    parser = script_parser(__doc__)
    parser.add_argument("--env", default="BreakoutNoFrameskip-v4")
    parser.add_argument("--n-envs", type=int, default=16)
    parser.add_argument("--raw-frames", type=int, default=20_000, help="frames for the raw emulator")
    parser.add_argument("--sampler-steps", type=int, default=500, help="vector steps per sampler")
    parser.add_argument(
        "--train-steps", type=int, default=3200, help="agent steps of ACER training per sampler"
    )
    parser.add_argument("--samplers", nargs="+", default=list(SAMPLERS), choices=SAMPLERS)
    parser.add_argument(
        "--peers",
        nargs="*",
        default=list(PEERS),
        choices=list(PEERS),
        help="SB3 algorithms trained on each sampler beside ACER (none: give the flag alone)",
    )
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    return parser


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = build_parser().parse_args(argv)
    commit_at_start()  # stops here, before any run, where no commit can be recorded

    th.set_num_threads(args.torch_threads)
    device = args.device
    if device.startswith("cuda") and th.cuda.is_available():
        device = f"{device}: {th.cuda.get_device_name(th.device(device))}"
    results: dict[str, Any] = {
        "command": command_line("atari_throughput.py", sys.argv[1:] if argv is None else argv),
        "date": time.strftime("%Y-%m-%d"),
        "commit": commit_at_start(),
        "env": args.env,
        "n_envs": args.n_envs,
        "machine": f"{os.cpu_count()} CPUs, torch {th.__version__} ({args.torch_threads} thread(s), "
        f"{device}), Python {platform.python_version()}",
        "load_average_before": os.getloadavg(),
        "raw_emulator": raw_emulator(args.env, args.raw_frames),
        "samplers": {s: sampler_alone(args.env, s, args.n_envs, args.sampler_steps) for s in args.samplers},
        "training": {
            s: acer_training(args.env, s, args.n_envs, args.train_steps, args.device) for s in args.samplers
        },
        "peers": {
            s: {a: peer_training(a, args.env, s, args.train_steps, args.device) for a in args.peers}
            for s in args.samplers
        },
        "replay_memory": replay_memory(n_actions=4),
        "load_average_after": os.getloadavg(),
    }
    if args.out:  # first, so that a closed stdout (``| head``) cannot lose the record
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    print(markdown(results))
    print()
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()

"""Where a continuous ACER policy acts relative to its action bounds while it trains on a MuJoCo task.

ACER's Gaussian acts unbounded and the env gets the action clipped to the ``Box`` (SB3's convention), so a
mean that drifts past the bounds costs nothing in the env while the critic sees the unclipped actions.
This script trains ACER with :mod:`benchmarks.mujoco_v5`'s settings (``--set`` overrides them) and every
``--every`` steps records, for the policy's statistics at the current observations and the actions taken
since the last record: the mean ``|mean|`` and its maximum, the share of action values outside the bounds,
the mean ``|action|``, and the mean length and return of the last 100 training episodes. Usage::

    python -m benchmarks.action_bounds --env Ant-v5 --seed 0 --timesteps 200000 \\
        --set 'policy_kwargs="dict(net_arch=dict(pi=[256, 256], qf=[256, 256]), fixed_std=0.3)"' \\
        --out benchmarks/results/tuning/action_bounds_ant_sigma03.json
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from benchmarks.common import (
    add_out_option,
    add_overrides_option,
    commit_at_start,
    machine_description,
    parse_overrides,
    script_parser,
    write_results,
)
from benchmarks.mujoco_v5 import MUJOCO_ENVS, describe, make_model


@dataclass
class BoundsRecord:
    """One record: the statistics described in the module's docstring at ``step``."""

    step: int
    mean_abs_mean: float
    max_abs_mean: float
    share_out_of_bounds: float
    mean_abs_action: float
    episode_length: float | None
    episode_return: float | None


class BoundsRecorder(BaseCallback):
    """Records a :class:`BoundsRecord` every ``every`` env steps (bounds ``[low, high]`` of the ``Box``)."""

    def __init__(self, every: int, low: np.ndarray, high: np.ndarray) -> None:
        super().__init__()
        self.every, self.low, self.high = every, low.reshape(-1), high.reshape(-1)
        self.actions: list[np.ndarray] = []
        self.records: list[BoundsRecord] = []
        self.next_record = every

    def _on_step(self) -> bool:
        self.actions.append(np.asarray(self.locals["actions"]).reshape(len(self.locals["actions"]), -1))
        if self.num_timesteps < self.next_record:
            return True
        self.next_record += self.every
        actions, self.actions = np.concatenate(self.actions), []
        with th.no_grad():
            obs = th.as_tensor(self.locals["new_obs"], dtype=th.float32, device=self.model.device)
            stats = self.model.policy.statistics(obs)  # type: ignore[operator]
        mean = stats[:, : stats.shape[1] // 2].abs()
        episodes = list(self.model.ep_info_buffer or [])
        self.records.append(
            BoundsRecord(
                step=self.num_timesteps,
                mean_abs_mean=float(mean.mean()),
                max_abs_mean=float(mean.max()),
                share_out_of_bounds=float(((actions < self.low) | (actions > self.high)).mean()),
                mean_abs_action=float(np.abs(actions).mean()),
                episode_length=float(np.mean([e["l"] for e in episodes])) if episodes else None,
                episode_return=float(np.mean([e["r"] for e in episodes])) if episodes else None,
            )
        )
        print(self.records[-1], flush=True)
        return True


def main(argv: list[str] | None = None) -> None:
    parser = script_parser(__doc__)
    parser.add_argument("--env", choices=MUJOCO_ENVS, default="Ant-v5")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timesteps", type=int, default=200_000)
    parser.add_argument("--every", type=int, default=20_000)
    add_overrides_option(parser, "ent_coef=0.0")
    add_out_option(parser, required=True)
    args = parser.parse_args(argv)
    commit_at_start()  # stops here, before any run, where no commit can be recorded
    th.set_num_threads(1)
    overrides = parse_overrides(args.overrides)
    model, env = make_model("ACER", args.env, args.seed, overrides)
    space = model.action_space
    recorder = BoundsRecorder(args.every, space.low, space.high)  # type: ignore[attr-defined]
    model.learn(args.timesteps, callback=recorder)
    env.close()
    write_results(
        args.out,
        script="action_bounds.py",
        args=argv or sys.argv[1:],
        machine=machine_description(threads=1),
        results=recorder.records,
        env_id=args.env,
        seed=args.seed,
        settings=describe("ACER", args.env, overrides),
    )


if __name__ == "__main__":
    main()

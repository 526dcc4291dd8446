"""A training run that a test kills with SIGKILL:
``python tests/helpers/reliability_worker.py DIR TOTAL SAVE_FREQ SLOW_AFTER`` trains ACER on IdentityEnv(4)
for TOTAL steps with SB3's CheckpointCallback (model and replay buffer every SAVE_FREQ steps into DIR); from
SLOW_AFTER steps on every step sleeps 20 ms, so that the test can kill it mid-run."""

from __future__ import annotations

import sys
import time

import torch as th
from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback
from stable_baselines3.common.envs import IdentityEnv
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER

#: The training set-up shared by the killed run, the resumed run and the uninterrupted reference.
IDENTITY = dict(seed=1, n_steps=5, replay_ratio=4, replay_start=100, buffer_size=1000, learning_rate=7e-4)


def identity_env() -> DummyVecEnv:
    return DummyVecEnv([lambda: Monitor(IdentityEnv(4))])


class SlowDown(BaseCallback):
    """Sleeps ``seconds`` at every step once ``after`` steps are done."""

    def __init__(self, after: int, seconds: float) -> None:
        super().__init__()
        self.after, self.seconds = after, seconds

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.after:
            time.sleep(self.seconds)
        return True


def train(directory: str, total: int, save_freq: int, slow_after: int) -> None:
    model = ACER("MlpPolicy", identity_env(), **IDENTITY)  # type: ignore[arg-type]
    checkpoints = CheckpointCallback(save_freq, directory, name_prefix="acer", save_replay_buffer=True)
    model.learn(total, callback=[checkpoints, SlowDown(slow_after, 0.02)])


if __name__ == "__main__":
    th.set_num_threads(1)
    directory, total, save_freq, slow_after = sys.argv[1:]
    train(directory, int(total), int(save_freq), int(slow_after))

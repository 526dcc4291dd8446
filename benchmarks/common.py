"""Shared pieces of the benchmark scripts: threshold tracking over training episodes."""

from __future__ import annotations

import time
from collections import deque

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback


class ThresholdTracker(BaseCallback):
    """Records the env step and wall-clock time at which the mean return of the last ``window`` training
    episodes (from ``Monitor``) first reaches ``threshold``; optionally stops training there."""

    def __init__(self, threshold: float, window: int = 20, stop: bool = False) -> None:
        super().__init__()
        self.threshold = threshold
        self.returns: deque[float] = deque(maxlen=window)
        self.window = window
        self.stop = stop
        self.steps_to_threshold: int | None = None
        self.seconds_to_threshold: float | None = None
        self.all_returns: list[tuple[int, float]] = []
        self._start = 0.0

    def _on_training_start(self) -> None:
        self._start = time.perf_counter()

    def _on_step(self) -> bool:
        for info in self.locals.get("infos", []):
            episode = info.get("episode")
            if episode is None:
                continue
            self.returns.append(float(episode["r"]))
            self.all_returns.append((self.num_timesteps, float(episode["r"])))
            if (
                self.steps_to_threshold is None
                and len(self.returns) == self.window
                and np.mean(self.returns) >= self.threshold
            ):
                self.steps_to_threshold = self.num_timesteps
                self.seconds_to_threshold = time.perf_counter() - self._start
                if self.stop:
                    return False
        return True

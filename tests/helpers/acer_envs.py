"""Tiny deterministic Gymnasium environments for the API tests (imported by the test modules), one fresh
segment of a model, a disk that fills up, and a Ctrl-C pressed while torch loads."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from sb3_acer import ACER
from sb3_acer.common.type_aliases import Segment


class ObservationSpaceEnv(gym.Env):
    """Any observation space, ``n_actions`` discrete actions; reward 1 when the action equals a fixed
    function of the observation. Episodes end (terminate) after ``ep_length`` steps."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, observation_space: spaces.Space, n_actions: int = 3, ep_length: int = 10) -> None:
        self.observation_space = observation_space
        self.action_space = spaces.Discrete(n_actions)
        self.ep_length = ep_length
        self._steps = 0
        self._obs: Any = None

    def _target(self) -> int:
        return int(np.sum(np.asarray(self._obs, dtype=np.float64)) * 7) % int(self.action_space.n)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.observation_space.seed(int(self.np_random.integers(2**31)))
        self._steps = 0
        self._obs = self.observation_space.sample()
        return self._obs, {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        reward = float(int(action) == self._target())
        self._steps += 1
        self._obs = self.observation_space.sample()
        return self._obs, reward, self._steps >= self.ep_length, False, {}


class CounterEnv(gym.Env):
    """Observation ``[t]`` (steps taken in the episode), reward 1 per step, terminates when ``t`` reaches
    ``terminate_at``. Wrap it in ``TimeLimit`` to truncate instead."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, terminate_at: int) -> None:
        self.observation_space = spaces.Box(0.0, 100.0, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.terminate_at = terminate_at
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._t = 0
        return np.array([0.0], dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._t += 1
        return np.array([self._t], dtype=np.float32), 1.0, self._t >= self.terminate_at, False, {}


class ResetCounter(gym.Wrapper):
    """Counts calls to ``reset``."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.n_resets = 0

    def reset(self, **kwargs: Any) -> tuple[Any, dict]:
        self.n_resets += 1
        return self.env.reset(**kwargs)


def fill_the_disk_for(monkeypatch: Any, target: pathlib.Path) -> None:
    """Make ``ACER.save`` to ``target`` fail as on a full disk (other paths save as usual)."""
    save = ACER.save

    def full_disk(self: ACER, path: Any, *args: Any, **kwargs: Any) -> None:
        if pathlib.Path(path) == target:
            raise OSError(28, "No space left on device")
        save(self, path, *args, **kwargs)

    monkeypatch.setattr(ACER, "save", full_disk)


def run_interrupted_while_torch_loads(then: str, cwd: pathlib.Path) -> subprocess.CompletedProcess[str]:
    """Run, in ``cwd``, a Python script that sends itself SIGINT when torch starts to load, while it runs
    ``then`` (the script's last lines: set ``sys.argv`` and start a command)."""
    hook = (
        "import os, runpy, signal, sys\n\n"
        "class InterruptOnTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch':\n"
        "            os.kill(os.getpid(), signal.SIGINT)\n"
        "        return None\n\n"
        "sys.meta_path.insert(0, InterruptOnTorch())\n"
    )
    command = [sys.executable, "-c", hook + then]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


class TupleActionEnv(gym.Env):
    """A ``Tuple`` action space, which ACER refuses (the command-line test of that refusal)."""

    def __init__(self) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Tuple((spaces.Discrete(2), spaces.Discrete(2)))


class TextKeyEnv(gym.Env):
    """A ``Dict`` observation space with a ``Text`` key, as MiniGrid's ``mission``: refused by ACER, and
    before its check, by ``DummyVecEnv``'s buffers with "'NoneType' object is not iterable"."""

    def __init__(self) -> None:
        self.observation_space = spaces.Dict(
            {"image": spaces.Box(0, 255, shape=(3, 3, 3), dtype=np.uint8), "mission": spaces.Text(10)}
        )
        self.action_space = spaces.Discrete(3)


def collect(model: ACER) -> Segment:
    """One segment collected by ``model`` from where its env stands (set up on first use), not trained on."""
    if model._last_obs is None:
        model._setup_learn(10**9)
    segment = model._collect(model._init_callback(None))
    assert segment is not None
    return segment

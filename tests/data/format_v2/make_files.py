"""Writes the format-2 model and replay files that ``tests/test_file_compatibility_v2.py`` loads.

They were written once, by the code of the commit that added them (model files in format 2, SB3's zip
layout; the statistics layout and replay entries of Box, MultiDiscrete and MultiBinary actions and of Dict
observations as they first shipped), and are committed: later code must keep loading them. Re-running this
script with later code writes files of that code, which is not the point; it is kept to show how the files
were made (``PYTHONPATH=. python tests/data/format_v2/make_files.py``). The test imports its env factories.
"""

from __future__ import annotations

import itertools
import json
import pathlib
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.envs import IdentityEnvBox, IdentityEnvMultiBinary, IdentityEnvMultiDiscrete
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER

HERE = pathlib.Path(__file__).parent
#: Observations whose predictions are recorded beside the files.
N_OBS = 6
#: Small networks keep the files at a few tens of kB.
SMALL = {"net_arch": [16]}


class SmallDictEnv(gym.Env):
    """CartPole's state as a ``vec`` key beside a small uint8 ``img`` key (3x3, the pole angle)."""

    observation_space = spaces.Dict(
        {"vec": spaces.Box(-np.inf, np.inf, (4,), np.float32), "img": spaces.Box(0, 255, (3, 3), np.uint8)}
    )
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.inner = gym.make("CartPole-v1")

    def _obs(self, state: np.ndarray) -> dict[str, np.ndarray]:
        return {
            "vec": state.astype(np.float32),
            "img": np.full((3, 3), int(abs(state[2]) * 500) % 255, np.uint8),
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        state, info = self.inner.reset(seed=seed)
        return self._obs(state), info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        state, reward, terminated, truncated, info = self.inner.step(action)
        return self._obs(state), float(reward), terminated, truncated, info


_SPACE_SEEDS = itertools.count()


def _seeded(env: gym.Env) -> gym.Env:
    """SB3's identity envs draw observations from their action space, not seeded by ``reset(seed=...)``."""
    env.action_space.seed(next(_SPACE_SEEDS))
    return env


#: The environment of each file (tests load them with these).
ENVS: dict[str, Callable[[], gym.Env]] = {
    "cartpole_mlp": lambda: gym.make("CartPole-v1"),
    "cartpole_lstm": lambda: gym.make("CartPole-v1"),
    "dict_obs": SmallDictEnv,
    "box": lambda: _seeded(IdentityEnvBox(eps=0.5)),
    "multidiscrete": lambda: _seeded(IdentityEnvMultiDiscrete(dim=2)),
    "multibinary": lambda: _seeded(IdentityEnvMultiBinary(dim=2)),
}


def _observations(space: spaces.Space, n: int) -> Any:
    space.seed(0)
    samples = [space.sample() for _ in range(n)]
    if isinstance(space, spaces.Dict):
        return {key: np.stack([sample[key] for sample in samples]) for key in space.spaces}
    return np.stack(samples)


def _as_lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: item.tolist() for key, item in value.items()}
    return value.tolist()


def _write(name: str, policy: str, steps: int, **kwargs: Any) -> dict:
    env = DummyVecEnv([ENVS[name]] * 2)
    model = ACER(policy, env, n_steps=5, buffer_size=50, replay_start=10, seed=0, **kwargs)
    model.learn(steps)
    observations = _observations(env.observation_space, N_OBS)
    actions, _ = model.predict(observations, deterministic=True)
    probs = model.action_probability(observations)
    model.save(HERE / f"{name}.zip", include=["replay_buffer"])
    if name == "cartpole_mlp":
        model.save_replay_buffer(HERE / "cartpole_mlp_replay.pkl")
    env.close()
    return {"observations": _as_lists(observations), "actions": actions.tolist(), "probs": probs.tolist()}


def main() -> None:
    th.set_num_threads(1)
    expected = {
        "cartpole_mlp": _write("cartpole_mlp", "MlpPolicy", 200, policy_kwargs=SMALL),
        "cartpole_lstm": _write(
            "cartpole_lstm", "MlpLstmPolicy", 200, policy_kwargs={"net_arch": [16, "lstm"], "n_lstm": 8}
        ),
        "dict_obs": _write("dict_obs", "MultiInputPolicy", 200, policy_kwargs=SMALL),
        "box": _write("box", "MlpPolicy", 200, policy_kwargs=SMALL),
        "multidiscrete": _write("multidiscrete", "MlpPolicy", 200, policy_kwargs=SMALL),
        "multibinary": _write("multibinary", "MlpPolicy", 200, policy_kwargs=SMALL),
    }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()

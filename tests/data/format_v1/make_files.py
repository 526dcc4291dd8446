"""Writes the format-1 model and replay files that ``tests/test_file_compatibility.py`` loads.

They were written once, by the code of the commit that added them (before the package's redesign), and are
committed: later code must keep loading them. Re-running this script with later code writes files of that
code, which is not the point; it is kept to show how the files were made.
"""

from __future__ import annotations

import json
import pathlib

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack

from sb3_acer import ACER

HERE = pathlib.Path(__file__).parent
#: Observations whose predictions are recorded beside the files.
N_OBS = 8


def _record(model: ACER, name: str, observations: np.ndarray, **predict_kwargs: object) -> dict:
    actions, _ = model.predict(observations, deterministic=True, **predict_kwargs)
    probs = model.action_probability(observations, **predict_kwargs)
    model.save(HERE / f"{name}.zip", include=["replay_buffer"])
    return {"observations": observations.tolist(), "actions": actions.tolist(), "probs": probs.tolist()}


def main() -> None:
    th.set_num_threads(1)
    expected: dict[str, dict] = {}
    rng = np.random.default_rng(0)

    env = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    model = ACER(
        "MlpPolicy", env, n_steps=5, buffer_size=50, replay_start=10, seed=0, policy_kwargs={"net_arch": [16]}
    )
    model.learn(200)
    model.save_replay_buffer(HERE / "cartpole_mlp_replay.pkl")
    obs = rng.uniform(-1, 1, size=(N_OBS, 4)).astype(np.float32)
    expected["cartpole_mlp"] = _record(model, "cartpole_mlp", obs)

    model = ACER(
        "MlpLstmPolicy",
        env,
        n_steps=5,
        buffer_size=50,
        replay_start=10,
        seed=0,
        policy_kwargs={"net_arch": [16, "lstm"], "n_lstm": 8},
    )
    model.learn(200)
    obs = rng.uniform(-1, 1, size=(2, 4)).astype(np.float32)
    actions, _ = model.predict(obs, deterministic=True)
    model.save(HERE / "cartpole_lstm.zip", include=["replay_buffer"])
    expected["cartpole_lstm"] = {"observations": obs.tolist(), "actions": actions.tolist()}

    def small_image_env() -> gym.Env:
        from gymnasium.wrappers import TransformObservation

        inner = gym.make("CartPole-v1")
        space = gym.spaces.Box(0, 255, (1, 36, 36), np.uint8)
        return TransformObservation(
            inner, lambda o: np.full((1, 36, 36), int(abs(o[0]) * 100) % 255, np.uint8), space
        )

    image_env = VecFrameStack(DummyVecEnv([small_image_env] * 2), n_stack=2, channels_order="first")
    model = ACER(
        "CnnPolicy",
        image_env,
        n_steps=4,
        buffer_size=16,
        replay_start=4,
        seed=0,
        policy_kwargs={"features_extractor_kwargs": {"features_dim": 16}},
    )
    model.learn(40)
    obs = rng.integers(0, 255, size=(2, 2, 36, 36)).astype(np.uint8)
    expected["image_cnn"] = _record(model, "image_cnn", obs)
    image_env.close()
    env.close()
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()

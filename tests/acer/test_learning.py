"""Learning check on CartPole-v1 with the tuned preset (slow: run with ``pytest -m slow``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_acer import ACER
from sb3_acer.presets import load_preset

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks.common import ThresholdTracker


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_cartpole_preset_solves_cartpole(seed: int) -> None:
    preset = load_preset("CartPole-v1")
    env = make_vec_env("CartPole-v1", n_envs=preset.n_envs, seed=seed)
    model = ACER(preset.policy, env, seed=seed, **preset.hyperparameters)
    tracker = ThresholdTracker(475.0, window=20)
    model.learn(preset.n_timesteps, callback=tracker)
    # The mean of the last 20 training episodes reached 475 within 30k of the preset's 40k steps ...
    assert tracker.steps_to_threshold is not None and tracker.steps_to_threshold <= 30_000
    # ... and the final greedy policy balances the pole for the whole episode.
    eval_env = make_vec_env("CartPole-v1", n_envs=1, seed=seed + 1000)
    mean_return, _ = evaluate_policy(model, eval_env, n_eval_episodes=10, deterministic=True)
    assert mean_return >= 475.0

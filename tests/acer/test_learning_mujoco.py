"""Continuous ACER learns a MuJoCo task: InvertedPendulum-v5 with the benchmark's candidate preset
(``benchmarks/mujoco_v5.py``: ACER's defaults, 4 envs, normalised observations) balances the pole for the
whole episode (1000 steps) in a deterministic evaluation after 150k env steps (about a minute and a half of
one CPU core)."""

from __future__ import annotations

import pytest
import torch as th

pytest.importorskip("mujoco")

import benchmarks.mujoco_v5 as bench


@pytest.mark.slow
def test_acer_learns_inverted_pendulum() -> None:
    threads = th.get_num_threads()
    th.set_num_threads(1)
    try:
        model, env = bench.make_model("ACER", "InvertedPendulum-v5", seed=1, overrides={})
        model.learn(150_000)
        mean, _ = bench.evaluate(model, env, "InvertedPendulum-v5", seed=1, episodes=10)
    finally:
        th.set_num_threads(threads)
    assert mean >= 900, f"deterministic evaluation {mean} after 150k steps"

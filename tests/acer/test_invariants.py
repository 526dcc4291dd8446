"""Properties of the algorithm checked through the model: on-policy importance weights, the average
network, the trust region and the entropy, and seeded determinism."""

from __future__ import annotations

import csv
import dataclasses
import pathlib

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.logger import configure

from sb3_acer import ACER
from sb3_acer.common.type_aliases import Segment
from sb3_acer.common.update import UpdateConfig, compute_gradients


def flat_parameters(module: th.nn.Module) -> th.Tensor:
    return th.cat([p.detach().reshape(-1) for p in module.parameters()]).clone()


def flat_gradients(module: th.nn.Module) -> th.Tensor:
    return th.cat(
        [(p.grad if p.grad is not None else th.zeros_like(p)).reshape(-1) for p in module.parameters()]
    ).clone()


def collect(model: ACER, steps: int) -> Segment:
    """A fresh on-policy segment from the model's env (through the normal rollout)."""
    model._setup_learn(steps)
    callback = model._init_callback(None)
    segment = model._collect(callback)
    assert segment is not None
    return segment


def test_on_policy_importance_weights_are_one(tmp_path: pathlib.Path) -> None:
    logger = configure(str(tmp_path), ["csv"])
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=10, replay_start=20, buffer_size=100, seed=0)
    model.set_logger(logger)
    model.learn(300, log_interval=1)
    logger.close()
    with open(tmp_path / "progress.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 30
    on_policy = np.array([float(row["train/on_policy_rho_mean"]) for row in rows])
    np.testing.assert_allclose(on_policy, 1.0, atol=1e-5)
    # Replayed segments come from older policies: their weights are not all 1.
    replayed = np.array([float(row["train/rho_mean"]) for row in rows[5:]])
    assert np.abs(replayed - 1.0).max() > 1e-3


@pytest.mark.parametrize("alpha", [0.99, 0.5])
def test_average_network_moves_after_each_step_and_slowly(alpha: float) -> None:
    model = ACER(
        "MlpPolicy", "CartPole-v1", n_steps=10, alpha=alpha, replay_start=10, buffer_size=100, seed=0
    )
    assert th.equal(flat_parameters(model.policy_avg), flat_parameters(model.policy))
    for on_policy in (True, True, False, False):
        segment = collect(model, 10) if on_policy else model.replay_buffer.sample()  # type: ignore[union-attr]
        if on_policy:
            model.replay_buffer.put(segment)  # type: ignore[union-attr]
        avg_old = flat_parameters(model.policy_avg)
        theta_old = flat_parameters(model.policy)
        assert model._gradient_step(segment, on_policy=on_policy) is not None
        theta = flat_parameters(model.policy)
        avg = flat_parameters(model.policy_avg)
        assert not th.equal(theta, theta_old)
        th.testing.assert_close(avg, alpha * avg_old + (1 - alpha) * theta, rtol=0, atol=1e-6)
        moved = th.linalg.norm(avg - avg_old).item()
        assert moved > 0
        # float32 cancellation in (avg - avg_old) limits the relative precision of this norm.
        assert moved == pytest.approx((1 - alpha) * th.linalg.norm(theta - avg_old).item(), rel=2e-3)
    assert model._n_updates == 4
    assert model.policy_avg.training is False
    assert all(not p.requires_grad for p in model.policy_avg.parameters())


def test_average_network_moves_during_learn() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0, seed=0)
    initial = flat_parameters(model.policy_avg)
    model.learn(5)  # exactly one update
    assert model._n_updates == 1
    expected = 0.99 * initial + 0.01 * flat_parameters(model.policy)
    th.testing.assert_close(flat_parameters(model.policy_avg), expected, rtol=0, atol=1e-7)


def _gradients(model: ACER, segment: Segment, **changes: float | bool) -> tuple[th.Tensor, dict]:
    config = dict(gamma=0.99, q_coef=0.5, ent_coef=0.01, correction_term=10.0, trust_region=True, delta=1.0)
    config.update(changes)
    model.policy.zero_grad(set_to_none=True)
    _, stats = compute_gradients(
        policy=model.policy,
        avg_policy=model.policy_avg,
        segment=segment,
        config=UpdateConfig(**config),  # type: ignore[arg-type]
    )
    return flat_gradients(model.policy), stats._asdict()


@pytest.fixture(scope="module")
def moved_model_and_segment() -> tuple[ACER, Segment]:
    # After some training the policy differs from the average network, so the trust region is active.
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=10, replay_start=20, buffer_size=100, seed=0)
    model.learn(300)
    return model, model.replay_buffer.sample()  # type: ignore[union-attr]


def test_entropy_enters_the_trust_region_gradient(moved_model_and_segment: tuple[ACER, Segment]) -> None:
    """SB2 took g w.r.t. the softmax while the entropy hung off the logits: ent_coef had no effect."""
    model, segment = moved_model_and_segment
    without, _ = _gradients(model, segment, ent_coef=0.0)
    with_entropy, _ = _gradients(model, segment, ent_coef=0.1)
    assert th.linalg.norm(with_entropy - without).item() > 1e-4 * th.linalg.norm(without).item()


@pytest.mark.parametrize("ent_coef", [0.0, 0.01])
def test_inactive_trust_region_equals_the_plain_gradient(
    moved_model_and_segment: tuple[ACER, Segment], ent_coef: float
) -> None:
    model, segment = moved_model_and_segment
    plain, plain_stats = _gradients(model, segment, trust_region=False, ent_coef=ent_coef)
    unbounded, stats = _gradients(model, segment, trust_region=True, delta=1e12, ent_coef=ent_coef)
    assert stats["avg_norm_adj"] == 0.0
    th.testing.assert_close(unbounded, plain, rtol=1e-4, atol=1e-6)
    assert plain_stats["avg_norm_k"] == 0.0  # no trust-region diagnostics without the trust region


def test_active_trust_region_changes_the_gradient(moved_model_and_segment: tuple[ACER, Segment]) -> None:
    model, segment = moved_model_and_segment
    # On CartPole every advantage is positive, which only lowers the linearised KL (k.g < 0): the trust
    # region never binds. Negative rewards give negative advantages, and k.g > delta.
    segment = dataclasses.replace(segment, rewards=-segment.rewards)
    plain, _ = _gradients(model, segment, trust_region=False)
    tight, stats = _gradients(model, segment, trust_region=True, delta=1e-3)
    assert stats["avg_norm_adj"] > 0.0
    assert stats["avg_norm_k_dot_g"] > 0.0
    assert not th.allclose(tight, plain, rtol=1e-3, atol=1e-6)


def test_trust_region_false_learns() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", trust_region=False, n_steps=5, replay_start=10, buffer_size=50)
    before = flat_parameters(model.policy)
    model.learn(100)
    assert model._n_replay_updates > 0
    assert model.n_skipped_updates == 0
    assert not th.equal(flat_parameters(model.policy), before)


def _deterministic_run() -> tuple[list[int], list[float]]:
    model = ACER("MlpPolicy", "CartPole-v1", seed=0, num_procs=1)
    model.learn(1500)  # replay starts at 1000 steps (SB2's replay_start): 25 segments replay
    assert model._n_replay_updates > 0
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    actions, rewards = [], []
    for _ in range(100):
        action, _ = model.predict(obs)
        obs, reward, terminated, truncated, _ = env.step(int(action))
        actions.append(int(action))
        rewards.append(float(reward))
        if terminated or truncated:
            obs, _ = env.reset()
    return actions, rewards


def test_seeded_training_is_deterministic() -> None:
    """SB2's test_deterministic_training_common: two independent seeded runs act identically."""
    first = _deterministic_run()
    th.manual_seed(1234)  # disturb the global generators between the runs
    np.random.seed(1234)
    second = _deterministic_run()
    assert first == second
    assert len(set(first[0])) == 2  # stochastic actions: both occur

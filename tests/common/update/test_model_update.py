"""One update through the model (``sb3_acer.common.update``): the rollout marks truncation apart from
termination, the Retrace targets bootstrap on the one and cut on the other, ``retrace_lambda`` enters the
targets, and ``q_lr_ratio`` scales the critic's own step only."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch as th
from gymnasium.wrappers import TimeLimit
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER
from sb3_acer.common.functional import categorical as F
from sb3_acer.common.rollout import collect_segment
from sb3_acer.common.type_aliases import Segment
from sb3_acer.common.update import UpdateConfig, compute_gradients
from tests.helpers.acer_envs import CounterEnv

# ---------------------------------------------------------------------------------------------- truncation


def _truncation_venv() -> DummyVecEnv:
    # env 0 is cut by TimeLimit after 3 steps; env 1 terminates by itself after 3 steps.
    return DummyVecEnv(
        [lambda: TimeLimit(CounterEnv(terminate_at=100), max_episode_steps=3), lambda: CounterEnv(3)]
    )


def _truncation_segment(handle_timeout_termination: bool = True) -> tuple[Segment, ACER]:
    venv = _truncation_venv()
    model = ACER("MlpPolicy", venv, replay_ratio=0, seed=0)
    result = collect_segment(
        env=venv,
        policy=model.policy,
        n_steps=7,
        last_obs=venv.reset(),
        last_episode_starts=np.ones(2, dtype=bool),
        on_step=lambda record: True,
        handle_timeout_termination=handle_timeout_termination,
    )
    assert result.segment is not None
    return result.segment, model


def test_collect_segment_marks_truncation_and_termination() -> None:
    segment, _ = _truncation_segment()
    cut = np.array([0, 0, 1, 0, 0, 1, 0], dtype=bool)
    np.testing.assert_array_equal(segment.truncated[:, 0], cut)
    np.testing.assert_array_equal(segment.terminated[:, 0], np.zeros(7, dtype=bool))
    np.testing.assert_array_equal(segment.terminated[:, 1], cut)
    np.testing.assert_array_equal(segment.truncated[:, 1], np.zeros(7, dtype=bool))
    np.testing.assert_array_equal(segment.final_index, [[2, 0], [5, 0]])
    np.testing.assert_array_equal(segment.final_observations, [[3.0], [3.0]])
    # x_{t+1} after a cut is the reset observation of the next episode, for both envs.
    np.testing.assert_array_equal(segment.observations[:, 0, 0], [0, 1, 2, 0, 1, 2, 0, 1])
    np.testing.assert_array_equal(segment.observations[:, 1, 0], [0, 1, 2, 0, 1, 2, 0, 1])
    np.testing.assert_array_equal(segment.episode_starts[:, 0], [1, 0, 0, 1, 0, 0, 1, 0])
    np.testing.assert_array_equal(segment.rewards, np.ones((7, 2)))


def test_collect_segment_records_timeouts_as_terminations_when_not_handled() -> None:
    segment, _ = _truncation_segment(handle_timeout_termination=False)
    cut = np.array([0, 0, 1, 0, 0, 1, 0], dtype=bool)
    np.testing.assert_array_equal(segment.terminated[:, 0], cut)
    np.testing.assert_array_equal(segment.terminated[:, 1], cut)
    assert not segment.truncated.any()
    assert segment.final_index.shape == (0, 2)
    assert segment.final_observations.shape == (0, 1)


@pytest.mark.parametrize("handle", [True, False])
def test_acer_passes_handle_timeout_termination_to_the_rollout(handle: bool) -> None:
    model = ACER(
        "MlpPolicy", _truncation_venv(), n_steps=7, replay_ratio=0, seed=0, handle_timeout_termination=handle
    )
    segments: list[Segment] = []
    original = model.train
    model.train = lambda segment: (segments.append(segment), original(segment))[1]  # type: ignore[method-assign]
    model.learn(14)
    assert len(segments) == 1
    assert segments[0].truncated[:, 0].any() == handle
    assert segments[0].terminated[:, 0].any() == (not handle)


def test_retrace_targets_bootstrap_on_truncation_and_cut_on_termination() -> None:
    segment, _ = _truncation_segment()
    gamma = 0.9

    def value(obs: np.ndarray) -> th.Tensor:
        return th.as_tensor(10.0 + obs[..., 0], dtype=th.float32)

    rewards = th.as_tensor(segment.rewards)
    values = value(segment.observations)
    truncation_values = th.zeros_like(rewards)
    index = segment.final_index
    truncation_values[index[:, 0], index[:, 1]] = value(segment.final_observations)
    common = dict(rewards=rewards, q_i=th.zeros_like(rewards), values=values, gamma=gamma)
    # rho_bar = 0 makes Q_ret a one-step target: r_t + gamma * (1 - terminated_t) * V(next x).
    q_ret = F.retrace_targets(
        **common,
        rho_bar=th.zeros_like(rewards),
        terminated=th.as_tensor(segment.terminated),
        truncated=th.as_tensor(segment.truncated),
        truncation_values=truncation_values,
    )
    next_values = 10.0 + segment.observations[1:, :, 0]
    expected = 1.0 + gamma * next_values
    expected[[2, 5], 0] = 1.0 + gamma * 13.0  # V(terminal observation [3]), not V(reset observation [0])
    expected[[2, 5], 1] = 1.0  # terminated: no bootstrap
    np.testing.assert_allclose(q_ret.numpy(), expected, rtol=1e-6)

    # Treating the truncation as a termination (SB2) cuts env 0's return instead.
    q_ret_sb2 = F.retrace_targets(
        **common,
        rho_bar=th.zeros_like(rewards),
        terminated=th.as_tensor(segment.terminated | segment.truncated),
    )
    assert q_ret_sb2[2, 0].item() == pytest.approx(1.0)
    assert q_ret[2, 0].item() == pytest.approx(1.0 + gamma * 13.0)


def _flat_q_targets(
    terminated: np.ndarray, truncated: np.ndarray, gamma: float, lam: float = 1.0
) -> np.ndarray:
    """Loop oracle of the Retrace targets of ``_truncation_segment`` (rewards 1) for a critic with
    Q = V = 10 everywhere and on-policy traces lam * min(1, rho) = lam."""
    q_ret = np.zeros(terminated.shape)
    for env in range(terminated.shape[1]):
        carry = 10.0
        for t in reversed(range(terminated.shape[0])):
            following = 10.0 if truncated[t, env] else carry
            q_ret[t, env] = 1.0 + gamma * (1.0 - terminated[t, env]) * following
            carry = lam * (q_ret[t, env] - 10.0) + 10.0
    return q_ret


def test_update_uses_truncation_bootstrap() -> None:
    segment, model = _truncation_segment()
    # Q(x, a) = 10 everywhere, so V = 10, and on-policy rho_bar = 1 (to 1e-5): Q_ret is a plain return.
    with th.no_grad():
        model.policy.q_net.weight.zero_()
        model.policy.q_net.bias.fill_(10.0)
    as_terminated = Segment(
        observations=segment.observations,
        actions=segment.actions,
        rewards=segment.rewards,
        mu_probs=segment.mu_probs,
        terminated=segment.terminated | segment.truncated,
        truncated=np.zeros_like(segment.truncated),
        episode_starts=segment.episode_starts,
        final_index=np.zeros((0, 2), dtype=np.int64),
        final_observations=np.zeros((0, 1), dtype=np.float32),
    )
    gamma = 0.9
    config = UpdateConfig(
        gamma=gamma, q_coef=0.5, ent_coef=0.01, correction_term=10.0, trust_region=True, delta=1.0
    )

    for seg in (segment, as_terminated):
        _, stats = compute_gradients(
            policy=model.policy, avg_policy=model.policy_avg, segment=seg, config=config
        )
        expected = _flat_q_targets(seg.terminated, seg.truncated, gamma)
        assert stats.loss_q == pytest.approx(float(0.5 * np.mean((expected - 10.0) ** 2)), rel=1e-4)
    # Cutting env 0's return at the time limit (SB2) would give it targets near 1 instead of near 10.
    cut = _flat_q_targets(as_terminated.terminated, as_terminated.truncated, gamma)
    bootstrapped = _flat_q_targets(segment.terminated, segment.truncated, gamma)
    assert 0.5 * np.mean((cut - 10.0) ** 2) - 0.5 * np.mean((bootstrapped - 10.0) ** 2) > 5.0


@pytest.mark.parametrize("lam", [1.0, 0.5, 0.0])
def test_update_uses_retrace_lambda(lam: float) -> None:
    """Retrace(lambda): the traces are lambda * min(1, rho). With Q = V = 10 everywhere and on-policy rho = 1,
    the targets follow carry = lambda (Q_ret - 10) + 10 (lambda 0: one-step targets r + gamma 10)."""
    segment, model = _truncation_segment()
    with th.no_grad():
        model.policy.q_net.weight.zero_()
        model.policy.q_net.bias.fill_(10.0)
    gamma = 0.9
    config = UpdateConfig(
        gamma=gamma,
        q_coef=0.5,
        ent_coef=0.01,
        correction_term=10.0,
        trust_region=True,
        delta=1.0,
        retrace_lambda=lam,
    )
    q_ret = _flat_q_targets(segment.terminated, segment.truncated, gamma, lam)
    _, stats = compute_gradients(
        policy=model.policy, avg_policy=model.policy_avg, segment=segment, config=config
    )
    assert stats.loss_q == pytest.approx(float(0.5 * np.mean((q_ret - 10.0) ** 2)), rel=1e-4)
    if lam == 0.0:
        assert np.allclose(q_ret, 1.0 + gamma * (1.0 - segment.terminated) * 10.0)


# ---------------------------------------------------------------------------------------------- q_lr_ratio


def _one_update_deltas(q_lr_ratio: float, **kwargs: Any) -> tuple[ACER, dict[str, th.Tensor]]:
    """Parameter changes of one on-policy update (no replay) from the seed-0 initialisation."""
    model = ACER(
        "MlpPolicy", "CartPole-v1", seed=0, n_steps=5, replay_ratio=0, q_lr_ratio=q_lr_ratio, **kwargs
    )
    before = {name: p.detach().clone() for name, p in model.policy.named_parameters()}
    model.learn(5)
    assert model._n_updates == 1
    return model, {name: p.detach() - before[name] for name, p in model.policy.named_parameters()}


@pytest.mark.parametrize("policy_kwargs", [None, dict(net_arch=[16, dict(pi=[8], qf=[8])])])
def test_q_lr_ratio_scales_the_critics_own_step_only(policy_kwargs: dict | None) -> None:
    """RMSProp's first step is lr g / sqrt(alpha + (1 - alpha) g^2 + eps) for both models (same
    initialisation, same segment), so the critic's own parameters move exactly 3 times as far and every
    other parameter, shared layers included, moves the same."""
    kwargs = dict(learning_rate=1e-3, lr_schedule="constant", policy_kwargs=policy_kwargs)
    model, base = _one_update_deltas(1.0, **kwargs)
    scaled_model, scaled = _one_update_deltas(3.0, **kwargs)
    assert len(model.optimizer.param_groups) == 1
    assert [group["lr"] for group in scaled_model.optimizer.param_groups] == [1e-3, pytest.approx(3e-3)]
    q_names = {
        name
        for name, _ in scaled_model.policy.named_parameters()
        if name.startswith(("q_net", "mlp_extractor.value_net"))
    }
    assert q_names and any(name.startswith("q_net") for name in q_names)
    for name, delta in base.items():
        assert delta.abs().max() > 0, name
        factor = 3.0 if name in q_names else 1.0
        th.testing.assert_close(scaled[name], factor * delta, rtol=1e-4, atol=1e-7, msg=name)
    if policy_kwargs is not None:
        assert any(name.startswith("shared_net") for name in base)


@pytest.mark.parametrize(
    ("policy", "policy_kwargs", "shared"),
    [
        ("MlpPolicy", dict(net_arch=[32, 32]), "shared_net"),
        ("MlpLstmPolicy", dict(n_lstm=8, net_arch=[8, "lstm", dict(pi=[4], qf=[4])]), "lstm"),
    ],
)
def test_q_lr_ratio_groups_hold_the_critics_own_parameters(
    policy: str, policy_kwargs: dict, shared: str
) -> None:
    model = ACER(policy, "CartPole-v1", n_steps=5, q_lr_ratio=0.5, policy_kwargs=policy_kwargs)
    names = {id(p): name for name, p in model.policy.named_parameters()}
    policy_group, q_group = (
        [names[id(p)] for p in group["params"]] for group in model.optimizer.param_groups
    )
    assert sorted(policy_group + q_group) == sorted(names.values())
    assert all(name.startswith(("q_net", "mlp_extractor.value_net")) for name in q_group)
    assert {"q_net.weight", "q_net.bias"} <= set(q_group)
    assert any(name.startswith(shared) for name in policy_group)

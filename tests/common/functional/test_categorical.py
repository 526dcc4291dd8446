"""The ACER math in ``sb3_acer.common.functional.categorical``, pinned against float64 naive-loop oracles and
exact properties.

Every oracle below is written with plain Python loops over ``t``, ``b`` and ``a`` on Python floats (float64),
independently of the vectorised torch code it checks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch as th

from sb3_acer.common.functional import categorical as F

SHAPES = [(1, 1, 2), (3, 2, 4), (5, 3, 3), (8, 4, 6)]  # (T, B, A)
DTYPE = th.float64
TIGHT = dict(rtol=1e-12, atol=1e-12)


def _gen(seed: int) -> th.Generator:
    return th.Generator().manual_seed(seed)


def _probs(gen: th.Generator, shape: tuple[int, ...], temperature: float = 2.0) -> th.Tensor:
    return th.softmax(temperature * th.randn(shape, generator=gen, dtype=DTYPE), dim=-1)


def _actions(gen: th.Generator, n_steps: int, n_batch: int, n_actions: int) -> th.Tensor:
    return th.randint(n_actions, (n_steps, n_batch), generator=gen)


def _mask(gen: th.Generator, shape: tuple[int, ...], p: float) -> th.Tensor:
    return th.rand(shape, generator=gen, dtype=DTYPE) < p


def _close(actual: th.Tensor, expected: list | float) -> None:
    th.testing.assert_close(actual, th.as_tensor(expected, dtype=DTYPE), **TIGHT)


# ---------------------------------------------------------------------------------------------------------
# Oracles (plain Python, float64)
# ---------------------------------------------------------------------------------------------------------


def oracle_importance_weights(pi, mu, actions, eps):
    n_steps, n_batch, n_actions = len(pi), len(pi[0]), len(pi[0][0])
    rho = [[[0.0] * n_actions for _ in range(n_batch)] for _ in range(n_steps)]
    rho_i = [[0.0] * n_batch for _ in range(n_steps)]
    for t in range(n_steps):
        for b in range(n_batch):
            for a in range(n_actions):
                rho[t][b][a] = pi[t][b][a] / (mu[t][b][a] + eps)
            rho_i[t][b] = rho[t][b][actions[t][b]]
    return rho, rho_i


def oracle_retrace(rewards, q_i, values, rho_bar, terminated, gamma, truncated=None, truncation_values=None):
    n_steps, n_batch = len(rewards), len(rewards[0])
    q_ret = [[0.0] * n_batch for _ in range(n_steps)]
    for b in range(n_batch):
        carry = values[n_steps][b]
        for t in reversed(range(n_steps)):
            if terminated[t][b]:
                target = rewards[t][b]
            elif truncated is not None and truncated[t][b]:
                target = rewards[t][b] + gamma * truncation_values[t][b]
            else:
                target = rewards[t][b] + gamma * carry
            q_ret[t][b] = target
            carry = rho_bar[t][b] * (target - q_i[t][b]) + values[t][b]
    return q_ret


def oracle_policy_loss(pi, actions, rho, q_ret, q_values, values, c, eps):
    """Loss values and the closed-form per-sample gradient ``g`` of sb2-acer-behaviour.md 1.4."""
    n_steps, n_batch, n_actions = len(pi), len(pi[0]), len(pi[0][0])
    n = n_steps * n_batch
    loss_f = loss_bc = 0.0
    g = [[[0.0] * n_actions for _ in range(n_batch)] for _ in range(n_steps)]
    for t in range(n_steps):
        for b in range(n_batch):
            i = actions[t][b]
            adv = q_ret[t][b] - values[t][b]
            weight = min(c, rho[t][b][i])
            loss_f -= math.log(pi[t][b][i] + eps) * weight * adv
            g[t][b][i] += weight * adv / (pi[t][b][i] + eps)
            for a in range(n_actions):
                correction = max(0.0, 1.0 - c / (rho[t][b][a] + eps))
                q_adv = q_values[t][b][a] - values[t][b]
                loss_bc -= math.log(pi[t][b][a] + eps) * correction * pi[t][b][a] * q_adv
                g[t][b][a] += correction * pi[t][b][a] * q_adv / (pi[t][b][a] + eps)
    return loss_f / n, loss_bc / n, g


def oracle_projection(g, k, delta, eps):
    z, adj, k_dot_g = [], [], []
    for g_row, k_row in zip(g, k, strict=True):
        kg = sum(ka * ga for ka, ga in zip(k_row, g_row, strict=True))
        kk = sum(ka * ka for ka in k_row)
        scale = max(0.0, (kg - delta) / (kk + eps))
        z.append([ga - scale * ka for ga, ka in zip(g_row, k_row, strict=True)])
        adj.append(scale)
        k_dot_g.append(kg)
    return z, adj, k_dot_g


def oracle_variance(xs):
    mean = sum(xs) / len(xs)
    return sum((x - mean) ** 2 for x in xs) / len(xs)


# ---------------------------------------------------------------------------------------------------------
# importance_weights / truncated_weights
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("eps", [0.0, F.EPS])
def test_importance_weights_match_oracle(shape, eps):
    gen = _gen(1)
    pi, mu = _probs(gen, shape), _probs(gen, shape)
    actions = _actions(gen, *shape)
    weights = F.importance_weights(pi_probs=pi, mu_probs=mu, actions=actions, eps=eps)
    rho, rho_i = oracle_importance_weights(pi.tolist(), mu.tolist(), actions.tolist(), eps)
    _close(weights.rho, rho)
    _close(weights.rho_i, rho_i)


def test_importance_weights_on_policy_are_one():
    gen = _gen(2)
    pi = _probs(gen, (4, 3, 5))
    weights = F.importance_weights(pi_probs=pi, mu_probs=pi, actions=_actions(gen, 4, 3, 5), eps=0.0)
    assert th.equal(weights.rho, th.ones_like(pi))
    assert th.equal(weights.rho_i, th.ones(4, 3, dtype=DTYPE))


def test_importance_weights_shape_errors():
    pi = th.full((3, 2, 4), 0.25, dtype=DTYPE)
    actions = th.zeros(3, 2, dtype=th.long)
    with pytest.raises(
        ValueError, match=r"pi_probs must have 3 dimensions \(time-major\), got shape \(6, 4\)"
    ):
        F.importance_weights(pi_probs=pi.reshape(6, 4), mu_probs=pi.reshape(6, 4), actions=actions)
    with pytest.raises(ValueError, match=r"mu_probs shape \(3, 2, 5\) != pi_probs shape \(3, 2, 4\)"):
        F.importance_weights(pi_probs=pi, mu_probs=th.full((3, 2, 5), 0.2), actions=actions)
    with pytest.raises(ValueError, match=r"actions shape \(3, 2, 1\) != \[T, B\] = \(3, 2\)"):
        F.importance_weights(pi_probs=pi, mu_probs=pi, actions=actions.unsqueeze(-1))


@pytest.mark.parametrize("c", [0.5, 1.0, 10.0])
@pytest.mark.parametrize("eps", [0.0, F.EPS])
def test_truncated_weights_match_oracle(c, eps):
    rho = th.exp(3 * th.randn(7, 3, 4, generator=_gen(3), dtype=DTYPE))  # spans e^-9 .. e^9
    rho[0, 0, 0], rho[0, 0, 1] = c, 0.0  # the kink and a zero weight
    weights = F.truncated_weights(rho=rho, c=c, eps=eps)
    flat = rho.reshape(-1).tolist()
    truncated = [min(c, r) for r in flat]
    correction = [max(0.0, 1.0 - c / (r + eps)) if r + eps > 0 else 0.0 for r in flat]
    _close(weights.truncated.reshape(-1), truncated)
    _close(weights.correction.reshape(-1), correction)
    assert bool((weights.correction[rho + eps <= c] == 0).all())
    assert bool((weights.correction < 1).all())


def test_truncated_weights_split_rho_exactly():
    """``min(c, rho) + rho [1 - c/rho]_+ == rho`` for every rho (eps = 0)."""
    rho = th.tensor([0.0, 1e-8, 0.3, 0.999, 1.0, 1.001, 2.0, 7.5, 1e6], dtype=DTYPE)
    for c in (0.5, 1.0, 3.0):
        weights = F.truncated_weights(rho=rho, c=c, eps=0.0)
        th.testing.assert_close(weights.truncated + rho * weights.correction, rho, rtol=1e-15, atol=1e-15)


@pytest.mark.parametrize("c", [0.0, -1.0])
def test_truncated_weights_reject_non_positive_c(c):
    with pytest.raises(ValueError, match=rf"c \(correction_term\) must be positive, got {c}"):
        F.truncated_weights(rho=th.ones(2, 2), c=c)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("c", [0.3, 1.0, 5.0])
def test_truncated_is_plus_bias_correction_is_unbiased(shape, c):
    """``sum_a mu min(c, rho) h + sum_a pi [1 - c/rho]_+ h == sum_a pi h`` for any ``h`` (eps = 0)."""
    gen = _gen(4)
    pi, mu = _probs(gen, shape), _probs(gen, shape)
    h = 5 * th.randn(shape, generator=gen, dtype=DTYPE)
    rho = F.importance_weights(pi_probs=pi, mu_probs=mu, actions=_actions(gen, *shape[:2], shape[2]), eps=0.0)
    weights = F.truncated_weights(rho=rho.rho, c=c, eps=0.0)
    lhs = (mu * weights.truncated * h).sum(-1) + (pi * weights.correction * h).sum(-1)
    th.testing.assert_close(lhs, (pi * h).sum(-1), **TIGHT)
    # With the default eps the identity holds up to a term of order eps / mu.
    rho_eps = pi / (mu + F.EPS)
    weights_eps = F.truncated_weights(rho=rho_eps, c=c)
    lhs_eps = (mu * weights_eps.truncated * h).sum(-1) + (pi * weights_eps.correction * h).sum(-1)
    th.testing.assert_close(lhs_eps, (pi * h).sum(-1), rtol=0, atol=1e-3)


# ---------------------------------------------------------------------------------------------------------
# retrace_targets
# ---------------------------------------------------------------------------------------------------------


def _retrace_inputs(seed: int, n_steps: int, n_batch: int, p_term: float = 0.2, p_trunc: float = 0.0):
    gen = _gen(seed)
    shape = (n_steps, n_batch)
    terminated = _mask(gen, shape, p_term)
    truncated = _mask(gen, shape, p_trunc)
    return dict(
        rewards=th.randn(shape, generator=gen, dtype=DTYPE),
        q_i=th.randn(shape, generator=gen, dtype=DTYPE),
        values=th.randn((n_steps + 1, n_batch), generator=gen, dtype=DTYPE),
        rho_bar=th.clamp(th.exp(th.randn(shape, generator=gen, dtype=DTYPE)), max=1.0),
        terminated=terminated,
        truncated=truncated,
        truncation_values=th.randn(shape, generator=gen, dtype=DTYPE),
    )


def _oracle_from(inputs: dict, gamma: float, with_truncation: bool) -> list:
    return oracle_retrace(
        inputs["rewards"].tolist(),
        inputs["q_i"].tolist(),
        inputs["values"].tolist(),
        inputs["rho_bar"].tolist(),
        inputs["terminated"].tolist(),
        gamma,
        inputs["truncated"].tolist() if with_truncation else None,
        inputs["truncation_values"].tolist() if with_truncation else None,
    )


@pytest.mark.parametrize("n_steps,n_batch", [(1, 1), (5, 3), (20, 4)])
@pytest.mark.parametrize("gamma", [0.0, 0.9, 0.99, 1.0])
def test_retrace_matches_oracle_without_truncation(n_steps, n_batch, gamma):
    inputs = _retrace_inputs(5, n_steps, n_batch, p_term=0.2)
    q_ret = F.retrace_targets(
        rewards=inputs["rewards"],
        q_i=inputs["q_i"],
        values=inputs["values"],
        rho_bar=inputs["rho_bar"],
        terminated=inputs["terminated"],
        gamma=gamma,
    )
    _close(q_ret, _oracle_from(inputs, gamma, with_truncation=False))


@pytest.mark.parametrize("n_steps,n_batch", [(1, 1), (5, 3), (20, 4)])
@pytest.mark.parametrize("gamma", [0.9, 0.99])
def test_retrace_matches_oracle_with_truncation(n_steps, n_batch, gamma):
    inputs = _retrace_inputs(6, n_steps, n_batch, p_term=0.15, p_trunc=0.15)
    inputs["terminated"][0, 0] = inputs["truncated"][0, 0] = True  # both at once: termination wins
    q_ret = F.retrace_targets(gamma=gamma, **inputs)
    _close(q_ret, _oracle_from(inputs, gamma, with_truncation=True))
    assert q_ret[0, 0].item() == inputs["rewards"][0, 0].item()


def test_retrace_numpy_path_computes_float32_inputs_in_float64():
    inputs = _retrace_inputs(9, 20, 4, p_term=0.15, p_trunc=0.15)
    scaled = {k: v * 100 if v.dtype == th.float32 else v for k, v in inputs.items()}
    as_float32 = {
        k: v.to(th.float32).numpy() if v.is_floating_point() else v.numpy() for k, v in scaled.items()
    }
    q_ret = F._retrace_numpy(gamma=0.99, **as_float32)
    oracle = oracle_retrace(
        *(as_float32[k].astype(np.float64).tolist() for k in ("rewards", "q_i", "values", "rho_bar")),
        as_float32["terminated"].tolist(),
        0.99,
        as_float32["truncated"].tolist(),
        as_float32["truncation_values"].astype(np.float64).tolist(),
    )
    assert q_ret.dtype == np.float64
    np.testing.assert_allclose(q_ret, oracle, rtol=1e-13, atol=1e-11)


def test_retrace_splitting_at_termination_gives_the_same_targets():
    inputs = _retrace_inputs(7, 12, 3, p_term=0.0)
    split = 5
    inputs["terminated"][split, :] = True
    full = F.retrace_targets(
        rewards=inputs["rewards"],
        q_i=inputs["q_i"],
        values=inputs["values"],
        rho_bar=inputs["rho_bar"],
        terminated=inputs["terminated"],
        gamma=0.97,
    )
    pieces = []
    for lo, hi in ((0, split + 1), (split + 1, 12)):
        pieces.append(
            F.retrace_targets(
                rewards=inputs["rewards"][lo:hi],
                q_i=inputs["q_i"][lo:hi],
                values=inputs["values"][lo : hi + 1],
                rho_bar=inputs["rho_bar"][lo:hi],
                terminated=inputs["terminated"][lo:hi],
                gamma=0.97,
            )
        )
    assert th.equal(full, th.cat(pieces))
    # The first piece does not depend on its bootstrap value: the termination cuts the return.
    cut = dict(inputs, values=inputs["values"].clone())
    cut["values"][split + 1 :] = 1e6
    first = F.retrace_targets(
        rewards=cut["rewards"][: split + 1],
        q_i=cut["q_i"][: split + 1],
        values=cut["values"][: split + 2],
        rho_bar=cut["rho_bar"][: split + 1],
        terminated=cut["terminated"][: split + 1],
        gamma=0.97,
    )
    assert th.equal(first, pieces[0])


@pytest.mark.parametrize("kind", ["terminated", "truncated"])
def test_retrace_targets_before_an_episode_end_ignore_everything_after_it(kind):
    inputs = _retrace_inputs(8, 10, 2, p_term=0.0, p_trunc=0.0)
    end = 4
    inputs[kind][end, :] = True
    before = F.retrace_targets(gamma=0.99, **inputs)
    changed = {name: tensor.clone() for name, tensor in inputs.items()}
    for name in ("rewards", "q_i", "rho_bar"):
        changed[name][end + 1 :] = -123.0
    changed["values"][end + 1 :] = 456.0
    after = F.retrace_targets(gamma=0.99, **changed)
    assert th.equal(after[: end + 1], before[: end + 1])
    assert not th.equal(after[end + 1 :], before[end + 1 :])


def test_retrace_truncation_bootstraps_from_truncation_values_and_termination_cuts():
    inputs = _retrace_inputs(9, 8, 3, p_term=0.0, p_trunc=0.0)
    gamma, end = 0.95, 3
    inputs["truncated"][end, 0] = True  # env 0: time limit
    inputs["terminated"][end, 1] = True  # env 1: real termination
    q_ret = F.retrace_targets(gamma=gamma, **inputs)
    r, v_final = inputs["rewards"][end], inputs["truncation_values"][end]
    assert q_ret[end, 0].item() == r[0].item() + gamma * v_final[0].item()
    assert q_ret[end, 1].item() == r[1].item()
    # Truncation at `end` is the same as a segment that ends there with bootstrap V(final obs).
    piece_values = inputs["values"][: end + 2].clone()
    piece_values[end + 1] = v_final
    piece = F.retrace_targets(
        rewards=inputs["rewards"][: end + 1],
        q_i=inputs["q_i"][: end + 1],
        values=piece_values,
        rho_bar=inputs["rho_bar"][: end + 1],
        terminated=inputs["terminated"][: end + 1],
        gamma=gamma,
    )
    assert th.equal(q_ret[: end + 1, 0], piece[:, 0])
    # Where nothing is truncated, truncation_values are ignored.
    other = dict(inputs, truncation_values=inputs["truncation_values"] + 100.0)
    other["truncation_values"][end, 0] = v_final[0]
    assert th.equal(F.retrace_targets(gamma=gamma, **other), q_ret)


def test_retrace_with_rho_bar_one_and_q_equal_v_is_the_n_step_return():
    """rho_bar = 1 on-policy with Q(x_t, a_t) = V(x_t): Q_ret_t = sum_k gamma^k r_{t+k} (+ gamma^n V_T)."""
    n_steps, n_batch, gamma = 9, 3, 0.9
    inputs = _retrace_inputs(10, n_steps, n_batch, p_term=0.15)
    q_ret = F.retrace_targets(
        rewards=inputs["rewards"],
        q_i=inputs["values"][:-1],
        values=inputs["values"],
        rho_bar=th.ones(n_steps, n_batch, dtype=DTYPE),
        terminated=inputs["terminated"],
        gamma=gamma,
    )
    rewards, values, done = (
        inputs["rewards"].tolist(),
        inputs["values"].tolist(),
        inputs["terminated"].tolist(),
    )
    expected = [[0.0] * n_batch for _ in range(n_steps)]
    for b in range(n_batch):
        for t in range(n_steps):
            total, k = 0.0, t
            while True:
                total += gamma ** (k - t) * rewards[k][b]
                if done[k][b]:
                    break
                if k == n_steps - 1:
                    total += gamma ** (n_steps - t) * values[n_steps][b]
                    break
                k += 1
            expected[t][b] = total
    _close(q_ret, expected)


def test_retrace_with_rho_bar_zero_is_the_one_step_target():
    inputs = _retrace_inputs(11, 6, 2, p_term=0.3)
    q_ret = F.retrace_targets(
        rewards=inputs["rewards"],
        q_i=inputs["q_i"],
        values=inputs["values"],
        rho_bar=th.zeros(6, 2, dtype=DTYPE),
        terminated=inputs["terminated"],
        gamma=0.8,
    )
    not_done = 1.0 - inputs["terminated"].to(DTYPE)
    th.testing.assert_close(q_ret, inputs["rewards"] + 0.8 * not_done * inputs["values"][1:], **TIGHT)


def test_retrace_has_no_gradient():
    inputs = _retrace_inputs(12, 4, 2)
    inputs = {k: v.requires_grad_() if v.is_floating_point() else v for k, v in inputs.items()}
    q_ret = F.retrace_targets(gamma=0.99, **inputs)
    assert not q_ret.requires_grad


def test_retrace_shape_errors():
    inputs = _retrace_inputs(13, 4, 2, p_trunc=0.2)
    base = {k: inputs[k] for k in ("rewards", "q_i", "values", "rho_bar", "terminated")}
    with pytest.raises(ValueError, match=r"rewards must have 2 dimensions \(time-major\), got shape \(8,\)"):
        F.retrace_targets(**dict(base, rewards=inputs["rewards"].reshape(8)), gamma=0.9)
    with pytest.raises(ValueError, match=r"q_i shape \(4, 3\) != rewards shape \(4, 2\)"):
        F.retrace_targets(**dict(base, q_i=th.zeros(4, 3, dtype=DTYPE)), gamma=0.9)
    with pytest.raises(ValueError, match=r"terminated shape \(3, 2\) != rewards shape \(4, 2\)"):
        F.retrace_targets(**dict(base, terminated=inputs["terminated"][:3]), gamma=0.9)
    with pytest.raises(ValueError, match=r"values must be \[T \+ 1, B\] = \(5, 2\), got \(4, 2\)"):
        F.retrace_targets(**dict(base, values=inputs["values"][:4]), gamma=0.9)
    with pytest.raises(ValueError, match="truncated and truncation_values must be given together"):
        F.retrace_targets(**base, truncated=inputs["truncated"], gamma=0.9)
    with pytest.raises(ValueError, match=r"truncation_values shape \(4,\) != rewards shape \(4, 2\)"):
        F.retrace_targets(
            **base,
            truncated=inputs["truncated"],
            truncation_values=inputs["truncation_values"][:, 0],
            gamma=0.9,
        )


# ---------------------------------------------------------------------------------------------------------
# acer_policy_loss
# ---------------------------------------------------------------------------------------------------------


def _policy_inputs(seed: int, shape: tuple[int, int, int]):
    gen = _gen(seed)
    n_steps, n_batch, n_actions = shape
    pi, mu = _probs(gen, shape), _probs(gen, shape)
    q_values = th.randn(shape, generator=gen, dtype=DTYPE)
    return dict(
        pi=pi,
        mu=mu,
        actions=_actions(gen, n_steps, n_batch, n_actions),
        q_values=q_values,
        values=(pi * q_values).sum(-1),
        q_ret=th.randn((n_steps, n_batch), generator=gen, dtype=DTYPE),
    )


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("c", [0.5, 1.0, 10.0])
@pytest.mark.parametrize("eps", [0.0, F.EPS])
def test_policy_loss_and_gradient_match_oracle(shape, c, eps):
    data = _policy_inputs(14, shape)
    pi = data["pi"].clone().requires_grad_()
    rho = pi / (data["mu"] + eps)  # depends on pi: the loss must still treat it as a constant
    q_values = data["q_values"].clone().requires_grad_()
    values = data["values"].clone().requires_grad_()
    q_ret = data["q_ret"].clone().requires_grad_()
    loss = F.acer_policy_loss(
        pi_probs=pi,
        actions=data["actions"],
        rho=rho,
        q_ret=q_ret,
        q_values=q_values,
        values=values,
        c=c,
        eps=eps,
    )
    loss_f, loss_bc, g = oracle_policy_loss(
        data["pi"].tolist(),
        data["actions"].tolist(),
        (data["pi"] / (data["mu"] + eps)).tolist(),
        data["q_ret"].tolist(),
        data["q_values"].tolist(),
        data["values"].tolist(),
        c,
        eps,
    )
    _close(loss.loss_f, loss_f)
    _close(loss.loss_bc, loss_bc)
    (loss.loss_f + loss.loss_bc).backward()
    n_samples = shape[0] * shape[1]
    _close(pi.grad, [[[-x / n_samples for x in row] for row in block] for block in g])
    # Only log pi carries gradient: Q, V and Q_ret are held constant.
    assert q_values.grad is None and values.grad is None and q_ret.grad is None


def test_policy_loss_exercises_both_branches():
    """The oracle comparison above is meaningful: some rho exceed c and some do not."""
    data = _policy_inputs(14, (8, 4, 6))
    rho = data["pi"] / data["mu"]
    assert bool((rho > 0.5).any()) and bool((rho < 0.5).any())
    loss = F.acer_policy_loss(
        pi_probs=data["pi"],
        actions=data["actions"],
        rho=rho,
        q_ret=data["q_ret"],
        q_values=data["q_values"],
        values=data["values"],
        c=0.5,
    )
    assert loss.loss_bc.item() != 0.0


def test_policy_loss_has_no_bias_correction_on_policy():
    """rho == 1 < c: the correction weights vanish and loss_f is the plain policy-gradient loss."""
    data = _policy_inputs(15, (4, 3, 5))
    pi = data["pi"]
    loss = F.acer_policy_loss(
        pi_probs=pi,
        actions=data["actions"],
        rho=th.ones_like(pi),
        q_ret=data["q_ret"],
        q_values=data["q_values"],
        values=data["values"],
        c=10.0,
        eps=0.0,
    )
    assert loss.loss_bc.item() == 0.0
    log_pi_i = th.log(pi.gather(-1, data["actions"].unsqueeze(-1)).squeeze(-1))
    _close(loss.loss_f, (-(log_pi_i * (data["q_ret"] - data["values"]))).mean().item())


def test_policy_loss_errors():
    data = _policy_inputs(16, (3, 2, 4))
    kwargs = dict(
        pi_probs=data["pi"],
        actions=data["actions"],
        rho=th.ones_like(data["pi"]),
        q_ret=data["q_ret"],
        q_values=data["q_values"],
        values=data["values"],
        c=1.0,
    )
    with pytest.raises(
        ValueError, match=r"pi_probs must have 3 dimensions \(time-major\), got shape \(6, 4\)"
    ):
        F.acer_policy_loss(**dict(kwargs, pi_probs=data["pi"].reshape(6, 4)))
    with pytest.raises(ValueError, match=r"q_values and rho must have the shape of pi_probs \[T, B, A\]"):
        F.acer_policy_loss(**dict(kwargs, q_values=data["q_values"][..., :3]))
    with pytest.raises(ValueError, match=r"q_values and rho must have the shape of pi_probs \[T, B, A\]"):
        F.acer_policy_loss(**dict(kwargs, rho=th.ones(3, 2, 1, dtype=DTYPE)))
    with pytest.raises(ValueError, match=r"values and q_ret must be \[T, B\] = \(3, 2\)"):
        F.acer_policy_loss(**dict(kwargs, values=th.zeros(4, 2, dtype=DTYPE)))
    with pytest.raises(ValueError, match=r"values and q_ret must be \[T, B\] = \(3, 2\)"):
        F.acer_policy_loss(**dict(kwargs, q_ret=data["q_ret"].unsqueeze(-1)))
    with pytest.raises(ValueError, match=r"actions shape \(6,\) != \[T, B\] = \(3, 2\)"):
        F.acer_policy_loss(**dict(kwargs, actions=data["actions"].reshape(6)))
    with pytest.raises(ValueError, match=r"c \(correction_term\) must be positive, got 0.0"):
        F.acer_policy_loss(**dict(kwargs, c=0.0))


# ---------------------------------------------------------------------------------------------------------
# categorical_entropy / categorical_kl / kl_gradient
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("eps", [0.0, F.EPS])
def test_categorical_entropy_matches_oracle_and_its_gradient(shape, eps):
    probs = _probs(_gen(17), shape).requires_grad_()
    entropy = F.categorical_entropy(probs, eps=eps)
    rows = probs.detach().reshape(-1, shape[-1]).tolist()
    _close(entropy.reshape(-1), [-sum(p * math.log(p + eps) for p in row) for row in rows])
    entropy.sum().backward()
    grad = [[-(math.log(p + eps) + p / (p + eps)) for p in row] for row in rows]
    _close(probs.grad.reshape(-1, shape[-1]), grad)


def test_categorical_entropy_extremes():
    n_actions = 6
    uniform = th.full((2, 3, n_actions), 1.0 / n_actions, dtype=DTYPE)
    _close(F.categorical_entropy(uniform, eps=0.0), [[math.log(n_actions)] * 3] * 2)
    one_hot = th.zeros(1, 1, n_actions, dtype=DTYPE)
    one_hot[..., 2] = 1.0
    _close(F.categorical_entropy(one_hot), [[-math.log(1.0 + F.EPS)]])


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("eps", [0.0, F.EPS])
def test_categorical_kl_matches_oracle(shape, eps):
    gen = _gen(18)
    p, q = _probs(gen, shape), _probs(gen, shape)
    kl = F.categorical_kl(p_probs=p, q_probs=q, eps=eps)
    expected = [
        sum(pa * (math.log(pa + eps) - math.log(qa + eps)) for pa, qa in zip(p_row, q_row, strict=True))
        for p_row, q_row in zip(
            p.reshape(-1, shape[-1]).tolist(), q.reshape(-1, shape[-1]).tolist(), strict=True
        )
    ]
    _close(kl.reshape(-1), expected)
    assert bool((kl >= 0).all())
    assert th.equal(F.categorical_kl(p_probs=p, q_probs=p, eps=eps), th.zeros(shape[:-1], dtype=DTYPE))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("eps", [0.0, F.EPS])
def test_kl_gradient_matches_oracle_and_autograd(shape, eps):
    gen = _gen(19)
    avg, pi = _probs(gen, shape), _probs(gen, shape)
    k = F.kl_gradient(avg_probs=avg, pi_probs=pi, eps=eps)
    expected = [
        [-a / (p + eps) for a, p in zip(a_row, p_row, strict=True)]
        for a_row, p_row in zip(
            avg.reshape(-1, shape[-1]).tolist(), pi.reshape(-1, shape[-1]).tolist(), strict=True
        )
    ]
    _close(k.reshape(-1, shape[-1]), expected)
    pi_leaf = pi.clone().requires_grad_()
    (grad,) = th.autograd.grad(F.categorical_kl(p_probs=avg, q_probs=pi_leaf, eps=eps).sum(), pi_leaf)
    th.testing.assert_close(grad, k, **TIGHT)


def test_kl_shape_errors():
    p, q = th.full((2, 3), 1 / 3), th.full((2, 4), 0.25)
    with pytest.raises(ValueError, match=r"p_probs shape \(2, 3\) != q_probs shape \(2, 4\)"):
        F.categorical_kl(p_probs=p, q_probs=q)
    with pytest.raises(ValueError, match=r"avg_probs shape \(2, 3\) != pi_probs shape \(2, 4\)"):
        F.kl_gradient(avg_probs=p, pi_probs=q)


# ---------------------------------------------------------------------------------------------------------
# trust_region_projection
# ---------------------------------------------------------------------------------------------------------


def _projection_inputs(seed: int, shape: tuple[int, ...]):
    gen = _gen(seed)
    g = 3 * th.randn(shape, generator=gen, dtype=DTYPE)
    k = F.kl_gradient(avg_probs=_probs(gen, shape), pi_probs=_probs(gen, shape))
    return g, k


@pytest.mark.parametrize("shape", [(1, 1, 2), (3, 2, 4), (8, 4, 6), (5, 7)])
@pytest.mark.parametrize("delta", [0.1, 1.0, 3.0])
@pytest.mark.parametrize("eps", [0.0, F.EPS])
def test_trust_region_projection_matches_oracle(shape, delta, eps):
    g, k = _projection_inputs(20, shape)
    step = F.trust_region_projection(g=g, k=k, delta=delta, eps=eps)
    z, adj, k_dot_g = oracle_projection(
        g.reshape(-1, shape[-1]).tolist(), k.reshape(-1, shape[-1]).tolist(), delta, eps
    )
    _close(step.z.reshape(-1, shape[-1]), z)
    _close(step.adj.reshape(-1), adj)
    _close(step.k_dot_g.reshape(-1), k_dot_g)


@pytest.mark.parametrize("delta", [0.1, 1.0, 3.0])
def test_trust_region_projection_is_identity_inside_and_hits_the_boundary_outside(delta):
    g, k = _projection_inputs(21, (40, 16, 5))
    kg = (k * g).sum(-1)
    inside, outside = kg <= delta, kg > delta
    assert bool(inside.any()) and bool(outside.any())
    step = F.trust_region_projection(g=g, k=k, delta=delta, eps=0.0)
    assert th.equal(step.z[inside], g[inside])
    assert th.equal(step.adj[inside], th.zeros_like(step.adj[inside]))
    k_dot_z = (k * step.z).sum(-1)[outside]
    th.testing.assert_close(k_dot_z, th.full_like(k_dot_z, delta), rtol=0, atol=1e-11)
    assert bool((step.adj[outside] > 0).all())
    # With the default eps the constraint is met up to the eps in the denominator.
    step_eps = F.trust_region_projection(g=g, k=k, delta=delta)
    assert th.equal(step_eps.z[inside], g[inside])
    k_dot_z_eps = (k * step_eps.z).sum(-1)[outside]
    slack = (kg[outside] - delta) * F.EPS / ((k * k).sum(-1)[outside] + F.EPS)
    assert bool((k_dot_z_eps >= delta - 1e-11).all())
    assert bool((k_dot_z_eps - delta <= slack + 1e-11).all())


def test_trust_region_projection_exact_boundary_and_zero_k():
    k = th.tensor([[1.0, 2.0], [0.0, 0.0]], dtype=DTYPE)
    g = th.tensor([[0.5, 0.25], [3.0, -4.0]], dtype=DTYPE)  # k.g == delta == 1 in the first row
    step = F.trust_region_projection(g=g, k=k, delta=1.0, eps=0.0)
    assert th.equal(step.z, g)
    assert step.adj.tolist() == [0.0, 0.0]
    assert step.k_dot_g.tolist() == [1.0, 0.0]


def _gradient_with_rewards_scaled(data: dict, s: float, ent_coef: float = 0.0) -> th.Tensor:
    """``g`` of ``_policy_inputs`` data with ``Q_ret``, ``Q`` and ``V`` (as from rewards) scaled by ``s``."""
    return F.acer_policy_gradient(
        pi_probs=data["pi"],
        actions=data["actions"],
        rho=data["pi"] / data["mu"],
        **{key: s * data[key] for key in ("q_ret", "q_values", "values")},
        c=10.0,
        ent_coef=ent_coef,
    )


@pytest.mark.parametrize("scale", [0.01, 0.5, 10.0])
def test_rewards_scaled_by_s_need_delta_scaled_by_s(scale):
    """``delta`` is in the units of the rewards: with rewards (so ``Q_ret``, ``Q``, ``V``) scaled by ``s`` and
    no entropy bonus, ``g`` scales by ``s``, and only ``delta * s`` gives ``s`` times the same step."""
    data = _policy_inputs(23, (20, 8, 4))
    k = F.kl_gradient(avg_probs=_probs(_gen(24), (20, 8, 4)), pi_probs=data["pi"])

    def step(s: float, delta: float) -> th.Tensor:
        # LunarLander-sized values (x50), so that delta = 1 binds on some samples.
        g = _gradient_with_rewards_scaled(data, 50 * s)
        return F.trust_region_projection(g=g, k=k, delta=delta, eps=0.0).z

    base = step(1.0, 1.0)
    th.testing.assert_close(step(scale, scale), scale * base, rtol=1e-10, atol=1e-10)
    assert not th.allclose(step(scale, 1.0), scale * base, rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("scale", [0.01, 0.5, 10.0])
def test_rewards_scaled_by_s_need_ent_coef_scaled_by_s(scale):
    """``ent_coef`` is in the units of the rewards too: ``g`` is linear in ``Q_ret``, ``Q``, ``V`` and
    ``ent_coef`` together, so rewards scaled by ``s`` keep the entropy's weight only with ``ent_coef * s``."""
    data = _policy_inputs(25, (20, 8, 4))

    base = _gradient_with_rewards_scaled(data, 1.0, ent_coef=0.01)
    scaled = _gradient_with_rewards_scaled(data, scale, ent_coef=0.01 * scale)
    th.testing.assert_close(scaled, scale * base, rtol=1e-10, atol=1e-12)
    unscaled = _gradient_with_rewards_scaled(data, scale, ent_coef=0.01)
    assert not th.allclose(unscaled, scale * base, rtol=1e-6, atol=1e-9)


def test_trust_region_projection_errors():
    with pytest.raises(ValueError, match=r"g shape \(2, 3\) != k shape \(2, 4\)"):
        F.trust_region_projection(g=th.zeros(2, 3), k=th.zeros(2, 4), delta=1.0)
    for delta in (0.0, -0.5):
        with pytest.raises(ValueError, match=f"delta must be positive, got {delta}"):
            F.trust_region_projection(g=th.zeros(2, 3), k=th.zeros(2, 3), delta=delta)


# ---------------------------------------------------------------------------------------------------------
# explained_variance
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(2,), (5, 3), (20, 4)])
def test_explained_variance_matches_oracle(shape):
    gen = _gen(22)
    y_true = th.randn(shape, generator=gen, dtype=DTYPE)
    y_pred = y_true + 0.5 * th.randn(shape, generator=gen, dtype=DTYPE)
    flat_true, flat_pred = y_true.reshape(-1).tolist(), y_pred.reshape(-1).tolist()
    diff = [t - p for t, p in zip(flat_true, flat_pred, strict=True)]
    expected = 1.0 - oracle_variance(diff) / oracle_variance(flat_true)
    assert F.explained_variance(y_pred=y_pred, y_true=y_true) == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_explained_variance_reference_values():
    y = th.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=DTYPE)
    assert F.explained_variance(y_pred=y, y_true=y) == 1.0
    assert F.explained_variance(y_pred=th.full_like(y, 7.0), y_true=y) == 0.0
    # Var(y - 2y) / Var(y) = 1.
    assert F.explained_variance(y_pred=2 * y, y_true=y) == 0.0
    assert F.explained_variance(y_pred=-y, y_true=y) == -3.0


@pytest.mark.parametrize(
    "y_true",
    [
        th.full((7,), 0.1, dtype=th.float32),  # th.var gives ~6e-17 here, not 0
        th.full((4, 3), 2.5, dtype=DTYPE),
        th.tensor([[3.0]]),  # one sample: no "degrees of freedom" warning
        th.zeros(0, 2),
    ],
)
def test_explained_variance_is_nan_for_constant_targets(y_true):
    assert math.isnan(F.explained_variance(y_pred=th.zeros_like(y_true) + 1.0, y_true=y_true))


def test_explained_variance_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match=r"y_pred shape \(3, 1\) != y_true shape \(3,\)"):
        F.explained_variance(y_pred=th.zeros(3, 1), y_true=th.arange(3.0))


@pytest.mark.parametrize("ent_coef", [0.0, 0.01, 0.5])
@pytest.mark.parametrize("c", [0.5, 10.0])
def test_closed_form_policy_gradient_matches_autograd(ent_coef: float, c: float) -> None:
    gen = th.Generator().manual_seed(7)
    n_steps, n_envs, n_actions = 4, 3, 5
    logits = th.randn(n_steps, n_envs, n_actions, generator=gen, dtype=th.float64)
    pi_probs = th.softmax(logits, -1).requires_grad_(True)
    mu_probs = th.softmax(th.randn(n_steps, n_envs, n_actions, generator=gen, dtype=th.float64), -1)
    actions = th.randint(n_actions, (n_steps, n_envs), generator=gen)
    q_values = th.randn(n_steps, n_envs, n_actions, generator=gen, dtype=th.float64)
    values = (pi_probs.detach() * q_values).sum(-1)
    q_ret = th.randn(n_steps, n_envs, generator=gen, dtype=th.float64)
    rho = pi_probs.detach() / (mu_probs + F.EPS)
    losses = F.acer_policy_loss(
        pi_probs=pi_probs, actions=actions, rho=rho, q_ret=q_ret, q_values=q_values, values=values, c=c
    )
    entropy = F.categorical_entropy(pi_probs).mean()
    objective = -(losses.loss_f + losses.loss_bc - ent_coef * entropy) * n_steps * n_envs
    (expected,) = th.autograd.grad(objective, pi_probs)
    g = F.acer_policy_gradient(
        pi_probs=pi_probs,
        actions=actions,
        rho=rho,
        q_ret=q_ret,
        q_values=q_values,
        values=values,
        c=c,
        ent_coef=ent_coef,
    )
    assert not g.requires_grad
    th.testing.assert_close(g, expected, rtol=1e-12, atol=1e-12)


def test_torch_and_numpy_retrace_paths_agree() -> None:
    """``retrace_targets`` runs the recursion in NumPy on the CPU and in torch elsewhere; both agree."""
    gen = th.Generator().manual_seed(11)
    n_steps, n_envs = 7, 5
    kwargs = dict(
        rewards=th.randn(n_steps, n_envs, generator=gen),
        q_i=th.randn(n_steps, n_envs, generator=gen),
        values=th.randn(n_steps + 1, n_envs, generator=gen),
        rho_bar=th.rand(n_steps, n_envs, generator=gen),
        terminated=th.rand(n_steps, n_envs, generator=gen) < 0.2,
        gamma=0.97,
        truncated=th.rand(n_steps, n_envs, generator=gen) < 0.2,
        truncation_values=th.randn(n_steps, n_envs, generator=gen),
    )
    numpy_path = F.retrace_targets(**kwargs)  # type: ignore[arg-type]
    torch_path = F._retrace_torch(**kwargs)  # type: ignore[arg-type]
    assert numpy_path.dtype == torch_path.dtype == th.float32
    th.testing.assert_close(numpy_path, torch_path, rtol=1e-5, atol=1e-5)

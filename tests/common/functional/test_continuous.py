"""Continuous and factorised ACER math (``sb3_acer.common.functional.continuous``) against float64 loop
oracles.

Every oracle below is written with plain Python loops on Python floats and ``math`` (float64), independently
of the vectorised torch code it checks; property tests compare the closed forms with ``torch.autograd``.
"""

from __future__ import annotations

import math

import pytest
import torch as th

from sb3_acer.common.functional import categorical as F
from sb3_acer.common.functional import continuous as FC

DTYPE = th.float64
TIGHT = dict(rtol=1e-12, atol=1e-12)
SHAPES = [(1, 1, 1), (3, 2, 4), (6, 3, 2)]  # (T, B, D)


def _gen(seed: int) -> th.Generator:
    return th.Generator().manual_seed(seed)


def _randn(gen: th.Generator, *shape: int, scale: float = 1.0) -> th.Tensor:
    return scale * th.randn(shape, generator=gen, dtype=DTYPE)


def _close(actual: th.Tensor, expected, **tol) -> None:
    th.testing.assert_close(actual, th.as_tensor(expected, dtype=DTYPE), **(tol or TIGHT))


def _gaussian(seed: int, shape: tuple[int, int, int]):
    gen = _gen(seed)
    mean, log_std = _randn(gen, *shape), _randn(gen, *shape, scale=0.5)
    avg_mean, avg_log_std = mean + _randn(gen, *shape, scale=0.3), log_std + _randn(gen, *shape, scale=0.2)
    actions = mean + th.exp(log_std) * _randn(gen, *shape)
    return gen, actions, mean, log_std, avg_mean, avg_log_std


def _factor_probs(gen: th.Generator, shape: tuple[int, ...], sizes: list[int] | None = None) -> th.Tensor:
    probs = th.softmax(2.0 * th.randn(shape, generator=gen, dtype=DTYPE), dim=-1)
    if sizes is not None:  # zero-pad factor f beyond its sizes[f] choices
        mask = th.tensor([[k < n for k in range(shape[-1])] for n in sizes], dtype=DTYPE)
        probs = probs * mask
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


# ---------------------------------------------------------------------------------------------------------
# Oracles (plain Python, float64)
# ---------------------------------------------------------------------------------------------------------


def per_sample(fn, *arrays):
    """Apply ``fn`` to the ``D``-lists of every ``(t, b)`` of ``[T, B, D]`` nested lists."""
    return [[fn(*(x[t][b] for x in arrays)) for b in range(len(arrays[0][0]))] for t in range(len(arrays[0]))]


def oracle_log_prob(a, mu, log_std):
    total = 0.0
    for a_d, mu_d, s_d in zip(a, mu, log_std, strict=True):
        sigma = math.exp(s_d)
        total += -((a_d - mu_d) ** 2) / (2 * sigma**2) - s_d - 0.5 * math.log(2 * math.pi)
    return total


def oracle_entropy(log_std):
    return sum(s + 0.5 * math.log(2 * math.pi * math.e) for s in log_std)


def oracle_kl(avg_mu, avg_s, mu, s):
    total = 0.0
    for ma, sa, m, sd in zip(avg_mu, avg_s, mu, s, strict=True):
        var_a, var = math.exp(2 * sa), math.exp(2 * sd)
        total += sd - sa + (var_a + (ma - m) ** 2) / (2 * var) - 0.5
    return total


def oracle_retrace_pair(rewards, q_tilde, values, rho, terminated, gamma, d):
    n_steps, n_batch = len(rewards), len(rewards[0])
    q_ret = [[0.0] * n_batch for _ in range(n_steps)]
    q_opc = [[0.0] * n_batch for _ in range(n_steps)]
    for b in range(n_batch):
        ret = opc = values[n_steps][b]
        for t in reversed(range(n_steps)):
            not_done = 0.0 if terminated[t][b] else 1.0
            ret = rewards[t][b] + gamma * not_done * ret
            opc = rewards[t][b] + gamma * not_done * opc
            q_ret[t][b], q_opc[t][b] = ret, opc
            trace = min(1.0, rho[t][b] ** (1.0 / d))
            ret = trace * (ret - q_tilde[t][b]) + values[t][b]
            opc = opc - q_tilde[t][b] + values[t][b]
    return q_ret, q_opc


# ---------------------------------------------------------------------------------------------------------
# Gaussian: log-density, entropy, KL and the closed-form gradients
# ---------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES)
def test_gaussian_log_prob_entropy_and_kl_match_oracles(shape):
    _, actions, mean, log_std, avg_mean, avg_log_std = _gaussian(1, shape)
    lists = [x.tolist() for x in (actions, mean, log_std, avg_mean, avg_log_std)]
    _close(
        FC.gaussian_log_prob(actions=actions, mean=mean, log_std=log_std),
        per_sample(oracle_log_prob, *lists[:3]),
    )
    _close(FC.gaussian_entropy(log_std=log_std), per_sample(oracle_entropy, lists[2]))
    kl = FC.gaussian_kl(avg_mean=avg_mean, avg_log_std=avg_log_std, mean=mean, log_std=log_std)
    _close(kl, per_sample(oracle_kl, lists[3], lists[4], lists[1], lists[2]))


def test_gaussian_log_prob_and_entropy_equal_torch_normal():
    _, actions, mean, log_std, _, _ = _gaussian(2, (4, 3, 5))
    normal = th.distributions.Normal(mean, th.exp(log_std))
    _close(
        FC.gaussian_log_prob(actions=actions, mean=mean, log_std=log_std), normal.log_prob(actions).sum(-1)
    )
    _close(FC.gaussian_entropy(log_std=log_std), normal.entropy().sum(-1))


def test_gaussian_kl_is_non_negative_zero_at_equality_and_fixed_sigma_form():
    _, _, mean, log_std, avg_mean, avg_log_std = _gaussian(3, (5, 4, 3))
    kl = FC.gaussian_kl(avg_mean=avg_mean, avg_log_std=avg_log_std, mean=mean, log_std=log_std)
    assert bool((kl > 0).all())
    _close(FC.gaussian_kl(avg_mean=mean, avg_log_std=log_std, mean=mean, log_std=log_std), th.zeros(5, 4))
    sigma = 0.3
    fixed = th.full_like(mean, math.log(sigma))
    kl_fixed = FC.gaussian_kl(avg_mean=avg_mean, avg_log_std=fixed, mean=mean, log_std=fixed)
    _close(kl_fixed, ((mean - avg_mean) ** 2).sum(-1) / (2 * sigma**2))
    k = FC.gaussian_kl_gradient(avg_mean=avg_mean, avg_log_std=fixed, mean=mean, log_std=fixed)
    _close(k.mean, (mean - avg_mean) / sigma**2)
    # Equal to torch's own KL.
    torch_kl = th.distributions.kl_divergence(
        th.distributions.Normal(avg_mean, th.exp(avg_log_std)), th.distributions.Normal(mean, th.exp(log_std))
    ).sum(-1)
    _close(kl, torch_kl)


def test_gaussian_kl_gradient_equals_autograd():
    _, _, mean, log_std, avg_mean, avg_log_std = _gaussian(4, (4, 3, 3))
    mean_, log_std_ = mean.clone().requires_grad_(), log_std.clone().requires_grad_()
    kl = FC.gaussian_kl(avg_mean=avg_mean, avg_log_std=avg_log_std, mean=mean_, log_std=log_std_)
    d_mean, d_log_std = th.autograd.grad(kl.sum(), (mean_, log_std_))
    k = FC.gaussian_kl_gradient(avg_mean=avg_mean, avg_log_std=avg_log_std, mean=mean, log_std=log_std)
    _close(k.mean, d_mean)
    _close(k.log_std, d_log_std)
    zero = FC.gaussian_kl_gradient(avg_mean=mean, avg_log_std=log_std, mean=mean, log_std=log_std)
    assert th.equal(zero.mean, th.zeros_like(mean)) and th.equal(zero.log_std, th.zeros_like(mean))


def test_gaussian_log_prob_gradient_equals_autograd_and_oracle():
    _, actions, mean, log_std, _, _ = _gaussian(5, (3, 2, 4))
    mean_, log_std_ = mean.clone().requires_grad_(), log_std.clone().requires_grad_()
    log_prob = FC.gaussian_log_prob(actions=actions, mean=mean_, log_std=log_std_)
    d_mean, d_log_std = th.autograd.grad(log_prob.sum(), (mean_, log_std_))
    grad = FC.gaussian_log_prob_gradient(actions=actions, mean=mean, log_std=log_std)
    _close(grad.mean, d_mean)
    _close(grad.log_std, d_log_std)
    flat = zip(
        actions.reshape(-1).tolist(), mean.reshape(-1).tolist(), log_std.reshape(-1).tolist(), strict=True
    )
    oracle_mean, oracle_log_std = [], []
    for a, m, s in flat:
        oracle_mean.append((a - m) / math.exp(2 * s))
        oracle_log_std.append((a - m) ** 2 / math.exp(2 * s) - 1.0)
    _close(grad.mean.reshape(-1), oracle_mean)
    _close(grad.log_std.reshape(-1), oracle_log_std)


def test_gaussian_shape_errors():
    x = th.zeros(3, 2, 4, dtype=DTYPE)
    with pytest.raises(ValueError, match=r"mean must have 3 dimensions \(time-major\), got shape \(6, 4\)"):
        FC.gaussian_log_prob(actions=x.reshape(6, 4), mean=x.reshape(6, 4), log_std=x.reshape(6, 4))
    with pytest.raises(ValueError, match=r"log_std shape \(3, 2, 1\) != mean shape \(3, 2, 4\)"):
        FC.gaussian_log_prob(actions=x, mean=x, log_std=x[..., :1])
    with pytest.raises(ValueError, match=r"actions shape \(3, 2, 5\) != mean shape \(3, 2, 4\)"):
        FC.gaussian_log_prob_gradient(actions=th.zeros(3, 2, 5), mean=x, log_std=x)
    with pytest.raises(ValueError, match=r"avg_mean shape \(3, 4\) != mean shape \(3, 2, 4\)"):
        FC.gaussian_kl(avg_mean=x[:, 0], avg_log_std=x, mean=x, log_std=x)
    with pytest.raises(ValueError, match=r"avg_log_std shape \(3, 2, 3\) != mean shape \(3, 2, 4\)"):
        FC.gaussian_kl_gradient(avg_mean=x, avg_log_std=x[..., :3], mean=x, log_std=x)
    with pytest.raises(ValueError, match=r"log_std must have 3 dimensions \(time-major\), got shape \(4,\)"):
        FC.gaussian_entropy(log_std=th.zeros(4))


def test_gaussian_trust_region_on_the_statistics_bounds_the_kl_step():
    """With the closed-form ``k``, a small step along ``z`` raises the KL by at most ``lr * delta``."""
    gen, _, mean, log_std, avg_mean, avg_log_std = _gaussian(6, (4, 3, 2))
    g = th.cat([_randn(gen, 4, 3, 2, scale=20.0), _randn(gen, 4, 3, 2, scale=20.0)], -1)
    k = FC.gaussian_kl_gradient(avg_mean=avg_mean, avg_log_std=avg_log_std, mean=mean, log_std=log_std)
    step = F.trust_region_projection(g=g, k=th.cat(k, -1), delta=0.5, eps=0.0)
    assert bool((step.adj > 0).any())
    _close((th.cat(k, -1) * step.z).sum(-1), th.full((4, 3), 0.5).minimum(step.k_dot_g))

    def kl_at(scale: float) -> th.Tensor:
        return FC.gaussian_kl(
            avg_mean=avg_mean,
            avg_log_std=avg_log_std,
            mean=mean + scale * step.z[..., :2],
            log_std=log_std + scale * step.z[..., 2:],
        )

    # The directional derivative of the KL along z (central difference) is k.z == min(k.g, delta).
    lr = 1e-6
    slope = (kl_at(lr) - kl_at(-lr)) / (2 * lr)
    th.testing.assert_close(slope, th.minimum(step.k_dot_g, th.full((4, 3), 0.5)), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------------------------------------------------
# Stochastic dueling network, traces, Q_ret / Q_opc, value target
# ---------------------------------------------------------------------------------------------------------


def test_stochastic_dueling_q_matches_oracle_and_shape_errors():
    gen = _gen(7)
    values, advantage, sampled = _randn(gen, 4, 3), _randn(gen, 4, 3), _randn(gen, 4, 3, 5)
    q = FC.stochastic_dueling_q(values=values, advantage=advantage, sampled_advantages=sampled)
    oracle = [
        [values[t, b].item() + advantage[t, b].item() - sum(sampled[t, b].tolist()) / 5 for b in range(3)]
        for t in range(4)
    ]
    _close(q, oracle)
    with pytest.raises(ValueError, match=r"values must have 2 dimensions \(time-major\), got shape \(12,\)"):
        FC.stochastic_dueling_q(
            values=values.reshape(-1), advantage=advantage.reshape(-1), sampled_advantages=sampled
        )
    with pytest.raises(ValueError, match=r"advantage shape \(4, 3, 1\) != values shape \(4, 3\)"):
        FC.stochastic_dueling_q(values=values, advantage=advantage.unsqueeze(-1), sampled_advantages=sampled)
    with pytest.raises(
        ValueError,
        match=r"sampled_advantages must be \[T, B, n\] with \[T, B\] = \(4, 3\), got shape \(4, 5\)",
    ):
        FC.stochastic_dueling_q(values=values, advantage=advantage, sampled_advantages=sampled[:, 0])


def test_stochastic_dueling_q_minus_v_averages_to_zero_over_pi():
    """With ``a`` and the ``u_i`` drawn from ``pi``, ``E[Q~ - V] = 0`` for any advantage function ``A``."""
    gen = _gen(8)
    n_draws, n = 200_000, 5
    mean, std = 0.7, 0.4

    def adv(a: th.Tensor) -> th.Tensor:
        return 3.0 * th.sin(2.0 * a) + a**2

    a = mean + std * th.randn(n_draws, 1, generator=gen, dtype=DTYPE)
    u = mean + std * th.randn(n_draws, 1, n, generator=gen, dtype=DTYPE)
    values = th.full((n_draws, 1), 2.5, dtype=DTYPE)
    q = FC.stochastic_dueling_q(values=values, advantage=adv(a), sampled_advantages=adv(u))
    spread = (q - values).std().item()
    assert abs((q - values).mean().item()) < 5 * spread / math.sqrt(n_draws)
    assert abs(adv(a).mean().item()) > 20 * spread / math.sqrt(n_draws)  # A itself is not centred


@pytest.mark.parametrize("d", [1, 2, 6])
def test_continuous_trace_matches_oracle(d):
    rho = th.exp(2 * _randn(_gen(9), 5, 4))
    rho[0, 0] = 0.0
    expected = [min(1.0, r ** (1.0 / d)) for r in rho.reshape(-1).tolist()]
    _close(FC.continuous_trace(rho=rho, action_dim=d).reshape(-1), expected)
    with pytest.raises(ValueError, match=r"action_dim must be positive, got 0"):
        FC.continuous_trace(rho=rho, action_dim=0)


def _retrace_inputs(seed: int, n_steps: int, n_batch: int):
    gen = _gen(seed)
    return dict(
        rewards=_randn(gen, n_steps, n_batch),
        q_tilde=_randn(gen, n_steps, n_batch),
        values=_randn(gen, n_steps + 1, n_batch),
        rho_i=th.exp(1.5 * _randn(gen, n_steps, n_batch)),
        terminated=th.rand(n_steps, n_batch, generator=gen, dtype=DTYPE) < 0.2,
    )


@pytest.mark.parametrize("n_steps,n_batch", [(1, 1), (7, 3), (20, 2)])
@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("gamma", [0.9, 0.99])
def test_continuous_retrace_targets_match_oracle(n_steps, n_batch, d, gamma):
    inputs = _retrace_inputs(10, n_steps, n_batch)
    targets = FC.continuous_retrace_targets(gamma=gamma, action_dim=d, **inputs)
    q_ret, q_opc = oracle_retrace_pair(*(inputs[k].tolist() for k in inputs), gamma, d)
    _close(targets.q_ret, q_ret)
    _close(targets.q_opc, q_opc)


def test_continuous_retrace_with_rho_one_is_the_n_step_return():
    """With ``rho == 1`` and ``Q~ == V`` (zero advantage) both targets are the n-step discounted return."""
    inputs = _retrace_inputs(11, 6, 3)
    inputs["q_tilde"] = inputs["values"][:-1].clone()
    inputs["rho_i"] = th.ones(6, 3, dtype=DTYPE)
    inputs["terminated"][:] = False
    targets = FC.continuous_retrace_targets(gamma=0.95, action_dim=4, **inputs)
    rewards, values = inputs["rewards"].tolist(), inputs["values"].tolist()
    for t in range(6):
        for b in range(3):
            expected = (
                sum(0.95 ** (i - t) * rewards[i][b] for i in range(t, 6)) + 0.95 ** (6 - t) * values[6][b]
            )
            assert targets.q_ret[t, b].item() == pytest.approx(expected, rel=1e-12, abs=1e-12)
    assert th.equal(targets.q_ret, targets.q_opc)


def test_continuous_retrace_truncation_bootstraps_and_shape_errors():
    inputs = _retrace_inputs(12, 5, 2)
    inputs["terminated"][:] = False
    truncated = th.zeros(5, 2, dtype=th.bool)
    truncated[2, 0] = True
    truncation_values = th.full((5, 2), 10.0, dtype=DTYPE)
    targets = FC.continuous_retrace_targets(
        gamma=0.9, action_dim=2, truncated=truncated, truncation_values=truncation_values, **inputs
    )
    expected = inputs["rewards"][2, 0].item() + 0.9 * 10.0
    assert targets.q_ret[2, 0].item() == pytest.approx(expected, rel=1e-12)
    assert targets.q_opc[2, 0].item() == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match=r"rho_i shape \(5,\) != rewards shape \(5, 2\)"):
        FC.continuous_retrace_targets(gamma=0.9, action_dim=2, **dict(inputs, rho_i=inputs["rho_i"][:, 0]))


def test_value_target_matches_oracle_and_shape_errors():
    gen = _gen(13)
    rho, q_ret, q_tilde, values = (
        th.exp(_randn(gen, 4, 3)),
        _randn(gen, 4, 3),
        _randn(gen, 4, 3),
        _randn(gen, 4, 3),
    )
    target = FC.value_target(rho_i=rho, q_ret=q_ret, q_tilde=q_tilde, values=values)
    expected = [
        min(1.0, r) * (qr - qt) + v
        for r, qr, qt, v in zip(*(x.reshape(-1).tolist() for x in (rho, q_ret, q_tilde, values)), strict=True)
    ]
    _close(target.reshape(-1), expected)
    assert not target.requires_grad
    with pytest.raises(ValueError, match=r"values shape \(4,\) != q_ret shape \(4, 3\)"):
        FC.value_target(rho_i=rho, q_ret=q_ret, q_tilde=q_tilde, values=values[:, 0])


# ---------------------------------------------------------------------------------------------------------
# Policy gradient with the sampled bias correction
# ---------------------------------------------------------------------------------------------------------


def _pg_inputs(seed: int, shape: tuple[int, int, int]):
    gen, actions, mean, log_std, _, _ = _gaussian(seed, shape)
    sampled = mean + th.exp(log_std) * _randn(gen, *shape)
    n_steps, n_batch, _ = shape
    scalars = dict(
        rho_i=th.exp(1.5 * _randn(gen, n_steps, n_batch)),
        rho_sampled=th.exp(1.5 * _randn(gen, n_steps, n_batch)),
        q_opc=_randn(gen, n_steps, n_batch),
        q_sampled=_randn(gen, n_steps, n_batch),
        values=_randn(gen, n_steps, n_batch),
    )
    return actions, sampled, mean, log_std, scalars


def oracle_policy_gradient(
    actions, sampled, mean, log_std, rho_i, rho_s, q_opc, q_s, values, c, ent_coef, eps
):
    n_steps, n_batch, dim = len(actions), len(actions[0]), len(actions[0][0])
    g_mean = [[[0.0] * dim for _ in range(n_batch)] for _ in range(n_steps)]
    g_log_std = [[[0.0] * dim for _ in range(n_batch)] for _ in range(n_steps)]
    for t in range(n_steps):
        for b in range(n_batch):
            w_f = min(c, rho_i[t][b]) * (q_opc[t][b] - values[t][b])
            w_bc = max(0.0, 1.0 - c / (rho_s[t][b] + eps)) * (q_s[t][b] - values[t][b])
            for d in range(dim):
                var = math.exp(2 * log_std[t][b][d])
                da, ds = actions[t][b][d] - mean[t][b][d], sampled[t][b][d] - mean[t][b][d]
                g_mean[t][b][d] = w_f * da / var + w_bc * ds / var
                g_log_std[t][b][d] = w_f * (da * da / var - 1) + w_bc * (ds * ds / var - 1) + ent_coef
    return g_mean, g_log_std


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("c", [0.5, 5.0])
def test_continuous_policy_gradient_matches_oracle(shape, c):
    actions, sampled, mean, log_std, s = _pg_inputs(14, shape)
    grad = FC.continuous_policy_gradient(
        actions=actions, sampled_actions=sampled, mean=mean, log_std=log_std, c=c, ent_coef=0.01, **s
    )
    lists = [x.tolist() for x in (actions, sampled, mean, log_std, *s.values())]
    g_mean, g_log_std = oracle_policy_gradient(*lists, c, 0.01, F.EPS)
    _close(grad.mean, g_mean)
    _close(grad.log_std, g_log_std)


def test_continuous_policy_gradient_equals_autograd_of_the_losses():
    """``g == autograd(-(loss_f + loss_bc - ent_coef * H) * T * B, (mean, log_std))``, stop-gradients kept."""
    actions, sampled, mean, log_std, s = _pg_inputs(15, (5, 3, 2))
    mean_, log_std_ = mean.clone().requires_grad_(), log_std.clone().requires_grad_()
    # rho and Q carry gradient here on purpose: the loss must not let it through.
    s_grad = {k: v.clone().requires_grad_() for k, v in s.items()}
    loss = FC.sdn_policy_loss(
        log_pi_i=FC.gaussian_log_prob(actions=actions, mean=mean_, log_std=log_std_),
        log_pi_sampled=FC.gaussian_log_prob(actions=sampled, mean=mean_, log_std=log_std_),
        c=2.0,
        **s_grad,
    )
    entropy = FC.gaussian_entropy(log_std=log_std_).mean()
    total = -(loss.loss_f + loss.loss_bc - 0.05 * entropy) * 15
    d_mean, d_log_std = th.autograd.grad(total, (mean_, log_std_), retain_graph=True)
    grad = FC.continuous_policy_gradient(
        actions=actions, sampled_actions=sampled, mean=mean, log_std=log_std, c=2.0, ent_coef=0.05, **s
    )
    _close(grad.mean, d_mean)
    _close(grad.log_std, d_log_std)
    assert all(g is None for g in th.autograd.grad(total, list(s_grad.values()), allow_unused=True))


def test_sdn_policy_loss_matches_oracle_and_correction_is_off_below_c():
    gen = _gen(16)
    log_pi_i, log_pi_s = _randn(gen, 4, 2), _randn(gen, 4, 2)
    _, _, _, _, s = _pg_inputs(16, (4, 2, 1))
    loss = FC.sdn_policy_loss(log_pi_i=log_pi_i, log_pi_sampled=log_pi_s, c=1.5, **s)
    flat = [x.reshape(-1).tolist() for x in (log_pi_i, log_pi_s, *s.values())]
    loss_f = loss_bc = 0.0
    for lp_i, lp_s, r_i, r_s, q_o, q_s, v in zip(*flat, strict=True):
        loss_f -= min(1.5, r_i) * (q_o - v) * lp_i
        loss_bc -= max(0.0, 1.0 - 1.5 / (r_s + F.EPS)) * (q_s - v) * lp_s
    assert loss.loss_f.item() == pytest.approx(loss_f / 8, rel=1e-12)
    assert loss.loss_bc.item() == pytest.approx(loss_bc / 8, rel=1e-12)
    below = FC.sdn_policy_loss(
        log_pi_i=log_pi_i, log_pi_sampled=log_pi_s, c=1.5, **dict(s, rho_sampled=th.ones(4, 2))
    )
    assert below.loss_bc.item() == 0.0


def test_sdn_policy_gradient_shape_errors():
    _, _, _, _, s = _pg_inputs(17, (3, 2, 1))
    grad = th.zeros(3, 2, 4, dtype=DTYPE)
    with pytest.raises(ValueError, match=r"q_sampled shape \(3,\) != values shape \(3, 2\)"):
        FC.sdn_policy_gradient(
            grad_log_pi_i=grad, grad_log_pi_sampled=grad, c=1.0, **dict(s, q_sampled=s["q_sampled"][:, 0])
        )
    with pytest.raises(
        ValueError, match=r"grad_log_pi_sampled shape \(3, 2, 3\) != grad_log_pi_i shape \(3, 2, 4\)"
    ):
        FC.sdn_policy_gradient(grad_log_pi_i=grad, grad_log_pi_sampled=grad[..., :3], c=1.0, **s)
    with pytest.raises(
        ValueError,
        match=r"grad_log_pi_i must be \[T, B, \.\.\.\] with \[T, B\] = \(3, 2\), got shape \(2, 3, 4\)",
    ):
        FC.sdn_policy_gradient(
            grad_log_pi_i=grad.transpose(0, 1), grad_log_pi_sampled=grad.transpose(0, 1), c=1.0, **s
        )
    with pytest.raises(ValueError, match=r"log_pi_i shape \(3, 2, 1\) != values shape \(3, 2\)"):
        FC.sdn_policy_loss(log_pi_i=grad[..., :1], log_pi_sampled=grad[..., 0], c=1.0, **s)
    with pytest.raises(ValueError, match=r"sampled_actions shape \(3, 2, 3\) != actions shape \(3, 2, 4\)"):
        FC.continuous_policy_gradient(
            actions=grad, sampled_actions=grad[..., :3], mean=grad, log_std=grad, c=1.0, **s
        )


# ---------------------------------------------------------------------------------------------------------
# Factorised categorical / Bernoulli
# ---------------------------------------------------------------------------------------------------------

SIZES = [3, 2, 4]  # a MultiDiscrete([3, 2, 4]), padded to K = 4


def _factorised(seed: int, n_steps: int = 4, n_batch: int = 3):
    gen = _gen(seed)
    shape = (n_steps, n_batch, len(SIZES), max(SIZES))
    pi, mu, avg = (_factor_probs(gen, shape, SIZES) for _ in range(3))
    actions = th.stack([th.randint(n, (n_steps, n_batch), generator=gen) for n in SIZES], -1)
    return pi, mu, avg, actions


def test_factorised_log_prob_and_importance_weights_match_oracle():
    pi, mu, _, actions = _factorised(18)
    log_prob = FC.factorised_log_prob(probs=pi, actions=actions)
    rho = FC.factorised_importance_weights(pi_probs=pi, mu_probs=mu, actions=actions)
    p, m, a = pi.tolist(), mu.tolist(), actions.tolist()
    for t in range(4):
        for b in range(3):
            expected_log, expected_rho = 0.0, 1.0
            for f in range(len(SIZES)):
                expected_log += math.log(p[t][b][f][a[t][b][f]] + F.EPS)
                expected_rho *= p[t][b][f][a[t][b][f]] / (m[t][b][f][a[t][b][f]] + F.EPS)
            assert log_prob[t, b].item() == pytest.approx(expected_log, rel=1e-12)
            assert rho[t, b].item() == pytest.approx(expected_rho, rel=1e-12)
    on_policy = FC.factorised_importance_weights(pi_probs=pi, mu_probs=pi, actions=actions, eps=0.0)
    _close(on_policy, th.ones(4, 3))


def test_factorised_entropy_and_kl_match_oracle_per_factor():
    pi, _, avg, _ = _factorised(19)
    kl = FC.factorised_kl(avg_probs=avg, pi_probs=pi)
    entropy = FC.factorised_entropy(pi)
    eps = F.EPS
    p, q = pi.tolist(), avg.tolist()
    for t in range(4):
        for b in range(3):
            h = 0.0
            for f in range(len(SIZES)):
                expected = sum(
                    q[t][b][f][k] * (math.log(q[t][b][f][k] + eps) - math.log(p[t][b][f][k] + eps))
                    for k in range(SIZES[f])
                )
                assert kl[t, b, f].item() == pytest.approx(expected, rel=1e-10, abs=1e-12)
                h -= sum(p[t][b][f][k] * math.log(p[t][b][f][k] + eps) for k in range(SIZES[f]))
            assert entropy[t, b].item() == pytest.approx(h, rel=1e-12)
    assert bool((kl >= 0).all())
    _close(FC.factorised_kl(avg_probs=pi, pi_probs=pi), th.zeros(4, 3, 3))


def test_factorised_kl_and_log_prob_gradients_equal_autograd():
    pi, _, avg, actions = _factorised(20)
    pi_ = pi.clone().requires_grad_()
    (d_kl,) = th.autograd.grad(FC.factorised_kl(avg_probs=avg, pi_probs=pi_).sum(), pi_)
    _close(FC.factorised_kl_gradient(avg_probs=avg, pi_probs=pi), d_kl)
    (d_log,) = th.autograd.grad(FC.factorised_log_prob(probs=pi_, actions=actions).sum(), pi_)
    _close(FC.factorised_log_prob_gradient(probs=pi, actions=actions), d_log)
    # Padded choices carry no constraint: k == 0 there, so the projection leaves them alone.
    k = FC.factorised_kl_gradient(avg_probs=avg, pi_probs=pi)
    assert th.equal(k[..., 1, 2:], th.zeros(4, 3, 2, dtype=DTYPE))


def test_factorised_trust_region_is_per_factor():
    pi, _, avg, actions = _factorised(21)
    g = 50.0 * FC.factorised_log_prob_gradient(probs=pi, actions=actions)
    k = FC.factorised_kl_gradient(avg_probs=avg, pi_probs=pi)
    step = F.trust_region_projection(g=g, k=k, delta=1.0, eps=0.0)
    assert step.adj.shape == (4, 3, 3)
    k_dot_z = (k * step.z).sum(-1)
    _close(k_dot_z, th.minimum(step.k_dot_g, th.ones(4, 3, 3)))


def test_bernoulli_probs_as_two_choice_factors():
    p = th.tensor([[[0.1, 0.8, 0.5]]], dtype=DTYPE)
    probs = FC.bernoulli_probs(p)
    assert probs.shape == (1, 1, 3, 2)
    _close(probs[..., 1], p)
    _close(probs.sum(-1), th.ones(1, 1, 3))
    actions = th.tensor([[[1, 0, 1]]])
    log_prob = FC.factorised_log_prob(probs=probs, actions=actions, eps=0.0)
    expected = th.distributions.Bernoulli(probs=p).log_prob(actions.to(DTYPE)).sum(-1)
    _close(log_prob, expected)


def test_factorised_shape_errors():
    pi, mu, _, actions = _factorised(22)
    with pytest.raises(
        ValueError, match=r"probs must have 4 dimensions \(time-major\), got shape \(4, 3, 12\)"
    ):
        FC.factorised_log_prob(probs=pi.reshape(4, 3, 12), actions=actions)
    with pytest.raises(ValueError, match=r"actions shape \(4, 3\) != \[T, B, F\] = \(4, 3, 3\)"):
        FC.factorised_log_prob_gradient(probs=pi, actions=actions[..., 0])
    with pytest.raises(ValueError, match=r"mu_probs shape \(4, 3, 3, 3\) != pi_probs shape \(4, 3, 3, 4\)"):
        FC.factorised_importance_weights(pi_probs=pi, mu_probs=mu[..., :3], actions=actions)
    with pytest.raises(ValueError, match=r"avg_probs shape \(4, 3, 3\) != pi_probs shape \(4, 3, 3, 4\)"):
        FC.factorised_kl(avg_probs=mu[..., 0], pi_probs=pi)
    with pytest.raises(
        ValueError, match=r"pi_probs must have 4 dimensions \(time-major\), got shape \(4, 3, 3\)"
    ):
        FC.factorised_kl_gradient(avg_probs=mu[..., 0], pi_probs=pi[..., 0])

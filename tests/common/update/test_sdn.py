"""The stochastic-dueling policy and one whole continuous / factorised gradient step.

The gradient step is checked against an oracle written here from the paper's equations:
``torch.distributions`` for the densities and the KL, Python loops for ``Q~``, ``Q_ret``, ``Q_opc``, the
value target and the trust-region projection, and ``torch.autograd`` for the gradients with respect to the
statistics.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from sb3_acer.common.distributions import DiagGaussian
from sb3_acer.common.policies import ACERPolicy as SDNPolicy
from sb3_acer.common.type_aliases import Segment
from sb3_acer.common.update import SDNDraws, UpdateConfig, compute_gradients, draw_samples, network_outputs

SPACES = {
    "box": spaces.Box(-1.0, 1.0, (2, 2), dtype=np.float32),
    "multidiscrete": spaces.MultiDiscrete([3, 2, 4]),
    "multibinary": spaces.MultiBinary(3),
}


# ---------------------------------------------------------------------------------------------------------
# One whole gradient step against the oracle
# ---------------------------------------------------------------------------------------------------------

N_STEPS, N_ENVS, N_DUELING = 4, 3, 5
OBS_SPACE = spaces.Box(-1.0, 1.0, (3,), dtype=np.float32)


def _policy_pair(space, fixed_std):
    th.manual_seed(5)
    kwargs = dict(net_arch=dict(pi=[8], qf=[8]), fixed_std=fixed_std)
    policy = SDNPolicy(OBS_SPACE, space, **kwargs)
    avg = copy.deepcopy(policy)
    with th.no_grad():
        for p in avg.parameters():
            p.add_(0.05 * th.randn_like(p))
    return policy, avg


def _segment(policy, rng: np.random.Generator) -> Segment:
    dist = policy.dist
    obs = rng.uniform(-1, 1, (N_STEPS + 1, N_ENVS, 3)).astype(np.float32)
    with th.no_grad():
        mu = policy.statistics(th.as_tensor(obs[:N_STEPS].reshape(-1, 3))).view(N_STEPS, N_ENVS, -1)
        if isinstance(dist, DiagGaussian):
            mu = mu + th.cat(
                [0.3 * th.randn(N_STEPS, N_ENVS, dist.dim), th.zeros(N_STEPS, N_ENVS, dist.dim)], -1
            )
        else:
            mu = dist.statistics(th.log(mu + 1e-6) + 0.5 * th.randn_like(mu))
        actions = dist.sample(mu)
    terminated = np.zeros((N_STEPS, N_ENVS), dtype=bool)
    terminated[1, 0] = True
    truncated = np.zeros((N_STEPS, N_ENVS), dtype=bool)
    truncated[2, 1] = True
    return Segment(
        observations=obs,
        actions=actions.numpy().astype(dist.action_dtype),
        rewards=rng.normal(size=(N_STEPS, N_ENVS)).astype(np.float32),
        mu_probs=mu.numpy().astype(np.float32),
        terminated=terminated,
        truncated=truncated,
        episode_starts=np.zeros((N_STEPS + 1, N_ENVS), dtype=bool),
        final_index=np.array([[2, 1]], dtype=np.int64),
        final_observations=rng.uniform(-1, 1, (1, 3)).astype(np.float32),
    )


def _normal(policy, stats):
    mean, log_std = stats[..., : policy.dist.dim], stats[..., policy.dist.dim :]
    return th.distributions.Normal(mean, log_std.exp())


# Factorised: the paper's probability-space formulas (as openai/baselines), with the guard 1e-6 inside the
# logarithms; torch's Categorical would renormalise the probabilities and so change their gradient.


def _log_prob(policy, stats, actions):
    if isinstance(policy.dist, DiagGaussian):
        return _normal(policy, stats).log_prob(actions).sum(-1)
    probs = policy.dist.probs(stats)
    return th.log(probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1) + 1e-6).sum(-1)


def _entropy(policy, stats):
    if isinstance(policy.dist, DiagGaussian):
        return _normal(policy, stats).entropy().sum(-1)
    probs = policy.dist.probs(stats)
    return -(probs * th.log(probs + 1e-6)).sum((-1, -2))


def _kl(policy, avg_stats, stats):
    if isinstance(policy.dist, DiagGaussian):
        return th.distributions.kl_divergence(_normal(policy, avg_stats), _normal(policy, stats)).sum(-1)
    p, q = policy.dist.probs(avg_stats), policy.dist.probs(stats)
    return (p * (th.log(p + 1e-6) - th.log(q + 1e-6))).sum((-1, -2))


def oracle_gradients(policy, avg_policy, segment, draws, config):
    """The gradient step from the equations, with loops over (t, e)."""
    policy.zero_grad()
    dist = policy.dist
    n = N_STEPS * N_ENVS
    obs = th.as_tensor(np.concatenate([segment.observations.reshape(-1, 3), segment.final_observations]))
    out = policy.evaluate(obs)
    stats = out.stats[:n].view(N_STEPS, N_ENVS, -1)
    values = out.values[: n + N_ENVS].view(N_STEPS + 1, N_ENVS)
    v_final = out.values[-1].item()
    avg_stats = avg_policy.statistics(obs[:n]).detach().view(N_STEPS, N_ENVS, -1)
    actions = th.as_tensor(segment.actions).view(N_STEPS, N_ENVS, -1)
    mu = th.as_tensor(segment.mu_probs)
    pi = stats.detach()
    rho = (_log_prob(policy, pi, actions) - _log_prob(policy, mu, actions)).exp().tolist()
    rho_s = (_log_prob(policy, pi, draws.sampled) - _log_prob(policy, mu, draws.sampled)).exp().tolist()
    d = dist.action_dim
    q_t, q_s, adv_i = (
        [[None] * N_ENVS for _ in range(N_STEPS)],
        [[0.0] * N_ENVS for _ in range(N_STEPS)],
        None,
    )
    latent = out.critic_latent[:n].view(N_STEPS, N_ENVS, -1)
    for t in range(N_STEPS):
        for e in range(N_ENVS):
            a_u = [
                policy.head.advantage(policy, latent[t, e][None], draws.dueling[t, e, i][None, None])[0, 0]
                for i in range(N_DUELING)
            ]
            mean_u = sum(a_u) / N_DUELING
            adv_i = policy.head.advantage(policy, latent[t, e][None], actions[t, e][None, None])[0, 0]
            q_t[t][e] = values[t, e] + adv_i - mean_u
            adv_s = policy.head.advantage(policy, latent[t, e][None], draws.sampled[t, e][None, None])[0, 0]
            q_s[t][e] = (values[t, e] + adv_s - mean_u).item()
    q_ret = [[0.0] * N_ENVS for _ in range(N_STEPS)]
    q_opc = [[0.0] * N_ENVS for _ in range(N_STEPS)]
    for e in range(N_ENVS):
        ret = opc = values[N_STEPS, e].item()
        for t in reversed(range(N_STEPS)):
            if segment.terminated[t, e]:
                ret = opc = 0.0
            if segment.truncated[t, e]:
                ret = opc = v_final
            ret = segment.rewards[t, e].item() + config.gamma * ret
            opc = segment.rewards[t, e].item() + config.gamma * opc
            q_ret[t][e], q_opc[t][e] = ret, opc
            ret = min(1.0, rho[t][e] ** (1.0 / d)) * (ret - q_t[t][e].item()) + values[t, e].item()
            opc = opc - q_t[t][e].item() + values[t, e].item()
    loss_q = 0.0
    for t in range(N_STEPS):
        for e in range(N_ENVS):
            v_target = min(1.0, rho[t][e]) * (q_ret[t][e] - q_t[t][e].item()) + values[t, e].item()
            loss_q = (
                loss_q + 0.5 * (q_ret[t][e] - q_t[t][e]) ** 2 / n + 0.5 * (v_target - values[t, e]) ** 2 / n
            )
    c = config.correction_term
    leaf = stats.detach().clone().requires_grad_()
    z = th.zeros_like(leaf)
    for t in range(N_STEPS):
        for e in range(N_ENVS):
            v = values[t, e].item()
            surrogate = min(c, rho[t][e]) * (q_opc[t][e] - v) * _log_prob(policy, leaf, actions)[t, e]
            surrogate = (
                surrogate
                + max(0.0, 1 - c / (rho_s[t][e] + 1e-6))
                * (q_s[t][e] - v)
                * _log_prob(policy, leaf, draws.sampled)[t, e]
            )
            surrogate = surrogate + config.ent_coef * _entropy(policy, leaf)[t, e]
            (g,) = th.autograd.grad(surrogate, leaf)
            kl = _kl(policy, avg_stats[t, e], leaf[t, e])
            (k,) = th.autograd.grad(kl, leaf)
            g, k = g[t, e], k[t, e]
            if isinstance(dist, DiagGaussian) and not dist.learn_log_std:
                g[dist.dim :] = 0.0
                k[dist.dim :] = 0.0
            groups = (
                [slice(None)]
                if isinstance(dist, DiagGaussian)
                else [slice(f * dist.n_choices, (f + 1) * dist.n_choices) for f in range(dist.n_factors)]
            )
            for part in groups:
                kg, kk = float((k[part] * g[part]).sum()), float((k[part] * k[part]).sum())
                z[t, e, part] = g[part] - max(0.0, (kg - config.delta) / (kk + 1e-6)) * k[part]
    total = -(stats * z).sum() / n + config.q_coef * loss_q
    total.backward()
    return {name: p.grad.clone() for name, p in policy.named_parameters() if p.grad is not None}


@pytest.mark.parametrize(
    "name,fixed_std",
    [("box", None), ("box", 0.3), ("multidiscrete", None), ("multibinary", None)],
)
def test_whole_gradient_step_matches_the_oracle(name, fixed_std):
    space = SPACES[name]
    policy, avg = _policy_pair(space, fixed_std)
    segment = _segment(policy, np.random.default_rng(6))
    config = UpdateConfig(
        gamma=0.9, q_coef=0.5, ent_coef=0.01, correction_term=1.5, trust_region=True, delta=0.2
    )
    th.manual_seed(7)
    with th.no_grad():
        draws = draw_samples(policy, network_outputs(policy, avg, segment).stats, N_DUELING)
    policy.zero_grad()
    loss, stats = compute_gradients(
        policy=policy, avg_policy=avg, segment=segment, config=config, draws=draws
    )
    actual = {name: p.grad.clone() for name, p in policy.named_parameters() if p.grad is not None}
    expected = oracle_gradients(policy, avg, segment, draws, config)
    assert sorted(actual) == sorted(expected)
    for key in expected:
        th.testing.assert_close(actual[key], expected[key], rtol=2e-4, atol=2e-6, msg=key)
    assert stats.avg_norm_adj > 0  # the projection was active somewhere
    assert np.isfinite(float(loss))
    if fixed_std is not None:
        assert "log_std" not in dict(policy.named_parameters())


@pytest.mark.parametrize("name", sorted(SPACES))
def test_without_trust_region_the_gradient_is_that_of_the_losses(name):
    """Trust region off: the projection is skipped; with delta huge and ent_coef 0 both paths agree."""
    policy, avg = _policy_pair(SPACES[name], None)
    segment = _segment(policy, np.random.default_rng(8))
    th.manual_seed(9)
    with th.no_grad():
        draws = draw_samples(policy, network_outputs(policy, avg, segment).stats, N_DUELING)
    grads = []
    for trust_region in (False, True):
        config = UpdateConfig(
            gamma=0.99, q_coef=0.5, ent_coef=0.0, correction_term=2.0, trust_region=trust_region, delta=1e9
        )
        policy.zero_grad()
        compute_gradients(policy=policy, avg_policy=avg, segment=segment, config=config, draws=draws)
        grads.append([p.grad.clone() for p in policy.parameters() if p.grad is not None])
    for off, on in zip(*grads, strict=True):
        th.testing.assert_close(off, on, rtol=1e-4, atol=1e-6)


def test_retrace_lambda_shortens_the_trace_of_q_ret_only():
    from sb3_acer.common.functional import continuous as FC

    gen = th.Generator().manual_seed(12)
    inputs = dict(
        rewards=th.randn(6, 2, generator=gen, dtype=th.float64),
        q_tilde=th.randn(6, 2, generator=gen, dtype=th.float64),
        values=th.randn(7, 2, generator=gen, dtype=th.float64),
        rho_i=th.rand(6, 2, generator=gen, dtype=th.float64) * 2,
        terminated=th.zeros(6, 2, dtype=th.bool),
    )
    full = FC.continuous_retrace_targets(gamma=0.9, action_dim=2, **inputs)
    zero = FC.continuous_retrace_targets(gamma=0.9, action_dim=2, retrace_lambda=0.0, **inputs)
    assert th.equal(zero.q_opc, full.q_opc)
    one_step = inputs["rewards"][:-1] + 0.9 * inputs["values"][1:-1]
    th.testing.assert_close(zero.q_ret[:-1], one_step)
    assert not th.allclose(full.q_ret[:-1], one_step)


def test_sdn_draws_shapes():
    policy, avg = _policy_pair(SPACES["multidiscrete"], None)
    segment = _segment(policy, np.random.default_rng(11))
    draws = draw_samples(policy, network_outputs(policy, avg, segment).stats, 7)
    assert isinstance(draws, SDNDraws)
    assert draws.sampled.shape == (N_STEPS, N_ENVS, 3) and draws.dueling.shape == (N_STEPS, N_ENVS, 7, 3)


@pytest.mark.parametrize("name", sorted(SPACES))
def test_a_replayed_update_skips_the_logging_values_as_for_discrete_actions(name):
    """``with_stats=False`` (replayed updates): the same gradient, the critic loss returned, the logging-only
    statistics ``nan`` (the logger skips them; the trust-region norms were logged as 0 before)."""
    policy, avg = _policy_pair(SPACES[name], None)
    segment = _segment(policy, np.random.default_rng(13))
    config = UpdateConfig(
        gamma=0.9, q_coef=0.5, ent_coef=0.01, correction_term=1.5, trust_region=True, delta=0.2
    )
    with th.no_grad():
        draws = draw_samples(policy, network_outputs(policy, avg, segment).stats, N_DUELING)
    results, grads = [], []
    for with_stats in (True, False):
        policy.zero_grad()
        results.append(
            compute_gradients(
                policy=policy,
                avg_policy=avg,
                segment=segment,
                config=config,
                draws=draws,
                with_stats=with_stats,
            )
        )
        grads.append([p.grad.clone() for p in policy.parameters() if p.grad is not None])
    for full, replayed in zip(*grads, strict=True):
        assert th.equal(full, replayed)
    (_, full_stats), (loss, stats) = results
    assert float(loss) == full_stats.loss_q == stats.loss_q
    assert stats.rho_mean == full_stats.rho_mean and stats.rho_truncated_frac == full_stats.rho_truncated_frac
    unset = set(stats._fields) - {"loss_q", "rho_mean", "rho_truncated_frac"}
    assert all(np.isnan(getattr(stats, key)) for key in unset)
    assert full_stats.avg_norm_k > 0 and np.isfinite(full_stats.loss)

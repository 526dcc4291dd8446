"""``compute_gradients`` against an independent float64 oracle of one whole ACER gradient step.

The oracle below is written from the paper's equations (Wang et al. 2016), with the guard ``eps`` where
``docs/algorithm.md`` (which maps the equations) puts it, and shares nothing with ``sb3_acer/common/update/``
or ``sb3_acer/common/functional/`` but the network modules: it runs the layers itself (the LSTM cell included,
one step at a time), computes the Retrace targets with the per-episode loop of Algorithm 2, takes the
per-sample policy gradient ``g`` and the KL gradient ``k`` with autograd, projects ``g`` onto the trust region
in closed form and back-propagates in float64.

The segments are chosen so that every branch of the update matters: the behaviour probabilities ``mu`` differ
from ``pi`` (``rho`` below 1, between 1 and ``c`` and above ``c``, and above ``c`` for untaken actions, so
the bias correction is live), rewards and values are far from any fixed point, each segment holds a
termination and time-limit truncations (one at the last step), the average network differs from the policy,
and ``delta`` is small enough that the trust region binds on some samples and not on others. The recurrent
case starts from a non-zero LSTM state and has episode starts inside the segment.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import NamedTuple

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from sb3_acer.common.policies import MlpLstmPolicy, MlpPolicy, RecurrentACERPolicy
from sb3_acer.common.type_aliases import Segment
from sb3_acer.common.update import UpdateConfig, UpdateStats, compute_gradients

#: The numerical guard of the docs' notation table (``F.EPS``), inside every ``log`` and ratio of the oracle.
EPS = 1e-6
OBS_DIM, N_ACTIONS = 4, 3
#: Target importance weights of the taken actions, cycled over the samples (``c = 3``): below 1, between
#: 1 and ``c``, above ``c``; all far from both thresholds so float32 rounding cannot flip a clamp.
TARGET_RHO = (0.55, 1.6, 0.8, 4.5, 2.2, 0.4, 6.0, 1.3)
BASE_CONFIG = UpdateConfig(
    gamma=0.9, q_coef=0.5, ent_coef=0.05, correction_term=3.0, trust_region=True, delta=0.3
)


class Outputs(NamedTuple):
    """Float64 network outputs of one segment, with autograd history to the oracle's parameters."""

    logits: th.Tensor  # [T + 1, E, A]
    q_values: th.Tensor  # [T + 1, E, A]
    final_logits: th.Tensor  # [K, A], at the truncation observations
    final_q_values: th.Tensor  # [K, A]
    avg_logits: th.Tensor  # [T, E, A], average network at x_0 .. x_{T-1}, no gradient


def _heads(policy: MlpPolicy | RecurrentACERPolicy, latent: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
    latent_pi, latent_q = policy.mlp_extractor(latent)
    return policy.action_net(latent_pi), policy.q_net(latent_q)


def _feed_forward_outputs(policy: MlpPolicy, avg_policy: MlpPolicy, segment: Segment) -> Outputs:
    """Every observation on its own, in float64 (the observations are flat vectors: no preprocessing)."""
    obs = th.as_tensor(segment.observations, dtype=th.float64)
    logits, q_values = _heads(policy, policy.shared_net(obs))
    final = th.as_tensor(segment.final_observations, dtype=th.float64)
    final_logits, final_q_values = _heads(policy, policy.shared_net(final))
    with th.no_grad():
        avg_logits, _ = _heads(avg_policy, avg_policy.shared_net(obs[:-1]))
    return Outputs(logits, q_values, final_logits, final_q_values, avg_logits)


def _lstm_cell(lstm: th.nn.LSTM, x: th.Tensor, h: th.Tensor, c: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
    """One step of the standard LSTM (gates in torch's order: input, forget, cell, output)."""
    gates = x @ lstm.weight_ih_l0.T + lstm.bias_ih_l0 + h @ lstm.weight_hh_l0.T + lstm.bias_hh_l0
    i, f, g, o = gates.chunk(4, dim=-1)
    c = th.sigmoid(f) * c + th.sigmoid(i) * th.tanh(g)
    return th.sigmoid(o) * th.tanh(c), c


def _recurrent_unroll(
    policy: RecurrentACERPolicy, segment: Segment, n_obs: int
) -> tuple[th.Tensor, th.Tensor, list[tuple[th.Tensor, th.Tensor]]]:
    """Logits and Q-values of ``x_0 .. x_{n_obs-1}``, one step at a time from ``segment.initial_state``, the
    state multiplied by ``1 - episode_start_t`` before step ``t``; also the state after every step."""
    assert segment.initial_state is not None
    h = th.as_tensor(segment.initial_state[0], dtype=th.float64)
    c = th.as_tensor(segment.initial_state[1], dtype=th.float64)
    logits, q_values, states = [], [], []
    for t in range(n_obs):
        keep = 1.0 - th.as_tensor(segment.episode_starts[t], dtype=th.float64).unsqueeze(-1)
        h, c = h * keep, c * keep
        x = policy.pre_lstm(th.as_tensor(segment.observations[t], dtype=th.float64))
        h, c = _lstm_cell(policy.lstm, x, h, c)
        step_logits, step_q = _heads(policy, policy.shared_net(h))
        logits.append(step_logits)
        q_values.append(step_q)
        states.append((h, c))
    return th.stack(logits), th.stack(q_values), states


def _recurrent_outputs(
    policy: RecurrentACERPolicy, avg_policy: RecurrentACERPolicy, segment: Segment
) -> Outputs:
    """The LSTM unrolled as the behaviour policy ran it; a truncation observation is evaluated with the state
    reached after the last step of its episode."""
    logits, q_values, states = _recurrent_unroll(policy, segment, segment.n_steps + 1)
    final_logits, final_q_values = [], []
    for (t, e), final_obs in zip(segment.final_index, segment.final_observations, strict=True):
        h, c = states[t]
        x = policy.pre_lstm(th.as_tensor(final_obs, dtype=th.float64))
        h_final, _ = _lstm_cell(policy.lstm, x, h[e], c[e])
        step_logits, step_q = _heads(policy, policy.shared_net(h_final))
        final_logits.append(step_logits)
        final_q_values.append(step_q)
    with th.no_grad():
        avg_logits, _, _ = _recurrent_unroll(avg_policy, segment, segment.n_steps)
    return Outputs(logits, q_values, th.stack(final_logits), th.stack(final_q_values), avg_logits)


def _retrace(
    segment: Segment,
    q_i: np.ndarray,
    values: np.ndarray,
    final_values: np.ndarray,
    rho_bar: np.ndarray,
    gamma: float,
) -> np.ndarray:
    """Q^ret (paper eq. 5, Algorithm 2), backwards over each environment's steps: a termination ends the
    return, a time-limit truncation bootstraps from the value of the observation at which it was cut."""
    final_value = {
        (int(t), int(e)): float(v) for (t, e), v in zip(segment.final_index, final_values, strict=True)
    }
    q_ret = np.zeros_like(q_i)
    for e in range(segment.n_envs):
        target = values[-1, e]
        for t in reversed(range(segment.n_steps)):
            if segment.terminated[t, e]:
                target = segment.rewards[t, e]
            elif segment.truncated[t, e]:
                target = segment.rewards[t, e] + gamma * final_value[(t, e)]
            else:
                target = segment.rewards[t, e] + gamma * target
            q_ret[t, e] = target
            target = rho_bar[t, e] * (target - q_i[t, e]) + values[t, e]
    return q_ret


def oracle_step(
    policy: MlpPolicy | RecurrentACERPolicy,
    avg_policy: MlpPolicy | RecurrentACERPolicy,
    segment: Segment,
    config: UpdateConfig,
) -> tuple[dict[str, th.Tensor], dict[str, float], dict[str, float]]:
    """One ACER gradient step in float64 on copies of the networks.

    Returns:
        The parameter gradients by name, the expected ``UpdateStats`` values, and facts about the scenario
        (which clamps and trust-region branches were exercised) for the test to check its own coverage.
    """
    policy64 = copy.deepcopy(policy).double()
    avg64 = copy.deepcopy(avg_policy).double()
    if isinstance(policy64, RecurrentACERPolicy):
        assert isinstance(avg64, RecurrentACERPolicy)
        out = _recurrent_outputs(policy64, avg64, segment)
    else:
        assert isinstance(policy64, MlpPolicy) and isinstance(avg64, MlpPolicy)
        out = _feed_forward_outputs(policy64, avg64, segment)
    n_steps, n_samples = segment.n_steps, segment.n_steps * segment.n_envs
    c, gamma = config.correction_term, config.gamma
    actions = th.as_tensor(segment.actions).unsqueeze(-1)

    probs_all = th.softmax(out.logits, dim=-1)
    values_all = (probs_all * out.q_values).sum(-1).detach()  # V(x) = sum_a pi(a|x) Q(x, a), [T + 1, E]
    final_values = (th.softmax(out.final_logits, dim=-1) * out.final_q_values).sum(-1).detach()
    pi = probs_all[:n_steps]
    q = out.q_values[:n_steps]
    values = values_all[:n_steps]
    avg = th.softmax(out.avg_logits, dim=-1)
    mu = th.as_tensor(segment.mu_probs, dtype=th.float64)

    rho = pi.detach() / (mu + EPS)  # rho_t(a) = pi(a|x_t) / (mu(a|x_t) + eps)
    rho_i = rho.gather(-1, actions).squeeze(-1)
    q_i = q.gather(-1, actions).squeeze(-1)
    rho_bar = config.retrace_lambda * np.minimum(1.0, rho_i.numpy())
    q_ret = th.as_tensor(
        _retrace(segment, q_i.detach().numpy(), values_all.numpy(), final_values.numpy(), rho_bar, gamma)
    )

    log_pi = th.log(pi + EPS)
    loss_q = 0.5 * ((q_ret - q_i) ** 2).mean()
    # eq. 9: truncated term on the sampled action, bias correction as an expectation over all actions.
    loss_f = -(th.clamp(rho_i, max=c) * log_pi.gather(-1, actions).squeeze(-1) * (q_ret - values)).mean()
    correction = th.clamp(1.0 - c / (rho + EPS), min=0.0) * pi.detach() * (q.detach() - values.unsqueeze(-1))
    loss_bc = -(correction * log_pi).sum(-1).mean()
    entropy = -(pi * log_pi).sum(-1).mean()
    loss = loss_f + loss_bc + config.q_coef * loss_q - config.ent_coef * entropy
    kl = (avg * (th.log(avg + EPS) - log_pi)).sum(-1)  # KL(pi_avg || pi), [T, E]

    facts: dict[str, float] = {}
    diagnostics = dict(avg_norm_k=0.0, avg_norm_g=0.0, avg_norm_k_dot_g=0.0, avg_norm_adj=0.0)
    if config.trust_region:
        # eq. 10-12: g and k per sample w.r.t. pi(.|x_t); z = g - max(0, (k.g - delta) / |k|^2) k.
        objective = -(loss_f + loss_bc - config.ent_coef * entropy) * n_samples
        (g,) = th.autograd.grad(objective, pi, retain_graph=True)
        (k,) = th.autograd.grad(kl.sum(), pi, retain_graph=True)
        k_dot_g = (k * g).sum(-1)
        adj = th.clamp((k_dot_g - config.delta) / ((k * k).sum(-1) + EPS), min=0.0)
        z = g - adj.unsqueeze(-1) * k
        surrogate = -(z.detach() * pi).sum() / n_samples + config.q_coef * loss_q
        surrogate.backward()
        diagnostics = dict(
            avg_norm_k=float(k.detach().norm(dim=-1).mean()),
            avg_norm_g=float(g.norm(dim=-1).mean()),
            avg_norm_k_dot_g=float(k_dot_g.abs().mean()),
            avg_norm_adj=float(adj.mean()),
        )
        facts.update(
            projected_frac=float((adj > 0).double().mean()),
            projection_margin=float((k_dot_g - config.delta).abs().min()),
        )
    else:
        loss.backward()

    q_ret_np, q_i_np = q_ret.numpy(), q_i.detach().numpy()
    with th.no_grad():
        expected = dict(
            loss=float(loss),
            loss_q=float(loss_q),
            loss_policy=float(loss_f + loss_bc),
            loss_f=float(loss_f),
            loss_bc=float(loss_bc),
            entropy=float(entropy),
            explained_variance=float(1.0 - np.var(q_ret_np - q_i_np) / np.var(q_ret_np)),
            rho_mean=float(rho_i.mean()),
            rho_truncated_frac=float((rho_i > c).double().mean()),
            kl_avg=float(kl.mean()),
            **diagnostics,
        )
    rho_np = rho_i.numpy()
    facts.update(
        below_one=float((rho_np < 0.9).mean()),
        between=float(((rho_np > 1.1) & (rho_np < 0.9 * c)).mean()),
        above_c=float((rho_np > 1.1 * c).mean()),
        correction_live=float((rho.numpy() > 1.1 * c).any(-1).mean()),
        threshold_margin=float(min(np.abs(np.log(rho.numpy() / c)).min(), np.abs(np.log(rho_np)).min())),
    )
    grads = {
        name: (p.grad if p.grad is not None else th.zeros_like(p)).detach()
        for name, p in policy64.named_parameters()
    }
    return grads, expected, facts


def _perturb(module: th.nn.Module, scale: float, seed: int) -> None:
    generator = th.Generator().manual_seed(seed)
    with th.no_grad():
        for parameter in module.parameters():
            parameter.add_(scale * th.randn(parameter.shape, generator=generator))


def _networks(recurrent: bool) -> tuple[MlpPolicy | RecurrentACERPolicy, MlpPolicy | RecurrentACERPolicy]:
    """A small policy with non-trivial heads (the orthogonal init gives Q ~ 0, pi ~ uniform) and an average
    network away from it."""
    th.manual_seed(0)
    obs_space = spaces.Box(-np.inf, np.inf, shape=(OBS_DIM,), dtype=np.float32)
    action_space = spaces.Discrete(N_ACTIONS)
    policy: MlpPolicy | RecurrentACERPolicy
    if recurrent:
        policy = MlpLstmPolicy(obs_space, action_space, n_lstm=8, net_arch=[16, "lstm"])
    else:
        policy = MlpPolicy(obs_space, action_space, net_arch=dict(pi=[16], qf=[16]))
    _perturb(policy, 0.3, seed=1)
    with th.no_grad():
        policy.q_net.weight.mul_(3.0)
        policy.q_net.bias.add_(th.tensor([1.0, -2.0, 0.5]))
        policy.action_net.weight.mul_(1.0)
    avg_policy = copy.deepcopy(policy)
    _perturb(avg_policy, 0.4, seed=2)
    return policy, avg_policy


def _segment(
    policy: MlpPolicy | RecurrentACERPolicy, avg_policy: MlpPolicy | RecurrentACERPolicy, recurrent: bool
) -> Segment:
    """An off-policy segment: ``mu`` is built from the current ``pi`` so that the taken actions get the
    importance weights of ``TARGET_RHO`` and one untaken action per sample has a small ``mu``."""
    rng = np.random.default_rng(3 if recurrent else 4)
    n_steps, n_envs = (6, 2) if recurrent else (5, 3)
    observations = rng.normal(size=(n_steps + 1, n_envs, OBS_DIM)).astype(np.float32)
    terminated = np.zeros((n_steps, n_envs), dtype=bool)
    truncated = np.zeros((n_steps, n_envs), dtype=bool)
    episode_starts = np.zeros((n_steps + 1, n_envs), dtype=bool)
    terminated[1, 0] = True
    truncated[2, 1] = True
    if recurrent:
        truncated[n_steps - 1, 0] = True  # truncated at the last step: bootstrap from the final obs, not x_T
        final_index = np.array([[2, 1], [n_steps - 1, 0]], dtype=np.int64)
        initial_state = (
            rng.normal(scale=0.5, size=(n_envs, 8)).astype(np.float32),
            rng.normal(scale=0.5, size=(n_envs, 8)).astype(np.float32),
        )
    else:
        truncated[n_steps - 1, 2] = True
        final_index = np.array([[2, 1], [n_steps - 1, 2]], dtype=np.int64)
        initial_state = None
    for t, e in np.argwhere(terminated | truncated):
        episode_starts[t + 1, e] = True
    segment = Segment(
        observations=observations,
        actions=rng.integers(0, N_ACTIONS, size=(n_steps, n_envs)),
        rewards=rng.normal(scale=2.0, size=(n_steps, n_envs)).astype(np.float32),
        mu_probs=np.full((n_steps, n_envs, N_ACTIONS), 1.0 / N_ACTIONS, dtype=np.float32),
        terminated=terminated,
        truncated=truncated,
        episode_starts=episode_starts,
        final_index=final_index,
        final_observations=rng.normal(size=(len(final_index), OBS_DIM)).astype(np.float32),
        initial_state=initial_state,
    )
    # pi(.|x_t) of the current policy (float64 oracle forward), then mu with the wanted weights.
    policy64, avg64 = copy.deepcopy(policy).double(), copy.deepcopy(avg_policy).double()
    with th.no_grad():
        if recurrent:
            assert isinstance(policy64, RecurrentACERPolicy) and isinstance(avg64, RecurrentACERPolicy)
            logits = _recurrent_outputs(policy64, avg64, segment).logits
        else:
            assert isinstance(policy64, MlpPolicy) and isinstance(avg64, MlpPolicy)
            logits = _feed_forward_outputs(policy64, avg64, segment).logits
    pi = th.softmax(logits[:n_steps], dim=-1).numpy()
    mu = np.empty_like(pi)
    for index, (t, e) in enumerate(np.ndindex(n_steps, n_envs)):
        taken = segment.actions[t, e]
        mu_taken = min(pi[t, e, taken] / TARGET_RHO[index % len(TARGET_RHO)], 0.9)
        others = [a for a in range(N_ACTIONS) if a != taken]
        mu[t, e, taken] = mu_taken
        mu[t, e, others] = (1.0 - mu_taken) * np.array([0.9, 0.1] if index % 2 else [0.1, 0.9])
    return dataclasses.replace(segment, mu_probs=mu.astype(np.float32))


def _check_against_oracle(recurrent: bool, config: UpdateConfig) -> None:
    policy, avg_policy = _networks(recurrent)
    segment = _segment(policy, avg_policy, recurrent)
    grads, expected, facts = oracle_step(policy, avg_policy, segment, config)

    # The scenario exercises what it claims to.
    assert facts["below_one"] > 0 and facts["between"] > 0 and facts["above_c"] > 0
    assert facts["correction_live"] > 0.3
    assert facts["threshold_margin"] > 1e-3
    if config.trust_region:
        assert 0.2 < facts["projected_frac"] < 0.9
        assert facts["projection_margin"] > 1e-3
    assert expected["kl_avg"] > 0.02

    policy.zero_grad(set_to_none=True)
    loss, stats = compute_gradients(policy=policy, avg_policy=avg_policy, segment=segment, config=config)
    assert isinstance(stats, UpdateStats)

    for field in UpdateStats._fields:
        assert getattr(stats, field) == pytest.approx(expected[field], rel=1e-4, abs=1e-6), field
    assert float(loss) == pytest.approx(expected["loss"], rel=1e-4, abs=1e-6)

    scale = max(float(g.abs().max()) for g in grads.values())
    assert scale > 1e-2
    for name, parameter in policy.named_parameters():
        actual = parameter.grad if parameter.grad is not None else th.zeros_like(parameter)
        th.testing.assert_close(
            actual.double(), grads[name], rtol=1e-4, atol=1e-5 * scale, msg=lambda m, n=name: f"{n}: {m}"
        )


@pytest.mark.parametrize("trust_region", [True, False])
def test_feed_forward_update_matches_oracle(trust_region: bool) -> None:
    """MlpPolicy, off-policy segment with a termination and two time-limit truncations: the gradient on
    every parameter and every UpdateStats value equal the float64 oracle's. Protects the Retrace trace
    (``min(1, rho)``), the truncation bootstrap, ``rho_truncated_frac`` (against ``c``), the explained
    variance of ``Q(x_t, a_t)`` against ``Q^ret``, ``kl_avg = KL(pi_avg || pi)``, the KL gradient
    ``k = -pi_avg / pi`` and the rows the average network is evaluated on."""
    _check_against_oracle(recurrent=False, config=dataclasses.replace(BASE_CONFIG, trust_region=trust_region))


def test_feed_forward_update_matches_oracle_with_retrace_lambda() -> None:
    """As above with Retrace(lambda): traces ``lambda * min(1, rho)``."""
    _check_against_oracle(recurrent=False, config=dataclasses.replace(BASE_CONFIG, retrace_lambda=0.7))


def test_recurrent_update_matches_oracle() -> None:
    """MlpLstmPolicy from a non-zero stored LSTM state, episode starts inside the segment and truncations
    (one at the last step): the unroll of the policy and of the average network (both reset at episode
    starts), the truncation observations' state, and the whole step match the float64 oracle."""
    _check_against_oracle(recurrent=True, config=BASE_CONFIG)

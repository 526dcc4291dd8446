"""One ACER gradient computation for ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions (paper section 4).

The counterpart of :func:`sb3_acer.update.compute_gradients` for :class:`~sb3_acer.policies.sdn.SDNPolicy`:

1. forward passes: statistics ``phi`` of ``pi(.|x_t)``, ``V(x_t)`` (and of the truncation observations), the
   average network's statistics;
2. the importance weights ``rho_t = pi(a_t) / mu(a_t)`` (from the behaviour statistics stored with the
   segment) and ``rho_t(a'_t)`` of one action ``a'_t ~ pi`` per sample;
3. the stochastic dueling network ``Q~`` of the taken and of the sampled action with ``n`` actions
   ``u_i ~ pi`` (the same ``u_i`` for both), ``Q_ret`` (trace ``min(1, rho^(1/d))``) and ``Q_opc``;
4. the critic loss ``1/2 (Q_ret - Q~(x, a))^2 + 1/2 (V_target - V(x))^2`` (eq. 14), weighted by ``q_coef``;
5. the policy gradient of eq. 16 with respect to the statistics, plus the entropy bonus, projected per sample
   (per factor for factorised spaces) onto the trust region around the average policy, and back-propagated
   through ``phi`` with the critic's gradient; without the trust region, the losses are back-propagated.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.utils import obs_as_tensor

from sb3_acer import functional as F
from sb3_acer import functional_continuous as FC
from sb3_acer.common.observations import first_rows, unpack_observations
from sb3_acer.common.type_aliases import Segment
from sb3_acer.policies.sdn import SDNOutput, SDNPolicy
from sb3_acer.policies.sdn_recurrent import RecurrentSDNPolicy
from sb3_acer.update import TrustRegionDiagnostics, UpdateConfig, UpdateStats, sequence_inputs

__all__ = [
    "SDNCritic",
    "SDNDraws",
    "SDNForward",
    "compute_sdn_gradients",
    "draw_samples",
    "sdn_critic",
    "sdn_forward",
]


class SDNDraws(NamedTuple):
    """The actions drawn from the current policy for one update.

    Attributes:
        sampled: ``[T, E, action_size]`` one action ``a'_t ~ pi(.|x_t)`` for the bias correction.
        dueling: ``[T, E, n, action_size]`` the ``n`` actions ``u_i ~ pi(.|x_t)`` of ``Q~``.
    """

    sampled: th.Tensor
    dueling: th.Tensor


def draw_samples(policy: SDNPolicy, stats: th.Tensor, n_dueling: int) -> SDNDraws:
    """``a'`` and the ``u_i`` from ``[T, E, S]`` statistics (no gradient; torch's global RNG)."""
    with th.no_grad():
        stats = stats.detach()
        sampled = policy.dist.sample(stats)
        expanded = stats.unsqueeze(2).expand(*stats.shape[:2], n_dueling, stats.shape[-1])
        return SDNDraws(sampled=sampled, dueling=policy.dist.sample(expanded))


class SDNForward(NamedTuple):
    """The networks' outputs of a segment, time-major.

    Attributes:
        stats: ``[T, E, S]`` statistics of ``pi(.|x_t)``, with autograd history.
        values: ``[T + 1, E]`` ``V(x_t)``, with autograd history.
        latent: ``[T E, L]`` the critic's latents of ``x_0 .. x_{T-1}``.
        truncation_values: ``[T, E]`` ``V`` of the truncation observations (zero elsewhere), detached.
        avg_stats: ``[T, E, S]`` the average network's statistics (no gradient).
    """

    stats: th.Tensor
    values: th.Tensor
    latent: th.Tensor
    truncation_values: th.Tensor
    avg_stats: th.Tensor


def sdn_forward(policy: SDNPolicy, avg_policy: SDNPolicy, segment: Segment) -> SDNForward:
    """Forward passes of the current network (every observation of ``segment`` and the ``K`` truncation
    observations) and of the average network (``x_0 .. x_{T-1}``).

    A recurrent policy (:class:`~sb3_acer.policies.sdn_recurrent.RecurrentSDNPolicy`) and its average
    network are unrolled from ``segment.initial_state``, as in :func:`sb3_acer.update.recurrent_outputs`.

    Raises:
        TypeError: if the average network is not of the same kind (recurrent or not) as the policy.
    """
    n_steps, n_envs = segment.n_steps, segment.n_envs
    n_rows, n_samples = (n_steps + 1) * n_envs, n_steps * n_envs
    if isinstance(policy, RecurrentSDNPolicy) != isinstance(avg_policy, RecurrentSDNPolicy):
        raise TypeError("the average network must be recurrent exactly when the policy is")
    if isinstance(policy, RecurrentSDNPolicy) and isinstance(avg_policy, RecurrentSDNPolicy):
        inputs = sequence_inputs(segment, policy.device)
        keep = segment.final_index if inputs.final_obs is not None else None
        output, _, kept_state = policy.evaluate_sequence(inputs.obs, inputs.starts, inputs.state, keep)
        if inputs.final_obs is not None:
            assert kept_state is not None
            no_start = th.zeros((1, len(segment.final_index)), dtype=th.bool, device=policy.device)
            final, _, _ = policy.evaluate_sequence(inputs.final_obs, no_start, kept_state)
            output = SDNOutput(*(th.cat([mine, theirs]) for mine, theirs in zip(output, final, strict=True)))
        with th.no_grad():
            avg_stats = avg_policy.evaluate_sequence(
                first_rows(inputs.obs, n_steps), inputs.starts[:n_steps], inputs.state
            )[0].stats
    else:
        obs = segment.observations.reshape((n_rows, *segment.observations.shape[2:]))
        if len(segment.final_observations):
            obs = np.concatenate([obs, segment.final_observations], axis=0)
        obs_tensor = obs_as_tensor(unpack_observations(obs), policy.device)
        output = policy.evaluate(obs_tensor)
        with th.no_grad():
            avg_stats = avg_policy.statistics(first_rows(obs_tensor, n_samples))
    truncation_values = th.zeros_like(th.as_tensor(segment.rewards, device=policy.device))
    if len(segment.final_observations):
        index = th.as_tensor(segment.final_index, device=policy.device)
        truncation_values[index[:, 0], index[:, 1]] = output.values[n_rows:].detach()
    return SDNForward(
        stats=output.stats[:n_samples].view(n_steps, n_envs, -1),
        values=output.values[:n_rows].view(n_steps + 1, n_envs),
        latent=output.critic_latent[:n_samples],
        truncation_values=truncation_values,
        avg_stats=avg_stats.view(n_steps, n_envs, -1),
    )


class SDNCritic(NamedTuple):
    """Importance weights, the dueling estimates, the targets and the critic loss of one update.

    Attributes:
        rho_i: ``[T, E]`` ``pi(a_t) / mu(a_t)``.
        rho_sampled: ``[T, E]`` ``pi(a'_t) / mu(a'_t)``.
        q_tilde: ``[T, E]`` ``Q~(x_t, a_t)``, with autograd history.
        q_sampled: ``[T, E]`` ``Q~(x_t, a'_t)``, detached.
        targets: ``Q_ret`` and ``Q_opc``.
        loss_q: ``mean(1/2 (Q_ret - Q~)^2) + mean(1/2 (V_target - V)^2)``, with autograd history.
    """

    rho_i: th.Tensor
    rho_sampled: th.Tensor
    q_tilde: th.Tensor
    q_sampled: th.Tensor
    targets: FC.ContinuousRetrace
    loss_q: th.Tensor


def sdn_critic(
    policy: SDNPolicy,
    forward: SDNForward,
    segment: Segment,
    actions: th.Tensor,
    draws: SDNDraws,
    config: UpdateConfig,
) -> SDNCritic:
    """Importance weights, ``Q~`` of the taken and the sampled actions, ``Q_ret`` / ``Q_opc`` and the
    critic loss on ``Q_ret`` and on the value target of eq. 14."""
    device, dist = policy.device, policy.dist
    n_steps, n_envs = segment.n_steps, segment.n_envs
    values = forward.values
    mu_stats = th.as_tensor(segment.mu_probs, device=device)
    detached = forward.stats.detach()
    with th.no_grad():
        rho_i = th.exp(dist.log_prob(detached, actions) - dist.log_prob(mu_stats, actions))
        rho_sampled = th.exp(dist.log_prob(detached, draws.sampled) - dist.log_prob(mu_stats, draws.sampled))
    # A(x, .) of the taken action, the sampled one and the n dueling ones, in one pass.
    all_actions = th.cat([actions.unsqueeze(2), draws.sampled.unsqueeze(2), draws.dueling], 2)
    adv = policy.advantage(forward.latent, all_actions.reshape(n_steps * n_envs, -1, all_actions.shape[-1]))
    adv = adv.view(n_steps, n_envs, -1)
    q_tilde = FC.stochastic_dueling_q(
        values=values[:-1], advantage=adv[..., 0], sampled_advantages=adv[..., 2:]
    )
    q_sampled = FC.stochastic_dueling_q(
        values=values[:-1], advantage=adv[..., 1], sampled_advantages=adv[..., 2:]
    )
    targets = FC.continuous_retrace_targets(
        rewards=th.as_tensor(segment.rewards, device=device),
        q_tilde=q_tilde.detach(),
        values=values.detach(),
        rho_i=rho_i,
        terminated=th.as_tensor(segment.terminated, device=device),
        gamma=config.gamma,
        action_dim=dist.action_dim,
        truncated=th.as_tensor(segment.truncated, device=device),
        truncation_values=forward.truncation_values,
        retrace_lambda=config.retrace_lambda,
    )
    v_target = FC.value_target(
        rho_i=rho_i, q_ret=targets.q_ret, q_tilde=q_tilde.detach(), values=values[:-1].detach()
    )
    loss_q = 0.5 * (targets.q_ret - q_tilde).pow(2).mean() + 0.5 * (v_target - values[:-1]).pow(2).mean()
    return SDNCritic(rho_i, rho_sampled, q_tilde, q_sampled.detach(), targets, loss_q)


def _trust_region_backward(
    policy: SDNPolicy,
    forward: SDNForward,
    actions: th.Tensor,
    draws: SDNDraws,
    critic: SDNCritic,
    config: UpdateConfig,
    with_stats: bool,
) -> TrustRegionDiagnostics:
    """Back-propagate the projected policy gradient (per sample, or per factor) and the critic's."""
    dist, detached = policy.dist, forward.stats.detach()
    g = FC.sdn_policy_gradient(
        grad_log_pi_i=dist.log_prob_gradient(detached, actions),
        grad_log_pi_sampled=dist.log_prob_gradient(detached, draws.sampled),
        rho_i=critic.rho_i,
        rho_sampled=critic.rho_sampled,
        q_opc=critic.targets.q_opc,
        q_sampled=critic.q_sampled,
        values=forward.values[:-1].detach(),
        c=config.correction_term,
        eps=config.eps,
    )
    if config.ent_coef:
        g = g + config.ent_coef * dist.entropy_gradient(detached)
    k = dist.kl_gradient(forward.avg_stats, detached)
    step = dist.project(g, k, config.delta, config.eps)
    loss_q = config.q_coef * critic.loss_q
    n_samples = actions.shape[0] * actions.shape[1]
    th.autograd.backward([forward.stats, loss_q], [-step.z / n_samples, th.ones_like(loss_q)])
    if not with_stats:
        return TrustRegionDiagnostics()
    return TrustRegionDiagnostics(
        avg_norm_k=float(k.norm(dim=-1).mean()),
        avg_norm_g=float(g.norm(dim=-1).mean()),
        avg_norm_k_dot_g=float(step.k_dot_g.abs().mean()),
        avg_norm_adj=float(step.adj.abs().mean()),
    )


def compute_sdn_gradients(
    *,
    policy: SDNPolicy,
    avg_policy: SDNPolicy,
    segment: Segment,
    config: UpdateConfig,
    n_dueling: int = 5,
    with_stats: bool = True,
    draws: SDNDraws | None = None,
) -> tuple[th.Tensor, UpdateStats]:
    """Accumulate the continuous / factorised ACER gradient of ``segment`` into ``policy``'s ``.grad``.

    Args:
        policy: the current policy.
        avg_policy: the average policy network.
        segment: actions ``[T, E, action_size]`` and behaviour statistics ``mu_probs`` ``[T, E, S]``.
        config: the update's hyperparameters (``retrace_lambda`` shortens the trace of ``Q_ret`` only).
        n_dueling: ``n``, the number of actions ``u_i`` of the stochastic dueling network (paper: 5).
        with_stats: compute the values that only serve logging (``explained_variance``, ``avg_norm_*``).
        draws: the actions drawn from ``pi`` (tests pass them; default drawn here).

    Returns:
        The total loss (a scalar, for finiteness checks) and the statistics.
    """
    dist = policy.dist
    forward = sdn_forward(policy, avg_policy, segment)
    actions = th.as_tensor(segment.actions, device=policy.device).reshape(segment.n_steps, segment.n_envs, -1)
    if draws is None:
        draws = draw_samples(policy, forward.stats, n_dueling)
    critic = sdn_critic(policy, forward, segment, actions, draws, config)
    diagnostics = TrustRegionDiagnostics()
    if config.trust_region:
        diagnostics = _trust_region_backward(policy, forward, actions, draws, critic, config, with_stats)
    with th.set_grad_enabled(not config.trust_region):
        policy_loss = FC.sdn_policy_loss(
            log_pi_i=dist.log_prob(forward.stats, actions),
            log_pi_sampled=dist.log_prob(forward.stats, draws.sampled),
            rho_i=critic.rho_i,
            rho_sampled=critic.rho_sampled,
            q_opc=critic.targets.q_opc,
            q_sampled=critic.q_sampled,
            values=forward.values[:-1].detach(),
            c=config.correction_term,
            eps=config.eps,
        )
        entropy = dist.entropy(forward.stats).mean()
        loss_policy = policy_loss.loss_f + policy_loss.loss_bc
        loss = loss_policy + config.q_coef * critic.loss_q - config.ent_coef * entropy
    if not config.trust_region:
        loss.backward()
    with th.no_grad():
        explained = F.explained_variance(y_pred=critic.q_tilde.detach(), y_true=critic.targets.q_ret)
        record = UpdateStats(
            loss=float(loss),
            loss_q=float(critic.loss_q.detach()),
            loss_policy=float(loss_policy),
            loss_f=float(policy_loss.loss_f),
            loss_bc=float(policy_loss.loss_bc),
            entropy=float(entropy),
            explained_variance=explained,
            rho_mean=float(critic.rho_i.mean()),
            rho_truncated_frac=float((critic.rho_i > config.correction_term).float().mean()),
            kl_avg=float(dist.kl(forward.avg_stats, forward.stats.detach()).mean()),
            avg_norm_k=diagnostics.avg_norm_k,
            avg_norm_g=diagnostics.avg_norm_g,
            avg_norm_k_dot_g=diagnostics.avg_norm_k_dot_g,
            avg_norm_adj=diagnostics.avg_norm_adj,
        )
    return loss.detach(), record

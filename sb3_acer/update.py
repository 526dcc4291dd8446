"""One ACER gradient computation: segment in, gradients on the policy parameters and statistics out.

The loss terms come from :mod:`sb3_acer.functional`; this module only wires them to the networks. It never
sees the environment, the replay buffer or the logger.

A recurrent policy is unrolled over the ``T + 1`` observations of the segment from the LSTM state the
segment was collected with (``segment.initial_state``), resetting the state where an episode starts: on a
fresh segment this reproduces the behaviour probabilities exactly, so on-policy ``rho == 1``. The average
policy network is unrolled from the same stored state (it never acts, so it has no state of its own; this
is the state of the policy that produced ``mu``). The observation at which an episode was truncated is
evaluated with the state reached after the last step of that episode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.utils import obs_as_tensor

from sb3_acer import functional as F
from sb3_acer.policies import ACERPolicy, RecurrentACERPolicy
from sb3_acer.segment import Segment

__all__ = ["UpdateConfig", "UpdateStats", "compute_gradients"]


@dataclass(frozen=True)
class UpdateConfig:
    """Hyperparameters of one ACER update (see ``ACER`` for their meaning)."""

    gamma: float
    q_coef: float
    ent_coef: float
    correction_term: float
    trust_region: bool
    delta: float
    retrace_lambda: float = 1.0
    eps: float = F.EPS


class UpdateStats(NamedTuple):
    """Scalars describing one update; logged under ``train/<name>`` (see ``docs/algorithm.md``)."""

    loss: float
    loss_q: float
    loss_policy: float
    loss_f: float
    loss_bc: float
    entropy: float
    explained_variance: float
    rho_mean: float
    rho_truncated_frac: float
    kl_avg: float
    avg_norm_k: float
    avg_norm_g: float
    avg_norm_k_dot_g: float
    avg_norm_adj: float


def _recurrent_outputs(
    policy: RecurrentACERPolicy, avg_policy: RecurrentACERPolicy, segment: Segment
) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
    """Logits and Q-values of the ``(T + 1) E`` observations then the ``K`` truncation observations, rows in
    the feed-forward layout, and the average network's logits of the first ``T E`` observations."""
    if segment.initial_state is None:
        raise ValueError("a recurrent policy needs segments that carry their initial_state")
    device = policy.device
    n_steps, n_envs = segment.n_steps, segment.n_envs
    obs = th.as_tensor(segment.observations, device=device)
    starts = th.as_tensor(segment.episode_starts, device=device)
    state = (
        th.as_tensor(segment.initial_state[0], device=device).unsqueeze(0),
        th.as_tensor(segment.initial_state[1], device=device).unsqueeze(0),
    )
    n_final = len(segment.final_observations)
    output = policy.forward_sequence(
        obs, starts, state, keep_states_at=segment.final_index if n_final else None
    )
    logits = output.logits.reshape((n_steps + 1) * n_envs, -1)
    q_values = output.q_values.reshape((n_steps + 1) * n_envs, -1)
    if n_final:
        assert output.kept_state is not None
        final = policy.forward_sequence(
            th.as_tensor(segment.final_observations, device=device).unsqueeze(0),
            th.zeros((1, n_final), dtype=th.bool, device=device),
            output.kept_state,
        )
        logits = th.cat([logits, final.logits[0]])
        q_values = th.cat([q_values, final.q_values[0]])
    with th.no_grad():
        avg_logits = avg_policy.forward_sequence(obs[:n_steps], starts[:n_steps], state).logits
    return logits, q_values, avg_logits.reshape(n_steps * n_envs, -1)


def compute_gradients(
    *,
    policy: ACERPolicy | RecurrentACERPolicy,
    avg_policy: ACERPolicy | RecurrentACERPolicy,
    segment: Segment,
    config: UpdateConfig,
    with_stats: bool = True,
) -> tuple[th.Tensor, UpdateStats]:
    """Accumulate the ACER gradient of ``segment`` into ``policy``'s ``.grad`` (call ``zero_grad`` first).

    With ``trust_region=True`` the gradient of the policy objective (entropy included) with respect to the
    probabilities ``pi(.|x_t)`` of every sample is projected onto the trust region around the average
    policy (paper eq. 12) and back-propagated; the ``q_coef``-weighted critic gradient is added unprojected.
    A recurrent policy (and its average network) is unrolled from ``segment.initial_state``.

    With ``with_stats=False`` and the trust region on, the loss values that only serve logging are not
    computed (the gradient is the same): the returned loss is then the critic loss, and the statistics other
    than the importance weights are ``nan`` (the logger skips them). ACER does this for replayed updates.

    Returns:
        The total loss (a scalar tensor, for finiteness checks) and the statistics.
    """
    device = policy.device
    n_steps, n_envs = segment.n_steps, segment.n_envs
    n_samples = n_steps * n_envs
    n_final = len(segment.final_observations)

    actions = th.as_tensor(segment.actions, device=device)
    rewards = th.as_tensor(segment.rewards, device=device)
    mu_probs = th.as_tensor(segment.mu_probs, device=device)
    terminated = th.as_tensor(segment.terminated, device=device)
    truncated = th.as_tensor(segment.truncated, device=device)

    if isinstance(policy, RecurrentACERPolicy):
        if not isinstance(avg_policy, RecurrentACERPolicy):
            raise TypeError("the average network of a recurrent policy must be recurrent too")
        logits_all, q_values_all, avg_logits = _recurrent_outputs(policy, avg_policy, segment)
    else:
        obs = segment.observations.reshape(((n_steps + 1) * n_envs, *segment.observations.shape[2:]))
        if n_final:
            obs = np.concatenate([obs, segment.final_observations], axis=0)
        obs_tensor = obs_as_tensor(obs, device)
        output = policy(obs_tensor)
        logits_all, q_values_all = output.logits, output.q_values
        if not isinstance(avg_policy, ACERPolicy):
            raise TypeError("the average network of a feed-forward policy must be feed-forward too")
        with th.no_grad():
            avg_logits = avg_policy.policy_logits(obs_tensor[:n_samples])  # type: ignore[index]
    probs_all = th.softmax(logits_all, dim=-1)
    values_all = (probs_all * q_values_all).sum(-1)
    with th.no_grad():
        avg_probs = th.softmax(avg_logits, dim=-1).view(n_steps, n_envs, -1)

    pi_probs = probs_all[:n_samples].view(n_steps, n_envs, -1)
    q_values = q_values_all[:n_samples].view(n_steps, n_envs, -1)
    values = values_all[: (n_steps + 1) * n_envs].view(n_steps + 1, n_envs)
    truncation_values = th.zeros_like(rewards)
    if n_final:
        index = th.as_tensor(segment.final_index, device=device)
        truncation_values[index[:, 0], index[:, 1]] = values_all[(n_steps + 1) * n_envs :].detach()

    weights = F.importance_weights(
        pi_probs=pi_probs.detach(), mu_probs=mu_probs, actions=actions, eps=config.eps
    )
    q_i = q_values.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
    q_ret = F.retrace_targets(
        rewards=rewards,
        q_i=q_i.detach(),
        values=values.detach(),
        rho_bar=config.retrace_lambda * th.clamp(weights.rho_i, max=1.0),
        terminated=terminated,
        truncated=truncated,
        truncation_values=truncation_values,
        gamma=config.gamma,
    )
    loss_q = 0.5 * (q_ret - q_i).pow(2).mean()
    nan = float("nan")
    diagnostics = dict(avg_norm_k=0.0, avg_norm_g=0.0, avg_norm_k_dot_g=0.0, avg_norm_adj=0.0)
    if config.trust_region:
        # Per-sample gradient of the objective (to maximise) w.r.t. the probabilities: undo the batch mean.
        # Closed form of autograd(-(loss_policy - ent_coef * entropy) * n_samples, pi_probs): one pass.
        g = F.acer_policy_gradient(
            pi_probs=pi_probs,
            actions=actions,
            rho=weights.rho,
            q_ret=q_ret,
            q_values=q_values.detach(),
            values=values[:-1].detach(),
            c=config.correction_term,
            ent_coef=config.ent_coef,
            eps=config.eps,
        )
        k = F.kl_gradient(avg_probs=avg_probs, pi_probs=pi_probs.detach(), eps=config.eps)
        step = F.trust_region_projection(g=g, k=k, delta=config.delta, eps=config.eps)
        th.autograd.backward(
            [pi_probs, config.q_coef * loss_q],
            [-step.z / n_samples, th.ones_like(loss_q)],
        )
        if with_stats:
            diagnostics = dict(
                avg_norm_k=float(k.norm(dim=-1).mean()),
                avg_norm_g=float(g.norm(dim=-1).mean()),
                avg_norm_k_dot_g=float(step.k_dot_g.abs().mean()),
                avg_norm_adj=float(step.adj.abs().mean()),
            )

    with th.no_grad():
        rho_mean = float(weights.rho_i.mean())
        rho_truncated_frac = float((weights.rho_i > config.correction_term).float().mean())
    if config.trust_region and not with_stats:
        # The gradient is complete: skip the values that serve only logging.
        return loss_q.detach(), UpdateStats(
            loss=nan,
            loss_q=float(loss_q.detach()),
            loss_policy=nan,
            loss_f=nan,
            loss_bc=nan,
            entropy=nan,
            explained_variance=nan,
            rho_mean=rho_mean,
            rho_truncated_frac=rho_truncated_frac,
            kl_avg=nan,
            avg_norm_k=nan,
            avg_norm_g=nan,
            avg_norm_k_dot_g=nan,
            avg_norm_adj=nan,
        )

    # With the trust region the loss only serves logging and the finiteness check; without it, its
    # gradient is the update.
    with th.set_grad_enabled(not config.trust_region):
        policy_loss = F.acer_policy_loss(
            pi_probs=pi_probs,
            actions=actions,
            rho=weights.rho,
            q_ret=q_ret,
            q_values=q_values.detach(),
            values=values[:-1].detach(),
            c=config.correction_term,
            eps=config.eps,
        )
        loss_policy = policy_loss.loss_f + policy_loss.loss_bc
        entropy = F.categorical_entropy(pi_probs, eps=config.eps).mean()
        loss = loss_policy + config.q_coef * loss_q - config.ent_coef * entropy
    if not config.trust_region:
        loss.backward()

    with th.no_grad():
        stats = UpdateStats(
            loss=float(loss),
            loss_q=float(loss_q.detach()),
            loss_policy=float(loss_policy),
            loss_f=float(policy_loss.loss_f),
            loss_bc=float(policy_loss.loss_bc),
            entropy=float(entropy),
            explained_variance=F.explained_variance(y_pred=q_i.detach(), y_true=q_ret),
            rho_mean=rho_mean,
            rho_truncated_frac=rho_truncated_frac,
            kl_avg=float(
                F.categorical_kl(p_probs=avg_probs, q_probs=pi_probs.detach(), eps=config.eps).mean()
            ),
            **diagnostics,
        )
    return loss.detach(), stats

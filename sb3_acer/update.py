"""One ACER gradient computation: segment in, gradients on the policy parameters and statistics out.

The loss terms come from :mod:`sb3_acer.functional`; this module only wires them to the networks. It never
sees the environment, the replay buffer or the logger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.utils import obs_as_tensor

from sb3_acer import functional as F
from sb3_acer.policies import ACERPolicy
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


def compute_gradients(
    *, policy: ACERPolicy, avg_policy: ACERPolicy, segment: Segment, config: UpdateConfig
) -> tuple[th.Tensor, UpdateStats]:
    """Accumulate the ACER gradient of ``segment`` into ``policy``'s ``.grad`` (call ``zero_grad`` first).

    With ``trust_region=True`` the gradient of the policy objective (entropy included) with respect to the
    probabilities ``pi(.|x_t)`` of every sample is projected onto the trust region around the average
    policy (paper eq. 12) and back-propagated; the ``q_coef``-weighted critic gradient is added unprojected.

    Returns:
        The total loss (a scalar tensor, for finiteness checks) and the statistics.
    """
    device = policy.device
    n_steps, n_envs = segment.n_steps, segment.n_envs
    n_samples = n_steps * n_envs
    n_final = len(segment.final_observations)

    obs = segment.observations.reshape(((n_steps + 1) * n_envs, *segment.observations.shape[2:]))
    if n_final:
        obs = np.concatenate([obs, segment.final_observations], axis=0)
    obs_tensor = obs_as_tensor(obs, device)
    actions = th.as_tensor(segment.actions, device=device)
    rewards = th.as_tensor(segment.rewards, device=device)
    mu_probs = th.as_tensor(segment.mu_probs, device=device)
    terminated = th.as_tensor(segment.terminated, device=device)
    truncated = th.as_tensor(segment.truncated, device=device)

    output = policy(obs_tensor)
    probs_all = th.softmax(output.logits, dim=-1)
    values_all = (probs_all * output.q_values).sum(-1)
    with th.no_grad():
        avg_logits = avg_policy(obs_tensor[:n_samples]).logits  # type: ignore[index]
        avg_probs = th.softmax(avg_logits, dim=-1).view(n_steps, n_envs, -1)

    pi_probs = probs_all[:n_samples].view(n_steps, n_envs, -1)
    q_values = output.q_values[:n_samples].view(n_steps, n_envs, -1)
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
        rho_bar=th.clamp(weights.rho_i, max=1.0),
        terminated=terminated,
        truncated=truncated,
        truncation_values=truncation_values,
        gamma=config.gamma,
    )
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
    loss_q = 0.5 * (q_ret - q_i).pow(2).mean()
    loss = loss_policy + config.q_coef * loss_q - config.ent_coef * entropy

    diagnostics = dict(avg_norm_k=0.0, avg_norm_g=0.0, avg_norm_k_dot_g=0.0, avg_norm_adj=0.0)
    if config.trust_region:
        # Per-sample gradient of the objective (to maximise) w.r.t. the probabilities: undo the batch mean.
        objective = -(loss_policy - config.ent_coef * entropy) * n_samples
        (g,) = th.autograd.grad(objective, pi_probs, retain_graph=True)
        k = F.kl_gradient(avg_probs=avg_probs, pi_probs=pi_probs.detach(), eps=config.eps)
        step = F.trust_region_projection(g=g, k=k, delta=config.delta, eps=config.eps)
        th.autograd.backward(
            [pi_probs, config.q_coef * loss_q],
            [-step.z / n_samples, th.ones_like(loss_q)],
        )
        diagnostics = dict(
            avg_norm_k=float(k.norm(dim=-1).mean()),
            avg_norm_g=float(g.norm(dim=-1).mean()),
            avg_norm_k_dot_g=float(step.k_dot_g.abs().mean()),
            avg_norm_adj=float(step.adj.abs().mean()),
        )
    else:
        loss.backward()

    with th.no_grad():
        stats = UpdateStats(
            loss=float(loss),
            loss_q=float(loss_q),
            loss_policy=float(loss_policy),
            loss_f=float(policy_loss.loss_f),
            loss_bc=float(policy_loss.loss_bc),
            entropy=float(entropy),
            explained_variance=F.explained_variance(y_pred=q_i.detach(), y_true=q_ret),
            rho_mean=float(weights.rho_i.mean()),
            rho_truncated_frac=float((weights.rho_i > config.correction_term).float().mean()),
            kl_avg=float(
                F.categorical_kl(p_probs=avg_probs, q_probs=pi_probs.detach(), eps=config.eps).mean()
            ),
            **diagnostics,
        )
    return loss.detach(), stats

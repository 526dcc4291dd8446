"""One ACER gradient computation for every action space: segment in, gradients and statistics out.

The shared steps are written here once; what differs between the action families comes from an
:class:`~sb3_acer.common.update.records.ACERTerms` and the policy's action distribution
(:mod:`sb3_acer.common.distributions`). This module never sees the environment, the replay buffer or the
logger. :func:`compute_gradients` runs the steps in order:

1. :func:`network_outputs`: forward passes of the current and the average network (:func:`feed_forward_rows`
   or :func:`recurrent_rows`) -> :class:`NetworkOutputs`;
2. ``terms.critic``: importance weights, Retrace targets and the critic loss;
3. :func:`trust_region_backward` (trust region on): the projected policy gradient, back-propagated with the
   critic's -> :class:`TrustRegionDiagnostics`;
4. :func:`loss_terms`: the policy, bias-correction and entropy terms and the total loss -> :class:`LossTerms`
   (back-propagated when the trust region is off);
5. :func:`update_stats`: the statistics record -> :class:`UpdateStats`.

A recurrent policy is unrolled over the ``T + 1`` observations of the segment from the LSTM state the
segment was collected with (``segment.initial_state``), resetting the state where an episode starts: on a
fresh segment this reproduces the behaviour probabilities exactly, so on-policy ``rho == 1``. The average
policy network is unrolled from the same stored state (it never acts, so it has no state of its own; this
is the state of the policy that produced ``mu``). The observation at which an episode was truncated is
evaluated with the state reached after the last step of that episode.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.type_aliases import PyTorchObs
from stable_baselines3.common.utils import obs_as_tensor

from sb3_acer.common.distributions import ActionDistribution, Categorical
from sb3_acer.common.functional import categorical as F
from sb3_acer.common.observations import first_rows, map_observations, unpack_observations
from sb3_acer.common.policies import LSTMState
from sb3_acer.common.type_aliases import Segment
from sb3_acer.common.update.categorical import CategoricalTerms
from sb3_acer.common.update.records import (
    ACERTerms,
    AnyPolicy,
    CriticTerms,
    NetworkOutputs,
    Rows,
    TrustRegionDiagnostics,
    UpdateConfig,
    UpdateStats,
)
from sb3_acer.common.update.sdn import SDNDraws, SDNTerms

__all__ = [
    "LossTerms",
    "SequenceInputs",
    "compute_gradients",
    "feed_forward_rows",
    "loss_terms",
    "network_outputs",
    "recurrent_rows",
    "sequence_inputs",
    "terms_for",
    "trust_region_backward",
    "update_stats",
]


class LossTerms(NamedTuple):
    """The policy-side loss terms and the total loss (scalars; with autograd history only without the trust
    region)."""

    loss: th.Tensor
    loss_policy: th.Tensor
    policy_loss: F.PolicyLoss
    entropy: th.Tensor


class SequenceInputs(NamedTuple):
    """A segment as a recurrent policy takes it, time-major, on the policy's device.

    Attributes:
        obs: ``[T + 1, E, ...]`` observations.
        starts: ``[T + 1, E]`` bool episode starts.
        state: the LSTM state the segment was collected with, ``(h, c)`` each ``[1, E, n_lstm]``.
        final_obs: the ``K`` truncation observations as one step, ``[1, K, ...]`` (``None`` if ``K = 0``),
            to evaluate from the states kept at ``segment.final_index``.
    """

    obs: PyTorchObs
    starts: th.Tensor
    state: LSTMState
    final_obs: PyTorchObs | None


def terms_for(dist: ActionDistribution, draws: SDNDraws | None = None) -> ACERTerms[Any]:
    """The family maths of ``dist``: exact expectations for a categorical, the stochastic dueling network
    (with ``draws`` if given) for every other distribution."""
    return CategoricalTerms() if isinstance(dist, Categorical) else SDNTerms(draws)


def sequence_inputs(segment: Segment, device: th.device) -> SequenceInputs:
    """The inputs of a recurrent policy's unroll over ``segment``.

    Raises:
        ValueError: if the segment carries no ``initial_state``.
    """
    if segment.initial_state is None:
        raise ValueError("a recurrent policy needs segments that carry their initial_state")
    final_obs = None
    if len(segment.final_observations):
        final_obs = map_observations(
            lambda x: x.unsqueeze(0), obs_as_tensor(unpack_observations(segment.final_observations), device)
        )
    return SequenceInputs(
        obs=obs_as_tensor(unpack_observations(segment.observations), device),
        starts=th.as_tensor(segment.episode_starts, device=device),
        state=(
            th.as_tensor(segment.initial_state[0], device=device).unsqueeze(0),
            th.as_tensor(segment.initial_state[1], device=device).unsqueeze(0),
        ),
        final_obs=final_obs,
    )


def recurrent_rows(
    terms: ACERTerms[Any], policy: Any, avg_policy: Any, segment: Segment
) -> tuple[Rows, th.Tensor]:
    """Forward passes of a recurrent policy and its average network over ``segment``.

    Both are unrolled from ``segment.initial_state``; the ``K`` truncation observations are evaluated with
    the state reached after the last step of their episode.

    Returns:
        The rows of ``x_0 .. x_T`` (``t E + e``) then of the ``K`` truncation observations, and the average
        network's ``[T E, S]`` statistics of ``x_0 .. x_{T-1}`` (no gradient).

    Raises:
        ValueError: if the segment carries no ``initial_state``.
    """
    inputs = sequence_inputs(segment, policy.device)
    keep = segment.final_index if inputs.final_obs is not None else None
    raw, _, kept_state = policy.evaluate_sequence(inputs.obs, inputs.starts, inputs.state, keep)
    if inputs.final_obs is not None:
        assert kept_state is not None
        no_start = th.zeros((1, len(segment.final_index)), dtype=th.bool, device=policy.device)
        final, _, _ = policy.evaluate_sequence(inputs.final_obs, no_start, kept_state)
        raw = tuple(th.cat([mine, theirs]) for mine, theirs in zip(raw, final, strict=True))
    with th.no_grad():
        avg_stats = avg_policy.sequence_statistics(
            first_rows(inputs.obs, segment.n_steps),
            inputs.starts[: segment.n_steps],
            inputs.state,
        )
    return terms.rows(raw), avg_stats


def feed_forward_rows(
    terms: ACERTerms[Any], policy: Any, avg_policy: Any, segment: Segment
) -> tuple[Rows, th.Tensor]:
    """Forward passes of a feed-forward policy (one batch of every observation of ``segment`` and the ``K``
    truncation observations) and of its average network (``x_0 .. x_{T-1}``), as :func:`recurrent_rows`."""
    n_steps, n_envs = segment.n_steps, segment.n_envs
    obs = segment.observations.reshape(((n_steps + 1) * n_envs, *segment.observations.shape[2:]))
    if len(segment.final_observations):
        obs = np.concatenate([obs, segment.final_observations], axis=0)
    obs_tensor = obs_as_tensor(unpack_observations(obs), policy.device)
    rows = terms.rows(policy.evaluate(obs_tensor))
    with th.no_grad():
        avg_stats = avg_policy.statistics(first_rows(obs_tensor, n_steps * n_envs))
    return rows, avg_stats


def network_outputs(
    policy: AnyPolicy, avg_policy: AnyPolicy, segment: Segment, terms: ACERTerms[Any] | None = None
) -> NetworkOutputs:
    """Step 1 of the update: forward passes of the current and the average network, as statistics, state
    values and the family's extras in the time-major layout (``terms`` default: :func:`terms_for` the
    policy's distribution).

    Raises:
        TypeError: if the average network is not of the same kind (recurrent or not) as the policy.
    """
    n_steps, n_envs = segment.n_steps, segment.n_envs
    n_samples, n_rows = n_steps * n_envs, (n_steps + 1) * n_envs
    recurrent = policy.recurrent
    if recurrent != avg_policy.recurrent:
        raise TypeError("the average network must be recurrent exactly when the policy is")
    forward = recurrent_rows if recurrent else feed_forward_rows
    rows, avg_stats = forward(terms or terms_for(policy.dist), policy, avg_policy, segment)
    # In the rewards' dtype: the targets are computed in it.
    truncation_values = th.zeros_like(th.as_tensor(segment.rewards, device=policy.device))
    if len(segment.final_observations):
        index = th.as_tensor(segment.final_index, device=policy.device)
        truncation_values[index[:, 0], index[:, 1]] = rows.values[n_rows:].detach()
    return NetworkOutputs(
        stats=rows.stats[:n_samples].view(n_steps, n_envs, -1),
        values=rows.values[:n_rows].view(n_steps + 1, n_envs),
        extra=rows.extra[:n_samples].view(n_steps, n_envs, -1),
        truncation_values=truncation_values,
        avg_stats=avg_stats.view(n_steps, n_envs, -1),
    )


def trust_region_backward(
    policy: AnyPolicy,
    terms: ACERTerms[Any],
    outputs: NetworkOutputs,
    critic: Any,
    config: UpdateConfig,
    with_stats: bool,
) -> TrustRegionDiagnostics:
    """Step 3 of the update (trust region on): back-propagate the projected policy gradient and the critic's.

    The per-sample gradient ``g`` of the policy objective (entropy included) with respect to the statistics
    of ``pi(.|x_t)`` is projected onto the trust region around the average policy (paper eq. 12, ``k`` the
    gradient of the KL divergence to it; per factor for factorised spaces); ``-z / N`` is back-propagated
    through the statistics together with the ``q_coef``-weighted critic loss.

    Returns:
        The mean norms of ``k``, ``g``, ``k.g`` and the adjustment (zeros when ``with_stats`` is false).
    """
    dist: ActionDistribution = policy.dist
    n_samples = outputs.stats.shape[0] * outputs.stats.shape[1]
    g = terms.policy_gradient(policy, outputs, critic, config)
    k = dist.kl_gradient(outputs.avg_stats, outputs.stats.detach())
    step = dist.project(g, k, config.delta, config.eps)
    loss_q = config.q_coef * critic.loss_q
    th.autograd.backward([outputs.stats, loss_q], [-step.z / n_samples, th.ones_like(loss_q)])
    if not with_stats:
        return TrustRegionDiagnostics()
    return TrustRegionDiagnostics(
        avg_norm_k=float(k.norm(dim=-1).mean()),
        avg_norm_g=float(g.norm(dim=-1).mean()),
        avg_norm_k_dot_g=float(step.k_dot_g.abs().mean()),
        avg_norm_adj=float(step.adj.abs().mean()),
    )


def loss_terms(
    policy: AnyPolicy,
    terms: ACERTerms[Any],
    outputs: NetworkOutputs,
    critic: CriticTerms,
    config: UpdateConfig,
) -> LossTerms:
    """Step 4 of the update: the truncated policy term ``loss_f``, the bias correction ``loss_bc``, the
    entropy and the total loss ``loss_policy + q_coef * loss_q - ent_coef * entropy``.

    Without the trust region the total loss carries autograd history (its gradient is the update); with it,
    the loss only serves logging and the finiteness check, and is computed without history.
    """
    with th.set_grad_enabled(not config.trust_region):
        policy_loss = terms.policy_loss(policy, outputs, critic, config)
        loss_policy = policy_loss.loss_f + policy_loss.loss_bc
        entropy = policy.dist.entropy(outputs.stats).mean()
        loss = loss_policy + config.q_coef * critic.loss_q - config.ent_coef * entropy
    return LossTerms(loss=loss, loss_policy=loss_policy, policy_loss=policy_loss, entropy=entropy)


def update_stats(
    dist: ActionDistribution,
    outputs: NetworkOutputs,
    critic: CriticTerms,
    terms: LossTerms | None,
    diagnostics: TrustRegionDiagnostics,
    config: UpdateConfig,
) -> UpdateStats:
    """Step 5 of the update: the statistics record.

    With ``terms=None`` (trust region on, ``with_stats=False``) only the critic loss and the importance
    weights' statistics are computed; every other value is ``nan`` (the logger skips them).
    """
    with th.no_grad():
        rho_i = critic.rho_i
        rho_mean = float(rho_i.mean())
        rho_truncated_frac = float((rho_i > config.correction_term).float().mean())
        loss_q = float(critic.loss_q.detach())
        if terms is None:
            unset = UpdateStats._make([float("nan")] * len(UpdateStats._fields))
            return unset._replace(loss_q=loss_q, rho_mean=rho_mean, rho_truncated_frac=rho_truncated_frac)
        return UpdateStats(
            loss=float(terms.loss),
            loss_q=loss_q,
            loss_policy=float(terms.loss_policy),
            loss_f=float(terms.policy_loss.loss_f),
            loss_bc=float(terms.policy_loss.loss_bc),
            entropy=float(terms.entropy),
            explained_variance=F.explained_variance(y_pred=critic.q_i.detach(), y_true=critic.q_ret),
            rho_mean=rho_mean,
            rho_truncated_frac=rho_truncated_frac,
            kl_avg=float(dist.kl(outputs.avg_stats, outputs.stats.detach()).mean()),
            avg_norm_k=diagnostics.avg_norm_k,
            avg_norm_g=diagnostics.avg_norm_g,
            avg_norm_k_dot_g=diagnostics.avg_norm_k_dot_g,
            avg_norm_adj=diagnostics.avg_norm_adj,
        )


def compute_gradients(
    *,
    policy: AnyPolicy,
    avg_policy: AnyPolicy,
    segment: Segment,
    config: UpdateConfig,
    with_stats: bool = True,
    draws: SDNDraws | None = None,
) -> tuple[th.Tensor, UpdateStats]:
    """Accumulate the ACER gradient of ``segment`` into ``policy``'s ``.grad`` (call ``zero_grad`` first).

    With ``trust_region=True`` the gradient of the policy objective (entropy included) with respect to the
    statistics of ``pi(.|x_t)`` of every sample is projected onto the trust region around the average
    policy (paper eq. 12) and back-propagated; the ``q_coef``-weighted critic gradient is added unprojected.
    A recurrent policy (and its average network) is unrolled from ``segment.initial_state``.

    With ``with_stats=False`` and the trust region on, the loss values that only serve logging are not
    computed (the gradient is the same): the returned loss is then the critic loss, and the statistics other
    than the importance weights are ``nan`` (the logger skips them). ACER does this for replayed updates.

    Args:
        policy: the current policy (:mod:`sb3_acer.common.policies`); its ``dist`` picks the family maths.
        avg_policy: the average policy network, of the same class.
        segment: the segment (actions and behaviour statistics ``mu_probs`` in the distribution's layout).
        config: the update's hyperparameters.
        with_stats: compute the values that only serve logging.
        draws: the actions drawn from ``pi`` by the dueling network (tests pass them; default drawn here).

    Returns:
        The total loss (a scalar tensor, for finiteness checks) and the statistics.
    """
    terms = terms_for(policy.dist, draws)
    outputs = network_outputs(policy, avg_policy, segment, terms)
    critic = terms.critic(policy, outputs, segment, config)
    diagnostics = TrustRegionDiagnostics()
    if config.trust_region:
        diagnostics = trust_region_backward(policy, terms, outputs, critic, config, with_stats)
        if not with_stats:
            # The gradient is complete: skip the values that serve only logging.
            return critic.loss_q.detach(), update_stats(
                policy.dist, outputs, critic, None, diagnostics, config
            )
    losses = loss_terms(policy, terms, outputs, critic, config)
    if not config.trust_region:
        losses.loss.backward()
    return losses.loss.detach(), update_stats(policy.dist, outputs, critic, losses, diagnostics, config)

"""One ACER gradient computation: segment in, gradients on the policy parameters and statistics out.

The loss terms come from :mod:`sb3_acer.functional`; this module only wires them to the networks. It never
sees the environment, the replay buffer or the logger. :func:`compute_gradients` runs the steps of the
update in order, each a function below with a typed record for what it hands on:

1. :func:`network_outputs`: forward passes of the current and the average network
   (:func:`feed_forward_outputs` or :func:`recurrent_outputs`) -> :class:`NetworkOutputs`;
2. :func:`critic_targets`: importance weights, Retrace targets and the critic loss -> :class:`CriticTargets`;
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

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.type_aliases import PyTorchObs
from stable_baselines3.common.utils import obs_as_tensor

from sb3_acer import functional as F
from sb3_acer.common.observations import first_rows, map_observations, unpack_observations
from sb3_acer.common.type_aliases import Segment
from sb3_acer.policies import ACERPolicy, LSTMState, RecurrentACERPolicy

__all__ = [
    "CriticTargets",
    "LossTerms",
    "NetworkOutputs",
    "RawOutputs",
    "SegmentTensors",
    "SequenceInputs",
    "TrustRegionDiagnostics",
    "UpdateConfig",
    "UpdateStats",
    "compute_gradients",
    "critic_targets",
    "feed_forward_outputs",
    "loss_terms",
    "network_outputs",
    "policy_term_inputs",
    "recurrent_outputs",
    "segment_tensors",
    "sequence_inputs",
    "trust_region_backward",
    "update_stats",
]


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


class SegmentTensors(NamedTuple):
    """The per-step arrays of a segment as tensors on the policy's device, each ``[T, E]`` (``mu_probs``
    ``[T, E, A]``)."""

    actions: th.Tensor
    rewards: th.Tensor
    mu_probs: th.Tensor
    terminated: th.Tensor
    truncated: th.Tensor


class RawOutputs(NamedTuple):
    """Network outputs of a segment in the feed-forward row layout.

    Attributes:
        logits: ``[(T + 1) E + K, A]`` policy logits of ``x_0 .. x_T`` (rows ``t * E + e``) then of the ``K``
            truncation observations.
        q_values: ``[(T + 1) E + K, A]`` action values, same rows.
        avg_logits: ``[T E, A]`` the average network's logits of ``x_0 .. x_{T-1}`` (no gradient).
    """

    logits: th.Tensor
    q_values: th.Tensor
    avg_logits: th.Tensor


class NetworkOutputs(NamedTuple):
    """What the update needs from both networks, time-major.

    Attributes:
        pi_probs: ``[T, E, A]`` ``pi(.|x_t)``, with autograd history.
        q_values: ``[T, E, A]`` ``Q(x_t, .)``, with autograd history.
        values: ``[T + 1, E]`` ``V(x_t) = sum_a pi(a|x_t) Q(x_t, a)``, with autograd history.
        truncation_values: ``[T, E]`` ``V`` of the observation at which the episode was truncated after step
            ``t`` (zero elsewhere), detached.
        avg_probs: ``[T, E, A]`` the average policy's probabilities (no gradient).
    """

    pi_probs: th.Tensor
    q_values: th.Tensor
    values: th.Tensor
    truncation_values: th.Tensor
    avg_probs: th.Tensor


class CriticTargets(NamedTuple):
    """Importance weights, Retrace targets and the critic loss.

    Attributes:
        weights: the importance weights ``rho`` (all actions) and ``rho_i`` (taken actions).
        q_i: ``[T, E]`` ``Q(x_t, a_t)``, with autograd history.
        q_ret: ``[T, E]`` Retrace targets (no gradient).
        loss_q: the critic loss ``0.5 * mean((q_ret - q_i)^2)``, with autograd history.
    """

    weights: F.ImportanceWeights
    q_i: th.Tensor
    q_ret: th.Tensor
    loss_q: th.Tensor


class TrustRegionDiagnostics(NamedTuple):
    """Mean norms of the trust-region step (``train/avg_norm_*``); zeros when not computed."""

    avg_norm_k: float = 0.0
    avg_norm_g: float = 0.0
    avg_norm_k_dot_g: float = 0.0
    avg_norm_adj: float = 0.0


class LossTerms(NamedTuple):
    """The policy-side loss terms and the total loss (scalars; with autograd history only without the trust
    region)."""

    loss: th.Tensor
    loss_policy: th.Tensor
    policy_loss: F.PolicyLoss
    entropy: th.Tensor


def segment_tensors(segment: Segment, device: th.device) -> SegmentTensors:
    """The actions, rewards, behaviour probabilities and episode ends of ``segment`` as tensors."""
    return SegmentTensors(
        actions=th.as_tensor(segment.actions, device=device),
        rewards=th.as_tensor(segment.rewards, device=device),
        mu_probs=th.as_tensor(segment.mu_probs, device=device),
        terminated=th.as_tensor(segment.terminated, device=device),
        truncated=th.as_tensor(segment.truncated, device=device),
    )


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


def recurrent_outputs(
    policy: RecurrentACERPolicy, avg_policy: RecurrentACERPolicy, segment: Segment
) -> RawOutputs:
    """Forward passes of a recurrent policy and its average network over ``segment``.

    Both are unrolled from ``segment.initial_state``; the ``K`` truncation observations are evaluated with
    the state reached after the last step of their episode.

    Raises:
        ValueError: if the segment carries no ``initial_state``.
    """
    inputs = sequence_inputs(segment, policy.device)
    n_steps, n_envs = segment.n_steps, segment.n_envs
    keep = segment.final_index if inputs.final_obs is not None else None
    output = policy.forward_sequence(inputs.obs, inputs.starts, inputs.state, keep_states_at=keep)
    logits = output.logits.reshape((n_steps + 1) * n_envs, -1)
    q_values = output.q_values.reshape((n_steps + 1) * n_envs, -1)
    if inputs.final_obs is not None:
        assert output.kept_state is not None
        no_start = th.zeros((1, len(segment.final_index)), dtype=th.bool, device=policy.device)
        final = policy.forward_sequence(inputs.final_obs, no_start, output.kept_state)
        logits = th.cat([logits, final.logits[0]])
        q_values = th.cat([q_values, final.q_values[0]])
    with th.no_grad():
        avg_logits = avg_policy.forward_sequence(
            first_rows(inputs.obs, n_steps), inputs.starts[:n_steps], inputs.state
        ).logits
    return RawOutputs(logits, q_values, avg_logits.reshape(n_steps * n_envs, -1))


def feed_forward_outputs(policy: ACERPolicy, avg_policy: ACERPolicy, segment: Segment) -> RawOutputs:
    """Forward passes of a feed-forward policy (one batch of every observation of ``segment`` and the ``K``
    truncation observations) and of its average network (``x_0 .. x_{T-1}``)."""
    n_steps, n_envs = segment.n_steps, segment.n_envs
    obs = segment.observations.reshape(((n_steps + 1) * n_envs, *segment.observations.shape[2:]))
    if len(segment.final_observations):
        obs = np.concatenate([obs, segment.final_observations], axis=0)
    obs_tensor = obs_as_tensor(unpack_observations(obs), policy.device)
    output = policy.logits_and_q_values(obs_tensor)
    with th.no_grad():
        avg_logits = avg_policy.policy_logits(first_rows(obs_tensor, n_steps * n_envs))
    return RawOutputs(output.logits, output.q_values, avg_logits)


def network_outputs(
    policy: ACERPolicy | RecurrentACERPolicy, avg_policy: ACERPolicy | RecurrentACERPolicy, segment: Segment
) -> NetworkOutputs:
    """Step 1 of the update: forward passes of the current and the average network, as probabilities,
    action values and state values in the time-major layout.

    Raises:
        TypeError: if the average network is not of the same kind (recurrent or not) as the policy.
    """
    n_steps, n_envs = segment.n_steps, segment.n_envs
    n_samples = n_steps * n_envs
    if isinstance(policy, RecurrentACERPolicy):
        if not isinstance(avg_policy, RecurrentACERPolicy):
            raise TypeError("the average network of a recurrent policy must be recurrent too")
        raw = recurrent_outputs(policy, avg_policy, segment)
    else:
        if not isinstance(avg_policy, ACERPolicy):
            raise TypeError("the average network of a feed-forward policy must be feed-forward too")
        raw = feed_forward_outputs(policy, avg_policy, segment)
    probs_all = th.softmax(raw.logits, dim=-1)
    values_all = (probs_all * raw.q_values).sum(-1)
    with th.no_grad():
        avg_probs = th.softmax(raw.avg_logits, dim=-1).view(n_steps, n_envs, -1)
    # In the rewards' dtype: the targets are computed in it.
    truncation_values = th.zeros_like(th.as_tensor(segment.rewards, device=policy.device))
    if len(segment.final_observations):
        index = th.as_tensor(segment.final_index, device=policy.device)
        truncation_values[index[:, 0], index[:, 1]] = values_all[(n_steps + 1) * n_envs :].detach()
    return NetworkOutputs(
        pi_probs=probs_all[:n_samples].view(n_steps, n_envs, -1),
        q_values=raw.q_values[:n_samples].view(n_steps, n_envs, -1),
        values=values_all[: (n_steps + 1) * n_envs].view(n_steps + 1, n_envs),
        truncation_values=truncation_values,
        avg_probs=avg_probs,
    )


def critic_targets(outputs: NetworkOutputs, tensors: SegmentTensors, config: UpdateConfig) -> CriticTargets:
    """Step 2 of the update: importance weights ``rho = pi / mu``, Retrace targets ``Q^ret`` (trace
    coefficient ``rho_bar = lambda min(1, rho_i)``) and the critic loss
    ``0.5 * mean((Q^ret - Q(x, a))^2)``."""
    weights = F.importance_weights(
        pi_probs=outputs.pi_probs.detach(), mu_probs=tensors.mu_probs, actions=tensors.actions, eps=config.eps
    )
    q_i = outputs.q_values.gather(-1, tensors.actions.unsqueeze(-1)).squeeze(-1)
    q_ret = F.retrace_targets(
        rewards=tensors.rewards,
        q_i=q_i.detach(),
        values=outputs.values.detach(),
        rho_bar=config.retrace_lambda * th.clamp(weights.rho_i, max=1.0),
        terminated=tensors.terminated,
        truncated=tensors.truncated,
        truncation_values=outputs.truncation_values,
        gamma=config.gamma,
    )
    loss_q = 0.5 * (q_ret - q_i).pow(2).mean()
    return CriticTargets(weights=weights, q_i=q_i, q_ret=q_ret, loss_q=loss_q)


def policy_term_inputs(
    outputs: NetworkOutputs, tensors: SegmentTensors, targets: CriticTargets, config: UpdateConfig
) -> dict[str, Any]:
    """The arguments the policy term takes, as its loss (:func:`~sb3_acer.functional.acer_policy_loss`) and
    as its gradient (:func:`~sb3_acer.functional.acer_policy_gradient`): the critic's values are constants."""
    return dict(
        pi_probs=outputs.pi_probs,
        actions=tensors.actions,
        rho=targets.weights.rho,
        q_ret=targets.q_ret,
        q_values=outputs.q_values.detach(),
        values=outputs.values[:-1].detach(),
        c=config.correction_term,
        eps=config.eps,
    )


def trust_region_backward(
    outputs: NetworkOutputs,
    tensors: SegmentTensors,
    targets: CriticTargets,
    config: UpdateConfig,
    with_stats: bool,
) -> TrustRegionDiagnostics:
    """Step 3 of the update (trust region on): back-propagate the projected policy gradient and the critic's.

    The per-sample gradient ``g`` of the policy objective (entropy included) with respect to ``pi(.|x_t)``
    is projected onto the trust region around the average policy (paper eq. 12, ``k`` the gradient of the
    KL divergence to it); ``-z / N`` is back-propagated through ``pi_probs`` together with the
    ``q_coef``-weighted critic loss.

    Returns:
        The mean norms of ``k``, ``g``, ``k.g`` and the adjustment (zeros when ``with_stats`` is false).
    """
    n_samples = tensors.actions.numel()
    # Per-sample gradient of the objective (to maximise) w.r.t. the probabilities: undo the batch mean.
    # Closed form of autograd(-(loss_policy - ent_coef * entropy) * n_samples, pi_probs): one pass.
    g = F.acer_policy_gradient(
        **policy_term_inputs(outputs, tensors, targets, config), ent_coef=config.ent_coef
    )
    k = F.kl_gradient(avg_probs=outputs.avg_probs, pi_probs=outputs.pi_probs.detach(), eps=config.eps)
    step = F.trust_region_projection(g=g, k=k, delta=config.delta, eps=config.eps)
    loss_q = config.q_coef * targets.loss_q
    th.autograd.backward([outputs.pi_probs, loss_q], [-step.z / n_samples, th.ones_like(loss_q)])
    if not with_stats:
        return TrustRegionDiagnostics()
    return TrustRegionDiagnostics(
        avg_norm_k=float(k.norm(dim=-1).mean()),
        avg_norm_g=float(g.norm(dim=-1).mean()),
        avg_norm_k_dot_g=float(step.k_dot_g.abs().mean()),
        avg_norm_adj=float(step.adj.abs().mean()),
    )


def loss_terms(
    outputs: NetworkOutputs, tensors: SegmentTensors, targets: CriticTargets, config: UpdateConfig
) -> LossTerms:
    """Step 4 of the update: the truncated policy term ``loss_f``, the bias correction ``loss_bc``, the
    entropy and the total loss ``loss_policy + q_coef * loss_q - ent_coef * entropy``.

    Without the trust region the total loss carries autograd history (its gradient is the update); with it,
    the loss only serves logging and the finiteness check, and is computed without history.
    """
    with th.set_grad_enabled(not config.trust_region):
        policy_loss = F.acer_policy_loss(**policy_term_inputs(outputs, tensors, targets, config))
        loss_policy = policy_loss.loss_f + policy_loss.loss_bc
        entropy = F.categorical_entropy(outputs.pi_probs, eps=config.eps).mean()
        loss = loss_policy + config.q_coef * targets.loss_q - config.ent_coef * entropy
    return LossTerms(loss=loss, loss_policy=loss_policy, policy_loss=policy_loss, entropy=entropy)


def update_stats(
    outputs: NetworkOutputs,
    targets: CriticTargets,
    terms: LossTerms | None,
    diagnostics: TrustRegionDiagnostics,
    config: UpdateConfig,
) -> UpdateStats:
    """Step 5 of the update: the statistics record.

    With ``terms=None`` (trust region on, ``with_stats=False``) only the critic loss and the importance
    weights' statistics are computed; every other value is ``nan`` (the logger skips them).
    """
    with th.no_grad():
        rho_i = targets.weights.rho_i
        rho_mean = float(rho_i.mean())
        rho_truncated_frac = float((rho_i > config.correction_term).float().mean())
        loss_q = float(targets.loss_q.detach())
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
            explained_variance=F.explained_variance(y_pred=targets.q_i.detach(), y_true=targets.q_ret),
            rho_mean=rho_mean,
            rho_truncated_frac=rho_truncated_frac,
            kl_avg=float(
                F.categorical_kl(
                    p_probs=outputs.avg_probs, q_probs=outputs.pi_probs.detach(), eps=config.eps
                ).mean()
            ),
            avg_norm_k=diagnostics.avg_norm_k,
            avg_norm_g=diagnostics.avg_norm_g,
            avg_norm_k_dot_g=diagnostics.avg_norm_k_dot_g,
            avg_norm_adj=diagnostics.avg_norm_adj,
        )


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
    tensors = segment_tensors(segment, policy.device)
    outputs = network_outputs(policy, avg_policy, segment)
    targets = critic_targets(outputs, tensors, config)
    diagnostics = TrustRegionDiagnostics()
    if config.trust_region:
        diagnostics = trust_region_backward(outputs, tensors, targets, config, with_stats)
        if not with_stats:
            # The gradient is complete: skip the values that serve only logging.
            return targets.loss_q.detach(), update_stats(outputs, targets, None, diagnostics, config)
    terms = loss_terms(outputs, tensors, targets, config)
    if not config.trust_region:
        terms.loss.backward()
    return terms.loss.detach(), update_stats(outputs, targets, terms, diagnostics, config)

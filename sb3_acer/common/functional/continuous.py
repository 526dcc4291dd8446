"""The ACER mathematics for continuous (``Box``) and factorised (``MultiDiscrete``, ``MultiBinary``) actions.

Section 4 of Wang et al. (2016), "Sample Efficient Actor-Critic with Experience Replay" (arXiv:1611.01224),
as small pure tensor functions, in the conventions of :mod:`sb3_acer.common.functional.categorical`:
stateless, time-major ``[T, B, ...]``, tensor arguments keyword-only, names from the paper.

- Diagonal Gaussian policies ``f(.|phi)`` with statistics ``phi = (mean, log_std)``, ``[T, B, D]`` each
  (``D`` the flattened action dimension): log-density, entropy, ``KL(avg || current)`` and the closed-form
  gradients of the log-density and of the KL with respect to the statistics, so that the trust region is
  taken per sample in the space of the statistics
  (:func:`~sb3_acer.common.functional.categorical.trust_region_projection` on the mean, or on
  ``cat([mean, log_std], -1)`` when the log-std is learned).
- The stochastic dueling network (eq. 13), the continuous Retrace trace ``min(1, rho^(1/d))``, ``Q_ret``
  and ``Q_opc`` (appendix B), the value target of eq. 14, and the policy gradient of eqs. 15-16 with one
  sampled action ``a' ~ pi`` for the bias correction.
- Factorised categorical policies, ``[T, B, F, K]`` probabilities for ``F`` independent factors of at most
  ``K`` choices (``MultiDiscrete``; ``MultiBinary`` is ``K = 2`` through :func:`bernoulli_probs`; factors
  with fewer choices are padded with zero probabilities): log-probabilities, joint importance weights as
  products over the factors, and the KL and its gradient per factor (the trust region on each factor's
  probabilities).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch as th

from sb3_acer.common.functional.categorical import (
    EPS,
    PolicyLoss,
    categorical_kl,
    kl_gradient,
    retrace_targets,
    truncated_weights,
)

__all__ = [
    "ContinuousRetrace",
    "GaussianStatistics",
    "bernoulli_probs",
    "continuous_policy_gradient",
    "continuous_retrace_targets",
    "continuous_trace",
    "factorised_entropy",
    "factorised_importance_weights",
    "factorised_kl",
    "factorised_kl_gradient",
    "factorised_log_prob",
    "factorised_log_prob_gradient",
    "gaussian_entropy",
    "gaussian_kl",
    "gaussian_kl_gradient",
    "gaussian_log_prob",
    "gaussian_log_prob_gradient",
    "sdn_policy_gradient",
    "sdn_policy_loss",
    "stochastic_dueling_q",
    "value_target",
]

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class GaussianStatistics(NamedTuple):
    """The statistics of a diagonal Gaussian, or a gradient with respect to them.

    Attributes:
        mean: ``[T, B, D]`` the mean ``mu`` (or the gradient with respect to it).
        log_std: ``[T, B, D]`` ``log sigma`` (or the gradient with respect to it).
    """

    mean: th.Tensor
    log_std: th.Tensor


class ContinuousRetrace(NamedTuple):
    """The two critic targets of continuous ACER.

    Attributes:
        q_ret: ``[T, B]`` Retrace targets with the trace ``min(1, rho^(1/d))``, the target of ``Q~``.
        q_opc: ``[T, B]`` the same recursion with the trace fixed to 1 (appendix B), the advantage target of
            the truncated policy-gradient term.
    """

    q_ret: th.Tensor
    q_opc: th.Tensor


def _check_ndim(name: str, tensor: th.Tensor, ndim: int) -> None:
    if tensor.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions (time-major), got shape {tuple(tensor.shape)}")


def _check_same(name: str, tensor: th.Tensor, ref_name: str, ref: th.Tensor) -> None:
    if tensor.shape != ref.shape:
        raise ValueError(f"{name} shape {tuple(tensor.shape)} != {ref_name} shape {tuple(ref.shape)}")


def _check_gaussian(actions: th.Tensor | None, mean: th.Tensor, log_std: th.Tensor) -> None:
    _check_ndim("mean", mean, 3)
    _check_same("log_std", log_std, "mean", mean)
    if actions is not None:
        _check_same("actions", actions, "mean", mean)


# ---------------------------------------------------------------------------------------------------------
# Diagonal Gaussian
# ---------------------------------------------------------------------------------------------------------


def gaussian_log_prob(*, actions: th.Tensor, mean: th.Tensor, log_std: th.Tensor) -> th.Tensor:
    """``log f(a|mu, sigma) = sum_d [-(a_d - mu_d)^2 / (2 sigma_d^2) - log sigma_d - log(2 pi) / 2]``.

    Args:
        actions: ``[T, B, D]`` actions (unclipped, as the policy drew them).
        mean: ``[T, B, D]`` means.
        log_std: ``[T, B, D]`` log standard deviations.

    Returns:
        ``[T, B]`` log-densities, differentiable in every argument.
    """
    _check_gaussian(actions, mean, log_std)
    z = (actions - mean) * th.exp(-log_std)
    return (-0.5 * z * z - log_std - _HALF_LOG_2PI).sum(-1)


def gaussian_entropy(*, log_std: th.Tensor) -> th.Tensor:
    """``H = sum_d [log sigma_d + (1 + log(2 pi)) / 2]`` over the last axis of a ``[T, B, D]`` log-std."""
    _check_ndim("log_std", log_std, 3)
    return (log_std + 0.5 + _HALF_LOG_2PI).sum(-1)


def gaussian_kl(
    *, avg_mean: th.Tensor, avg_log_std: th.Tensor, mean: th.Tensor, log_std: th.Tensor
) -> th.Tensor:
    """``KL(f_avg || f)`` per sample, the trust-region constraint of continuous ACER (eq. 11).

    ``sum_d [log sigma_d - log sigma_avg_d + (sigma_avg_d^2 + (mu_avg_d - mu_d)^2) / (2 sigma_d^2) - 1/2]``.
    With ``sigma == sigma_avg`` fixed this is ``||mu - mu_avg||^2 / (2 sigma^2)``.

    Returns:
        ``[T, B]``, non-negative, zero where the two distributions are equal.
    """
    _check_gaussian(None, mean, log_std)
    _check_same("avg_mean", avg_mean, "mean", mean)
    _check_same("avg_log_std", avg_log_std, "mean", mean)
    ratio = th.exp(2.0 * (avg_log_std - log_std))
    gap = (avg_mean - mean) * th.exp(-log_std)
    return (log_std - avg_log_std + 0.5 * (ratio + gap * gap) - 0.5).sum(-1)


def gaussian_kl_gradient(
    *, avg_mean: th.Tensor, avg_log_std: th.Tensor, mean: th.Tensor, log_std: th.Tensor
) -> GaussianStatistics:
    """``k = d KL(f_avg || f) / d (mu, log sigma)`` in closed form (eq. 11 for a Gaussian).

    ``k_mu = (mu - mu_avg) / sigma^2`` and ``k_log_sigma = 1 - (sigma_avg^2 + (mu_avg - mu)^2) / sigma^2``.

    Returns:
        The two gradients, ``[T, B, D]`` each, without autograd history.
    """
    _check_gaussian(None, mean, log_std)
    _check_same("avg_mean", avg_mean, "mean", mean)
    _check_same("avg_log_std", avg_log_std, "mean", mean)
    with th.no_grad():
        inv_var = th.exp(-2.0 * log_std)
        diff = mean - avg_mean
        k_mean = diff * inv_var
        k_log_std = 1.0 - th.exp(2.0 * (avg_log_std - log_std)) - diff * diff * inv_var
    return GaussianStatistics(mean=k_mean, log_std=k_log_std)


def gaussian_log_prob_gradient(
    *, actions: th.Tensor, mean: th.Tensor, log_std: th.Tensor
) -> GaussianStatistics:
    """``d log f(a|mu, sigma) / d (mu, log sigma)`` in closed form.

    ``d/d mu = (a - mu) / sigma^2`` and ``d/d log sigma = ((a - mu) / sigma)^2 - 1``.

    Returns:
        The two gradients, ``[T, B, D]`` each, without autograd history.
    """
    _check_gaussian(actions, mean, log_std)
    with th.no_grad():
        inv_std = th.exp(-log_std)
        z = (actions - mean) * inv_std
    return GaussianStatistics(mean=z * inv_std, log_std=z * z - 1.0)


# ---------------------------------------------------------------------------------------------------------
# Stochastic dueling network, Retrace / Q_opc, value target
# ---------------------------------------------------------------------------------------------------------


def stochastic_dueling_q(
    *, values: th.Tensor, advantage: th.Tensor, sampled_advantages: th.Tensor
) -> th.Tensor:
    """``Q~(x_t, a_t) = V(x_t) + A(x_t, a_t) - (1/n) sum_i A(x_t, u_i)``, ``u_i ~ pi(.|x_t)`` (eq. 13).

    Args:
        values: ``[T, B]`` ``V(x_t)``.
        advantage: ``[T, B]`` ``A(x_t, a_t)`` of the action being evaluated.
        sampled_advantages: ``[T, B, n]`` ``A(x_t, u_i)`` of ``n`` actions sampled from the current policy.

    Returns:
        ``[T, B]`` the stochastic estimate ``Q~``, differentiable in every argument.
    """
    _check_ndim("values", values, 2)
    _check_same("advantage", advantage, "values", values)
    if sampled_advantages.dim() != 3 or sampled_advantages.shape[:2] != values.shape:
        raise ValueError(
            f"sampled_advantages must be [T, B, n] with [T, B] = {tuple(values.shape)}, "
            f"got shape {tuple(sampled_advantages.shape)}"
        )
    return values + advantage - sampled_advantages.mean(-1)


def continuous_trace(*, rho: th.Tensor, action_dim: int) -> th.Tensor:
    """The Retrace trace of continuous ACER, ``min(1, rho^(1/d))`` with ``d`` the action dimension.

    Raises:
        ValueError: if ``action_dim`` is not positive.
    """
    if action_dim < 1:
        raise ValueError(f"action_dim must be positive, got {action_dim}")
    return th.clamp(rho.clamp(min=0.0) ** (1.0 / action_dim), max=1.0)


def continuous_retrace_targets(
    *,
    rewards: th.Tensor,
    q_tilde: th.Tensor,
    values: th.Tensor,
    rho_i: th.Tensor,
    terminated: th.Tensor,
    gamma: float,
    action_dim: int,
    truncated: th.Tensor | None = None,
    truncation_values: th.Tensor | None = None,
    retrace_lambda: float = 1.0,
) -> ContinuousRetrace:
    """``Q_ret`` and ``Q_opc`` of continuous ACER, backwards in time (Algorithm 2 and appendix B).

    ``Q_ret`` is :func:`~sb3_acer.common.functional.categorical.retrace_targets` with ``Q~`` in place of ``Q``
    and the trace ``min(1, rho^(1/d))``; ``Q_opc`` is the same recursion with the trace 1, that is
    ``carry = Q_opc_t - Q~_t + V_t``.

    Args:
        rewards: ``[T, B]`` rewards.
        q_tilde: ``[T, B]`` ``Q~(x_t, a_t)`` of the taken actions (:func:`stochastic_dueling_q`).
        values: ``[T + 1, B]`` ``V(x_t)``, the last row the bootstrap.
        rho_i: ``[T, B]`` importance weights ``pi(a_t|x_t) / mu(a_t|x_t)`` of the taken actions.
        terminated: ``[T, B]`` 1 where the episode terminated after step ``t``.
        gamma: discount factor.
        action_dim: ``d``, the number of action components.
        truncated: ``[T, B]`` 1 where the episode was truncated after step ``t`` (optional).
        truncation_values: ``[T, B]`` value of the final observation where ``truncated`` (optional).
        retrace_lambda: ``lambda`` of Retrace(lambda): the trace of ``Q_ret`` is
            ``lambda * min(1, rho^(1/d))`` (``Q_opc`` keeps the trace 1).

    Returns:
        ``Q_ret`` and ``Q_opc``, ``[T, B]`` each, without gradient.
    """
    _check_ndim("rewards", rewards, 2)
    _check_same("rho_i", rho_i, "rewards", rewards)
    common = dict(
        rewards=rewards,
        q_i=q_tilde.detach(),
        values=values.detach(),
        terminated=terminated,
        gamma=gamma,
        truncated=truncated,
        truncation_values=None if truncation_values is None else truncation_values.detach(),
    )
    trace = continuous_trace(rho=rho_i.detach(), action_dim=action_dim)
    q_ret = retrace_targets(rho_bar=retrace_lambda * trace, **common)  # type: ignore[arg-type]
    q_opc = retrace_targets(rho_bar=th.ones_like(trace), **common)  # type: ignore[arg-type]
    return ContinuousRetrace(q_ret=q_ret, q_opc=q_opc)


def value_target(*, rho_i: th.Tensor, q_ret: th.Tensor, q_tilde: th.Tensor, values: th.Tensor) -> th.Tensor:
    """``V_target(x_t) = min(1, rho_t) (Q_ret_t - Q~_t) + V(x_t)`` (eq. 14), without gradient.

    Args:
        rho_i: ``[T, B]`` importance weights of the taken actions.
        q_ret: ``[T, B]`` Retrace targets.
        q_tilde: ``[T, B]`` ``Q~(x_t, a_t)``.
        values: ``[T, B]`` ``V(x_t)`` (the bootstrap row removed).
    """
    _check_ndim("q_ret", q_ret, 2)
    for name, tensor in (("rho_i", rho_i), ("q_tilde", q_tilde), ("values", values)):
        _check_same(name, tensor, "q_ret", q_ret)
    with th.no_grad():
        return th.clamp(rho_i, max=1.0) * (q_ret - q_tilde) + values


# ---------------------------------------------------------------------------------------------------------
# Policy gradient with one sampled action for the bias correction (eqs. 15-16)
# ---------------------------------------------------------------------------------------------------------


def _check_sdn_terms(
    rho_i: th.Tensor, rho_sampled: th.Tensor, q_opc: th.Tensor, q_sampled: th.Tensor, values: th.Tensor
) -> None:
    _check_ndim("values", values, 2)
    for name, tensor in (
        ("rho_i", rho_i),
        ("rho_sampled", rho_sampled),
        ("q_opc", q_opc),
        ("q_sampled", q_sampled),
    ):
        _check_same(name, tensor, "values", values)


def sdn_policy_loss(
    *,
    log_pi_i: th.Tensor,
    log_pi_sampled: th.Tensor,
    rho_i: th.Tensor,
    rho_sampled: th.Tensor,
    q_opc: th.Tensor,
    q_sampled: th.Tensor,
    values: th.Tensor,
    c: float,
    eps: float = EPS,
) -> PolicyLoss:
    """The ACER policy loss with a sampled bias correction (eq. 16), as batch means to be minimised.

    ``loss_f = -E_t[min(c, rho_t) log pi(a_t|x_t) (Q_opc_t - V_t)]`` and
    ``loss_bc = -E_t[[1 - c / rho_t(a'_t)]_+ log pi(a'_t|x_t) (Q~(x_t, a'_t) - V_t)]`` with ``a'_t ~ pi``
    drawn without reparameterisation. Only ``log pi`` carries gradient (the paper's stop-gradients).

    Args:
        log_pi_i: ``[T, B]`` ``log pi(a_t|x_t)`` of the taken actions (with gradient).
        log_pi_sampled: ``[T, B]`` ``log pi(a'_t|x_t)`` of the sampled actions (with gradient).
        rho_i: ``[T, B]`` ``pi(a_t) / mu(a_t)``.
        rho_sampled: ``[T, B]`` ``pi(a'_t) / mu(a'_t)``.
        q_opc: ``[T, B]`` the advantage target of the truncated term (``Q_opc``; ``Q_ret`` also fits).
        q_sampled: ``[T, B]`` ``Q~(x_t, a'_t)``.
        values: ``[T, B]`` ``V(x_t)``.
        c: truncation threshold.
        eps: guard in the correction weight.

    Returns:
        ``loss_f`` and ``loss_bc``.
    """
    _check_sdn_terms(rho_i, rho_sampled, q_opc, q_sampled, values)
    _check_same("log_pi_i", log_pi_i, "values", values)
    _check_same("log_pi_sampled", log_pi_sampled, "values", values)
    with th.no_grad():
        weight_f = truncated_weights(rho=rho_i, c=c, eps=eps).truncated * (q_opc - values)
        weight_bc = truncated_weights(rho=rho_sampled, c=c, eps=eps).correction * (q_sampled - values)
    return PolicyLoss(loss_f=-(log_pi_i * weight_f).mean(), loss_bc=-(log_pi_sampled * weight_bc).mean())


def sdn_policy_gradient(
    *,
    grad_log_pi_i: th.Tensor,
    grad_log_pi_sampled: th.Tensor,
    rho_i: th.Tensor,
    rho_sampled: th.Tensor,
    q_opc: th.Tensor,
    q_sampled: th.Tensor,
    values: th.Tensor,
    c: float,
    eps: float = EPS,
) -> th.Tensor:
    """Per-sample gradient ``g`` of the objective of :func:`sdn_policy_loss` with respect to statistics phi.

    ``g_t = min(c, rho_t) (Q_opc_t - V_t) d log f(a_t|phi) / d phi
    + [1 - c / rho_t(a'_t)]_+ (Q~(x_t, a'_t) - V_t) d log f(a'_t|phi) / d phi`` (eq. 16), that is
    ``autograd(-(loss_f + loss_bc) * T * B, phi)``, for statistics of any trailing shape.

    Args:
        grad_log_pi_i: ``[T, B, ...]`` ``d log f(a_t|phi) / d phi``.
        grad_log_pi_sampled: ``[T, B, ...]`` ``d log f(a'_t|phi) / d phi``.
        rho_i: ``[T, B]``, as in :func:`sdn_policy_loss`.
        rho_sampled: ``[T, B]``, as in :func:`sdn_policy_loss`.
        q_opc: ``[T, B]``, as in :func:`sdn_policy_loss`.
        q_sampled: ``[T, B]``, as in :func:`sdn_policy_loss`.
        values: ``[T, B]``, as in :func:`sdn_policy_loss`.
        c: truncation threshold.
        eps: guard in the correction weight.

    Returns:
        ``[T, B, ...]`` gradient, without autograd history.
    """
    _check_sdn_terms(rho_i, rho_sampled, q_opc, q_sampled, values)
    _check_same("grad_log_pi_sampled", grad_log_pi_sampled, "grad_log_pi_i", grad_log_pi_i)
    if grad_log_pi_i.shape[:2] != values.shape:
        raise ValueError(
            f"grad_log_pi_i must be [T, B, ...] with [T, B] = {tuple(values.shape)}, "
            f"got shape {tuple(grad_log_pi_i.shape)}"
        )
    with th.no_grad():
        weight_f = truncated_weights(rho=rho_i, c=c, eps=eps).truncated * (q_opc - values)
        weight_bc = truncated_weights(rho=rho_sampled, c=c, eps=eps).correction * (q_sampled - values)
        extra = (1,) * (grad_log_pi_i.dim() - 2)
        return (
            weight_f.reshape(*weight_f.shape, *extra) * grad_log_pi_i
            + weight_bc.reshape(*weight_bc.shape, *extra) * grad_log_pi_sampled
        )


def continuous_policy_gradient(
    *,
    actions: th.Tensor,
    sampled_actions: th.Tensor,
    mean: th.Tensor,
    log_std: th.Tensor,
    rho_i: th.Tensor,
    rho_sampled: th.Tensor,
    q_opc: th.Tensor,
    q_sampled: th.Tensor,
    values: th.Tensor,
    c: float,
    ent_coef: float = 0.0,
    eps: float = EPS,
) -> GaussianStatistics:
    """Per-sample gradient of the continuous ACER objective w.r.t. the Gaussian statistics (eqs. 15-16).

    :func:`sdn_policy_gradient` with the closed-form :func:`gaussian_log_prob_gradient`, plus the entropy
    bonus ``ent_coef * d H / d log sigma = ent_coef`` on the log-std (zero on the mean). This is
    ``autograd(-(loss_f + loss_bc - ent_coef * entropy) * T * B, (mean, log_std))``; with a fixed sigma
    only its ``mean`` part is used.

    Args:
        actions: ``[T, B, D]`` taken (unclipped) actions ``a_t``.
        sampled_actions: ``[T, B, D]`` one action ``a'_t ~ pi(.|x_t)`` per sample.
        mean: ``[T, B, D]`` current means.
        log_std: ``[T, B, D]`` current log standard deviations.
        rho_i: ``[T, B]``, as in :func:`sdn_policy_loss`.
        rho_sampled: ``[T, B]``, as in :func:`sdn_policy_loss`.
        q_opc: ``[T, B]``, as in :func:`sdn_policy_loss`.
        q_sampled: ``[T, B]``, as in :func:`sdn_policy_loss`.
        values: ``[T, B]``, as in :func:`sdn_policy_loss`.
        c: truncation threshold.
        ent_coef: weight of the entropy bonus.
        eps: guard in the correction weight.

    Returns:
        The gradients with respect to ``mean`` and ``log_std``, ``[T, B, D]`` each.
    """
    _check_same("sampled_actions", sampled_actions, "actions", actions)
    taken = gaussian_log_prob_gradient(actions=actions, mean=mean, log_std=log_std)
    sampled = gaussian_log_prob_gradient(actions=sampled_actions, mean=mean, log_std=log_std)
    stacked = sdn_policy_gradient(
        grad_log_pi_i=th.stack(taken, -1),
        grad_log_pi_sampled=th.stack(sampled, -1),
        rho_i=rho_i,
        rho_sampled=rho_sampled,
        q_opc=q_opc,
        q_sampled=q_sampled,
        values=values,
        c=c,
        eps=eps,
    )
    return GaussianStatistics(mean=stacked[..., 0], log_std=stacked[..., 1] + ent_coef)


# ---------------------------------------------------------------------------------------------------------
# Factorised categorical (MultiDiscrete) and Bernoulli (MultiBinary)
# ---------------------------------------------------------------------------------------------------------


def _check_factorised(probs: th.Tensor, actions: th.Tensor | None, name: str = "probs") -> None:
    _check_ndim(name, probs, 4)
    if actions is not None and actions.shape != probs.shape[:3]:
        raise ValueError(f"actions shape {tuple(actions.shape)} != [T, B, F] = {tuple(probs.shape[:3])}")


def bernoulli_probs(p: th.Tensor) -> th.Tensor:
    """``[..., F]`` Bernoulli probabilities of a 1 as ``[..., F, 2]`` categorical factors ``(1 - p, p)``."""
    return th.stack([1.0 - p, p], dim=-1)


def factorised_log_prob(*, probs: th.Tensor, actions: th.Tensor, eps: float = EPS) -> th.Tensor:
    """``log pi(a|x) = sum_f log(p_f(a_f|x) + eps)``, the joint log-probability of independent factors.

    Args:
        probs: ``[T, B, F, K]`` per-factor probabilities (zero-padded beyond each factor's choices).
        actions: ``[T, B, F]`` integer choice per factor.
        eps: guard inside the logarithm.

    Returns:
        ``[T, B]``, differentiable in ``probs``.
    """
    _check_factorised(probs, actions)
    taken = probs.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    return th.log(taken + eps).sum(-1)


def factorised_importance_weights(
    *, pi_probs: th.Tensor, mu_probs: th.Tensor, actions: th.Tensor, eps: float = EPS
) -> th.Tensor:
    """Joint importance weights ``rho_t = prod_f pi_f(a_f|x_t) / (mu_f(a_f|x_t) + eps)``.

    Returns:
        ``[T, B]`` weights of the given actions.
    """
    _check_factorised(pi_probs, actions, "pi_probs")
    _check_same("mu_probs", mu_probs, "pi_probs", pi_probs)
    index = actions.long().unsqueeze(-1)
    pi_a = pi_probs.gather(-1, index).squeeze(-1)
    mu_a = mu_probs.gather(-1, index).squeeze(-1)
    return (pi_a / (mu_a + eps)).prod(-1)


def factorised_entropy(probs: th.Tensor, eps: float = EPS) -> th.Tensor:
    """``H = -sum_f sum_k p_f(k) log p_f(k)`` of ``[T, B, F, K]`` probabilities, ``[T, B]``."""
    _check_ndim("probs", probs, 4)
    return -(probs * th.log(probs + eps)).sum((-1, -2))


def factorised_kl(*, avg_probs: th.Tensor, pi_probs: th.Tensor, eps: float = EPS) -> th.Tensor:
    """``KL(p_avg_f || p_f)`` per factor, ``[T, B, F]`` (their sum is the joint KL of independent factors)."""
    _check_factorised(pi_probs, None, "pi_probs")
    _check_same("avg_probs", avg_probs, "pi_probs", pi_probs)
    return categorical_kl(p_probs=avg_probs, q_probs=pi_probs, eps=eps)


def factorised_kl_gradient(*, avg_probs: th.Tensor, pi_probs: th.Tensor, eps: float = EPS) -> th.Tensor:
    """``k_f = d KL(p_avg_f || p_f) / d p_f = -p_avg_f / p_f`` per factor, ``[T, B, F, K]`` (eq. 11).

    :func:`~sb3_acer.common.functional.categorical.trust_region_projection` on these (last axis ``K``)
    projects each factor separately; padded choices have ``p_avg = 0`` and hence ``k = 0``.
    """
    _check_factorised(pi_probs, None, "pi_probs")
    return kl_gradient(avg_probs=avg_probs, pi_probs=pi_probs, eps=eps)


def factorised_log_prob_gradient(*, probs: th.Tensor, actions: th.Tensor, eps: float = EPS) -> th.Tensor:
    """``d log pi(a|x) / d p_f(k) = 1{k = a_f} / (p_f(a_f) + eps)``, ``[T, B, F, K]``, without history."""
    _check_factorised(probs, actions)
    with th.no_grad():
        index = actions.long().unsqueeze(-1)
        taken = probs.gather(-1, index)
        return th.zeros_like(probs).scatter_(-1, index, 1.0 / (taken + eps))

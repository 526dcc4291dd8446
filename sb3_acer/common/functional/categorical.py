"""The ACER mathematics as small pure tensor functions.

Every function here is stateless: no modules, no environment, no logging. Tensors are time-major,
``[T, B, ...]`` (``T`` steps of ``B`` independent sequences), and tensor arguments are keyword-only so that
same-shaped arrays cannot be swapped by position. Names follow Wang et al. (2016), "Sample Efficient
Actor-Critic with Experience Replay" (arXiv:1611.01224): ``rho`` for importance weights, ``rho_bar`` for the
Retrace trace coefficient, ``c`` for the truncation threshold, ``q_ret`` for the Retrace target,
``mu_probs`` for the behaviour policy, ``avg_probs`` for the average policy network and ``delta`` for the
trust-region bound. ``docs/algorithm.md`` maps each equation to the function that computes it and to the key
it is logged under.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch as th

__all__ = [
    "EPS",
    "ImportanceWeights",
    "PolicyLoss",
    "TruncatedWeights",
    "TrustRegionStep",
    "acer_policy_gradient",
    "acer_policy_loss",
    "categorical_entropy",
    "categorical_kl",
    "explained_variance",
    "importance_weights",
    "kl_gradient",
    "retrace_targets",
    "truncated_weights",
    "trust_region_projection",
]

#: Numerical guard used wherever a probability is divided by or its logarithm taken (as in SB2/baselines).
EPS = 1e-6


class ImportanceWeights(NamedTuple):
    """Importance weights ``rho(a) = pi(a|x) / mu(a|x)``.

    Attributes:
        rho: ``[T, B, A]`` ratio for every action.
        rho_i: ``[T, B]`` ratio of the action that was taken, ``rho(a_t)``.
    """

    rho: th.Tensor
    rho_i: th.Tensor


class TruncatedWeights(NamedTuple):
    """The two weights of truncated importance sampling with bias correction (paper eq. 7-9).

    Attributes:
        truncated: ``min(c, rho)``, the weight of the sampled-action term.
        correction: ``[1 - c / rho]_+``, the weight of the bias-correction term; at most 1, non-zero
            only where ``rho > c``.
    """

    truncated: th.Tensor
    correction: th.Tensor


class PolicyLoss(NamedTuple):
    """The two parts of the ACER policy loss (both batch means, both to be minimised).

    Attributes:
        loss_f: ``-E_t[ min(c, rho_t) log pi(a_t|x_t) (Q_ret_t - V(x_t)) ]``, the truncated term.
        loss_bc: ``-E_t[ sum_a pi(a|x_t) [1 - c/rho_t(a)]_+ log pi(a|x_t) (Q(x_t, a) - V(x_t)) ]``, the bias
            correction, an exact expectation over all actions.
    """

    loss_f: th.Tensor
    loss_bc: th.Tensor


class TrustRegionStep(NamedTuple):
    """Result of the per-sample trust-region projection (paper eq. 12).

    Attributes:
        z: ``[..., A]`` the projected gradient ``g - adj * k``.
        adj: ``[...]`` the scale ``max(0, (k.g - delta) / ||k||^2)`` applied to ``k``.
        k_dot_g: ``[...]`` the inner product ``k.g`` before projection.
    """

    z: th.Tensor
    adj: th.Tensor
    k_dot_g: th.Tensor


def _check_time_major(name: str, tensor: th.Tensor, ndim: int) -> None:
    if tensor.dim() != ndim:
        raise ValueError(f"{name} must have {ndim} dimensions (time-major), got shape {tuple(tensor.shape)}")


def importance_weights(
    *, pi_probs: th.Tensor, mu_probs: th.Tensor, actions: th.Tensor, eps: float = EPS
) -> ImportanceWeights:
    """Importance weights of the current policy against the behaviour policy.

    ``rho_t(a) = pi(a|x_t) / (mu(a|x_t) + eps)`` for every action, and ``rho_i = rho_t(a_t)``.

    Args:
        pi_probs: ``[T, B, A]`` current policy probabilities ``pi(.|x_t)``.
        mu_probs: ``[T, B, A]`` behaviour policy probabilities stored with the transition.
        actions: ``[T, B]`` integer actions that were taken.
        eps: guard against division by a zero behaviour probability.

    Returns:
        The weights for all actions and for the taken action.
    """
    _check_time_major("pi_probs", pi_probs, 3)
    if mu_probs.shape != pi_probs.shape:
        raise ValueError(f"mu_probs shape {tuple(mu_probs.shape)} != pi_probs shape {tuple(pi_probs.shape)}")
    if actions.shape != pi_probs.shape[:2]:
        raise ValueError(f"actions shape {tuple(actions.shape)} != [T, B] = {tuple(pi_probs.shape[:2])}")
    rho = pi_probs / (mu_probs + eps)
    rho_i = rho.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    return ImportanceWeights(rho=rho, rho_i=rho_i)


def truncated_weights(*, rho: th.Tensor, c: float, eps: float = EPS) -> TruncatedWeights:
    """Split an importance weight into its truncated part and the bias-correction weight.

    For any ``rho`` and ``c > 0``: ``min(c, rho) + rho * [1 - c/rho]_+ == rho`` (up to ``eps``), which is
    why the two terms of the ACER gradient together are unbiased.

    Args:
        rho: importance weights, any shape.
        c: truncation threshold (``correction_term``), positive.
        eps: guard against division by zero.

    Returns:
        ``min(c, rho)`` and ``[1 - c / rho]_+``.
    """
    if c <= 0:
        raise ValueError(f"c (correction_term) must be positive, got {c}")
    return TruncatedWeights(
        truncated=th.clamp(rho, max=c),
        correction=th.relu(1.0 - c / (rho + eps)),
    )


def retrace_targets(
    *,
    rewards: th.Tensor,
    q_i: th.Tensor,
    values: th.Tensor,
    rho_bar: th.Tensor,
    terminated: th.Tensor,
    gamma: float,
    truncated: th.Tensor | None = None,
    truncation_values: th.Tensor | None = None,
) -> th.Tensor:
    """Retrace targets ``Q_ret`` (paper eq. 5 and Algorithm 2), backwards in time.

    ``carry = V(x_T)``; for ``t = T-1 .. 0``::

        next_t   = V(final x_{t+1})      if the episode was truncated at t (time limit)
                   carry                  otherwise
        Q_ret_t  = r_t + gamma * (1 - terminated_t) * next_t
        carry    = rho_bar_t * (Q_ret_t - Q(x_t, a_t)) + V(x_t)

    A termination cuts the return; a truncation bootstraps from the value of the observation at which the
    episode was cut (the environment has already reset, so ``x_{t+1}`` belongs to the next episode).

    Args:
        rewards: ``[T, B]`` rewards ``r_t``.
        q_i: ``[T, B]`` ``Q(x_t, a_t)`` of the taken actions.
        values: ``[T + 1, B]`` ``V(x_t) = sum_a pi(a|x_t) Q(x_t, a)``; the last row is the bootstrap.
        rho_bar: ``[T, B]`` trace coefficients, ``min(1, rho_t(a_t))`` in ACER (``lambda * min(1, rho_t)``
            for Retrace(lambda), ``ACER(retrace_lambda=...)``).
        terminated: ``[T, B]`` 1 where the episode terminated after step ``t``.
        gamma: discount factor.
        truncated: ``[T, B]`` 1 where the episode was truncated after step ``t`` (optional).
        truncation_values: ``[T, B]`` value of the final observation where ``truncated`` (optional).

    Returns:
        ``[T, B]`` targets, without gradient.
    """
    _check_time_major("rewards", rewards, 2)
    n_steps = rewards.shape[0]
    for name, tensor in (("q_i", q_i), ("rho_bar", rho_bar), ("terminated", terminated)):
        if tensor.shape != rewards.shape:
            raise ValueError(f"{name} shape {tuple(tensor.shape)} != rewards shape {tuple(rewards.shape)}")
    if values.shape != (n_steps + 1, *rewards.shape[1:]):
        raise ValueError(
            f"values must be [T + 1, B] = {(n_steps + 1, *rewards.shape[1:])}, got {tuple(values.shape)}"
        )
    if (truncated is None) != (truncation_values is None):
        raise ValueError("truncated and truncation_values must be given together")
    if truncated is not None and truncation_values is not None:
        for name, tensor in (("truncated", truncated), ("truncation_values", truncation_values)):
            if tensor.shape != rewards.shape:
                raise ValueError(
                    f"{name} shape {tuple(tensor.shape)} != rewards shape {tuple(rewards.shape)}"
                )
    if rewards.device.type == "cpu":
        # The recursion is T small sequential steps: NumPy's per-operation cost is far below torch's there.
        return th.from_numpy(
            _retrace_numpy(
                rewards=rewards.detach().numpy(),
                q_i=q_i.detach().numpy(),
                values=values.detach().numpy(),
                rho_bar=rho_bar.detach().numpy(),
                terminated=terminated.detach().numpy(),
                gamma=gamma,
                truncated=None if truncated is None else truncated.detach().numpy(),
                truncation_values=None if truncation_values is None else truncation_values.detach().numpy(),
            )
        ).to(rewards.dtype)
    return _retrace_torch(
        rewards=rewards,
        q_i=q_i,
        values=values,
        rho_bar=rho_bar,
        terminated=terminated,
        gamma=gamma,
        truncated=truncated,
        truncation_values=truncation_values,
    )


def _retrace_torch(
    *,
    rewards: th.Tensor,
    q_i: th.Tensor,
    values: th.Tensor,
    rho_bar: th.Tensor,
    terminated: th.Tensor,
    gamma: float,
    truncated: th.Tensor | None,
    truncation_values: th.Tensor | None,
) -> th.Tensor:
    """The recursion of :func:`retrace_targets` in torch, on the inputs' device (used off the CPU)."""
    with th.no_grad():
        not_terminated = 1.0 - terminated.to(rewards.dtype)
        q_ret = th.empty_like(rewards)
        carry = values[-1]
        for t in reversed(range(rewards.shape[0])):
            next_value = carry
            if truncated is not None and truncation_values is not None:
                next_value = th.where(truncated[t].bool(), truncation_values[t], carry)
            q_ret[t] = rewards[t] + gamma * not_terminated[t] * next_value
            carry = rho_bar[t] * (q_ret[t] - q_i[t]) + values[t]
    return q_ret


def _retrace_numpy(
    *,
    rewards: np.ndarray,
    q_i: np.ndarray,
    values: np.ndarray,
    rho_bar: np.ndarray,
    terminated: np.ndarray,
    gamma: float,
    truncated: np.ndarray | None,
    truncation_values: np.ndarray | None,
) -> np.ndarray:
    """The recursion of :func:`retrace_targets` in NumPy, in float64 (inputs are converted first).

    Substituting ``carry`` makes each target affine in the next one, ``Q_ret_t = a_t + b_t * Q_ret_{t+1}``,
    with everything but the recursion computed at once::

        a_t = r_t + gamma (1 - terminated_t) * (V(x_{t+1}) - rho_bar_{t+1} Q(x_{t+1}, a_{t+1}))
        b_t = gamma (1 - terminated_t) * rho_bar_{t+1}
        (t = T - 1: a = r + gamma (1 - terminated) V(x_T), b = 0; truncated at t: a_t uses V(final x_{t+1}),
        b_t = 0)

    so the sequential part is one multiply-add per step.
    """
    rewards, q_i, values, rho_bar = (
        x.astype(np.float64, copy=False) for x in (rewards, q_i, values, rho_bar)
    )
    if truncation_values is not None:
        truncation_values = truncation_values.astype(np.float64, copy=False)
    n_steps = rewards.shape[0]
    discount = gamma * (1.0 - terminated.astype(np.float64))
    next_value = np.empty(rewards.shape, dtype=np.float64)
    link = np.zeros(rewards.shape, dtype=np.float64)
    next_value[:-1] = values[1:-1] - rho_bar[1:] * q_i[1:]
    next_value[-1] = values[-1]
    link[:-1] = discount[:-1] * rho_bar[1:]
    if truncated is not None and truncation_values is not None and truncated.any():
        cut = truncated.astype(bool)
        next_value[cut] = truncation_values[cut]
        link[cut] = 0.0
    offset = rewards + discount * next_value
    q_ret = np.empty(rewards.shape, dtype=np.float64)
    following = offset[-1]
    q_ret[-1] = following
    for t in range(n_steps - 2, -1, -1):
        following = offset[t] + link[t] * following
        q_ret[t] = following
    return q_ret


def acer_policy_loss(
    *,
    pi_probs: th.Tensor,
    actions: th.Tensor,
    rho: th.Tensor,
    q_ret: th.Tensor,
    q_values: th.Tensor,
    values: th.Tensor,
    c: float,
    eps: float = EPS,
) -> PolicyLoss:
    """Truncated importance-sampling policy loss with bias correction (paper eq. 9), as batch means.

    Everything except ``log pi`` is held constant (stop-gradient), so the gradient of
    ``loss_f + loss_bc`` with respect to ``pi_probs`` is minus the per-sample ACER gradient ``g_acer``
    divided by the number of samples.

    Args:
        pi_probs: ``[T, B, A]`` current policy probabilities (with gradient).
        actions: ``[T, B]`` taken actions.
        rho: ``[T, B, A]`` importance weights for every action.
        q_ret: ``[T, B]`` Retrace targets.
        q_values: ``[T, B, A]`` ``Q(x_t, .)``.
        values: ``[T, B]`` ``V(x_t)`` (the bootstrap row removed).
        c: truncation threshold.
        eps: guard inside the logarithms.

    Returns:
        ``loss_f`` and ``loss_bc``.
    """
    _check_time_major("pi_probs", pi_probs, 3)
    if q_values.shape != pi_probs.shape or rho.shape != pi_probs.shape:
        raise ValueError("q_values and rho must have the shape of pi_probs [T, B, A]")
    if values.shape != pi_probs.shape[:2] or q_ret.shape != pi_probs.shape[:2]:
        raise ValueError(f"values and q_ret must be [T, B] = {tuple(pi_probs.shape[:2])}")
    if actions.shape != pi_probs.shape[:2]:
        raise ValueError(f"actions shape {tuple(actions.shape)} != [T, B] = {tuple(pi_probs.shape[:2])}")
    log_pi = th.log(pi_probs + eps)
    log_pi_i = log_pi.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    rho_i = rho.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1)
    weights_i = truncated_weights(rho=rho_i.detach(), c=c, eps=eps)
    weights = truncated_weights(rho=rho.detach(), c=c, eps=eps)
    advantage = (q_ret - values).detach()
    loss_f = -(log_pi_i * (advantage * weights_i.truncated)).mean()
    correction = (weights.correction * pi_probs * (q_values - values.unsqueeze(-1))).detach()
    loss_bc = -(log_pi * correction).sum(-1).mean()
    return PolicyLoss(loss_f=loss_f, loss_bc=loss_bc)


def acer_policy_gradient(
    *,
    pi_probs: th.Tensor,
    actions: th.Tensor,
    rho: th.Tensor,
    q_ret: th.Tensor,
    q_values: th.Tensor,
    values: th.Tensor,
    c: float,
    ent_coef: float = 0.0,
    eps: float = EPS,
) -> th.Tensor:
    """Per-sample gradient ``g`` of the ACER objective w.r.t. the probabilities ``pi(.|x_t)`` (eq. 10).

    The objective is minus ``loss_f + loss_bc - ent_coef * entropy`` of :func:`acer_policy_loss` and
    :func:`categorical_entropy`, per sample (not averaged), so that, in closed form::

        g_t(a) = 1{a = a_t} min(c, rho_t) (Q_ret_t - V_t) / (pi_t(a_t) + eps)
                 + [1 - c / rho_t(a)]_+ pi_t(a) (Q_t(a) - V_t) / (pi_t(a) + eps)
                 - ent_coef (log(pi_t(a) + eps) + pi_t(a) / (pi_t(a) + eps))

    This equals ``autograd(-(loss_f + loss_bc - ent_coef * entropy) * T * B, pi_probs)`` without a second
    backward pass; the trust region projects it per sample.

    Args:
        pi_probs: ``[T, B, A]`` current policy probabilities.
        actions: ``[T, B]`` taken actions.
        rho: ``[T, B, A]`` importance weights.
        q_ret: ``[T, B]`` Retrace targets.
        q_values: ``[T, B, A]`` ``Q(x_t, .)``.
        values: ``[T, B]`` ``V(x_t)``.
        c: truncation threshold.
        ent_coef: weight of the entropy bonus.
        eps: the guard used inside the logarithms of the losses.

    Returns:
        ``[T, B, A]`` gradient, without autograd history.
    """
    _check_time_major("pi_probs", pi_probs, 3)
    if q_values.shape != pi_probs.shape or rho.shape != pi_probs.shape:
        raise ValueError("q_values and rho must have the shape of pi_probs [T, B, A]")
    if (
        values.shape != pi_probs.shape[:2]
        or q_ret.shape != pi_probs.shape[:2]
        or actions.shape != values.shape
    ):
        raise ValueError(f"values, q_ret and actions must be [T, B] = {tuple(pi_probs.shape[:2])}")
    with th.no_grad():
        probs = pi_probs.detach()
        index = actions.long().unsqueeze(-1)
        rho_i = rho.gather(-1, index).squeeze(-1)
        pi_i = probs.gather(-1, index).squeeze(-1)
        truncated = truncated_weights(rho=rho_i, c=c, eps=eps).truncated
        correction = truncated_weights(rho=rho, c=c, eps=eps).correction
        taken = (truncated * (q_ret - values) / (pi_i + eps)).unsqueeze(-1)
        g = th.zeros_like(probs).scatter_(-1, index, taken)
        g += correction * probs * (q_values - values.unsqueeze(-1)) / (probs + eps)
        if ent_coef:
            g -= ent_coef * (th.log(probs + eps) + probs / (probs + eps))
    return g


def categorical_entropy(probs: th.Tensor, eps: float = EPS) -> th.Tensor:
    """Entropy ``-sum_a p(a) log p(a)`` over the last axis, differentiable in ``probs``."""
    return -(probs * th.log(probs + eps)).sum(-1)


def categorical_kl(*, p_probs: th.Tensor, q_probs: th.Tensor, eps: float = EPS) -> th.Tensor:
    """``KL(p || q) = sum_a p(a) (log p(a) - log q(a))`` over the last axis."""
    if p_probs.shape != q_probs.shape:
        raise ValueError(f"p_probs shape {tuple(p_probs.shape)} != q_probs shape {tuple(q_probs.shape)}")
    return (p_probs * (th.log(p_probs + eps) - th.log(q_probs + eps))).sum(-1)


def kl_gradient(*, avg_probs: th.Tensor, pi_probs: th.Tensor, eps: float = EPS) -> th.Tensor:
    """``k = d KL(pi_avg || pi) / d pi = -pi_avg / pi``, the gradient of the trust-region constraint (eq. 11).

    Taken in probability space, as in the paper and openai/baselines.
    """
    if avg_probs.shape != pi_probs.shape:
        raise ValueError(
            f"avg_probs shape {tuple(avg_probs.shape)} != pi_probs shape {tuple(pi_probs.shape)}"
        )
    return -avg_probs / (pi_probs + eps)


def trust_region_projection(*, g: th.Tensor, k: th.Tensor, delta: float, eps: float = EPS) -> TrustRegionStep:
    """Closed-form solution of ``min_z 1/2 ||g - z||^2  s.t.  k.z <= delta`` (paper eq. 12), per sample.

    ``z = g - max(0, (k.g - delta) / ||k||^2) * k``. When ``k.g <= delta`` the gradient is unchanged;
    otherwise ``k.z == delta`` (up to ``eps``).

    Args:
        g: ``[..., A]`` per-sample gradient of the objective (to be maximised) with respect to ``pi``.
        k: ``[..., A]`` per-sample gradient of the KL constraint.
        delta: trust-region bound, positive.
        eps: guard in the denominator.

    Returns:
        The projected gradient ``z`` and the diagnostics ``adj`` and ``k.g``.
    """
    if g.shape != k.shape:
        raise ValueError(f"g shape {tuple(g.shape)} != k shape {tuple(k.shape)}")
    if delta <= 0:
        raise ValueError(f"delta must be positive, got {delta}")
    k_dot_g = (k * g).sum(-1)
    adj = th.clamp((k_dot_g - delta) / ((k * k).sum(-1) + eps), min=0.0)
    return TrustRegionStep(z=g - adj.unsqueeze(-1) * k, adj=adj, k_dot_g=k_dot_g)


def explained_variance(*, y_pred: th.Tensor, y_true: th.Tensor) -> float:
    """``1 - Var(y_true - y_pred) / Var(y_true)``; ``nan`` when ``y_true`` is constant (or empty).

    The variances are population variances (as ``np.var`` in SB2/SB3; the ratio does not depend on the
    choice). Constancy is tested exactly, element by element, because the variance of a constant float32
    tensor can come out as a tiny positive number (``Var([0.1] * 7) ~ 6e-17``), which would turn the ratio
    into a huge meaningless value.

    Raises:
        ValueError: if ``y_pred`` and ``y_true`` differ in shape (broadcasting would silently mix samples).
    """
    if y_pred.shape != y_true.shape:
        raise ValueError(f"y_pred shape {tuple(y_pred.shape)} != y_true shape {tuple(y_true.shape)}")
    flat = y_true.reshape(-1)
    if flat.numel() == 0 or bool((flat == flat[0]).all()):
        return float("nan")
    var_y = th.var(y_true, correction=0)
    return float(1.0 - th.var(y_true - y_pred, correction=0) / var_y)

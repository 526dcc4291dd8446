"""Action distributions of every action space, in the flat layout ACER stores and projects.

Each step of a segment stores the action the behaviour policy took and the *statistics* ``phi`` of its
distribution, one flat float vector of ``stats_size`` values per step (the ``mu_probs`` array of a segment):

- ``Discrete(n)``: a categorical, ``phi`` the ``n`` probabilities; the action is the int64 choice (no axis);

- ``Box`` (any shape, ``D`` values): a diagonal Gaussian, ``phi = [mean (D), log_std (D)]``; the action is
  the flattened unclipped draw (float32 ``[D]``); :meth:`ActionDistribution.to_env` clips it to the bounds;
- ``MultiDiscrete(nvec)`` (``F`` factors) and ``MultiBinary`` (``F`` two-choice factors): independent
  categoricals, ``phi`` the ``[F, K]`` probabilities (``K = max(nvec)``, zero-padded) flattened; the action
  is the int64 choice of each factor ``[F]``.

The maths are those of :mod:`sb3_acer.common.functional` (``categorical`` and ``continuous``); this module
only maps the flat layout onto them, so that the rollout, the replay memory and the update need not know
which space they serve.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces

from sb3_acer.common.functional import categorical as F
from sb3_acer.common.functional import continuous as FC

__all__ = ["ActionDistribution", "Categorical", "DiagGaussian", "Factorised", "make_action_distribution"]


class ActionDistribution(ABC):
    """The distribution of one action space, in the flat statistics layout (leading dims ``[...]`` free).

    Attributes:
        space: the action space.
        stats_size: ``S``, the length of the flat statistics vector of one step.
        action_size: the length of the flat action vector of one step.
        action_dtype: NumPy dtype of the stored actions.
        action_dim: ``d`` of the continuous Retrace trace ``min(1, rho^(1/d))`` (1 for factorised spaces,
            whose trace is ``min(1, rho)`` as for ``Discrete``).
    """

    space: spaces.Space
    stats_size: int
    action_size: int
    action_dtype: np.dtype
    action_dim: int

    @abstractmethod
    def sample(self, stats: th.Tensor) -> th.Tensor:
        """One action per row of ``stats`` (``[..., S]`` -> ``[..., action_size]``), torch's global RNG."""

    @abstractmethod
    def mode(self, stats: th.Tensor) -> th.Tensor:
        """The most probable action (the mean, or each factor's most probable choice)."""

    @abstractmethod
    def log_prob(self, stats: th.Tensor, actions: th.Tensor) -> th.Tensor:
        """``[T, B]`` ``log pi(a|x)`` of ``[T, B, action_size]`` actions, differentiable in ``stats``."""

    @abstractmethod
    def log_prob_gradient(self, stats: th.Tensor, actions: th.Tensor) -> th.Tensor:
        """``[T, B, S]`` ``d log pi(a|x) / d phi`` in closed form."""

    @abstractmethod
    def entropy(self, stats: th.Tensor) -> th.Tensor:
        """``[T, B]`` entropy, differentiable in ``stats``."""

    @abstractmethod
    def entropy_gradient(self, stats: th.Tensor) -> th.Tensor:
        """``[T, B, S]`` ``d H / d phi`` in closed form."""

    @abstractmethod
    def kl(self, avg_stats: th.Tensor, stats: th.Tensor) -> th.Tensor:
        """``[T, B]`` ``KL(avg || current)``."""

    @abstractmethod
    def kl_gradient(self, avg_stats: th.Tensor, stats: th.Tensor) -> th.Tensor:
        """``[T, B, S]`` ``d KL(avg || current) / d phi`` in closed form (zero on statistics not learned)."""

    @abstractmethod
    def project(self, g: th.Tensor, k: th.Tensor, delta: float, eps: float = F.EPS) -> F.TrustRegionStep:
        """The trust-region projection (eq. 12) of ``[T, B, S]`` ``g`` with ``k``, per sample or per factor;
        ``z`` is ``[T, B, S]``, ``adj`` and ``k_dot_g`` ``[T, B]`` (their mean over factors if factorised)."""

    @abstractmethod
    def encode(self, actions: th.Tensor) -> th.Tensor:
        """The actions ``[..., action_size]`` as the float input of the advantage network ``A(x, a)``."""

    @property
    @abstractmethod
    def encoding_size(self) -> int:
        """Width of :meth:`encode`'s output."""

    def to_env(self, actions: np.ndarray) -> np.ndarray:
        """``[N, action_size]`` stored actions as the env takes them: the space's shape and dtype."""
        shape = tuple(self.space.shape or ())
        return actions.reshape(len(actions), *shape).astype(self.space.dtype, copy=False)

    def stored_action_layout(self) -> dict[str, Any]:
        """How a segment and the replay memory store the actions: the flat ``action_size`` and the
        ``action_dtype`` (nothing for ``Discrete``, whose int64 actions have no axis)."""
        return dict(action_size=self.action_size, action_dtype=self.action_dtype)


class Categorical(ActionDistribution):
    """One categorical over ``Discrete(n)``; statistics the ``n`` probabilities (``S = n``). The actions
    are the int64 choices without a trailing axis (``[...]``), as a segment stores them.

    Args:
        space: the ``Discrete`` action space.
    """

    def __init__(self, space: spaces.Discrete) -> None:
        self.space = space
        self.stats_size = int(space.n)
        self.action_size = 1
        self.action_dtype = np.dtype(np.int64)
        self.action_dim = 1

    def stored_action_layout(self) -> dict[str, Any]:
        return {}

    def sample(self, stats: th.Tensor) -> th.Tensor:
        return th.multinomial(stats.reshape(-1, self.stats_size), 1).reshape(stats.shape[:-1])

    def mode(self, stats: th.Tensor) -> th.Tensor:
        return stats.argmax(-1)

    def log_prob(self, stats: th.Tensor, actions: th.Tensor) -> th.Tensor:
        return th.log(stats.gather(-1, actions.long().unsqueeze(-1)).squeeze(-1) + F.EPS)

    def log_prob_gradient(self, stats: th.Tensor, actions: th.Tensor) -> th.Tensor:
        return self.encode(actions) / (stats + F.EPS)

    def entropy(self, stats: th.Tensor) -> th.Tensor:
        return F.categorical_entropy(stats, eps=F.EPS)

    def entropy_gradient(self, stats: th.Tensor) -> th.Tensor:
        probs = stats.detach()
        return -(th.log(probs + F.EPS) + probs / (probs + F.EPS))

    def kl(self, avg_stats: th.Tensor, stats: th.Tensor) -> th.Tensor:
        return F.categorical_kl(p_probs=avg_stats, q_probs=stats, eps=F.EPS)

    def kl_gradient(self, avg_stats: th.Tensor, stats: th.Tensor) -> th.Tensor:
        return F.kl_gradient(avg_probs=avg_stats, pi_probs=stats.detach(), eps=F.EPS)

    def project(self, g: th.Tensor, k: th.Tensor, delta: float, eps: float = F.EPS) -> F.TrustRegionStep:
        return F.trust_region_projection(g=g, k=k, delta=delta, eps=eps)

    def encode(self, actions: th.Tensor) -> th.Tensor:
        return th.nn.functional.one_hot(actions.long(), self.stats_size).float()

    @property
    def encoding_size(self) -> int:
        return self.stats_size


class DiagGaussian(ActionDistribution):
    """Diagonal Gaussian over a ``Box`` of ``D`` values; statistics ``[mean, log_std]`` (``S = 2 D``).

    Args:
        space: the ``Box`` action space.
        learn_log_std: whether the log-std is learned (SB3); if not (the paper's fixed sigma), the trust
            region and the gradient act on the mean only.
    """

    space: spaces.Box

    def __init__(self, space: spaces.Box, learn_log_std: bool) -> None:
        self.space = space
        self.learn_log_std = learn_log_std
        self.dim = int(np.prod(space.shape))
        self.stats_size = 2 * self.dim
        self.action_size = self.dim
        self.action_dtype = np.dtype(np.float32)
        self.action_dim = self.dim

    def split(self, stats: th.Tensor) -> FC.GaussianStatistics:
        """The mean and log-std of flat statistics."""
        return FC.GaussianStatistics(mean=stats[..., : self.dim], log_std=stats[..., self.dim :])

    def _join(self, grad: FC.GaussianStatistics) -> th.Tensor:
        log_std = grad.log_std if self.learn_log_std else th.zeros_like(grad.log_std)
        return th.cat([grad.mean, log_std], -1)

    def sample(self, stats: th.Tensor) -> th.Tensor:
        mean, log_std = self.split(stats)
        return mean + th.exp(log_std) * th.randn_like(mean)

    def mode(self, stats: th.Tensor) -> th.Tensor:
        return self.split(stats).mean

    def log_prob(self, stats: th.Tensor, actions: th.Tensor) -> th.Tensor:
        mean, log_std = self.split(stats)
        return FC.gaussian_log_prob(actions=actions, mean=mean, log_std=log_std)

    def log_prob_gradient(self, stats: th.Tensor, actions: th.Tensor) -> th.Tensor:
        mean, log_std = self.split(stats)
        return self._join(FC.gaussian_log_prob_gradient(actions=actions, mean=mean, log_std=log_std))

    def entropy(self, stats: th.Tensor) -> th.Tensor:
        return FC.gaussian_entropy(log_std=self.split(stats).log_std)

    def entropy_gradient(self, stats: th.Tensor) -> th.Tensor:
        mean = self.split(stats).mean
        ones = th.ones_like(mean) if self.learn_log_std else th.zeros_like(mean)
        return th.cat([th.zeros_like(mean), ones], -1)

    def kl(self, avg_stats: th.Tensor, stats: th.Tensor) -> th.Tensor:
        avg, cur = self.split(avg_stats), self.split(stats)
        return FC.gaussian_kl(avg_mean=avg.mean, avg_log_std=avg.log_std, mean=cur.mean, log_std=cur.log_std)

    def kl_gradient(self, avg_stats: th.Tensor, stats: th.Tensor) -> th.Tensor:
        avg, cur = self.split(avg_stats), self.split(stats)
        return self._join(
            FC.gaussian_kl_gradient(
                avg_mean=avg.mean, avg_log_std=avg.log_std, mean=cur.mean, log_std=cur.log_std
            )
        )

    def project(self, g: th.Tensor, k: th.Tensor, delta: float, eps: float = F.EPS) -> F.TrustRegionStep:
        # The log-std parts of g and k are zero when it is not learned: the projection is the mean's alone.
        return F.trust_region_projection(g=g, k=k, delta=delta, eps=eps)

    def encode(self, actions: th.Tensor) -> th.Tensor:
        return actions.float()

    @property
    def encoding_size(self) -> int:
        return self.dim

    def to_env(self, actions: np.ndarray) -> np.ndarray:
        """The policy acts unbounded; the env gets the action clipped to the ``Box`` (SB3's convention)."""
        shaped = actions.reshape(len(actions), *self.space.shape)
        return np.clip(shaped, self.space.low, self.space.high).astype(self.space.dtype, copy=False)


class Factorised(ActionDistribution):
    """Independent categoricals over ``MultiDiscrete(nvec)`` or ``MultiBinary(n)``; statistics the ``[F, K]``
    probabilities flattened (``S = F K``, ``K = max(nvec)``, zero-padded).

    Args:
        space: the ``MultiDiscrete`` or ``MultiBinary`` action space.
    """

    def __init__(self, space: spaces.MultiDiscrete | spaces.MultiBinary) -> None:
        self.space = space
        if isinstance(space, spaces.MultiBinary):
            self.nvec = np.full(int(np.prod(space.shape)), 2, dtype=np.int64)
        else:
            self.nvec = np.asarray(space.nvec, dtype=np.int64).reshape(-1)
        self.n_factors = len(self.nvec)
        self.n_choices = int(self.nvec.max())
        self.stats_size = self.n_factors * self.n_choices
        self.action_size = self.n_factors
        self.action_dtype = np.dtype(np.int64)
        self.action_dim = 1
        #: ``[F, K]`` True where a choice exists (the network's logits are masked to ``-inf`` elsewhere).
        self.valid = th.as_tensor(np.arange(self.n_choices)[None, :] < self.nvec[:, None])

    def probs(self, stats: th.Tensor) -> th.Tensor:
        """``[..., F, K]`` probabilities of flat statistics."""
        return stats.reshape(*stats.shape[:-1], self.n_factors, self.n_choices)

    def statistics(self, logits: th.Tensor) -> th.Tensor:
        """Flat statistics from ``[..., F K]`` logits (invalid choices masked out)."""
        masked = self.probs(logits).masked_fill(~self.valid.to(logits.device), -math.inf)
        return th.softmax(masked, dim=-1).flatten(-2)

    def sample(self, stats: th.Tensor) -> th.Tensor:
        probs = self.probs(stats)
        flat = probs.reshape(-1, self.n_choices)
        return th.multinomial(flat, 1).reshape(probs.shape[:-1])

    def mode(self, stats: th.Tensor) -> th.Tensor:
        return self.probs(stats).argmax(-1)

    def log_prob(self, stats: th.Tensor, actions: th.Tensor) -> th.Tensor:
        return FC.factorised_log_prob(probs=self.probs(stats), actions=actions)

    def log_prob_gradient(self, stats: th.Tensor, actions: th.Tensor) -> th.Tensor:
        return FC.factorised_log_prob_gradient(probs=self.probs(stats), actions=actions).flatten(-2)

    def entropy(self, stats: th.Tensor) -> th.Tensor:
        return FC.factorised_entropy(self.probs(stats))

    def entropy_gradient(self, stats: th.Tensor) -> th.Tensor:
        probs = stats.detach()
        return -(th.log(probs + F.EPS) + probs / (probs + F.EPS))

    def kl(self, avg_stats: th.Tensor, stats: th.Tensor) -> th.Tensor:
        return FC.factorised_kl(avg_probs=self.probs(avg_stats), pi_probs=self.probs(stats)).sum(-1)

    def kl_gradient(self, avg_stats: th.Tensor, stats: th.Tensor) -> th.Tensor:
        grad = FC.factorised_kl_gradient(avg_probs=self.probs(avg_stats), pi_probs=self.probs(stats.detach()))
        return grad.flatten(-2)

    def project(self, g: th.Tensor, k: th.Tensor, delta: float, eps: float = F.EPS) -> F.TrustRegionStep:
        step = F.trust_region_projection(g=self.probs(g), k=self.probs(k), delta=delta, eps=eps)
        return F.TrustRegionStep(z=step.z.flatten(-2), adj=step.adj.mean(-1), k_dot_g=step.k_dot_g.mean(-1))

    def encode(self, actions: th.Tensor) -> th.Tensor:
        one_hot = th.nn.functional.one_hot(actions.long(), self.n_choices)
        return one_hot.flatten(-2).float()

    @property
    def encoding_size(self) -> int:
        return self.stats_size


def make_action_distribution(space: spaces.Space, learn_log_std: bool = True) -> ActionDistribution:
    """The distribution of ``space``.

    Raises:
        ValueError: for a space other than ``Discrete``, ``Box``, ``MultiDiscrete`` and ``MultiBinary``.
    """
    if isinstance(space, spaces.Discrete):
        return Categorical(space)
    if isinstance(space, spaces.Box):
        return DiagGaussian(space, learn_log_std)
    if isinstance(space, spaces.MultiDiscrete | spaces.MultiBinary):
        return Factorised(space)
    raise ValueError(f"no ACER action distribution for {space}: Discrete, Box, MultiDiscrete or MultiBinary")

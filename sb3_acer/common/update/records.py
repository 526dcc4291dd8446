"""The typed records of one update and the interface of the per-family maths (:class:`ACERTerms`).

Nothing here computes: the records cross from the networks to the maths to the logger, and
:class:`ACERTerms` is what :mod:`sb3_acer.common.update.categorical` (``Discrete``, paper eqs. 4-12) and
:mod:`sb3_acer.common.update.sdn` (``Box``, ``MultiDiscrete``, ``MultiBinary``, eqs. 13-16) each provide to
the one pipeline of :mod:`sb3_acer.common.update.pipeline`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, TypeVar

import torch as th

from sb3_acer.common.functional import categorical as F
from sb3_acer.common.policies import ACERPolicy
from sb3_acer.common.type_aliases import Segment

__all__ = [
    "ACERTerms",
    "AnyPolicy",
    "CriticTerms",
    "NetworkOutputs",
    "Rows",
    "TrustRegionDiagnostics",
    "UpdateConfig",
    "UpdateStats",
]

#: Every policy the update takes.
AnyPolicy = ACERPolicy


@dataclass(frozen=True)
class UpdateConfig:
    """Hyperparameters of one ACER update (see ``ACER`` for their meaning).

    ``n_dueling`` is ``n``, the number of actions ``u_i`` of the stochastic dueling network (paper: 5; not
    used by ``Discrete`` actions, whose ``Q`` is exact).
    """

    gamma: float
    q_coef: float
    ent_coef: float
    correction_term: float
    trust_region: bool
    delta: float
    retrace_lambda: float = 1.0
    eps: float = F.EPS
    n_dueling: int = 5


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


class TrustRegionDiagnostics(NamedTuple):
    """Mean norms of the trust-region step (``train/avg_norm_*``); zeros when not computed."""

    avg_norm_k: float = 0.0
    avg_norm_g: float = 0.0
    avg_norm_k_dot_g: float = 0.0
    avg_norm_adj: float = 0.0


class Rows(NamedTuple):
    """The current network's outputs, one row per observation.

    Attributes:
        stats: ``[N, S]`` the flat statistics ``phi`` of ``pi(.|x)`` (probabilities for ``Discrete``).
        values: ``[N]`` ``V(x)``.
        extra: ``[N, A]`` ``Q(x, .)`` (``Discrete``) or ``[N, L]`` the critic's latents (the dueling network).
    """

    stats: th.Tensor
    values: th.Tensor
    extra: th.Tensor


class NetworkOutputs(NamedTuple):
    """What the update needs from both networks, time-major.

    Attributes:
        stats: ``[T, E, S]`` statistics of ``pi(.|x_t)``, with autograd history.
        values: ``[T + 1, E]`` ``V(x_t)``, with autograd history.
        extra: ``[T, E, ...]`` :attr:`Rows.extra` of ``x_0 .. x_{T-1}``, with autograd history.
        truncation_values: ``[T, E]`` ``V`` of the observation at which the episode was truncated after step
            ``t`` (zero elsewhere), detached.
        avg_stats: ``[T, E, S]`` the average network's statistics (no gradient).
    """

    stats: th.Tensor
    values: th.Tensor
    extra: th.Tensor
    truncation_values: th.Tensor
    avg_stats: th.Tensor


class CriticTerms(Protocol):
    """What the shared steps read of a family's critic record."""

    @property
    def rho_i(self) -> th.Tensor:
        """``[T, E]`` ``pi(a_t) / mu(a_t)``."""

    @property
    def q_i(self) -> th.Tensor:
        """``[T, E]`` the critic's estimate of the taken action (``Q`` or ``Q~``), with autograd history."""

    @property
    def q_ret(self) -> th.Tensor:
        """``[T, E]`` the Retrace targets (no gradient)."""

    @property
    def loss_q(self) -> th.Tensor:
        """The critic loss, with autograd history."""


CriticT = TypeVar("CriticT", bound=CriticTerms)


class ACERTerms(Protocol[CriticT]):
    """The maths that differ between the action families, behind one interface.

    The policy's raw outputs (``policy.evaluate``: rows, concatenable along the first axis) are read through
    :meth:`rows`; the rest works on :class:`NetworkOutputs`. :meth:`policy_gradient` is the
    per-sample gradient of the policy objective, entropy bonus included, with respect to the statistics.
    """

    def rows(self, raw: tuple[th.Tensor, ...]) -> Rows:
        """Statistics, values and extras of raw outputs."""

    def critic(self, policy: Any, outputs: NetworkOutputs, segment: Segment, config: UpdateConfig) -> CriticT:
        """Importance weights, the critic's estimates, the Retrace targets and the critic loss."""

    def policy_gradient(
        self, policy: Any, outputs: NetworkOutputs, critic: CriticT, config: UpdateConfig
    ) -> th.Tensor:
        """``[T, E, S]`` per-sample gradient of the policy objective with respect to the statistics."""

    def policy_loss(
        self, policy: Any, outputs: NetworkOutputs, critic: CriticT, config: UpdateConfig
    ) -> F.PolicyLoss:
        """The truncated term ``loss_f`` and the bias correction ``loss_bc`` (differentiable in ``stats``)."""

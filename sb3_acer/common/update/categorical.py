"""The maths of ``Discrete`` actions in the one update (paper eqs. 4-12): exact expectations over the ``A``
actions with the ``Q`` head of :class:`~sb3_acer.common.policies.categorical.CategoricalHead`.

:class:`CategoricalTerms` implements :class:`~sb3_acer.common.update.records.ACERTerms` with the functions
of :mod:`sb3_acer.common.functional.categorical`; it never sees the environment, the buffer or the logger.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch as th

from sb3_acer.common.functional import categorical as F
from sb3_acer.common.type_aliases import Segment
from sb3_acer.common.update.records import NetworkOutputs, Rows, UpdateConfig

__all__ = ["CategoricalCritic", "CategoricalTerms"]


class CategoricalCritic(NamedTuple):
    """Importance weights, Retrace targets and the critic loss.

    Attributes:
        weights: the importance weights ``rho`` (all actions) and ``rho_i`` (taken actions).
        actions: ``[T, E]`` the taken actions.
        q_i: ``[T, E]`` ``Q(x_t, a_t)``, with autograd history.
        q_ret: ``[T, E]`` Retrace targets (no gradient).
        loss_q: the critic loss ``0.5 * mean((q_ret - q_i)^2)``, with autograd history.
    """

    weights: F.ImportanceWeights
    actions: th.Tensor
    q_i: th.Tensor
    q_ret: th.Tensor
    loss_q: th.Tensor

    @property
    def rho_i(self) -> th.Tensor:
        """``[T, E]`` the importance weights of the taken actions."""
        return self.weights.rho_i


class CategoricalTerms:
    """Eqs. 4-12: ``Q`` of every action, ``rho`` of every action, the policy term as an expectation."""

    def rows(self, raw: tuple[th.Tensor, ...]) -> Rows:
        logits, q_values = raw
        probs = th.softmax(logits, dim=-1)
        return Rows(stats=probs, values=(probs * q_values).sum(-1), extra=q_values)

    def critic(
        self, policy: Any, outputs: NetworkOutputs, segment: Segment, config: UpdateConfig
    ) -> CategoricalCritic:
        """Importance weights ``rho = pi / mu``, Retrace targets ``Q^ret`` (trace coefficient
        ``rho_bar = lambda min(1, rho_i)``) and the critic loss ``0.5 * mean((Q^ret - Q(x, a))^2)``."""
        device = outputs.stats.device
        actions = th.as_tensor(segment.actions, device=device)
        weights = F.importance_weights(
            pi_probs=outputs.stats.detach(),
            mu_probs=th.as_tensor(segment.mu_probs, device=device),
            actions=actions,
            eps=config.eps,
        )
        q_i = outputs.extra.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        q_ret = F.retrace_targets(
            rewards=th.as_tensor(segment.rewards, device=device),
            q_i=q_i.detach(),
            values=outputs.values.detach(),
            rho_bar=config.retrace_lambda * th.clamp(weights.rho_i, max=1.0),
            terminated=th.as_tensor(segment.terminated, device=device),
            truncated=th.as_tensor(segment.truncated, device=device),
            truncation_values=outputs.truncation_values,
            gamma=config.gamma,
        )
        loss_q = 0.5 * (q_ret - q_i).pow(2).mean()
        return CategoricalCritic(weights=weights, actions=actions, q_i=q_i, q_ret=q_ret, loss_q=loss_q)

    def policy_gradient(
        self, policy: Any, outputs: NetworkOutputs, critic: CategoricalCritic, config: UpdateConfig
    ) -> th.Tensor:
        """Closed form of ``autograd(-(loss_policy - ent_coef * entropy) * N, pi_probs)``: one pass."""
        return F.acer_policy_gradient(**_policy_inputs(outputs, critic, config), ent_coef=config.ent_coef)

    def policy_loss(
        self, policy: Any, outputs: NetworkOutputs, critic: CategoricalCritic, config: UpdateConfig
    ) -> F.PolicyLoss:
        return F.acer_policy_loss(**_policy_inputs(outputs, critic, config))


def _policy_inputs(
    outputs: NetworkOutputs, critic: CategoricalCritic, config: UpdateConfig
) -> dict[str, Any]:
    """The arguments the policy term takes, as its loss (:func:`F.acer_policy_loss`) and as its gradient
    (:func:`F.acer_policy_gradient`): the critic's values are constants."""
    return dict(
        pi_probs=outputs.stats,
        actions=critic.actions,
        rho=critic.weights.rho,
        q_ret=critic.q_ret,
        q_values=outputs.extra.detach(),
        values=outputs.values[:-1].detach(),
        c=config.correction_term,
        eps=config.eps,
    )

"""The maths of ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions in the one update (paper section 4,
eqs. 13-16), with the stochastic dueling network of :class:`~sb3_acer.common.policies.sdn.DuelingHead`.

:class:`SDNTerms` implements :class:`~sb3_acer.common.update.records.ACERTerms`:

1. the importance weights ``rho_t = pi(a_t) / mu(a_t)`` (from the behaviour statistics stored with the
   segment) and ``rho_t(a'_t)`` of one action ``a'_t ~ pi`` per sample;
2. the stochastic dueling network ``Q~`` of the taken and of the sampled action with ``n`` actions
   ``u_i ~ pi`` (the same ``u_i`` for both), ``Q_ret`` (trace ``min(1, rho^(1/d))``) and ``Q_opc``;
3. the critic loss ``1/2 (Q_ret - Q~(x, a))^2 + 1/2 (V_target - V(x))^2`` (eq. 14);
4. the policy term of eq. 16 (and its gradient with respect to the statistics, entropy bonus included).

The maths are those of :mod:`sb3_acer.common.functional.continuous`, through the policy's
:class:`~sb3_acer.common.distributions.ActionDistribution`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import torch as th

from sb3_acer.common.functional import categorical as F
from sb3_acer.common.functional import continuous as FC
from sb3_acer.common.policies import ACERPolicy
from sb3_acer.common.policies.sdn import DuelingHead
from sb3_acer.common.type_aliases import Segment
from sb3_acer.common.update.records import NetworkOutputs, Rows, UpdateConfig

__all__ = ["SDNCritic", "SDNDraws", "SDNTerms", "draw_samples"]


class SDNDraws(NamedTuple):
    """The actions drawn from the current policy for one update.

    Attributes:
        sampled: ``[T, E, action_size]`` one action ``a'_t ~ pi(.|x_t)`` for the bias correction.
        dueling: ``[T, E, n, action_size]`` the ``n`` actions ``u_i ~ pi(.|x_t)`` of ``Q~``.
    """

    sampled: th.Tensor
    dueling: th.Tensor


def draw_samples(policy: ACERPolicy, stats: th.Tensor, n_dueling: int) -> SDNDraws:
    """``a'`` and the ``u_i`` from ``[T, E, S]`` statistics (no gradient; torch's global RNG)."""
    with th.no_grad():
        stats = stats.detach()
        sampled = policy.dist.sample(stats)
        expanded = stats.unsqueeze(2).expand(*stats.shape[:2], n_dueling, stats.shape[-1])
        return SDNDraws(sampled=sampled, dueling=policy.dist.sample(expanded))


class SDNCritic(NamedTuple):
    """Importance weights, the dueling estimates, the targets and the critic loss of one update.

    Attributes:
        actions: ``[T, E, action_size]`` the taken actions.
        draws: the actions drawn from ``pi``.
        rho_i: ``[T, E]`` ``pi(a_t) / mu(a_t)``.
        rho_sampled: ``[T, E]`` ``pi(a'_t) / mu(a'_t)``.
        q_i: ``[T, E]`` ``Q~(x_t, a_t)``, with autograd history.
        q_sampled: ``[T, E]`` ``Q~(x_t, a'_t)``, detached.
        targets: ``Q_ret`` and ``Q_opc``.
        loss_q: ``mean(1/2 (Q_ret - Q~)^2) + mean(1/2 (V_target - V)^2)``, with autograd history.
    """

    actions: th.Tensor
    draws: SDNDraws
    rho_i: th.Tensor
    rho_sampled: th.Tensor
    q_i: th.Tensor
    q_sampled: th.Tensor
    targets: FC.ContinuousRetrace
    loss_q: th.Tensor

    @property
    def q_ret(self) -> th.Tensor:
        """``[T, E]`` the Retrace targets."""
        return self.targets.q_ret


class SDNTerms:
    """Eqs. 13-16: sampled actions, the stochastic dueling ``Q~`` and the policy term of eq. 16.

    Args:
        draws: the actions drawn from ``pi`` (tests pass them; by default drawn in :meth:`critic`, after the
            forward passes, from torch's global RNG).
    """

    def __init__(self, draws: SDNDraws | None = None) -> None:
        self.draws = draws

    def rows(self, raw: tuple[th.Tensor, ...]) -> Rows:
        return Rows(*raw)

    def critic(
        self, policy: ACERPolicy, outputs: NetworkOutputs, segment: Segment, config: UpdateConfig
    ) -> SDNCritic:
        """Importance weights, ``Q~`` of the taken and the sampled actions, ``Q_ret`` / ``Q_opc`` and the
        critic loss on ``Q_ret`` and on the value target of eq. 14."""
        device, dist = policy.device, policy.dist
        n_steps, n_envs = segment.n_steps, segment.n_envs
        actions = th.as_tensor(segment.actions, device=device).reshape(n_steps, n_envs, -1)
        draws = (
            self.draws if self.draws is not None else draw_samples(policy, outputs.stats, config.n_dueling)
        )
        values, detached = outputs.values, outputs.stats.detach()
        mu_stats = th.as_tensor(segment.mu_probs, device=device)
        with th.no_grad():
            rho_i = th.exp(dist.log_prob(detached, actions) - dist.log_prob(mu_stats, actions))
            rho_sampled = th.exp(
                dist.log_prob(detached, draws.sampled) - dist.log_prob(mu_stats, draws.sampled)
            )
        # A(x, .) of the taken action, the sampled one and the n dueling ones, in one pass.
        all_actions = th.cat([actions.unsqueeze(2), draws.sampled.unsqueeze(2), draws.dueling], 2)
        latent = outputs.extra.reshape(n_steps * n_envs, -1)
        assert isinstance(policy.head, DuelingHead)
        adv = policy.head.advantage(
            policy, latent, all_actions.reshape(n_steps * n_envs, -1, all_actions.shape[-1])
        )
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
            truncation_values=outputs.truncation_values,
            retrace_lambda=config.retrace_lambda,
        )
        v_target = FC.value_target(
            rho_i=rho_i, q_ret=targets.q_ret, q_tilde=q_tilde.detach(), values=values[:-1].detach()
        )
        loss_q = 0.5 * (targets.q_ret - q_tilde).pow(2).mean() + 0.5 * (v_target - values[:-1]).pow(2).mean()
        return SDNCritic(actions, draws, rho_i, rho_sampled, q_tilde, q_sampled.detach(), targets, loss_q)

    def policy_gradient(
        self, policy: ACERPolicy, outputs: NetworkOutputs, critic: SDNCritic, config: UpdateConfig
    ) -> th.Tensor:
        dist, detached = policy.dist, outputs.stats.detach()
        g = FC.sdn_policy_gradient(
            grad_log_pi_i=dist.log_prob_gradient(detached, critic.actions),
            grad_log_pi_sampled=dist.log_prob_gradient(detached, critic.draws.sampled),
            **_policy_inputs(outputs, critic, config),
        )
        if config.ent_coef:
            g = g + config.ent_coef * dist.entropy_gradient(detached)
        return g

    def policy_loss(
        self, policy: ACERPolicy, outputs: NetworkOutputs, critic: SDNCritic, config: UpdateConfig
    ) -> F.PolicyLoss:
        return FC.sdn_policy_loss(
            log_pi_i=policy.dist.log_prob(outputs.stats, critic.actions),
            log_pi_sampled=policy.dist.log_prob(outputs.stats, critic.draws.sampled),
            **_policy_inputs(outputs, critic, config),
        )


def _policy_inputs(outputs: NetworkOutputs, critic: SDNCritic, config: UpdateConfig) -> dict[str, Any]:
    """The arguments eq. 16 takes, as a loss and as a gradient: the critic's values are constants."""
    return dict(
        rho_i=critic.rho_i,
        rho_sampled=critic.rho_sampled,
        q_opc=critic.targets.q_opc,
        q_sampled=critic.q_sampled,
        values=outputs.values[:-1].detach(),
        c=config.correction_term,
        eps=config.eps,
    )

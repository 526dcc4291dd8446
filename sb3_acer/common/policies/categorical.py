"""The head of ``Discrete`` actions: a softmax policy ``pi(.|x) = softmax(logits(x))`` and a ``Q(x, .)`` of
every action, each on its tower of SB3's ``MlpExtractor`` (``mlp_extractor.policy_net`` for ``pi``,
``mlp_extractor.value_net`` for ``Q``), as SB2's ACER policies. Both heads are initialised with gain 0.01,
or 1.0 in a recurrent policy (SB2's recurrent heads are not scaled down).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.torch_layers import MlpExtractor
from torch import nn

from sb3_acer.common.checks.settings import check_actions
from sb3_acer.common.policies.layout import PolicyModules

__all__ = ["CategoricalHead", "PolicyOutput", "sample_actions", "select_actions"]


class PolicyOutput(NamedTuple):
    """What the network computes for a batch of observations.

    Attributes:
        logits: ``[N, A]`` unnormalised log-probabilities of the policy.
        q_values: ``[N, A]`` action values ``Q(x, .)``.
    """

    logits: th.Tensor
    q_values: th.Tensor


def select_actions(logits: th.Tensor, deterministic: bool) -> th.Tensor:
    """The most probable action of each row of ``logits`` (``[N, A]``), or one sampled from the softmax."""
    if deterministic:
        return logits.argmax(dim=-1)
    return th.distributions.Categorical(logits=logits).sample()


def sample_actions(probs: th.Tensor) -> th.Tensor:
    """One action per row of ``probs`` (``[B, A]``), drawn by inverting the cumulative distribution with a
    uniform number from torch's global generator (half the cost of ``torch.multinomial`` on small batches).

    An action of zero probability is never drawn; a ``u`` past the rounded total lands on the last action
    with positive probability.
    """
    cdf = probs.cumsum(-1)
    u = th.rand((probs.shape[0], 1), dtype=cdf.dtype, device=cdf.device) * cdf[:, -1:]
    return th.searchsorted(cdf, u, right=True).squeeze(-1).clamp_(max=probs.shape[-1] - 1)


class CategoricalHead:
    """The ``pi`` and ``Q`` heads of ``Discrete`` actions (an
    :class:`~sb3_acer.common.policies.layout.ActionHead`)."""

    def build(
        self, policy: PolicyModules, latent_dim: int, pi_layers: list[int], qf_layers: list[int]
    ) -> None:
        n_actions = policy.dist.stats_size
        policy.mlp_extractor = MlpExtractor(
            latent_dim, net_arch=dict(pi=pi_layers, vf=qf_layers), activation_fn=policy.activation_fn
        )
        policy.action_net = nn.Linear(policy.mlp_extractor.latent_dim_pi, n_actions)
        policy.q_net = nn.Linear(policy.mlp_extractor.latent_dim_vf, n_actions)

    def init_gains(self, policy: PolicyModules, trunk: list[nn.Module]) -> dict[nn.Module, float]:
        head_gain = 1.0 if policy.recurrent else 0.01
        gains = {policy.features_extractor: np.sqrt(2), **{module: np.sqrt(2) for module in trunk}}
        gains.update({policy.shared_net: np.sqrt(2), policy.mlp_extractor: np.sqrt(2)})
        gains.update({policy.action_net: head_gain, policy.q_net: head_gain})
        return gains

    def critic_modules(self, policy: PolicyModules) -> list[nn.Module]:
        return [policy.mlp_extractor.value_net, policy.q_net]

    def outputs(self, policy: PolicyModules, latent: th.Tensor, critic_latent: th.Tensor) -> PolicyOutput:
        latent_pi = policy.mlp_extractor.forward_actor(latent)
        latent_q = policy.mlp_extractor.forward_critic(critic_latent)
        return PolicyOutput(logits=policy.action_net(latent_pi), q_values=policy.q_net(latent_q))

    def logits(self, policy: PolicyModules, latent: th.Tensor) -> th.Tensor:
        """``[N, A]`` policy logits only (the ``Q`` tower is not evaluated)."""
        return policy.action_net(policy.mlp_extractor.forward_actor(latent))

    def statistics(self, policy: PolicyModules, latent: th.Tensor) -> th.Tensor:
        return th.softmax(self.logits(policy, latent), dim=-1)

    def actions(self, policy: PolicyModules, latent: th.Tensor, deterministic: bool) -> th.Tensor:
        return select_actions(self.logits(policy, latent), deterministic)

    def behaviour(self, policy: PolicyModules, stats: th.Tensor) -> th.Tensor:
        return sample_actions(stats)

    def sb3_forward(
        self, policy: PolicyModules, latent: th.Tensor, critic_latent: th.Tensor, deterministic: bool
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """Values ``V(x) = sum_a pi(a|x) Q(x, a)``."""
        logits, q_values = self.outputs(policy, latent, critic_latent)
        actions = select_actions(logits, deterministic)
        log_probs = th.log_softmax(logits, dim=-1)
        values = (log_probs.exp() * q_values).sum(dim=-1, keepdim=True)
        return actions, values, log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)

    def probability(
        self, policy: PolicyModules, stats: th.Tensor, actions: np.ndarray | None, logp: bool
    ) -> np.ndarray:
        """``[n, A]`` probabilities, or those of the ``actions`` ``[n, 1]`` (their logs with ``logp``)."""
        probs = stats.cpu().numpy()
        if actions is None:
            return np.log(probs) if logp else probs
        actions_array = check_actions(actions, n_observations=probs.shape[0], n_actions=probs.shape[1])
        chosen = probs[np.arange(len(actions_array)), actions_array].reshape(-1, 1)
        return np.log(chosen) if logp else chosen

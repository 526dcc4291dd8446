"""The head of ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions: an actor and a stochastic dueling
network critic (paper section 4, eq. 13).

The actor (``pi_net``, ``action_net``) outputs the statistics of the action distribution
(:mod:`sb3_acer.common.distributions`): a diagonal Gaussian's mean with either a learned state-independent
log-std (SB3's ``log_std``) or the paper's fixed ``sigma`` (``fixed_std``, a buffer), or each factor's
probabilities. The critic outputs ``V(x)`` (``value_tower``, ``value_net``) and an advantage ``A(x, a)``
(``advantage_tower``, ``advantage_net``) from the shared latent and the action; ``Q~ = V + A(x, a) -
mean_i A(x, u_i)`` is formed in the update
(:func:`sb3_acer.common.functional.continuous.stochastic_dueling_q`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch as th
from torch import nn

from sb3_acer.common.distributions import DiagGaussian, Factorised
from sb3_acer.common.policies.layout import PolicyModules, build_mlp

__all__ = ["DuelingHead", "SDNOutput"]


class SDNOutput(NamedTuple):
    """What the update needs from the network for a batch of ``N`` observations.

    Attributes:
        stats: ``[N, S]`` flat statistics of ``pi(.|x)``.
        values: ``[N]`` ``V(x)``.
        critic_latent: ``[N, L]`` the critic's features, input of :meth:`DuelingHead.advantage` with an
            action.
    """

    stats: th.Tensor
    values: th.Tensor
    critic_latent: th.Tensor


class DuelingHead:
    """The actor and the stochastic dueling critic (an :class:`~sb3_acer.common.policies.layout.ActionHead`).

    Args:
        fixed_std: the paper's fixed ``sigma`` of a ``Box`` policy; ``None`` learns a log-std.
        log_std_init: the initial learned log-std.
    """

    def __init__(self, fixed_std: float | None, log_std_init: float) -> None:
        self.fixed_std = fixed_std
        self.log_std_init = log_std_init

    def build(
        self, policy: PolicyModules, latent_dim: int, pi_layers: list[int], qf_layers: list[int]
    ) -> None:
        """The ``qf`` tower feeds ``V`` and, with the action appended to its input, ``A`` (64 units when
        ``qf`` is empty)."""
        dist, activation_fn = policy.dist, policy.activation_fn
        policy.pi_net, pi_dim = build_mlp(latent_dim, pi_layers, activation_fn)
        policy.value_tower, critic_dim = build_mlp(latent_dim, qf_layers, activation_fn)
        policy.value_net = nn.Linear(critic_dim, 1)
        policy.advantage_tower, adv_dim = build_mlp(
            latent_dim + dist.encoding_size, qf_layers or [64], activation_fn
        )
        policy.advantage_net = nn.Linear(adv_dim, 1)
        if not isinstance(dist, DiagGaussian):
            policy.action_net = nn.Linear(pi_dim, dist.stats_size)
            return
        policy.action_net = nn.Linear(pi_dim, dist.dim)
        initial = math.log(self.fixed_std) if self.fixed_std is not None else self.log_std_init
        log_std = th.full((dist.dim,), float(initial))
        if self.fixed_std is None:
            policy.log_std = nn.Parameter(log_std)
        else:
            policy.register_buffer("log_std", log_std)

    def init_gains(self, policy: PolicyModules, trunk: list[nn.Module]) -> dict[nn.Module, float]:
        towers = (policy.shared_net, policy.pi_net, policy.value_tower, policy.advantage_tower)
        gains: dict[nn.Module, float] = {policy.features_extractor: np.sqrt(2)}
        gains.update({module: np.sqrt(2) for module in towers})
        gains.update({policy.action_net: 0.01, policy.value_net: 1.0, policy.advantage_net: 1.0})
        return {**gains, **{module: np.sqrt(2) for module in trunk}}

    def critic_modules(self, policy: PolicyModules) -> list[nn.Module]:
        return [policy.value_tower, policy.value_net, policy.advantage_tower, policy.advantage_net]

    def statistics(self, policy: PolicyModules, latent: th.Tensor) -> th.Tensor:
        head = policy.action_net(policy.pi_net(latent))
        if isinstance(policy.dist, Factorised):
            return policy.dist.statistics(head)
        return th.cat([head, policy.log_std.expand_as(head)], -1)

    def outputs(self, policy: PolicyModules, latent: th.Tensor, critic_latent: th.Tensor) -> SDNOutput:
        values = policy.value_net(policy.value_tower(critic_latent)).squeeze(-1)
        return SDNOutput(stats=self.statistics(policy, latent), values=values, critic_latent=critic_latent)

    def advantage(self, policy: PolicyModules, critic_latent: th.Tensor, actions: th.Tensor) -> th.Tensor:
        """``A(x, a)`` for ``[N, L]`` latents and ``[N, ..., action_size]`` actions -> ``[N, ...]``."""
        extra = actions.shape[1:-1]
        latent = critic_latent.reshape(critic_latent.shape[0], *(1,) * len(extra), -1)
        latent = latent.expand(*critic_latent.shape[:1], *extra, critic_latent.shape[-1])
        inputs = th.cat([latent, policy.dist.encode(actions).to(latent.dtype)], -1)
        return policy.advantage_net(policy.advantage_tower(inputs)).squeeze(-1)

    def actions(self, policy: PolicyModules, latent: th.Tensor, deterministic: bool) -> th.Tensor:
        stats = self.statistics(policy, latent)
        return policy.dist.mode(stats) if deterministic else policy.dist.sample(stats)

    def behaviour(self, policy: PolicyModules, stats: th.Tensor) -> th.Tensor:
        return policy.dist.sample(stats)

    def sb3_forward(
        self, policy: PolicyModules, latent: th.Tensor, critic_latent: th.Tensor, deterministic: bool
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """Flat actions ``[N, action_size]``."""
        output = self.outputs(policy, latent, critic_latent)
        dist = policy.dist
        actions = dist.mode(output.stats) if deterministic else dist.sample(output.stats)
        log_prob = dist.log_prob(output.stats.unsqueeze(0), actions.unsqueeze(0))[0]
        return actions, output.values.unsqueeze(-1), log_prob

    def probability(
        self, policy: PolicyModules, stats: th.Tensor, actions: np.ndarray | None, logp: bool
    ) -> np.ndarray:
        """Without ``actions``: the flat statistics of ``pi(.|x)`` (``[n, S]``: the mean then the log-std for
        ``Box``, each factor's probabilities for the factorised spaces). With ``actions`` (in the action
        space's shape; ``Box`` actions unclipped): their density or probability ``[n, 1]`` (its log with
        ``logp``)."""
        if actions is None:
            return stats.cpu().numpy()
        dist = policy.dist
        flat = np.asarray(actions).reshape(stats.shape[0], dist.action_size)
        action_tensor = th.as_tensor(flat.astype(dist.action_dtype), device=stats.device)
        with th.no_grad():
            log_prob = dist.log_prob(stats.unsqueeze(0), action_tensor.unsqueeze(0))[0]
        return (log_prob if logp else log_prob.exp()).cpu().numpy().reshape(-1, 1)

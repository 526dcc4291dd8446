"""ACER policies for ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions: an actor and a stochastic dueling
network critic (paper section 4, eq. 13).

The actor outputs the statistics of the action distribution (:mod:`sb3_acer.common.distributions`): a diagonal
Gaussian's mean with either a learned state-independent log-std (SB3's ``log_std``) or the paper's fixed
``sigma`` (``fixed_std``), or each factor's probabilities. The critic outputs ``V(x)`` and an advantage
``A(x, a)`` from the critic's features and the action; ``Q~ = V + A(x, a) - mean_i A(x, u_i)`` is formed in
the update (:func:`sb3_acer.common.functional.continuous.stochastic_dueling_q`).
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.torch_layers import (
    BaseFeaturesExtractor,
    CombinedExtractor,
    FlattenExtractor,
    NatureCNN,
)
from stable_baselines3.common.type_aliases import PyTorchObs
from torch import nn

from sb3_acer.common.distributions import (
    ActionDistribution,
    DiagGaussian,
    Factorised,
    make_action_distribution,
)
from sb3_acer.policies.base import build_mlp, init_with_defaults, parse_net_arch

__all__ = ["SDNCnnPolicy", "SDNMlpPolicy", "SDNOutput", "SDNPolicy"]


class SDNOutput(NamedTuple):
    """What the update needs from the network for a batch of ``N`` observations.

    Attributes:
        stats: ``[N, S]`` flat statistics of ``pi(.|x)``.
        values: ``[N]`` ``V(x)``.
        critic_latent: ``[N, L]`` the critic's features, input of :meth:`SDNPolicy.advantage` with an action.
    """

    stats: th.Tensor
    values: th.Tensor
    critic_latent: th.Tensor


class SDNPolicy(BasePolicy):
    """Actor and stochastic-dueling critic for ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions.

    Args:
        observation_space: observation space.
        action_space: ``Box``, ``MultiDiscrete`` or ``MultiBinary``.
        net_arch: hidden layers after the feature extractor, as for :class:`~sb3_acer.policies.ACERPolicy`:
            shared layers and/or ``dict(pi=[...], qf=[...])``; the ``qf`` tower feeds ``V`` and, with the
            action appended to its input, ``A(x, a)``. Default ``dict(pi=[64, 64], qf=[64, 64])`` (``[]``
            over Nature-CNN features).
        activation_fn: activation of the hidden layers (default ``nn.Tanh``).
        ortho_init: orthogonal initialisation of the weights.
        log_std_init: initial log-std of a ``Box`` policy with a learned log-std (SB3's default 0).
        fixed_std: the paper's fixed ``sigma`` (0.3 on MuJoCo); ``None`` learns a state-independent log-std.
        features_extractor_class: SB3 feature extractor.
        features_extractor_kwargs: keyword arguments of the feature extractor.
        normalize_images: divide image observations by 255.

    Raises:
        ValueError: for another action space, or a non-positive ``fixed_std``.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        net_arch: list[Any] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.Tanh,
        ortho_init: bool = True,
        log_std_init: float = 0.0,
        fixed_std: float | None = None,
        features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
    ) -> None:
        if fixed_std is not None and not fixed_std > 0:
            raise ValueError(f"fixed_std must be positive, got {fixed_std}")
        super().__init__(
            observation_space,
            action_space,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            normalize_images=normalize_images,
        )
        self.dist: ActionDistribution = make_action_distribution(
            action_space, learn_log_std=fixed_std is None
        )
        if net_arch is None:
            net_arch = (
                [] if issubclass(features_extractor_class, NatureCNN) else dict(pi=[64, 64], qf=[64, 64])
            )
        self.net_arch = net_arch
        self.activation_fn = activation_fn
        self.ortho_init = ortho_init
        self.log_std_init = log_std_init
        self.fixed_std = fixed_std
        shared_layers, pi_layers, qf_layers = parse_net_arch(net_arch)
        self.features_extractor = self.make_features_extractor()
        self.features_dim = self.features_extractor.features_dim
        trunk_dim = self.build_trunk(self.features_dim)
        self.shared_net, latent_dim = build_mlp(trunk_dim, shared_layers, activation_fn)
        self.pi_net, pi_dim = build_mlp(latent_dim, pi_layers, activation_fn)
        self.value_tower, critic_dim = build_mlp(latent_dim, qf_layers, activation_fn)
        self.value_net = nn.Linear(critic_dim, 1)
        adv_layers = qf_layers or [64]
        self.advantage_tower, adv_dim = build_mlp(
            latent_dim + self.dist.encoding_size, adv_layers, activation_fn
        )
        self.advantage_net = nn.Linear(adv_dim, 1)
        if isinstance(self.dist, DiagGaussian):
            self.action_net = nn.Linear(pi_dim, self.dist.dim)
            initial = math.log(fixed_std) if fixed_std is not None else log_std_init
            log_std = th.full((self.dist.dim,), float(initial))
            if fixed_std is None:
                self.log_std = nn.Parameter(log_std)
            else:
                self.register_buffer("log_std", log_std)
        else:
            self.action_net = nn.Linear(pi_dim, self.dist.stats_size)
        if ortho_init:
            for module, gain in {
                self.features_extractor: np.sqrt(2),
                self.shared_net: np.sqrt(2),
                self.pi_net: np.sqrt(2),
                self.value_tower: np.sqrt(2),
                self.advantage_tower: np.sqrt(2),
                self.action_net: 0.01,
                self.value_net: 1.0,
                self.advantage_net: 1.0,
            }.items():
                module.apply(partial(self.init_weights, gain=gain))

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(
            net_arch=self.net_arch,
            activation_fn=self.activation_fn,
            ortho_init=self.ortho_init,
            log_std_init=self.log_std_init,
            fixed_std=self.fixed_std,
            features_extractor_class=self.features_extractor_class,
            features_extractor_kwargs=self.features_extractor_kwargs,
        )
        return data

    def build_trunk(self, features_dim: int) -> int:
        """Build what sits between the features and the shared layers; returns its output size. Nothing
        here (recurrent subclasses put their LSTM there)."""
        return features_dim

    def critic_parameters(self) -> list[nn.Parameter]:
        """The parameters only the critic uses (``V`` and ``A`` towers and heads), for ``q_lr_ratio``."""
        modules = (self.value_tower, self.value_net, self.advantage_tower, self.advantage_net)
        return [p for module in modules for p in module.parameters()]

    def latent(self, obs: PyTorchObs) -> th.Tensor:
        """``[N, L]`` the shared latent of a batch of observations, input of :meth:`evaluate_latent`."""
        return self.shared_net(self.extract_features(obs, self.features_extractor))

    def latent_statistics(self, latent: th.Tensor) -> th.Tensor:
        """``[N, S]`` statistics of ``pi(.|x)`` from ``[N, L]`` shared latents."""
        head = self.action_net(self.pi_net(latent))
        if isinstance(self.dist, Factorised):
            return self.dist.statistics(head)
        return th.cat([head, self.log_std.expand_as(head)], -1)

    def statistics(self, obs: PyTorchObs) -> th.Tensor:
        """``[N, S]`` flat statistics of ``pi(.|x)`` (the critic is not evaluated)."""
        return self.latent_statistics(self.latent(obs))

    def evaluate(self, obs: PyTorchObs) -> SDNOutput:
        """The statistics, ``V(x)`` and the critic's latent of a batch of observations."""
        return self.evaluate_latent(self.latent(obs))

    def evaluate_latent(self, latent: th.Tensor) -> SDNOutput:
        """The statistics, ``V(x)`` and the critic's latent from ``[N, L]`` shared latents."""
        values = self.value_net(self.value_tower(latent)).squeeze(-1)
        return SDNOutput(stats=self.latent_statistics(latent), values=values, critic_latent=latent)

    def advantage(self, critic_latent: th.Tensor, actions: th.Tensor) -> th.Tensor:
        """``A(x, a)`` for ``[N, L]`` latents and ``[N, ..., action_size]`` actions -> ``[N, ...]``."""
        extra = actions.shape[1:-1]
        latent = critic_latent.reshape(critic_latent.shape[0], *(1,) * len(extra), -1)
        latent = latent.expand(*critic_latent.shape[:1], *extra, critic_latent.shape[-1])
        inputs = th.cat([latent, self.dist.encode(actions).to(latent.dtype)], -1)
        return self.advantage_net(self.advantage_tower(inputs)).squeeze(-1)

    def forward(self, obs: PyTorchObs, deterministic: bool = False) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """SB3's ``(actions, values, log_prob)``: flat actions ``[N, action_size]``, ``V(x)`` ``[N, 1]`` and
        ``log pi(a|x)`` ``[N]``."""
        output = self.evaluate(obs)
        actions = self.dist.mode(output.stats) if deterministic else self.dist.sample(output.stats)
        log_prob = self.dist.log_prob(output.stats.unsqueeze(0), actions.unsqueeze(0))[0]
        return actions, output.values.unsqueeze(-1), log_prob

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        stats = self.statistics(observation)
        return self.dist.mode(stats) if deterministic else self.dist.sample(stats)


class SDNMlpPolicy(SDNPolicy):
    """:class:`SDNPolicy` over flattened observations (64-64 tanh towers)."""


class SDNCnnPolicy(SDNPolicy):
    """:class:`SDNPolicy` over images: Nature-CNN features (512) shared by the actor and the critic (ReLU)."""

    __init__ = init_with_defaults(
        SDNPolicy.__init__, activation_fn=nn.ReLU, features_extractor_class=NatureCNN
    )


class SDNMultiInputPolicy(SDNPolicy):
    """:class:`SDNPolicy` over ``Dict`` observations: SB3's ``CombinedExtractor``, then 64-64 tanh towers."""

    __init__ = init_with_defaults(SDNPolicy.__init__, features_extractor_class=CombinedExtractor)

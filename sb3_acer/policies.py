"""ACER actor-critic policies: a softmax policy head and a Q-value head over a shared feature extractor.

``MlpPolicy`` follows SB2's default: two separate tanh towers of 64-64 units (one for the policy, one for
``Q``) over flattened observations. ``CnnPolicy`` puts both heads directly on the Nature-CNN features
(512 units), as SB2 does. Weights use orthogonal initialisation (gain ``sqrt(2)`` for hidden layers,
0.01 for both heads).
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.torch_layers import (
    BaseFeaturesExtractor,
    FlattenExtractor,
    MlpExtractor,
    NatureCNN,
)
from stable_baselines3.common.type_aliases import PyTorchObs
from torch import nn

__all__ = ["ACERPolicy", "CnnPolicy", "MlpPolicy", "PolicyOutput", "parse_net_arch"]


class PolicyOutput(NamedTuple):
    """What the network computes for a batch of observations.

    Attributes:
        logits: ``[N, A]`` unnormalised log-probabilities of the policy.
        q_values: ``[N, A]`` action values ``Q(x, .)``.
    """

    logits: th.Tensor
    q_values: th.Tensor


def _layer_sizes(value: Any, where: str) -> list[int]:
    if not isinstance(value, list | tuple) or not all(
        isinstance(size, int | np.integer) and not isinstance(size, bool) and size > 0 for size in value
    ):
        raise ValueError(f"net_arch: {where} must be a list of positive layer sizes, got {value!r}")
    return [int(size) for size in value]


def parse_net_arch(net_arch: Any) -> tuple[list[int], list[int], list[int]]:
    """Split an SB2-style ``net_arch`` into (shared layers, policy tower, Q tower).

    ``[64, 64]`` -> shared ``[64, 64]``; ``dict(pi=[64], qf=[64])`` -> separate towers;
    ``[64, dict(pi=[32], qf=[32])]`` -> both. ``vf`` is accepted as SB2's name for ``qf``.

    Raises:
        ValueError: for any other form.
    """
    if isinstance(net_arch, dict):
        shared: list[Any] = []
        towers: dict[str, Any] | None = net_arch
    elif isinstance(net_arch, list | tuple):
        if net_arch and isinstance(net_arch[-1], dict):
            shared, towers = list(net_arch[:-1]), net_arch[-1]
        else:
            shared, towers = list(net_arch), None
    else:
        raise ValueError(f"net_arch must be a list or a dict, got {net_arch!r}")
    shared_layers = _layer_sizes(shared, "the shared part")
    if towers is None:
        return shared_layers, [], []
    unknown = set(towers) - {"pi", "qf", "vf"}
    if unknown or ("qf" in towers and "vf" in towers):
        raise ValueError(f"net_arch dict keys must be 'pi' and 'qf' (or 'vf'), got {sorted(towers)}")
    pi_layers = _layer_sizes(towers.get("pi", []), "pi")
    qf_layers = _layer_sizes(towers.get("qf", towers.get("vf", [])), "qf")
    return shared_layers, pi_layers, qf_layers


class ACERPolicy(BasePolicy):
    """Feed-forward ACER policy: ``pi(.|x) = softmax(logits(x))`` and ``Q(x, .)``.

    Args:
        observation_space: observation space (``Box``, ``Discrete``, ``MultiDiscrete`` or ``MultiBinary``).
        action_space: a ``Discrete`` action space.
        net_arch: hidden layers after the feature extractor, SB2 style: a list of ints gives layers shared
            by both heads, ``dict(pi=[...], qf=[...])`` separate towers (``vf`` is accepted for ``qf``, as
            in SB2), and a list of ints ending with such a dict both, e.g.
            ``[64, dict(pi=[32], qf=[32])]``. Default ``dict(pi=[64, 64], qf=[64, 64])`` for vector
            inputs, ``[]`` for images.
        activation_fn: activation of the hidden layers (default ``nn.Tanh``).
        ortho_init: orthogonal initialisation of the weights.
        features_extractor_class: SB3 feature extractor (``FlattenExtractor`` or ``NatureCNN``, ...).
        features_extractor_kwargs: keyword arguments of the feature extractor.
        normalize_images: divide image observations by 255.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.Tanh,
        ortho_init: bool = True,
        features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
    ) -> None:
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(f"ACER policies need a Discrete action space, got {action_space}")
        super().__init__(
            observation_space,
            action_space,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            normalize_images=normalize_images,
        )
        if net_arch is None:
            net_arch = (
                [] if issubclass(features_extractor_class, NatureCNN) else dict(pi=[64, 64], qf=[64, 64])
            )
        shared_layers, pi_layers, qf_layers = parse_net_arch(net_arch)
        self.net_arch = net_arch
        self.activation_fn = activation_fn
        self.ortho_init = ortho_init
        self.n_actions = int(action_space.n)

        self.features_extractor = self.make_features_extractor()
        self.features_dim = self.features_extractor.features_dim
        shared: list[nn.Module] = []
        latent_dim = self.features_dim
        for size in shared_layers:
            shared += [nn.Linear(latent_dim, size), activation_fn()]
            latent_dim = size
        self.shared_net = nn.Sequential(*shared)
        self.mlp_extractor = MlpExtractor(
            latent_dim, net_arch=dict(pi=pi_layers, vf=qf_layers), activation_fn=activation_fn
        )
        self.action_net = nn.Linear(self.mlp_extractor.latent_dim_pi, self.n_actions)
        self.q_net = nn.Linear(self.mlp_extractor.latent_dim_vf, self.n_actions)
        if ortho_init:
            gains = {
                self.features_extractor: np.sqrt(2),
                self.shared_net: np.sqrt(2),
                self.mlp_extractor: np.sqrt(2),
                self.action_net: 0.01,
                self.q_net: 0.01,
            }
            for module, gain in gains.items():
                module.apply(partial(self.init_weights, gain=gain))

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(net_arch=self.net_arch, activation_fn=self.activation_fn, ortho_init=self.ortho_init)
        return data

    def forward(self, obs: PyTorchObs) -> PolicyOutput:
        """Policy logits and action values for a batch of (unprocessed) observations."""
        features = self.shared_net(self.extract_features(obs, self.features_extractor))
        latent_pi, latent_q = self.mlp_extractor(features)
        return PolicyOutput(logits=self.action_net(latent_pi), q_values=self.q_net(latent_q))

    def action_probs(self, obs: PyTorchObs) -> th.Tensor:
        """``[N, A]`` action probabilities ``pi(.|x)``."""
        return th.softmax(self.forward(obs).logits, dim=-1)

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        logits = self.forward(observation).logits
        if deterministic:
            return logits.argmax(dim=-1)
        return th.distributions.Categorical(logits=logits).sample()


class MlpPolicy(ACERPolicy):
    """ACER policy over flattened observations (two 64-64 tanh towers, as SB2's ``MlpPolicy``)."""


class CnnPolicy(ACERPolicy):
    """ACER policy over images: Nature-CNN features (512) shared by the policy and Q heads."""

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        net_arch: list[int] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.ReLU,
        ortho_init: bool = True,
        features_extractor_class: type[BaseFeaturesExtractor] = NatureCNN,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
    ) -> None:
        super().__init__(
            observation_space,
            action_space,
            net_arch=net_arch,
            activation_fn=activation_fn,
            ortho_init=ortho_init,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            normalize_images=normalize_images,
        )

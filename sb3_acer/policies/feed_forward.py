"""Feed-forward ACER policies: a softmax policy head and a Q-value head over a shared feature extractor.

``MlpPolicy`` follows SB2's default: two separate tanh towers of 64-64 units (one for the policy, one for
``Q``) over flattened observations. ``CnnPolicy`` puts both heads directly on the Nature-CNN features
(512 units), as SB2 does. ``MultiInputPolicy`` takes ``Dict`` observations through SB3's
``CombinedExtractor``, with ``MlpPolicy``'s towers, as SB3's ``MultiInputPolicy`` of A2C and PPO. Weights
use orthogonal initialisation (gain ``sqrt(2)`` for hidden layers, 0.01 for both heads).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.torch_layers import (
    BaseFeaturesExtractor,
    CombinedExtractor,
    FlattenExtractor,
    NatureCNN,
)
from stable_baselines3.common.type_aliases import PyTorchObs
from torch import nn

from sb3_acer.policies.base import (
    BaseACERPolicy,
    PolicyOutput,
    build_mlp,
    init_with_defaults,
    parse_net_arch,
    select_actions,
)

__all__ = ["ACERPolicy", "CnnPolicy", "MlpPolicy", "MultiInputPolicy"]


class ACERPolicy(BaseACERPolicy):
    """Feed-forward ACER policy: ``pi(.|x) = softmax(logits(x))`` and ``Q(x, .)``.

    Args:
        observation_space: observation space (``Box``, ``Discrete``, ``MultiDiscrete`` or ``MultiBinary``;
            a ``Dict`` of them with a features extractor of dicts, such as ``CombinedExtractor``).
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
        super().__init__(
            observation_space,
            action_space,
            activation_fn=activation_fn,
            ortho_init=ortho_init,
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
        self.build_features_extractor()
        self.shared_net, latent_dim = build_mlp(self.features_dim, shared_layers, activation_fn)
        self.build_heads(latent_dim, pi_layers, qf_layers)
        if ortho_init:
            self.init_weights_with_gains(
                {
                    self.features_extractor: np.sqrt(2),
                    self.shared_net: np.sqrt(2),
                    self.mlp_extractor: np.sqrt(2),
                    self.action_net: 0.01,
                    self.q_net: 0.01,
                }
            )

    def logits_and_q_values(self, obs: PyTorchObs) -> PolicyOutput:
        """Policy logits and action values for a batch of (unprocessed) observations: what ACER's update
        computes."""
        features = self.shared_net(self.extract_features(obs, self.features_extractor))
        latent_pi, latent_q = self.mlp_extractor(features)
        return PolicyOutput(logits=self.action_net(latent_pi), q_values=self.q_net(latent_q))

    def forward(self, obs: PyTorchObs, deterministic: bool = False) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """As SB3's ``ActorCriticPolicy.forward``: actions (``[N]``, the most probable ones if
        ``deterministic``), values ``V(x) = sum_a pi(a|x) Q(x, a)`` (``[N, 1]``) and the log-probabilities of
        the actions (``[N]``), so that SB3's ONNX export recipe, ``policy(obs, deterministic=True)``,
        works as written. The actions are those of ``predict``."""
        logits, q_values = self.logits_and_q_values(obs)
        actions = select_actions(logits, deterministic)
        log_probs = th.log_softmax(logits, dim=-1)
        values = (log_probs.exp() * q_values).sum(dim=-1, keepdim=True)
        return actions, values, log_probs.gather(-1, actions.unsqueeze(-1)).squeeze(-1)

    def policy_logits(self, obs: PyTorchObs) -> th.Tensor:
        """``[N, A]`` policy logits only (the Q tower is not evaluated)."""
        features = self.shared_net(self.extract_features(obs, self.features_extractor))
        return self.action_net(self.mlp_extractor.forward_actor(features))

    def action_probs(self, obs: PyTorchObs) -> th.Tensor:
        """``[N, A]`` action probabilities ``pi(.|x)``."""
        return th.softmax(self.policy_logits(obs), dim=-1)

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        return select_actions(self.logits_and_q_values(observation).logits, deterministic)


class MlpPolicy(ACERPolicy):
    """ACER policy over flattened observations (two 64-64 tanh towers, as SB2's ``MlpPolicy``)."""


class CnnPolicy(ACERPolicy):
    """ACER policy over images: Nature-CNN features (512) shared by the policy and Q heads (ReLU)."""

    __init__ = init_with_defaults(
        ACERPolicy.__init__, activation_fn=nn.ReLU, features_extractor_class=NatureCNN
    )


class MultiInputPolicy(ACERPolicy):
    """ACER policy over ``Dict`` observations: SB3's ``CombinedExtractor`` (a Nature-CNN for each image
    key, ``cnn_output_dim=256`` features each, the other keys flattened, all concatenated), then two 64-64
    tanh towers, as SB3's ``MultiInputPolicy`` (image keys are divided by 255 unless
    ``normalize_images=False``)."""

    __init__ = init_with_defaults(ACERPolicy.__init__, features_extractor_class=CombinedExtractor)

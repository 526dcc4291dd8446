"""The one ACER policy: features -> (recurrent trunk) -> shared layers -> the action space's head.

:class:`ACERPolicy` is every policy ACER builds. What differs between the action families is its *head*,
chosen from the action space (:func:`head_for`): a softmax ``pi`` and a ``Q`` of every action for
``Discrete`` (:class:`~sb3_acer.common.policies.categorical.CategoricalHead`), an actor and the stochastic
dueling critic for ``Box``, ``MultiDiscrete`` and ``MultiBinary``
(:class:`~sb3_acer.common.policies.sdn.DuelingHead`). Recurrence is one subclass,
:class:`~sb3_acer.common.policies.lstm.RecurrentACERPolicy`, that puts an LSTM between the features and the
shared layers. The module names (``shared_net``, ``action_net``, ...) are the model files' state-dict keys.

The ``net_arch`` parser and the protocols of a policy's modules and of a head are in
:mod:`~sb3_acer.common.policies.layout`.
"""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.torch_layers import (
    BaseFeaturesExtractor,
    CombinedExtractor,
    FlattenExtractor,
    MlpExtractor,
    NatureCNN,
)
from stable_baselines3.common.type_aliases import PyTorchObs
from torch import nn

from sb3_acer.common.distributions import ActionDistribution, Categorical, make_action_distribution
from sb3_acer.common.observations import ObservationArrays
from sb3_acer.common.policies.categorical import CategoricalHead
from sb3_acer.common.policies.layout import (
    ActionHead,
    Layers,
    build_mlp,
    init_with_defaults,
    parse_net_arch,
)
from sb3_acer.common.policies.sdn import DuelingHead

__all__ = [
    "SDN_KEYWORDS",
    "ACERPolicy",
    "CnnPolicy",
    "MlpPolicy",
    "MultiInputPolicy",
    "head_for",
    "keywords_not_taken",
]

#: The keywords only the heads of ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions take.
SDN_KEYWORDS = ("log_std_init", "fixed_std")


def keywords_not_taken(action_space: spaces.Space | None) -> tuple[str, ...]:
    """The policy keywords the head of ``action_space`` does not take (``None``: any space): the ``Box``
    head's (:data:`SDN_KEYWORDS`) for ``Discrete`` actions."""
    return SDN_KEYWORDS if isinstance(action_space, spaces.Discrete) else ()


def head_for(dist: ActionDistribution, fixed_std: float | None, log_std_init: float) -> ActionHead:
    """The head of ``dist``'s action family.

    Raises:
        ValueError: for ``fixed_std`` or ``log_std_init`` given with ``Discrete`` actions, or a
            non-positive ``fixed_std``.
    """
    if isinstance(dist, Categorical):
        if fixed_std is not None or log_std_init != 0.0:
            raise ValueError(f"{' and '.join(SDN_KEYWORDS)} are for Box actions, not {dist.space}")
        return CategoricalHead()
    return DuelingHead(fixed_std, log_std_init)


class ACERPolicy(BasePolicy):
    """ACER's actor-critic for every action space: features -> shared layers -> the head of the space.

    For ``Discrete`` actions ``pi(.|x) = softmax(logits(x))`` and ``Q(x, .)``; for ``Box``, ``MultiDiscrete``
    and ``MultiBinary`` actions the statistics of the action distribution (a diagonal Gaussian's mean with a
    learned state-independent log-std or the paper's fixed ``sigma``; each factor's probabilities) and a
    stochastic dueling critic ``V(x)`` and ``A(x, a)`` (paper eq. 13). Weights use orthogonal initialisation
    (hidden layers gain ``sqrt(2)``, the policy head 0.01, ``V`` and ``A`` 1).

    The ``device`` is remembered instead of found by walking ``parameters()`` on every call (ACER asks for
    it several times per update); moving the module (``to``, ``cuda``, ... all go through ``_apply``)
    forgets it.

    Args:
        observation_space: observation space (``Box``, ``Discrete``, ``MultiDiscrete`` or ``MultiBinary``;
            a ``Dict`` of them with a features extractor of dicts, such as ``CombinedExtractor``).
        action_space: ``Discrete``, ``Box``, ``MultiDiscrete`` or ``MultiBinary``.
        net_arch: hidden layers after the feature extractor, SB2 style: a list of ints gives layers shared
            by both heads, ``dict(pi=[...], qf=[...])`` separate towers (``vf`` is accepted for ``qf``, as
            in SB2), and a list of ints ending with such a dict both, e.g. ``[64, dict(pi=[32], qf=[32])]``;
            the ``qf`` tower feeds ``Q`` (or ``V`` and, with the action appended, ``A``). Default
            ``dict(pi=[64, 64], qf=[64, 64])`` for vector inputs, ``[]`` over Nature-CNN features.
        activation_fn: activation of the hidden layers (default ``nn.Tanh``).
        ortho_init: orthogonal initialisation of the weights.
        features_extractor_class: SB3 feature extractor (``FlattenExtractor`` or ``NatureCNN``, ...).
        features_extractor_kwargs: keyword arguments of the feature extractor.
        normalize_images: divide image observations by 255.
        log_std_init: initial log-std of a ``Box`` policy with a learned log-std (SB3's default 0).
        fixed_std: the paper's fixed ``sigma`` (0.3 on MuJoCo) of a ``Box`` policy; ``None`` learns a
            state-independent log-std.
        share_features_extractor: one features extractor for the actor and the critic (SB2's network);
            ``False`` gives the critic (``Q``, or ``V`` and ``A``) its own, ``critic_features_extractor``,
            as SB3's ``ActorCriticPolicy`` (the ``net_arch`` then has no shared layers, only towers).

    Raises:
        ValueError: for another action space, a non-positive ``fixed_std``, ``fixed_std`` /
            ``log_std_init`` with ``Discrete`` actions, or shared layers with
            ``share_features_extractor=False``.
    """

    #: Whether the policy carries an LSTM state (:class:`~sb3_acer.common.policies.lstm.RecurrentACERPolicy`).
    recurrent: ClassVar[bool] = False
    _cached_device: th.device | None = None
    dist: ActionDistribution
    shared_net: nn.Sequential
    # The modules the heads build (their names are the state-dict keys of the model files).
    action_net: nn.Linear
    mlp_extractor: MlpExtractor  # Discrete: the pi and Q towers
    q_net: nn.Linear
    pi_net: nn.Sequential  # the others: the actor's tower, V, A(x, a), the log-std
    value_tower: nn.Sequential
    value_net: nn.Linear
    advantage_tower: nn.Sequential
    advantage_net: nn.Linear
    log_std: th.Tensor

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        net_arch: list[Any] | dict[str, list[int]] | None = None,
        activation_fn: type[nn.Module] = nn.Tanh,
        ortho_init: bool = True,
        features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        log_std_init: float = 0.0,
        fixed_std: float | None = None,
        share_features_extractor: bool = True,
    ) -> None:
        if fixed_std is not None and not fixed_std > 0:
            raise ValueError(f"fixed_std must be positive, got {fixed_std}")
        dist = make_action_distribution(action_space, learn_log_std=fixed_std is None)
        head = head_for(dist, fixed_std, log_std_init)
        if net_arch is None:
            net_arch = self.default_net_arch(features_extractor_class)
        layers = self.parse_layers(net_arch)
        if not share_features_extractor and layers.shared:
            raise ValueError(
                "share_features_extractor=False gives the critic its own features extractor: net_arch can "
                "have no layers shared by the actor and the critic, only dict(pi=[...], qf=[...]), "
                f"got {net_arch!r}"
            )
        super().__init__(
            observation_space,
            action_space,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            normalize_images=normalize_images,
        )
        self.dist, self.head = dist, head
        self.net_arch = net_arch
        self.activation_fn = activation_fn
        self.ortho_init = ortho_init
        self.log_std_init = log_std_init
        self.fixed_std = fixed_std
        self.share_features_extractor = bool(share_features_extractor)
        self.features_extractor = self.make_features_extractor()
        self.features_dim = self.features_extractor.features_dim
        if not self.share_features_extractor:
            self.critic_features_extractor = self.make_features_extractor()
        trunk_dim = self.build_trunk(self.features_dim, layers.before)
        self.shared_net, latent_dim = build_mlp(trunk_dim, layers.shared, activation_fn)
        head.build(self, latent_dim, layers.pi, layers.qf)
        if ortho_init:
            gains = head.init_gains(self, self.trunk_modules())
            if not self.share_features_extractor:
                gains[self.critic_features_extractor] = np.sqrt(2)
            for module, gain in gains.items():
                module.apply(partial(self.init_weights, gain=gain))
            self.init_trunk()

    # ------------------------------------------------------------ what a recurrent policy changes

    @staticmethod
    def default_net_arch(features_extractor_class: type[BaseFeaturesExtractor]) -> Any:
        """The ``net_arch`` of SB2's policies: heads directly on Nature-CNN features, else 64-64 towers."""
        return [] if issubclass(features_extractor_class, NatureCNN) else dict(pi=[64, 64], qf=[64, 64])

    def parse_layers(self, net_arch: Any) -> Layers:
        """``net_arch`` parsed (:func:`parse_net_arch`; nothing before an LSTM)."""
        return Layers([], *parse_net_arch(net_arch))

    def build_trunk(self, features_dim: int, before: list[int]) -> int:
        """Build what sits between the features and the shared layers; returns its output size."""
        del before
        return features_dim

    def trunk_modules(self) -> list[nn.Module]:
        """The trunk's layers initialised with gain ``sqrt(2)`` (none here)."""
        return []

    def init_trunk(self) -> None:
        """The trunk's own initialisation, after every other module's (nothing here)."""

    def latent(self, obs: PyTorchObs) -> th.Tensor:
        """``[N, L]`` the shared latent of a batch of (unprocessed) observations (the actor's alone with
        ``share_features_extractor=False``)."""
        return self.shared_net(self.extract_features(obs, self.features_extractor))

    def latents(self, obs: PyTorchObs) -> tuple[th.Tensor, th.Tensor]:
        """The actor's and the critic's ``[N, L]`` latents (one tensor unless
        ``share_features_extractor=False``)."""
        latent = self.latent(obs)
        if self.share_features_extractor:
            return latent, latent
        return latent, self.extract_features(obs, self.critic_features_extractor)

    def step_statistics(self, obs: PyTorchObs, state: Any, episode_starts: Any) -> tuple[th.Tensor, Any]:
        """``[B, S]`` statistics of ``pi(.|x)`` for one step of ``B`` envs, and the next recurrent state
        (``None`` here: ``state`` and ``episode_starts`` are for recurrent policies)."""
        del state, episode_starts
        return self.statistics(obs), None

    # ------------------------------------------------------------ what the update and the rollout read

    def evaluate(self, obs: PyTorchObs) -> tuple[th.Tensor, ...]:
        """The head's outputs of a batch of observations (``PolicyOutput(logits, q_values)`` for
        ``Discrete`` actions, ``SDNOutput(stats, values, critic_latent)`` for the others)."""
        return self.head.outputs(self, *self.latents(obs))

    def statistics(self, obs: PyTorchObs) -> th.Tensor:
        """``[N, S]`` flat statistics of ``pi(.|x)`` (probabilities for ``Discrete`` actions); the critic is
        not evaluated."""
        return self.head.statistics(self, self.latent(obs))

    def behaviour(
        self, obs: PyTorchObs, state: Any, episode_starts: th.Tensor
    ) -> tuple[th.Tensor, th.Tensor, Any]:
        """One rollout step (no gradient): the actions drawn from ``pi(.|x)``, their statistics ``mu`` and
        the next recurrent state."""
        with th.no_grad():
            stats, next_state = self.step_statistics(obs, state, episode_starts)
            return self.head.behaviour(self, stats), stats, next_state

    def critic_parameters(self) -> list[nn.Parameter]:
        """The parameters only the critic uses (the ``qf`` tower and ``Q``, or ``V`` and ``A``).

        Everything else (features extractor, shared layers, LSTM, ``pi`` tower, policy head) serves the
        policy, alone or with the critic. ``ACER(q_lr_ratio=...)`` gives these parameters their own step.
        """
        modules = self.head.critic_modules(self)
        if not self.share_features_extractor:
            modules.append(self.critic_features_extractor)
        return [p for module in modules for p in module.parameters()]

    def forward(self, obs: PyTorchObs, deterministic: bool = False) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """As SB3's ``ActorCriticPolicy.forward``: actions (the most probable ones if ``deterministic``,
        those of ``predict``), values ``V(x)`` (``[N, 1]``) and ``log pi(a|x)`` (``[N]``), so that SB3's ONNX
        export recipe, ``policy(obs, deterministic=True)``, works as written."""
        return self.head.sb3_forward(self, *self.latents(obs), deterministic)

    def _predict(self, observation: PyTorchObs, deterministic: bool = False) -> th.Tensor:
        return self.head.actions(self, self.latent(observation), deterministic)

    def action_probability(
        self,
        observation: ObservationArrays,
        actions: np.ndarray | None,
        logp: bool,
        state: tuple[np.ndarray, ...] | None = None,
        mask: np.ndarray | None = None,
    ) -> np.ndarray:
        """SB2's ``action_probability`` (see ``ACER.action_probability``): the probabilities (``Discrete``)
        or flat statistics of ``pi(.|x)``, ``[n, S]``; with ``actions`` (one per observation) their
        probability or density ``[n, 1]`` (its log with ``logp``). A single observation drops the batch
        axis. A recurrent policy takes the ``state`` returned by ``predict`` and the episode starts
        ``mask``."""
        obs_tensor, vectorized, lstm_state, starts = self.prepare_inputs(observation, state, mask)
        with th.no_grad():
            stats = self.step_statistics(obs_tensor, lstm_state, starts)[0]
        result = self.head.probability(self, stats, actions, logp)
        return result if vectorized else result[0]

    def prepare_inputs(
        self, observation: ObservationArrays, state: Any, episode_start: np.ndarray | None
    ) -> tuple[PyTorchObs, bool, Any, th.Tensor | None]:
        """The observation as a tensor and whether it was a batch (a recurrent policy adds the state and
        the episode starts)."""
        del state, episode_start
        obs_tensor, vectorized = self.obs_to_tensor(observation)
        return obs_tensor, vectorized, None, None

    def _get_constructor_parameters(self) -> dict[str, Any]:
        """What the policy is built from (SB3's ``policy.save`` / ``Policy.load`` rebuild it from it)."""
        data = super()._get_constructor_parameters()
        data.update(
            net_arch=self.net_arch,
            activation_fn=self.activation_fn,
            ortho_init=self.ortho_init,
            features_extractor_class=self.features_extractor_class,
            features_extractor_kwargs=self.features_extractor_kwargs,
        )
        if not isinstance(self.action_space, spaces.Discrete):
            data.update(log_std_init=self.log_std_init, fixed_std=self.fixed_std)
        if not self.share_features_extractor:
            data.update(share_features_extractor=False)
        return data

    @property
    def device(self) -> th.device:
        if self._cached_device is None:
            self._cached_device = super().device
        return self._cached_device

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        self._cached_device = None
        return super()._apply(fn, recurse)


class MlpPolicy(ACERPolicy):
    """ACER policy over flattened observations (two 64-64 tanh towers, as SB2's ``MlpPolicy``)."""


class CnnPolicy(ACERPolicy):
    """ACER policy over images: Nature-CNN features (512) shared by the policy and the critic (ReLU)."""

    __init__ = init_with_defaults(
        ACERPolicy.__init__, activation_fn=nn.ReLU, features_extractor_class=NatureCNN
    )


class MultiInputPolicy(ACERPolicy):
    """ACER policy over ``Dict`` observations: SB3's ``CombinedExtractor`` (a Nature-CNN for each image
    key, ``cnn_output_dim=256`` features each, the other keys flattened, all concatenated), then two 64-64
    tanh towers, as SB3's ``MultiInputPolicy`` of A2C and PPO (image keys are divided by 255 unless
    ``normalize_images=False``)."""

    __init__ = init_with_defaults(ACERPolicy.__init__, features_extractor_class=CombinedExtractor)

"""Recurrent stochastic-dueling policies: an LSTM between the features and the actor and critic of
:class:`~sb3_acer.policies.sdn.SDNPolicy`, for ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions.

``MlpLstmPolicy``, ``MlpLnLstmPolicy``, ``CnnLstmPolicy``, ``CnnLnLstmPolicy`` and ``MultiInputLstmPolicy``
build these for such action spaces (``SDNMlpLstmPolicy`` and so on), with the same network before the LSTM
as for ``Discrete`` actions (flatten -> 64 -> 64 -> LSTM(256), or Nature-CNN -> LSTM(256)). The memory is
used as by :class:`~sb3_acer.policies.recurrent.RecurrentACERPolicy`: carried across segments, reset where
an episode starts, stored with each segment so that the update unrolls from it.
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

from sb3_acer.common.observations import leading_shape, map_observations
from sb3_acer.policies.base import build_mlp, init_with_defaults
from sb3_acer.policies.recurrent import (
    LSTMMemory,
    LSTMState,
    check_n_lstm,
    init_lstm,
    make_lstm,
    parse_recurrent_net_arch,
)
from sb3_acer.policies.sdn import SDNOutput, SDNPolicy

__all__ = [
    "RecurrentSDNPolicy",
    "SDNCnnLnLstmPolicy",
    "SDNCnnLstmPolicy",
    "SDNMlpLnLstmPolicy",
    "SDNMlpLstmPolicy",
    "SDNMultiInputLstmPolicy",
]


class RecurrentSDNPolicy(LSTMMemory, SDNPolicy):
    """Features -> layers -> LSTM -> layers -> the actor and the stochastic dueling critic.

    Args:
        observation_space: observation space.
        action_space: ``Box``, ``MultiDiscrete`` or ``MultiBinary``.
        n_lstm: number of LSTM units.
        layer_norm: use the layer-normalised LSTM (SB2's ``Ln`` policies).
        net_arch: SB2-style list with exactly one ``'lstm'``, as for
            :class:`~sb3_acer.policies.recurrent.RecurrentACERPolicy`: sizes before it are layers between the
            features and the LSTM, sizes after it layers shared by the actor and the critic, and a final
            ``dict(pi=[...], qf=[...])`` separate towers (``qf`` feeds ``V`` and, with the action, ``A``).
            Default ``[64, 64, 'lstm']`` for vector inputs, ``['lstm']`` for images.
        activation_fn: activation of the hidden layers (default ``nn.Tanh``).
        ortho_init: orthogonal initialisation (as :class:`~sb3_acer.policies.sdn.SDNPolicy`; the LSTM's
            weights with gain 1 and zero biases).
        log_std_init: initial log-std of a ``Box`` policy with a learned log-std.
        fixed_std: the paper's fixed ``sigma``; ``None`` learns a state-independent log-std.
        features_extractor_class: SB3 feature extractor.
        features_extractor_kwargs: keyword arguments of the feature extractor.
        normalize_images: divide image observations by 255.

    Raises:
        ValueError: for a ``net_arch`` without exactly one ``'lstm'``, a non-positive ``n_lstm``, or as
            :class:`~sb3_acer.policies.sdn.SDNPolicy`.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        n_lstm: int = 256,
        layer_norm: bool = False,
        net_arch: list[Any] | None = None,
        activation_fn: type[nn.Module] = nn.Tanh,
        ortho_init: bool = True,
        log_std_init: float = 0.0,
        fixed_std: float | None = None,
        features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
    ) -> None:
        if net_arch is None:
            net_arch = ["lstm"] if issubclass(features_extractor_class, NatureCNN) else [64, 64, "lstm"]
        before, after, pi_layers, qf_layers = parse_recurrent_net_arch(net_arch)
        # build_trunk, called by SDNPolicy's constructor, reads these.
        self.n_lstm = check_n_lstm(n_lstm)
        self.layer_norm = bool(layer_norm)
        self.pre_lstm_layers = before
        super().__init__(
            observation_space,
            action_space,
            net_arch=[*after, dict(pi=pi_layers, qf=qf_layers)],
            activation_fn=activation_fn,
            ortho_init=ortho_init,
            log_std_init=log_std_init,
            fixed_std=fixed_std,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            normalize_images=normalize_images,
        )
        self.net_arch = net_arch
        if ortho_init:
            self.pre_lstm.apply(lambda module: self.init_weights(module, gain=np.sqrt(2)))
            init_lstm(self.lstm)

    def build_trunk(self, features_dim: int) -> int:
        self.pre_lstm, lstm_input = build_mlp(features_dim, self.pre_lstm_layers, self.activation_fn)
        self.lstm = make_lstm(lstm_input, self.n_lstm, self.layer_norm)
        return self.n_lstm

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(n_lstm=self.n_lstm, layer_norm=self.layer_norm)
        return data

    def evaluate_sequence(
        self,
        obs: PyTorchObs,
        episode_starts: th.Tensor,
        state: LSTMState,
        keep_states_at: np.ndarray | None = None,
    ) -> tuple[SDNOutput, LSTMState, LSTMState | None]:
        """Run ``T`` steps of ``B`` sequences from ``state`` (arguments as
        :meth:`~sb3_acer.policies.recurrent.RecurrentACERPolicy.forward_sequence`).

        Returns:
            The statistics, ``V`` and the critic's latents of the ``T B`` steps (rows in time-major order),
            the final state and the kept states.
        """
        lstm_out, final_state, kept_state = self.memory(obs, episode_starts, state, keep_states_at)
        latent = self.shared_net(lstm_out.reshape(-1, lstm_out.shape[-1]))
        return self.evaluate_latent(latent), final_state, kept_state

    def step_statistics(
        self, obs: PyTorchObs, state: LSTMState, episode_starts: th.Tensor
    ) -> tuple[th.Tensor, LSTMState]:
        """One step of ``B`` sequences: ``obs [B, ...]``, ``episode_starts [B]`` -> ``[B, S]`` statistics of
        ``pi(.|x, state)`` and the next state."""
        lstm_out, next_state, _ = self.memory(
            map_observations(lambda x: x.unsqueeze(0), obs), episode_starts.reshape(1, -1), state
        )
        return self.latent_statistics(self.shared_net(lstm_out[0])), next_state

    def step_actions(
        self, obs: PyTorchObs, state: LSTMState, episode_starts: th.Tensor, deterministic: bool
    ) -> tuple[np.ndarray, LSTMState]:
        stats, next_state = self.step_statistics(obs, state, episode_starts)
        actions = self.dist.mode(stats) if deterministic else self.dist.sample(stats)
        return self.dist.to_env(actions.cpu().numpy()), next_state

    def latent(self, obs: PyTorchObs) -> th.Tensor:
        # BasePolicy's stateless interface (forward, _predict): every observation starts an episode.
        (n,) = leading_shape(obs)
        lstm_out, _, _ = self.memory(
            map_observations(lambda x: x.unsqueeze(0), obs),
            th.ones((1, n), dtype=th.bool, device=self.device),
            self.initial_state(n),
        )
        return self.shared_net(lstm_out[0])


class SDNMlpLstmPolicy(RecurrentSDNPolicy):
    """What ``MlpLstmPolicy`` builds for ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions: flatten ->
    64 -> 64 (tanh) -> LSTM(256) -> the actor and the stochastic dueling critic."""


class SDNMlpLnLstmPolicy(RecurrentSDNPolicy):
    """As :class:`SDNMlpLstmPolicy` with the layer-normalised LSTM (``MlpLnLstmPolicy``)."""

    __init__ = init_with_defaults(RecurrentSDNPolicy.__init__, layer_norm=True)


class SDNCnnLstmPolicy(RecurrentSDNPolicy):
    """Nature-CNN features (512) -> LSTM(256) -> the actor and the critic, ReLU (``CnnLstmPolicy``)."""

    __init__ = init_with_defaults(
        RecurrentSDNPolicy.__init__, activation_fn=nn.ReLU, features_extractor_class=NatureCNN
    )


class SDNCnnLnLstmPolicy(RecurrentSDNPolicy):
    """As :class:`SDNCnnLstmPolicy` with the layer-normalised LSTM (``CnnLnLstmPolicy``)."""

    __init__ = init_with_defaults(
        RecurrentSDNPolicy.__init__,
        layer_norm=True,
        activation_fn=nn.ReLU,
        features_extractor_class=NatureCNN,
    )


class SDNMultiInputLstmPolicy(RecurrentSDNPolicy):
    """``Dict`` observations: SB3's ``CombinedExtractor`` -> 64 -> 64 (tanh) -> LSTM(256)
    (``MultiInputLstmPolicy``)."""

    __init__ = init_with_defaults(RecurrentSDNPolicy.__init__, features_extractor_class=CombinedExtractor)

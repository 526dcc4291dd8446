"""Recurrence, for every action space: :class:`RecurrentACERPolicy` is
:class:`~sb3_acer.common.policies.base.ACERPolicy` with one LSTM between the features and the shared layers,
whatever its head.

``MlpLstmPolicy``, ``MlpLnLstmPolicy``, ``CnnLstmPolicy`` and ``CnnLnLstmPolicy`` put one LSTM
(``n_lstm = 256`` units; layer-normalised for the ``Ln`` variants) between the features and the heads, as
SB2's legacy ``LstmPolicy`` does; ``MultiInputLstmPolicy`` is ``MlpLstmPolicy`` over ``Dict`` observations
(SB3's ``CombinedExtractor``). They differ from SB2 in how the memory is used: the state is carried across
segments, reset only where an episode starts, and stored with every segment so that the update starts from
it (see :class:`RecurrentACERPolicy`).
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

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

from sb3_acer.common.observations import leading_shape, map_observations, shapes_of
from sb3_acer.common.policies.base import ACERPolicy
from sb3_acer.common.policies.layout import Layers, build_mlp, init_with_defaults, layer_sizes, parse_net_arch

__all__ = [
    "CnnLnLstmPolicy",
    "CnnLstmPolicy",
    "LSTMState",
    "LayerNormLSTM",
    "MlpLnLstmPolicy",
    "MlpLstmPolicy",
    "MultiInputLstmPolicy",
    "RecurrentACERPolicy",
    "check_n_lstm",
    "init_lstm",
    "make_lstm",
    "parse_recurrent_net_arch",
]

#: Recurrent state ``(h, c)``, each ``[1, B, n_lstm]`` (one LSTM layer; SB3-contrib's layout).
LSTMState = tuple[th.Tensor, th.Tensor]


def parse_recurrent_net_arch(net_arch: Any) -> tuple[list[int], list[int], list[int], list[int]]:
    """Split an SB2-style recurrent ``net_arch`` into (layers before the LSTM, shared layers after it,
    policy tower, Q tower).

    The list holds layer sizes, exactly one ``'lstm'``, and may end with ``dict(pi=[...], qf=[...])``
    (``vf`` is accepted for ``qf``, as in SB2): ``[64, 64, 'lstm']`` is ``MlpLstmPolicy``, ``[8, 'lstm', 8]``
    one layer on each side, ``[8, 'lstm', dict(pi=[10], vf=[5, 10])]`` separate towers after the LSTM.

    Raises:
        ValueError: for any other form.
    """
    if not isinstance(net_arch, list | tuple):
        raise ValueError(f"net_arch of a recurrent policy must be a list containing 'lstm', got {net_arch!r}")
    items = list(net_arch)
    n_lstm_entries = sum(1 for item in items if isinstance(item, str) and item == "lstm")
    if n_lstm_entries != 1:
        raise ValueError(f"net_arch of a recurrent policy must contain 'lstm' exactly once, got {net_arch!r}")
    split = next(index for index, item in enumerate(items) if isinstance(item, str) and item == "lstm")
    before = layer_sizes(items[:split], "the part before 'lstm'")
    shared, pi_layers, qf_layers = parse_net_arch(items[split + 1 :])
    return before, shared, pi_layers, qf_layers


class LayerNormLSTM(nn.Module):
    """One-layer LSTM with layer normalisation (Ba et al. 2016), as SB2's ``lnlstm``.

    ``gates = LN_x(x W_x) + LN_h(h W_h)`` (each layer norm with its own gain and bias, over all ``4 n``
    gates), ``c' = sigmoid(f) c + sigmoid(i) tanh(g)``, ``h' = sigmoid(o) tanh(LN_c(c'))``; gates in
    ``torch.nn.LSTM``'s order (input, forget, cell, output). Called like a one-layer, time-major
    ``nn.LSTM``: ``(x [L, B, F], (h, c) each [1, B, n]) -> (out [L, B, n], (h, c))``.

    Args:
        input_size: features per step ``F``.
        hidden_size: units ``n``.
        eps: layer-norm epsilon (SB2: 1e-5).
    """

    def __init__(self, input_size: int, hidden_size: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.weight_ih = nn.Parameter(th.empty(4 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(th.empty(4 * hidden_size, hidden_size))
        self.ln_ih = nn.LayerNorm(4 * hidden_size, eps=eps)
        self.ln_hh = nn.LayerNorm(4 * hidden_size, eps=eps)
        self.ln_c = nn.LayerNorm(hidden_size, eps=eps)
        nn.init.orthogonal_(self.weight_ih)
        nn.init.orthogonal_(self.weight_hh)

    def forward(self, x: th.Tensor, state: LSTMState) -> tuple[th.Tensor, LSTMState]:
        h, c = state[0][0], state[1][0]
        # The input half of the gates does not depend on the recursion: one matrix product for all steps.
        gates_x = self.ln_ih(nn.functional.linear(x, self.weight_ih))
        outputs = []
        for t in range(x.shape[0]):
            gates = gates_x[t] + self.ln_hh(nn.functional.linear(h, self.weight_hh))
            i, f, g, o = gates.chunk(4, dim=-1)
            c = th.sigmoid(f) * c + th.sigmoid(i) * th.tanh(g)
            h = th.sigmoid(o) * th.tanh(self.ln_c(c))
            outputs.append(h)
        return th.stack(outputs), (h.unsqueeze(0), c.unsqueeze(0))


def init_lstm(lstm: nn.Module) -> None:
    """Orthogonal LSTM weights (gain 1) and zero biases."""
    for name, parameter in lstm.named_parameters():
        if name.startswith("weight"):
            nn.init.orthogonal_(parameter, gain=1.0)
        elif name.startswith("bias"):
            nn.init.zeros_(parameter)


def check_n_lstm(n_lstm: Any) -> int:
    """``n_lstm`` as an ``int``.

    Raises:
        ValueError: if ``n_lstm`` is not a positive integer.
    """
    if not isinstance(n_lstm, int | np.integer) or isinstance(n_lstm, bool) or n_lstm <= 0:
        raise ValueError(f"n_lstm must be a positive integer, got {n_lstm!r}")
    return int(n_lstm)


def make_lstm(input_size: int, n_lstm: int, layer_norm: bool) -> nn.Module:
    """A one-layer, time-major LSTM of ``n_lstm`` units: :class:`LayerNormLSTM` or ``torch.nn.LSTM``."""
    return LayerNormLSTM(input_size, n_lstm) if layer_norm else nn.LSTM(input_size, n_lstm)


class RecurrentACERPolicy(ACERPolicy):
    """:class:`~sb3_acer.common.policies.base.ACERPolicy` with memory: features -> layers -> LSTM -> layers
    -> the head of the action space.

    The LSTM state ``(h, c)``, each ``[1, B, n_lstm]``, is multiplied by ``1 - episode_start`` before every
    step, so an episode that starts inside a sequence starts from zeros exactly as if it were run on its
    own. :meth:`evaluate_sequence` runs ``T`` steps at once (the update); :meth:`predict`,
    :meth:`step_statistics` and ``action_probability`` one step, taking and returning the state; the
    stateless interface of SB3's ``BasePolicy`` (``forward``, ``_predict``) starts every observation from
    zeros. Without layer norm the LSTM is ``torch.nn.LSTM``, run over the stretches between episode starts;
    with layer norm it is :class:`LayerNormLSTM`.

    The defaults are SB2's legacy recurrent policies: for vector observations flatten -> 64 -> 64 (tanh)
    -> LSTM(256); for images Nature-CNN (512) -> LSTM(256); the heads on the LSTM output (the ``pi`` and
    ``Q`` heads of ``Discrete`` actions with gain 1.0: SB2's recurrent heads are not scaled down).

    Args:
        observation_space: observation space, as :class:`~sb3_acer.common.policies.base.ACERPolicy`.
        action_space: ``Discrete``, ``Box``, ``MultiDiscrete`` or ``MultiBinary``.
        n_lstm: number of LSTM units.
        layer_norm: use the layer-normalised LSTM (SB2's ``Ln`` policies).
        net_arch: SB2-style list with exactly one ``'lstm'``: sizes before it are layers between the
            features and the LSTM, sizes after it layers shared by both heads on the LSTM output, and a
            final ``dict(pi=[...], qf=[...])`` (``vf`` accepted) separate towers, e.g.
            ``[8, 'lstm', dict(pi=[10], qf=[5, 10])]``. Default ``[64, 64, 'lstm']`` for vector inputs,
            ``['lstm']`` for images.
        activation_fn: activation of the hidden layers (default ``nn.Tanh``).
        ortho_init: orthogonal initialisation (as :class:`~sb3_acer.common.policies.base.ACERPolicy`; the
            LSTM's weights with gain 1 and zero biases).
        features_extractor_class: SB3 feature extractor (``FlattenExtractor``, ``NatureCNN``, ...).
        features_extractor_kwargs: keyword arguments of the feature extractor.
        normalize_images: divide image observations by 255.
        log_std_init: initial log-std of a ``Box`` policy with a learned log-std.
        fixed_std: the paper's fixed ``sigma`` of a ``Box`` policy; ``None`` learns a log-std.

    Raises:
        ValueError: for a ``net_arch`` without exactly one ``'lstm'``, a non-positive ``n_lstm``, or as
            :class:`~sb3_acer.common.policies.base.ACERPolicy`.
    """

    recurrent: ClassVar[bool] = True
    pre_lstm: nn.Module
    lstm: nn.Module

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        n_lstm: int = 256,
        layer_norm: bool = False,
        net_arch: list[Any] | None = None,
        activation_fn: type[nn.Module] = nn.Tanh,
        ortho_init: bool = True,
        features_extractor_class: type[BaseFeaturesExtractor] = FlattenExtractor,
        features_extractor_kwargs: dict[str, Any] | None = None,
        normalize_images: bool = True,
        log_std_init: float = 0.0,
        fixed_std: float | None = None,
    ) -> None:
        # build_trunk, called by ACERPolicy's constructor, reads these.
        self.n_lstm = check_n_lstm(n_lstm)
        self.layer_norm = bool(layer_norm)
        super().__init__(
            observation_space,
            action_space,
            net_arch=net_arch,
            activation_fn=activation_fn,
            ortho_init=ortho_init,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            normalize_images=normalize_images,
            log_std_init=log_std_init,
            fixed_std=fixed_std,
        )
        self.register_load_state_dict_pre_hook(_rename_post_lstm)

    @staticmethod
    def default_net_arch(features_extractor_class: type[BaseFeaturesExtractor]) -> Any:
        return ["lstm"] if issubclass(features_extractor_class, NatureCNN) else [64, 64, "lstm"]

    def parse_layers(self, net_arch: Any) -> Layers:
        return Layers(*parse_recurrent_net_arch(net_arch))

    def build_trunk(self, features_dim: int, before: list[int]) -> int:
        self.pre_lstm, lstm_input = build_mlp(features_dim, before, self.activation_fn)
        self.lstm = make_lstm(lstm_input, self.n_lstm, self.layer_norm)
        return self.n_lstm

    def trunk_modules(self) -> list[nn.Module]:
        return [self.pre_lstm]

    def init_trunk(self) -> None:
        init_lstm(self.lstm)

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
    ) -> tuple[tuple[th.Tensor, ...], LSTMState, LSTMState | None]:
        """Run ``T`` steps of ``B`` sequences from ``state``, resetting it where an episode starts.

        Args:
            obs: ``[T, B, *obs_shape]`` (unprocessed) observations (a dict of them for Dict observations).
            episode_starts: ``[T, B]`` bool (or 0/1): ``obs[t, b]`` is the first observation of an
                episode; the state is multiplied by ``1 - episode_starts[t]`` before step ``t``.
            state: ``(h, c)`` before step 0, each ``[1, B, n_lstm]``.
            keep_states_at: optional ``[K, 2]`` integer ``(t, b)`` rows: also return the state reached
                after step ``t`` of sequence ``b`` (before the reset of step ``t + 1``), e.g. to evaluate
                the observation at which an episode was truncated.

        Returns:
            The head's outputs of the ``T B`` steps (rows in time-major order, as
            :meth:`~sb3_acer.common.policies.base.ACERPolicy.evaluate`), the final state and the kept
            states (``(h, c)`` each ``[1, K, n_lstm]`` in the order asked; ``None`` if not asked).

        Raises:
            ValueError: if the shapes do not fit together.
        """
        lstm_out, final_state, kept_state = self.memory(obs, episode_starts, state, keep_states_at)
        latent = self.shared_net(lstm_out.reshape(-1, lstm_out.shape[-1]))
        return self.head.outputs(self, latent, latent), final_state, kept_state

    def sequence_statistics(self, obs: PyTorchObs, episode_starts: th.Tensor, state: LSTMState) -> th.Tensor:
        """``[T B, S]`` statistics of ``pi`` over ``T`` steps of ``B`` sequences (the critic is not
        evaluated)."""
        lstm_out, _, _ = self.memory(obs, episode_starts, state)
        return self.head.statistics(self, self.shared_net(lstm_out.reshape(-1, lstm_out.shape[-1])))

    def step_latent(
        self, obs: PyTorchObs, state: LSTMState, episode_starts: th.Tensor
    ) -> tuple[th.Tensor, LSTMState]:
        """One step of ``B`` sequences: ``obs [B, ...]``, ``episode_starts [B]`` -> the ``[B, L]`` shared
        latent and the next state."""
        lstm_out, next_state, _ = self.memory(
            map_observations(lambda x: x.unsqueeze(0), obs), episode_starts.reshape(1, -1), state
        )
        return self.shared_net(lstm_out[0]), next_state

    def step_statistics(self, obs: PyTorchObs, state: Any, episode_starts: Any) -> tuple[th.Tensor, Any]:
        """``[B, S]`` statistics of ``pi(.|x, state)`` for one step of ``B`` sequences, and the next state."""
        latent, next_state = self.step_latent(obs, state, episode_starts)
        return self.head.statistics(self, latent), next_state

    def latent(self, obs: PyTorchObs) -> th.Tensor:
        # BasePolicy's stateless interface (forward, _predict): every observation starts an episode.
        (n,) = leading_shape(obs)
        starts = th.ones(n, dtype=th.bool, device=self.device)
        return self.step_latent(obs, self.initial_state(n), starts)[0]

    def initial_state(self, n_envs: int) -> LSTMState:
        """The zero state of ``n_envs`` sequences, ``(h, c)`` each ``[1, n_envs, n_lstm]``."""
        h = th.zeros((1, n_envs, self.n_lstm), device=self.device)
        return h, th.zeros_like(h)

    def check_sequence(self, obs: PyTorchObs, episode_starts: th.Tensor, state: LSTMState) -> tuple[int, int]:
        """``(T, B)`` of ``[T, B, ...]`` observations, ``[T, B]`` episode starts and a ``[1, B, n_lstm]``
        state.

        Raises:
            ValueError: if the shapes do not fit together.
        """
        if episode_starts.dim() != 2 or episode_starts.shape[0] == 0:
            raise ValueError(f"episode_starts must be [T, B] with T >= 1, got {tuple(episode_starts.shape)}")
        n_steps, n_seq = episode_starts.shape
        if leading_shape(obs, 2) != (n_steps, n_seq):
            raise ValueError(f"obs must be [T={n_steps}, B={n_seq}, ...], got {shapes_of(obs)}")
        for part in state:
            if tuple(part.shape) != (1, n_seq, self.n_lstm):
                raise ValueError(
                    f"state must be (h, c) each of shape (1, {n_seq}, {self.n_lstm}), got {tuple(part.shape)}"
                )
        return n_steps, n_seq

    def unroll(
        self, x: th.Tensor, starts: th.Tensor, state: LSTMState, keep_states_at: np.ndarray | None
    ) -> tuple[th.Tensor, LSTMState, LSTMState | None]:
        """Run the LSTM over ``[T, B, F]`` inputs from ``state``, resetting it where ``starts`` (``[T, B]``
        bool); returns the ``[T, B, n_lstm]`` outputs, the final state and the states kept after the
        ``(t, b)`` rows of ``keep_states_at`` (see :meth:`evaluate_sequence`).

        Raises:
            ValueError: for a ``keep_states_at`` row outside the sequences.
        """
        # The LSTM runs over the stretches between the steps at which some sequence starts an episode (or
        # after which a state is to be kept); at each such step the state is masked.
        n_steps, n_seq = starts.shape
        any_start = starts.any(dim=1).tolist()
        cuts = {t for t in range(1, n_steps) if any_start[t]}
        keep: np.ndarray | None = None
        if keep_states_at is not None:
            keep = np.asarray(keep_states_at, dtype=np.int64).reshape(-1, 2)
            if len(keep) and not (
                (keep >= 0).all() and (keep[:, 0] < n_steps).all() and (keep[:, 1] < n_seq).all()
            ):
                raise ValueError(
                    f"keep_states_at rows (t, b) must lie in [0, {n_steps}) x [0, {n_seq}), "
                    f"got {keep.tolist()}"
                )
            cuts.update(int(t) + 1 for t in keep[:, 0] if t + 1 < n_steps)
        not_start = (~starts).to(x.dtype).unsqueeze(-1)  # [T, B, 1]
        edges = [0, *sorted(cuts), n_steps]
        h, c = state
        outputs: list[th.Tensor] = []
        kept_rows: list[np.ndarray] = []
        kept_h: list[th.Tensor] = []
        kept_c: list[th.Tensor] = []
        for begin, end in itertools.pairwise(edges):
            if any_start[begin]:
                h, c = h * not_start[begin], c * not_start[begin]
            out, (h, c) = self.lstm(x[begin:end], (h, c))
            outputs.append(out)
            if keep is not None:
                rows = np.flatnonzero(keep[:, 0] == end - 1)
                if len(rows):
                    columns = th.as_tensor(keep[rows, 1], device=h.device)
                    kept_rows.append(rows)
                    kept_h.append(h[:, columns])
                    kept_c.append(c[:, columns])
        lstm_out = outputs[0] if len(outputs) == 1 else th.cat(outputs)
        kept_state: LSTMState | None = None
        if keep is not None:
            if kept_rows:
                inverse = th.as_tensor(np.argsort(np.concatenate(kept_rows)), device=h.device)
                kept_state = (th.cat(kept_h, dim=1)[:, inverse], th.cat(kept_c, dim=1)[:, inverse])
            else:
                empty = h.new_zeros((1, 0, self.n_lstm))
                kept_state = (empty, empty.clone())
        return lstm_out, (h, c), kept_state

    def memory(
        self,
        obs: PyTorchObs,
        episode_starts: th.Tensor,
        state: LSTMState,
        keep_states_at: np.ndarray | None = None,
    ) -> tuple[th.Tensor, LSTMState, LSTMState | None]:
        """Features, the layers before the LSTM and the LSTM over ``[T, B, ...]`` observations from
        ``state``; returns the ``[T, B, n_lstm]`` outputs, the final state and the kept states (see
        :meth:`evaluate_sequence` for the arguments).

        Raises:
            ValueError: if the shapes do not fit together.
        """
        n_steps, n_seq = self.check_sequence(obs, episode_starts, state)
        features = self.extract_features(
            map_observations(lambda x: x.reshape(n_steps * n_seq, *x.shape[2:]), obs), self.features_extractor
        )
        latent = self.pre_lstm(features).view(n_steps, n_seq, -1)
        return self.unroll(latent, episode_starts.bool(), state, keep_states_at)

    def prepare_inputs(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None,
        episode_start: np.ndarray | None,
    ) -> tuple[PyTorchObs, bool, LSTMState, th.Tensor]:
        """Observation, state and episode starts as tensors for one step.

        Args:
            observation: one observation or a batch of ``n``.
            state: ``(h, c)`` as returned by :meth:`predict`, each ``[1, n, n_lstm]`` (``[n, n_lstm]`` is
                accepted); ``None`` for the zero state.
            episode_start: ``[n]`` flags (bool or 0/1, SB2's ``mask``); ``None`` for no episode start.

        Returns:
            The observation tensor, whether it was a batch, the state and the ``[n]`` bool episode starts.

        Raises:
            ValueError: for a state or episode starts that do not fit ``n`` observations.
        """
        obs_tensor, vectorized = self.obs_to_tensor(observation)
        (n,) = leading_shape(obs_tensor)
        if state is None:
            lstm_state = self.initial_state(n)
        else:
            if not isinstance(state, tuple | list) or len(state) != 2:
                raise ValueError(
                    f"state must be the (h, c) pair returned by predict (or None), got {type(state).__name__}"
                    + (f" of length {len(state)}" if isinstance(state, tuple | list) else "")
                )
            parts = []
            for part in state:
                tensor = th.as_tensor(np.asarray(part), dtype=th.float32, device=self.device)
                if tuple(tensor.shape) == (n, self.n_lstm):
                    tensor = tensor.unsqueeze(0)
                if tuple(tensor.shape) != (1, n, self.n_lstm):
                    raise ValueError(
                        f"state arrays must have shape (1, {n}, {self.n_lstm}) for {n} observation(s), "
                        f"got {tuple(tensor.shape)}"
                    )
                parts.append(tensor)
            lstm_state = (parts[0], parts[1])
        if episode_start is None:
            starts = th.zeros(n, dtype=th.bool, device=self.device)
        else:
            flags = np.asarray(episode_start).reshape(-1)
            if flags.shape != (n,):
                raise ValueError(f"episode_start must hold one flag per observation ({n}), got {flags.shape}")
            starts = th.as_tensor(flags != 0, device=self.device)
        return obs_tensor, vectorized, lstm_state, starts

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...]]:
        """Action(s) for one observation or a batch of any size, and the next state.

        Args:
            observation: one observation or a batch of ``n``.
            state: the state returned by the previous call (``None``: zeros).
            episode_start: ``[n]`` flags, true where the observation starts an episode (its state is reset).
            deterministic: take the most probable action instead of sampling.

        Returns:
            The action(s) and the next state ``(h, c)``, NumPy arrays each ``[1, n, n_lstm]``.
        """
        self.set_training_mode(False)
        obs_tensor, vectorized, lstm_state, starts = self.prepare_inputs(observation, state, episode_start)
        with th.no_grad():
            latent, (h, c) = self.step_latent(obs_tensor, lstm_state, starts)
            actions = self.dist.to_env(self.head.actions(self, latent, deterministic).cpu().numpy())
        if not vectorized:
            actions = actions.squeeze(axis=0)
        return actions, (h.cpu().numpy(), c.cpu().numpy())


def _rename_post_lstm(module: nn.Module, state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
    """Model files written before the one policy family name the layers after the LSTM of a ``Discrete``
    policy ``post_lstm``: load them as ``shared_net``."""
    del module, args
    old = f"{prefix}post_lstm."
    for key in [key for key in state_dict if key.startswith(old)]:
        state_dict[f"{prefix}shared_net.{key[len(old) :]}"] = state_dict.pop(key)


class MlpLstmPolicy(RecurrentACERPolicy):
    """SB2's ``MlpLstmPolicy``: flatten -> 64 -> 64 (tanh) -> LSTM(256) -> the heads."""


class MlpLnLstmPolicy(RecurrentACERPolicy):
    """SB2's ``MlpLnLstmPolicy``: as :class:`MlpLstmPolicy` with the layer-normalised LSTM."""

    __init__ = init_with_defaults(RecurrentACERPolicy.__init__, layer_norm=True)


class CnnLstmPolicy(RecurrentACERPolicy):
    """SB2's ``CnnLstmPolicy``: Nature-CNN features (512) -> LSTM(256) -> the heads (ReLU)."""

    __init__ = init_with_defaults(
        RecurrentACERPolicy.__init__, activation_fn=nn.ReLU, features_extractor_class=NatureCNN
    )


class CnnLnLstmPolicy(CnnLstmPolicy):
    """SB2's ``CnnLnLstmPolicy``: as :class:`CnnLstmPolicy` with the layer-normalised LSTM."""

    __init__ = init_with_defaults(
        RecurrentACERPolicy.__init__,
        layer_norm=True,
        activation_fn=nn.ReLU,
        features_extractor_class=NatureCNN,
    )


class MultiInputLstmPolicy(RecurrentACERPolicy):
    """``Dict`` observations: SB3's ``CombinedExtractor`` -> 64 -> 64 (tanh) -> LSTM(256) -> the heads (as
    sb3-contrib's ``MultiInputLstmPolicy`` of RecurrentPPO)."""

    __init__ = init_with_defaults(RecurrentACERPolicy.__init__, features_extractor_class=CombinedExtractor)

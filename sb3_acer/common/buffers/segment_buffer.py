"""The replay memory that keeps every observation whole (SB2's layout; any observation space).

Slot bookkeeping, sampling, the batch assembly and the state dict are those of
:class:`~sb3_acer.common.buffers.base.SlotReplay`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from sb3_acer.common.buffers.base import SlotReplay, check_memory, check_sizes
from sb3_acer.common.type_aliases import Segment

__all__ = ["SegmentReplayBuffer"]


class SegmentReplayBuffer(SlotReplay):
    """Ring buffer of segments.

    Args:
        buffer_size: capacity in steps per environment (``buffer_size // n_steps`` segments).
        n_steps: segment length ``T``.
        n_envs: number of environments ``E``.
        obs_shape: shape of one observation.
        obs_dtype: dtype in which observations are stored (images stay ``uint8``).
        n_actions: number of discrete actions ``A`` (other action spaces: the size ``S`` of the behaviour
            statistics).
        seed: seed of the per-environment sampling generators.
        state_size: size ``n`` of a recurrent policy's LSTM state (``h`` and ``c`` are ``[n]`` each per
            environment); every segment must then carry its ``initial_state``. 0 for feed-forward policies.
        action_size: 0 for ``Discrete`` actions, else the flat action size of a ``Box``, ``MultiDiscrete``
            or ``MultiBinary`` space (:mod:`sb3_acer.common.distributions`).
        action_dtype: dtype of the stored actions when ``action_size`` is positive.
    """

    def __init__(
        self,
        buffer_size: int,
        n_steps: int,
        n_envs: int,
        obs_shape: tuple[int, ...],
        obs_dtype: np.dtype,
        n_actions: int,
        seed: int | None = None,
        state_size: int = 0,
        action_size: int = 0,
        action_dtype: np.dtype | type = np.int64,
    ) -> None:
        self.action_size = int(action_size)
        self.action_dtype = np.dtype(action_dtype) if action_size else np.dtype(np.int64)
        check_sizes(buffer_size, state_size, n_steps=n_steps, n_envs=n_envs, n_actions=n_actions)
        self._init_slots(buffer_size, n_steps, n_envs, obs_shape, obs_dtype, n_actions, state_size)
        check_memory(
            self.estimate_nbytes(
                self.capacity, n_steps, n_envs, self.obs_shape, self.obs_dtype, n_actions, self.state_size
            ),
            f"buffer_size={buffer_size} (the replay memory)",
        )
        self.observations = np.zeros(
            (self.capacity, n_steps + 1, n_envs, *self.obs_shape), dtype=self.obs_dtype
        )
        self._allocate_steps(self.action_dtype.type, seed)

    @staticmethod
    def estimate_nbytes(
        capacity: int,
        n_steps: int,
        n_envs: int,
        obs_shape: tuple[int, ...],
        obs_dtype: np.dtype,
        n_actions: int,
        state_size: int = 0,
    ) -> int:
        """Bytes the buffer's arrays take (excluding the rare truncation observations); equals ``nbytes``."""
        obs_bytes = int(np.prod(obs_shape, dtype=np.int64)) * np.dtype(obs_dtype).itemsize
        # Per step: action (int64), reward (float32), mu (A x float32), terminated and truncated (bool).
        per_step = 8 + 4 + 4 * n_actions + 1 + 1
        # Per observation row (T + 1 of them): the observation and its episode_starts flag (bool).
        # Per segment: the initial LSTM state (h and c, float32) of a recurrent policy.
        per_segment = 2 * 4 * state_size
        return capacity * n_envs * ((n_steps + 1) * (obs_bytes + 1) + n_steps * per_step + per_segment)

    def put(self, segment: Segment) -> None:
        """Store a segment, overwriting the oldest when full."""
        self._check_segment(segment)
        self.observations[self.next_idx] = segment.observations
        self._store_steps(segment)

    def get(self, slots: np.ndarray) -> Segment:
        """Assemble the segment made of env ``e``'s part of slot ``slots[e]``, for every ``e``.

        The truncation rows (``final_index``, ``final_observations``) of env ``e`` come from slot ``slots[e]``
        and are returned in ``(t, e)`` order, the order in which the rollout records them.

        Raises:
            ValueError: unless ``slots`` holds one index per environment, each of a stored segment.
        """
        return self._assemble(slots, lambda chosen: self._take(self.observations, chosen))

    # ------------------------------------------------------------------------------------------ state dict

    def _settings(self) -> dict[str, Any]:
        return {
            "n_steps": self.n_steps,
            "n_envs": self.n_envs,
            "obs_shape": self.obs_shape,
            "obs_dtype": self.obs_dtype,
            "n_actions": self.n_actions,
            "state_size": self.state_size,
            # Only for Box / MultiDiscrete / MultiBinary actions: Discrete buffers keep the entries they had.
            **(
                {"action_size": self.action_size, "action_dtype": self.action_dtype}
                if self.action_size
                else {}
            ),
        }

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"observations": self.observations, **super()._arrays()}

    def _stored_observations(self, checked: Mapping[str, Any]) -> Iterator[tuple[str, np.ndarray]]:
        for slot in range(checked["num_in_buffer"]):
            yield f"observations of slot {slot}", checked["observations"][slot]

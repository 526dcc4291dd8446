"""Segment replay memory for ACER (NumPy only; it never sees a torch module).

The unit of storage is a whole on-policy segment of ``T`` steps for each of the ``E`` environments, with the
behaviour probabilities ``mu``. A replay batch takes, for every environment ``e`` independently, env ``e``'s
part of a uniformly drawn slot, using env ``e``'s own seeded generator (as SB2 and openai/baselines do,
which decorrelates the ``E`` sequences of a batch). ``buffer_size`` counts steps per environment, so the
memory holds ``buffer_size // T`` segments. For recurrent policies (``state_size > 0``) it also keeps, per
slot and environment, the LSTM state ``(h, c)`` with which the segment started, so that a replayed segment
is unrolled from the state its behaviour probabilities were computed with.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator

import numpy as np

from sb3_acer.segment import Segment

__all__ = ["SegmentReplayBuffer", "SlotReplay", "available_memory_bytes"]


def _all_finite(observations: np.ndarray) -> bool:
    """Whether ``observations`` hold no NaN or inf (integer observations always do)."""
    return not np.issubdtype(observations.dtype, np.inexact) or bool(np.isfinite(observations).all())


def available_memory_bytes() -> int | None:
    """Memory currently available to a new allocation, or ``None`` if it cannot be read."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


class SlotReplay:
    """What both replay memories share: per-environment seeded slot sampling, segment checks and the
    assembly of a time-major batch from env ``e``'s part of slot ``slots[e]``.

    Subclasses set ``n_steps``, ``n_envs``, ``n_actions``, ``obs_shape``, ``state_size``, ``num_in_buffer``,
    ``final`` and the per-step arrays ``actions``, ``rewards``, ``mu_probs``, ``terminated``, ``truncated``,
    ``episode_starts`` (``[slots, T(+1), E]``) and ``initial_h``, ``initial_c``; they store observations
    their own way and pass them to :meth:`_assemble`.
    """

    n_steps: int
    n_envs: int
    n_actions: int
    obs_shape: tuple[int, ...]
    state_size: int
    num_in_buffer: int
    rngs: list[np.random.Generator]
    final: list[tuple[np.ndarray, np.ndarray]]
    actions: np.ndarray
    rewards: np.ndarray
    mu_probs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    episode_starts: np.ndarray
    initial_h: np.ndarray
    initial_c: np.ndarray

    def seed(self, seed: int | None) -> None:
        """Re-seed the per-environment sampling generators."""
        children = np.random.SeedSequence(seed).spawn(self.n_envs)
        self.rngs = [np.random.default_rng(child) for child in children]

    def __len__(self) -> int:
        """Number of segments stored."""
        return self.num_in_buffer

    def has_at_least(self, steps_per_env: int) -> bool:
        """Whether at least ``steps_per_env // T`` segments are stored (SB2's ``has_atleast``)."""
        return self.num_in_buffer > 0 and self.num_in_buffer >= steps_per_env // self.n_steps

    def _check_segment(self, segment: Segment) -> None:
        """Raise ``ValueError`` unless ``segment`` has this buffer's shapes (and recurrent state)."""
        if segment.n_steps != self.n_steps or segment.n_envs != self.n_envs:
            raise ValueError(
                f"segment is [T={segment.n_steps}, E={segment.n_envs}] but the buffer holds "
                f"[T={self.n_steps}, E={self.n_envs}]"
            )
        if segment.observations.shape[2:] != self.obs_shape:
            raise ValueError(
                f"observation shape {segment.observations.shape[2:]} != buffer's {self.obs_shape}"
            )
        if segment.mu_probs.shape[2:] != (self.n_actions,):
            # A trailing size of 1 would otherwise be broadcast silently over the actions.
            raise ValueError(
                f"mu_probs must be [T, E, A={self.n_actions}], got {tuple(segment.mu_probs.shape)}"
            )
        if self.state_size:
            if segment.initial_state is None:
                raise ValueError("this buffer holds recurrent segments: the segment needs its initial_state")
            if segment.initial_state[0].shape != (self.n_envs, self.state_size):
                raise ValueError(
                    f"initial_state must be (h, c), each [E={self.n_envs}, {self.state_size}], got "
                    f"{segment.initial_state[0].shape}"
                )
        elif segment.initial_state is not None:
            raise ValueError("the segment carries an initial_state but the buffer has state_size=0")

    def check_values(self) -> None:
        """Raise ``ValueError`` unless the stored segments hold values :meth:`put` could have stored (for a
        restored file: an action out of range would otherwise fail at the next update)."""
        filled = slice(0, self.num_in_buffer)
        actions = self.actions[filled]
        if actions.size and (actions.min() < 0 or actions.max() >= self.n_actions):
            bad = actions[(actions < 0) | (actions >= self.n_actions)]
            raise ValueError(f"actions outside [0, {self.n_actions}): {bad[0]}")
        mu = self.mu_probs[filled]
        if not (np.isfinite(mu).all() and (mu >= 0).all() and (mu <= 1).all()):
            raise ValueError("mu_probs hold NaN or values outside [0, 1]")
        if mu.size and np.abs(mu.sum(axis=-1) - 1).max() > 1e-3:
            raise ValueError("mu_probs of a stored step do not sum to 1")
        if not np.isfinite(self.rewards[filled]).all():
            raise ValueError("rewards hold NaN or inf")
        if not (np.isfinite(self.initial_h[filled]).all() and np.isfinite(self.initial_c[filled]).all()):
            raise ValueError("the initial LSTM states hold NaN or inf")
        for slot, (index, observations) in enumerate(self.final[filled]):
            if len(index) != len(observations):
                raise ValueError(
                    f"final[{slot}] has {len(index)} indices for {len(observations)} observations"
                )
            if len(index) and not (
                (index >= 0).all()
                and (index[:, 0] < self.n_steps).all()
                and (index[:, 1] < self.n_envs).all()
            ):
                raise ValueError(
                    f"final[{slot}] indexes outside the segment [T={self.n_steps}, E={self.n_envs}]"
                )
            if not _all_finite(observations):
                raise ValueError(f"final[{slot}] observations hold NaN or inf")
        for name, observations in self._stored_observations():
            if not _all_finite(observations):
                raise ValueError(f"{name} hold NaN or inf")

    def _stored_observations(self) -> Iterator[tuple[str, np.ndarray]]:
        """The observations stored besides ``final``, in pieces, each named for :meth:`check_values`."""
        return iter(())

    def sample_slots(self) -> np.ndarray:
        """One uniformly drawn slot per environment, each from that environment's own generator."""
        if self.num_in_buffer == 0:
            raise RuntimeError("cannot sample from an empty replay buffer")
        return np.array([int(rng.integers(self.num_in_buffer)) for rng in self.rngs], dtype=np.int64)

    def get(self, slots: np.ndarray) -> Segment:
        """Assemble the segment made of env ``e``'s part of slot ``slots[e]``, for every ``e``."""
        raise NotImplementedError

    def sample(self) -> Segment:
        """A replay batch: for each environment, its segment from an independently drawn slot."""
        return self.get(self.sample_slots())

    @staticmethod
    def _take(array: np.ndarray, slots: np.ndarray) -> np.ndarray:
        # array[slots, :, envs] puts the env axis first: [E, T(+1), ...] -> time-major.
        return np.ascontiguousarray(np.swapaxes(array[slots, :, np.arange(len(slots))], 0, 1))

    def _assemble(self, slots: np.ndarray, observations: Callable[[np.ndarray], np.ndarray]) -> Segment:
        """The batch of ``slots`` (checked first), with ``observations(slots)`` as its observations.

        The truncation rows (``final_index``, ``final_observations``) of env ``e`` come from slot ``slots[e]``
        and are returned in ``(t, e)`` order, the order in which the rollout records them.

        Raises:
            ValueError: unless ``slots`` holds one index per environment, each of a stored segment.
        """
        slots = np.asarray(slots)
        if slots.shape != (self.n_envs,):
            raise ValueError(f"slots must have shape ({self.n_envs},), got {slots.shape}")
        if slots.size and (slots.min() < 0 or slots.max() >= self.num_in_buffer):
            raise ValueError(f"slots must lie in [0, {self.num_in_buffer}), got {slots.tolist()}")
        envs = np.arange(self.n_envs)
        final_index, final_obs = [], []
        for env, slot in enumerate(slots):
            index, obs = self.final[slot]
            mine = index[:, 1] == env
            final_index.append(index[mine])
            final_obs.append(obs[mine])
        final_index_all = np.concatenate(final_index, axis=0)
        order = np.lexsort((final_index_all[:, 1], final_index_all[:, 0]))
        return Segment(
            observations=observations(slots),
            actions=self._take(self.actions, slots).astype(np.int64, copy=False),
            rewards=self._take(self.rewards, slots),
            mu_probs=self._take(self.mu_probs, slots),
            terminated=self._take(self.terminated, slots),
            truncated=self._take(self.truncated, slots),
            episode_starts=self._take(self.episode_starts, slots),
            final_index=final_index_all[order],
            final_observations=np.concatenate(final_obs, axis=0)[order],
            initial_state=(
                (self.initial_h[slots, envs], self.initial_c[slots, envs]) if self.state_size else None
            ),
        )


class SegmentReplayBuffer(SlotReplay):
    """Ring buffer of segments.

    Args:
        buffer_size: capacity in steps per environment (``buffer_size // n_steps`` segments).
        n_steps: segment length ``T``.
        n_envs: number of environments ``E``.
        obs_shape: shape of one observation.
        obs_dtype: dtype in which observations are stored (images stay ``uint8``).
        n_actions: number of discrete actions ``A``.
        seed: seed of the per-environment sampling generators.
        state_size: size ``n`` of a recurrent policy's LSTM state (``h`` and ``c`` are ``[n]`` each per
            environment); every segment must then carry its ``initial_state``. 0 for feed-forward policies.
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
    ) -> None:
        if n_steps <= 0 or n_envs <= 0 or n_actions <= 0:
            raise ValueError(
                f"n_steps, n_envs and n_actions must be positive, got {n_steps}, {n_envs}, {n_actions}"
            )
        if buffer_size < n_steps:
            raise ValueError(
                f"buffer_size ({buffer_size}) must be at least n_steps ({n_steps}) to hold one segment"
            )
        self.n_steps = n_steps
        self.n_envs = n_envs
        self.obs_shape = tuple(obs_shape)
        self.obs_dtype = np.dtype(obs_dtype)
        self.n_actions = n_actions
        if state_size < 0:
            raise ValueError(f"state_size must be non-negative, got {state_size}")
        self.state_size = int(state_size)
        self.capacity = buffer_size // n_steps
        self.next_idx = 0
        self.num_in_buffer = 0

        nbytes = self.estimate_nbytes(
            self.capacity, n_steps, n_envs, self.obs_shape, self.obs_dtype, n_actions, self.state_size
        )
        available = available_memory_bytes()
        if available is not None and nbytes > available:
            warnings.warn(
                f"The replay buffer needs about {nbytes / 1e9:.2f} GB but only {available / 1e9:.2f} GB are "
                "available; reduce buffer_size or n_envs, or expect swapping or an out-of-memory error.",
                ResourceWarning,
                stacklevel=2,
            )
        slots, steps, envs = self.capacity, n_steps, n_envs
        self.observations = np.zeros((slots, steps + 1, envs, *self.obs_shape), dtype=self.obs_dtype)
        self.actions = np.zeros((slots, steps, envs), dtype=np.int64)
        self.rewards = np.zeros((slots, steps, envs), dtype=np.float32)
        self.mu_probs = np.zeros((slots, steps, envs, n_actions), dtype=np.float32)
        self.terminated = np.zeros((slots, steps, envs), dtype=bool)
        self.truncated = np.zeros((slots, steps, envs), dtype=bool)
        self.episode_starts = np.zeros((slots, steps + 1, envs), dtype=bool)
        # LSTM state (h, c) at the start of each slot's segment, per env (empty for feed-forward policies).
        self.initial_h = np.zeros((slots, envs, self.state_size), dtype=np.float32)
        self.initial_c = np.zeros((slots, envs, self.state_size), dtype=np.float32)
        # Observations at which an episode was truncated, per slot: (index [K, 2] of (t, e), obs [K, ...]).
        empty = (np.zeros((0, 2), dtype=np.int64), np.zeros((0, *self.obs_shape), dtype=self.obs_dtype))
        self.final: list[tuple[np.ndarray, np.ndarray]] = [empty] * slots
        self.seed(seed)

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

    @property
    def nbytes(self) -> int:
        arrays = (
            self.observations,
            self.actions,
            self.rewards,
            self.mu_probs,
            self.terminated,
            self.truncated,
            self.episode_starts,
            self.initial_h,
            self.initial_c,
        )
        return int(sum(array.nbytes for array in arrays))

    def put(self, segment: Segment) -> None:
        """Store a segment, overwriting the oldest when full."""
        self._check_segment(segment)
        idx = self.next_idx
        self.observations[idx] = segment.observations
        self.actions[idx] = segment.actions
        self.rewards[idx] = segment.rewards
        self.mu_probs[idx] = segment.mu_probs
        self.terminated[idx] = segment.terminated
        self.truncated[idx] = segment.truncated
        self.episode_starts[idx] = segment.episode_starts
        if segment.initial_state is not None:
            self.initial_h[idx], self.initial_c[idx] = segment.initial_state
        self.final[idx] = (
            segment.final_index.astype(np.int64, copy=True),
            segment.final_observations.astype(self.obs_dtype, copy=True),
        )
        self.next_idx = (self.next_idx + 1) % self.capacity
        self.num_in_buffer = min(self.capacity, self.num_in_buffer + 1)

    def _stored_observations(self) -> Iterator[tuple[str, np.ndarray]]:
        for slot in range(self.num_in_buffer):
            yield f"observations of slot {slot}", self.observations[slot]

    def get(self, slots: np.ndarray) -> Segment:
        """Assemble the segment made of env ``e``'s part of slot ``slots[e]``, for every ``e``.

        The truncation rows (``final_index``, ``final_observations``) of env ``e`` come from slot ``slots[e]``
        and are returned in ``(t, e)`` order, the order in which the rollout records them.

        Raises:
            ValueError: unless ``slots`` holds one index per environment, each of a stored segment.
        """
        return self._assemble(slots, lambda chosen: self._take(self.observations, chosen))

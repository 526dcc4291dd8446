"""Replay memory that stores each frame of a frame-stacked image observation once (NumPy only).

``SegmentReplayBuffer`` keeps every observation whole, as SB2 does: with Atari's ``uint8 [4, 84, 84]``
stacks each 84x84 frame is stored four times (28,224 bytes per step). :class:`FrameStackReplayBuffer`
keeps, per slot and env, only the newest frame of ``x_1 .. x_T`` (7,056 bytes per step) and rebuilds the
stacks when a segment is read, zeroing the frames that precede an episode start -- exactly what
``VecFrameStack`` does, so :meth:`~FrameStackReplayBuffer.get` returns the observations the env returned.
This is openai/baselines' layout, tighter: the older frames of a slot's first observation ``x_0`` are
those of the slot written before it (the rollout continues where the last segment ended), so they are
stored only where that slot is gone (the oldest slot) or where the stream broke (``x_0`` differs from the
previous segment's ``x_T``, e.g. after a stopped rollout). Interface and sampling are those of
``SegmentReplayBuffer``: with the same seed both draw the same slots.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from sb3_acer.common.buffers.base import SlotReplay, check_memory, check_sizes, checked_array
from sb3_acer.common.type_aliases import Segment

__all__ = ["FrameStackReplayBuffer"]


class FrameStackReplayBuffer(SlotReplay):
    """Ring buffer of segments of channel-first frame stacks, each frame stored once.

    Observations are ``[n_stack * c, H, W]``: ``n_stack`` frames of ``c`` channels, oldest first, where the
    frames that precede an episode start are zero (``VecFrameStack``, ``AtariVecEnv``). :meth:`put` checks
    that a segment has this structure and raises ``ValueError`` otherwise.

    Args:
        buffer_size: capacity in steps per environment (``buffer_size // n_steps`` segments).
        n_steps: segment length ``T``.
        n_envs: number of environments ``E``.
        obs_shape: shape ``(n_stack * c, H, W)`` of one observation.
        n_stack: number of frames in an observation.
        n_actions: number of discrete actions ``A``.
        seed: seed of the per-environment sampling generators.
        obs_dtype: dtype of the observations (images: ``uint8``).
        state_size: size ``n`` of a recurrent policy's LSTM state, kept per slot and env as
            ``SegmentReplayBuffer`` keeps it; 0 for feed-forward policies.
    """

    REQUIRED_SETTINGS = (*SlotReplay.REQUIRED_SETTINGS, "n_stack")

    def __init__(
        self,
        buffer_size: int,
        n_steps: int,
        n_envs: int,
        obs_shape: tuple[int, ...],
        n_stack: int,
        n_actions: int,
        seed: int | None = None,
        obs_dtype: np.dtype | type = np.uint8,
        state_size: int = 0,
    ) -> None:
        check_sizes(
            buffer_size, state_size, n_steps=n_steps, n_envs=n_envs, n_actions=n_actions, n_stack=n_stack
        )
        obs_shape = tuple(obs_shape)
        fields = np.dtype(obs_dtype).names
        if fields is not None:
            raise ValueError(
                "FrameStackReplayBuffer stores single image frames of a frame-stacked Box observation; it "
                f"cannot store Dict observations (keys {list(fields)}): use SegmentReplayBuffer"
            )
        if len(obs_shape) != 3 or obs_shape[0] % n_stack:
            raise ValueError(f"obs_shape must be (n_stack * c, H, W) with n_stack={n_stack}, got {obs_shape}")
        self._init_slots(buffer_size, n_steps, n_envs, obs_shape, obs_dtype, n_actions, state_size)
        self.n_stack = n_stack
        self.frame_shape = (obs_shape[0] // n_stack, *obs_shape[1:])
        check_memory(
            self.estimate_nbytes(
                self.capacity, n_steps, n_envs, obs_shape, n_stack, self.obs_dtype, n_actions, self.state_size
            ),
            f"buffer_size={buffer_size} (the replay memory)",
        )
        # frames[k, t, e]: the newest frame of x_{t+1} in slot k.
        self.frames = np.zeros((self.capacity, n_steps, n_envs, *self.frame_shape), dtype=self.obs_dtype)
        # The whole x_0 of (slot, env) where the previous slot cannot supply its older frames, and under
        # (slot, env, t) the whole x_t of segments that are not one frame stream (see put).
        self.heads: dict[tuple[int, ...], np.ndarray] = {}
        # x_T of the last segment put, to tell whether the next one continues it.
        self._last_tail: np.ndarray | None = None
        self._allocate_steps(np.int32, seed)

    @staticmethod
    def estimate_nbytes(
        capacity: int,
        n_steps: int,
        n_envs: int,
        obs_shape: tuple[int, ...],
        n_stack: int,
        obs_dtype: np.dtype | type,
        n_actions: int,
        state_size: int = 0,
    ) -> int:
        """Bytes of the buffer's arrays when full: one frame per step, plus about one slot of whole ``x_0``
        (the oldest slot's) and the last ``x_T`` (a stream that never breaks; each break adds one ``x_0``).
        """
        obs_bytes = int(np.prod(obs_shape, dtype=np.int64)) * np.dtype(obs_dtype).itemsize
        frame_bytes = obs_bytes // n_stack
        # Per step: frame, action (int32), reward (float32), mu (A x float32), terminated, truncated.
        per_step = frame_bytes + 4 + 4 + 4 * n_actions + 1 + 1
        # Per slot and env: T + 1 episode_starts flags, the initial LSTM state (h, c) of a recurrent policy.
        per_slot_env = n_steps * per_step + (n_steps + 1) + 2 * 4 * state_size
        return capacity * n_envs * per_slot_env + 2 * n_envs * obs_bytes

    def _extra_nbytes(self) -> int:
        tail = 0 if self._last_tail is None else self._last_tail.nbytes
        return int(sum(array.nbytes for array in self.heads.values())) + tail

    def bytes_per_transition(self) -> float:
        """``nbytes`` divided by the number of transitions the buffer holds when full."""
        return self.nbytes / (self.capacity * self.n_steps * self.n_envs)

    # ------------------------------------------------------------------ writing

    def _frames_of(self, observations: np.ndarray) -> np.ndarray:
        """``[..., n_stack * c, H, W]`` -> ``[..., n_stack, c, H, W]`` (a view)."""
        return observations.reshape(*observations.shape[:-3], self.n_stack, *self.frame_shape)

    def _one_stream(self, segment: Segment) -> np.ndarray:
        """``[E]``: whether env ``e``'s ``x_1 .. x_T`` each continue the frame stream (the previous
        observation shifted by one frame, or zero-padded at an episode start), as VecFrameStack makes them."""
        frames = self._frames_of(segment.observations)  # [T + 1, E, S, c, H, W]
        # x_{t+1} less its newest frame is x_t less its oldest, or zeros where x_{t+1} starts an episode.
        next_older, newest = frames[1:, :, :-1], frames[:-1, :, 1:]
        starts = np.asarray(segment.episode_starts, dtype=bool)
        continues = np.all((next_older == newest).reshape(*next_older.shape[:2], -1), axis=-1)  # [T, E]
        padded = ~np.any(frames[:, :, :-1].reshape(*frames.shape[:2], -1), axis=-1)  # [T + 1, E]
        ok = np.where(starts[1:], padded[1:], continues)
        ok_first = ~starts[0] | padded[0]
        return np.all(ok, axis=0) & ok_first

    def put(self, segment: Segment) -> None:
        """Store a segment, overwriting the oldest when full.

        An env whose observations are not one frame stream (the training env was stepped outside the
        rollout: ``evaluate_policy`` on ``model.get_env()`` between two ``learn``, an ``EvalCallback`` given
        the training env) has its ``x_1 .. x_T`` of this segment stored whole, under ``heads[(slot, env,
        t)]``, with a warning: reads return them as they were, as ``SegmentReplayBuffer``'s do.

        Raises:
            ValueError: if the segment's shape or dtype differs from the buffer's.
        """
        self._check_segment(segment)
        observations = np.asarray(segment.observations)
        if observations.dtype != self.obs_dtype:
            raise ValueError(f"observations are {observations.dtype}, the buffer stores {self.obs_dtype}")
        one_stream = self._one_stream(segment)
        if not one_stream.all():
            warnings.warn(
                f"the observations of env(s) {np.flatnonzero(~one_stream).tolist()} are not one frame stream "
                "(x_t is not x_(t-1) shifted by one frame): was the training env stepped outside learn "
                "(evaluate_policy on model.get_env(), an EvalCallback given the training env)? This "
                "segment's observations are stored whole",
                UserWarning,
                stacklevel=2,
            )

        idx = self.next_idx
        if self.num_in_buffer == self.capacity and self.capacity > 1:
            # Slot idx (the oldest) is overwritten: its successor becomes the oldest and needs its own x_0.
            successor = (idx + 1) % self.capacity
            for env in range(self.n_envs):
                if (successor, env) not in self.heads:
                    self.heads[(successor, env)] = self._stack_at(idx, env, self.n_steps)
        for env in range(self.n_envs):
            self.heads.pop((idx, env), None)
            for t in range(1, self.n_steps + 1):
                self.heads.pop((idx, env, t), None)
            if not one_stream[env]:
                for t in range(1, self.n_steps + 1):
                    self.heads[(idx, env, t)] = observations[t, env].copy()
            continues = (
                self._last_tail is not None
                and self.capacity > 1
                and np.array_equal(observations[0, env], self._last_tail[env])
            )
            if not continues:
                self.heads[(idx, env)] = observations[0, env].copy()

        self.frames[idx] = self._frames_of(observations[1:])[:, :, -1]
        self._last_tail = observations[-1].copy()
        self._store_steps(segment)

    # ------------------------------------------------------------------ state dict

    def _settings(self) -> dict[str, Any]:
        return {
            "n_steps": self.n_steps,
            "n_envs": self.n_envs,
            "obs_shape": self.obs_shape,
            "obs_dtype": self.obs_dtype,
            "n_stack": self.n_stack,
            "frame_shape": self.frame_shape,
            "n_actions": self.n_actions,
            "state_size": self.state_size,
        }

    @classmethod
    def _constructor_arguments(cls, state: Mapping[str, Any]) -> dict[str, Any]:
        return {**super()._constructor_arguments(state), "n_stack": state["n_stack"]}

    def _arrays(self) -> dict[str, np.ndarray]:
        return {"frames": self.frames, **super()._arrays()}

    def _extra_state(self) -> dict[str, Any]:
        """``heads`` (whole observations by ``(slot, env)`` or ``(slot, env, t)``) and ``_last_tail``."""
        return {"heads": dict(self.heads), "_last_tail": self._last_tail}

    def _checked_extra(self, state: Mapping[str, Any], copy: bool) -> dict[str, Any]:
        """``heads`` holding whole observations under keys of the buffer's slots, envs and steps, each
        whole segment complete, and ``_last_tail`` (``None`` or ``[E, *obs_shape]``)."""
        heads = state["heads"]
        if not isinstance(heads, dict):
            raise ValueError(f"heads is a {type(heads).__name__}, expected a dict")
        checked: dict[tuple[int, ...], np.ndarray] = {}
        for key, observation in heads.items():
            if not (
                isinstance(key, tuple)
                and len(key) in (2, 3)
                and all(isinstance(k, int) and not isinstance(k, bool) for k in key)
                and 0 <= key[0] < self.capacity
                and 0 <= key[1] < self.n_envs
                and (len(key) == 2 or 1 <= key[2] <= self.n_steps)
            ):
                raise ValueError(f"heads key {key!r} outside the buffer")
            checked[key] = checked_array(f"heads[{key!r}]", observation, self.obs_shape, self.obs_dtype, copy)
        for slot, env in {key[:2] for key in checked if len(key) == 3}:
            if any((slot, env, t) not in checked for t in range(1, self.n_steps + 1)):
                raise ValueError(f"heads hold part of the whole segment of slot {slot}, env {env}")
        tail = state["_last_tail"]
        if tail is not None:
            tail = checked_array("_last_tail", tail, (self.n_envs, *self.obs_shape), self.obs_dtype, copy)
        return {"heads": checked, "_last_tail": tail}

    def _stored_observations(self, checked: Mapping[str, Any]) -> Iterator[tuple[str, np.ndarray]]:
        for slot in range(checked["num_in_buffer"]):
            yield f"frames of slot {slot}", checked["frames"][slot]
        for key, observation in checked["heads"].items():
            yield f"heads[{key!r}]", observation
        if checked["_last_tail"] is not None:
            yield "_last_tail", checked["_last_tail"]

    def _apply(self, checked: Mapping[str, Any]) -> None:
        super()._apply(checked)
        self.heads = checked["heads"]
        self._last_tail = checked["_last_tail"]

    # ------------------------------------------------------------------ reading

    def _first_observation(self, slot: int, env: int) -> np.ndarray:
        """``x_0`` of env ``env`` in ``slot``: stored whole, or ``x_T`` of the slot written before it."""
        head = self.heads.get((slot, env))
        if head is not None:
            return head
        return self._stack_at((slot - 1) % self.capacity, env, self.n_steps)

    def _stack_at(self, slot: int, env: int, t: int) -> np.ndarray:
        """Rebuild ``x_t`` (``0 <= t <= T``) of env ``env`` in ``slot``."""
        if t == 0:
            return self._first_observation(slot, env)
        whole = self.heads.get((slot, env, t))
        if whole is not None:
            return whole
        stack = np.empty((self.n_stack, *self.frame_shape), dtype=self.obs_dtype)
        times = np.arange(t - self.n_stack + 1, t + 1)  # frame times u: x_u's newest frame
        first = self._frames_of(self._first_observation(slot, env)) if times[0] <= 0 else None
        starts = np.flatnonzero(self.episode_starts[slot, 1 : t + 1, env]) + 1
        last_start = int(starts[-1]) if len(starts) else -self.n_stack
        for channel, u in enumerate(times):
            if u < last_start:
                stack[channel] = 0
            elif u <= 0:
                assert first is not None
                stack[channel] = first[u + self.n_stack - 1]
            else:
                stack[channel] = self.frames[slot, u - 1, env]
        return stack.reshape(self.obs_shape)

    def _rebuild(self, slots: np.ndarray) -> np.ndarray:
        """Observations ``[T + 1, E, *obs_shape]``: env ``e``'s part of slot ``slots[e]``, for each ``e``."""
        n_stack, n_steps, envs = self.n_stack, self.n_steps, np.arange(self.n_envs)
        # ext[j]: frame of time j - (n_stack - 1): x_0's frames, then the newest frames of x_1 .. x_T.
        ext = np.empty((n_stack + n_steps, self.n_envs, *self.frame_shape), dtype=self.obs_dtype)
        for env, slot in enumerate(slots):
            ext[:n_stack, env] = self._frames_of(self._first_observation(int(slot), env))
        ext[n_stack:] = np.swapaxes(self.frames[slots, :, envs], 0, 1)
        t = np.arange(n_steps + 1)
        index = t[:, None] + np.arange(n_stack)[None, :]  # [T + 1, S]: ext index of x_t's channel c
        # One gather straight into the output layout (a gather then a transposing copy took 4x as long).
        out = ext[index[:, None, :], envs[None, :, None]]  # [T + 1, E, S, c, H, W]
        # The frame of time u in x_t is zero if an episode starts at some v in (u, t] (x_0's own padding
        # is already in x_0).
        starts = self.episode_starts[slots, :, envs].T  # [T + 1, E]
        start_times = np.where(starts & (t[:, None] >= 1), t[:, None], -n_stack)
        last_start = np.maximum.accumulate(start_times, axis=0)  # [T + 1, E]
        frame_time = index - (n_stack - 1)  # [T + 1, S]
        out[frame_time[:, None, :] < last_start[:, :, None]] = 0
        out = out.reshape(n_steps + 1, self.n_envs, *self.obs_shape)
        for env_index, slot in enumerate(slots):
            if (int(slot), env_index, 1) in self.heads:  # a segment kept whole (its frame stream broke)
                for step in range(1, n_steps + 1):
                    out[step, env_index] = self.heads[(int(slot), env_index, step)]
        return out

    def get(self, slots: np.ndarray) -> Segment:
        """Assemble the segment made of env ``e``'s part of slot ``slots[e]``, for every ``e``, rebuilding
        the frame stacks.

        Raises:
            ValueError: unless ``slots`` holds one index per environment, each of a stored segment.
        """
        return self._assemble(slots, self._rebuild)

"""What both replay memories share (NumPy only; they never see a torch module or an environment).

The unit of storage is a whole on-policy segment of ``T`` steps for each of the ``E`` environments, with the
behaviour probabilities ``mu``. A replay batch takes, for every environment ``e`` independently, env ``e``'s
part of a uniformly drawn slot, using env ``e``'s own seeded generator (as SB2 and openai/baselines do,
which decorrelates the ``E`` sequences of a batch). ``buffer_size`` counts steps per environment, so the
memory holds ``buffer_size // T`` segments. For recurrent policies (``state_size > 0``) it also keeps, per
slot and environment, the LSTM state ``(h, c)`` with which the segment started, so that a replayed segment
is unrolled from the state its behaviour probabilities were computed with.

:class:`SlotReplay` holds the slot bookkeeping, sampling, the assembly of a batch and the state dict
(:meth:`~SlotReplay.state_dict`, :meth:`~SlotReplay.load_state_dict`); the subclasses store observations
their own way.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

import numpy as np

from sb3_acer.common.checks.fields import NON_NEGATIVE, Rule, check, check_finite_arrays, is_integer
from sb3_acer.common.save_util.rng_state import generator_from_state, generator_state
from sb3_acer.common.type_aliases import Segment, final_index_inside

__all__ = [
    "SlotReplay",
    "available_memory_bytes",
    "check_memory",
    "check_sizes",
    "checked_array",
    "described",
    "warn_if_too_large",
]

SelfSlotReplay = TypeVar("SelfSlotReplay", bound="SlotReplay")


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


def warn_if_too_large(nbytes: int) -> None:
    """Warn (``ResourceWarning``) if a buffer of ``nbytes`` does not fit the memory available now."""
    available = available_memory_bytes()
    if available is not None and nbytes > available:
        warnings.warn(
            f"The replay buffer needs about {nbytes / 1e9:.2f} GB but only {available / 1e9:.2f} GB are "
            "available; reduce buffer_size or n_envs, or expect swapping or an out-of-memory error.",
            ResourceWarning,
            stacklevel=3,
        )


def check_memory(nbytes: int, setting: str) -> None:
    """Raise ``ValueError`` naming ``setting`` if arrays of ``nbytes`` exceed this machine's memory (their
    allocation fails, or succeeds and the process is killed once they fill up); warn
    (:func:`warn_if_too_large`) if they exceed the memory available now."""
    try:
        total = int(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        total = None
    if total is not None and nbytes > total:
        raise ValueError(
            f"{setting} needs {nbytes:,} bytes ({nbytes / 1e9:.3g} GB), more than this machine's memory "
            f"({total / 1e9:.3g} GB); reduce buffer_size, n_steps or the number of environments"
        )
    warn_if_too_large(nbytes)


def check_sizes(buffer_size: int, state_size: int, **positive: int) -> None:
    """Raise ``ValueError`` unless the ``positive`` sizes (``n_steps`` first) are, ``buffer_size`` holds one
    segment of ``n_steps`` and ``state_size`` is non-negative."""
    if any(size <= 0 for size in positive.values()):
        names = list(positive)
        raise ValueError(
            f"{', '.join(names[:-1])} and {names[-1]} must be positive, got "
            f"{', '.join(str(size) for size in positive.values())}"
        )
    n_steps = positive["n_steps"]
    if buffer_size < n_steps:
        raise ValueError(
            f"buffer_size ({buffer_size}) must be at least n_steps ({n_steps}) to hold one segment"
        )
    check(state_size, "state_size", NON_NEGATIVE)


def described(value: Any) -> str:
    """``float32[3, 4]`` for an array, its type's name for anything else (for error messages)."""
    if isinstance(value, np.ndarray):
        return f"{value.dtype}{list(value.shape)}"
    return type(value).__name__


def checked_array(name: str, value: Any, shape: tuple[int, ...], dtype: np.dtype, copy: bool) -> np.ndarray:
    """``value`` (a copy if ``copy`` or if it is read-only) if it is an array of ``shape`` and ``dtype``.

    Raises:
        ValueError: naming ``name``, otherwise.
    """
    if not isinstance(value, np.ndarray) or value.shape != shape or value.dtype != dtype:
        raise ValueError(f"{name} is {described(value)}, expected {dtype}{list(shape)}")
    return np.array(value, copy=True) if copy or not value.flags.writeable else value


def _counter(upper: int) -> Rule:
    """A counter of a state: a whole number in ``[0, upper]``."""
    return Rule(
        lambda value: is_integer(value) and 0 <= value <= upper,
        f"[0, {upper}]",
        "{name}={value!r} outside {text}",
    )


def _same_setting(saved: Any, own: Any) -> bool:
    if isinstance(own, np.dtype):
        return isinstance(saved, np.dtype) and saved == own
    if isinstance(own, tuple):
        return isinstance(saved, tuple) and saved == own
    return is_integer(saved) and saved == own


class SlotReplay:
    """What both replay memories share: per-environment seeded slot sampling, segment checks, the assembly
    of a time-major batch from env ``e``'s part of slot ``slots[e]``, and the state dict.

    Subclasses call :meth:`_init_slots` and :meth:`_allocate_steps` from their constructor, keep their
    observations in arrays they list in :meth:`_arrays`, and pass a reader of them to :meth:`_assemble`.
    """

    #: The settings a state dict must hold to make a buffer (:meth:`from_state_dict`).
    REQUIRED_SETTINGS: tuple[str, ...] = ("capacity", "n_steps", "n_envs", "obs_shape", "n_actions")
    n_steps: int
    n_envs: int
    n_actions: int
    #: 0 for ``Discrete`` actions (stored ``[T, E]``), else the flat action size (``[T, E, action_size]``,
    #: with ``n_actions`` the size of the behaviour statistics; see :mod:`sb3_acer.common.distributions`).
    action_size: int = 0
    obs_shape: tuple[int, ...]
    obs_dtype: np.dtype
    state_size: int
    capacity: int
    next_idx: int
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

    # ------------------------------------------------------------------------------------------ set-up

    def _init_slots(
        self,
        buffer_size: int,
        n_steps: int,
        n_envs: int,
        obs_shape: tuple[int, ...],
        obs_dtype: np.dtype | type,
        n_actions: int,
        state_size: int,
    ) -> None:
        """Set the settings and empty counters (the sizes checked by :func:`check_sizes` first)."""
        self.n_steps = n_steps
        self.n_envs = n_envs
        self.obs_shape = tuple(obs_shape)
        self.obs_dtype = np.dtype(obs_dtype)
        self.n_actions = n_actions
        self.state_size = int(state_size)
        self.capacity = buffer_size // n_steps
        self.next_idx = 0
        self.num_in_buffer = 0

    def _allocate_steps(self, action_dtype: type, seed: int | None) -> None:
        """Allocate the per-step arrays, the empty truncation rows, and seed the sampling generators."""
        slots, steps, envs = self.capacity, self.n_steps, self.n_envs
        action_shape = (self.action_size,) if self.action_size else ()
        self.actions = np.zeros((slots, steps, envs, *action_shape), dtype=action_dtype)
        self.rewards = np.zeros((slots, steps, envs), dtype=np.float32)
        self.mu_probs = np.zeros((slots, steps, envs, self.n_actions), dtype=np.float32)
        self.terminated = np.zeros((slots, steps, envs), dtype=bool)
        self.truncated = np.zeros((slots, steps, envs), dtype=bool)
        self.episode_starts = np.zeros((slots, steps + 1, envs), dtype=bool)
        # LSTM state (h, c) at the start of each slot's segment, per env (empty for feed-forward policies).
        self.initial_h = np.zeros((slots, envs, self.state_size), dtype=np.float32)
        self.initial_c = np.zeros((slots, envs, self.state_size), dtype=np.float32)
        # Observations at which an episode was truncated, per slot: (index [K, 2] of (t, e), obs [K, ...]).
        empty = (np.zeros((0, 2), dtype=np.int64), np.zeros((0, *self.obs_shape), dtype=self.obs_dtype))
        self.final = [empty] * slots
        self.seed(seed)

    def seed(self, seed: int | None) -> None:
        """Re-seed the per-environment sampling generators."""
        children = np.random.SeedSequence(seed).spawn(self.n_envs)
        self.rngs = [np.random.default_rng(child) for child in children]

    @property
    def nbytes(self) -> int:
        """Bytes the buffer's arrays take (excluding the rare truncation observations)."""
        return int(sum(array.nbytes for array in self._arrays().values())) + self._extra_nbytes()

    def _extra_nbytes(self) -> int:
        return 0

    def __len__(self) -> int:
        """Number of segments stored."""
        return self.num_in_buffer

    def has_at_least(self, steps_per_env: int) -> bool:
        """Whether at least ``steps_per_env // T`` segments are stored (SB2's ``has_atleast``)."""
        return self.num_in_buffer > 0 and self.num_in_buffer >= steps_per_env // self.n_steps

    # ------------------------------------------------------------------------------------------ writing

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
        if segment.actions.shape[2:] != ((self.action_size,) if self.action_size else ()):
            raise ValueError(
                f"actions must be [T, E{f', {self.action_size}' if self.action_size else ''}], "
                f"got {tuple(segment.actions.shape)}"
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

    def _store_steps(self, segment: Segment) -> None:
        """Write everything but the observations of ``segment`` to slot ``next_idx``, then advance it."""
        idx = self.next_idx
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

    # ------------------------------------------------------------------------------------------ reading

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
            actions=(
                self._take(self.actions, slots)
                if self.action_size
                else self._take(self.actions, slots).astype(np.int64, copy=False)
            ),
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

    # ------------------------------------------------------------------------------------------ state dict

    def _settings(self) -> dict[str, Any]:
        """The settings a state must share with this buffer, in the state dict's order."""
        raise NotImplementedError

    def _arrays(self) -> dict[str, np.ndarray]:
        """The fixed-shape arrays of the state, by name (subclasses put their observations first)."""
        return {
            "actions": self.actions,
            "rewards": self.rewards,
            "mu_probs": self.mu_probs,
            "terminated": self.terminated,
            "truncated": self.truncated,
            "episode_starts": self.episode_starts,
            "initial_h": self.initial_h,
            "initial_c": self.initial_c,
        }

    def _extra_state(self) -> dict[str, Any]:
        """The subclass's entries of the state besides its arrays."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        """The buffer's whole state as plain values: settings (ints, shape tuples, the observation dtype),
        the counters ``next_idx`` and ``num_in_buffer``, the arrays, ``final`` (one ``(index, observations)``
        pair of arrays per slot), and ``rngs`` (the sampling generators' states).

        The arrays are the buffer's own, not copies: copy the state before changing the buffer if it is
        to be kept. :mod:`sb3_acer.common.save_util.replay_file` writes this dict to a file.
        """
        return {
            **self._settings(),
            "capacity": self.capacity,
            "next_idx": self.next_idx,
            "num_in_buffer": self.num_in_buffer,
            **self._arrays(),
            **self._extra_state(),
            "final": list(self.final),
            "rngs": [generator_state(rng) for rng in self.rngs],
        }

    def load_state_dict(self, state: Mapping[str, Any], *, copy: bool = True) -> None:
        """Replace the buffer's contents by ``state`` (from :meth:`state_dict` of a buffer with the same
        settings), after checking all of it: settings, shapes and dtypes, counters, generator states, and
        values :meth:`put` could have stored. A state that fails leaves the buffer as it was.

        Args:
            state: the state.
            copy: copy the state's arrays (default); ``False`` makes the buffer take them, for arrays no
                one else holds (those just read from a file).

        Raises:
            ValueError: naming the first entry that does not fit.
        """
        self._apply(self._checked_state(state, copy))

    @classmethod
    def from_state_dict(
        cls: type[SelfSlotReplay], state: Mapping[str, Any], *, copy: bool = True
    ) -> SelfSlotReplay:
        """A buffer with the settings of ``state``, holding its contents (see :meth:`load_state_dict`).

        Raises:
            ValueError: if ``state`` lacks a setting or does not fit the buffer its settings make.
        """
        buffer = cls(**cls._constructor_arguments(state))
        buffer.load_state_dict(state, copy=copy)
        return buffer

    @classmethod
    def _constructor_arguments(cls, state: Mapping[str, Any]) -> dict[str, Any]:
        """The constructor arguments that make a buffer of ``state``'s settings (no ``seed``)."""
        missing = [name for name in cls.REQUIRED_SETTINGS if name not in state]
        if missing:
            raise ValueError(f"the state lacks the settings {missing}")
        return {
            "buffer_size": int(state["capacity"]) * int(state["n_steps"]),
            **{name: state[name] for name in ("n_steps", "n_envs", "obs_shape", "n_actions")},
            **{
                name: state[name]
                for name in ("obs_dtype", "state_size", "action_size", "action_dtype")
                if name in state
            },
        }

    def check_values(self) -> None:
        """Raise ``ValueError`` unless the buffer holds a state :meth:`load_state_dict` would accept: values
        :meth:`put` could have stored (for a restored file: an action out of range would otherwise fail at
        the next update), arrays of the buffer's shapes."""
        self._checked_state(self.state_dict(), copy=False)

    def _checked_state(self, state: Mapping[str, Any], copy: bool) -> dict[str, Any]:
        """The contents of ``state`` to install, all checked (copied if ``copy``)."""
        own = self.state_dict()
        if set(state) != set(own):
            missing, unknown = sorted(set(own) - set(state)), sorted(set(state) - set(own))
            raise ValueError(
                f"the state's entries differ from this buffer's: missing {missing}, unknown {unknown}"
            )
        for name, value in {**self._settings(), "capacity": self.capacity}.items():
            if not _same_setting(state[name], value):
                raise ValueError(f"{name} is {state[name]!r}, this buffer has {name}={value!r}")
        for name, upper in (("next_idx", self.capacity - 1), ("num_in_buffer", self.capacity)):
            check(state[name], name, _counter(upper))
        checked: dict[str, Any] = {
            "next_idx": int(state["next_idx"]),
            "num_in_buffer": int(state["num_in_buffer"]),
            **{
                name: checked_array(name, state[name], array.shape, array.dtype, copy)
                for name, array in self._arrays().items()
            },
            "final": self._checked_final(state["final"], copy),
            **self._checked_extra(state, copy),
        }
        rngs = state["rngs"]
        if not isinstance(rngs, list | tuple) or len(rngs) != self.n_envs:
            raise ValueError(f"rngs must hold {self.n_envs} generator states, got {described(rngs)}")
        checked["rngs"] = [generator_from_state(rng) for rng in rngs]
        self._check_values(checked)
        return checked

    def _checked_final(self, final: Any, copy: bool) -> list[tuple[np.ndarray, np.ndarray]]:
        """``final`` with one ``(int64 [K, 2] index, observations [K, ...])`` pair per slot."""
        if not isinstance(final, list | tuple) or len(final) != self.capacity:
            length = len(final) if isinstance(final, list | tuple) else described(final)
            raise ValueError(f"final has {length} items, expected {self.capacity}")
        checked = []
        for slot, item in enumerate(final):
            index, observations = item if isinstance(item, tuple | list) and len(item) == 2 else (None, None)
            if not (
                isinstance(index, np.ndarray)
                and isinstance(observations, np.ndarray)
                and index.dtype == np.int64
                and index.shape[1:] == (2,)
                and observations.dtype == self.obs_dtype
                and observations.shape[1:] == self.obs_shape
            ):
                raise ValueError(
                    f"final[{slot}] is not a pair of int64[K, 2] indices and {self.obs_dtype}"
                    f"[K, {', '.join(map(str, self.obs_shape))}] observations"
                )
            if len(index) != len(observations):
                raise ValueError(
                    f"final[{slot}] has {len(index)} indices for {len(observations)} observations"
                )
            checked.append((np.array(index), np.array(observations)) if copy else (index, observations))
        return checked

    def _checked_extra(self, state: Mapping[str, Any], copy: bool) -> dict[str, Any]:
        """The subclass's entries of ``state`` besides its arrays, checked (copied if ``copy``)."""
        return {}

    def _check_values(self, checked: Mapping[str, Any]) -> None:
        """Raise ``ValueError`` unless the stored segments of ``checked`` hold values :meth:`put` could
        have stored."""
        filled = slice(0, checked["num_in_buffer"])
        actions = checked["actions"][filled]
        mu = checked["mu_probs"][filled]
        if self.action_size:
            # Flat actions and behaviour statistics of a Box / MultiDiscrete / MultiBinary space.
            check_finite_arrays("actions or mu_probs", actions, mu)
        else:
            if actions.size and (actions.min() < 0 or actions.max() >= self.n_actions):
                bad = actions[(actions < 0) | (actions >= self.n_actions)]
                raise ValueError(f"actions outside [0, {self.n_actions}): {bad[0]}")
            if not (np.isfinite(mu).all() and (mu >= 0).all() and (mu <= 1).all()):
                raise ValueError("mu_probs hold NaN or values outside [0, 1]")
            if mu.size and np.abs(mu.sum(axis=-1) - 1).max() > 1e-3:
                raise ValueError("mu_probs of a stored step do not sum to 1")
        check_finite_arrays("rewards", checked["rewards"][filled])
        check_finite_arrays(
            "the initial LSTM states", checked["initial_h"][filled], checked["initial_c"][filled]
        )
        for slot, (index, observations) in enumerate(checked["final"][filled]):
            if not final_index_inside(index, self.n_steps, self.n_envs):
                raise ValueError(
                    f"final[{slot}] indexes outside the segment [T={self.n_steps}, E={self.n_envs}]"
                )
            check_finite_arrays(f"final[{slot}] observations", observations)
        for name, observations in self._stored_observations(checked):
            check_finite_arrays(name, observations)

    def _stored_observations(self, checked: Mapping[str, Any]) -> Iterator[tuple[str, np.ndarray]]:
        """The observations of ``checked`` besides ``final``, in pieces, each named for an error message."""
        return iter(())

    def _apply(self, checked: Mapping[str, Any]) -> None:
        """Install the checked contents."""
        for name in self._arrays():
            setattr(self, name, checked[name])
        self.next_idx = checked["next_idx"]
        self.num_in_buffer = checked["num_in_buffer"]
        self.final = list(checked["final"])
        self.rngs = list(checked["rngs"])

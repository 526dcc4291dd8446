"""Dict observations (``gymnasium.spaces.Dict``) in the one-array form that segments, the replay memory
and the replay file keep, and helpers for batches that are an array or tensor or a dict of them (no torch
import, no environment code).

An environment with a ``Dict`` observation space returns a dict of arrays, one per key. Everything that
stores, indexes, stacks or saves observations keeps them as one NumPy *structured* array instead: one field
per key, in the space's key order, each field of the key's shape and dtype, so that a segment's
``[T + 1, E]`` observations are one array whatever the space, and a key's data is ``array[key]``.
:func:`pack_observations` makes that array of the env's dict (at the rollout), :func:`unpack_observations`
gives the dict of per-key arrays back (at the update, for the policy's ``CombinedExtractor``).

Any other space keeps its observations as a plain array of its shape and dtype, unchanged by both.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np
from gymnasium import spaces

__all__ = [
    "ObservationArrays",
    "all_finite",
    "dtype_from_json",
    "dtype_to_json",
    "first_rows",
    "leading_shape",
    "map_observations",
    "observation_layout",
    "pack_observations",
    "shapes_of",
    "unpack_observations",
]

#: An observation (or a batch) as an environment returns it: one array, or a dict of arrays for a ``Dict``
#: observation space.
ObservationArrays = np.ndarray | dict[str, np.ndarray]

T = TypeVar("T")


def observation_layout(space: spaces.Space) -> tuple[tuple[int, ...], np.dtype]:
    """Shape and dtype in which one observation of ``space`` is stored.

    A ``Dict`` space's observation is one element (shape ``()``) of a structured dtype with a field per key
    (its subspace's shape and dtype, in the space's key order); any other space's is its own shape and
    dtype (``float32`` if it has none).
    """
    if isinstance(space, spaces.Dict):
        fields = [
            (str(key), np.dtype(subspace.dtype or np.float32), tuple(subspace.shape or ()))
            for key, subspace in space.spaces.items()
        ]
        return (), np.dtype(fields)
    return tuple(space.shape or ()), np.dtype(space.dtype if space.dtype is not None else np.float32)


def pack_observations(observations: Any, dtype: np.dtype) -> np.ndarray:
    """``observations`` as an array of ``dtype``: for a structured ``dtype`` (see
    :func:`observation_layout`), the dict of per-key arrays (with the same leading axes, e.g. ``[E]``, or
    none for one observation) packed into one structured array; otherwise ``np.asarray(observations,
    dtype)``.

    Raises:
        ValueError: a structured ``dtype`` and ``observations`` is not a dict of its keys, or the keys'
            leading axes differ.
    """
    if dtype.names is None:
        return np.asarray(observations, dtype=dtype)
    if not isinstance(observations, Mapping) or set(observations) != set(dtype.names):
        keys = sorted(observations) if isinstance(observations, Mapping) else type(observations).__name__
        raise ValueError(f"expected a dict of observations with keys {list(dtype.names)}, got {keys}")
    lead: tuple[int, ...] | None = None
    for name in dtype.names:
        array = np.asarray(observations[name])
        field_shape = dtype[name].shape
        own_lead = array.shape[: array.ndim - len(field_shape)]
        if array.shape[len(own_lead) :] != field_shape or (lead is not None and own_lead != lead):
            expected = f"(*{lead or '...'}, *{field_shape})"
            raise ValueError(f"observation key {name!r} has shape {array.shape}, expected {expected}")
        lead = own_lead
    packed = np.empty(lead or (), dtype=dtype)
    for name in dtype.names:
        packed[name] = observations[name]
    return packed


def unpack_observations(array: np.ndarray) -> ObservationArrays:
    """The dict of per-key arrays (each contiguous, a copy) of a structured ``array``; any other array as
    it is."""
    if array.dtype.names is None:
        return array
    return {name: np.ascontiguousarray(array[name]) for name in array.dtype.names}


def map_observations(function: Callable[[Any], Any], observations: T) -> T:
    """``function`` applied to a batch of observations (an array or a tensor), or to each value of a dict
    of them."""
    if isinstance(observations, dict):
        return {key: function(value) for key, value in observations.items()}  # type: ignore[return-value]
    return function(observations)


def first_rows(observations: T, n_rows: int) -> T:
    """The first ``n_rows`` rows of a batch of observations: an array or tensor, or a dict of them."""
    return map_observations(lambda value: value[:n_rows], observations)


def leading_shape(observations: Any, n_axes: int = 1) -> tuple[int, ...]:
    """The first ``n_axes`` axes of a batch of observations (an array or tensor, or a dict of them whose
    values share them), e.g. ``(T, B)``."""
    first = next(iter(observations.values())) if isinstance(observations, dict) else observations
    return tuple(int(size) for size in first.shape[:n_axes])


def shapes_of(observations: Any) -> Any:
    """The shape of a batch of observations (an array or tensor), or the shape of each value of a dict of
    them, for messages."""
    if isinstance(observations, dict):
        return {key: tuple(value.shape) for key, value in observations.items()}
    return tuple(observations.shape)


def all_finite(observations: np.ndarray) -> bool:
    """Whether ``observations`` (a plain or a structured array) hold no NaN or inf (integers always do)."""
    if observations.dtype.names is not None:
        return all(all_finite(observations[name]) for name in observations.dtype.names)
    return not np.issubdtype(observations.dtype, np.inexact) or bool(np.isfinite(observations).all())


def dtype_to_json(dtype: np.dtype) -> str | list[list[Any]]:
    """``dtype`` as JSON data: its ``str`` (``"<f4"``), or for a structured dtype one ``[name, dtype str,
    shape]`` per field."""
    if dtype.names is None:
        return dtype.str
    return [[name, dtype[name].base.str, list(dtype[name].shape)] for name in dtype.names]


def dtype_from_json(value: Any) -> np.dtype:
    """The dtype :func:`dtype_to_json` wrote.

    Raises:
        ValueError: for anything else, or a dtype holding Python objects (whose arrays are pickles).
    """
    try:
        if isinstance(value, str):
            dtype = np.dtype(value)
        elif isinstance(value, list) and value:
            dtype = np.dtype(
                [
                    (str(name), np.dtype(str(base)), tuple(int(size) for size in shape))
                    for name, base, shape in value
                ]
            )
        else:
            raise TypeError(f"not a dtype description: {value!r}")
    except (TypeError, ValueError) as error:
        raise ValueError(f"invalid dtype {value!r}: {error}") from None
    if dtype.hasobject:
        raise ValueError(f"object dtype {value!r} refused")
    return dtype

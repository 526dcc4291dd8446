"""Random generator states as JSON data: NumPy generators (the replay memory's sampling, ACER's replay
counts) and the global generators of Python, NumPy and torch, for checkpoints that resume exactly.

The two generator functions use NumPy only, so that the replay memory, which keeps its sampling
generators' states in its state dict, never imports torch; the two global-state functions import torch
when they are called (torch is loaded by then: only the algorithm calls them).
"""

from __future__ import annotations

import base64
import random
from typing import Any

import numpy as np

__all__ = [
    "BIT_GENERATORS",
    "generator_from_state",
    "generator_state",
    "global_rng_states",
    "jsonable",
    "set_global_rng_states",
]

#: NumPy bit generators a file may name (``Generator.bit_generator.state["bit_generator"]``).
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")


def jsonable(value: Any) -> Any:
    """``value`` with NumPy arrays and scalars turned into lists and Python numbers, dict keys into text."""
    if isinstance(value, dict):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def generator_state(generator: np.random.Generator) -> dict[str, Any]:
    """The state of a NumPy generator as JSON data (its bit generator's ``state`` dict)."""
    return jsonable(generator.bit_generator.state)


def generator_from_state(state: Any) -> np.random.Generator:
    """A NumPy generator in the state ``state`` (from :func:`generator_state`).

    Raises:
        ValueError: if the state is malformed or names an unknown bit generator.
    """
    name = state.get("bit_generator") if isinstance(state, dict) else None
    if name not in BIT_GENERATORS:
        raise ValueError(f"unknown bit generator {name!r}; expected one of {BIT_GENERATORS}")
    bit_generator = getattr(np.random, name)()
    try:
        bit_generator.state = state
    except (TypeError, ValueError, KeyError, IndexError, OverflowError) as error:
        raise ValueError(f"malformed {name} state: {error}") from error
    return np.random.Generator(bit_generator)


def _bytes_to_text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def global_rng_states() -> dict[str, Any]:
    """The states of Python's ``random``, NumPy's global generator and torch's generators, as JSON data."""
    import torch as th

    version, internal, gauss_next = random.getstate()
    name, key, pos, has_gauss, cached_gaussian = np.random.get_state(legacy=True)
    states: dict[str, Any] = {
        "python": {"version": version, "internal": list(internal), "gauss_next": gauss_next},
        "numpy": {
            "bit_generator": name,
            "key": np.asarray(key).tolist(),
            "pos": int(pos),
            "has_gauss": int(has_gauss),
            "cached_gaussian": float(cached_gaussian),
        },
        "torch": _bytes_to_text(th.get_rng_state().numpy().tobytes()),
    }
    if th.cuda.is_available() and th.cuda.is_initialized():
        states["torch_cuda"] = [_bytes_to_text(s.numpy().tobytes()) for s in th.cuda.get_rng_state_all()]
    return states


def set_global_rng_states(states: Any) -> None:
    """Restore states from :func:`global_rng_states`; all are checked before any is set.

    The CUDA states are restored only where CUDA is available with as many devices as when they were saved.

    Raises:
        ValueError: if a state is malformed (nothing is changed then).
    """
    import torch as th

    def to_tensor(text: str) -> th.Tensor:
        return th.frombuffer(bytearray(base64.b64decode(text, validate=True)), dtype=th.uint8)

    try:
        python = states["python"]
        python_state = (
            int(python["version"]),
            tuple(int(x) for x in python["internal"]),
            python["gauss_next"],
        )
        numpy = states["numpy"]
        numpy_state = (
            str(numpy["bit_generator"]),
            np.asarray(numpy["key"], dtype=np.uint32),
            int(numpy["pos"]),
            int(numpy["has_gauss"]),
            float(numpy["cached_gaussian"]),
        )
        torch_state = to_tensor(states["torch"])
        cuda_states = [to_tensor(text) for text in states.get("torch_cuda", [])]
        # Try each on a scratch generator first, so that a bad state changes nothing.
        random.Random().setstate(python_state)
        np.random.RandomState().set_state(numpy_state)
        th.Generator().set_state(torch_state)
    except (
        KeyError,
        IndexError,
        TypeError,
        ValueError,
        OverflowError,
        RuntimeError,
        AttributeError,
    ) as error:
        raise ValueError(f"malformed random generator states: {error!r}") from error
    random.setstate(python_state)
    np.random.set_state(numpy_state)
    th.set_rng_state(torch_state)
    if cuda_states and th.cuda.is_available() and th.cuda.device_count() == len(cuda_states):
        th.cuda.set_rng_state_all(cuda_states)

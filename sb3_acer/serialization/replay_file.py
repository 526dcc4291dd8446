"""Replay buffers and random-generator states as data, for checkpoints that resume training exactly.

Layout of a replay buffer file (``format_version`` 1), a zip archive::

    replay_buffer.json         format, version, library versions, buffer class and its state as JSON
    replay_buffer/<name>.npy   one NumPy array per entry (``np.save`` format, read without pickle)

A model file saved with ``ACER.save(path, include=["replay_buffer"])`` holds the same entries beside its
own, so that one file (written atomically) is a whole checkpoint.

Which buffers can be saved: any class registered in :func:`buffer_classes` whose constructor arguments
are attributes of the same name (``buffer_size`` is rebuilt as ``capacity * n_steps``; ``seed`` is not
needed) and whose state lives in attributes holding NumPy arrays, NumPy generators, dtypes, numbers,
strings, ``None``, or tuples, lists and dicts of these. Loading builds a fresh buffer with those
constructor arguments, then replaces its attributes by the saved ones after checking that every array
has the shape and dtype the fresh buffer has. ``SegmentReplayBuffer`` and ``FrameStackReplayBuffer``
follow this protocol as they are.

Nothing is unpickled: JSON is parsed, and arrays are read as raw numbers after their ``.npy`` header has
been checked (object arrays, whose ``.npy`` form is a pickle, are refused).
"""

from __future__ import annotations

import base64
import inspect
import io
import json
import pathlib
import platform
import random
import zipfile
import zlib
from typing import IO, Any

import numpy as np
import torch as th

from sb3_acer.replay.segment_buffer import SegmentReplayBuffer
from sb3_acer.serialization.model_file import ModelFileError, PathOrFile, write_atomically

__all__ = [
    "BUFFER_FORMAT_NAME",
    "BUFFER_FORMAT_VERSION",
    "ReplayBufferFileError",
    "buffer_classes",
    "check_buffer_matches",
    "generator_from_state",
    "global_rng_states",
    "load_buffer",
    "read_buffer_entries",
    "save_buffer",
    "set_global_rng_states",
    "write_buffer_entries",
]

BUFFER_FORMAT_NAME = "sb3-acer-replay-buffer"
BUFFER_FORMAT_VERSION = 1
BUFFER_ENTRY = "replay_buffer.json"
ARRAY_FOLDER = "replay_buffer/"
#: NumPy bit generators a file may name (``Generator.bit_generator.state["bit_generator"]``).
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64")
_READ_CHUNK = 1 << 24


class ReplayBufferFileError(ModelFileError):
    """A replay buffer file is damaged, not a replay buffer file, or of an unsupported format version."""


def buffer_classes() -> dict[str, type]:
    """The replay buffer classes a file may name, by class name."""
    classes: dict[str, type] = {"SegmentReplayBuffer": SegmentReplayBuffer}
    try:
        from sb3_acer.replay.frame_buffer import FrameStackReplayBuffer
    except ImportError:  # pragma: no cover - the frame buffer module is optional
        pass
    else:
        classes["FrameStackReplayBuffer"] = FrameStackReplayBuffer
    return classes


# ---------------------------------------------------------------------------------------------- generators


def generator_state(generator: np.random.Generator) -> dict[str, Any]:
    """The state of a NumPy generator as JSON data (its bit generator's ``state`` dict)."""
    return _jsonable(generator.bit_generator.state)


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


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _bytes_to_text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _text_to_tensor(text: str) -> th.Tensor:
    return th.frombuffer(bytearray(base64.b64decode(text, validate=True)), dtype=th.uint8)


def global_rng_states() -> dict[str, Any]:
    """The states of Python's ``random``, NumPy's global generator and torch's generators, as JSON data."""
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
        torch_state = _text_to_tensor(states["torch"])
        cuda_states = [_text_to_tensor(text) for text in states.get("torch_cuda", [])]
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


# ---------------------------------------------------------------------------------------------- encoding


def _is_ragged(value: list[Any]) -> bool:
    """A non-empty list of equally long tuples of arrays, each position with one dtype and row shape."""
    if not value or not all(isinstance(item, tuple) for item in value):
        return False
    width = len(value[0])
    if width == 0 or any(len(item) != width for item in value):
        return False
    for position in range(width):
        column = [item[position] for item in value]
        if not all(isinstance(array, np.ndarray) and array.ndim >= 1 for array in column):
            return False
        first = column[0]
        if any(array.dtype != first.dtype or array.shape[1:] != first.shape[1:] for array in column):
            return False
    return True


class _Encoder:
    """Turns a value tree into JSON data plus named arrays."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, value: np.ndarray, name: str) -> dict[str, str]:
        if value.dtype.hasobject:
            raise TypeError(f"replay buffer attribute {name} is an object array; it cannot be saved as data")
        self.arrays[name] = value
        return {"__array__": name}

    def encode(self, value: Any, name: str) -> Any:
        if value is None or isinstance(value, bool | int | float | str):
            return value
        if isinstance(value, np.ndarray):
            return self.array(value, name)
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.dtype):
            return {"__dtype__": value.str}
        if isinstance(value, np.random.Generator):
            return {"__generator__": generator_state(value)}
        if isinstance(value, tuple):
            return {"__tuple__": [self.encode(item, f"{name}.{i}") for i, item in enumerate(value)]}
        if isinstance(value, list):
            if _is_ragged(value):
                # One array per tuple position, the items' arrays concatenated along the first axis.
                columns = list(zip(*value, strict=True))
                return {
                    "__ragged__": {
                        "lengths": self.array(
                            np.array([[len(array) for array in item] for item in value], dtype=np.int64),
                            f"{name}.lengths",
                        ),
                        "columns": [
                            self.array(np.concatenate(column, axis=0), f"{name}.{position}")
                            for position, column in enumerate(columns)
                        ],
                    }
                }
            return [self.encode(item, f"{name}.{i}") for i, item in enumerate(value)]
        if isinstance(value, dict):
            return {
                "__items__": [
                    [self.encode(key, f"{name}.key{i}"), self.encode(item, f"{name}.{i}")]
                    for i, (key, item) in enumerate(value.items())
                ]
            }
        raise TypeError(
            f"replay buffer attribute {name} holds a {type(value).__name__}, which cannot be saved as data"
        )


def _decode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    if isinstance(value, list):
        return [_decode(item, arrays) for item in value]
    if not isinstance(value, dict):
        return value
    if len(value) != 1:
        raise ValueError(f"unexpected object {sorted(value)}")
    ((kind, content),) = value.items()
    if kind == "__array__":
        if content not in arrays:
            raise ValueError(f"the array {content!r} is missing")
        return arrays[content]
    if kind == "__dtype__":
        dtype = np.dtype(content)
        if dtype.hasobject:
            raise ValueError(f"object dtype {content!r} refused")
        return dtype
    if kind == "__generator__":
        return generator_from_state(content)
    if kind == "__tuple__":
        return tuple(_decode(item, arrays) for item in content)
    if kind == "__items__":
        return {_decode(key, arrays): _decode(item, arrays) for key, item in content}
    if kind == "__ragged__":
        columns = [_decode(column, arrays) for column in content["columns"]]
        lengths = np.asarray(_decode(content["lengths"], arrays), dtype=np.int64).reshape(-1, len(columns))
        pieces = []
        for position, column in enumerate(columns):
            ends = np.cumsum(lengths[:, position])
            if (lengths < 0).any() or (len(ends) and ends[-1] != len(column)):
                raise ValueError("ragged lengths do not add up to the stored arrays")
            pieces.append(np.split(column, ends[:-1]))
        return [tuple(piece[i] for piece in pieces) for i in range(len(lengths))]
    raise ValueError(f"unexpected object key {kind!r}")


# ---------------------------------------------------------------------------------------------- npy entries


def _write_npy(archive: zipfile.ZipFile, name: str, array: np.ndarray) -> None:
    with archive.open(name, "w", force_zip64=array.nbytes > 2**30) as handle:
        np.lib.format.write_array(handle, array, allow_pickle=False)


def _read_npy(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> np.ndarray:
    """Read a ``.npy`` entry without pickle: the header is checked before any memory is allocated."""
    with archive.open(info) as handle:
        version = np.lib.format.read_magic(handle)
        if version == (1, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(handle)
        elif version == (2, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(handle)
        else:
            raise ValueError(f"unsupported .npy version {version}")
        if dtype.hasobject:
            raise ValueError("object arrays (a pickle) are refused")
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes > info.file_size:
            raise ValueError(f"header announces {nbytes} bytes but the entry holds {info.file_size}")
        flat = np.empty(nbytes, dtype=np.uint8)
        array = flat.view(dtype).reshape(shape, order="F" if fortran_order else "C")
        filled = 0
        while filled < nbytes:
            chunk = handle.read(min(_READ_CHUNK, nbytes - filled))
            if not chunk:
                raise EOFError(f"entry ends after {filled} of {nbytes} bytes")
            flat[filled : filled + len(chunk)] = np.frombuffer(chunk, dtype=np.uint8)
            filled += len(chunk)
        if handle.read(1):
            raise ValueError("trailing data after the array")
    return array


# ---------------------------------------------------------------------------------------------- buffers


def write_buffer_entries(archive: zipfile.ZipFile, buffer: Any) -> None:
    """Write ``buffer`` into an open archive as ``replay_buffer.json`` and ``replay_buffer/*.npy``."""
    import sb3_acer

    class_name = type(buffer).__name__
    if buffer_classes().get(class_name) is not type(buffer):
        raise TypeError(f"cannot save a {class_name}: known replay buffers are {sorted(buffer_classes())}")
    encoder = _Encoder()
    state = {name: encoder.encode(value, name) for name, value in vars(buffer).items()}
    header = {
        "format": BUFFER_FORMAT_NAME,
        "format_version": BUFFER_FORMAT_VERSION,
        "class": class_name,
        "versions": {
            "sb3_acer": sb3_acer.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "arrays": {name: [list(array.shape), array.dtype.str] for name, array in encoder.arrays.items()},
        "state": state,
    }
    archive.writestr(BUFFER_ENTRY, json.dumps(header, indent=1), compress_type=zipfile.ZIP_DEFLATED)
    for name, array in encoder.arrays.items():
        _write_npy(archive, f"{ARRAY_FOLDER}{name}.npy", array)


def _constructor_arguments(cls: type, state: dict[str, Any]) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    for name, parameter in inspect.signature(cls.__init__).parameters.items():  # type: ignore[misc]
        if name in ("self", "seed") or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        if name == "buffer_size":
            arguments[name] = int(state["capacity"]) * int(state["n_steps"])
        elif name in state:
            arguments[name] = state[name]
        elif parameter.default is parameter.empty:
            raise ValueError(f"the state lacks the constructor argument {name!r}")
    return arguments


def _same_layout(saved: Any, fresh: Any) -> bool:
    """Same type; arrays of the same dtype and row shape (their first axis may differ)."""
    if isinstance(fresh, np.ndarray):
        return (
            isinstance(saved, np.ndarray)
            and saved.dtype == fresh.dtype
            and saved.shape[1:] == fresh.shape[1:]
        )
    if isinstance(fresh, tuple):
        return (
            isinstance(saved, tuple)
            and len(saved) == len(fresh)
            and all(_same_layout(a, b) for a, b in zip(saved, fresh, strict=True))
        )
    return type(saved) is type(fresh)


def _check_restored(fresh: Any, state: dict[str, Any]) -> None:
    """Every attribute of the fresh buffer is in ``state``, with the same shape and dtype for arrays."""
    own = vars(fresh)
    if set(own) != set(state):
        missing, unknown = sorted(set(own) - set(state)), sorted(set(state) - set(own))
        raise ValueError(
            f"attributes differ from this version's buffer: missing {missing}, unknown {unknown}"
        )
    for name, value in own.items():
        saved = state[name]
        if isinstance(value, np.ndarray):
            if not isinstance(saved, np.ndarray) or saved.shape != value.shape or saved.dtype != value.dtype:
                described = (
                    f"{saved.dtype}{list(saved.shape)}"
                    if isinstance(saved, np.ndarray)
                    else type(saved).__name__
                )
                raise ValueError(f"{name} is {described}, expected {value.dtype}{list(value.shape)}")
        elif isinstance(value, list | dict) and type(saved) is not type(value):
            raise ValueError(f"{name} is a {type(saved).__name__}, expected a {type(value).__name__}")
        elif isinstance(value, list):
            if len(saved) != len(value):
                raise ValueError(f"{name} has {len(saved)} items, expected {len(value)}")
            for index, (item, fresh_item) in enumerate(zip(saved, value, strict=True)):
                if not _same_layout(item, fresh_item):
                    raise ValueError(f"{name}[{index}] does not have the layout of this version's buffer")
    capacity = int(state.get("capacity", 0))
    for name, upper in (("next_idx", capacity - 1), ("num_in_buffer", capacity)):
        if name in state and not (isinstance(state[name], int) and 0 <= state[name] <= upper):
            raise ValueError(f"{name}={state[name]!r} outside [0, {upper}]")


def read_buffer_entries(archive: zipfile.ZipFile, source: Any = "replay buffer file") -> Any:
    """Rebuild the replay buffer stored in an open archive by :func:`write_buffer_entries`.

    Raises:
        ReplayBufferFileError: no buffer in the archive, damaged entries, unknown class or newer format.
    """
    try:
        names = archive.namelist()
        if BUFFER_ENTRY not in names:
            what = (
                "a model file without a replay buffer" if "data.json" in names else "not a replay buffer file"
            )
            raise ReplayBufferFileError(f"{source} is {what} (no {BUFFER_ENTRY})")
        try:
            header = json.loads(archive.read(BUFFER_ENTRY))
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ReplayBufferFileError(f"{source}: {BUFFER_ENTRY} is corrupt: {error}") from error
        if not isinstance(header, dict) or header.get("format") != BUFFER_FORMAT_NAME:
            raise ReplayBufferFileError(f"{source} is not an sb3-acer replay buffer file")
        version = header.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ReplayBufferFileError(
                f"{source} has replay buffer format version {version!r}, not a version number (1 to "
                f"{BUFFER_FORMAT_VERSION}): the file is damaged"
            )
        if version > BUFFER_FORMAT_VERSION:
            raise ReplayBufferFileError(
                f"{source} has replay buffer format version {version}, newer than this sb3-acer reads "
                f"({BUFFER_FORMAT_VERSION}); upgrade sb3-acer"
            )
        class_name = header.get("class")
        cls = buffer_classes().get(class_name)  # type: ignore[arg-type]
        if cls is None:
            raise ReplayBufferFileError(
                f"{source} holds a {class_name!r} replay buffer; known: {sorted(buffer_classes())}"
            )
        arrays: dict[str, np.ndarray] = {}
        for name in header.get("arrays", {}):
            entry = f"{ARRAY_FOLDER}{name}.npy"
            try:
                arrays[name] = _read_npy(archive, archive.getinfo(entry))
            except KeyError as error:
                raise ReplayBufferFileError(f"{source}: the entry {entry} is missing") from error
            except (ValueError, EOFError) as error:
                raise ReplayBufferFileError(
                    f"{source}: entry {entry} is corrupt or not a plain array (it is never unpickled): "
                    f"{error}"
                ) from error
        try:
            if not isinstance(header.get("state"), dict):
                raise ValueError("the state is not an object")
            state = {name: _decode(value, arrays) for name, value in header["state"].items()}
            buffer = cls(**_constructor_arguments(cls, state))
            _check_restored(buffer, state)
            vars(buffer).update(state)
            buffer.check_values()  # values put could have stored (an action out of range fails later)
        except (KeyError, IndexError, TypeError, ValueError, MemoryError) as error:
            raise ReplayBufferFileError(f"{source}: the {class_name} state is invalid: {error}") from error
        return buffer
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
        raise ReplayBufferFileError(f"{source} is damaged (truncated or corrupt): {error}") from error


def _with_suffix(path: pathlib.Path, suffix: str = ".pkl") -> pathlib.Path:
    return path.with_suffix(suffix) if path.suffix == "" else path


def save_buffer(buffer: Any, path_or_file: PathOrFile) -> None:
    """Save a replay buffer as data. A path is written atomically; ``.pkl`` is appended to a path without
    suffix, as Stable-Baselines3 does (the file is a zip of JSON and ``.npy`` arrays, not a pickle)."""

    def write(target: IO[bytes]) -> None:
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_STORED) as archive:
            write_buffer_entries(archive, buffer)

    if isinstance(path_or_file, str | pathlib.Path):
        write_atomically(_with_suffix(pathlib.Path(path_or_file)), write)
    else:
        write(path_or_file)  # type: ignore[arg-type]


def _open(
    path_or_file: PathOrFile, suffix: str = ".pkl", what: str = "replay buffer file"
) -> zipfile.ZipFile:
    source: Any = path_or_file
    if isinstance(path_or_file, str | pathlib.Path):
        path = pathlib.Path(path_or_file)
        if not path.exists() and path.suffix == "":
            path = _with_suffix(path, suffix)
        if not path.exists():
            raise FileNotFoundError(f"no {what} at {path}")
        source = path
    try:
        return zipfile.ZipFile(source, "r")
    except (zipfile.BadZipFile, EOFError, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise ReplayBufferFileError(
            f"{path_or_file} is not a replay buffer file (not a zip archive, or truncated): {error}"
        ) from error


def load_buffer(path_or_file: PathOrFile) -> Any:
    """Load a replay buffer saved by :func:`save_buffer` (or embedded in a model file), without unpickling.

    Raises:
        FileNotFoundError: no file at the path.
        ReplayBufferFileError: not a replay buffer file, truncated or corrupt, or a newer format.
    """
    with _open(path_or_file) as archive:
        return read_buffer_entries(archive, path_or_file)


def read_embedded_buffer(path_or_file: PathOrFile) -> Any | None:
    """The replay buffer inside a model file (``.zip`` is appended to a path without suffix, as for model
    files), or ``None`` if it holds none."""
    if isinstance(path_or_file, io.IOBase):
        path_or_file.seek(0)
    with _open(path_or_file, suffix=".zip", what="model file") as archive:
        try:
            if BUFFER_ENTRY not in archive.namelist():
                return None
        except (zipfile.BadZipFile, OSError) as error:  # pragma: no cover - namelist reads no data
            raise ReplayBufferFileError(f"{path_or_file} is damaged: {error}") from error
        return read_buffer_entries(archive, path_or_file)


def check_buffer_matches(buffer: Any, **expected: Any) -> None:
    """Raise ``ValueError`` unless each ``buffer.<name>`` equals ``expected[name]``."""
    for name, value in expected.items():
        actual = getattr(buffer, name, None)
        if actual != value:
            raise ValueError(
                f"the replay buffer has {name}={actual!r} but this model needs {name}={value!r}; "
                "it was saved by a model with other settings or another number of environments"
            )

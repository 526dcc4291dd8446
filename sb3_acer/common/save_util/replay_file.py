"""The replay buffer file: a buffer's state dict as JSON and ``.npy`` arrays, for checkpoints that resume
training exactly.

Layout of a replay buffer file (``format_version`` 1), a zip archive::

    replay_buffer.json         format, version, library versions, buffer class and its state as JSON
    replay_buffer/<name>.npy   one NumPy array per entry (``np.save`` format, read without pickle)

A model file saved with ``ACER.save(path, include=["replay_buffer"])`` holds the same entries beside its
own, so that one file (written atomically) is a whole checkpoint.

The ``state`` object of ``replay_buffer.json`` is the buffer's
:meth:`~sb3_acer.common.buffers.base.SlotReplay.state_dict`, each entry written as JSON where it is a number
or ``None``, and otherwise as a one-key object: ``{"__array__": name}`` (the array ``<name>.npy``),
``{"__tuple__": [...]}``, ``{"__dtype__": "<f4"}`` (for Dict observations, whose arrays are structured,
one ``[key, dtype, shape]`` per field: ``{"__dtype__": [["img", "|u1", [1, 64, 64]], ["vec", "<f4", [5]]]}``,
see :mod:`sb3_acer.common.observations`), ``{"__generator__": state}`` (a NumPy generator's
state, in ``rngs``), ``{"__items__": [[key, value], ...]}`` (a dict with tuple keys: ``heads``) and
``{"__ragged__": {"lengths": ..., "columns": [...]}}`` (``final``: one list of arrays per pair position,
concatenated, with each slot's lengths). Reading rebuilds the buffer with
:meth:`~sb3_acer.common.buffers.base.SlotReplay.from_state_dict`, which checks every entry before it is used.

Nothing is unpickled: JSON is parsed, and arrays are read as raw numbers after their ``.npy`` header has
been checked (object arrays, whose ``.npy`` form is a pickle, are refused).

Memory is bounded by the file's own settings: ``replay_buffer.json`` holds at most
:data:`~sb3_acer.common.save_util.model_file.MAX_JSON_BYTES`, and the arrays together at most what a full
buffer of its ``capacity``, ``n_steps``, ``n_envs``, ``obs_shape`` and dtypes can hold
(:func:`array_budget`), each header checked against what is left before the array is allocated.
"""

from __future__ import annotations

import io
import json
import math
import pathlib
import platform
import tokenize
import zipfile
import zlib
from collections.abc import Mapping
from typing import IO, Any

import numpy as np

from sb3_acer.common.buffers import BUFFER_CLASSES, ReplayBuffer
from sb3_acer.common.checks.fields import NON_NEGATIVE_INTEGER, check_format_version
from sb3_acer.common.observations import dtype_from_json, dtype_to_json
from sb3_acer.common.save_util.model_file import (
    EntryTooLargeError,
    ModelFileError,
    PathOrFile,
    archive_source,
    open_entry,
    open_zip,
    read_json_entry,
    write_atomically,
)
from sb3_acer.common.save_util.rng_state import jsonable

__all__ = [
    "BUFFER_FORMAT_NAME",
    "BUFFER_FORMAT_VERSION",
    "ReplayBufferFileError",
    "array_budget",
    "buffer_classes",
    "check_buffer_matches",
    "load_buffer",
    "read_buffer_entries",
    "read_embedded_buffer",
    "read_npy",
    "save_buffer",
    "write_buffer_entries",
]

BUFFER_FORMAT_NAME = "sb3-acer-replay-buffer"
BUFFER_FORMAT_VERSION = 1
BUFFER_ENTRY = "replay_buffer.json"
ARRAY_FOLDER = "replay_buffer/"
_READ_CHUNK = 1 << 24


class ReplayBufferFileError(ModelFileError):
    """A replay buffer file is damaged, not a replay buffer file, or of an unsupported format version."""


def buffer_classes() -> dict[str, type]:
    """The replay buffer classes a file may name, by class name."""
    return dict(BUFFER_CLASSES)


# ---------------------------------------------------------------------------------------------- encoding


class _StateWriter:
    """Turns a buffer's state dict into the JSON of format 1 plus named arrays."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def array(self, value: np.ndarray, name: str) -> dict[str, str]:
        if value.dtype.hasobject:
            raise TypeError(f"replay buffer entry {name} is an object array; it cannot be saved as data")
        self.arrays[name] = value
        return {"__array__": name}

    def ragged(self, pairs: list[tuple[np.ndarray, ...]], name: str) -> dict[str, Any]:
        """One array per pair position, the pairs' arrays concatenated, and their lengths."""
        lengths = np.array([[len(array) for array in pair] for pair in pairs], dtype=np.int64)
        columns = list(zip(*pairs, strict=True))
        return {
            "__ragged__": {
                "lengths": self.array(lengths, f"{name}.lengths"),
                "columns": [
                    self.array(np.concatenate(column, axis=0), f"{name}.{position}")
                    for position, column in enumerate(columns)
                ],
            }
        }

    def entry(self, name: str, value: Any) -> Any:
        if name == "rngs":
            return [{"__generator__": jsonable(state)} for state in value]
        if name == "final":
            return self.ragged(value, name)
        if isinstance(value, np.ndarray):
            return self.array(value, name)
        if isinstance(value, tuple):
            return {"__tuple__": [int(item) for item in value]}
        if isinstance(value, np.dtype):
            return {"__dtype__": dtype_to_json(value)}
        if isinstance(value, dict):
            return {
                "__items__": [
                    [{"__tuple__": [int(k) for k in key]}, self.array(item, f"{name}.{i}")]
                    for i, (key, item) in enumerate(value.items())
                ]
            }
        if value is None or isinstance(value, int | np.integer):
            return None if value is None else int(value)
        raise TypeError(
            f"replay buffer entry {name} holds a {type(value).__name__}, which cannot be saved as data"
        )


def _decode(value: Any, arrays: dict[str, np.ndarray]) -> Any:
    """A state entry from its JSON (see the module docstring); generator states stay JSON data."""
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
        return dtype_from_json(content)
    if kind == "__generator__":
        return content
    if kind == "__tuple__":
        return tuple(_decode(item, arrays) for item in content)
    if kind == "__items__":
        return {_decode(key, arrays): _decode(item, arrays) for key, item in content}
    if kind == "__ragged__":
        return _decode_ragged(content, arrays)
    raise ValueError(f"unexpected object key {kind!r}")


def _decode_ragged(content: Any, arrays: dict[str, np.ndarray]) -> list[tuple[np.ndarray, ...]]:
    columns = [_decode(column, arrays) for column in content["columns"]]
    lengths = np.asarray(_decode(content["lengths"], arrays), dtype=np.int64).reshape(-1, len(columns))
    pieces = []
    for position, column in enumerate(columns):
        ends = np.cumsum(lengths[:, position])
        if (lengths < 0).any() or (len(ends) and ends[-1] != len(column)):
            raise ValueError("ragged lengths do not add up to the stored arrays")
        pieces.append(np.split(column, ends[:-1]))
    return [tuple(piece[i] for piece in pieces) for i in range(len(lengths))]


# ---------------------------------------------------------------------------------------------- npy entries


def _write_npy(archive: zipfile.ZipFile, name: str, array: np.ndarray) -> None:
    with archive.open(name, "w", force_zip64=array.nbytes > 2**30) as handle:
        np.lib.format.write_array(handle, array, allow_pickle=False)


def _npy_header(handle: IO[bytes]) -> tuple[tuple[int, ...], bool, np.dtype]:
    """The shape, order and dtype a ``.npy`` header declares (at most numpy's 10,000 bytes of header)."""
    version = np.lib.format.read_magic(handle)
    try:
        if version == (1, 0):
            return np.lib.format.read_array_header_1_0(handle)
        if version == (2, 0):
            return np.lib.format.read_array_header_2_0(handle)
    except (tokenize.TokenError, SyntaxError) as error:  # numpy reads old headers with tokenize
        raise ValueError(f"the header cannot be parsed: {error}") from error
    raise ValueError(f"unsupported .npy version {version}")


def read_npy(archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_nbytes: int) -> np.ndarray:
    """Read a ``.npy`` entry without pickle: its header is checked before any memory is allocated.

    Refused: object arrays (a pickle), and a header that declares more than ``max_nbytes`` bytes of data (what
    the file's settings allow) or more than the entry declares it holds. The data is then read in chunks up to
    the size the header declares; more is refused.

    Raises:
        EntryTooLargeError: the header declares more than ``max_nbytes`` (a ``ValueError``).
        ValueError: another problem, named (callers add the file and the entry).
        EOFError: the entry holds less than its header declares.
    """
    with open_entry(archive, info) as handle:
        shape, fortran_order, dtype = _npy_header(handle)
        if dtype.hasobject:
            raise ValueError("object arrays (a pickle) are refused")
        nbytes = math.prod(shape) * dtype.itemsize  # Python ints: no overflow
        if nbytes > max_nbytes:
            raise EntryTooLargeError(
                f"header announces {nbytes} bytes ({dtype.str}{list(shape)}), more than the {max_nbytes} "
                "it may hold"
            )
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
    if BUFFER_CLASSES.get(class_name) is not type(buffer):
        raise TypeError(f"cannot save a {class_name}: known replay buffers are {sorted(BUFFER_CLASSES)}")
    writer = _StateWriter()
    state = {name: writer.entry(name, value) for name, value in buffer.state_dict().items()}
    header = {
        "format": BUFFER_FORMAT_NAME,
        "format_version": BUFFER_FORMAT_VERSION,
        "class": class_name,
        "versions": {
            "sb3_acer": sb3_acer.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "arrays": {name: [list(array.shape), array.dtype.str] for name, array in writer.arrays.items()},
        "state": state,
    }
    archive.writestr(BUFFER_ENTRY, json.dumps(header, indent=1), compress_type=zipfile.ZIP_DEFLATED)
    for name, array in writer.arrays.items():
        _write_npy(archive, f"{ARRAY_FOLDER}{name}.npy", array)


def _read_header(archive: zipfile.ZipFile, source: Any) -> dict[str, Any]:
    """``replay_buffer.json``, checked to be of this format and of a version this code reads."""
    names = archive.namelist()
    if BUFFER_ENTRY not in names:
        what = (
            "a model file without a replay buffer"
            if ("data" in names or "data.json" in names)
            else "not a replay buffer file"
        )
        raise ReplayBufferFileError(f"{source} is {what} (no {BUFFER_ENTRY})")
    header = read_json_entry(archive, BUFFER_ENTRY, source, "a replay buffer's", ReplayBufferFileError)
    if not isinstance(header, dict) or header.get("format") != BUFFER_FORMAT_NAME:
        raise ReplayBufferFileError(f"{source} is not an sb3-acer replay buffer file")
    check_format_version(
        header.get("format_version"),
        BUFFER_FORMAT_VERSION,
        f"{source} has replay buffer format version",
        "the file is damaged",
        ReplayBufferFileError,
    )
    return header


def _setting(state: Mapping[str, Any], name: str, default: Any = None) -> Any:
    """The setting ``name`` of a state's JSON, decoded (``obs_shape`` a tuple, ``obs_dtype`` a dtype)."""
    if name not in state:
        if default is None:
            raise ValueError(f"the state lacks the setting {name!r}")
        return default
    value = _decode(state[name], {})
    if name.endswith("dtype"):
        if not isinstance(value, np.dtype):
            raise ValueError(f"{name} is not a dtype: {state[name]!r}")
        return value
    counts = value if name == "obs_shape" else (value,)
    if not (isinstance(counts, tuple) and all(NON_NEGATIVE_INTEGER.test(count) for count in counts)):
        raise ValueError(
            f"{name} must be a whole number (or a tuple of them for obs_shape), got {state[name]!r}"
        )
    return value


def array_budget(state: Mapping[str, Any]) -> tuple[int, int]:
    """The most bytes the arrays of a buffer with ``state``'s settings (its JSON) can hold, in all and for the
    lengths of the truncation rows: each of the ``capacity x n_envs x (n_steps + 1)`` rows of a full buffer
    with three whole observations (the stored one, or a frame buffer's frame and whole head, and a truncation
    observation), its action, behaviour statistics, reward, flags and truncation index; the LSTM states of
    each slot and env; the last observations of a frame buffer; and 1 MiB for the arrays' headers.

    Raises:
        ValueError: a setting is missing or not a whole number (a shape of them, a dtype).
    """
    capacity, n_steps, n_envs = (_setting(state, name) for name in ("capacity", "n_steps", "n_envs"))
    obs_shape, n_actions = _setting(state, "obs_shape"), _setting(state, "n_actions")
    obs_bytes = math.prod(obs_shape) * _setting(state, "obs_dtype", np.dtype(np.float32)).itemsize
    action_bytes = max(_setting(state, "action_size", 0), 1) * 8
    rows = capacity * n_envs * (n_steps + 1)
    per_row = 3 * obs_bytes + action_bytes + 8 * n_actions + 4 + 3 + 16
    lstm = capacity * n_envs * 2 * 4 * _setting(state, "state_size", 0)
    lengths = capacity * 2 * 8
    return rows * per_row + lstm + lengths + n_envs * obs_bytes + (1 << 20), lengths + 128


def _read_arrays(
    archive: zipfile.ZipFile, names: Any, source: Any, budget: tuple[int, int]
) -> dict[str, np.ndarray]:
    """The ``.npy`` entries the header lists, read without pickle, together within ``budget``
    (:func:`array_budget`)."""
    arrays: dict[str, np.ndarray] = {}
    left, lengths = budget
    if not isinstance(names, dict) or not all(isinstance(name, str) for name in names):
        raise ReplayBufferFileError(f"{source}: {BUFFER_ENTRY}'s arrays are not an object of array names")
    for name in names:
        entry = f"{ARRAY_FOLDER}{name}.npy"
        try:
            info = archive.getinfo(entry)
            arrays[name] = read_npy(archive, info, min(lengths, left) if name.endswith(".lengths") else left)
            left -= arrays[name].nbytes
        except KeyError as error:
            raise ReplayBufferFileError(f"{source}: the entry {entry} is missing") from error
        except EntryTooLargeError as error:
            raise ReplayBufferFileError(
                f"{source}: entry {entry}: {error}, given the buffer's settings (capacity, n_steps, n_envs, "
                "obs_shape, ...) and the arrays before it; refused before reading it"
            ) from error
        except (ValueError, EOFError) as error:
            raise ReplayBufferFileError(
                f"{source}: entry {entry} is corrupt or not a plain array (it is never unpickled): {error}"
            ) from error
    return arrays


def read_buffer_entries(archive: zipfile.ZipFile, source: Any = "replay buffer file") -> ReplayBuffer:
    """Rebuild the replay buffer stored in an open archive by :func:`write_buffer_entries`.

    Raises:
        ReplayBufferFileError: no buffer in the archive, damaged entries, unknown class or newer format,
            or a state the buffer refuses (its message names the entry).
    """
    try:
        header = _read_header(archive, source)
        class_name = header.get("class")
        cls = BUFFER_CLASSES.get(class_name) if isinstance(class_name, str) else None
        if cls is None:
            raise ReplayBufferFileError(
                f"{source} holds a {class_name!r} replay buffer; known: {sorted(BUFFER_CLASSES)}"
            )
        try:
            if not isinstance(header.get("state"), dict):
                raise ValueError("the state is not an object")
            budget = array_budget(header["state"])
        except (KeyError, IndexError, TypeError, ValueError, OverflowError) as error:
            raise ReplayBufferFileError(
                f"{source}: the {class_name} settings are invalid: {error}"
            ) from error
        arrays = _read_arrays(archive, header.get("arrays", {}), source, budget)
        try:
            state: Mapping[str, Any] = {
                name: _decode(value, arrays) for name, value in header["state"].items()
            }
            # The arrays were just read: the buffer takes them instead of a copy.
            return cls.from_state_dict(state, copy=False)
        except (KeyError, IndexError, TypeError, ValueError, OverflowError, MemoryError) as error:
            raise ReplayBufferFileError(f"{source}: the {class_name} state is invalid: {error}") from error
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
    source = archive_source(path_or_file, suffix, what)
    try:
        return open_zip(source)
    except (zipfile.BadZipFile, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise ReplayBufferFileError(
            f"{path_or_file} is not a replay buffer file (not a zip archive, or truncated): {error}"
        ) from error


def load_buffer(path_or_file: PathOrFile) -> ReplayBuffer:
    """Load a replay buffer saved by :func:`save_buffer` (or embedded in a model file), without unpickling.

    Raises:
        FileNotFoundError: no file at the path.
        ReplayBufferFileError: not a replay buffer file, truncated or corrupt, or a newer format.
    """
    with _open(path_or_file) as archive:
        return read_buffer_entries(archive, path_or_file)


def read_embedded_buffer(path_or_file: PathOrFile) -> ReplayBuffer | None:
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

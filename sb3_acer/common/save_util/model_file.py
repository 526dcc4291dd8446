"""Model files as data: a zip of JSON and tensors, read without unpickling.

Layout of a model file (``format_version`` 2), that of Stable-Baselines3's zip files, so that SB3's
``load_from_zip_file`` and the tools built on it (the Hugging Face Hub's ``huggingface_sb3``) read it::

    data                       JSON: algorithm, format version, library versions, hyperparameters, policy
                               class and keyword arguments, observation and action spaces, counters (no
                               pickled entry: SB3's ``json_to_data`` reads it as plain values)
    policy.pth                 state dict of the policy          (torch.save; read with weights_only=True)
    pytorch_variables.pth      SB3's other torch variables: none for ACER (an empty dict)
    policy_avg.pth             state dict of the average policy network
    optimizer.pth              state dict of the optimizer (RMSProp unless policy_kwargs name another)
    _stable_baselines3_version the Stable-Baselines3 version that wrote it, as SB3 writes it
    system_info.txt            the versions of the libraries and the system, as SB3 writes it

Format 1 (sb3-acer 0.1) named the JSON entry ``data.json`` and had none of SB3's three extra entries; such
files still load. ``data`` also holds ``rng_states``: the states of Python's, NumPy's and torch's global
generators and of the replay sampling generator (restored by ``ACER.load``). A checkpoint saved with
``ACER.save(path, include=["replay_buffer"])`` adds the entries of a replay buffer file
(``replay_buffer.json`` and ``replay_buffer/*.npy``, see :mod:`sb3_acer.common.save_util.replay_file`);
readers that do not know them ignore them.

Classes in ``policy_kwargs`` (activation functions, feature extractors, the optimizer) and custom policy
classes are stored by their path ``"module:qualname"`` and resolved on load only through the table of
:mod:`~sb3_acer.common.save_util.class_table` and the classes passed in ``custom_objects``: loading never
imports a module (importing runs the module's code), so a class of your own must be passed, e.g.
``custom_objects={"features_extractor_class": MyExtractor}``.

Reading takes bounded memory whatever sizes the file declares (:func:`read_entry`): ``data`` holds at most
:data:`MAX_JSON_BYTES`; each tensor entry at most what its caller allows (``ACER.load`` reads them after
building the model, each bounded by the size of the state dict it fills, :func:`read_model_tensors`), and
the records inside it no more than it holds; a ``.pth`` entry the caller does not name is refused unread.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import pathlib
import signal
import stat
import sys
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from typing import IO, Any

import numpy as np
import torch as th
from gymnasium import spaces

from sb3_acer.common.checks.fields import check_format_version
from sb3_acer.common.save_util.class_table import CLASS_TABLE

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MAX_JSON_BYTES",
    "MAX_TENSOR_BYTES",
    "EntryTooLargeError",
    "ModelFileError",
    "archive_source",
    "decode_json_value",
    "encode_json_value",
    "open_entry",
    "open_zip",
    "read_entry",
    "read_json_entry",
    "read_model_data",
    "read_model_file",
    "read_model_tensors",
    "space_from_json",
    "space_to_json",
    "write_atomically",
    "write_model_file",
]

FORMAT_NAME = "sb3-acer"
FORMAT_VERSION = 2
#: The JSON entry: SB3's name; format 1 called it ``data.json``.
DATA_ENTRY = "data"
FORMAT_1_DATA_ENTRY = "data.json"
#: SB3's entry of torch variables other than state dicts (ACER has none).
PYTORCH_VARIABLES = "pytorch_variables.pth"
#: The most bytes a JSON entry (``data``, ``replay_buffer.json``) may hold. Honest ones hold kilobytes; the
#: largest are spaces with bounds per element, written one number a line: about 16 bytes per element and
#: bound for an image ``Box`` (a ``uint8`` RGB frame of 210 x 160, Atari's, writes 3.2 MB), 40 for floats.
#: 64 MiB holds an image of 2 million values (3 x 816 x 816), or 800,000 float bounds.
MAX_JSON_BYTES = 64 << 20
#: The most bytes a tensor entry may hold when no model bounds it (``read_model_file`` without ``limits``);
#: ``ACER.load`` and ``set_parameters`` bound each entry by the model's own state dict instead.
MAX_TENSOR_BYTES = 2 << 30
#: How many bytes an entry is decompressed at a time.
READ_CHUNK = 1 << 20

PathOrFile = str | pathlib.Path | IO[bytes] | io.BufferedIOBase


class ModelFileError(ValueError):
    """A model file is missing, damaged, of another algorithm or of an unsupported format version."""


def space_to_json(space: spaces.Space) -> dict[str, Any]:
    """Describe a Gymnasium space as JSON-compatible data."""
    if isinstance(space, spaces.Box):
        return {
            "type": "Box",
            "shape": list(space.shape),
            "dtype": str(space.dtype),
            "low": space.low.tolist(),
            "high": space.high.tolist(),
        }
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.MultiDiscrete):
        return {
            "type": "MultiDiscrete",
            "nvec": space.nvec.tolist(),
            "dtype": str(space.dtype),
            "start": space.start.tolist(),
        }
    if isinstance(space, spaces.MultiBinary):
        n = space.n
        return {"type": "MultiBinary", "n": n if isinstance(n, int) else list(n)}
    if isinstance(space, spaces.Dict):
        # A list of [key, subspace] pairs keeps the key order (the order of the stored fields).
        return {"type": "Dict", "spaces": [[key, space_to_json(sub)] for key, sub in space.spaces.items()]}
    raise ValueError(
        f"cannot describe space {space} as data; supported: Box, Discrete, MultiDiscrete, MultiBinary, Dict"
    )


def _floats(values: Any) -> np.ndarray:
    # JSON has no inf/nan literals in strict mode; json.dumps writes Infinity/NaN which json.loads reads back.
    return np.asarray(values, dtype=np.float64)


def space_from_json(data: dict[str, Any]) -> spaces.Space:
    """Rebuild a space described by :func:`space_to_json`.

    Raises:
        ModelFileError: an unknown space type.
        ValueError, TypeError, KeyError: a description that is not a space's (an infinite size, say).
    """
    try:
        return _space_from_json(data)
    except OverflowError as error:  # int(inf): a size no space has
        raise ValueError(f"{data.get('type')} space: {error}") from error


def _space_from_json(data: dict[str, Any]) -> spaces.Space:
    kind = data.get("type")
    if kind == "Box":
        dtype = np.dtype(data["dtype"])
        shape = tuple(data["shape"])
        low = _floats(data["low"]).reshape(shape).astype(dtype)
        high = _floats(data["high"]).reshape(shape).astype(dtype)
        return spaces.Box(low=low, high=high, shape=shape, dtype=dtype)
    if kind == "Discrete":
        return spaces.Discrete(int(data["n"]), start=int(data.get("start", 0)))
    if kind == "MultiDiscrete":
        nvec = np.asarray(data["nvec"])
        start = np.asarray(data.get("start", np.zeros_like(nvec)))
        return spaces.MultiDiscrete(nvec, dtype=data.get("dtype", "int64"), start=start)
    if kind == "MultiBinary":
        return spaces.MultiBinary(data["n"])
    if kind == "Dict":
        return spaces.Dict([(str(key), space_from_json(sub)) for key, sub in data["spaces"]])
    raise ModelFileError(f"unknown space type {kind!r} in model file")


def encode_json_value(value: Any, where: str = "value") -> Any:
    """Encode ``value`` (numbers, strings, lists, dicts, classes) as JSON data."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple | list):
        return [encode_json_value(item, where) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ValueError(f"{where}: dictionary keys must be strings to be saved, got {list(value)}")
        return {key: encode_json_value(item, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, type):
        return {"__class__": f"{value.__module__}:{value.__qualname__}"}
    if isinstance(value, np.generic):
        return value.item()
    raise ValueError(
        f"{where}: {value!r} ({type(value).__name__}) cannot be saved as data; use numbers, strings, "
        "lists, dicts or classes"
    )


def _resolve_class(path: Any, where: str, classes: Mapping[str, type]) -> type:
    """The class a model file names by ``path`` in the field ``where``: one of ``classes`` (the caller's
    ``custom_objects``) or of :data:`~sb3_acer.common.save_util.class_table.CLASS_TABLE`; no module is
    imported to find it."""
    if isinstance(path, str):
        found = classes.get(path) or CLASS_TABLE.get(path)
        if found is not None:
            return found
    field = where.rsplit(".", 1)[-1]
    name = path.rpartition(":")[2] if isinstance(path, str) else "TheClass"
    whole = ", or the whole policy_kwargs, custom_objects={'policy_kwargs': ...}"
    raise ModelFileError(
        f"{where} names the class {path!r}, which is none of sb3-acer's policies and extractors, "
        "Stable-Baselines3's extractors, or torch's activations and optimizers; a model file never imports "
        f"a module (that would run its code): pass the class, ACER.load(path, custom_objects={{{field!r}: "
        f"{name}}}){whole if where.startswith('policy_kwargs') else ''}"
    )


def decode_json_value(value: Any, where: str = "value", classes: Mapping[str, type] | None = None) -> Any:
    """Inverse of :func:`encode_json_value`: a class (``{"__class__": path}``) is resolved by
    :func:`_resolve_class` among ``classes`` (by path) and the table of known classes.

    Raises:
        ModelFileError: naming ``where`` (the field) and the path of a class that is neither.
    """
    if isinstance(value, list):
        return [decode_json_value(item, f"{where}[{index}]", classes) for index, item in enumerate(value)]
    if isinstance(value, dict):
        if set(value) == {"__class__"}:
            return _resolve_class(value["__class__"], where, classes or {})
        return {key: decode_json_value(item, f"{where}.{key}", classes) for key, item in value.items()}
    return value


def _tensor_bytes(obj: Any) -> bytes:
    buffer = io.BytesIO()
    th.save(obj, buffer)
    return buffer.getvalue()


def write_model_file(
    path_or_file: PathOrFile,
    data: dict[str, Any],
    tensors: dict[str, Any],
    extra: Callable[[zipfile.ZipFile], None] | None = None,
) -> None:
    """Write ``data`` (JSON) and ``tensors`` (state dicts) as a model file.

    A path is written atomically: the file is written beside the target and renamed over it, so an
    interrupted save never leaves a damaged file at ``path``. ``.zip`` is appended when ``path`` has no
    suffix. ``extra``, if given, writes further entries into the open archive (a replay buffer).
    """
    import stable_baselines3
    from stable_baselines3.common.utils import get_system_info

    payload = json.dumps(data, indent=2, sort_keys=True).encode()
    entries = {
        DATA_ENTRY: payload,
        **{f"{name}.pth": _tensor_bytes(obj) for name, obj in tensors.items()},
        PYTORCH_VARIABLES: _tensor_bytes({}),
        "_stable_baselines3_version": stable_baselines3.__version__.encode(),
        "system_info.txt": get_system_info(print_info=False)[1].encode(),
    }

    def write(target: IO[bytes]) -> None:
        with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for name, content in entries.items():
                archive.writestr(name, content)
            if extra is not None:
                extra(archive)

    if not isinstance(path_or_file, str | pathlib.Path):
        write(path_or_file)  # type: ignore[arg-type]
        return
    path = pathlib.Path(path_or_file)
    if path.suffix == "":
        path = path.with_suffix(".zip")
    write_atomically(path, write)


@contextlib.contextmanager
def saving_through_ctrl_c() -> Iterator[list[int]]:
    """Run the block (saving what a run produced) to its end through Ctrl-C.

    A SIGINT during the block is noted in the yielded list, with one line on stderr, instead of raising
    ``KeyboardInterrupt`` halfway through the files; the previous handler is put back afterwards. Outside
    the main thread, where no signal handler can be set, the block runs unprotected.
    """
    pressed: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield pressed
        return

    def note(signum: int, frame: Any) -> None:
        if not pressed:
            print("\nCtrl-C: finishing the save first", file=sys.stderr, flush=True)
        pressed.append(signum)

    previous = signal.signal(signal.SIGINT, note)
    try:
        yield pressed
    finally:
        signal.signal(signal.SIGINT, previous)


def write_atomically(path: pathlib.Path, write: Callable[[IO[bytes]], object]) -> None:
    """Call ``write`` on a temporary file beside ``path``, then rename it to ``path``.

    A process killed at any moment leaves at ``path`` either the previous file or the complete new one
    (and possibly a hidden ``.<name>.*.tmp`` file beside it). The data and the rename are flushed to disk.
    A file replaced keeps its permissions (a new one gets the usual ``0o666`` less the umask), and a
    symbolic link at ``path`` is kept: the file it points to is replaced, as an in-place write would.
    """
    if path.is_symlink():
        path = pathlib.Path(os.path.realpath(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as tmp:
            write(tmp)
            tmp.flush()
            os.fsync(tmp.fileno())
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)  # the replaced file's
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask  # mkstemp creates 0600; give a new file the usual permissions
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, path)
    except BaseException:
        if os.path.exists(tmp_name):
            os.unlink(tmp_name)
        raise
    try:
        directory = os.open(path.parent, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. platforms that cannot open folders
        return
    try:
        os.fsync(directory)  # make the rename itself durable
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(directory)


def open_zip(source: Any) -> zipfile.ZipFile:
    """``zipfile.ZipFile(source)`` for reading, where every sign of a damaged archive raises
    ``zipfile.BadZipFile``: on a truncated file zipfile also seeks before its start (``ValueError`` on a file
    object, ``OSError`` EINVAL on a path), and it raises ``NotImplementedError`` for a version it does not
    read. A missing or unreadable path stays an ``OSError``."""
    try:
        return zipfile.ZipFile(source, "r")
    except (ValueError, NotImplementedError, EOFError) as error:
        raise zipfile.BadZipFile(str(error)) from error
    except OSError as error:
        if error.errno != errno.EINVAL:
            raise
        raise zipfile.BadZipFile(str(error)) from error


def open_entry(archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> IO[bytes]:
    """``archive.open(info)``, where every sign of a damaged entry raises ``zipfile.BadZipFile``: a local
    header before the file's start (``ValueError``, ``OSError``), an unknown compression method or version
    (``NotImplementedError``), an encrypted entry (``RuntimeError``)."""
    try:
        return archive.open(info)
    except (ValueError, NotImplementedError, RuntimeError, OSError, EOFError) as error:
        raise zipfile.BadZipFile(f"entry {info.filename} cannot be read: {error}") from error


def archive_source(path_or_file: PathOrFile, suffix: str = ".zip", what: str = "model file") -> Any:
    """The file object, or the path (with ``suffix`` if it has none and nothing is there, as SB3 appends
    it); ``FileNotFoundError`` (``no <what> at <path>``) if no file is there."""
    if not isinstance(path_or_file, str | pathlib.Path):
        return path_or_file
    path = pathlib.Path(path_or_file)
    path = path.with_suffix(suffix) if not path.exists() and path.suffix == "" else path
    if not path.exists():
        raise FileNotFoundError(f"no {what} at {path}")
    return path


def _open_archive(path_or_file: PathOrFile) -> zipfile.ZipFile:
    try:
        return open_zip(archive_source(path_or_file))
    except zipfile.BadZipFile as error:
        raise ModelFileError(
            f"{path_or_file} is not a model file (not a zip archive or truncated): {error}"
        ) from error


class EntryTooLargeError(ValueError):
    """An archive entry holds, or says it holds, more bytes than the file's settings allow."""


def read_entry(archive: zipfile.ZipFile, name: str | zipfile.ZipInfo, limit: int) -> bytes:
    """The bytes of the entry ``name``, refused if they exceed ``limit``.

    The size the zip declares (which whoever wrote the file chose) is checked first, before anything is
    decompressed; then the entry is decompressed in chunks of :data:`READ_CHUNK` bytes up to one byte past
    that size, so an entry that holds more than it declares costs no more than it declares either (zipfile
    would decompress as much as one ``read`` asks for, whatever the entry declares).

    Raises:
        KeyError: no such entry.
        EntryTooLargeError: the entry declares or holds more than ``limit`` bytes.
    """
    info = name if isinstance(name, zipfile.ZipInfo) else archive.getinfo(name)
    if info.file_size > limit:
        raise EntryTooLargeError(
            f"entry {info.filename} declares {info.file_size} bytes, more than the {limit} it may hold"
        )
    chunks, size = [], 0
    with open_entry(archive, info) as handle:
        while size <= info.file_size:
            chunk = handle.read(min(READ_CHUNK, info.file_size + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    if size > info.file_size:
        raise EntryTooLargeError(
            f"entry {info.filename} holds more than the {info.file_size} bytes it declares"
        )
    return b"".join(chunks)


def read_json_entry(
    archive: zipfile.ZipFile,
    entry: str,
    source: Any,
    what: str,
    error: type[ModelFileError] = ModelFileError,
) -> Any:
    """The JSON of ``entry``, read up to :data:`MAX_JSON_BYTES`.

    Raises:
        error: the entry is larger than that (then it is not ``what``), or not JSON (also an integer of more
            digits than Python converts, or nesting deeper than it parses).
    """
    try:
        return json.loads(read_entry(archive, entry, MAX_JSON_BYTES))
    except EntryTooLargeError as too_large:
        raise error(f"{source}: {too_large}: {entry} is not {what}") from too_large
    except (ValueError, RecursionError) as corrupt:  # ValueError: JSON's, and an integer of 5000 digits
        raise error(f"{source}: {entry} is corrupt: {corrupt}") from corrupt


def _data_entry(archive: zipfile.ZipFile, path_or_file: PathOrFile, algorithm: str) -> dict[str, Any]:
    """The checked JSON of the ``data`` entry (``data.json`` in format 1), at most :data:`MAX_JSON_BYTES`."""
    names = archive.namelist()
    entry = DATA_ENTRY if DATA_ENTRY in names else FORMAT_1_DATA_ENTRY
    if entry not in names:
        raise ModelFileError(f"{path_or_file} is not an sb3-acer model file (no {DATA_ENTRY})")
    data = read_json_entry(archive, entry, path_or_file, "model data")
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise ModelFileError(
            f"{path_or_file} is not an sb3-acer model file "
            "(SB2 and SB3 model files, which unpickle code, are not read)"
        )
    if data.get("algorithm") != algorithm:
        raise ModelFileError(
            f"{path_or_file} holds a {data.get('algorithm')} model, not an {algorithm} model"
        )
    check_format_version(
        data.get("format_version"),
        FORMAT_VERSION,
        f"{path_or_file} has format version",
        f"{entry} is damaged",
        ModelFileError,
    )
    return data


def _check_storages(content: bytes) -> None:
    """Refuse a tensor entry whose inner records declare more bytes than the entry holds.

    ``torch.save`` writes a zip of stored (uncompressed) records, which ``torch.load`` reads at the sizes the
    inner zip declares; checked here, so that no torch version allocates a record larger than the entry
    (torch 2.13 refuses such a header itself, and checks each storage size the pickle declares against its
    record).
    """
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as inner:
            declared = sum(info.file_size for info in inner.infolist())
    except (zipfile.BadZipFile, EOFError, ValueError) as error:
        raise ValueError(f"not a torch.save archive: {error}") from error
    if declared > len(content):
        raise ValueError(f"its records declare {declared} bytes, more than the {len(content)} it holds")


def _tensor_entry(
    archive: zipfile.ZipFile, path_or_file: PathOrFile, name: str, limit: int, device: th.device | str
) -> Any:
    entry = f"{name}.pth"
    try:
        content = read_entry(archive, entry, limit)
    except EntryTooLargeError as error:
        raise ModelFileError(
            f"{path_or_file}: {error}, the size of the model's {name} state dict: the saved tensors do not "
            "fit the model (refused unread)"
        ) from error
    try:
        _check_storages(content)
        return th.load(io.BytesIO(content), map_location=device, weights_only=True)
    except Exception as error:
        raise ModelFileError(
            f"{path_or_file}: entry {entry} is corrupt or holds something other than tensors "
            f"(it is never unpickled as code): {error}"
        ) from error


def _tensor_entries(
    archive: zipfile.ZipFile,
    path_or_file: PathOrFile,
    limits: Mapping[str, int] | None,
    device: th.device | str,
) -> dict[str, Any]:
    """The tensor entries named in ``limits`` that the file holds (any other ``.pth`` entry is refused,
    unread), each read within its limit (:data:`MAX_TENSOR_BYTES` for all without ``limits``)."""
    tensors: dict[str, Any] = {}
    for entry in archive.namelist():
        if not entry.endswith(".pth") or entry == PYTORCH_VARIABLES:
            continue
        name = entry[: -len(".pth")]
        if limits is not None and name not in limits:
            raise ModelFileError(
                f"{path_or_file}: unknown tensor entry {entry} (refused unread); a model file holds "
                f"{', '.join(f'{known}.pth' for known in limits)}"
            )
        limit = MAX_TENSOR_BYTES if limits is None else limits[name]
        tensors[name] = _tensor_entry(archive, path_or_file, name, limit, device)
    return tensors


@contextlib.contextmanager
def _reading(path_or_file: PathOrFile) -> Iterator[zipfile.ZipFile]:
    """The open archive; a truncated or corrupt entry raises :class:`ModelFileError`."""
    with _open_archive(path_or_file) as archive:
        try:
            yield archive
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as error:
            raise ModelFileError(f"{path_or_file} is damaged (truncated or corrupt): {error}") from error


def read_model_data(path_or_file: PathOrFile, algorithm: str = "ACER") -> dict[str, Any]:
    """The JSON data of a model file (its ``data`` entry, at most :data:`MAX_JSON_BYTES`), checked to be
    model data of ``algorithm`` of a format this version reads; no tensor entry is read.

    Raises:
        FileNotFoundError: no file at the path.
        ModelFileError: not a zip, truncated or corrupt, another algorithm's file, or a newer format.
    """
    with _reading(path_or_file) as archive:
        return _data_entry(archive, path_or_file, algorithm)


def read_model_tensors(
    path_or_file: PathOrFile, limits: Mapping[str, int], device: th.device | str = "cpu"
) -> dict[str, Any]:
    """The state dicts of a model file's tensor entries, read without unpickling.

    Args:
        path_or_file: the model file.
        limits: the entries a model file may hold (``name`` for ``name.pth``), each with the most bytes it
            may take: what the state dict of the model it is loaded into takes, with some slack. An entry
            that declares or holds more is refused before it is decompressed; a ``.pth`` entry not named
            here is refused unread.
        device: where to put the tensors.

    Raises:
        ModelFileError: a tensor entry that is too large, unknown, corrupt or holds other than tensors.
    """
    if isinstance(path_or_file, io.IOBase):
        path_or_file.seek(0)
    with _reading(path_or_file) as archive:
        return _tensor_entries(archive, path_or_file, limits, device)


def read_model_file(
    path_or_file: PathOrFile,
    device: th.device | str = "cpu",
    algorithm: str = "ACER",
    limits: Mapping[str, int] | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read a model file written by :func:`write_model_file`, without unpickling anything.

    ``limits`` bound the tensor entries as for :func:`read_model_tensors`; without them every ``.pth``
    entry is read up to :data:`MAX_TENSOR_BYTES`. ``ACER.load`` reads the data first, builds the model,
    and then reads the tensors bounded by its state dicts.

    Returns:
        The JSON data and the tensors by name.

    Raises:
        FileNotFoundError: no file at the path.
        ModelFileError: not a zip, truncated or corrupt, another algorithm's file, or a newer format.
    """
    with _reading(path_or_file) as archive:
        data = _data_entry(archive, path_or_file, algorithm)
        return data, _tensor_entries(archive, path_or_file, limits, device)

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
"""

from __future__ import annotations

import contextlib
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

from sb3_acer.common.save_util.class_table import CLASS_TABLE

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "ModelFileError",
    "decode_json_value",
    "encode_json_value",
    "read_model_file",
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
    """Rebuild a space described by :func:`space_to_json`."""
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


def _open_archive(path_or_file: PathOrFile) -> zipfile.ZipFile:
    if isinstance(path_or_file, str | pathlib.Path):
        path = pathlib.Path(path_or_file)
        if not path.exists() and path.suffix == "":
            path = path.with_suffix(".zip")
        if not path.exists():
            raise FileNotFoundError(f"no model file at {path}")
        source: Any = path
    else:
        source = path_or_file
    try:
        return zipfile.ZipFile(source, "r")
    except zipfile.BadZipFile as error:
        raise ModelFileError(
            f"{path_or_file} is not a model file (not a zip archive or truncated): {error}"
        ) from error


def read_model_file(
    path_or_file: PathOrFile, device: th.device | str = "cpu", algorithm: str = "ACER"
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Read a model file written by :func:`write_model_file`, without unpickling anything.

    Returns:
        The JSON data and the tensors by name.

    Raises:
        FileNotFoundError: no file at the path.
        ModelFileError: not a zip, truncated or corrupt, another algorithm's file, or a newer format.
    """
    with _open_archive(path_or_file) as archive:
        try:
            names = archive.namelist()
            entry = DATA_ENTRY if DATA_ENTRY in names else FORMAT_1_DATA_ENTRY
            if entry not in names:
                raise ModelFileError(f"{path_or_file} is not an sb3-acer model file (no {DATA_ENTRY})")
            try:
                data = json.loads(archive.read(entry))
            except (ValueError, RecursionError) as error:  # ValueError: also an integer of 5000 digits
                raise ModelFileError(f"{path_or_file}: {entry} is corrupt: {error}") from error
            if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
                raise ModelFileError(
                    f"{path_or_file} is not an sb3-acer model file "
                    "(SB2 and SB3 model files, which unpickle code, are not read)"
                )
            if data.get("algorithm") != algorithm:
                raise ModelFileError(
                    f"{path_or_file} holds a {data.get('algorithm')} model, not an {algorithm} model"
                )
            version = data.get("format_version")
            if not isinstance(version, int) or isinstance(version, bool) or version < 1:
                raise ModelFileError(
                    f"{path_or_file} has format version {version!r}, not a version number (1 to "
                    f"{FORMAT_VERSION}): {entry} is damaged"
                )
            if version > FORMAT_VERSION:
                raise ModelFileError(
                    f"{path_or_file} has format version {version}, newer than this sb3-acer reads "
                    f"({FORMAT_VERSION}); upgrade sb3-acer"
                )
            tensors: dict[str, Any] = {}
            for name in names:
                if not name.endswith(".pth") or name == PYTORCH_VARIABLES:
                    continue
                try:
                    tensors[name[: -len(".pth")]] = th.load(
                        io.BytesIO(archive.read(name)), map_location=device, weights_only=True
                    )
                except Exception as error:
                    raise ModelFileError(
                        f"{path_or_file}: entry {name} is corrupt or holds something other than tensors "
                        f"(it is never unpickled as code): {error}"
                    ) from error
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as error:
            raise ModelFileError(f"{path_or_file} is damaged (truncated or corrupt): {error}") from error
    return data, tensors

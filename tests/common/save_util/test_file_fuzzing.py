"""Fuzzing the file formats: damaged and hostile model, checkpoint, replay buffer and statistics files end in
the library's own error or a successful load -- never another exception, a hang or a crash.

Small honest files are written once per module; each case mutates one (seed-fixed) and loads it in this
process: byte flips in the file or inside one entry's content (the zip then still checks out, so the flip
reaches the JSON, pickle or ``.npy`` reader), truncations, entries swapped with another file's or removed,
the zip's size fields rewritten, ``.npy`` headers declaring other shapes and dtypes, and values of the JSON
settings replaced by others (other types, sizes no setting has). The default suite
runs a few hundred cases; the ``slow`` one a few thousand.
"""

from __future__ import annotations

import contextlib
import io
import json
import pathlib
import signal
import struct
import warnings
import zipfile
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from sb3_acer import ACER
from sb3_acer.cli.normalization import StatisticsFileError, load_normalization, save_normalization
from sb3_acer.common.save_util.model_file import ModelFileError
from sb3_acer.common.save_util.replay_file import ReplayBufferFileError, load_buffer

#: No case may run longer than this (a hang); honest loads take milliseconds.
CASE_SECONDS = 60
FORMATS = ("model", "checkpoint", "replay", "statistics")


class Hang(Exception):
    """A case ran past :data:`CASE_SECONDS`."""


@contextlib.contextmanager
def time_bound(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def cartpole() -> DummyVecEnv:
    return DummyVecEnv([lambda: gym.make("CartPole-v1")])


@pytest.fixture(scope="module")
def honest_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Small honest files of each format: a model, a checkpoint (model and replay buffer), a replay buffer
    file and a statistics file."""
    folder = tmp_path_factory.mktemp("honest")
    env = VecNormalize(cartpole())
    model = ACER("MlpPolicy", env, n_steps=5, buffer_size=50, replay_start=10, seed=0).learn(40)
    model.save(folder / "model.zip")
    model.save(folder / "checkpoint.zip", include=["replay_buffer"])
    model.save_replay_buffer(folder / "replay.pkl")
    save_normalization(env, folder / "statistics.npz")
    env.close()
    return {
        kind: (folder / name).read_bytes()
        for kind, name in zip(
            FORMATS, ("model.zip", "checkpoint.zip", "replay.pkl", "statistics.npz"), strict=True
        )
    }


# ------------------------------------------------------------------------------------------ mutations


def entries_of(content: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return {info.filename: archive.read(info) for info in archive.infolist()}


def zipped(entries: dict[str, bytes], compression: int) -> bytes:
    stream = io.BytesIO()
    with zipfile.ZipFile(stream, "w", compression=compression) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return stream.getvalue()


def compression_of(content: bytes) -> int:
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        return archive.infolist()[0].compress_type


def flip_bytes(rng: np.random.Generator, content: bytes) -> bytes:
    flipped = bytearray(content)
    for position in rng.integers(0, len(flipped), size=int(rng.integers(1, 9))):
        flipped[position] ^= int(rng.integers(1, 256))
    return bytes(flipped)


def flip_in_file(rng: np.random.Generator, content: bytes, files: dict[str, bytes]) -> bytes:
    return flip_bytes(rng, content)


def flip_in_entry(rng: np.random.Generator, content: bytes, files: dict[str, bytes]) -> bytes:
    """Flip bytes of one entry's content and zip it again: the CRC fits, the readers see the change."""
    entries = entries_of(content)
    name = str(rng.choice(sorted(entries)))
    if entries[name]:
        entries[name] = flip_bytes(rng, entries[name])
    return zipped(entries, compression_of(content))


def truncate(rng: np.random.Generator, content: bytes, files: dict[str, bytes]) -> bytes:
    if rng.random() < 0.5:
        return content[: int(rng.integers(0, len(content)))]
    start = int(rng.integers(0, len(content)))
    return content[:start] + content[start + int(rng.integers(1, 4096)) :]


def swap_entries(rng: np.random.Generator, content: bytes, files: dict[str, bytes]) -> bytes:
    """Give one entry the content of another entry, of this file or another format's, or remove it."""
    entries = entries_of(content)
    name = str(rng.choice(sorted(entries)))
    if rng.random() < 0.2:
        del entries[name]
    else:
        donor = entries_of(files[str(rng.choice(sorted(files)))])
        entries[name] = donor[str(rng.choice(sorted(donor)))]
    return zipped(entries, compression_of(content))


def _size_value(rng: np.random.Generator, size: int) -> int:
    choices = [0, 1, max(size - 1, 0), size + 1, size * 1000, 2**31, 2**32 - 1, int(rng.integers(0, 2**32))]
    return min(choices[int(rng.integers(0, len(choices)))], 2**32 - 1)


def rewrite_size_field(rng: np.random.Generator, content: bytes, files: dict[str, bytes]) -> bytes:
    """Rewrite the compressed or uncompressed size of an entry, in its local header or the central
    directory (the sizes the zip declares, which whoever writes the file chooses)."""
    rewritten = bytearray(content)
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        infos, central = archive.infolist(), archive.start_dir
    index = int(rng.integers(0, len(infos)))
    if rng.random() < 0.5:  # local header: compressed size at 18, uncompressed at 22
        offset = infos[index].header_offset + (18 if rng.random() < 0.5 else 22)
    else:  # central directory: compressed size at 20, uncompressed at 24
        for _ in range(index):  # each record: 46 bytes, then the name, extra field and comment
            central += 46 + sum(struct.unpack_from("<HHH", content, central + 28))
        offset = central + (20 if rng.random() < 0.5 else 24)
    (size,) = struct.unpack_from("<I", rewritten, offset)
    struct.pack_into("<I", rewritten, offset, _size_value(rng, size))
    return bytes(rewritten)


DTYPES = ("<f4", "<f8", "|u1", "<i8", ">f4", "|b1", "<U3", "|V8", "|O", "<c16")


def rewrite_npy_header(rng: np.random.Generator, content: bytes, files: dict[str, bytes]) -> bytes:
    """Give one ``.npy`` entry a header that declares another shape, dtype or order, keeping its data."""
    entries = entries_of(content)
    arrays = sorted(name for name in entries if name.endswith(".npy"))
    if not arrays:
        return flip_in_entry(rng, content, files)
    name = str(rng.choice(arrays))
    stream = io.BytesIO(entries[name])
    version = np.lib.format.read_magic(stream)
    read_header, write_header = (
        (np.lib.format.read_array_header_1_0, np.lib.format.write_array_header_1_0)
        if version == (1, 0)
        else (np.lib.format.read_array_header_2_0, np.lib.format.write_array_header_2_0)
    )
    shape, fortran, dtype = read_header(stream)
    data = entries[name][stream.tell() :]
    choice = int(rng.integers(0, 5))
    if choice == 0:  # one side larger, by up to a factor of a billion
        new_shape = list(shape) or [1]
        new_shape[int(rng.integers(0, len(new_shape)))] *= int(10 ** rng.integers(1, 10))
        shape = tuple(new_shape)
    elif choice == 1:
        shape = tuple(int(side) for side in rng.integers(0, 10**6, size=int(rng.integers(0, 4))))
    elif choice == 2:
        dtype = np.dtype(str(rng.choice(DTYPES)))
    elif choice == 3:
        fortran = not fortran
    else:
        shape = (int(rng.integers(10**9, 10**13)),)
    header = {"descr": np.lib.format.dtype_to_descr(dtype), "fortran_order": fortran, "shape": shape}
    out = io.BytesIO()
    write_header(out, header)
    entries[name] = out.getvalue() + data
    return zipped(entries, compression_of(content))


#: What a JSON value is replaced with: other types, sizes no setting has, a class that is not a module.
JSON_VALUES = (
    None,
    -1,
    0,
    1,
    2**63,
    10**12,
    1e308,
    -1e-300,
    float("nan"),
    float("inf"),
    "x",
    "",
    True,
    [],
    [1, 2],
    [[1]],
    {},
    {"a": 1},
    {"__class__": "os:system"},
)


def _json_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The paths of every value inside ``value`` (keys and list indices), innermost first."""
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        yield from _json_paths(item, (*path, key))
    if path:
        yield path


def rewrite_json_value(rng: np.random.Generator, content: bytes, files: dict[str, bytes]) -> bytes:
    """Replace one value anywhere in a JSON entry (``data``, ``replay_buffer.json``) by one of
    :data:`JSON_VALUES`: the zip and the JSON check out, the settings do not."""
    entries = entries_of(content)
    names = sorted(name for name in entries if name in ("data", "data.json", "replay_buffer.json"))
    if not names:
        return flip_in_entry(rng, content, files)
    name = str(rng.choice(names))
    data = json.loads(entries[name])
    paths = list(_json_paths(data))
    *parents, last = paths[int(rng.integers(0, len(paths)))]
    target = data
    for key in parents:
        target = target[key]
    target[last] = JSON_VALUES[int(rng.integers(0, len(JSON_VALUES)))]
    entries[name] = json.dumps(data).encode()
    return zipped(entries, compression_of(content))


MUTATIONS: tuple[Callable[[np.random.Generator, bytes, dict[str, bytes]], bytes], ...] = (
    flip_in_file,
    flip_in_entry,
    truncate,
    swap_entries,
    rewrite_size_field,
    rewrite_npy_header,
    rewrite_json_value,
)


# ------------------------------------------------------------------------------------------ loading


def load(kind: str, content: bytes, folder: pathlib.Path) -> None:
    """Load ``content`` as a file of ``kind``, as the library does."""
    if kind in ("model", "checkpoint"):
        ACER.load(io.BytesIO(content))
    elif kind == "replay":
        load_buffer(io.BytesIO(content))
    else:
        path = folder / "statistics.npz"
        path.write_bytes(content)
        env = cartpole()
        try:
            load_normalization(env, path)
        finally:
            env.close()


#: The library's errors for each format. A checkpoint whose (intact) replay memory does not fit its model
#: raises the documented ``ValueError`` of ``ACER.load`` ("load: the replay buffer has ...").
EXPECTED: dict[str, tuple[type[Exception], ...]] = {
    "model": (ModelFileError,),
    "checkpoint": (ModelFileError,),
    "replay": (ReplayBufferFileError,),
    "statistics": (StatisticsFileError,),
}


def outcome(kind: str, content: bytes, folder: pathlib.Path) -> str | None:
    """``None`` for a load or the library's error; otherwise what happened."""
    try:
        with time_bound(CASE_SECONDS), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a warning (a huge replay memory, say) is not an outcome
            load(kind, content, folder)
    except EXPECTED[kind]:
        return None
    except ValueError as error:
        if kind == "checkpoint" and str(error).startswith("load: the replay buffer"):
            return None
        return f"{type(error).__name__}: {error}"
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


def fuzz(honest_files: dict[str, bytes], kind: str, cases: int, folder: pathlib.Path) -> None:
    failures = []
    for case in range(cases):
        rng = np.random.default_rng([20261207, FORMATS.index(kind), case])
        mutation = MUTATIONS[case % len(MUTATIONS)]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # zipfile's "Duplicate name" for a swapped entry
            content = mutation(rng, honest_files[kind], honest_files)
        problem = outcome(kind, content, folder)
        if problem is not None:
            failures.append(f"case {case} ({mutation.__name__}): {problem[:300]}")
    assert not failures, f"{len(failures)} of {cases} cases:\n" + "\n".join(failures[:20])


@pytest.mark.parametrize("kind", FORMATS)
def test_damaged_and_hostile_files_end_in_the_library_error_or_a_load(
    honest_files: dict[str, bytes], kind: str, tmp_path: pathlib.Path
) -> None:
    load(kind, honest_files[kind], tmp_path)  # the honest file loads
    fuzz(honest_files, kind, 100, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("kind", FORMATS)
def test_thousands_of_damaged_and_hostile_files_end_in_the_library_error_or_a_load(
    honest_files: dict[str, bytes], kind: str, tmp_path: pathlib.Path
) -> None:
    fuzz(honest_files, kind, 1200, tmp_path)

"""Checkpoints: replay buffer files as data, random generator states, resuming a killed run, atomic saves."""

from __future__ import annotations

import copy
import csv
import dataclasses
import gc
import hashlib
import io
import json
import os
import pathlib
import pickle
import random
import re
import signal
import subprocess
import sys
import time
import warnings
import zipfile
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3 import DQN
from stable_baselines3.common.callbacks import CheckpointCallback
from stable_baselines3.common.envs import FakeImageEnv
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecTransposeImage

from sb3_acer import ACER
from sb3_acer.common.buffers.frame_buffer import FrameStackReplayBuffer
from sb3_acer.common.buffers.segment_buffer import SegmentReplayBuffer
from sb3_acer.common.distributions import Categorical
from sb3_acer.common.policies.categorical import sample_actions
from sb3_acer.common.rollout import collect_segment
from sb3_acer.common.save_util.model_file import ModelFileError
from sb3_acer.common.save_util.replay_file import (
    ReplayBufferFileError,
    load_buffer,
    read_embedded_buffer,
    save_buffer,
)
from sb3_acer.common.save_util.rng_state import global_rng_states, set_global_rng_states
from tests.helpers.file_bombs import ALLOWED_MB, BOMB_BYTES, peak_increases, rewrite_padded
from tests.helpers.hostile import MarkerPayload
from tests.helpers.reliability_worker import IDENTITY, identity_env

ROOT = pathlib.Path(__file__).resolve().parents[3]
WORKER = ROOT / "tests" / "helpers" / "reliability_worker.py"


@pytest.fixture(scope="module")
def small_settings(small_settings: Mapping[str, Any]) -> Mapping[str, Any]:
    """The shared small settings (conftest.py) with a 60-step memory: 12 segments, a count checked here."""
    return {**small_settings, "buffer_size": 60}


def assert_buffers_equal(a: Any, b: Any) -> None:
    """Same class, same attributes: arrays equal in dtype and content, generators in the same state."""
    assert type(a) is type(b)
    assert vars(a).keys() == vars(b).keys()
    for name, value in vars(a).items():
        other = vars(b)[name]
        if isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and value.shape == other.shape, name
            np.testing.assert_array_equal(value, other, err_msg=name)
            assert other.flags.writeable, name
        elif name == "rngs":
            assert [g.bit_generator.state for g in value] == [g.bit_generator.state for g in other]
        elif name == "final":
            assert len(value) == len(other)
            for (index_a, obs_a), (index_b, obs_b) in zip(value, other, strict=True):
                np.testing.assert_array_equal(index_a, index_b)
                np.testing.assert_array_equal(obs_a, obs_b)
                assert obs_a.dtype == obs_b.dtype
        elif name == "heads":
            assert value.keys() == other.keys()
            for key in value:
                np.testing.assert_array_equal(value[key], other[key])
        elif name == "_last_tail":
            np.testing.assert_array_equal(value, other)
        else:
            assert value == other, name


def assert_same_samples(a: Any, b: Any, n: int = 5) -> None:
    for _ in range(n):
        first, second = a.sample(), b.sample()
        for field in ("observations", "actions", "rewards", "mu_probs", "final_index", "final_observations"):
            np.testing.assert_array_equal(getattr(first, field), getattr(second, field), err_msg=field)


@pytest.fixture(scope="module")
def trained(
    tmp_path_factory: pytest.TempPathFactory, small_settings: Mapping[str, Any]
) -> tuple[ACER, pathlib.Path]:
    """A CartPole model whose replay memory holds truncated episodes (final observations) and has wrapped."""
    env = DummyVecEnv([lambda: gym.wrappers.TimeLimit(gym.make("CartPole-v1").unwrapped, 12)] * 2)
    model = ACER("MlpPolicy", env, **small_settings).learn(200)  # type: ignore[arg-type]
    assert model.replay_buffer is not None and model.replay_buffer.num_in_buffer == 12
    assert any(len(index) for index, _ in model.replay_buffer.final)
    path = tmp_path_factory.mktemp("buffers") / "buffer"
    model.save_replay_buffer(path)
    return model, path.with_suffix(".pkl")


# ------------------------------------------------------------------------------------------ round trips


def test_replay_buffer_file_is_json_and_npy_arrays(trained: tuple[ACER, pathlib.Path]) -> None:
    _, path = trained
    assert path.name == "buffer.pkl"  # SB3's suffix, but the content is data
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        header = json.loads(archive.read("replay_buffer.json"))
    assert names[0] == "replay_buffer.json"
    assert all(name.startswith("replay_buffer/") and name.endswith(".npy") for name in names[1:])
    assert "replay_buffer/observations.npy" in names
    assert header["format"] == "sb3-acer-replay-buffer"
    assert header["class"] == "SegmentReplayBuffer"
    assert header["state"]["num_in_buffer"] == 12
    assert header["state"]["rngs"][0]["__generator__"]["bit_generator"] == "PCG64"


def test_replay_buffer_round_trip_is_exact(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, small_settings: Mapping[str, Any]
) -> None:
    model, _ = trained
    assert model.replay_buffer is not None
    model.save_replay_buffer(tmp_path / "buffer.pkl")
    loaded = ACER("MlpPolicy", DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2), **small_settings)
    assert loaded.replay_buffer is not None and len(loaded.replay_buffer) == 0
    loaded.load_replay_buffer(tmp_path / "buffer.pkl")
    assert_buffers_equal(loaded.replay_buffer, model.replay_buffer)
    # The per-env generators continue where they were: the same replay batches from now on.
    assert_same_samples(loaded.replay_buffer, model.replay_buffer)
    # The memory keeps working: the next segment goes to next_idx.
    next_idx = loaded.replay_buffer.next_idx
    loaded.learn(10)
    assert loaded.replay_buffer.next_idx == (next_idx + 1) % 12


def test_replay_buffer_round_trip_through_a_file_object(trained: tuple[ACER, pathlib.Path]) -> None:
    model, _ = trained
    stream = io.BytesIO()
    model.save_replay_buffer(stream)
    stream.seek(0)
    assert_buffers_equal(load_buffer(stream), model.replay_buffer)


def _frame_stack_segments(n_envs: int, n_steps: int, count: int) -> tuple[Any, list[Any]]:
    env = VecTransposeImage(
        VecFrameStack(DummyVecEnv([lambda: FakeImageEnv(3, 12, 12, 1)] * n_envs), n_stack=4)
    )
    env.seed(0)
    obs, starts = env.reset(), np.ones(n_envs, dtype=bool)

    class Uniform:
        device = th.device("cpu")
        dist = Categorical(gym.spaces.Discrete(3))

        def set_training_mode(self, mode: bool) -> None:
            del mode

        def behaviour(self, batch: th.Tensor, state: None, starts: th.Tensor) -> tuple[th.Tensor, ...]:
            probs = th.full((batch.shape[0], 3), 1 / 3)
            return sample_actions(probs), probs, None

    segments = []
    for _ in range(count):
        result = collect_segment(
            env=env,
            policy=Uniform(),  # type: ignore[arg-type]
            n_steps=n_steps,
            last_obs=obs,
            last_episode_starts=starts,
            on_step=lambda record: True,
        )
        obs, starts = result.last_obs, result.last_episode_starts
        segments.append(result.segment)
    return env.observation_space, segments


def test_frame_stack_buffer_round_trip_is_exact(tmp_path: pathlib.Path) -> None:
    space, segments = _frame_stack_segments(n_envs=2, n_steps=4, count=7)
    buffer = FrameStackReplayBuffer(20, 4, 2, space.shape, n_stack=4, n_actions=3, seed=3)
    for segment in segments:  # 7 segments in 5 slots: the ring has wrapped
        buffer.put(segment)
    assert buffer.heads  # the oldest slot keeps its whole first observation
    save_buffer(buffer, tmp_path / "frames")
    loaded = load_buffer(tmp_path / "frames.pkl")
    assert isinstance(loaded, FrameStackReplayBuffer)
    assert_buffers_equal(loaded, buffer)
    assert_same_samples(loaded, buffer)
    for slots in ([0, 4], [3, 1]):
        np.testing.assert_array_equal(
            loaded.get(np.array(slots)).observations, buffer.get(np.array(slots)).observations
        )


def test_only_known_buffer_classes_are_saved(tmp_path: pathlib.Path) -> None:
    class MyBuffer(SegmentReplayBuffer):
        pass

    buffer = MyBuffer(10, 5, 1, (2,), np.dtype(np.float32), 2)
    with pytest.raises(TypeError, match="cannot save a MyBuffer"):
        save_buffer(buffer, tmp_path / "mine")
    assert not (tmp_path / "mine.pkl").exists()


# ------------------------------------------------------------------------------------------ checkpoints


def test_checkpoint_file_restores_model_buffer_counters_and_random_streams(
    tmp_path: pathlib.Path, small_settings: Mapping[str, Any]
) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", learning_rate=1e-3, **small_settings)
    model.learn(100)
    model.save(tmp_path / "checkpoint", include=["replay_buffer"])
    assert model.replay_buffer is not None
    # What the original draws next from every generator.
    expected = (
        random.random(),
        np.random.rand(),
        th.rand(3),
        model._replay_rng.random(),
        model.replay_buffer.sample_slots(),
    )

    with zipfile.ZipFile(tmp_path / "checkpoint.zip") as archive:
        assert "replay_buffer.json" in archive.namelist()
        data = json.loads(archive.read("data"))
    assert set(data["rng_states"]) >= {"python", "numpy", "torch", "replay"}

    random.seed(99)
    np.random.seed(99)
    th.manual_seed(99)
    loaded = ACER.load(tmp_path / "checkpoint.zip", env=gym.make("CartPole-v1"))
    assert loaded.replay_buffer is not None
    assert loaded.num_timesteps == 100
    assert loaded._current_progress_remaining == model._current_progress_remaining
    assert loaded.current_learning_rate() == model.current_learning_rate()
    assert loaded._n_replay_updates == model._n_replay_updates
    assert_buffers_equal(
        loaded.replay_buffer,
        load_buffer(tmp_path / "checkpoint.zip"),  # a checkpoint is also a replay buffer file
    )
    actual = (
        random.random(),
        np.random.rand(),
        th.rand(3),
        loaded._replay_rng.random(),
        loaded.replay_buffer.sample_slots(),
    )
    assert actual[:2] == expected[:2]
    assert th.equal(actual[2], expected[2])
    assert actual[3] == expected[3]
    np.testing.assert_array_equal(actual[4], expected[4])


def test_checkpoint_through_a_file_object(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings).learn(50)
    stream = io.BytesIO()
    model.save(stream, include=["replay_buffer"])
    stream.seek(0)
    loaded = ACER.load(stream)
    assert_buffers_equal(loaded.replay_buffer, model.replay_buffer)


def test_checkpoint_of_a_recurrent_policy_keeps_the_lstm_states(small_settings: Mapping[str, Any]) -> None:
    if "MlpLstmPolicy" not in ACER.policy_aliases:
        pytest.skip("no recurrent policies")
    model = ACER("MlpLstmPolicy", "CartPole-v1", **small_settings).learn(60)
    assert model.replay_buffer is not None and getattr(model.replay_buffer, "state_size", 0) > 0
    stream = io.BytesIO()
    model.save(stream, include=["replay_buffer"])
    stream.seek(0)
    loaded = ACER.load(stream, env=gym.make("CartPole-v1"))
    assert_buffers_equal(loaded.replay_buffer, model.replay_buffer)
    loaded.learn(20, reset_num_timesteps=False)
    assert loaded.num_timesteps == 80


def test_plain_save_holds_no_replay_buffer(tmp_path: pathlib.Path, small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings).learn(50)
    model.save(tmp_path / "model")
    with zipfile.ZipFile(tmp_path / "model.zip") as archive:
        assert not any(name.startswith("replay_buffer") for name in archive.namelist())
    loaded = ACER.load(tmp_path / "model.zip", env=gym.make("CartPole-v1"))
    assert loaded.replay_buffer is not None and len(loaded.replay_buffer) == 0
    with pytest.raises(ReplayBufferFileError, match="a model file without a replay buffer"):
        loaded.load_replay_buffer(tmp_path / "model.zip")


def test_checkpoint_with_another_number_of_envs(
    tmp_path: pathlib.Path, small_settings: Mapping[str, Any]
) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings).learn(50)
    model.save(tmp_path / "checkpoint", include=["replay_buffer"])
    three = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 3)
    with pytest.raises(ValueError, match=r"n_envs=1 but this model needs n_envs=3.*'replay_buffer': None"):
        ACER.load(tmp_path / "checkpoint.zip", env=three)
    loaded = ACER.load(tmp_path / "checkpoint.zip", env=three, custom_objects={"replay_buffer": None})
    assert (
        loaded.replay_buffer is not None
        and loaded.replay_buffer.n_envs == 3
        and len(loaded.replay_buffer) == 0
    )
    # Without an env the memory is restored for n_envs=1 and kept by set_env with one env; the path may
    # omit .zip, as for model files.
    loaded = ACER.load(tmp_path / "checkpoint")
    restored = loaded.replay_buffer
    assert restored is not None and len(restored) == 10
    loaded.set_env(gym.make("CartPole-v1"))
    assert loaded.replay_buffer is restored


def test_load_replay_buffer_that_does_not_fit_raises_and_keeps_the_memory(
    trained: tuple[ACER, pathlib.Path],
    small_settings: Mapping[str, Any],
) -> None:
    _, path = trained
    two = DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2)
    for kwargs, name in (
        (dict(n_steps=6, buffer_size=60, replay_start=10), "n_steps"),
        (dict(n_steps=5, buffer_size=100, replay_start=10), "capacity"),
    ):
        model = ACER("MlpPolicy", two, **kwargs)  # type: ignore[arg-type]
        own = model.replay_buffer
        with pytest.raises(ValueError, match=f"the replay buffer has {name}="):
            model.load_replay_buffer(path)
        assert model.replay_buffer is own
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings)
    with pytest.raises(ValueError, match="n_envs=2 but this model needs n_envs=1"):
        model.load_replay_buffer(path)
    other_space = ACER("MlpPolicy", DummyVecEnv([lambda: gym.make("Acrobot-v1")] * 2), **small_settings)
    with pytest.raises(ValueError, match="obs_shape"):
        other_space.load_replay_buffer(path)


def test_replay_buffer_methods_without_replay_raise(trained: tuple[ACER, pathlib.Path]) -> None:
    _, path = trained
    model = ACER("MlpPolicy", DummyVecEnv([lambda: gym.make("CartPole-v1")] * 2), replay_ratio=0)
    with pytest.raises(ValueError, match="no replay buffer to save"):
        model.save_replay_buffer("never")
    with pytest.raises(ValueError, match="does not replay"):
        model.load_replay_buffer(path)


def test_global_rng_states_are_all_checked_before_any_is_set() -> None:
    states = global_rng_states()
    states["torch"] = "not base64!"
    before = np.random.get_state()[1].copy()  # type: ignore[index]
    python_before = random.getstate()
    with pytest.raises(ValueError, match="malformed random generator states"):
        set_global_rng_states(states)
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # type: ignore[index]
    assert random.getstate() == python_before


def test_corrupt_rng_states_in_a_model_file_raise(tmp_path: pathlib.Path) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", replay_ratio=0)
    model.save(tmp_path / "model")
    with zipfile.ZipFile(tmp_path / "model.zip") as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(entries["data"])
    data["rng_states"]["replay"] = {"bit_generator": "os.system", "state": 1}
    entries["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(tmp_path / "bad.zip", "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    with pytest.raises(ModelFileError, match=r"random generator states are corrupt.*unknown bit generator"):
        ACER.load(tmp_path / "bad.zip")


# ------------------------------------------------------------------------------------------ damaged files


def test_missing_replay_buffer_file_raises(tmp_path: pathlib.Path, small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings)
    with pytest.raises(FileNotFoundError, match="no replay buffer file"):
        model.load_replay_buffer(tmp_path / "nothing")
    with pytest.raises(FileNotFoundError):
        model.load_replay_buffer(tmp_path / "nothing.pkl")


def test_truncated_replay_buffer_file_raises(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    content = path.read_bytes()
    for length in (0, 100, len(content) // 2, len(content) - 10):
        target = tmp_path / f"truncated_{length}.pkl"
        target.write_bytes(content[:length])
        with pytest.raises(ReplayBufferFileError, match="truncated"):
            load_buffer(target)


@pytest.mark.parametrize(
    "entry", ["replay_buffer.json", "replay_buffer/observations.npy", "replay_buffer/final.1.npy"]
)
def test_corrupt_replay_buffer_entry_raises(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, entry: str
) -> None:
    _, path = trained
    content = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(entry)
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for offset in (start + 3, start + info.compress_size // 2):
        damaged = content.copy()
        damaged[offset : offset + 8] = b"\xff" * 8
        target = tmp_path / "corrupt.pkl"
        target.write_bytes(bytes(damaged))
        with pytest.raises(ReplayBufferFileError, match=r"damaged|corrupt"):
            load_buffer(target)


def _rewrite(source: pathlib.Path, target: pathlib.Path, name: str, content: bytes) -> None:
    with zipfile.ZipFile(source) as archive:
        entries = {info.filename: archive.read(info.filename) for info in archive.infolist()}
    entries[name] = content
    with zipfile.ZipFile(target, "w") as archive:
        for entry, data in entries.items():
            archive.writestr(entry, data)


def test_an_integer_json_cannot_convert_is_a_replay_buffer_file_error(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """A 5000-digit integer in ``replay_buffer.json`` (Python's int-string limit raises ValueError) is the
    file's error, as in a model file's ``data`` (it escaped as a plain ValueError)."""
    _, path = trained
    target = tmp_path / "digits.pkl"
    _rewrite(path, target, "replay_buffer.json", b'{"format": 1' + b"0" * 5000 + b"}")
    with pytest.raises(ReplayBufferFileError, match=r"replay_buffer\.json is corrupt: Exceeds the limit"):
        load_buffer(target)


def _header(source: pathlib.Path) -> dict[str, Any]:
    with zipfile.ZipFile(source) as archive:
        return json.loads(archive.read("replay_buffer.json"))


def _edit_header(source: pathlib.Path, target: pathlib.Path, **changes: Any) -> None:
    header = _header(source)
    header.update(changes)
    _rewrite(source, target, "replay_buffer.json", json.dumps(header).encode())


def test_newer_replay_buffer_format_raises(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    _edit_header(path, tmp_path / "future.pkl", format_version=2)
    with pytest.raises(ReplayBufferFileError, match="format version 2, newer than this sb3-acer reads"):
        load_buffer(tmp_path / "future.pkl")


@pytest.mark.parametrize("version", ["1", 1.0, None, True, 0])
def test_a_replay_buffer_format_version_that_is_not_a_number_is_called_damaged(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, version: Any
) -> None:
    """Before, "1" and None were called newer than this sb3-acer reads, and True and 0 loaded."""
    _, path = trained
    _edit_header(path, tmp_path / "version.pkl", format_version=version)
    message = f"version.pkl has replay buffer format version {version!r}, not a version number (1 to 1)"
    with pytest.raises(ReplayBufferFileError, match=re.escape(message) + ": the file is damaged$"):
        load_buffer(tmp_path / "version.pkl")


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"class": {}}, r"holds a \{\} replay buffer; known: "),
        (
            {"capacity": float("inf")},
            r"the SegmentReplayBuffer settings are invalid: capacity must be a whole number",
        ),
        (
            {"final": {"__ragged__": {"lengths": float("inf"), "columns": []}}},
            r"SegmentReplayBuffer state is invalid",
        ),
    ],
)
def test_replay_buffer_settings_of_another_type_are_called_invalid(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, change: dict[str, Any], error: str
) -> None:
    """Found by the fuzzing test: a class named by an object raised ``TypeError``, infinite ragged lengths
    ``OverflowError``."""
    _, path = trained
    header = _header(path)
    if "class" in change:
        header.update(change)
    else:
        header["state"].update(change)
    _rewrite(path, tmp_path / "edited.pkl", "replay_buffer.json", json.dumps(header).encode())
    with pytest.raises(ReplayBufferFileError, match=error):
        load_buffer(tmp_path / "edited.pkl")


def test_unknown_replay_buffer_class_raises(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    _edit_header(path, tmp_path / "other.pkl", **{"class": "os.system"})
    with pytest.raises(ReplayBufferFileError, match=r"holds a 'os\.system' replay buffer"):
        load_buffer(tmp_path / "other.pkl")


def test_inconsistent_replay_buffer_state_raises(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    header = _header(path)
    header["state"]["num_in_buffer"] = 99
    _rewrite(path, tmp_path / "count.pkl", "replay_buffer.json", json.dumps(header).encode())
    with pytest.raises(ReplayBufferFileError, match=r"num_in_buffer=99 outside \[0, 12\]"):
        load_buffer(tmp_path / "count.pkl")
    # An array of another shape than the header's buffer settings give.
    stream = io.BytesIO()
    np.save(stream, np.zeros((3, 6, 2, 4), dtype=np.float32))
    _rewrite(path, tmp_path / "shape.pkl", "replay_buffer/observations.npy", stream.getvalue())
    with pytest.raises(
        ReplayBufferFileError, match=r"observations is float32\[3, 6, 2, 4\], expected float32\[12"
    ):
        load_buffer(tmp_path / "shape.pkl")


def test_other_files_are_not_replay_buffer_files(tmp_path: pathlib.Path) -> None:
    garbage = tmp_path / "garbage.pkl"
    garbage.write_bytes(np.random.default_rng(0).bytes(3000))
    with pytest.raises(ReplayBufferFileError, match="not a replay buffer file"):
        load_buffer(garbage)
    # SB3's own replay buffer file is a pickle: refused without being unpickled.
    dqn = DQN("MlpPolicy", "CartPole-v1", buffer_size=100, learning_starts=10)
    dqn.save_replay_buffer(tmp_path / "sb3_buffer.pkl")
    with pytest.raises(ReplayBufferFileError, match="not a replay buffer file"):
        load_buffer(tmp_path / "sb3_buffer.pkl")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("something.txt", "hello")
    with pytest.raises(ReplayBufferFileError, match=r"not a replay buffer file \(no replay_buffer.json\)"):
        load_buffer(tmp_path / "other.zip")


def test_pickle_payload_in_a_replay_buffer_file_is_not_executed(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    marker = tmp_path / "pwned"
    stream = io.BytesIO()
    np.save(stream, np.array([MarkerPayload(marker)], dtype=object), allow_pickle=True)
    # The payload is live: an unrestricted np.load runs it.
    stream.seek(0)
    np.load(stream, allow_pickle=True)
    assert marker.exists()
    marker.unlink()

    for entry in ("replay_buffer/observations.npy", "replay_buffer/final.0.npy"):
        _rewrite(path, tmp_path / "evil.pkl", entry, stream.getvalue())
        with pytest.raises(
            ReplayBufferFileError, match=rf"{re.escape(entry)} is corrupt or not a plain array"
        ):
            load_buffer(tmp_path / "evil.pkl")
        assert not marker.exists()
    _rewrite(path, tmp_path / "evil.pkl", "replay_buffer.json", pickle.dumps(MarkerPayload(marker)))
    with pytest.raises(ReplayBufferFileError, match=r"replay_buffer\.json is corrupt"):
        load_buffer(tmp_path / "evil.pkl")
    assert not marker.exists()


def test_array_header_announcing_more_data_than_the_entry_holds_is_refused(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    header = np.lib.format.header_data_from_array_1_0(np.zeros(1, dtype=np.float64))
    header["shape"] = (10**12,)  # 8 TB: must be refused before anything is allocated
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, header)
    _rewrite(path, tmp_path / "bomb.pkl", "replay_buffer/rewards.npy", stream.getvalue())
    with pytest.raises(ReplayBufferFileError, match="header announces 8000000000000 bytes"):
        load_buffer(tmp_path / "bomb.pkl")


def _npy_header(dtype: str, shape: tuple[int, ...]) -> bytes:
    stream = io.BytesIO()
    np.lib.format.write_array_header_1_0(stream, {"descr": dtype, "fortran_order": False, "shape": shape})
    return stream.getvalue()


#: Each entry padded to expand 1000-fold, what it starts with, and the error.
REPLAY_BOMBS = (
    (
        "replay_buffer/rewards.npy",
        _npy_header("<f4", (BOMB_BYTES // 4,)),
        rf"entry replay_buffer/rewards\.npy: header announces {BOMB_BYTES} bytes "
        rf"\(<f4\[{BOMB_BYTES // 4}\]\), more than the \d+ it may hold, given the buffer's settings",
    ),
    (
        "replay_buffer/final.lengths.npy",
        _npy_header("<i8", (BOMB_BYTES // 16, 2)),
        rf"entry replay_buffer/final\.lengths\.npy: header announces {BOMB_BYTES} bytes "
        rf"\(<i8\[{BOMB_BYTES // 16}, 2\]\), more than the 320 it may hold",
    ),
    (
        "replay_buffer.json",
        b"{",
        rf"entry replay_buffer\.json declares {BOMB_BYTES + 1} bytes, more than the 67108864",
    ),
)


def test_replay_buffer_entries_that_expand_1000_fold_are_refused_in_bounded_memory(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """A 100 KB replay buffer file whose array declares 100 MB (a header checked only against the zip's
    declared size, which the attacker writes too, allocated 400 MB before) is refused before anything is
    allocated: the arrays together may hold what the buffer's own settings imply, and the JSON 64 MiB."""
    _, path = trained
    bombs = [tmp_path / f"bomb{case}.pkl" for case in range(len(REPLAY_BOMBS))]
    for bomb, (entry, head, _) in zip(bombs, REPLAY_BOMBS, strict=True):
        rewrite_padded(path, bomb, entry, head, padding=b" " if entry.endswith(".json") else b"\0")
    results = peak_increases(
        f"from sb3_acer.common.save_util.replay_file import load_buffer\nload_buffer({str(path)!r})",
        [f"load_buffer({str(bomb)!r})" for bomb in bombs],
    )
    for (entry, _, error), (increase, outcome) in zip(REPLAY_BOMBS, results, strict=True):
        assert outcome.startswith("ReplayBufferFileError: ") and re.search(error, outcome), outcome
        assert increase < ALLOWED_MB, f"loading the {entry} bomb took {increase:.0f} MB more"


def test_saved_buffer_with_next_idx_at_capacity_is_refused() -> None:
    """A replay buffer file whose ``next_idx`` equals the capacity (one past the end) is refused on load."""
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, buffer_size=20, replay_start=5, seed=0).learn(10)
    buffer = model.replay_buffer
    assert buffer is not None and buffer.capacity == 4
    buffer.next_idx = buffer.capacity
    handle = io.BytesIO()
    save_buffer(buffer, handle)
    handle.seek(0)
    with pytest.raises(ReplayBufferFileError, match=r"next_idx=4 outside \[0, 3\]"):
        load_buffer(handle)


# ------------------------------------------------------------------------------------------ SB3 callback


def test_checkpoint_callback_saves_model_and_replay_buffer(
    tmp_path: pathlib.Path, small_settings: Mapping[str, Any]
) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings)
    callback = CheckpointCallback(save_freq=20, save_path=str(tmp_path), save_replay_buffer=True)
    model.learn(60, callback=callback)
    names = sorted(path.name for path in tmp_path.iterdir())
    assert names == [
        "rl_model_20_steps.zip",
        "rl_model_40_steps.zip",
        "rl_model_60_steps.zip",
        "rl_model_replay_buffer_20_steps.pkl",
        "rl_model_replay_buffer_40_steps.pkl",
        "rl_model_replay_buffer_60_steps.pkl",
    ]
    resumed = ACER.load(tmp_path / "rl_model_60_steps.zip", env=gym.make("CartPole-v1"))
    resumed.load_replay_buffer(tmp_path / "rl_model_replay_buffer_60_steps.pkl")
    assert resumed.replay_buffer is not None
    # Saved at the last step of the rollout, before that segment was stored: 11 of 12 segments.
    assert len(resumed.replay_buffer) == 11
    assert resumed.num_timesteps == 60


# ------------------------------------------------------------------------------------------ kill and resume


def _run_worker(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )


def _read_log(folder: pathlib.Path) -> list[dict[str, str]]:
    with open(folder / "progress.csv") as handle:
        return list(csv.DictReader(handle))


def test_run_killed_with_sigkill_resumes_from_its_last_checkpoint(tmp_path: pathlib.Path) -> None:
    """The killed run resumes with replay active at once, the learning-rate schedule where it stopped,
    and ends as good as an uninterrupted run."""
    total, save_freq, slow_after = 1000, 50, 400
    checkpoints = tmp_path / "checkpoints"
    worker = _run_worker(str(checkpoints), str(total), str(save_freq), str(slow_after))
    try:
        # The uninterrupted reference, trained meanwhile.
        reference = ACER("MlpPolicy", identity_env(), **IDENTITY).learn(total)  # type: ignore[arg-type]
        deadline = time.monotonic() + 120
        while not (checkpoints / f"acer_replay_buffer_{slow_after}_steps.pkl").exists():
            assert worker.poll() is None, worker.communicate()[1]
            assert time.monotonic() < deadline, "no checkpoint in time"
            time.sleep(0.05)
        worker.send_signal(signal.SIGKILL)
        assert worker.wait(timeout=30) == -signal.SIGKILL
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.communicate()

    # The last step with both a model and a replay buffer file (each file is written atomically).
    steps = max(
        int(match[1])
        for path in checkpoints.glob("acer_*_steps.zip")
        if (match := re.fullmatch(r"acer_(\d+)_steps\.zip", path.name))
        and (checkpoints / f"acer_replay_buffer_{match[1]}_steps.pkl").exists()
    )
    assert slow_after <= steps < total
    env = identity_env()
    model = ACER.load(checkpoints / f"acer_{steps}_steps.zip", env=env)
    model.load_replay_buffer(checkpoints / f"acer_replay_buffer_{steps}_steps.pkl")
    assert model.num_timesteps == steps
    assert model.replay_buffer is not None and model.replay_buffer.has_at_least(model.replay_start)
    replays_before = model._n_replay_updates
    logger = configure(str(tmp_path / "log"), ["csv"])
    model.set_logger(logger)
    model.learn(total - model.num_timesteps, reset_num_timesteps=False, log_interval=1)
    logger.close()

    rows = _read_log(tmp_path / "log")
    logged_steps = np.array([int(row["time/total_timesteps"]) for row in rows])
    replays = np.array([int(row["train/n_replay_updates"]) for row in rows])
    learning_rates = np.array([float(row["train/learning_rate"]) for row in rows])
    np.testing.assert_array_equal(logged_steps, np.arange(steps + 5, total + 1, 5))
    # Replay from the first iterations on (Poisson(4) replays each; no new replay_start wait).
    assert replays[1] > replays_before
    # The linear schedule continues over the original total, not restarted over the remaining steps.
    np.testing.assert_allclose(learning_rates, 7e-4 * (1 - logged_steps / total), rtol=1e-6, atol=1e-12)
    assert model.num_timesteps == total

    resumed_reward, _ = evaluate_policy(model, env, n_eval_episodes=10, deterministic=True)
    reference_reward, _ = evaluate_policy(reference, identity_env(), n_eval_episodes=10, deterministic=True)
    assert reference_reward >= 90  # out of 100; a random policy gets 25
    assert resumed_reward >= 90


def _save_in_a_child(save: Any, target: pathlib.Path) -> int:
    """Fork a process that saves to ``target`` over and over; return its pid once the first save is done."""
    read_end, write_end = os.pipe()
    # The child inherits every object earlier tests left behind; a garbage collection in the child would
    # run their finalizers there (one segfaulted in CI, finalizing native threads that do not survive a
    # fork). Collect first, and never collect in the child, which only saves and then _exits.
    gc.collect()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python >= 3.12 warns about fork and threads
        pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        gc.disable()
        try:
            os.close(read_end)
            try:
                save(target)
            except BaseException as error:  # tell the parent why, for the assertion below
                os.write(write_end, f"first save failed: {error!r}".encode())
                raise
            os.write(write_end, b"saved")
            while True:
                save(target)
        finally:
            os._exit(1)
    os.close(write_end)
    try:
        message = os.read(read_end, 4096)  # what the child wrote first: b"saved" or why it failed
    finally:
        os.close(read_end)
    assert message == b"saved", message
    return pid


@pytest.mark.parametrize("what", ["model", "buffer"])
def test_kill_during_save_never_damages_the_target(tmp_path: pathlib.Path, what: str) -> None:
    """A process saving a large model (or replay buffer) to the same path over and over is killed with
    SIGKILL at random moments; after each kill the target loads."""
    if what == "model":
        model = ACER("MlpPolicy", "CartPole-v1", replay_ratio=0, policy_kwargs=dict(net_arch=[1024, 1024]))
        save, load, target = model.save, ACER.load, tmp_path / "model.zip"
    else:
        model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, buffer_size=200_000, replay_start=10).learn(50)
        save, load, target = model.save_replay_buffer, load_buffer, tmp_path / "buffer.pkl"
    start = time.perf_counter()
    save(target)
    seconds_per_save = time.perf_counter() - start
    rng = np.random.default_rng(0)
    killed_mid_save = 0
    for _ in range(4):
        pid = _save_in_a_child(save, target)
        try:
            time.sleep(float(rng.uniform(0.0, 2 * seconds_per_save)))
        finally:
            os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        leftovers = list(tmp_path.glob(f".{target.name}.*.tmp"))
        killed_mid_save += bool(leftovers)
        for leftover in leftovers:
            leftover.unlink()
        load(target)
    assert killed_mid_save > 0  # at least one kill landed in the middle of writing


def test_replay_buffer_generator_with_a_short_key_raises(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    header = _header(path)
    header["state"]["rngs"][0] = {
        "__generator__": {"bit_generator": "MT19937", "state": {"key": [1, 2, 3], "pos": 0}}
    }
    _rewrite(path, tmp_path / "rng.pkl", "replay_buffer.json", json.dumps(header).encode())
    with pytest.raises(ReplayBufferFileError, match="malformed MT19937 state"):
        load_buffer(tmp_path / "rng.pkl")


# ----------------------------------------------------------------- replay memory values that put cannot store


def _damage(buffer: Any, change: str) -> None:
    filled = buffer.num_in_buffer
    if change == "action 99":
        buffer.actions[filled - 1, 0, 0] = 99
    elif change == "action -5":
        buffer.actions[0, 1, 1] = -5
    elif change == "mu NaN":
        buffer.mu_probs[0, 0, 0, 0] = np.nan
    elif change == "mu rows that do not sum to 1":
        buffer.mu_probs[1, 0, 0] = 0.0
    elif change == "reward inf":
        buffer.rewards[2, 0, 1] = np.inf
    elif change == "final index outside the segment":
        slot = next(k for k, (index, _) in enumerate(buffer.final) if len(index))
        index, obs = buffer.final[slot]
        buffer.final[slot] = (np.full_like(index, 7), obs)
    elif change == "observation NaN":
        buffer.observations[filled - 1, 3, 1, 2] = np.nan
    elif change == "final observation inf":
        slot = next(k for k, (index, _) in enumerate(buffer.final) if len(index))
        index, obs = buffer.final[slot]
        obs = obs.copy()
        obs[0, 0] = -np.inf
        buffer.final[slot] = (index, obs)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("action 99", r"actions outside \[0, 2\): 99"),
        ("action -5", r"actions outside \[0, 2\): -5"),
        ("mu NaN", r"mu_probs hold NaN or values outside \[0, 1\]"),
        ("mu rows that do not sum to 1", "mu_probs of a stored step do not sum to 1"),
        ("reward inf", "rewards hold NaN or inf"),
        ("final index outside the segment", r"final\[\d+\] indexes outside the segment"),
        ("observation NaN", r"observations of slot \d+ hold NaN or inf"),
        ("final observation inf", r"final\[\d+\] observations hold NaN or inf"),
    ],
)
def test_replay_buffer_values_that_put_cannot_store_are_refused_and_the_memory_kept(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, change: str, message: str
) -> None:
    model, path = trained
    buffer = load_buffer(path)
    _damage(buffer, change)
    save_buffer(buffer, tmp_path / "damaged")
    with pytest.raises(ReplayBufferFileError, match=f"the SegmentReplayBuffer state is invalid: {message}"):
        load_buffer(tmp_path / "damaged.pkl")
    own = model.replay_buffer
    with pytest.raises(ReplayBufferFileError, match=message):
        model.load_replay_buffer(tmp_path / "damaged.pkl")
    assert model.replay_buffer is own


def test_frame_buffer_non_finite_float_frames_are_refused(tmp_path: pathlib.Path) -> None:
    space, segments = _frame_stack_segments(n_envs=2, n_steps=4, count=7)
    buffer = FrameStackReplayBuffer(
        20, 4, 2, space.shape, n_stack=4, n_actions=3, seed=3, obs_dtype=np.float32
    )
    for segment in segments:
        buffer.put(dataclasses.replace(segment, observations=segment.observations.astype(np.float32)))
    save_buffer(buffer, tmp_path / "finite")
    assert load_buffer(tmp_path / "finite.pkl").num_in_buffer == buffer.num_in_buffer
    head = next(iter(buffer.heads))
    for name, damage, message in (
        ("frame", lambda b: b.frames.__setitem__((1, 2, 0, 0, 5, 5), np.nan), r"frames of slot 1 hold NaN"),
        ("head", lambda b: b.heads[head].__setitem__((0, 0, 0), np.inf), r"heads\[\(\d+, \d+\)\] hold NaN"),
    ):
        damaged = copy.deepcopy(buffer)
        damage(damaged)
        save_buffer(damaged, tmp_path / name)
        with pytest.raises(ReplayBufferFileError, match=message):
            load_buffer(tmp_path / f"{name}.pkl")


def test_frame_buffer_heads_of_another_shape_are_refused(tmp_path: pathlib.Path) -> None:
    space, segments = _frame_stack_segments(n_envs=2, n_steps=4, count=7)
    buffer = FrameStackReplayBuffer(20, 4, 2, space.shape, n_stack=4, n_actions=3, seed=3)
    for segment in segments:
        buffer.put(segment)
    key = next(iter(buffer.heads))
    for heads, message in (
        ({**buffer.heads, key: np.zeros((2, 2), dtype=np.uint8)}, r"heads\[\(\d+, \d+\)\] is uint8\[2, 2\]"),
        ({**buffer.heads, (9, 0): buffer.heads[key]}, r"heads key \(9, 0\) outside the buffer"),
        (
            {**buffer.heads, (1, 0, 2): buffer.heads[key]},
            "heads hold part of the whole segment of slot 1, env 0",
        ),
    ):
        damaged = copy.copy(buffer)
        damaged.heads = heads
        save_buffer(damaged, tmp_path / "frames")
        with pytest.raises(ReplayBufferFileError, match=message):
            load_buffer(tmp_path / "frames.pkl")


# ---------------------------------------------------------------------- format 1 through the state dict

FORMAT_V1 = ROOT / "tests" / "data" / "format_v1"
#: sha256 (first 16 hex digits) of five batches sampled from each file's buffer right after loading, as
#: the code before the buffers had a state dict (commit cf97183) drew them.
V1_SAMPLE_DIGESTS = {
    "cartpole_mlp_replay.pkl": "6859ca063703b023",
    "cartpole_mlp.zip": "6859ca063703b023",
    "cartpole_lstm.zip": "c2aa10e2a334d0d7",
    "image_cnn.zip": "2575381b61848bfa",
}


def _v1_buffer(name: str) -> Any:
    path = FORMAT_V1 / name
    return load_buffer(path) if name.endswith(".pkl") else read_embedded_buffer(path)


@pytest.mark.parametrize("name", sorted(V1_SAMPLE_DIGESTS))
def test_format_1_files_sample_as_before(name: str) -> None:
    buffer = _v1_buffer(name)
    digest = hashlib.sha256()
    for _ in range(5):
        batch = buffer.sample()
        for field in (
            "observations",
            "actions",
            "rewards",
            "mu_probs",
            "terminated",
            "truncated",
            "episode_starts",
            "final_index",
            "final_observations",
        ):
            array = np.ascontiguousarray(getattr(batch, field))
            digest.update(str((array.dtype.str, array.shape)).encode())
            digest.update(array.tobytes())
        if batch.initial_state is not None:
            digest.update(batch.initial_state[0].tobytes())
            digest.update(batch.initial_state[1].tobytes())
    assert digest.hexdigest()[:16] == V1_SAMPLE_DIGESTS[name]


@pytest.mark.parametrize("name", sorted(V1_SAMPLE_DIGESTS))
def test_format_1_buffers_are_written_back_in_the_same_format(name: str) -> None:
    """The state dict is written with the JSON keys, tags and array entries format 1 had."""
    stream = io.BytesIO()
    save_buffer(_v1_buffer(name), stream)
    with zipfile.ZipFile(FORMAT_V1 / name) as before, zipfile.ZipFile(stream) as after:
        old, new = (json.loads(archive.read("replay_buffer.json")) for archive in (before, after))
        assert new["format_version"] == old["format_version"] == 1
        assert (new["class"], new["state"], new["arrays"]) == (old["class"], old["state"], old["arrays"])
        assert list(new["state"]) == list(old["state"]) and list(new["arrays"]) == list(old["arrays"])
        for entry in old["arrays"]:
            path = f"replay_buffer/{entry}.npy"
            np.testing.assert_array_equal(
                np.load(io.BytesIO(after.read(path))), np.load(io.BytesIO(before.read(path))), err_msg=entry
            )

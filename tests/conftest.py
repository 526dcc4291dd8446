"""Shared test set-up: one torch thread, RNG state restored around every test, the small ACER settings, and a
closed port on 127.0.0.1."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest
import torch as th


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread() -> Iterator[None]:
    # The tests run on few, shared cores: OpenMP threads spinning against other processes make the tiny
    # networks here 10x slower than one thread.
    threads = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(threads)


@pytest.fixture(autouse=True)
def _restore_rng_and_threads() -> Iterator[None]:
    # ACER(seed=...) seeds the global generators and num_procs sets torch's thread count: undo both.
    python_state, numpy_state, torch_state = random.getstate(), np.random.get_state(), th.get_rng_state()
    threads = th.get_num_threads()
    yield
    random.setstate(python_state)
    np.random.set_state(numpy_state)
    th.set_rng_state(torch_state)
    th.set_num_threads(threads)


@pytest.fixture(scope="session")
def small_settings() -> Mapping[str, Any]:
    """ACER settings for a fast model that replays: segments of 5 steps, a memory of 50 steps (10 segments),
    replay from 10 stored steps, seed 0.

    Read-only and shared by every test; a test that needs another value passes it beside them, e.g.
    ``ACER("MlpPolicy", env, **{**small_settings, "buffer_size": 60})``.
    """
    return MappingProxyType(dict(n_steps=5, buffer_size=50, replay_start=10, seed=0))


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (it was free a moment ago): an address where nothing
    answers, without leaving this machine."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

"""Shared test set-up: one torch thread, RNG state restored around every test, the small ACER settings, and a
closed port on 127.0.0.1."""

from __future__ import annotations

import pathlib
import random
import shutil
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


class _HubRepo:
    """What ``HfApi.create_repo`` returns, as far as huggingface_sb3 and rl-zoo3 read it."""

    def __init__(self, repo_id: str) -> None:
        self.repo_id = repo_id

    def __str__(self) -> str:
        return f"https://huggingface.co/{self.repo_id}"


@pytest.fixture
def offline_hub(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    """A Hugging Face Hub in a local folder (returned; a repository is ``<folder>/<owner>/<name>``): the
    calls that huggingface_sb3 and rl-zoo3 make (``HfApi.create_repo``, ``snapshot_download``,
    ``upload_folder``, ``hf_hub_download``) read and write there, and nothing contacts a remote host. A
    file missing from a repository raises what ``hf_hub_download`` raises for it offline."""
    huggingface_hub = pytest.importorskip("huggingface_hub")
    from huggingface_hub import HfApi
    from huggingface_hub.errors import LocalEntryNotFoundError

    hub = tmp_path_factory.mktemp("offline_hub")

    def create_repo(self: Any, repo_id: str, **kwargs: Any) -> _HubRepo:
        (hub / repo_id).mkdir(parents=True, exist_ok=True)
        return _HubRepo(repo_id)

    def snapshot_download(self: Any, repo_id: str, local_dir: Any, **kwargs: Any) -> str:
        shutil.copytree(hub / repo_id, local_dir, dirs_exist_ok=True)
        return str(local_dir)

    def upload_folder(self: Any, *, repo_id: str, folder_path: Any, **kwargs: Any) -> None:
        shutil.copytree(folder_path, hub / repo_id, dirs_exist_ok=True)

    def hf_hub_download(repo_id: str, filename: str, **kwargs: Any) -> str:
        path = hub / repo_id / filename
        if not path.is_file():  # as offline (HF_HUB_OFFLINE), for a file that is not in the cache
            raise LocalEntryNotFoundError(f"{filename} of {repo_id} is not in the cache (offline)")
        return str(path)

    monkeypatch.setattr(HfApi, "create_repo", create_repo)
    monkeypatch.setattr(HfApi, "snapshot_download", snapshot_download)
    monkeypatch.setattr(HfApi, "upload_folder", upload_folder)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", hf_hub_download)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # anything not replaced here refuses to go online
    return hub

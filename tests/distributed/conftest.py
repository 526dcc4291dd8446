"""The local Ray cluster that the tests of this folder share: starting one takes seconds, so it starts once
for the folder and stops after its last test."""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="package")
def ray_cluster() -> Iterator[Any]:
    """One local Ray cluster (2 CPUs, no dashboard); its workers import this tree and its tests (the raylet
    passes them this process's environment)."""
    ray = pytest.importorskip("ray")
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([old] if old else [])])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
    if old is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = old

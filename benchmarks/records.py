"""The records of ``benchmarks/results`` as the docs' tables read them: one record by name, its runs by env
and algorithm, and the small helpers every table shares (step counts, medians, the classic-control
thresholds). Standard library only."""

from __future__ import annotations

import ast
import json
import pathlib
import statistics
from collections.abc import Sequence
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SB2_FILES = {
    "CartPole-v1": "sb2_reference_cartpole.json",
    "Acrobot-v1": "sb2_reference_acrobot.json",
    "MountainCar-v0": "sb2_reference_mountaincar.json",
    "LunarLander-v3": "sb2_reference_lunarlander.json",
}
#: The SB2 zoo's env id for ours (its LunarLander was v2).
ZOO_ID = {"LunarLander-v3": "LunarLander-v2"}


def load(name: str) -> Any:
    """One record of ``benchmarks/results``."""
    return json.loads((RESULTS / name).read_text())


def steps(n: float) -> str:
    """A step count as ``40k`` or ``1M``."""
    return f"{n / 1e6:.3g}M" if n >= 1e6 else f"{n / 1e3:.3g}k"


def by_env(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        grouped.setdefault(record["env_id"], []).append(record)
    return grouped


def column(records: list[dict[str, Any]], key: str) -> list[float]:
    return [record[key] for record in records]


def middle(values: Sequence[float | None]) -> float | None:
    """The median (the upper one of an even count), an unsolved seed (``None``) counting as never reaching
    the threshold: ``None`` if that is the median."""
    return sorted(values, key=lambda v: float("inf") if v is None else v)[len(values) // 2]


def thresholds() -> dict[str, float]:
    """``THRESHOLDS`` of ``benchmarks/classic_control.py``, read without importing it (it needs torch)."""
    tree = ast.parse((ROOT / "benchmarks" / "classic_control.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "THRESHOLDS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError("benchmarks/classic_control.py defines no THRESHOLDS")


ALGORITHMS = ("ACER", "PPO", "A2C", "SAC")


MINATAR_ALGORITHMS = ("ACER", "PPO", "A2C", "DQN")


MUJOCO_ALGORITHMS = ("ACER", "PPO")


def groups(
    records: list[dict[str, Any]], algorithms: Sequence[str]
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The runs of ``records`` by env id, then by algorithm (in ``algorithms``' order)."""
    grouped: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for env_id, runs in by_env(records).items():
        grouped[env_id] = {
            algo: [run for run in runs if run["algo"] == algo]
            for algo in algorithms
            if any(run["algo"] == algo for run in runs)
        }
    return grouped


def minatar_groups() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The 1M-step MinAtar runs by env id, then by algorithm (in MINATAR_ALGORITHMS' order)."""
    return groups(load("minatar_1m.json")["results"], MINATAR_ALGORITHMS)


def zoo_mujoco() -> dict[str, Any]:
    """rl-baselines3-zoo's published MuJoCo agents (``anchors.json``)."""
    return load("anchors.json")["sb3_zoo_mujoco"]


def mujoco_groups() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The 1M-step MuJoCo runs by env id, then by algorithm (in MUJOCO_ALGORITHMS' order)."""
    return groups(load("mujoco_1m.json")["results"], MUJOCO_ALGORITHMS)


def mean_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.fmean(column(runs, key))

"""MuJoCo (Gymnasium's ``gymnasium.envs.mujoco`` tasks: InvertedPendulum, Hopper, HalfCheetah, Walker2d, Ant,
...): whether an id names one, and one clear line when the ``mujoco`` package they need is missing.

Gymnasium registers the MuJoCo ids whether or not ``mujoco`` is installed; without it, ``gymnasium.make``
fails with a message that names Gymnasium's extra. :func:`require_mujoco` says how to install it with
sb3-acer (``pip install "sb3-acer[mujoco]"``) before the env is made.
"""

from __future__ import annotations

import importlib

import gymnasium as gym

__all__ = ["MUJOCO_INSTALL", "MuJoCoNotInstalledError", "is_mujoco_id", "require_mujoco"]

#: How to install MuJoCo, as the error of a missing ``mujoco`` package says it.
MUJOCO_INSTALL = 'pip install "sb3-acer[mujoco]"'

#: The module of Gymnasium's MuJoCo tasks (their entry points start with it).
MUJOCO_ENTRY_POINTS = "gymnasium.envs.mujoco"


class MuJoCoNotInstalledError(ImportError):
    """A MuJoCo task is made without the ``mujoco`` package."""


def is_mujoco_id(env_id: str) -> bool:
    """Whether ``env_id`` (or its ``module:EnvId`` form) is a registered Gymnasium MuJoCo task."""
    try:
        entry_point = gym.spec(env_id.rpartition(":")[2]).entry_point
    except gym.error.Error:
        return False
    return isinstance(entry_point, str) and entry_point.startswith(MUJOCO_ENTRY_POINTS)


def require_mujoco(env_id: str) -> None:
    """Check that ``mujoco`` can be imported when ``env_id`` is a MuJoCo task.

    Raises:
        MuJoCoNotInstalledError: it cannot; the message is one line that says how to install it.
    """
    if not is_mujoco_id(env_id):
        return
    try:
        importlib.import_module("mujoco")
    except ImportError:
        raise MuJoCoNotInstalledError(
            f"{env_id} is a MuJoCo task, which needs the mujoco package: {MUJOCO_INSTALL}", name="mujoco"
        ) from None

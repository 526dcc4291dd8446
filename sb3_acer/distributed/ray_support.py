"""Ray as an optional dependency: imported only when actors are asked for, with one clear line without it."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["RAY_INSTALL", "RayNotInstalledError", "require_ray"]

#: The command that installs what actors need.
RAY_INSTALL = 'pip install "sb3-acer[ray]"'


class RayNotInstalledError(ImportError):
    """Actors were asked for, but Ray is not installed."""


def require_ray() -> ModuleType:
    """The ``ray`` module.

    Raises:
        RayNotInstalledError: Ray is not installed; the message is one line with the install command.
    """
    try:
        return importlib.import_module("ray")
    except ImportError as error:
        raise RayNotInstalledError(
            f"training with actors needs Ray, which is not installed: {RAY_INSTALL}"
        ) from error

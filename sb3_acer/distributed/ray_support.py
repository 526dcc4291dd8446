"""Ray as an optional dependency: imported only when actors are asked for, with one clear line without it;
and the address of a cluster to join, checked within seconds (``ray.init`` waits minutes for an address
where nothing answers)."""

from __future__ import annotations

import importlib
import os
import socket
from types import ModuleType

__all__ = [
    "CONNECT_TIMEOUT",
    "RAY_INSTALL",
    "RayNotInstalledError",
    "check_reachable",
    "cluster_address",
    "require_ray",
]

#: The command that installs what actors need.
RAY_INSTALL = 'pip install "sb3-acer[ray]"'
#: Seconds to wait for a cluster's address to accept a connection.
CONNECT_TIMEOUT = 5.0


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


def cluster_address(address: str | None) -> tuple[str, str, int] | None:
    """The cluster ``ray.init(address=address)`` joins, as ``(name, host, port)``: ``address`` itself, or
    the ``RAY_ADDRESS`` environment variable with ``None`` or ``"auto"``, as Ray reads it (named
    ``"RAY_ADDRESS=..."``). ``None`` where Ray starts a local cluster or finds a running one itself
    (``None``, ``"auto"``, ``"local"``), and for another protocol than ``ray://``.

    Raises:
        ValueError: the address is not ``host:port`` or ``ray://host:port`` (the message names it).
    """
    from_environment = os.environ.get("RAY_ADDRESS") if address in (None, "auto") else None
    if from_environment:
        address = from_environment
    if address is None or address in ("auto", "local"):
        return None
    name = f"RAY_ADDRESS={address}" if from_environment else address
    scheme, separator, rest = address.rpartition("://")
    if separator and scheme != "ray":
        return None
    host, _, port = rest.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:6379
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(
            f"Ray address {name!r} is not HOST:PORT or ray://HOST:PORT (or auto, to find a running cluster)"
        )
    return name, host, int(port)


def check_reachable(address: str | None, timeout: float = CONNECT_TIMEOUT) -> None:
    """Check that the cluster at ``address`` (see :func:`cluster_address`) accepts a connection within
    ``timeout`` seconds; nothing to check where Ray starts or finds a cluster itself.

    Raises:
        ValueError: the address is not ``host:port`` or ``ray://host:port``.
        ConnectionError: nothing accepts a connection there within ``timeout`` seconds (the message names
            the address and the reason).
    """
    target = cluster_address(address)
    if target is None:
        return
    name, host, port = target
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as error:
        if isinstance(error, TimeoutError):
            reason = f"no answer within {timeout:g} s"
        else:
            reason = (error.strerror or type(error).__name__).lower()
        raise ConnectionError(
            f"no Ray cluster answers at {name} ({reason}); start one there with `ray start --head`, or "
            + ("unset RAY_ADDRESS" if name.startswith("RAY_ADDRESS=") else "leave out the address")
            + " to start a local one"
        ) from None

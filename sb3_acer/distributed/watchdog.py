"""The watchdog of a local Ray cluster: no process of the cluster outlives the learner that started it.

``ray.init()`` starts a local cluster as children of the learner (the GCS server, the raylet, the dashboard
and log monitors); those die with it, but the raylet's own children (``ray::DashboardAgent``,
``ray::RuntimeEnvAgent``, about 100 MB each) do not: after the learner is killed with SIGKILL they stay
until someone kills them. :func:`start_watchdog` starts a small process (this file, run by its path, so
that it imports nothing but the standard library and psutil) that polls the learner and the processes
``ray.init`` started, remembers their descendants, and once the learner or all of those processes are
gone, kills whatever is left of the cluster (SIGKILL: the agents ignore SIGTERM) and exits. A launcher
starts it and ends at once, so that it is no child of the learner (nothing to reap, it may outlive it),
in its own session, so that a Ctrl-C in the terminal does not stop it before it has cleaned up.

Only a cluster this process started is watched: a cluster it joined (``address=``, ``RAY_ADDRESS``,
``ray start``) is someone else's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence

import psutil

__all__ = ["POLL_SECONDS", "child_pids", "start_watchdog", "watch"]

#: How often the watchdog looks at the learner and the cluster.
POLL_SECONDS = 0.5
#: What the watchdog prints once it watches (the learner waits for it).
READY = "watching"
#: The launcher's first argument.
DETACH = "--detach"


def child_pids() -> set[int]:
    """The process ids of this process's children."""
    return {child.pid for child in psutil.Process().children()}


def _command(*arguments: object) -> list[str]:
    """This file run by its path, isolated from the environment's Python settings."""
    return [sys.executable, "-I", os.path.abspath(__file__), *map(str, arguments)]


def start_watchdog(roots: Iterable[int]) -> None:
    """Start the watchdog of the cluster whose processes ``roots`` (children of this process) started;
    returns once it watches them.

    Raises:
        RuntimeError: the watchdog did not start (its error is on stderr).
    """
    launcher = subprocess.Popen(
        _command(DETACH, os.getpid(), *roots), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
    )
    assert launcher.stdout is not None
    with launcher.stdout:
        line = launcher.stdout.readline().strip()  # the watchdog's, through the pipe it inherits
    launcher.wait()
    if line != READY:
        raise RuntimeError(
            f"the watchdog of the local Ray cluster did not start (its launcher's exit code "
            f"{launcher.returncode})"
        )


def _alive(process: psutil.Process) -> bool:
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _descendants(processes: Iterable[psutil.Process]) -> set[psutil.Process]:
    found: set[psutil.Process] = set()
    for process in processes:
        try:
            found.update(process.children(recursive=True))
        except psutil.NoSuchProcess:
            continue
    return found


def _living(tracked: set[psutil.Process]) -> set[psutil.Process]:
    """The tracked processes still alive, and their descendants now."""
    alive = {process for process in tracked if _alive(process)}
    return alive | _descendants(alive)


def _kill(processes: Iterable[psutil.Process]) -> None:
    for process in processes:
        if _alive(process):
            try:
                process.kill()
            except psutil.NoSuchProcess:
                continue


def watch(learner_pid: int, root_pids: Sequence[int], poll_seconds: float = POLL_SECONDS) -> None:
    """Watch the learner ``learner_pid`` and the processes ``root_pids`` it started; once the learner or
    every root is gone, kill what is left of them and of every descendant seen, and return."""
    learner = psutil.Process(learner_pid)
    roots = set()
    for pid in root_pids:
        try:
            root = psutil.Process(pid)
            if root.ppid() == learner_pid:  # not a pid reused since by someone else's process
                roots.add(root)
        except psutil.NoSuchProcess:
            continue
    tracked = set(roots) | _descendants(roots)
    print(READY, flush=True)
    while _alive(learner) and any(_alive(root) for root in roots):
        time.sleep(poll_seconds)
        tracked = _living(tracked)
    _kill(_living(tracked))


def main(argv: Sequence[str]) -> None:
    """``watchdog.py LEARNER_PID ROOT_PID...``, or the launcher: ``watchdog.py --detach LEARNER_PID
    ROOT_PID...``, which starts the watchdog in a session of its own and ends."""
    if argv and argv[0] == DETACH:
        subprocess.Popen(_command(*argv[1:]), stdin=subprocess.DEVNULL, start_new_session=True)
        return
    learner_pid, *root_pids = (int(value) for value in argv)
    watch(learner_pid, root_pids)


if __name__ == "__main__":
    main(sys.argv[1:])

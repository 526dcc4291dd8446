"""A ``SubprocVecEnv`` whose failing workers give a clear error in bounded time instead of a hang.

SB3's ``SubprocVecEnv`` waits on its pipes without a time limit: a worker whose env hangs blocks training
forever, and one whose env raises surfaces as a bare ``EOFError`` (or a hang in ``close``).
:class:`SafeSubprocVecEnv` is a drop-in replacement::

    from stable_baselines3.common.env_util import make_vec_env
    from sb3_acer.envs.subproc import SafeSubprocVecEnv

    env = make_vec_env("CartPole-v1", n_envs=4, vec_env_cls=SafeSubprocVecEnv,
                       vec_env_kwargs=dict(timeout=60))

Every wait for a worker's answer is bounded by ``timeout`` seconds. When a worker's env raises, the worker
sends the exception and its traceback before exiting; when a worker dies (killed, segfault, ``os._exit``)
or does not answer in time, the parent notices within ``timeout`` seconds. In each case all workers are
stopped and :class:`SubprocEnvError` (a ``RuntimeError``) is raised, naming the worker index, the command
it was running (``step``, ``reset``, ...) and the cause; the vec env is closed from then on.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import time
import traceback
from collections.abc import Callable
from typing import Any, NoReturn

import gymnasium as gym
from stable_baselines3.common.vec_env import SubprocVecEnv, VecEnv
from stable_baselines3.common.vec_env.base_vec_env import CloudpickleWrapper
from stable_baselines3.common.vec_env.subproc_vec_env import _worker

__all__ = ["SafeSubprocVecEnv", "SubprocEnvError"]

_POLL_S = 0.05


class SubprocEnvError(RuntimeError):
    """A worker of a :class:`SafeSubprocVecEnv` raised, died or did not answer within the timeout."""


class _WorkerFailure:
    """Sent by a worker whose env raised: the exception and its traceback (plain strings)."""

    def __init__(self, description: str, traceback_text: str) -> None:
        self.description = description
        self.traceback_text = traceback_text


def _safe_worker(remote: Any, parent_remote: Any, env_fn_wrapper: CloudpickleWrapper) -> None:
    try:
        _worker(remote, parent_remote, env_fn_wrapper)
    except Exception as error:  # the env's own error: hand it to the parent, then exit non-zero
        with contextlib.suppress(Exception):  # the parent may be gone
            remote.send(_WorkerFailure(f"{type(error).__name__}: {error}", traceback.format_exc()))
        raise SystemExit(1) from None


class _GuardedRemote:
    """A worker's pipe whose ``recv`` waits at most ``timeout`` seconds and notices a dead worker."""

    def __init__(self, owner: SafeSubprocVecEnv, index: int, connection: Any, process: Any) -> None:
        self.owner = owner
        self.index = index
        self.connection = connection
        self.process = process
        self.command = "start"

    def send(self, message: Any) -> None:
        self.owner.check_open()
        if isinstance(message, tuple) and message and isinstance(message[0], str):
            self.command = message[0]
        try:
            self.connection.send(message)
        except (BrokenPipeError, ConnectionResetError, EOFError, OSError) as error:
            self.owner.worker_failed(self, f"cannot be reached ({type(error).__name__}: {error})")

    def recv(self) -> Any:
        self.owner.check_open()
        timeout = self.owner.timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            wait = _POLL_S if deadline is None else max(0.0, min(_POLL_S, deadline - time.monotonic()))
            if self.connection.poll(wait):
                try:
                    message = self.connection.recv()
                except (EOFError, ConnectionResetError, OSError):
                    self.owner.worker_failed(self, "died")
                if isinstance(message, _WorkerFailure):
                    self.owner.worker_failed(
                        self, f"raised {message.description}", detail=message.traceback_text
                    )
                return message
            if not self.process.is_alive() and not self.connection.poll(0):
                self.owner.worker_failed(self, "died")
            if deadline is not None and time.monotonic() >= deadline:
                self.owner.worker_failed(self, f"did not answer within {timeout} s (timeout)", hung=True)

    def close(self) -> None:
        self.connection.close()


class SafeSubprocVecEnv(SubprocVecEnv):
    """``SubprocVecEnv`` with a bounded wait for every worker answer and clear errors for failed workers.

    Args:
        env_fns: functions that create the environments, one per worker process.
        start_method: ``multiprocessing`` start method (default as SB3: ``forkserver`` where available,
            else ``spawn``).
        timeout: seconds to wait for any single answer of a worker (a ``step``, a ``reset``, a method
            call, closing); ``None`` waits forever (SB3's behaviour, not recommended).
        start_timeout: seconds to wait for every worker to start and create its env (process start-up
            and imports take seconds with ``forkserver`` or ``spawn``); ``None`` waits forever.

    Raises:
        SubprocEnvError: from any method, when a worker raised, died or timed out.
    """

    def __init__(
        self,
        env_fns: list[Callable[[], gym.Env]],
        start_method: str | None = None,
        timeout: float | None = 60.0,
        start_timeout: float | None = 300.0,
    ) -> None:
        for name, value in (("timeout", timeout), ("start_timeout", start_timeout)):
            if value is not None and not (isinstance(value, int | float) and value > 0):
                raise ValueError(f"{name} must be a positive number of seconds or None, got {value!r}")
        self.timeout = start_timeout
        self.waiting = False
        self.closed = False
        self._failure: str | None = None
        if start_method is None:
            start_method = "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
        ctx = mp.get_context(start_method)
        pipes = [ctx.Pipe() for _ in env_fns]
        self.processes = []
        remotes = []
        for index, ((remote, work_remote), env_fn) in enumerate(zip(pipes, env_fns, strict=True)):
            args = (work_remote, remote, CloudpickleWrapper(env_fn))
            process = ctx.Process(target=_safe_worker, args=args, daemon=True)  # type: ignore[attr-defined]
            process.start()
            self.processes.append(process)
            work_remote.close()
            remotes.append(_GuardedRemote(self, index, remote, process))
        self.remotes = remotes
        # Wait for every worker (not only the first, as SB3 does): a worker that cannot create its env fails
        # here, and all envs must have the same spaces.
        for remote in self.remotes:
            remote.send(("get_spaces", None))
        all_spaces = [remote.recv() for remote in self.remotes]
        self.timeout = timeout
        observation_space, action_space = all_spaces[0]
        for index, env_spaces in enumerate(all_spaces):
            if env_spaces != all_spaces[0]:
                self._stop_workers()
                raise ValueError(
                    f"env {index} has spaces {env_spaces}, env 0 has {all_spaces[0]}: all envs of a vec env "
                    "must have the same observation and action spaces"
                )
        VecEnv.__init__(self, len(env_fns), observation_space, action_space)

    def check_open(self) -> None:
        """Raise :class:`SubprocEnvError` if the env is closed (naming the worker failure that closed it)."""
        if self.closed:
            raise SubprocEnvError(
                "SafeSubprocVecEnv is closed"
                + (f" after a worker failure: {self._failure}" if self._failure else "")
            )

    def worker_failed(
        self, remote: _GuardedRemote, what: str, detail: str = "", hung: bool = False
    ) -> NoReturn:
        """Stop every worker and raise :class:`SubprocEnvError` saying that ``remote``'s worker ``what`` (with
        its traceback ``detail``); a ``hung`` worker is not waited for."""
        process = remote.process
        if not hung:
            process.join(timeout=1.0)  # it is exiting: wait for its exit code
        exit_code = "" if process.exitcode is None else f" (exit code {process.exitcode})"
        message = (
            f"SafeSubprocVecEnv worker {remote.index} {what}{exit_code} while running '{remote.command}'"
        )
        self._stop_workers()
        self._failure = message
        raise SubprocEnvError(message + (f"\n\nWorker traceback:\n{detail}" if detail else ""))

    def _stop_workers(self) -> None:
        for process in self.processes:
            if process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(timeout=2.0)
            if process.is_alive():  # pragma: no cover - ignores SIGTERM
                process.kill()
                process.join()
        for remote in self.remotes:
            remote.close()
        self.waiting = False
        self.closed = True

    def close(self) -> None:
        """Close the envs; workers that do not finish within ``timeout`` seconds are terminated."""
        if self.closed:
            return
        try:
            if self.waiting:
                for remote in self.remotes:
                    remote.recv()
            for remote in self.remotes:
                remote.send(("close", None))
        except SubprocEnvError:
            return  # the workers have been stopped
        for process in self.processes:
            process.join(timeout=self.timeout)
        self._stop_workers()

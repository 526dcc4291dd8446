"""``--actors N [--envs-per-actor K] [--ray-address ADDR]`` of ``sb3-acer train`` and ``run_atari``: the
options, their checks, the actors' settings (:class:`~sb3_acer.distributed.RayActors`) and the Ray session
of one command (a local cluster started for the command is stopped at its end)."""

from __future__ import annotations

import argparse
import contextlib
import pathlib
from collections.abc import Iterator
from typing import Any

from stable_baselines3.common.vec_env import VecEnv

from sb3_acer.cli.arguments import positive_int
from sb3_acer.cli.environments import EnvInfo, make_env, resolve_env
from sb3_acer.cli.errors import CLIError, UsageError, check_optional
from sb3_acer.distributed import RAY_INSTALL, RayActors
from sb3_acer.distributed.ray_support import check_reachable
from sb3_acer.envs.atari import make_atari_vec_env
from sb3_acer.presets import WrapperSpec

__all__ = [
    "TrainEnvFactory",
    "actor_settings",
    "add_actor_options",
    "check_actor_options",
    "ray_session",
]

#: The name of the Monitor file the learner writes the actors' episodes to, in the run folder.
ACTORS_MONITOR = "actors.monitor.csv"


def add_actor_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    """Add ``--actors``, ``--envs-per-actor`` and ``--ray-address`` to ``parser``."""
    parser.add_argument(
        "--actors",
        type=positive_int,
        metavar="N",
        help=f"collect with N Ray actors feeding one learner (needs {RAY_INSTALL}); default: the "
        "synchronous loop in this process",
    )
    parser.add_argument(
        "--envs-per-actor",
        type=positive_int,
        metavar="K",
        help="with --actors: envs each actor steps (a segment is n_steps x K; default: --n-envs)",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="with --actors: join the Ray cluster at ADDR (e.g. auto, or the head's host:6379; see "
        "`ray start --head`; refused within seconds if nothing answers there); default: start a local one "
        "on this machine",
    )


def check_actor_options(args: argparse.Namespace, normalize: bool = False) -> None:
    """Refuse the actor options without ``--actors``, with normalisation, without Ray installed, or with a
    cluster address where nothing answers (within seconds: Ray would wait minutes).

    Raises:
        UsageError: an option that needs ``--actors``, ``--actors`` with ``normalize``, or a
            ``--ray-address`` that is not ``HOST:PORT`` or where nothing answers.
        CLIError: Ray is not installed (one line with the install command), or nothing answers at the
            ``RAY_ADDRESS`` environment variable's address.
    """
    if args.actors is None:
        for option, value in (("--envs-per-actor", args.envs_per_actor), ("--ray-address", args.ray_address)):
            if value is not None:
                raise UsageError(f"{option} needs --actors")
        return
    if normalize:
        raise UsageError("--actors: VecNormalize (normalize) is not supported with actors")
    if getattr(args, "vec_env", "dummy") != "dummy":
        raise UsageError("--actors: each actor steps its envs in its own process; leave out --vec-env")
    check_optional("ray", "--actors", RAY_INSTALL)
    try:
        check_reachable(args.ray_address)
    except (ValueError, ConnectionError) as error:
        if args.ray_address is None:
            raise CLIError(f"--actors: {error}") from None
        raise UsageError(f"--ray-address: {error}") from None


class TrainEnvFactory:
    """The actors' envs of a training run (picklable): an Atari game on ``sampler`` by
    :func:`~sb3_acer.envs.atari.make_atari_vec_env` (one emulator thread per actor), any other env by
    ``make_env`` with the run's wrappers and env kwargs, after the env's packages are imported in the actor's
    process."""

    def __init__(
        self,
        info: EnvInfo,
        wrappers: tuple[WrapperSpec, ...] = (),
        env_kwargs: dict[str, Any] | None = None,
        sampler: str | None = None,
    ) -> None:
        self.info, self.wrappers, self.env_kwargs, self.sampler = info, wrappers, env_kwargs or {}, sampler
        self.__name__ = info.env_id

    def __call__(self, n_envs: int, seed: int | None) -> VecEnv:
        if self.sampler is not None:
            return make_atari_vec_env(self.info.name, n_envs, seed=seed, sampler=self.sampler, num_threads=1)
        resolve_env(self.info.env_id, self.info.packages)  # registers the ids in the actor's process
        return make_env(self.info, n_envs, seed, wrappers=self.wrappers, env_kwargs=self.env_kwargs)


def actor_settings(
    args: argparse.Namespace, env: Any, monitor_dir: pathlib.Path | None = None
) -> RayActors | None:
    """The actors of ``args`` (``None`` without ``--actors``), making their envs with ``env``; the episodes
    they finish go to ``actors.monitor.csv`` in ``monitor_dir`` (if given)."""
    if args.actors is None:
        return None
    return RayActors(
        env,
        n_actors=args.actors,
        address=args.ray_address,
        monitor_file=None if monitor_dir is None else str(monitor_dir / ACTORS_MONITOR),
    )


@contextlib.contextmanager
def ray_session(actors: RayActors | None) -> Iterator[None]:
    """Stop Ray at the end if it was started inside (by ``learn`` with ``actors``)."""
    if actors is None:
        yield
        return
    import ray

    started_before = ray.is_initialized()
    try:
        yield
    finally:
        if not started_before and ray.is_initialized():
            ray.shutdown()

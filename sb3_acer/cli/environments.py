"""The environments of the commands: an environment id checked (and Atari's or MinAtar's games
registered, MuJoCo's package checked), its vector env built as a run uses it (``Monitor``, Atari
preprocessing, the preset's wrappers), and the torch threads a command runs with."""

from __future__ import annotations

import contextlib
import pathlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple

import gymnasium as gym
import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecFrameStack, VecTransposeImage

from sb3_acer.cli.errors import CLIError, UsageError, check_optional, one_line
from sb3_acer.cli.imports import import_user_module
from sb3_acer.common.checks.settings import UnsupportedSpaceError, check_spaces
from sb3_acer.envs.minatar import is_minatar_id, make_minatar_env, register_minatar_envs
from sb3_acer.envs.mujoco import MuJoCoNotInstalledError, require_mujoco
from sb3_acer.envs.subproc import SafeSubprocVecEnv
from sb3_acer.presets import ATARI_FRAME_STACK, WrapperSpec, wrapper_class

__all__ = ["EnvInfo", "import_gym_packages", "make_env", "resolve_env", "torch_threads"]


class EnvInfo(NamedTuple):
    """What the CLI needs to know about an environment id."""

    #: The id as given, what ``gymnasium.make`` gets: ``module:EnvId`` imports ``module`` first.
    env_id: str
    atari: bool
    #: A MinAtar game: made by :func:`~sb3_acer.envs.minatar.make_minatar_env` (channel-first float view).
    minatar: bool = False
    #: Packages imported before the env is made (``--gym-packages``), as they register their ids.
    packages: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """The registered id, without a ``module:`` prefix (presets and run folders use it)."""
        return self.env_id.rpartition(":")[2]

    @property
    def modules(self) -> tuple[str, ...]:
        """The modules imported before the env is made: the packages, then the id's ``module:`` prefix."""
        module = self.env_id.rpartition(":")[0]
        return (*self.packages, module) if module else self.packages


def import_gym_packages(packages: Sequence[str], flag: str = "--gym-packages") -> None:
    """Import each of ``packages`` (as the zoo's ``--gym-packages`` does: importing registers their ids),
    which the user named: from an installed package or the working directory
    (:func:`~sb3_acer.cli.imports.import_user_module`).

    Raises:
        CLIError: a package that cannot be imported, named with the error.
    """
    for package in packages:
        try:
            import_user_module(package)
        except ImportError as error:
            raise CLIError(f"{flag}: cannot import {package}: {one_line(error)}") from None


def resolve_env(env_id: str, packages: Sequence[str] = ()) -> EnvInfo:
    """Check that ``env_id`` is registered after importing ``packages`` and, for a ``module:EnvId`` id, the
    module (registering the Atari games of ``ale-py`` when it is installed, and MinAtar's games for a
    ``MinAtar/...`` id).

    Raises:
        CLIError: a MinAtar, Atari or MuJoCo id without its package, or a package that cannot be imported.
        UsageError: the id is unknown.
    """
    import_gym_packages(packages)
    module, _, name = env_id.rpartition(":")
    if module:
        import_gym_packages([module], flag=f"environment id {env_id}")
    full_id, env_id = env_id, name
    if is_minatar_id(env_id):
        try:
            register_minatar_envs()
        except ImportError as error:
            raise CLIError(str(error)) from None
    if env_id not in gym.registry:
        try:
            import ale_py

            gym.register_envs(ale_py)
        except ImportError:
            if "NoFrameskip" in env_id or env_id.startswith("ALE/"):
                raise CLIError(
                    f"{env_id} is an Atari game, which needs ale-py: pip install 'sb3-acer[atari]'"
                ) from None
    try:
        spec = gym.spec(env_id)
    except (gym.error.Error, ModuleNotFoundError) as error:
        raise UsageError(f"unknown environment id {env_id!r}: {error}") from None
    try:
        require_mujoco(env_id)
    except MuJoCoNotInstalledError as error:
        raise CLIError(str(error)) from None
    return EnvInfo(
        env_id=full_id,
        atari="ale_py" in str(spec.entry_point),
        minatar=is_minatar_id(env_id),
        packages=tuple(packages),
    )


def make_env(
    info: EnvInfo,
    n_envs: int,
    seed: int | None,
    monitor_dir: pathlib.Path | None = None,
    render_mode: str | None = None,
    video: Callable[[gym.Env], gym.Env] | None = None,
    wrappers: tuple[WrapperSpec, ...] = (),
    env_kwargs: dict[str, Any] | None = None,
    subprocesses: bool = False,
) -> VecEnv:
    """A ``DummyVecEnv`` (with ``subprocesses``, a :class:`~sb3_acer.envs.subproc.SafeSubprocVecEnv`) of
    ``Monitor``-wrapped envs (Atari: SB3's ``AtariWrapper`` and a 4-frame stack), each made by
    ``gymnasium.make(env_id, **env_kwargs)``; spaces ACER cannot use are a :class:`UsageError` with the
    message of :func:`~sb3_acer.common.checks.settings.check_spaces`.

    ``video`` wraps each raw env (before ``Monitor`` and the Atari wrappers) to record it; ``wrappers`` (a
    run's ``env_wrapper``) wrap each env outside its ``Monitor`` and the Atari wrappers, as in the zoo.
    """
    from stable_baselines3.common.atari_wrappers import AtariWrapper

    if info.atari:  # SB3's AtariWrapper fails on the first frame without it, with an AssertionError
        check_optional("cv2", "Atari preprocessing (AtariWrapper)", "pip install 'sb3-acer[atari]'")
    outer = wrapper_class(wrappers)

    def wrap(env: gym.Env) -> gym.Env:
        env = AtariWrapper(env) if info.atari else env
        env = outer(env) if outer is not None else env
        # Before the vec env is built: DummyVecEnv fails on a space it cannot buffer (a Text key says
        # "'NoneType' object is not iterable"); ACER's own check names the space.
        try:
            check_spaces(env.observation_space, env.action_space)
        except UnsupportedSpaceError as error:
            raise UsageError(f"ACER cannot use {info.env_id}: {one_line(error)}") from None
        return env

    def make(**kwargs: Any) -> gym.Env:
        import_gym_packages(info.modules)  # in a SafeSubprocVecEnv worker too
        if info.atari:  # in a SafeSubprocVecEnv worker too, which has not registered the games yet
            import ale_py

            gym.register_envs(ale_py)
        try:
            # MinAtar: registered in a SafeSubprocVecEnv worker too, and seen channel-first as floats
            env = make_minatar_env(info.env_id, **kwargs) if info.minatar else gym.make(info.env_id, **kwargs)
        except gym.error.DependencyNotInstalled:
            raise
        except (TypeError, ValueError, KeyError, gym.error.Error) as error:
            if not env_kwargs:
                raise
            # An argument the environment does not take, or a value it refuses.
            raise ValueError(
                f"{info.env_id} cannot be made with env_kwargs {env_kwargs}: {one_line(error)}"
            ) from None
        return video(env) if video is not None else env

    try:
        venv = make_vec_env(
            make,
            n_envs=n_envs,
            seed=seed,
            monitor_dir=None if monitor_dir is None else str(monitor_dir),
            wrapper_class=wrap,
            env_kwargs=make_kwargs(info, render_mode, env_kwargs),
            vec_env_cls=SafeSubprocVecEnv if subprocesses else DummyVecEnv,
        )
    except gym.error.DependencyNotInstalled as error:
        raise CLIError(f"{info.env_id} needs an optional dependency: {error}") from None
    except ImportError as error:
        raise CLIError(f"{info.env_id} needs a module that is not installed: {one_line(error)}") from None
    return stacked_and_transposed(venv, info)


def make_kwargs(info: EnvInfo, render_mode: str | None, env_kwargs: dict[str, Any] | None) -> dict[str, Any]:
    """The keyword arguments of ``gymnasium.make`` for ``info``'s env: ``render_mode``, Atari's
    ``frameskip=1`` (``AtariWrapper`` skips frames itself), then ``env_kwargs``."""
    kwargs: dict[str, Any] = {}
    if render_mode is not None:
        kwargs["render_mode"] = render_mode
    if info.atari and gym.spec(info.env_id).kwargs.get("frameskip") != 1:
        kwargs["frameskip"] = 1
    kwargs.update(env_kwargs or {})
    return kwargs


def stacked_and_transposed(venv: VecEnv, info: EnvInfo) -> VecEnv:
    """``venv`` with Atari's 4-frame stack, and channel-last images made channel-first, as ACER does it to
    its training env."""
    if info.atari:
        venv = VecFrameStack(venv, n_stack=ATARI_FRAME_STACK)
    if is_image_space(venv.observation_space) and not is_image_space_channels_first(
        venv.observation_space  # type: ignore[arg-type]
    ):
        venv = VecTransposeImage(venv)
    return venv


@contextlib.contextmanager
def torch_threads(n_threads: int | None) -> Iterator[None]:
    """Use ``n_threads`` torch threads inside the block (``None``: leave the setting), then restore it."""
    before = th.get_num_threads()
    if n_threads is not None:
        th.set_num_threads(n_threads)
    try:
        yield
    finally:
        th.set_num_threads(before)

"""The ``sb3-acer`` command (also ``python -m sb3_acer``): train, enjoy and plot.

- ``sb3-acer train ENV_ID`` trains ACER with the tuned preset for ``ENV_ID`` when one exists
  (``sb3_acer/presets/acer.yml``), otherwise with ACER's defaults. Every setting can be overridden. The run
  folder ``<log-folder>/<env>_<seed>/`` receives the ``Monitor`` logs (``<rank>.monitor.csv``), the model
  (``model.zip``), a description of the run (``model.json``), the observation statistics of
  ``VecNormalize`` when the run normalises (``model.vecnormalize.npz``, plain arrays, no pickle), the
  evaluations of ``--eval-freq`` (``evaluations.npz``) and the best evaluated model (``best_model.zip``,
  with its ``best_model.json`` and statistics).
- ``sb3-acer enjoy MODEL`` runs a saved model for a few episodes and prints the returns; it reads the
  environment id, its wrappers and the normalisation statistics written next to the model by ``train``.
- ``sb3-acer plot RUN_DIR...`` draws episode return against environment steps from the ``Monitor`` logs,
  the mean and standard deviation over the seeds of each experiment, to a PNG.

:func:`main` takes the arguments and returns the exit code: 0 on success, 2 for a usage error (unknown
environment id, bad ``key=value``, unknown hyperparameter, invalid value), 1 for other failures (a missing
optional dependency, a damaged model file), 130 when interrupted. Errors are printed as one line
``error: ...`` on stderr.

A command that fails changes no file: ``train`` checks its paths, seed and settings (building the model
once on a single env without logs) before it writes anything, and replaces an earlier run, or a file at
``--save-path``, only with ``--overwrite``, which then removes all of that run's files. A run locks its
folder while it writes there (``fcntl``; not on Windows): a second ``train`` into it stops with one line.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import inspect
import io
import json
import math
import os
import pathlib
import re
import sys
import tempfile
import time
import traceback
import warnings
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, NoReturn

import gymnasium as gym
import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.utils import check_for_correct_spaces, safe_mean
from stable_baselines3.common.vec_env import (
    DummyVecEnv,
    VecEnv,
    VecFrameStack,
    VecNormalize,
    VecTransposeImage,
)

import sb3_acer
from sb3_acer.acer import ACER
from sb3_acer.envs.subproc import SafeSubprocVecEnv
from sb3_acer.presets import (
    ATARI_ENTRY,
    ATARI_FRAME_STACK,
    PRESET_FILE,
    Preset,
    PresetError,
    WrapperSpec,
    available_presets,
    check_env_kwargs,
    env_wrappers,
    evaluation_normalization,
    has_atari_defaults,
    load_preset,
    normalize_kwargs,
    read_expression,
    resolve_policy_kwargs,
    wrapper_class,
    zoo_schedules,
)
from sb3_acer.serialization.model_file import ModelFileError, saving_through_ctrl_c, write_atomically

__all__ = [
    "CLIError",
    "check_can_create",
    "check_optional",
    "check_replaceable",
    "main",
    "set_aside",
    "stopped_by",
]

PROG = "sb3-acer"
#: Number of environments and steps of a run without a preset (Atari: SB2's ``run_atari`` settings).
DEFAULT_N_ENVS = 4
DEFAULT_TIMESTEPS = 100_000
ATARI_N_ENVS = 16
ATARI_TIMESTEPS = 10_000_000
#: The settings of an Atari game without a preset; its entry (or the ``atari`` entry) is laid over them.
ATARI_DEFAULTS = {
    "n_envs": ATARI_N_ENVS,
    "n_timesteps": ATARI_TIMESTEPS,
    "policy": "CnnPolicy",
    "lr_schedule": "constant",
}
#: Constructor arguments that have their own flag, and the flag to use instead.
OWN_FLAGS = {
    "seed": "--seed",
    "tensorboard_log": "--tensorboard-log",
    "verbose": "--verbose",
    "policy": "--policy",
    "n_envs": "--n-envs",
    "n_timesteps": "--timesteps",
}
#: ``--hyperparams`` keys that describe the run rather than the model.
RUN_KEYS = ("normalize", "env_wrapper")
BARE_STRING = re.compile(r"[A-Za-z_][\w.\-+/:]*")


class CLIError(Exception):
    """An error reported as one line ``error: ...``, with the exit code of the command."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(CLIError):
    """A problem with the command line itself (exit code 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


# ---------------------------------------------------------------------------------------------- parsing


class _Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors become :class:`UsageError` (one line, no usage dump)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} -h')")


def parse_hyperparams(items: Sequence[str], flag: str = "--hyperparams") -> dict[str, Any]:
    """Parse ``key=value`` items; values are Python literals (``ast.literal_eval``), bare strings, or the
    expressions the zoo writes, such as ``dict(net_arch=[64, 64], activation_fn=nn.ReLU)``
    (:func:`~sb3_acer.presets.read_expression`, which evaluates nothing).

    Raises:
        UsageError: an item without ``=``, a key that is not an identifier, or a value that is none of these.
    """
    result: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise UsageError(f"{flag} expects key=value, got {item!r}")
        text = text.strip()
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            if BARE_STRING.fullmatch(text):
                value = text
            else:
                try:
                    value = read_expression(text)
                except SyntaxError:
                    raise UsageError(
                        f"{flag} {key}: {text!r} is not a Python literal (quote strings with "
                        "spaces or symbols, e.g. key=\"'a b'\")"
                    ) from None
                except ValueError as error:
                    raise UsageError(f"{flag} {key}: {error}") from None
        result[key] = value
    return result


def _accepted_hyperparameters() -> list[str]:
    parameters = inspect.signature(ACER.__init__).parameters
    excluded = {"self", "policy", "env", "_init_setup_model", *OWN_FLAGS}
    return sorted(set(parameters) - excluded)


def _check_hyperparameter_keys(hyperparams: dict[str, Any], preset: Preset | None = None) -> None:
    """Refuse a key that is not an ACER argument (nor ``normalize`` or ``env_wrapper`` on the command line);
    for the arguments of a ``preset``, the message names the preset."""
    accepted = _accepted_hyperparameters()
    run_keys = RUN_KEYS if preset is None else ()
    where = "" if preset is None else _preset_label(preset)
    for key in hyperparams:
        if key in OWN_FLAGS and preset is None:
            raise UsageError(f"--hyperparams {key}: use {OWN_FLAGS[key]} instead")
        if key not in accepted and key not in run_keys:
            listed = ", ".join([*accepted, *run_keys])
            raise UsageError(f"{where}unknown hyperparameter {key!r} for ACER; accepted: {listed}")


def _preset_label(preset: Preset) -> str:
    """How an error names ``preset``, as :func:`~sb3_acer.presets.load_preset` does."""
    suffix = f" (for {preset.env_id})" if preset.entry != preset.env_id else ""
    return f"preset {preset.entry!r}{suffix} in {PRESET_FILE}: "


def _resolve_policy_kwargs(policy_kwargs: Any) -> Any:
    try:
        return resolve_policy_kwargs(policy_kwargs)
    except ValueError as error:
        raise UsageError(str(error)) from None


# ---------------------------------------------------------------------------------------------- environments


class EnvInfo(NamedTuple):
    """What the CLI needs to know about an environment id."""

    env_id: str
    atari: bool


def resolve_env(env_id: str) -> EnvInfo:
    """Check that ``env_id`` is registered (registering the Atari games of ``ale-py`` when it is installed).

    Raises:
        UsageError: the id is unknown.
    """
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
    return EnvInfo(env_id=env_id, atari="ale_py" in str(spec.entry_point))


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
    ``gymnasium.make(env_id, **env_kwargs)``.

    ``video`` wraps each raw env (before ``Monitor`` and the Atari wrappers) to record it; ``wrappers`` (a
    run's ``env_wrapper``) wrap each env outside its ``Monitor`` and the Atari wrappers, as in the zoo.
    """
    from stable_baselines3.common.atari_wrappers import AtariWrapper

    if info.atari:  # SB3's AtariWrapper fails on the first frame without it, with an AssertionError
        check_optional("cv2", "Atari preprocessing (AtariWrapper)", "pip install 'sb3-acer[atari]'")
    outer = wrapper_class(wrappers)

    def wrap(env: gym.Env) -> gym.Env:
        env = AtariWrapper(env) if info.atari else env
        return outer(env) if outer is not None else env

    make_kwargs: dict[str, Any] = {}
    if render_mode is not None:
        make_kwargs["render_mode"] = render_mode
    if info.atari and gym.spec(info.env_id).kwargs.get("frameskip") != 1:
        make_kwargs["frameskip"] = 1  # AtariWrapper skips frames itself
    make_kwargs.update(env_kwargs or {})

    def make(**kwargs: Any) -> gym.Env:
        if info.atari:  # in a SafeSubprocVecEnv worker too, which has not registered the games yet
            import ale_py

            gym.register_envs(ale_py)
        try:
            env = gym.make(info.env_id, **kwargs)
        except gym.error.DependencyNotInstalled:
            raise
        except (TypeError, ValueError, KeyError, gym.error.Error) as error:
            if not env_kwargs:
                raise
            # An argument the environment does not take, or a value it refuses.
            raise ValueError(
                f"{info.env_id} cannot be made with env_kwargs {env_kwargs}: {_one_line(error)}"
            ) from None
        return video(env) if video is not None else env

    try:
        venv = make_vec_env(
            make,
            n_envs=n_envs,
            seed=seed,
            monitor_dir=None if monitor_dir is None else str(monitor_dir),
            wrapper_class=wrap,
            env_kwargs=make_kwargs,
            vec_env_cls=SafeSubprocVecEnv if subprocesses else DummyVecEnv,
        )
    except gym.error.DependencyNotInstalled as error:
        raise CLIError(f"{info.env_id} needs an optional dependency: {error}") from None
    except ImportError as error:
        raise CLIError(f"{info.env_id} needs a module that is not installed: {_one_line(error)}") from None
    if info.atari:
        venv = VecFrameStack(venv, n_stack=ATARI_FRAME_STACK)
    if is_image_space(venv.observation_space) and not is_image_space_channels_first(
        venv.observation_space  # type: ignore[arg-type]
    ):
        venv = VecTransposeImage(venv)  # as ACER does it to its training env
    return venv


def save_normalization(env: VecNormalize, path: pathlib.Path) -> None:
    """Write ``VecNormalize``'s statistics and settings as plain arrays (``np.savez``, no pickle); without
    ``norm_obs`` there are no observation statistics."""
    ret_rms = env.ret_rms
    observation_statistics: dict[str, Any] = {}
    if env.norm_obs:
        obs_rms = env.obs_rms
        if not isinstance(obs_rms, RunningMeanStd):
            raise CLIError("normalisation statistics of dict observations cannot be saved")
        observation_statistics = dict(
            obs_mean=obs_rms.mean, obs_var=obs_rms.var, obs_count=np.float64(obs_rms.count)
        )
    arrays = dict(
        **observation_statistics,
        ret_mean=ret_rms.mean,
        ret_var=ret_rms.var,
        ret_count=np.float64(ret_rms.count),
        norm_obs=env.norm_obs,
        norm_reward=env.norm_reward,
        clip_obs=env.clip_obs,
        clip_reward=env.clip_reward,
        gamma=env.gamma,
        epsilon=env.epsilon,
    )
    write_atomically(path, lambda file: np.savez(file, **arrays))


def load_normalization(venv: VecEnv, path: pathlib.Path) -> VecNormalize:
    """Wrap ``venv`` in a frozen ``VecNormalize`` (no updates, rewards unscaled) with saved statistics.

    Raises:
        ValueError, KeyError, OSError: the file is not statistics ``save_normalization`` wrote for ``venv``
            (damaged, other shapes, or values no normalisation has: NaN, a negative variance, ...).
    """
    try:
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as data:
            arrays = {name: np.asarray(data[name]) for name in data.files}
    except (zipfile.BadZipFile, zlib.error, EOFError) as error:
        raise ValueError(f"damaged (truncated or corrupt): {error}") from None

    def number(name: str, low: float = -math.inf, *, above: bool = False, infinite: bool = False) -> float:
        value = arrays[name]
        if value.size != 1 or (not np.issubdtype(value.dtype, np.number) and value.dtype != bool):
            raise ValueError(f"{name} is not a number: {value.dtype}{list(value.shape)}")
        result = float(value.reshape(()))
        if (
            math.isnan(result)
            or (math.isinf(result) and not infinite)
            or result < low
            or (above and result == low)
        ):
            raise ValueError(f"{name} = {result} is out of range")
        return result

    norm_obs = bool(number("norm_obs"))
    env = VecNormalize(
        venv,
        training=False,
        norm_obs=norm_obs,
        norm_reward=False,
        clip_obs=number("clip_obs", 0.0, above=True, infinite=True),  # inf: no clipping
        clip_reward=number("clip_reward", 0.0, above=True, infinite=True),
        gamma=number("gamma", 0.0),
        epsilon=number("epsilon", 0.0, above=True),
    )
    if env.norm_obs:
        shape = venv.observation_space.shape
        mean, var = arrays["obs_mean"], arrays["obs_var"]
        if mean.shape != shape or var.shape != shape:
            raise ValueError(
                f"observation statistics of shape {mean.shape}, for observations of shape {shape}"
            )
        if not (np.issubdtype(mean.dtype, np.floating) and np.issubdtype(var.dtype, np.floating)):
            raise ValueError(f"observation statistics of dtype {mean.dtype} and {var.dtype}, not floats")
        if not (np.isfinite(mean).all() and np.isfinite(var).all() and (var >= 0).all()):
            raise ValueError("observation statistics hold NaN, inf or a negative variance")
        obs_rms = RunningMeanStd(shape=mean.shape)
        obs_rms.mean, obs_rms.var = mean, var
        obs_rms.count = number("obs_count", 0.0)
        env.obs_rms = obs_rms  # type: ignore[assignment]  # a dict only for Dict observations
    env.ret_rms.mean, env.ret_rms.var = number("ret_mean"), number("ret_var", 0.0)  # type: ignore[assignment]
    env.ret_rms.count = number("ret_count", 0.0)
    return env


def _sidecar(model_path: pathlib.Path, suffix: str) -> pathlib.Path:
    return model_path.with_suffix(suffix)


def _model_file(path: str | pathlib.Path) -> pathlib.Path:
    """The file ``ACER.save(path)`` writes (``.zip`` is appended to a path without suffix)."""
    path = pathlib.Path(path)
    return path if path.suffix else path.with_suffix(".zip")


def _in_folder(path: str, name: str) -> str:
    """``path``, or ``path/name`` where ``path`` names a folder: it ends in a separator, or is a folder
    without suffix (a folder ``saved.zip`` is a mistake, reported as one)."""
    names_folder = path.endswith(("/", os.sep)) or (
        pathlib.Path(path).is_dir() and not pathlib.Path(path).suffix
    )
    return str(pathlib.Path(path) / name) if names_folder else path


# ---------------------------------------------------------------------------------------------- train


class TrainSettings(NamedTuple):
    """Everything a ``train`` run uses, after presets, defaults and flags are combined."""

    env: EnvInfo
    n_envs: int
    timesteps: int
    policy: str
    normalize: bool
    #: ``VecNormalize`` arguments when ``normalize`` is set (empty: its defaults).
    normalize_kwargs: dict[str, Any]
    #: Wrappers of each env, outside its ``Monitor`` (the preset's or ``--hyperparams``' ``env_wrapper``).
    env_wrapper: tuple[WrapperSpec, ...]
    hyperparameters: dict[str, Any]
    seed: int
    source: str
    #: Keyword arguments of ``gymnasium.make`` (the preset's ``env_kwargs`` with ``--env-kwargs`` over them).
    env_kwargs: dict[str, Any]


def train_settings(args: argparse.Namespace) -> TrainSettings:
    """Combine the preset (or the defaults) with the command-line flags, checking everything."""
    overrides = parse_hyperparams(args.hyperparams or [])
    _check_hyperparameter_keys(overrides)
    try:
        overrides = zoo_schedules(overrides)
    except ValueError as error:
        raise UsageError(f"--hyperparams {error}") from None
    info = resolve_env(args.env_id)
    preset: Preset | None
    try:
        preset = load_preset(args.env_id, atari_defaults=ATARI_DEFAULTS if info.atari else None)
    except KeyError:
        preset = None
    except PresetError as error:
        raise UsageError(str(error)) from None
    if preset is not None:
        _check_hyperparameter_keys(preset.hyperparameters, preset)
        _check_preset_values(preset)
    vec_normalize_kwargs: dict[str, Any] = {}
    wrappers: tuple[WrapperSpec, ...] = ()
    env_kwargs: dict[str, Any] = {}
    if preset is not None:
        n_envs, timesteps, policy = preset.n_envs, preset.n_timesteps, preset.policy
        normalize, hyperparameters = preset.normalize, dict(preset.hyperparameters)
        vec_normalize_kwargs = dict(preset.normalize_kwargs)
        wrappers = preset.env_wrapper
        env_kwargs = dict(preset.env_kwargs)
        source = f"Using the tuned preset for {args.env_id} ({PRESET_FILE})."
        if info.atari:
            which = (
                "the tuned preset ("
                if preset.entry != ATARI_ENTRY
                else (f"the preset '{ATARI_ENTRY}' (defaults for Atari games, ")
            )
            source = (
                f"Using {which}{PRESET_FILE}) for {args.env_id}, over SB2 run_atari's settings "
                f"(AtariWrapper, {ATARI_FRAME_STACK}-frame stack, CnnPolicy, lr_schedule constant)."
            )
    elif info.atari:
        n_envs, timesteps, policy, normalize, hyperparameters = (
            ATARI_N_ENVS,
            ATARI_TIMESTEPS,
            "CnnPolicy",
            False,
            {"lr_schedule": "constant"},
        )
        source = (
            f"No preset for {args.env_id}: using ACER's defaults with SB2 run_atari's settings "
            f"(AtariWrapper, {ATARI_FRAME_STACK}-frame stack, CnnPolicy, lr_schedule constant)."
        )
    else:
        n_envs, timesteps, policy, normalize, hyperparameters = (
            DEFAULT_N_ENVS,
            DEFAULT_TIMESTEPS,
            "MlpPolicy",
            False,
            {},
        )
        source = f"No preset for {args.env_id}: using ACER's defaults."
    sticky = gym.spec(info.env_id).kwargs.get("repeat_action_probability", 0.0) if info.atari else 0.0
    if sticky:
        source += (
            f" {info.env_id} keeps its sticky actions (repeat_action_probability={sticky}, as its version "
            "defines); NoFrameskip-v4 ids, as SB2's run_atari used, have none."
        )
    if "normalize" in overrides:
        try:
            parsed = normalize_kwargs(overrides.pop("normalize"))
        except ValueError as error:
            raise UsageError(f"--hyperparams {error}") from None
        normalize, vec_normalize_kwargs = parsed is not None, parsed or {}
    if "env_wrapper" in overrides:
        try:
            wrappers = env_wrappers(overrides.pop("env_wrapper"), atari=info.atari)
        except ValueError as error:
            raise UsageError(f"--hyperparams {error}") from None
    hyperparameters.update(overrides)
    env_kwargs.update(_env_kwargs(args.env_kwargs))
    if "policy_kwargs" in hyperparameters:
        hyperparameters["policy_kwargs"] = _resolve_policy_kwargs(hyperparameters["policy_kwargs"])
    if args.n_envs is not None:
        n_envs = args.n_envs
    if args.timesteps is not None:
        timesteps = args.timesteps
    if args.policy is not None:
        policy = args.policy
    return TrainSettings(
        env=info,
        n_envs=n_envs,
        timesteps=timesteps,
        policy=policy,
        normalize=normalize,
        normalize_kwargs=vec_normalize_kwargs,
        env_wrapper=wrappers,
        hyperparameters=hyperparameters,
        seed=args.seed,
        source=source,
        env_kwargs=env_kwargs,
    )


def _env_kwargs(items: list[str] | None) -> dict[str, Any]:
    """``--env-kwargs key=value ...``, read as ``--hyperparams`` are."""
    parsed = parse_hyperparams(items or [], flag="--env-kwargs")
    try:
        return check_env_kwargs(parsed)
    except ValueError as error:
        raise UsageError(f"--{error}".replace("--env_kwargs", "--env-kwargs", 1)) from None


def _check_preset_values(preset: Preset) -> None:
    """The preset's own settings, checked as ACER checks them (without an env), so that a value it refuses
    is reported as the preset file's, not as the command's."""
    try:
        ACER.check_settings(preset.policy, **{**preset.hyperparameters, "verbose": 0})
    except (ValueError, TypeError) as error:
        label = repr(preset.entry) + (f" (for {preset.env_id})" if preset.entry != preset.env_id else "")
        raise UsageError(f"preset {label} in {PRESET_FILE}: {_one_line(error)}") from None


def _integer(text: str, what: str, minimum: int, maximum: int | None = None) -> int:
    """``text`` as a whole number in [minimum, maximum]; ``1e6`` and ``2.5E5`` count, ``1.5`` does not."""
    error = argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise error from None
        if not math.isfinite(number) or not number.is_integer():
            raise error from None
        value = int(number)
    if value < minimum or (maximum is not None and value > maximum):
        raise error
    return value


def _positive_int(text: str) -> int:
    return _integer(text, "a positive integer", minimum=1)


def _non_negative_int(text: str) -> int:
    return _integer(text, "a non-negative integer", minimum=0)


def _seed(text: str) -> int:
    return _integer(text, "a seed in [0, 2**32 - 1]", minimum=0, maximum=2**32 - 1)


def _dpi(text: str) -> int:
    return _integer(text, "a resolution in [1, 1000] dots per inch", minimum=1, maximum=1000)


def _check_device(device: Any) -> None:
    """Raise ``ValueError`` unless ``device`` is ``'auto'``, the CPU, CUDA (SB3 falls back to the CPU without
    it) or Apple's ``mps`` where this torch has it."""
    if device == "auto":
        return
    usable = ["auto", "cpu", "cuda", "cuda:N"] + (["mps"] if th.backends.mps.is_available() else [])
    try:
        kind = th.device(device).type
    except (RuntimeError, TypeError):
        kind = None
    if kind not in ("cpu", "cuda") and not (kind == "mps" and "mps" in usable):
        raise ValueError(f"unusable torch device {device!r}; use one of {', '.join(usable)}")


def _device(text: str) -> str:
    try:
        _check_device(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def _one_line(error: BaseException) -> str:
    """The message of ``error`` on one line (an exception's text may span several, e.g. a space's repr)."""
    return " ".join(str(error).split()) or type(error).__name__


def check_can_create(path: pathlib.Path, what: str, *, folder: bool) -> None:
    """Raise :class:`UsageError` if ``path`` cannot become a folder (``folder``) or a file written there:
    checked before anything is trained or written, so a mistyped path costs nothing.

    Files are written beside their target and renamed over it, so a file's folder must be writable.
    """
    try:
        _check_path(path, what, folder=folder)
    except OSError as error:  # e.g. a name longer than the file system allows
        raise UsageError(f"{what} {path}: {error.strerror or _one_line(error)}") from None


def _check_path(path: pathlib.Path, what: str, *, folder: bool) -> None:
    if path.exists() and path.is_dir() != folder:
        raise UsageError(
            f"{what} {path} is a {'file' if folder else 'folder'}, not a {'folder' if folder else 'file'}"
        )
    for candidate in [path, *path.parents]:
        if candidate.is_symlink() and not candidate.exists():
            raise UsageError(f"{what} {path} cannot be created: {candidate} is a broken symbolic link")
        if candidate.exists() and (candidate != path or folder):
            if not candidate.is_dir():
                raise UsageError(f"{what} {path} cannot be created: {candidate} is a file")
            if not os.access(candidate, os.W_OK | os.X_OK):
                raise UsageError(f"{what} {path} cannot be written: no write permission in {candidate}")
            try:  # the permission bits can say yes where no file can be made (a read-only or special mount)
                descriptor, probe = tempfile.mkstemp(prefix=".sb3-acer-probe-", dir=candidate)
            except OSError as error:
                raise UsageError(
                    f"{what} {path} cannot be written: {candidate} refuses new files "
                    f"({error.strerror or _one_line(error)})"
                ) from None
            os.close(descriptor)
            os.unlink(probe)
            # A file is written as the hidden ".<name>.XXXXXXXX.tmp" first (an atomic save).
            name_max = os.pathconf(candidate, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
            if not folder and len(f".{path.name}.XXXXXXXX.tmp") > name_max:
                raise UsageError(f"{what} {path}: the file name is too long to be saved safely; shorten it")
            return


def stopped_by(failure: BaseException | None, steps: int) -> str:
    """The start of the error line of a run that ``failure`` stopped at ``steps``: ``"training stopped at
    step 40 by ValueError: <first line of the message>; "`` (``"AssertionError (no message)"`` for an empty
    message), or ``""`` without a failure."""
    if failure is None:
        return ""
    lines = [line.strip() for line in str(failure).splitlines() if line.strip()]
    cause = f"{type(failure).__name__}: {lines[0]}" if lines else f"{type(failure).__name__} (no message)"
    return f"training stopped at step {steps} by {cause}; "


def _finite_statistics(env: VecNormalize) -> bool:
    """Whether ``VecNormalize``'s running statistics hold no NaN or inf (a NaN observation poisons them)."""
    statistics = [env.ret_rms.mean, env.ret_rms.var]
    if env.norm_obs and isinstance(env.obs_rms, RunningMeanStd):
        statistics += [env.obs_rms.mean, env.obs_rms.var]
    return all(np.isfinite(value).all() for value in statistics)


def check_optional(module: str, purpose: str, install: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise CLIError(f"{purpose} needs {module}: {install}") from None


#: The files a ``train`` run writes in its run folder (``--save-path`` moves the three ``model.*`` ones).
RUN_FILES = (
    "*.monitor.csv",
    "evaluations.npz",
    "model.zip",
    "model.json",
    "model.vecnormalize.npz",
    "best_model.zip",
    "best_model.json",
    "best_model.vecnormalize.npz",
)


class BestModelSaver(BaseCallback):
    """Given to an ``EvalCallback`` as ``callback_on_new_best``: saves the model at each new best mean return
    with ``save(path)`` (the model, its description and statistics) through Ctrl-C, which then stops
    training once the files are written. A save that fails removes the best model's files (they would no
    longer belong together) and training goes on, with a warning."""

    def __init__(self, path: pathlib.Path, save: Callable[[pathlib.Path], object]) -> None:
        super().__init__()
        self.path = path
        self.save = save
        self.saved_at: int | None = None  # the step of the best model on disk

    def _on_step(self) -> bool:
        with saving_through_ctrl_c() as pressed:
            try:
                self.save(self.path)
                self.saved_at = self.num_timesteps
            except (OSError, ValueError) as error:  # a full disk; statistics that overflowed
                self.saved_at = None
                for path in _model_files(self.path):
                    with contextlib.suppress(OSError):
                        path.unlink()
                reason = (error.strerror if isinstance(error, OSError) else None) or _one_line(error)
                print(
                    f"warning: cannot save the best model to {self.path}: {reason}; training goes on "
                    "without it",
                    file=sys.stderr,
                )
        if pressed:
            raise KeyboardInterrupt
        return True


def _model_files(model_path: pathlib.Path) -> list[pathlib.Path]:
    """The model file and the two files ``train`` writes beside it."""
    return [model_path, _sidecar(model_path, ".json"), _sidecar(model_path, ".vecnormalize.npz")]


def _previous_files(run_dir: pathlib.Path, model_path: pathlib.Path, overwrite: bool) -> list[pathlib.Path]:
    """The files of an earlier run that this one would replace (each once, however it is spelt); without
    ``overwrite`` their existence is a usage error, so that nothing a user has is replaced by accident.
    With it, each must be a file that can be removed, so that none is removed unless all can be."""
    in_run_dir = sorted({path for pattern in RUN_FILES for path in run_dir.glob(pattern)})
    if in_run_dir and not overwrite:
        raise UsageError(
            f"{run_dir} already holds a run; pass --overwrite to replace it, or choose another --seed "
            "or --log-folder"
        )
    seen = {path.resolve() for path in in_run_dir}
    beside_model = [path for path in _model_files(model_path) if path.exists() and path.resolve() not in seen]
    if beside_model and not overwrite:
        raise UsageError(
            f"{beside_model[0]} exists; pass --overwrite to replace it, or choose another --save-path"
        )
    check_replaceable([*in_run_dir, *beside_model])
    return in_run_dir + beside_model


def check_replaceable(paths: Sequence[pathlib.Path]) -> None:
    """Raise :class:`UsageError` unless each of an earlier run's ``paths`` is a file that can be moved, so
    that none is set aside (:func:`set_aside`) unless all can be."""
    for path in paths:
        if not path.is_file():
            raise UsageError(f"{path} is in the way of this run's files and is not a file; move it away")
        if not os.access(path.parent, os.W_OK | os.X_OK):
            raise UsageError(f"cannot replace {path}: no write permission in {path.parent}")


def set_aside(paths: Sequence[pathlib.Path]) -> list[tuple[pathlib.Path, pathlib.Path]]:
    """``--overwrite``: rename each of an earlier run's ``paths`` to a hidden ``.<name>.previous`` beside it
    until the new run has something to keep; returns the (path, set-aside path) pairs. If one cannot be
    moved, those already moved are put back and :class:`CLIError` says why."""
    aside: list[tuple[pathlib.Path, pathlib.Path]] = []
    try:
        for path in paths:
            moved = path.with_name(f".{path.name}.previous")
            path.rename(moved)
            aside.append((path, moved))
    except OSError as error:
        for path, moved in aside:
            moved.rename(path)
        raise CLIError(f"cannot prepare the run: {_one_line(error)}") from None
    return aside


def _check_policy_fits(policy: str, env_id: str, observation_space: spaces.Space) -> None:
    if policy.startswith("Cnn") and not is_image_space(observation_space, check_channels=False):
        shape = getattr(observation_space, "shape", None)
        raise UsageError(
            f"{policy} needs image observations (uint8, [H, W, C] or [C, H, W]); {env_id} observes "
            f"{type(observation_space).__name__} of shape {shape}: use an Mlp policy"
        )


def _training_env(
    settings: TrainSettings, n_envs: int, monitor_dir: pathlib.Path | None = None, subprocesses: bool = False
) -> VecEnv:
    """The run's training env: ``n_envs`` wrapped envs, in ``VecNormalize`` when the run normalises."""
    env = make_env(
        settings.env,
        n_envs,
        settings.seed,
        monitor_dir=monitor_dir,
        wrappers=settings.env_wrapper,
        env_kwargs=settings.env_kwargs,
        subprocesses=subprocesses,
    )
    if not settings.normalize:
        return env
    try:
        gamma = float(settings.hyperparameters.get("gamma", 0.99))
        return VecNormalize(env, gamma=gamma, **settings.normalize_kwargs)
    except BaseException:
        env.close()
        raise


def _check_model(settings: TrainSettings) -> None:
    """Build the run's model once on a single env without logs, so that every setting is checked before the
    run folder, the logs or an earlier run's files are touched."""
    if "device" in settings.hyperparameters:
        try:
            _check_device(settings.hyperparameters["device"])
        except ValueError as error:
            raise UsageError(f"--hyperparams device: {error}") from None
    env: VecEnv | None = None
    try:
        env = _training_env(settings, n_envs=1)
        _check_policy_fits(settings.policy, settings.env.env_id, env.observation_space)
        ACER(settings.policy, env, seed=settings.seed, **settings.hyperparameters)
    except CLIError:
        raise
    except Exception as error:  # whatever the model's or the env's constructor refuses
        raise UsageError(f"invalid settings: {_one_line(error)}") from None
    finally:
        if env is not None:
            with contextlib.suppress(Exception):  # the check is over; an env's own close is not a setting
                env.close()


def _make_folders(path: pathlib.Path) -> list[pathlib.Path]:
    """``mkdir -p path``; returns the folders it created, deepest first."""
    created = [folder for folder in [path, *path.parents] if not folder.exists()]
    path.mkdir(parents=True, exist_ok=True)
    return created


def _describe(spec: WrapperSpec) -> str:
    name = spec.name.rpartition(".")[2]
    return f"{name}({spec.kwargs})" if spec.kwargs else name


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _abandon_run(
    env: VecEnv | None, run_dir: pathlib.Path, aside: list[tuple[pathlib.Path, pathlib.Path]]
) -> None:
    """Keep nothing of a run that saves no model (its Monitor logs, evaluations, best model) and put back the
    earlier run's files that ``--overwrite`` set aside, so that the same command works again. Every run file
    in the run folder is this run's: the earlier run's were set aside, or the run was refused."""
    if env is not None:
        with contextlib.suppress(Exception):  # an env that failed may fail to close too
            env.close()
    for path in {path for pattern in RUN_FILES for path in run_dir.glob(pattern)}:
        path.unlink()
    for path, moved in aside:
        moved.rename(path)


def _save_run(
    model: ACER, env: VecEnv, settings: TrainSettings, run_dir: pathlib.Path, model_path: pathlib.Path
) -> pathlib.Path | None:
    """Save the model, its normalisation statistics (returns their path, if any) and the run description
    (``model.json``) at ``model_path``.

    Raises:
        ValueError: the statistics hold NaN or inf (enjoy could not use them); nothing is written.
    """
    if isinstance(env, VecNormalize) and not _finite_statistics(env):
        raise ValueError("the normalisation statistics hold NaN or inf")
    model_path.parent.mkdir(parents=True, exist_ok=True)
    model.save(model_path)
    normalization_path = None
    if isinstance(env, VecNormalize):
        normalization_path = _sidecar(model_path, ".vecnormalize.npz")
        save_normalization(env, normalization_path)
    run_info = dict(
        env_id=settings.env.env_id,
        atari=settings.env.atari,
        n_envs=settings.n_envs,
        total_timesteps=settings.timesteps,
        num_timesteps=int(model.num_timesteps),
        policy=settings.policy,
        normalize=settings.normalize,
        normalize_kwargs=settings.normalize_kwargs,
        env_wrapper=[{spec.name: spec.kwargs} for spec in settings.env_wrapper],
        env_kwargs=_json_safe(settings.env_kwargs),
        seed=settings.seed,
        hyperparameters=_json_safe(settings.hyperparameters),
        run_dir=str(run_dir),
        sb3_acer_version=sb3_acer.__version__,
    )
    description = (json.dumps(run_info, indent=2) + "\n").encode()
    write_atomically(_sidecar(model_path, ".json"), lambda file: file.write(description))
    return normalization_path


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda obj: getattr(obj, "__name__", repr(obj))))


@contextlib.contextmanager
def _torch_threads(n_threads: int | None) -> Iterator[None]:
    """Use ``n_threads`` torch threads inside the block (``None``: leave the setting), then restore it."""
    before = th.get_num_threads()
    if n_threads is not None:
        th.set_num_threads(n_threads)
    try:
        yield
    finally:
        th.set_num_threads(before)


def cmd_train(args: argparse.Namespace) -> int:
    settings = train_settings(args)
    # The small MLPs are several times faster on one thread than with threads competing for the cores;
    # --hyperparams num_procs=N chooses the count.
    single = settings.policy == "MlpPolicy" and "num_procs" not in settings.hyperparameters
    with _torch_threads(1 if single else None):
        return _train(settings, args)


def _train(settings: TrainSettings, args: argparse.Namespace) -> int:
    if not args.no_progress_bar:
        check_optional("tqdm", "the progress bar", "pip install tqdm rich (or pass --no-progress-bar)")
        check_optional("rich", "the progress bar", "pip install tqdm rich (or pass --no-progress-bar)")
    if args.tensorboard_log is not None:
        check_optional("tensorboard", "--tensorboard-log", "pip install tensorboard")
    env_name = settings.env.env_id.replace("/", "-")
    run_name = f"{env_name}_{settings.seed}"
    run_dir = pathlib.Path(args.log_folder) / run_name
    model_path = (
        _model_file(_in_folder(args.save_path, "model.zip")) if args.save_path else run_dir / "model.zip"
    )
    # Everything is checked before anything is written: a failed command leaves the files as they were.
    check_can_create(run_dir, "the run folder", folder=True)
    if model_path.suffix != ".zip":
        raise UsageError(
            f"--save-path {args.save_path}: the model file must end in .zip (or have no suffix), since "
            "its .json and .vecnormalize.npz are written beside it"
        )
    for path in _model_files(model_path):
        check_can_create(path, "--save-path", folder=False)
    if args.eval_freq and model_path.resolve() == (run_dir / "best_model.zip").resolve():
        raise UsageError(
            f"--save-path {args.save_path}: the run keeps its best model there (--eval-freq); choose another"
        )
    if args.tensorboard_log is not None:
        check_can_create(pathlib.Path(args.tensorboard_log), "--tensorboard-log", folder=True)
    _previous_files(run_dir, model_path, args.overwrite)  # checked again once the run folder is locked
    _check_model(settings)
    print(settings.source)
    print(
        f"Training ACER ({settings.policy}) on {settings.env.env_id}: {settings.timesteps} steps, "
        f"{settings.n_envs} envs{' (SafeSubprocVecEnv)' if args.vec_env == 'subproc' else ''}, "
        f"seed {settings.seed}"
        + (", VecNormalize" if settings.normalize else "")
        + (f"({settings.normalize_kwargs})" if settings.normalize and settings.normalize_kwargs else "")
        + "".join(f", {_describe(spec)}" for spec in settings.env_wrapper)
        + (f", {settings.hyperparameters}" if settings.hyperparameters else "")
    )
    with _run_lock(run_dir):
        return _run(settings, args, run_dir, run_name, model_path)


#: Held (``fcntl.flock``) in the run folder while a run writes there.
LOCK_NAME = ".sb3-acer-train.lock"


@contextlib.contextmanager
def _run_lock(run_dir: pathlib.Path, busy: str | None = None) -> Iterator[None]:
    """Hold an exclusive lock on the run folder while the run writes there, so that a second ``train`` into
    the same folder (same env and seed, e.g. a shell loop that forgot ``--seed``) stops with one line rather
    than mixing its logs and model with the first one's. Released and removed when the run ends, and
    released by the system if the process dies. Without ``fcntl`` (Windows) runs are not locked. ``busy``
    is the error when the folder is locked (default: train's)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    path = run_dir / LOCK_NAME
    try:
        created = _make_folders(run_dir)
    except OSError as error:
        raise CLIError(f"cannot prepare the run: {_one_line(error)}") from None
    lock = None
    try:
        # A run ending removes the file: one that opened it just before may lock the removed file, so the
        # lock counts only if the locked file is still the one the path names; otherwise open it again.
        for _ in range(100):
            try:
                lock = open(path, "a")  # noqa: SIM115 - held for the whole run
            except OSError as error:
                raise CLIError(f"cannot prepare the run: {_one_line(error)}") from None
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                raise CLIError(
                    busy
                    or f"another {PROG} train is writing to {run_dir}; wait for it to end, or choose another "
                    "--seed or --log-folder"
                ) from None
            with contextlib.suppress(FileNotFoundError):
                if os.path.samestat(os.fstat(lock.fileno()), os.stat(path)):
                    break
            lock.close()
        else:  # pragma: no cover - the file replaced a hundred times in a row
            raise CLIError(f"cannot lock the run folder {run_dir}: its lock file keeps being replaced")
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                (run_dir / LOCK_NAME).unlink()
    finally:
        if lock is not None:
            lock.close()
        for folder in created:  # a run that did not start leaves no empty folder behind
            with contextlib.suppress(OSError):
                folder.rmdir()


def _run(
    settings: TrainSettings,
    args: argparse.Namespace,
    run_dir: pathlib.Path,
    run_name: str,
    model_path: pathlib.Path,
) -> int:
    """The run itself, in the locked run folder: the earlier run's files are set aside, the model
    trained, saved and summed up."""
    # Again, now that no other run can write here: a run of the same folder may have ended since the check.
    previous = _previous_files(run_dir, model_path, args.overwrite)
    # --overwrite: the earlier run's files go, so that none of them is taken for this run's (a run with
    # fewer envs would leave stale Monitor ranks; a model.vecnormalize.npz would be applied by enjoy).
    # They are set aside (renamed) until the run's envs and model exist, and put back if that fails.
    aside = set_aside(previous)
    try:
        created = _make_folders(run_dir)
    except OSError as error:
        for path, moved in aside:
            moved.rename(path)
        raise CLIError(f"cannot prepare the run: {_one_line(error)}") from None

    env: VecEnv | None = None
    try:
        env = _training_env(
            settings, settings.n_envs, monitor_dir=run_dir, subprocesses=args.vec_env == "subproc"
        )
        model = ACER(
            settings.policy,
            env,
            seed=settings.seed,
            verbose=args.verbose,
            tensorboard_log=args.tensorboard_log,
            **settings.hyperparameters,
        )
    except BaseException as error:  # Ctrl-C included
        # Leave no empty run behind: it would block the corrected command without --overwrite.
        _abandon_run(env, run_dir, aside)
        for folder in created:
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(error, CLIError) or not isinstance(error, Exception):
            raise
        if isinstance(error, OSError):
            raise CLIError(f"cannot write the run: {_one_line(error)}") from None
        raise UsageError(f"invalid settings: {_one_line(error)}") from None

    # The earlier run's files stay aside until this one has trained something (see below).
    callbacks: list[BaseCallback] = []
    eval_callback: EvalCallback | None = None
    on_best: BestModelSaver | None = None
    if args.eval_freq:
        eval_env = make_env(
            settings.env,
            1,
            settings.seed + 1000,
            wrappers=settings.env_wrapper,
            env_kwargs=settings.env_kwargs,
        )
        if isinstance(env, VecNormalize):
            # EvalCallback syncs its statistics with the training env's before each evaluation.
            eval_env = evaluation_normalization(eval_env, like=env)
        best_path = run_dir / "best_model.zip"
        on_best = BestModelSaver(best_path, lambda path: _save_run(model, env, settings, run_dir, path))
        eval_callback = EvalCallback(
            eval_env,
            # The best model is saved with its description and the statistics of that moment (the zoo saves
            # it alone), so that enjoy plays it as it was evaluated.
            callback_on_new_best=on_best,
            n_eval_episodes=args.eval_episodes,
            eval_freq=max(args.eval_freq // settings.n_envs, 1),
            log_path=str(run_dir),
            deterministic=not settings.env.atari,  # as the zoo: sampled actions on Atari (no stuck games)
            verbose=1,
        )
        callbacks.append(eval_callback)

    start = time.perf_counter()
    interrupted = False
    failure: Exception | None = None
    try:
        model.learn(
            total_timesteps=settings.timesteps,
            callback=callbacks,
            progress_bar=not args.no_progress_bar,
            tb_log_name=run_name,
        )
    except KeyboardInterrupt:
        interrupted = True
    except Exception as error:  # the env (or a worker) failed hours in: keep what was trained
        failure = error
        if args.verbose:
            traceback.print_exc()
    elapsed = time.perf_counter() - start
    stopped = stopped_by(failure, model.num_timesteps)
    unusable = None
    if (failure is not None or interrupted) and model.num_timesteps == 0:
        unusable = "nothing was trained"
    elif isinstance(env, VecNormalize) and not _finite_statistics(env):
        # A NaN observation, or one so large that the variance overflowed: enjoy could not use them.
        unusable = "the normalisation statistics hold NaN or inf"
    if unusable is not None:
        _abandon_run(env, run_dir, aside)
        if interrupted and failure is None:
            when = "before the first step" if model.num_timesteps == 0 else f"at {model.num_timesteps} steps"
            print(f"interrupted {when}: {unusable}, so no model was saved", file=sys.stderr)
            return 130
        raise CLIError(f"{stopped}{unusable}, so no model was saved")
    if interrupted:
        print(f"\ninterrupted at {model.num_timesteps} steps; saving the model")
    for _, moved in aside:
        moved.unlink()
    trained = "the trained model" if failure is None else "the model trained so far"

    with saving_through_ctrl_c() as pressed:
        try:
            normalization_path = _save_run(model, env, settings, run_dir, model_path)
        except OSError as error:  # the disk filled up, the folder went away: keep the model where it can be
            reason = error.strerror or _one_line(error)
            for rescue_folder in (
                lambda: run_dir,
                lambda: pathlib.Path(tempfile.mkdtemp(prefix="sb3-acer-")),
            ):
                try:
                    rescue = rescue_folder() / "model.zip"
                    if rescue.resolve() == model_path.resolve():
                        continue
                    _save_run(model, env, settings, run_dir, rescue)
                except OSError:
                    continue
                raise CLIError(
                    f"{stopped}cannot save the model to {model_path}: {reason}; {trained} is in {rescue}"
                ) from None
            raise CLIError(
                f"{stopped}cannot save the model to {model_path} nor anywhere else: {reason}"
            ) from None
        finally:
            env.close()
    if failure is not None:
        raise CLIError(f"{stopped}{trained} is in {model_path}")

    episodes = list(model.ep_info_buffer or [])
    print()
    print(f"Trained on {settings.env.env_id}: {model.num_timesteps} env steps in {elapsed:.1f} s")
    if episodes:
        print(
            f"  mean training return (last {len(episodes)} episodes): "
            f"{safe_mean([episode['r'] for episode in episodes]):.2f}"
        )
    else:
        print("  mean training return: no episode finished")
    if eval_callback is None:
        print("  evaluation: not run (pass --eval-freq)")
    elif not eval_callback.evaluations_results:
        print("  evaluation: none yet (--eval-freq is larger than the steps trained)")
    else:
        last = np.asarray(eval_callback.evaluations_results[-1])
        at_step = eval_callback.evaluations_timesteps[-1]
        print(
            f"  evaluation return ({_count(len(last), 'episode')} at step {at_step}): "
            f"{last.mean():.2f} +/- {last.std():.2f} (best {eval_callback.best_mean_reward:.2f})"
        )
    if eval_callback is not None and on_best is not None and on_best.saved_at is not None:
        print(
            f"  best model: {on_best.path} (evaluation return "
            f"{eval_callback.best_mean_reward:.2f} at step {on_best.saved_at})"
        )
    print(f"  model: {model_path}")
    if normalization_path is not None:
        print(f"  normalisation statistics: {normalization_path}")
    print(f"  Monitor logs: {run_dir}  (plot: {PROG} plot {run_dir})")
    print(f"  watch it: {PROG} enjoy {model_path}")
    return 130 if interrupted or pressed else 0


# ---------------------------------------------------------------------------------------------- enjoy


def _video_recorder(info: EnvInfo, folder: str, n_episodes: int) -> Callable[[gym.Env], gym.Env]:
    """A wrapper recording the first ``n_episodes`` episodes to ``folder`` (Gymnasium's ``RecordVideo``)."""
    try:
        import moviepy  # noqa: F401
    except ImportError:
        raise CLIError("video recording needs moviepy: pip install moviepy") from None
    from gymnasium.wrappers import RecordVideo

    def record(env: gym.Env) -> gym.Env:
        # Only the episodes that are played to the end: the vec env resets after the last one.
        return RecordVideo(
            env,
            video_folder=folder,
            episode_trigger=lambda episode: episode < n_episodes,
            name_prefix=info.env_id.replace("/", "-"),
            disable_logger=True,
        )

    return record


def _read_run_info(path: pathlib.Path) -> dict[str, Any]:
    """The run description ``train`` wrote beside a model, checked enough to be used."""

    def damaged(reason: str) -> CLIError:
        return CLIError(f"cannot read {path}: {reason}; repair or remove it")

    try:
        run_info = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise damaged(_one_line(error)) from None
    if not isinstance(run_info, dict):
        raise damaged("not a run description (a JSON object)")
    for key, kind in (("env_id", str), ("normalize", bool)):
        if key in run_info and not isinstance(run_info[key], kind):
            raise damaged(f"{key!r} must be a {kind.__name__}, got {run_info[key]!r}")
    return run_info


def _enjoy_env(
    args: argparse.Namespace,
    env_id: str,
    info: EnvInfo,
    model: ACER,
    model_path: pathlib.Path,
    run_info: dict[str, Any],
    video: Callable[[gym.Env], gym.Env] | None,
    wrappers: tuple[WrapperSpec, ...],
    env_kwargs: dict[str, Any],
) -> VecEnv:
    """The env ``enjoy`` plays the model in: checked to fit it, normalised as it was trained."""
    render_mode = "rgb_array" if video is not None else ("human" if args.render else None)
    try:
        env = make_env(
            info, 1, args.seed, render_mode=render_mode, video=video, wrappers=wrappers, env_kwargs=env_kwargs
        )
    except CLIError:
        raise
    except (ValueError, TypeError, AssertionError) as error:  # a saved wrapper that cannot wrap this env
        raise UsageError(f"cannot make {env_id} for the model: {_one_line(error)}") from None
    try:
        check_for_correct_spaces(env, model.observation_space, model.action_space)
    except ValueError as error:
        env.close()
        raise UsageError(f"the model does not fit {env_id}: {_one_line(error)}") from None
    normalization_path = _sidecar(model_path, ".vecnormalize.npz")
    # The run description says whether the model was trained normalised; without one (a model saved from
    # Python), statistics beside the model are used when they exist.
    normalized = run_info["normalize"] if "normalize" in run_info else normalization_path.is_file()
    if normalized and normalization_path.is_file():
        try:
            env = load_normalization(env, normalization_path)
        except (OSError, ValueError, KeyError) as error:
            env.close()
            raise CLIError(f"cannot read {normalization_path}: {_one_line(error)}") from None
    elif normalized:
        env.close()
        raise CLIError(f"the model was trained with VecNormalize but {normalization_path} is missing")
    return env


def cmd_enjoy(args: argparse.Namespace) -> int:
    with _torch_threads(1):  # one observation at a time: threads only add overhead
        return _enjoy(args)


def _enjoy(args: argparse.Namespace) -> int:
    model_path = pathlib.Path(args.model)
    if model_path.is_dir():
        model_path = model_path / "model.zip"
    elif not model_path.exists():
        model_path = _model_file(model_path)
    if not model_path.is_file():
        raise UsageError(f"no model file {str(model_path)!r}")
    info_path = _sidecar(model_path, ".json")
    run_info = _read_run_info(info_path) if info_path.exists() else {}
    env_id = args.env or run_info.get("env_id")
    if not env_id:
        reason = "names no environment" if info_path.exists() else "does not exist to name the environment"
        raise UsageError(f"pass --env ENV_ID ({info_path} {reason})")
    info = resolve_env(env_id)
    try:
        wrappers = env_wrappers(run_info.get("env_wrapper"))
        env_kwargs = check_env_kwargs(run_info.get("env_kwargs") or {})
    except ValueError as error:
        raise CLIError(f"{info_path}: {error}") from None
    env_kwargs.update(_env_kwargs(args.env_kwargs))
    if args.video_folder is not None and args.render:
        raise UsageError("--render and --video-folder cannot be combined")
    if args.video_folder is not None:
        video_folder = pathlib.Path(args.video_folder)
        check_can_create(video_folder, "--video-folder", folder=True)
        if video_folder.is_dir() and any(video_folder.glob("*.mp4")):
            raise UsageError(
                f"--video-folder {video_folder} already holds videos, which would be replaced; choose "
                "another folder or remove them"
            )
    video = None if args.video_folder is None else _video_recorder(info, args.video_folder, args.episodes)
    try:
        model = ACER.load(model_path, device=args.device)
    except (ModelFileError, OSError) as error:
        raise CLIError(f"cannot load {model_path}: {_one_line(error)}") from None
    # RecordVideo makes its folder when the env is made: gone again if the model cannot play there.
    video_made = [] if video is None else [f for f in [video_folder, *video_folder.parents] if not f.exists()]
    try:
        env = _enjoy_env(args, env_id, info, model, model_path, run_info, video, wrappers, env_kwargs)
    except BaseException:
        for folder in video_made:  # deepest first; nothing was recorded in them
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise

    returns: list[float] = []
    # Recurrent policies carry their LSTM state from step to step and reset it at episode starts.
    state: tuple[np.ndarray, ...] | None = None
    episode_start = np.ones((env.num_envs,), dtype=bool)
    try:
        obs = env.reset()
        while len(returns) < args.episodes:
            action, state = model.predict(
                obs,  # type: ignore[arg-type]
                state=state,
                episode_start=episode_start,
                deterministic=args.deterministic,
            )
            obs, _, dones, infos = env.step(action)
            episode_start = dones
            episode = infos[0].get("episode")
            if episode is not None:
                returns.append(float(episode["r"]))
                print(f"episode {len(returns)}: return {episode['r']:.2f}, length {episode['l']}")
    except KeyboardInterrupt:
        interrupted = True
    except gym.error.DependencyNotInstalled as error:  # no pygame to draw frames, met at the first one
        with warnings.catch_warnings():  # RecordVideo's "zero frames to save": the error below says why
            warnings.simplefilter("ignore")
            env.close()
        for folder in video_made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise CLIError(
            f"cannot {'show' if video is None else 'record'} {info.env_id}: {_one_line(error)}"
        ) from None
    else:
        interrupted = False
    env.close()
    if returns:
        print(
            f"{info.env_id}: mean return over {_count(len(returns), 'episode')} {np.mean(returns):.2f} "
            f"+/- {np.std(returns):.2f}"
        )
    if interrupted:
        print("interrupted", file=sys.stderr)
        return 130
    if args.video_folder is not None:
        print(f"videos: {args.video_folder}")
    return 0


# ---------------------------------------------------------------------------------------------- plot


class Curve(NamedTuple):
    """Learning curve of one experiment: mean and standard deviation over its runs on a common grid."""

    label: str
    n_runs: int
    steps: np.ndarray
    mean: np.ndarray
    std: np.ndarray


def find_runs(paths: Sequence[str]) -> dict[tuple[str, str], list[pathlib.Path]]:
    """Group run folders into experiments, keyed by (parent folder, name without the ``_<seed>`` suffix).

    Each path is a run folder (it holds ``*.monitor.csv`` files) or a folder of run folders.
    """
    from stable_baselines3.common.monitor import get_monitor_files

    groups: dict[tuple[str, str], list[pathlib.Path]] = {}
    for text in paths:
        path = pathlib.Path(text)
        if not path.is_dir():
            raise UsageError(f"{text!r} is not a folder")
        # A run folder, a folder of run folders, or both (Monitor files beside run folders).
        runs = [path] if get_monitor_files(str(path)) else []
        runs += sorted(sub for sub in path.iterdir() if sub.is_dir() and get_monitor_files(str(sub)))
        if not runs:
            raise CLIError(f"no Monitor logs (*.monitor.csv) in {text} or its subfolders")
        for run in runs:
            run = run.resolve()  # the same folder given twice, or by two paths, is one run
            key = (str(run.parent), re.sub(r"_\d+$", "", run.name))
            if run not in groups.setdefault(key, []):
                groups[key].append(run)
    return groups


def _monitor_results(run: pathlib.Path) -> Any:
    """The finished episodes of a run's Monitor logs, as SB3's ``load_results`` gives them (a ``DataFrame``
    of ``r``, ``l``, ``t``, ordered by time).

    A line without its newline yet (a run still training) is left out; a file that is not a Monitor log is
    an error naming it.
    """
    import pandas
    from stable_baselines3.common.monitor import get_monitor_files

    frames, starts = [], []
    for name in get_monitor_files(str(run)):
        try:
            with open(name) as file:
                text = file.read()
            first, _, body = text.partition("\n")
            if not first.startswith("#"):
                raise ValueError("its first line is not the '#{...}' header")
            header = json.loads(first[1:])
            frame = pandas.read_csv(io.StringIO(body[: body.rfind("\n") + 1]), index_col=None)
            if not {"r", "l", "t"} <= set(frame.columns):
                raise ValueError("no r, l, t columns")
            for column in ("r", "l", "t"):
                try:
                    frame[column] = pandas.to_numeric(frame[column])
                except (ValueError, TypeError):
                    raise ValueError(f"column {column} holds a value that is not a number") from None
            frame["t"] += header["t_start"]
        except (
            OSError,
            UnicodeDecodeError,
            ValueError,
            KeyError,
            TypeError,
            pandas.errors.ParserError,
        ) as error:
            raise CLIError(f"{name} is not a readable Monitor log: {_one_line(error)}") from None
        starts.append(header["t_start"])
        frames.append(frame)
    frames = [frame for frame in frames if not frame.empty]
    if not frames:
        return pandas.DataFrame(columns=["r", "l", "t"])
    results = pandas.concat(frames).sort_values("t").reset_index()
    results["t"] -= min(starts)
    return results


def learning_curves(paths: Sequence[str], window: int, points: int = 200) -> list[Curve]:
    """Episode return against environment steps, smoothed over ``window`` episodes, per experiment.

    The runs of an experiment are interpolated onto the steps that all of them reached (an experiment whose
    runs share no steps is skipped, with a line on stderr); ``std`` is 0 for an experiment of one run.
    """
    from stable_baselines3.common.results_plotter import X_TIMESTEPS, ts2xy, window_func

    groups = find_runs(paths)
    names = [name for _, name in groups]
    curves = []
    apart = []  # experiments whose runs share no steps: a mean there would extrapolate
    for (parent, name), runs in groups.items():
        label = name if names.count(name) == 1 else f"{pathlib.Path(parent).name}/{name}"
        xy = []
        for run in runs:
            steps, returns = ts2xy(_monitor_results(run), X_TIMESTEPS)
            steps, returns = np.asarray(steps, dtype=float), np.asarray(returns, dtype=float)
            if len(returns) == 0:
                continue
            width = min(window, len(returns))
            if width > 1:
                steps, returns = window_func(steps, returns, width, np.mean)
            xy.append((steps, returns))
        if not xy:
            print(f"{label}: no finished episode, skipped", file=sys.stderr)
            continue
        low = max(steps[0] for steps, _ in xy)
        high = min(steps[-1] for steps, _ in xy)
        if high < low:
            apart.append(
                f"{label}: its {len(xy)} runs share no range of steps (a smoothed curve starts at {low:.0f} "
                f"steps, another ends at {high:.0f})"
            )
            continue
        grid = np.linspace(low, high, points) if high > low else np.array([high])
        values = np.stack([np.interp(grid, steps, returns) for steps, returns in xy])
        curves.append(Curve(label, len(xy), grid, values.mean(axis=0), values.std(axis=0)))
    if not curves:
        raise CLIError(f"nothing to draw: {'; '.join(apart)}" if apart else "no finished episode in any run")
    for reason in apart:
        print(f"{reason}, skipped", file=sys.stderr)
    return curves


#: Image formats of ``plot --out`` (matplotlib writes them without external programs).
PLOT_FORMATS = (".png", ".pdf", ".svg", ".jpg", ".jpeg")


def cmd_plot(args: argparse.Namespace) -> int:
    try:
        import pandas  # noqa: F401
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise CLIError("plotting needs matplotlib and pandas: pip install 'sb3-acer[plot]'") from None
    figure = Figure(figsize=(7, 4.5), dpi=args.dpi)
    FigureCanvasAgg(figure)
    out = pathlib.Path(_in_folder(args.out, "learning_curves.png"))
    if not out.suffix:
        out = out.with_suffix(".png")
    if out.suffix.lower() not in PLOT_FORMATS:
        raise UsageError(
            f"--out {args.out}: unknown image format {out.suffix!r}; use one of {', '.join(PLOT_FORMATS)}"
        )
    check_can_create(out, "--out", folder=False)
    curves = learning_curves(args.run_dirs, window=args.window)
    axes = figure.add_subplot()
    for curve in curves:
        runs = _count(curve.n_runs, "run")
        marker = "o" if len(curve.steps) == 1 else None
        (line,) = axes.plot(curve.steps, curve.mean, marker=marker, label=f"{curve.label} ({runs})")
        if curve.n_runs > 1:
            axes.fill_between(
                curve.steps, curve.mean - curve.std, curve.mean + curve.std, color=line.get_color(), alpha=0.2
            )
        print(
            f"{curve.label}: {runs}, return {curve.mean[-1]:.2f} +/- {curve.std[-1]:.2f} "
            f"at {int(curve.steps[-1])} steps"
        )
    axes.set_xlabel("environment steps")
    axes.set_ylabel(f"episode return (moving mean of up to {args.window} episodes)")
    axes.set_title(args.title or "ACER learning curves (mean +/- std over seeds)")
    axes.grid(alpha=0.3)
    axes.legend(loc="best")
    figure.tight_layout()
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        figure.savefig(out)
    except OSError as error:
        raise CLIError(f"cannot write {out}: {_one_line(error)}") from None
    print(f"saved {out}")
    return 0


# ---------------------------------------------------------------------------------------------- main

MAIN_EXAMPLES = f"""\
examples:
  {PROG} train CartPole-v1                      # tuned preset, logs and model in logs/CartPole-v1_0/
  {PROG} enjoy logs/CartPole-v1_0/model.zip     # watch it for 5 episodes
  {PROG} plot logs/ --out curves.png            # learning curves of every run in logs/

Run '{PROG} COMMAND -h' for the options of a command."""

TRAIN_EXAMPLES = f"""\
examples:
  {PROG} train CartPole-v1
  {PROG} train CartPole-v1 --seed 1 --timesteps 20000 --eval-freq 5000
  {PROG} train Acrobot-v1 --n-envs 8 --hyperparams ent_coef=0.01 lr_schedule=constant normalize=True
  {PROG} train LunarLander-v3 --hyperparams "policy_kwargs={{'net_arch': {{'pi': [128], 'qf': [256]}}}}"
  {PROG} train FrozenLake-v1 --env-kwargs is_slippery=False
  {PROG} train PongNoFrameskip-v4 --tensorboard-log tb/

Presets: {{presets}}.
Without one, ACER's defaults are used with {DEFAULT_N_ENVS} envs and {DEFAULT_TIMESTEPS} steps (Atari:
{ATARI_N_ENVS} envs, AtariWrapper, {ATARI_FRAME_STACK}-frame stack, CnnPolicy, lr_schedule constant,
{ATARI_TIMESTEPS} steps, as SB2's run_atari).
--hyperparams values are Python literals (1e-3, True, None, [64, 64], {{'net_arch': [32]}}), bare
words (linear) or the zoo's dict(...) strings, read without eval (constants, lists, tuples, dicts,
dict(key=value, ...) and class names only). Besides ACER's constructor arguments, 'normalize' turns
VecNormalize on: True, or a dict of its arguments ({{'norm_obs': False}}: rewards only), and
'env_wrapper' wraps each env, as in the zoo: TimeFeatureWrapper (sb3-contrib's: the remaining time as an
extra observation), None for no wrapper. Inside policy_kwargs, 'activation_fn' may name a torch.nn class
(ReLU, nn.ReLU) and 'optimizer_class' a torch.optim class (Adam) or RMSpropTFLike. As in the zoo,
learning_rate=lin_7e-4 is the linear schedule (learning_rate=7e-4, lr_schedule=linear)."""


def _train_epilog() -> str:
    """The train command's examples, with the presets read when the parser is built (not on import: a
    damaged preset file must not break the other commands)."""
    try:
        names = available_presets() + (
            [f"{ATARI_ENTRY} (defaults for Atari games)"] if has_atari_defaults() else []
        )
        presets = ", ".join(names) or "none"
    except PresetError as error:
        presets = f"none ({error})"
    return TRAIN_EXAMPLES.replace("{presets}", presets)


ENJOY_EXAMPLES = f"""\
examples:
  {PROG} enjoy logs/CartPole-v1_0/model.zip --episodes 10 --deterministic
  {PROG} enjoy logs/CartPole-v1_0               # a run folder: its model.zip
  {PROG} enjoy my_model.zip --env CartPole-v1   # a model saved from Python
  {PROG} enjoy logs/CartPole-v1_0 --video-folder videos/   # needs moviepy

The environment id, its wrappers and the VecNormalize statistics are read from MODEL.json and
MODEL.vecnormalize.npz next to the model, as written by '{PROG} train'."""

PLOT_EXAMPLES = f"""\
examples:
  {PROG} plot logs/CartPole-v1_0 logs/CartPole-v1_1 logs/CartPole-v1_2 --out cartpole.png
  {PROG} plot logs/ --out curves.png            # every run folder in logs/
  {PROG} plot baseline/ tuned/ --window 50      # compare two experiments

Each RUN_DIR is a run folder (holding *.monitor.csv files, as written by '{PROG} train') or a folder of
run folders. Runs whose folder names differ only by a '_<seed>' suffix, in the same parent folder, form
one experiment: its curve is the mean over the runs, with a band of +/- one standard deviation, drawn
over the steps all of them reached. Steps are the summed lengths of the finished episodes."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``sb3-acer`` command."""
    formatter = argparse.RawDescriptionHelpFormatter
    parser = _Parser(
        prog=PROG,
        description="ACER (Actor-Critic with Experience Replay) on Stable-Baselines3: train, enjoy, plot.",
        epilog=MAIN_EXAMPLES,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {sb3_acer.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    train = commands.add_parser(
        "train",
        help="train ACER on an environment (tuned preset when one exists)",
        description="Train ACER on ENV_ID with its tuned preset (or ACER's defaults), then save it.",
        epilog=_train_epilog(),
        formatter_class=formatter,
    )
    train.add_argument("env_id", metavar="ENV_ID", help="Gymnasium environment id, e.g. CartPole-v1")
    train.add_argument("--n-envs", type=_positive_int, help="parallel environments (default: preset)")
    train.add_argument(
        "--timesteps", type=_positive_int, help="environment steps, all envs (default: preset)"
    )
    train.add_argument(
        "--seed", type=_seed, default=0, help="random seed; also names the run folder (default 0)"
    )
    train.add_argument("--policy", choices=sorted(ACER.policy_aliases), help="policy (default: preset)")
    train.add_argument(
        "--hyperparams",
        nargs="+",
        action="extend",
        metavar="KEY=VALUE",
        help="override constructor arguments, e.g. ent_coef=0.01 lr_schedule=constant",
    )
    train.add_argument(
        "--env-kwargs",
        nargs="+",
        action="extend",
        metavar="KEY=VALUE",
        help="keyword arguments of gymnasium.make (the zoo's --env-kwargs), over the preset's env_kwargs, "
        "e.g. sutton_barto_reward=True; saved in model.json for enjoy",
    )
    train.add_argument(
        "--vec-env",
        choices=("dummy", "subproc"),
        default="dummy",
        help="dummy: the envs step in this process (default); subproc: each in its own process "
        "(SafeSubprocVecEnv, for envs slow to step), as the zoo's --vec-env",
    )
    train.add_argument("--log-folder", default="logs", help="parent of the run folder (default: logs)")
    train.add_argument(
        "--save-path",
        help="model file, .zip, or a folder for model.zip (one that exists, or a name ending in /) "
        "(default: <run folder>/model.zip); its .json goes beside it",
    )
    train.add_argument("--tensorboard-log", metavar="DIR", help="write TensorBoard logs to DIR")
    train.add_argument(
        "--eval-freq",
        type=_non_negative_int,
        default=0,
        metavar="STEPS",
        help="evaluate every STEPS env steps (all envs together) on a separate env; 0: never (default)",
    )
    train.add_argument("--eval-episodes", type=_positive_int, default=5, help="episodes per evaluation")
    train.add_argument("--verbose", type=int, default=0, choices=(0, 1, 2), help="ACER's log output")
    train.add_argument("--no-progress-bar", action="store_true", help="no progress bar")
    train.add_argument("--overwrite", action="store_true", help="replace an existing run in the run folder")
    train.set_defaults(func=cmd_train)

    enjoy = commands.add_parser(
        "enjoy",
        help="run a saved model and print its episode returns",
        description="Run a saved model for some episodes and print the returns (optionally record videos).",
        epilog=ENJOY_EXAMPLES,
        formatter_class=formatter,
    )
    enjoy.add_argument("model", metavar="MODEL", help="model file (.zip) or run folder")
    enjoy.add_argument("--env", metavar="ENV_ID", help="environment id (default: from MODEL.json)")
    enjoy.add_argument(
        "--env-kwargs",
        nargs="+",
        action="extend",
        metavar="KEY=VALUE",
        help="keyword arguments of gymnasium.make, over those MODEL.json saved",
    )
    enjoy.add_argument("--episodes", type=_positive_int, default=5, help="number of episodes (default 5)")
    enjoy.add_argument("--deterministic", action="store_true", help="take the most probable action")
    enjoy.add_argument("--seed", type=_seed, default=0, help="environment seed (default 0)")
    enjoy.add_argument("--render", action="store_true", help="show the environment in a window")
    enjoy.add_argument("--video-folder", metavar="DIR", help="record each episode to DIR (needs moviepy)")
    enjoy.add_argument("--device", type=_device, default="auto", help="torch device (default: auto)")
    enjoy.set_defaults(func=cmd_enjoy)

    plot = commands.add_parser(
        "plot",
        help="draw learning curves from Monitor logs to a PNG",
        description="Draw episode return vs environment steps (mean +/- std over seeds) to a PNG.",
        epilog=PLOT_EXAMPLES,
        formatter_class=formatter,
    )
    plot.add_argument("run_dirs", metavar="RUN_DIR", nargs="+", help="run folder or folder of run folders")
    plot.add_argument(
        "--out",
        default="learning_curves.png",
        help="image file, replaced if it exists, or a folder for learning_curves.png (one that exists, or "
        "a name ending in /); .png is added to a name without suffix, .pdf, .svg and .jpg also work "
        "(default: learning_curves.png)",
    )
    plot.add_argument("--window", type=_positive_int, default=10, help="episodes per moving average (10)")
    plot.add_argument("--title", help="figure title")
    plot.add_argument("--dpi", type=_dpi, default=120, help="resolution, at most 1000 (default 120)")
    plot.set_defaults(func=cmd_plot)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sb3-acer`` command with ``argv`` (default ``sys.argv[1:]``) and return its exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            args = parser.parse_args(argv)
        except UsageError as error:
            if "required: ENV_ID" in str(error) and "--hyperparams" in argv:
                raise UsageError(
                    "ENV_ID is missing: --hyperparams takes every word after it, so give ENV_ID before "
                    "--hyperparams (or end the list with --)"
                ) from None
            raise
        return int(args.func(args))
    except SystemExit as exit_:  # -h and --version
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except CLIError as error:
        print(f"error: {_one_line(error)}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:  # outside training, which saves the model itself
        print("interrupted", file=sys.stderr)
        return 130
    except OSError as error:  # a full disk, a name too long, ...: what the system refused, on one line
        print(f"error: {_one_line(error)}", file=sys.stderr)
        return 1

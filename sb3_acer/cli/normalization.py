"""``VecNormalize``'s statistics beside a model (``model.vecnormalize.npz``): written as plain arrays (no
pickle) by ``train``, read back, checked and frozen by ``enjoy``."""

from __future__ import annotations

import math
import pathlib
import zipfile
import zlib
from typing import Any

import numpy as np
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sb3_acer.cli.errors import CLIError
from sb3_acer.common.save_util.model_file import write_atomically

__all__ = ["finite_statistics", "load_normalization", "save_normalization"]


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


def finite_statistics(env: VecNormalize) -> bool:
    """Whether ``VecNormalize``'s running statistics hold no NaN or inf (a NaN observation poisons them)."""
    statistics = [env.ret_rms.mean, env.ret_rms.var]
    if env.norm_obs and isinstance(env.obs_rms, RunningMeanStd):
        statistics += [env.obs_rms.mean, env.obs_rms.var]
    return all(np.isfinite(value).all() for value in statistics)

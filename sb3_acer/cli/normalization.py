"""``VecNormalize``'s statistics beside a model (``model.vecnormalize.npz``): written as plain arrays (no
pickle) by ``train``, read back, checked and frozen by ``enjoy``.

Reading is bounded by the observation space of the model being played: only the fields listed in
:data:`FIELDS` are read (another entry is never read), ``obs_mean`` and ``obs_var`` each at most one
``float64`` per observation element, every other field at most :data:`MAX_SCALAR_BYTES`; each entry's size and
its ``.npy`` header are checked before anything is decompressed or allocated
(:func:`~sb3_acer.common.save_util.replay_file.read_npy`).

Stable-Baselines3's own statistics (``VecNormalize.save()``, ``CheckpointCallback(save_vecnormalize=True)``,
the zoo's ``vecnormalize.pkl``) are a pickle, and unpickling a file can run any code:
:func:`load_normalization` refuses one with a message naming the two ways on, unless called with
``trust_pickle=True``; :func:`convert_sb3_normalization` (``sb3-acer convert-stats``) turns a trusted one into
this safe format once.
:func:`save_normalization` and :func:`load_normalization` are public: a model trained with ``VecNormalize``
from Python can be played by ``sb3-acer enjoy --norm-stats``.
"""

from __future__ import annotations

import io
import math
import os
import pathlib
import pickle
import zipfile
import zlib
from typing import Any

import numpy as np
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from sb3_acer.cli.errors import CLIError
from sb3_acer.common.save_util.model_file import EntryTooLargeError, open_zip, write_atomically
from sb3_acer.common.save_util.replay_file import read_npy

__all__ = [
    "FIELDS",
    "MAX_PICKLE_BYTES",
    "MAX_SCALAR_BYTES",
    "PickledStatisticsError",
    "StatisticsFileError",
    "convert_sb3_normalization",
    "finite_statistics",
    "load_normalization",
    "read_sb3_normalization",
    "save_normalization",
]

#: The fields of a statistics file (``<field>.npy`` entries of the ``.npz``); the observation statistics only
#: with ``norm_obs``.
OBSERVATION_FIELDS = ("obs_mean", "obs_var", "obs_count")
FIELDS = (
    *OBSERVATION_FIELDS,
    "ret_mean",
    "ret_var",
    "ret_count",
    "norm_obs",
    "norm_reward",
    "clip_obs",
    "clip_reward",
    "gamma",
    "epsilon",
)
#: The most bytes a field other than ``obs_mean`` and ``obs_var`` may hold: it is one number.
MAX_SCALAR_BYTES = 1024
#: The first byte of a pickle (protocol 2 and later), as in SB3's ``vecnormalize.pkl``.
PICKLE_START = b"\x80"
#: The largest pickled statistics file read (with ``trust_pickle``): a ``vecnormalize.pkl`` holds the
#: statistics and the observation space, a few MB for the largest image observations.
MAX_PICKLE_BYTES = 1 << 28


class StatisticsFileError(ValueError):
    """A statistics file that is damaged, not one ``save_normalization`` wrote, or not for this model's
    observations; the message names the field (``enjoy`` adds the file: ``cannot read PATH: ...``)."""


class PickledStatisticsError(StatisticsFileError):
    """Pickled statistics (Stable-Baselines3's ``vecnormalize.pkl``) read without ``trust_pickle``: never
    unpickled; the message names the two ways on (``sb3-acer convert-stats`` and ``--trust-pickle``)."""


def save_normalization(env: VecNormalize, path: str | os.PathLike[str]) -> None:
    """Write ``VecNormalize``'s statistics and settings to ``path`` as plain arrays (``np.savez``, no pickle),
    atomically: the file ``sb3-acer train`` writes beside a model (``MODEL.vecnormalize.npz``), which
    ``sb3-acer enjoy`` reads (``--norm-stats``) and :func:`load_normalization` loads. Without ``norm_obs``
    there are no observation statistics.

    Raises:
        CLIError: ``env`` normalises ``Dict`` observations, whose statistics this format does not hold.
    """
    arrays = _statistics_arrays(env)
    write_atomically(pathlib.Path(path), lambda file: np.savez(file, **arrays))


def _statistics_arrays(env: VecNormalize) -> dict[str, Any]:
    """The fields of a statistics file for ``env`` (:data:`FIELDS`; the observation statistics only with
    ``norm_obs``)."""
    ret_rms = env.ret_rms
    observation_statistics: dict[str, Any] = {}
    if env.norm_obs:
        obs_rms = env.obs_rms
        if not isinstance(obs_rms, RunningMeanStd):
            raise CLIError("normalisation statistics of dict observations cannot be saved")
        observation_statistics = dict(
            obs_mean=obs_rms.mean, obs_var=obs_rms.var, obs_count=np.float64(obs_rms.count)
        )
    return dict(
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


def load_normalization(
    venv: VecEnv, path: str | os.PathLike[str], *, trust_pickle: bool = False
) -> VecNormalize:
    """Wrap ``venv`` in a frozen ``VecNormalize`` (no updates, rewards unscaled) with saved statistics:
    those :func:`save_normalization` wrote or, with ``trust_pickle``, Stable-Baselines3's pickled ones
    (:func:`read_sb3_normalization`), both checked alike.

    Raises:
        PickledStatisticsError: SB3's pickled statistics without ``trust_pickle`` (never unpickled).
        StatisticsFileError: the file is not statistics ``save_normalization`` wrote for ``venv`` (damaged,
            a missing field, other shapes, larger than they can be, values no normalisation has: NaN, a
            negative variance, ...), or with ``trust_pickle``, not ``VecNormalize`` statistics.
        OSError: the file cannot be read.
    """
    path = pathlib.Path(path)
    if trust_pickle and _is_pickle(path):
        arrays = {
            name: np.asarray(value)
            for name, value in _statistics_arrays(read_sb3_normalization(path)).items()
        }
    else:
        arrays = _read_fields(path, math.prod(venv.observation_space.shape or ()))
    return _normalized(venv, arrays)


def _normalized(venv: VecEnv, arrays: dict[str, np.ndarray]) -> VecNormalize:
    """``venv`` in a frozen ``VecNormalize`` with the statistics ``arrays``, once they are checked."""

    def number(name: str, low: float = -math.inf, *, above: bool = False, infinite: bool = False) -> float:
        if name not in arrays:
            raise StatisticsFileError(f"the statistics file lacks the field {name!r}")
        value = arrays[name]
        if value.size != 1 or (not np.issubdtype(value.dtype, np.number) and value.dtype != bool):
            raise StatisticsFileError(f"{name} is not a number: {value.dtype}{list(value.shape)}")
        result = float(value.reshape(()))
        if (
            math.isnan(result)
            or (math.isinf(result) and not infinite)
            or result < low
            or (above and result == low)
        ):
            raise StatisticsFileError(f"{name} = {result} is out of range")
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
        missing = [name for name in OBSERVATION_FIELDS if name not in arrays]
        if missing:
            raise StatisticsFileError(f"the statistics file lacks the field {missing[0]!r} (norm_obs is set)")
        mean, var = arrays["obs_mean"], arrays["obs_var"]
        if mean.shape != shape or var.shape != shape:
            raise StatisticsFileError(
                f"observation statistics of shape {mean.shape}, for observations of shape {shape}"
            )
        if not (np.issubdtype(mean.dtype, np.floating) and np.issubdtype(var.dtype, np.floating)):
            raise StatisticsFileError(
                f"observation statistics of dtype {mean.dtype} and {var.dtype}, not floats"
            )
        if not (np.isfinite(mean).all() and np.isfinite(var).all() and (var >= 0).all()):
            raise StatisticsFileError("observation statistics hold NaN, inf or a negative variance")
        obs_rms = RunningMeanStd(shape=mean.shape)
        obs_rms.mean, obs_rms.var = mean, var
        obs_rms.count = number("obs_count", 0.0)
        env.obs_rms = obs_rms  # type: ignore[assignment]  # a dict only for Dict observations
    env.ret_rms.mean, env.ret_rms.var = number("ret_mean"), number("ret_var", 0.0)  # type: ignore[assignment]
    env.ret_rms.count = number("ret_count", 0.0)
    return env


def _read_fields(path: pathlib.Path, obs_size: int) -> dict[str, np.ndarray]:
    """The :data:`FIELDS` the ``.npz`` at ``path`` holds, each read within its bound (``obs_size``
    ``float64`` numbers for ``obs_mean`` and ``obs_var``); other entries are not read."""
    with open(path, "rb") as handle:
        if handle.read(len(PICKLE_START)) == PICKLE_START:
            raise PickledStatisticsError(
                "this is a pickle, as Stable-Baselines3's pickled VecNormalize statistics "
                "(vecnormalize.pkl) are; sb3-acer does not unpickle files unless told to, as that could run "
                f"code: if you trust it, convert it once with 'sb3-acer convert-stats {path} OUT.npz' "
                "(then play with --norm-stats OUT.npz), or pass --trust-pickle"
            )
        handle.seek(0)
        try:
            with open_zip(handle) as archive:
                present = set(archive.namelist())
                return {
                    name: _read_field(archive, name, 8 * obs_size if name in ("obs_mean", "obs_var") else 0)
                    for name in FIELDS
                    if f"{name}.npy" in present
                }
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as error:
            raise StatisticsFileError(f"damaged (truncated or corrupt): {error}") from None


def _read_field(archive: zipfile.ZipFile, name: str, max_nbytes: int) -> np.ndarray:
    """The field ``name``, of at most ``max_nbytes`` bytes (or :data:`MAX_SCALAR_BYTES`, if that is more)."""
    try:
        return read_npy(archive, archive.getinfo(f"{name}.npy"), max(max_nbytes, MAX_SCALAR_BYTES))
    except EntryTooLargeError as error:
        raise StatisticsFileError(
            f"the field {name!r} is larger than it can be for the model's observations: {error}"
        ) from None
    except ValueError as error:
        raise StatisticsFileError(f"the field {name!r} is corrupt or not a plain array: {error}") from None


def _is_pickle(path: pathlib.Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(len(PICKLE_START)) == PICKLE_START


#: The globals a pickle of ``VecNormalize.save()`` names (SB3's classes, numpy's array and generator
#: constructors, Gymnasium's spaces): the only ones :func:`read_sb3_normalization` lets the unpickler look up,
#: so a pickle naming any other (``os.system``, a module of its own) is refused before it runs.
SB3_STATISTICS_GLOBALS = frozenset(
    {
        ("stable_baselines3.common.vec_env.vec_normalize", "VecNormalize"),
        ("stable_baselines3.common.running_mean_std", "RunningMeanStd"),
        *(
            (module, name)
            for module in ("numpy", "numpy.core", "numpy._core")
            for name in ("dtype", "ndarray")
        ),
        *(
            (f"numpy.{core}.multiarray", name)
            for core in ("core", "_core")
            for name in ("_reconstruct", "scalar")
        ),
        *(
            ("numpy.random._pickle", name)
            for name in ("__generator_ctor", "__bit_generator_ctor", "__randomstate_ctor")
        ),
        *(
            (f"numpy.random._{module}", name)
            for module, name in (
                ("pcg64", "PCG64"),
                ("pcg64", "PCG64DXSM"),
                ("mt19937", "MT19937"),
                ("philox", "Philox"),
                ("sfc64", "SFC64"),
                ("generator", "Generator"),
            )
        ),
        ("numpy.random.bit_generator", "SeedSequence"),
        ("numpy.random.bit_generator", "__pyx_unpickle_SeedSequence"),
        *(
            (f"gymnasium.spaces.{module}", name)
            for module, name in (
                ("box", "Box"),
                ("discrete", "Discrete"),
                ("multi_discrete", "MultiDiscrete"),
                ("multi_binary", "MultiBinary"),
                ("dict", "Dict"),
            )
        ),
        ("collections", "OrderedDict"),
    }
)


class _StatisticsUnpickler(pickle.Unpickler):
    """Unpickles only what :data:`SB3_STATISTICS_GLOBALS` names."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in SB3_STATISTICS_GLOBALS:
            raise pickle.UnpicklingError(
                f"it names {module}.{name}, which VecNormalize statistics never hold (refused, nothing run)"
            )
        return super().find_class(module, name)


def read_sb3_normalization(path: str | os.PathLike[str]) -> VecNormalize:
    """The ``VecNormalize`` that Stable-Baselines3's ``VecNormalize.save()`` pickled to ``path`` (no venv
    set), with finite statistics. Its size is checked first (at most :data:`MAX_PICKLE_BYTES`), and the
    unpickler looks up only the classes such a pickle names (:data:`SB3_STATISTICS_GLOBALS`): a pickle naming
    anything else is refused before it runs. Unpickling is still more than reading data (those classes' own
    code runs on the file's values): read only a file you trust.

    Raises:
        StatisticsFileError: the file is larger than statistics are, cannot be unpickled, holds something
            other than ``VecNormalize``, or statistics with NaN or inf.
        OSError: the file cannot be read.
    """
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > MAX_PICKLE_BYTES:
            raise StatisticsFileError(
                f"{size} bytes, more than pickled VecNormalize statistics hold (at most {MAX_PICKLE_BYTES})"
            )
        raw = handle.read(MAX_PICKLE_BYTES + 1)
    if len(raw) > MAX_PICKLE_BYTES:  # grew while it was read
        raise StatisticsFileError(f"more than {MAX_PICKLE_BYTES} bytes, more than pickled statistics hold")
    try:
        statistics = _StatisticsUnpickler(io.BytesIO(raw)).load()  # trusted by the caller, and restricted
    except Exception as error:  # a damaged or foreign pickle fails in any way
        raise StatisticsFileError(
            f"cannot be unpickled as VecNormalize statistics: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(statistics, VecNormalize):
        raise StatisticsFileError(
            f"it holds a pickled {type(statistics).__name__}, not VecNormalize statistics "
            "(VecNormalize.save())"
        )
    try:
        finite = finite_statistics(statistics)
    except (AttributeError, TypeError) as error:
        raise StatisticsFileError(f"incomplete VecNormalize statistics: {error}") from None
    if not finite:
        raise StatisticsFileError("the pickled statistics hold NaN or inf")
    return statistics


def convert_sb3_normalization(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Write Stable-Baselines3's pickled statistics at ``source`` to ``target`` in the safe format of
    :func:`save_normalization`, the same settings and statistics. ``source`` is unpickled
    (:func:`read_sb3_normalization`): **only for a file you trust.**

    Raises:
        StatisticsFileError: ``source`` is not pickled ``VecNormalize`` statistics (see
            :func:`read_sb3_normalization`; sb3-acer's own ``.npz`` is refused as needing no conversion).
        CLIError: the statistics are of ``Dict`` observations, which the safe format does not hold.
        OSError: ``source`` cannot be read or ``target`` written.
    """
    source = pathlib.Path(source)
    if not _is_pickle(source):
        raise StatisticsFileError(
            "not a pickle, as Stable-Baselines3's VecNormalize statistics (vecnormalize.pkl) are; an "
            ".npz that sb3-acer train or save_normalization wrote needs no conversion"
        )
    save_normalization(read_sb3_normalization(source), target)


def finite_statistics(env: VecNormalize) -> bool:
    """Whether ``VecNormalize``'s running statistics hold no NaN or inf (a NaN observation poisons them)."""
    statistics = [env.ret_rms.mean, env.ret_rms.var]
    if env.norm_obs and isinstance(env.obs_rms, RunningMeanStd):
        statistics += [env.obs_rms.mean, env.obs_rms.var]
    return all(np.isfinite(value).all() for value in statistics)

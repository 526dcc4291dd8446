"""Checks of observations from outside: those given to ``predict`` and ``action_probability``, and those an
environment returns during ``learn`` (with its rewards and terminal observations).

Each check raises ``ValueError`` with a message that names the problem (and, for env data, the env index,
the key of a Dict observation and the step) before the data reaches a network or the replay memory.

What ``predict`` / ``action_probability`` accept, by observation space:

- every space but ``Dict``: an array (or nested list / scalar) of numbers of shape ``space.shape`` or
  ``(n, *shape)`` with ``n`` at least 1 (SB3's ``predict`` fails inside torch on an empty batch); strings,
  objects, complex numbers, dicts and tuples are refused;
- ``Dict``: a dict with exactly the space's keys, each value what its subspace accepts, all single
  observations or all batches of the same ``n``;
- ``Box`` with a float dtype: values finite in float32, which the networks compute in (NaN, +-inf and values
  beyond +-3.4e38, such as 1e308, are refused); values outside ``[low, high]`` are accepted, because
  ``VecNormalize`` and many envs produce them while keeping the declared bounds;
- ``Box`` with an integer dtype (images): values within ``[low, high]``;
- ``Discrete(n)``: integers in ``[0, n)`` (a float such as ``2.0`` is refused: SB3 would truncate ``2.7``);
- ``MultiDiscrete(nvec)``: integers in ``[0, nvec)`` element-wise;
- ``MultiBinary``: values in ``{0, 1}`` (any numeric dtype).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.preprocessing import is_image_space, maybe_transpose

__all__ = ["check_dict_observation", "check_env_step", "check_observation"]

_NUMERIC_KINDS = "biuf"


def _first_bad(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.argwhere(mask)[0])


def _outside(array: np.ndarray, space: spaces.Space) -> tuple[np.ndarray | None, str]:
    """Where ``array`` holds values no observation of ``space`` holds (``None``: any value may be), and the
    words that say it of the first (with ``{value}``, ``{index}`` and ``{space}``): integers of ``[0, n)``
    for ``Discrete`` and ``MultiDiscrete``, 0 or 1 for ``MultiBinary``, the bounds of an integer ``Box``."""
    if isinstance(space, spaces.Discrete | spaces.MultiDiscrete):
        upper = space.n if isinstance(space, spaces.Discrete) else space.nvec
        return (array < 0) | (
            array >= upper
        ), "observation {value} at index {index} is outside {space} (valid: 0 .. n-1)"
    if isinstance(space, spaces.MultiBinary):
        return (array != 0) & (array != 1), "MultiBinary observations must be 0 or 1, got {value}"
    if isinstance(space, spaces.Box) and np.dtype(space.dtype).kind in "iub":
        return (
            (array < space.low) | (array > space.high),
            "observation value {value} at index {index} is outside the bounds of {space}",
        )
    return None, ""


def check_observation(observation: Any, space: spaces.Space) -> np.ndarray | dict[str, np.ndarray]:
    """Check one observation or a batch for ``predict`` and return it as an array (images channel-first),
    or for a ``Dict`` space as a dict of them.

    Raises:
        ValueError: if the observation's type, shape, dtype or values do not fit ``space``.
    """
    if isinstance(observation, tuple) and len(observation) == 2 and isinstance(observation[1], dict):
        raise ValueError(
            "observation is a tuple (observation, info), as Gymnasium's env.reset() returns it: pass only "
            "the observation (obs, info = env.reset()); a VecEnv's reset() returns the observations alone "
            "(SB3's words: you are probably mixing Gym API with SB3 VecEnv API)"
        )
    if isinstance(space, spaces.Dict):
        return check_dict_observation(observation, space)
    if isinstance(observation, dict | tuple):
        raise ValueError(f"observation must be an array for {space}, got {type(observation).__name__}")
    try:
        array = np.asarray(observation)
    except (ValueError, TypeError) as error:
        raise ValueError(f"observation cannot be read as an array of numbers for {space}: {error}") from error
    if array.dtype.kind not in _NUMERIC_KINDS:
        raise ValueError(
            f"observation must hold numbers (bool, int or float) for {space}, got dtype {array.dtype}"
        )
    if is_image_space(space):
        # The model sees images channel-first (VecTransposeImage); accept them as the env returns them.
        array = maybe_transpose(array, space)
    shape = space.shape or ()
    if array.shape != shape and array.shape[1:] != shape:
        raise ValueError(
            f"observation shape {array.shape} matches neither the observation space {shape} "
            f"nor a batch of it (n, *{shape})"
        )
    if array.shape != shape and array.shape[0] == 0:
        raise ValueError(
            f"observation is an empty batch, of shape {array.shape}: give at least one observation"
        )
    # The networks take float32: 1e308 becomes inf there.
    if array.dtype.kind == "f" and not (np.abs(array) <= np.finfo(np.float32).max).all():
        index = _first_bad(~(np.abs(np.atleast_1d(array)) <= np.finfo(np.float32).max))
        value = np.atleast_1d(array)[index]
        if np.isfinite(value):
            raise ValueError(
                f"observation holds a value float32 cannot hold at index {index}: {value} (the networks "
                "compute in float32, where it is inf)"
            )
        raise ValueError(f"observation holds a non-finite value at index {index}: {value}")
    if isinstance(space, spaces.Discrete | spaces.MultiDiscrete) and array.dtype.kind not in "iu":
        raise ValueError(f"{type(space).__name__} observations must be integers, got dtype {array.dtype}")
    outside, words = _outside(array, space)
    if outside is not None and outside.any():
        index = _first_bad(np.atleast_1d(outside))
        raise ValueError(words.format(value=np.atleast_1d(array)[index], index=index, space=space))
    return array


def check_dict_observation(observation: Any, space: spaces.Dict) -> dict[str, np.ndarray]:
    """Check one observation or a batch of a ``Dict`` space for ``predict`` and return it as a dict of
    arrays (image keys channel-first): the space's keys, each checked by :func:`check_observation`, all
    single observations or all batches of the same size.

    Raises:
        ValueError: naming the key whose value does not fit, or the keys missing or unknown.
    """
    if not isinstance(observation, Mapping):
        raise ValueError(
            f"observation must be a dict of arrays with the keys {list(space.spaces)} for the Dict "
            f"observation space {space}, got {type(observation).__name__}"
        )
    missing, unknown = set(space.spaces) - set(observation), set(observation) - set(space.spaces)
    if missing or unknown:
        raise ValueError(
            f"observation keys {sorted(map(str, observation))} differ from the Dict observation space's "
            f"{sorted(space.spaces)}: missing {sorted(missing)}, unknown {sorted(map(str, unknown))}"
        )
    arrays: dict[str, np.ndarray] = {}
    batch_sizes: dict[str, int | None] = {}
    for key, subspace in space.spaces.items():
        try:
            array = check_observation(observation[key], subspace)
        except ValueError as error:
            raise ValueError(f"observation[{key!r}]: {error}") from None
        assert isinstance(array, np.ndarray)
        arrays[key] = array
        batch_sizes[key] = None if array.shape == (subspace.shape or ()) else int(array.shape[0])
    if len(set(batch_sizes.values())) > 1:
        sizes = ", ".join(f"{key!r}: {'single' if n is None else n}" for key, n in batch_sizes.items())
        raise ValueError(
            f"the keys of a Dict observation must all be single observations or batches of the same size, "
            f"got {sizes}"
        )
    return arrays


def _non_finite_envs(values: np.ndarray, n_envs: int) -> np.ndarray:
    values = np.asarray(values)
    if values.dtype.kind != "f" and values.dtype.kind != "c":
        if values.dtype.kind in _NUMERIC_KINDS:
            return np.zeros(0, dtype=np.int64)
        raise ValueError(f"expected numbers, got dtype {values.dtype}")
    finite = np.isfinite(values.reshape(n_envs, -1)).all(axis=1)
    return np.flatnonzero(~finite)


def _observation_parts(observations: Any) -> list[tuple[str, np.ndarray]]:
    """``observations`` as ``(where, array)`` pairs: one for an array, one per key for a dict of arrays
    (``where`` names the key in a message)."""
    if isinstance(observations, Mapping):
        return [(f" (key {key!r})", np.asarray(value)) for key, value in observations.items()]
    return [("", np.asarray(observations))]


def _shown(what: str, array: np.ndarray, whole: bool, env: int) -> str:
    """``what`` and the observation of env ``env`` in ``array`` (all of ``array`` if ``whole``)."""
    return f"{what}: {(array if whole else array[env]).tolist()}"


def check_env_step(
    *,
    observations: np.ndarray | Mapping[str, np.ndarray],
    rewards: np.ndarray | None = None,
    infos: Sequence[dict[str, Any]] = (),
    num_timesteps: int,
    what: str = "step",
) -> None:
    """Raise ``ValueError`` if the env returned a non-finite observation, reward or terminal observation.

    Args:
        observations: ``[E, ...]`` observations of the vector env (a dict of them for Dict observations).
        rewards: ``[E]`` rewards (``None`` after a reset).
        infos: the step's info dicts (their ``terminal_observation`` is checked too).
        num_timesteps: the model's step counter before this step, named in the message.
        what: ``"step"`` or ``"reset"``, named in the message.
    """
    parts = _observation_parts(observations)
    where = f"at num_timesteps={num_timesteps} ({what})"
    # (values [E, ...] of the envs, which env is first, how the message shows env e's value)
    found: list[tuple[np.ndarray, int, Callable[[int], str]]] = []
    if rewards is not None:
        found.append(
            (np.asarray(rewards, dtype=np.float64), 0, lambda e: f"reward {np.asarray(rewards)[e]} {where}")
        )
    for key, array in parts:
        found.append((array, 0, functools.partial(_shown, f"observation{key} {where}", array, False)))
    for env, info in enumerate(infos):
        terminal = info.get("terminal_observation") if isinstance(info, dict) else None
        for key, array in _observation_parts(terminal) if terminal is not None else ():
            terminal_shown = functools.partial(_shown, f"terminal observation{key} {where}", array, True)
            found.append((array[None], env, terminal_shown))
    for values, first, shown in found:
        bad = _non_finite_envs(values, len(values))
        if len(bad):
            env = first + int(bad[0])
            raise ValueError(
                f"env {env} returned a non-finite {shown(env)}; check the env, or wrap it in SB3's "
                "VecCheckNan to find where the value comes from"
            )

"""Tuned hyperparameter presets, in the rl-baselines3-zoo YAML format (``acer.yml``).

Each entry is keyed by environment id; ``n_envs``, ``n_timesteps``, ``policy``, ``normalize`` and
``env_wrapper`` describe the run, every other key is an ``ACER`` constructor argument. As in the zoo,
``normalize`` is ``true`` (``VecNormalize`` with its defaults) or the string of a dict of ``VecNormalize``
arguments, e.g. ``"{'norm_obs': False, 'norm_reward': True}"``, and ``env_wrapper`` names a wrapper class
(or a list of them, each a name or a one-item ``{name: kwargs}`` mapping) applied to each env outside its
``Monitor``; the names it accepts are :data:`ENV_WRAPPERS`.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, NamedTuple

import gymnasium as gym
import yaml
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from torch import nn, optim

__all__ = [
    "ENV_WRAPPERS",
    "NORMALIZE_KEYS",
    "Preset",
    "WrapperSpec",
    "available_presets",
    "env_wrappers",
    "evaluation_normalization",
    "load_preset",
    "normalize_kwargs",
    "resolve_policy_kwargs",
    "wrapper_class",
]

RUN_KEYS = ("n_envs", "n_timesteps", "policy", "normalize", "env_wrapper")
#: The ``VecNormalize`` arguments a ``normalize`` dict may set (``gamma`` comes from the run's ``gamma``).
NORMALIZE_KEYS = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "epsilon")
#: The wrappers an ``env_wrapper`` setting may name, by their import path (the zoo's spelling). A short name
#: (the part after the last dot) names the same class. Only these are imported: a preset or a run's
#: ``.json`` file names a class, it never makes Python import an arbitrary module.
ENV_WRAPPERS = ("sb3_contrib.common.wrappers.TimeFeatureWrapper",)


class WrapperSpec(NamedTuple):
    """One wrapper of an ``env_wrapper`` setting: its import path (one of :data:`ENV_WRAPPERS`) and the
    keyword arguments it is built with; plain data, as a run's ``.json`` file stores it."""

    name: str
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class Preset:
    """A tuned configuration for one environment."""

    env_id: str
    n_envs: int
    n_timesteps: int
    policy: str
    normalize: bool
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    #: ``VecNormalize`` arguments when ``normalize`` is set (empty: its defaults).
    normalize_kwargs: dict[str, Any] = field(default_factory=dict)
    #: Wrappers applied to each env outside its ``Monitor``, in order (:func:`env_wrappers`).
    env_wrapper: tuple[WrapperSpec, ...] = ()


def _read() -> dict[str, dict[str, Any]]:
    text = resources.files(__package__).joinpath("acer.yml").read_text()
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError("acer.yml must map environment ids to settings")
    return data


def available_presets() -> list[str]:
    """Environment ids that have a preset."""
    return sorted(_read())


def load_preset(env_id: str) -> Preset:
    """The preset for ``env_id``, its ``policy_kwargs`` class names resolved (:func:`resolve_policy_kwargs`).

    Raises:
        KeyError: no preset exists for ``env_id``.
    """
    data = _read()
    if env_id not in data:
        raise KeyError(f"no ACER preset for {env_id!r}; presets exist for {', '.join(sorted(data))}")
    entry = dict(data[env_id])
    if "policy_kwargs" in entry:
        entry["policy_kwargs"] = resolve_policy_kwargs(entry["policy_kwargs"])
    normalize = normalize_kwargs(entry.pop("normalize", False))
    wrappers = env_wrappers(entry.pop("env_wrapper", None))
    return Preset(
        env_id=env_id,
        n_envs=int(entry.pop("n_envs", 1)),
        n_timesteps=int(float(entry.pop("n_timesteps", 1e6))),
        policy=str(entry.pop("policy", "MlpPolicy")),
        normalize=normalize is not None,
        hyperparameters=entry,
        normalize_kwargs=normalize or {},
        env_wrapper=wrappers,
    )


def normalize_kwargs(value: Any) -> dict[str, Any] | None:
    """The ``VecNormalize`` arguments a ``normalize`` setting asks for, ``None`` for no normalisation.

    ``True`` gives ``{}`` (observations and rewards, ``VecNormalize``'s defaults); a dict, or its string as a
    zoo YAML file writes it, gives its items, each one of :data:`NORMALIZE_KEYS`.

    Raises:
        ValueError: anything else, naming the problem.
    """
    if isinstance(value, str):
        with contextlib.suppress(ValueError, SyntaxError):
            value = ast.literal_eval(value)
    if value is True:
        return {}
    if value is False or value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(
            "normalize must be True, False or a dict of VecNormalize arguments "
            f"({', '.join(NORMALIZE_KEYS)}), got {value!r}"
        )
    for key, item in value.items():
        if key not in NORMALIZE_KEYS:
            raise ValueError(
                f"normalize: unknown VecNormalize argument {key!r}; accepted: {', '.join(NORMALIZE_KEYS)}"
            )
        if key.startswith("norm_") and not isinstance(item, bool):
            raise ValueError(f"normalize: {key} must be True or False, got {item!r}")
        if not key.startswith("norm_") and (
            isinstance(item, bool) or not isinstance(item, (int, float)) or not item > 0
        ):
            raise ValueError(f"normalize: {key} must be a positive number, got {item!r}")
    return dict(value)


def env_wrappers(value: Any) -> tuple[WrapperSpec, ...]:
    """The wrappers an ``env_wrapper`` setting asks for, in the order they wrap the env (the first is
    innermost); ``None`` or an empty list for none.

    As in the zoo, the setting is a name, a one-item mapping ``{name: kwargs}``, or a list of these; each name
    is one of :data:`ENV_WRAPPERS` or its last part, e.g. ``TimeFeatureWrapper``. A string holding a list or
    a mapping, as ``--hyperparams`` passes it, is read as one. Keyword arguments are checked against the
    class's signature, so a typo fails here rather than when the env is built.

    Raises:
        ValueError: an unknown name, a malformed entry or an argument the wrapper does not take.
    """
    if isinstance(value, str) and value[:1] in "[{":
        with contextlib.suppress(ValueError, SyntaxError):
            value = ast.literal_eval(value)
    if value is None or value is False:
        return ()
    entries = value if isinstance(value, (list, tuple)) else [value]
    specs = []
    for entry in entries:
        if isinstance(entry, dict) and len(entry) == 1:
            ((name, kwargs),) = entry.items()
            kwargs = {} if kwargs is None else kwargs
        else:
            name, kwargs = entry, {}
        if not isinstance(name, str) or not isinstance(kwargs, dict):
            raise ValueError(
                "env_wrapper must be a wrapper name, a {name: kwargs} mapping or a list of these, "
                f"got {entry!r}"
            )
        full = next((path for path in ENV_WRAPPERS if name in (path, path.rpartition(".")[2])), None)
        if full is None:
            raise ValueError(f"env_wrapper: unknown wrapper {name!r}; accepted: {', '.join(ENV_WRAPPERS)}")
        try:
            inspect.signature(_wrapper(full)).bind(None, **kwargs)
        except TypeError as error:
            raise ValueError(f"env_wrapper: {name}: {error}") from None
        specs.append(WrapperSpec(full, dict(kwargs)))
    return tuple(specs)


def _wrapper(path: str) -> type[gym.Wrapper]:
    module, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except ImportError as error:
        raise ValueError(f"env_wrapper {path} needs {error.name}: pip install sb3-contrib") from None
    return cls


def wrapper_class(specs: tuple[WrapperSpec, ...]) -> Callable[[gym.Env], gym.Env] | None:
    """A function applying ``specs`` to one env (``make_vec_env``'s ``wrapper_class``); ``None`` for none."""
    if not specs:
        return None
    classes = [(_wrapper(spec.name), spec.kwargs) for spec in specs]

    def wrap(env: gym.Env) -> gym.Env:
        for cls, kwargs in classes:
            try:
                env = cls(env, **kwargs)
            except AssertionError as error:  # sb3-contrib checks the observation space with assert
                env.close()  # the Monitor inside has opened its log file
                raise ValueError(f"env_wrapper {cls.__name__}: {error}") from None
        return env

    return wrap


def evaluation_normalization(venv: VecEnv, like: VecNormalize) -> VecNormalize:
    """``venv`` in a frozen ``VecNormalize`` for evaluation: observations normalised as ``like`` does, with a
    copy of its current statistics, which are never updated; rewards unscaled."""
    env = VecNormalize(
        venv,
        training=False,
        norm_obs=like.norm_obs,
        norm_reward=False,
        clip_obs=like.clip_obs,
        clip_reward=like.clip_reward,
        gamma=like.gamma,
        epsilon=like.epsilon,
    )
    if like.norm_obs:
        env.obs_rms = copy.deepcopy(like.obs_rms)
    return env


def resolve_policy_kwargs(policy_kwargs: Any) -> Any:
    """Turn class names in ``policy_kwargs``, as a YAML preset or a command line can only give them, into
    the classes: ``activation_fn="ReLU"`` (or ``"nn.ReLU"``) into a ``torch.nn`` class and
    ``optimizer_class="Adam"`` (or ``"optim.Adam"``) into a ``torch.optim`` class.

    Raises:
        ValueError: a name that is not such a class.
    """
    if not isinstance(policy_kwargs, dict):
        return policy_kwargs
    resolved = dict(policy_kwargs)
    for key, module, base in (("activation_fn", nn, nn.Module), ("optimizer_class", optim, optim.Optimizer)):
        name = resolved.get(key)
        if not isinstance(name, str):
            continue
        short = name.removeprefix("torch.").removeprefix(f"{module.__name__.rpartition('.')[2]}.")
        value = getattr(module, short, None)
        if not (isinstance(value, type) and issubclass(value, base)):
            raise ValueError(f"policy_kwargs: {key} {name!r} is not a {module.__name__} class")
        resolved[key] = value
    return resolved

"""Checks of what enters the model from outside: hyperparameters, spaces, policy and optimizer settings,
``learn``'s arguments, loaded tensors and actions.

Each check raises ``ValueError`` (:class:`UnsupportedSpaceError` for spaces) with a message that names the
problem before it reaches a network, the replay memory or the weights. Observations (given to ``predict``,
returned by an env) are checked by :mod:`sb3_acer.common.checks.observations`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import maybe_make_env
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import FlattenExtractor, NatureCNN
from stable_baselines3.common.type_aliases import GymEnv

from sb3_acer.common.schedules import LR_SCHEDULES
from sb3_acer.envs.mujoco import require_mujoco

__all__ = [
    "MAX_COUNT",
    "MAX_NUM_PROCS",
    "OPTIMIZER_KEYS",
    "UnsupportedSpaceError",
    "UnsupportedSpaceTypeError",
    "as_tensor",
    "check_actions",
    "check_count",
    "check_dict_space",
    "check_finite",
    "check_hyperparameters",
    "check_learn_arguments",
    "check_observation_space",
    "check_optimizer_kwargs",
    "check_policy",
    "check_policy_kwargs",
    "check_policy_observations",
    "check_policy_takes",
    "check_seed",
    "check_spaces",
    "features_extractor_of",
    "keyword_check",
    "optimizer_problem",
    "supported_env",
]

#: ``policy_kwargs`` entries that configure the optimizer rather than the networks (as in SB3).
OPTIMIZER_KEYS = ("optimizer_class", "optimizer_kwargs")
#: Most torch threads ``num_procs`` may ask for (``torch.set_num_threads(10**6)`` kills the process).
MAX_NUM_PROCS = 1024
#: Largest step or update count a model keeps (an int64, as NumPy and the logger hold it).
MAX_COUNT = 2**63 - 1
#: torch optimizers that cannot train ACER's networks whatever their settings, by name, and why.
_UNUSABLE_OPTIMIZERS = {
    "SparseAdam": "it takes only sparse gradients, and ACER's networks have dense ones",
    "Muon": "it takes only 2-D parameters, and ACER's networks have biases",
}


class UnsupportedSpaceError(ValueError):
    """An action or observation space that ACER cannot handle."""


class UnsupportedSpaceTypeError(UnsupportedSpaceError, NotImplementedError):
    """An observation space of a kind ACER takes in no form (``Tuple``, a ``Dict`` nested in a ``Dict``,
    ...): an :class:`UnsupportedSpaceError` that is also the ``NotImplementedError`` SB3 raises for it."""


# ---------------------------------------------------------------------- hyperparameters


def _is_number(value: Any) -> bool:
    # An integer too large for a float (10**400) is no setting: every one is used as a float.
    if not isinstance(value, int | float | np.integer | np.floating) or isinstance(value, bool):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


def _is_integer(value: Any) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _must(rule: str) -> str:
    return "{name} " + rule + ", got {value!r}"


#: Type rules, checked first: every name of a group must pass the group's test.
_TYPE_RULES: tuple[tuple[tuple[str, ...], Callable[[Any], bool], str], ...] = (
    (("n_steps", "buffer_size", "replay_start"), _is_integer, "must be an integer"),
    (
        ("gamma", "q_coef", "ent_coef", "rprop_alpha", "rprop_epsilon", "replay_ratio"),
        lambda v: _is_number(v) and bool(np.isfinite(v)),
        "must be a finite number",
    ),
    (("correction_term", "delta", "alpha"), _is_number, "must be a number"),
    (
        ("trust_region", "handle_timeout_termination"),
        lambda v: isinstance(v, bool | np.bool_),
        "must be True or False",
    ),
)

#: Value rules, checked in this order once the types are right: ``(name, test of all the settings,
#: message)``; the message may name ``{name}``, ``{value}``, ``{n_steps}`` and ``{buffer_size}``.
#: ``verbose`` and ``tensorboard_log`` are only among the constructor's settings.
_VALUE_RULES: tuple[tuple[str, Callable[[dict[str, Any]], Any], str], ...] = (
    ("n_steps", lambda p: p["n_steps"] > 0, _must("must be positive")),
    ("gamma", lambda p: 0.0 <= p["gamma"] <= 1.0, _must("must be in [0, 1]")),
    ("replay_ratio", lambda p: p["replay_ratio"] >= 0, _must("must be non-negative")),
    (
        "buffer_size",
        lambda p: not p["replay_ratio"] > 0 or p["buffer_size"] >= p["n_steps"],
        _must("must be at least n_steps ({n_steps}) to hold one segment"),
    ),
    (
        "replay_start",
        lambda p: not p["replay_ratio"] > 0 or p["replay_start"] <= p["buffer_size"],
        _must("must not exceed buffer_size ({buffer_size}) or replay never starts"),
    ),
    ("replay_start", lambda p: p["replay_start"] >= 0, _must("must be non-negative")),
    ("correction_term", lambda p: p["correction_term"] > 0, _must("must be positive")),
    ("delta", lambda p: p["delta"] > 0, _must("must be positive")),
    ("alpha", lambda p: 0.0 <= p["alpha"] < 1.0, _must("must be in [0, 1)")),
    (
        "retrace_lambda",
        lambda p: _is_number(p["retrace_lambda"]) and 0.0 <= p["retrace_lambda"] <= 1.0,
        _must("must be a number in [0, 1]"),
    ),
    (
        "stats_window_size",
        lambda p: _is_integer(p["stats_window_size"]) and 0 < p["stats_window_size"] <= MAX_COUNT,
        _must("must be a positive integer at most 2**63 - 1"),
    ),
    ("rprop_alpha", lambda p: 0.0 < p["rprop_alpha"] <= 1.0, _must("must be in (0, 1]")),
    ("rprop_epsilon", lambda p: p["rprop_epsilon"] > 0, _must("must be positive")),
    ("q_coef", lambda p: p["q_coef"] >= 0, _must("must be non-negative")),
    ("ent_coef", lambda p: p["ent_coef"] >= 0, _must("must be non-negative")),
    (
        "max_grad_norm",
        lambda p: p["max_grad_norm"] is None or (_is_number(p["max_grad_norm"]) and p["max_grad_norm"] > 0),
        _must("must be a positive number or None (no clipping)"),
    ),
    (
        "learning_rate",
        lambda p: (
            callable(p["learning_rate"])
            or (_is_number(p["learning_rate"]) and np.isfinite(p["learning_rate"]) and p["learning_rate"] > 0)
        ),
        _must("must be a positive finite number or a schedule (callable of progress remaining)"),
    ),
    (
        "lr_schedule",
        lambda p: p["lr_schedule"] in LR_SCHEDULES,
        "unknown lr_schedule {value!r}; choose one of " + str(sorted(LR_SCHEDULES)),
    ),
    (
        "q_lr_ratio",
        lambda p: _is_number(p["q_lr_ratio"]) and np.isfinite(p["q_lr_ratio"]) and p["q_lr_ratio"] > 0,
        _must("must be a positive number"),
    ),
    (
        # torch.set_num_threads of a huge number kills the process (segmentation fault).
        "num_procs",
        lambda p: (
            p["num_procs"] is None
            or (isinstance(p["num_procs"], int | np.integer) and 0 < p["num_procs"] <= MAX_NUM_PROCS)
        ),
        _must(f"must be a positive integer at most {MAX_NUM_PROCS}, or None"),
    ),
    (
        "verbose",
        lambda p: isinstance(p.get("verbose", 0), int | np.integer) and p.get("verbose", 0) >= 0,
        _must("must be a non-negative integer"),
    ),
    (
        "tensorboard_log",
        lambda p: p.get("tensorboard_log") is None or isinstance(p["tensorboard_log"], str | os.PathLike),
        _must("must be a folder path (str or os.PathLike) or None"),
    ),
)


def check_hyperparameters(params: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first invalid hyperparameter of the constructor's arguments
    ``params`` (before anything is built): first the types, then the values, in a fixed order."""
    for names, test, rule in _TYPE_RULES:
        for name in names:
            if not test(params[name]):
                raise ValueError(f"{name} {rule}, got {params[name]!r}")
    for name, check, message in _VALUE_RULES:
        if not check(params):
            raise ValueError(
                message.format(
                    name=name,
                    value=params.get(name),
                    n_steps=params["n_steps"],
                    buffer_size=params["buffer_size"],
                )
            )
    check_seed(params.get("seed"))
    device = params.get("device", "auto")
    if not isinstance(device, th.device) and device != "auto":
        try:
            th.device(device)
        except (RuntimeError, TypeError, ValueError) as error:
            raise ValueError(f"device {device!r} is not a torch device: {error}") from None


def check_count(value: Any, name: str, minimum: int = 0) -> int:
    """``value`` if it is an integer (not a bool) in ``[minimum, MAX_COUNT]``; ``ValueError`` naming
    ``name`` otherwise."""
    if not _is_integer(value) or not minimum <= value <= MAX_COUNT:
        raise ValueError(f"{name} must be an integer in [{minimum}, 2**63 - 1], got {value!r}")
    return int(value)


def check_seed(seed: Any, name: str = "seed") -> None:
    """Raise ``ValueError`` unless ``seed`` is ``None`` or an integer numpy and torch both accept."""
    if seed is not None and (not _is_integer(seed) or not 0 <= seed <= 2**32 - 1):
        raise ValueError(f"{name} must be an integer in [0, 2**32 - 1], got {seed!r}")


def check_learn_arguments(
    total_timesteps: Any,
    callback: Any,
    seed: Any,
    log_interval: Any,
    tb_log_name: Any,
    has_env: bool = True,
) -> None:
    """Raise ``ValueError`` (``TypeError`` for the callback) naming the first argument ``learn`` refuses,
    or saying that the model (``has_env`` false) has no environment to learn on."""
    # A whole number written as a float (learn(1e5), the zoo's n_timesteps) counts, as in SB3.
    whole_float = isinstance(total_timesteps, float) and float(total_timesteps).is_integer()
    if not (_is_integer(total_timesteps) or whole_float) or total_timesteps < 0:
        raise ValueError(f"total_timesteps must be a non-negative integer, got {total_timesteps!r}")
    if not has_env:
        raise ValueError("this model has no environment; pass one to ACER.load(..., env=...) or set_env()")
    if log_interval is not None and (not _is_integer(log_interval) or log_interval < 0):
        raise ValueError(f"log_interval must be a non-negative integer or None, got {log_interval!r}")
    if not isinstance(tb_log_name, str):
        raise ValueError(f"tb_log_name must be a string, got {tb_log_name!r}")
    check_seed(seed)
    callbacks = callback if isinstance(callback, list) else [callback]
    if not all(c is None or isinstance(c, BaseCallback) or callable(c) for c in callbacks):
        raise TypeError(
            "callback must be an SB3 BaseCallback, a list of them, a callable (locals, globals) -> bool "
            f"(SB2's), or None; got {callback!r}"
        )


# ---------------------------------------------------------------------- policy and optimizer settings


def check_policy(policy: Any, aliases: dict[str, type], base: tuple[type, ...]) -> type:
    """The policy class that ``policy`` (a class or one of ``aliases``) names, after checking that it is a
    subclass of one of ``base``.

    Raises:
        ValueError: naming what is wrong.
    """
    if isinstance(policy, str) and policy not in aliases:
        raise ValueError(f"unknown policy {policy!r}; choose one of {sorted(aliases)} or a class")
    if not isinstance(policy, str) and not (isinstance(policy, type) and issubclass(policy, base)):
        raise ValueError(
            "policy must be an ACERPolicy, RecurrentACERPolicy or SDNPolicy subclass or one of "
            f"{sorted(aliases)}"
        )
    return aliases[policy] if isinstance(policy, str) else policy


def keyword_check(cls: type, given: dict[str, Any], positional: set[str]) -> tuple[set[str], set[str]]:
    """The keywords of ``given`` that ``cls.__init__`` does not take, and those it takes (less
    ``positional``); no unknown ones if it takes ``**kwargs``."""
    parameters = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
    accepted = set(parameters) - {"self"} - positional
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return set(), accepted
    return set(given) - accepted, accepted


def check_policy_kwargs(policy_classes: tuple[type, ...], policy_kwargs: Any) -> None:
    """Raise ``ValueError`` unless ``policy_kwargs`` is ``None`` or a dict of keywords one of
    ``policy_classes`` takes (besides the :data:`OPTIMIZER_KEYS`), with a usable optimizer."""
    if policy_kwargs is None:
        return
    if not isinstance(policy_kwargs, dict):
        raise ValueError(f"policy_kwargs must be a dict, got {type(policy_kwargs).__name__}")
    network_kwargs = {key: value for key, value in policy_kwargs.items() if key not in OPTIMIZER_KEYS}
    unknown, accepted = set(network_kwargs), set()
    for policy_class in policy_classes:
        not_taken, taken = keyword_check(policy_class, network_kwargs, {"observation_space", "action_space"})
        unknown &= not_taken
        accepted |= taken
    if unknown:
        accepted |= set(OPTIMIZER_KEYS)
        raise ValueError(f"Unknown keywords for policy: {sorted(unknown)}; accepted: {sorted(accepted)}")
    check_optimizer_kwargs(policy_kwargs)


def check_optimizer_kwargs(policy_kwargs: dict[str, Any]) -> None:
    """Raise ``ValueError`` unless ``policy_kwargs``' ``optimizer_class`` is a torch optimizer and its
    ``optimizer_kwargs`` are keywords it takes (less ``lr``, which follows ``learning_rate``)."""
    optimizer_class = policy_kwargs.get("optimizer_class")
    optimizer_kwargs = policy_kwargs.get("optimizer_kwargs")
    if optimizer_class is None:
        if optimizer_kwargs:
            raise ValueError(
                "policy_kwargs: optimizer_kwargs needs an optimizer_class; the default RMSProp takes "
                "rprop_alpha and rprop_epsilon"
            )
        return
    if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, th.optim.Optimizer)):
        raise ValueError(
            "policy_kwargs: optimizer_class must be a torch.optim.Optimizer subclass, "
            f"got {optimizer_class!r}"
        )
    problem = optimizer_problem(optimizer_class)
    if problem is not None:
        raise ValueError(
            f"policy_kwargs: optimizer_class {optimizer_class.__name__} cannot train ACER: {problem}"
        )
    if optimizer_kwargs is None:
        return
    if not isinstance(optimizer_kwargs, dict):
        raise ValueError(
            f"policy_kwargs: optimizer_kwargs must be a dict, got {type(optimizer_kwargs).__name__}"
        )
    if "lr" in optimizer_kwargs:
        raise ValueError(
            "policy_kwargs: optimizer_kwargs must not set 'lr'; the step size is learning_rate "
            "(with lr_schedule)"
        )
    unknown, accepted = keyword_check(optimizer_class, optimizer_kwargs, {"params", "lr"})
    if unknown:
        raise ValueError(
            f"policy_kwargs: unknown optimizer_kwargs {sorted(unknown)} for {optimizer_class.__name__}; "
            f"accepted: {sorted(accepted)}"
        )


def optimizer_problem(optimizer_class: type[th.optim.Optimizer]) -> str | None:
    """Why ``optimizer_class`` cannot train ACER's networks (``None`` if it can): its ``step`` needs a
    closure (``LBFGS``: ACER steps once per update, with the gradients already computed), or it is one of
    torch's optimizers that refuse dense gradients or one-dimensional parameters."""
    closure = inspect.signature(optimizer_class.step).parameters.get("closure")
    if closure is not None and closure.default is inspect.Parameter.empty:
        return (
            "its step needs a closure that evaluates the loss again, and ACER steps on gradients it computed"
        )
    for name, problem in _UNUSABLE_OPTIMIZERS.items():
        unusable = getattr(th.optim, name, None)  # Muon is in torch 2.9 and later
        if unusable is not None and issubclass(optimizer_class, unusable):
            return problem
    return None


# ---------------------------------------------------------------------- spaces


def supported_env(env: GymEnv | str | None, verbose: int, needed: bool) -> GymEnv | None:
    """``env`` (made from its id if need be) once its spaces are checked: unsupported spaces are refused
    before BaseAlgorithm wraps the env, whose own checks are asserts (e.g. on unbounded Box actions) or name
    another algorithm's policies (Dict observations). ``needed``: the networks are built now."""
    if env is None:
        if needed:
            raise ValueError(
                "ACER needs an environment to build its networks: pass env (an env id, a gymnasium Env or "
                "a VecEnv); ACER.load(path) reads a saved model without one"
            )
        return None
    if isinstance(env, str):
        require_mujoco(env)
    env = maybe_make_env(env, verbose)
    check_spaces(env.observation_space, env.action_space)
    return env


def check_spaces(observation_space: spaces.Space, action_space: spaces.Space) -> None:
    """Raise :class:`UnsupportedSpaceError` unless ACER can use these spaces."""
    if not isinstance(action_space, spaces.Discrete | spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary):
        raise UnsupportedSpaceError(
            f"ACER supports Discrete, Box, MultiDiscrete and MultiBinary action spaces, got {action_space} "
            f"({type(action_space).__name__} actions are not supported)"
        )
    if isinstance(action_space, spaces.Box) and not np.isfinite([action_space.low, action_space.high]).all():
        # SB3's convention (the env gets the action clipped to the bounds) needs finite bounds.
        raise UnsupportedSpaceError(f"ACER needs Box action spaces with finite bounds, got {action_space}")
    if isinstance(observation_space, spaces.Dict):
        check_dict_space(observation_space)
    else:
        check_observation_space(observation_space)
    # Actions are sampled as 0 .. n-1 and observations one-hot encoded from 0 (as in SB3): a space
    # with another start would silently get wrong actions or fail deep inside the network.
    for kind, space in (("action", action_space), ("observation", observation_space)):
        if isinstance(space, spaces.Discrete | spaces.MultiDiscrete) and np.any(space.start != 0):
            raise UnsupportedSpaceError(
                f"ACER needs {type(space).__name__} {kind} spaces that start at 0, got {space} "
                f"(start={space.start}); shift the {kind}s with a wrapper"
            )


def check_dict_space(observation_space: spaces.Dict) -> None:
    """Raise :class:`UnsupportedSpaceError` unless every key of the ``Dict`` observation space is a string
    and its subspace one ACER takes on its own (SB3's ``CombinedExtractor`` takes nothing nested)."""
    for key, subspace in observation_space.spaces.items():
        if not isinstance(key, str):
            raise UnsupportedSpaceError(
                f"ACER needs the keys of a Dict observation space to be strings, got {key!r} in "
                f"{observation_space}"
            )
        if isinstance(subspace, spaces.Dict | spaces.Tuple):
            raise UnsupportedSpaceTypeError(
                f"ACER does not support nested observation spaces: key {key!r} of the Dict observation "
                f"space is a {type(subspace).__name__} ({subspace}); flatten it into keys of the outer Dict "
                "with a wrapper"
            )
        try:
            check_observation_space(subspace)
            if isinstance(subspace, spaces.Discrete | spaces.MultiDiscrete) and np.any(subspace.start != 0):
                raise UnsupportedSpaceError(
                    f"ACER needs {type(subspace).__name__} observation spaces that start at 0, got "
                    f"{subspace} (start={subspace.start}); shift the observations with a wrapper"
                )
        except UnsupportedSpaceError as error:
            raise type(error)(f"key {key!r} of the Dict observation space: {error}") from None


def check_observation_space(observation_space: spaces.Space) -> None:
    """Raise :class:`UnsupportedSpaceError` unless ACER takes observations of this (non-``Dict``) space
    (whose start, for ``Discrete`` and ``MultiDiscrete``, :func:`check_spaces` checks)."""
    supported = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
    if not isinstance(observation_space, supported):
        raise UnsupportedSpaceTypeError(
            "ACER supports Box, Discrete, MultiDiscrete and MultiBinary observations, and Dict "
            f"observations of them (with MultiInputPolicy); got {observation_space}"
        )
    # SB3's preprocessing flattens a Box of at least one axis and a one-dimensional MultiDiscrete; these
    # others would fail deep inside learn() or with a NumPy message.
    if isinstance(observation_space, spaces.Box) and observation_space.shape == ():
        raise UnsupportedSpaceError(
            f"ACER does not support Box observations of shape () (a scalar), got {observation_space}; "
            "give them shape (1,) with a wrapper"
        )
    nvec_shape = np.shape(getattr(observation_space, "nvec", ()))
    if isinstance(observation_space, spaces.MultiDiscrete) and len(nvec_shape) != 1:
        raise UnsupportedSpaceError(
            f"ACER supports MultiDiscrete observations of one dimension, got nvec of shape {nvec_shape}: "
            f"{observation_space}; flatten them with a wrapper"
        )


def features_extractor_of(policy_class: type, policy_kwargs: dict[str, Any] | None) -> Any:
    """The features extractor class a policy builds, as its signature and ``policy_kwargs`` say (``None``
    if neither names one)."""
    extractor = (policy_kwargs or {}).get("features_extractor_class")
    for klass in policy_class.__mro__ if extractor is None else ():
        init = klass.__dict__.get("__init__")
        parameter = inspect.signature(init).parameters.get("features_extractor_class") if init else None
        if parameter is not None:  # the default of the nearest class that names it
            return parameter.default
    return extractor


def check_policy_observations(
    policy_class: type, policy_kwargs: dict[str, Any] | None, observation_space: spaces.Space
) -> None:
    """Raise :class:`UnsupportedSpaceError` if the observations are a ``Dict`` and the policy's features
    extractor takes one array (SB3's ``FlattenExtractor`` or ``NatureCNN``: the Mlp and Cnn policies), as
    SB3's algorithms do: a Dict needs ``MultiInputPolicy`` (or an extractor of dicts)."""
    if not isinstance(observation_space, spaces.Dict):
        return
    extractor = features_extractor_of(policy_class, policy_kwargs)
    if isinstance(extractor, type) and issubclass(extractor, FlattenExtractor | NatureCNN):
        name = getattr(policy_class, "__name__", "the policy")
        raise UnsupportedSpaceError(
            f"You must use `MultiInputPolicy` when working with a Dict observation space, not {name} "
            f"(its {extractor.__name__} takes one array); got {observation_space}"
        )


def check_policy_takes(
    policy_class: type, policy_kwargs: dict[str, Any], observation_space: spaces.Space
) -> None:
    """Raise :class:`UnsupportedSpaceError` if a policy on SB3's ``NatureCNN`` (the Cnn policies, as
    their signatures and ``policy_kwargs`` say) does not get images it can take. Called before building
    ACER's own Cnn policies, and for any other policy only once it failed to build, so that a subclass
    that builds is never second-guessed."""
    extractor = features_extractor_of(policy_class, policy_kwargs)
    if not (isinstance(extractor, type) and issubclass(extractor, NatureCNN)):
        return
    scaled = not policy_kwargs.get("normalize_images", True)
    name = getattr(policy_class, "__name__", "the policy")
    if not is_image_space(observation_space, check_channels=False, normalized_image=scaled):
        raise UnsupportedSpaceError(
            f"{name} needs image observations: uint8 [H, W, C] or [C, H, W] with values 0 to 255, "
            "or float images already scaled, channel-first, with "
            f"policy_kwargs=dict(normalize_images=False); got {observation_space}; use an Mlp policy "
            "for other observations"
        )
    # NatureCNN takes a float image's first axis for its channels; one whose last side is its smallest,
    # (84, 84, 3) say, is channel-last (SB3's own guess, the smallest side, refuses (48, 40, 40)).
    height, width, last = observation_space.shape  # type: ignore[misc]
    if scaled and observation_space.dtype != np.uint8 and last < min(height, width):
        raise UnsupportedSpaceError(
            f"{name}: float images must be channel-first [C, H, W] (only uint8 images are transposed), "
            f"got {observation_space}; transpose them with a wrapper"
        )


# ---------------------------------------------------------------------- tensors and actions


def as_tensor(value: Any, name: str) -> th.Tensor:
    """``value`` as a tensor (a model file's entries may hold other things torch can read safely)."""
    try:
        return th.as_tensor(value)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{name}: not a tensor ({type(value).__name__})") from None


def check_finite(tensor: th.Tensor, name: str) -> None:
    """Raise ``ValueError`` if the floating ``tensor`` holds NaN or inf (a policy that cannot act)."""
    if tensor.is_floating_point() and not bool(th.isfinite(tensor).all()):
        raise ValueError(f"{name}: holds non-finite values (NaN or inf)")


def check_actions(actions: Any, n_observations: int, n_actions: int) -> np.ndarray:
    """``actions`` (one per observation) as a flat array, after checking that they are integers in
    ``[0, n_actions)``.

    Raises:
        ValueError: if their number or their values are wrong.
    """
    actions_array = np.asarray(actions).reshape(-1)
    if actions_array.shape[0] != n_observations:
        raise ValueError(f"got {actions_array.shape[0]} actions for {n_observations} observation(s)")
    if not np.issubdtype(actions_array.dtype, np.integer) or (
        (actions_array < 0).any() or (actions_array >= n_actions).any()
    ):
        raise ValueError(f"actions must be integers in [0, {n_actions}), got {actions_array}")
    return actions_array

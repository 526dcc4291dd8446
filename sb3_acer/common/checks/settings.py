"""Checks of ACER's settings at construction: the hyperparameters (one table, :data:`HYPERPARAMETERS`),
the policy and optimizer settings, ``learn``'s arguments, loaded tensors and actions.

Each check raises ``ValueError`` with a message that names the problem before it reaches a network, the
replay memory or the weights; the rules on single values are :mod:`sb3_acer.common.checks.fields`'. Spaces
are checked by :mod:`sb3_acer.common.checks.spaces` (the five of its names that the algorithm, the
policies, the model file reader and the CLI import from here are re-exported until they import them from
there), observations (given to ``predict``, returned by an env) by
:mod:`sb3_acer.common.checks.observations`.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback

from sb3_acer.common.checks.fields import (
    BOOLEAN,
    DICT,
    FINITE_NUMBER,
    INTEGER,
    MAX_COUNT,
    NON_NEGATIVE,
    NON_NEGATIVE_INTEGER,
    NUMBER,
    POSITIVE,
    UNIT_NUMBER,
    Rule,
    check,
    choice,
    integer_in,
    is_integer,
    is_number,
    or_none,
)
from sb3_acer.common.checks.spaces import (
    UnsupportedSpaceError,
    check_policy_observations,
    check_policy_takes,
    check_spaces,
    supported_env,
)
from sb3_acer.common.schedules import LR_SCHEDULES

__all__ = [
    "HYPERPARAMETERS",
    "MAX_COUNT",
    "MAX_NUM_PROCS",
    "OPTIMIZER_KEYS",
    "SEED",
    "Hyperparameter",
    "UnsupportedSpaceError",
    "as_tensor",
    "check_actions",
    "check_count",
    "check_finite",
    "check_hyperparameters",
    "check_learn_arguments",
    "check_optimizer_kwargs",
    "check_policy",
    "check_policy_kwargs",
    "check_policy_observations",
    "check_policy_takes",
    "check_spaces",
    "keyword_check",
    "optimizer_problem",
    "supported_env",
]

#: ``policy_kwargs`` entries that configure the optimizer rather than the networks (as in SB3).
OPTIMIZER_KEYS = ("optimizer_class", "optimizer_kwargs")
#: Most torch threads ``num_procs`` may ask for (``torch.set_num_threads(10**6)`` kills the process).
MAX_NUM_PROCS = 1024
#: torch optimizers that cannot train ACER's networks whatever their settings, by name, and why.
_UNUSABLE_OPTIMIZERS = {
    "SparseAdam": "it takes only sparse gradients, and ACER's networks have dense ones",
    "Muon": "it takes only 2-D parameters, and ACER's networks have biases",
}


# ---------------------------------------------------------------------- hyperparameters


#: A seed numpy and torch both accept, or ``None``.
SEED = or_none(integer_in(0, 2**32 - 1))


@dataclass(frozen=True)
class Hyperparameter:
    """The rules of one of ACER's settings: ``type``, checked for every setting first, then each of
    ``values`` in order (their text may name ``{n_steps}`` and ``{buffer_size}``), given the value, or with
    ``across`` all the settings. ``default``: the value when the constructor's arguments lack it."""

    type: Rule | None = None
    values: tuple[Rule, ...] = ()
    across: tuple[tuple[Callable[[dict[str, Any]], bool], str], ...] = ()
    default: Any = None


def _in(low: float, high: float, closed: str = "[]") -> Rule:
    """A number in the interval ``low`` to ``high`` (``closed`` says which ends are in: ``"[]"``, ``"[)"``,
    ``"(]"``); NaN is in none."""
    above = (lambda v: v >= low) if closed[0] == "[" else (lambda v: v > low)
    below = (lambda v: v <= high) if closed[1] == "]" else (lambda v: v < high)
    return Rule(lambda v: bool(above(v) and below(v)), f"must be in {closed[0]}{low:g}, {high:g}{closed[1]}")


def _positive_finite(v: Any) -> bool:
    return is_number(v) and bool(np.isfinite(v)) and v > 0


_REPLAYS = "replay_ratio"
#: Every setting of ACER's constructor that has a rule, in the order they are checked: the one place a
#: hyperparameter's rule is stated (the constructor, and a model file's saved settings, read it).
HYPERPARAMETERS: dict[str, Hyperparameter] = {
    "n_steps": Hyperparameter(INTEGER, (POSITIVE,)),
    "gamma": Hyperparameter(FINITE_NUMBER, (_in(0, 1),)),
    "replay_ratio": Hyperparameter(FINITE_NUMBER, (NON_NEGATIVE,)),
    "buffer_size": Hyperparameter(
        INTEGER,
        across=(
            (
                lambda p: not p[_REPLAYS] > 0 or p["buffer_size"] >= p["n_steps"],
                "must be at least n_steps ({n_steps}) to hold one segment",
            ),
        ),
    ),
    "replay_start": Hyperparameter(
        INTEGER,
        (NON_NEGATIVE,),
        across=(
            (
                lambda p: not p[_REPLAYS] > 0 or p["replay_start"] <= p["buffer_size"],
                "must not exceed buffer_size ({buffer_size}) or replay never starts",
            ),
        ),
    ),
    "correction_term": Hyperparameter(NUMBER, (POSITIVE,)),
    "delta": Hyperparameter(NUMBER, (POSITIVE,)),
    "alpha": Hyperparameter(NUMBER, (_in(0, 1, "[)"),)),
    "retrace_lambda": Hyperparameter(values=(UNIT_NUMBER,)),
    "stats_window_size": Hyperparameter(
        values=(
            Rule(
                lambda v: is_integer(v) and 0 < v <= MAX_COUNT, "must be a positive integer at most 2**63 - 1"
            ),
        )
    ),
    "rprop_alpha": Hyperparameter(FINITE_NUMBER, (_in(0, 1, "(]"),)),
    "rprop_epsilon": Hyperparameter(FINITE_NUMBER, (POSITIVE,)),
    "q_coef": Hyperparameter(FINITE_NUMBER, (NON_NEGATIVE,)),
    "ent_coef": Hyperparameter(FINITE_NUMBER, (NON_NEGATIVE,)),
    "max_grad_norm": Hyperparameter(
        values=(
            Rule(
                lambda v: v is None or (is_number(v) and v > 0),
                "must be a positive number or None (no clipping)",
            ),
        )
    ),
    "learning_rate": Hyperparameter(
        values=(
            Rule(
                lambda v: callable(v) or _positive_finite(v),
                "must be a positive finite number or a schedule (callable of progress remaining)",
            ),
        )
    ),
    "lr_schedule": Hyperparameter(values=(choice(LR_SCHEDULES),)),
    "q_lr_ratio": Hyperparameter(values=(Rule(_positive_finite, "must be a positive number"),)),
    # torch.set_num_threads of a huge number kills the process (segmentation fault).
    "num_procs": Hyperparameter(
        values=(
            or_none(
                Rule(lambda v: isinstance(v, int | np.integer) and 0 < v <= MAX_NUM_PROCS, ""),
                f"must be a positive integer at most {MAX_NUM_PROCS}, or None",
            ),
        )
    ),
    "verbose": Hyperparameter(
        values=(Rule(lambda v: isinstance(v, int | np.integer) and v >= 0, NON_NEGATIVE_INTEGER.text),),
        default=0,
    ),
    "tensorboard_log": Hyperparameter(
        values=(
            or_none(
                Rule(lambda v: isinstance(v, str | os.PathLike), ""),
                "must be a folder path (str or os.PathLike) or None",
            ),
        )
    ),
    "trust_region": Hyperparameter(BOOLEAN),
    "handle_timeout_termination": Hyperparameter(BOOLEAN),
    "seed": Hyperparameter(values=(SEED,)),
}


def check_hyperparameters(params: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first invalid hyperparameter of the constructor's arguments
    ``params`` (before anything is built) by the rules of :data:`HYPERPARAMETERS`: first every type, then
    the values, in the table's order; then ``device``. ``verbose`` and ``tensorboard_log`` are
    only among the constructor's settings."""
    given = {name: params.get(name, rules.default) for name, rules in HYPERPARAMETERS.items()}
    for name, rules in HYPERPARAMETERS.items():
        if rules.type is not None:
            check(given[name], name, rules.type)
    for name, rules in HYPERPARAMETERS.items():
        for rule in rules.values:
            check(given[name], name, rule)
        for test, text in rules.across:  # a rule between settings: the test reads them all
            check(given, name, Rule(test, text.format(**given), f"{{name}} {{text}}, got {given[name]!r}"))
    device = params.get("device", "auto")
    if not isinstance(device, th.device) and device != "auto":
        try:
            th.device(device)
        except (RuntimeError, TypeError, ValueError) as error:
            raise ValueError(f"device {device!r} is not a torch device: {error}") from None


def check_count(value: Any, name: str, minimum: int = 0) -> int:
    """``value`` if it is an integer (not a bool) in ``[minimum, MAX_COUNT]``; ``ValueError`` naming
    ``name`` otherwise."""
    return int(check(value, name, integer_in(minimum, MAX_COUNT)))


#: ``learn``'s ``total_timesteps``: a whole number written as a float (``learn(1e5)``, the zoo's
#: ``n_timesteps``) counts, as in SB3.
_TOTAL_TIMESTEPS = Rule(
    lambda v: (is_integer(v) or (isinstance(v, float) and v.is_integer())) and v >= 0,
    NON_NEGATIVE_INTEGER.text,
)


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
    check(total_timesteps, "total_timesteps", _TOTAL_TIMESTEPS)
    if not has_env:
        raise ValueError("this model has no environment; pass one to ACER.load(..., env=...) or set_env()")
    check(
        log_interval, "log_interval", or_none(NON_NEGATIVE_INTEGER, "must be a non-negative integer or None")
    )
    check(tb_log_name, "tb_log_name", Rule(lambda v: isinstance(v, str), "must be a string"))
    check(seed, "seed", SEED)
    callbacks = callback if isinstance(callback, list) else [callback]
    if not all(c is None or isinstance(c, BaseCallback) or callable(c) for c in callbacks):
        raise TypeError(
            "callback must be an SB3 BaseCallback, a list of them, a callable (locals, globals) -> bool "
            f"(SB2's), or None; got {callback!r}"
        )


# ---------------------------------------------------------------------- policy and optimizer settings


def check_policy(policy: Any, aliases: dict[str, type], base: tuple[type, ...], listed: list[str]) -> type:
    """The policy class that ``policy`` (a class or one of ``aliases``) names, after checking that it is a
    subclass of one of ``base``; messages offer the ``listed`` names (the names users see).

    Raises:
        ValueError: naming what is wrong.
    """
    if isinstance(policy, str) and policy not in aliases:
        raise ValueError(f"unknown policy {policy!r}; choose one of {sorted(listed)} or a class")
    if not isinstance(policy, str) and not (isinstance(policy, type) and issubclass(policy, base)):
        kinds = " or ".join(cls.__name__ for cls in base)
        raise ValueError(f"policy must be an {kinds} subclass or one of {sorted(listed)}")
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
    check(policy_kwargs, "policy_kwargs", DICT)
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
    check(optimizer_kwargs, "policy_kwargs: optimizer_kwargs", DICT)
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

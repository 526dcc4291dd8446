"""Learning-rate schedules of SB2's ACER, as multipliers of the initial learning rate, and how a schedule is
saved as data.

``progress`` is the fraction of training done, counted in environment steps and clamped to ``[0, 1]`` (SB2
lets it exceed 1, which makes the ``linear`` learning rate negative on a second ``learn`` call).

A model file holds a schedule as data: the initial rate (``learning_rate``) and the name of one of SB2's
schedules (``lr_schedule``). :func:`saved_schedule` writes the schedule objects users pass that one of them
expresses (:func:`named_schedule`: SB3's ``ConstantSchedule``, ``FloatSchedule`` and
``LinearSchedule(start, 0.0, 1.0)``, and rl-zoo3's ``SimpleLinearSchedule``, which the zoo makes of
``lin_<rate>``) in that form, so that they load as the same curve; any other callable is code, which a file
cannot hold: it is saved as a constant rate, with a warning.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

from stable_baselines3.common.utils import ConstantSchedule, FloatSchedule, LinearSchedule

__all__ = [
    "LR_SCHEDULES",
    "SAVED_FORMS",
    "named_schedule",
    "saved_schedule",
    "schedule_multiplier",
    "scheduled_rate",
]


def _linear(progress: float) -> float:
    return 1.0 - progress


def _constant(progress: float) -> float:
    del progress
    return 1.0


def _double_linear_con(progress: float) -> float:
    return max(1.0 - 2.0 * progress, 0.125)


def _middle_drop(progress: float) -> float:
    remaining = 1.0 - progress
    return remaining if remaining >= 0.75 else 0.075


def _double_middle_drop(progress: float) -> float:
    remaining = 1.0 - progress
    if remaining >= 0.75:
        return remaining
    return 0.075 if remaining >= 0.25 else 0.125


LR_SCHEDULES: dict[str, Callable[[float], float]] = {
    "linear": _linear,
    "constant": _constant,
    "double_linear_con": _double_linear_con,
    "middle_drop": _middle_drop,
    "double_middle_drop": _double_middle_drop,
}


def schedule_multiplier(name: str, progress: float) -> float:
    """Multiplier of the initial learning rate for schedule ``name`` at ``progress`` (fraction done).

    Raises:
        ValueError: for an unknown schedule name.
    """
    if name not in LR_SCHEDULES:
        raise ValueError(f"unknown lr_schedule {name!r}; choose one of {sorted(LR_SCHEDULES)}")
    return LR_SCHEDULES[name](min(max(progress, 0.0), 1.0))


def scheduled_rate(learning_rate: Any, name: str, progress_remaining: float) -> float:
    """The learning rate at ``progress_remaining`` (1 at the start, 0 at the end): ``learning_rate`` times
    schedule ``name``'s multiplier, or, if ``learning_rate`` is a callable (an SB3 schedule), its value."""
    if callable(learning_rate):
        return float(learning_rate(progress_remaining))
    return float(learning_rate) * schedule_multiplier(name, 1.0 - progress_remaining)


def _rate(value: Any) -> float | None:
    """``value`` as a learning rate a file can hold (a positive finite number), else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def named_schedule(schedule: Any) -> tuple[float, str] | None:
    """The initial rate and the name of SB2's schedule that the schedule object ``schedule`` follows: SB3's
    ``ConstantSchedule(rate)`` is ``'constant'``, SB3's ``LinearSchedule(rate, 0.0, 1.0)`` and rl-zoo3's
    ``SimpleLinearSchedule(rate)`` (the zoo's ``lin_<rate>``) are ``'linear'`` (the same curve, to the last
    bit of rounding), SB3's ``FloatSchedule`` is what it wraps; ``None`` for any other callable."""
    if isinstance(schedule, FloatSchedule):
        return named_schedule(schedule.value_schedule)
    rate: float | None = None
    if isinstance(schedule, ConstantSchedule):
        rate, name = _rate(schedule.val), "constant"
    elif isinstance(schedule, LinearSchedule) and (schedule.end, schedule.end_fraction) == (0, 1):
        rate, name = _rate(schedule.start), "linear"
    elif (type(schedule).__module__, type(schedule).__qualname__) == (
        "rl_zoo3.utils",
        "SimpleLinearSchedule",
    ):
        rate, name = _rate(getattr(schedule, "initial_value", None)), "linear"
    return None if rate is None else (rate, name)


#: What the warning for a callable that a file cannot hold says survives a save.
SAVED_FORMS = (
    "a number with lr_schedule (one of SB2's: 'linear', 'constant', 'double_linear_con', 'middle_drop', "
    "'double_middle_drop'), SB3's ConstantSchedule, FloatSchedule and LinearSchedule(start, 0.0, 1.0), and "
    "the zoo's lin_<rate>"
)


def saved_schedule(learning_rate: Any, name: str, current: float) -> tuple[Any, str]:
    """``learning_rate`` and ``lr_schedule`` (``name``) as a model file holds them (``current``: the rate at
    the model's progress).

    A schedule object that one of SB2's schedules expresses (:func:`named_schedule`) is saved as its rate and
    name. Any other callable is code, which a file cannot hold: it is saved as its ``current`` value, a
    constant rate (at the end of a schedule that decays to 0 that is no learning rate: the initial one then,
    so that the file loads), with a ``UserWarning`` that says which forms a file holds.
    """
    if not callable(learning_rate):
        return learning_rate, name
    named = named_schedule(learning_rate)
    if named is not None:
        return named
    rate = current if current > 0 else float(learning_rate(1.0))
    warnings.warn(
        f"learning_rate {learning_rate!r} is a callable, which a model file cannot hold: it is saved as the "
        f"constant rate {rate!r} (pass it again to ACER.load(..., learning_rate=...) to keep scheduling). A "
        f"file holds these schedules as data: {SAVED_FORMS}",
        UserWarning,
        stacklevel=5,
    )
    return rate, "constant"

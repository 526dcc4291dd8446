"""Learning-rate schedules of SB2's ACER, as multipliers of the initial learning rate.

``progress`` is the fraction of training done, counted in environment steps and clamped to ``[0, 1]`` (SB2
lets it exceed 1, which makes the ``linear`` learning rate negative on a second ``learn`` call).
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["LR_SCHEDULES", "schedule_multiplier"]


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

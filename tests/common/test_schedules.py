"""The five learning-rate schedules of SB2's ACER (``sb3_acer.common.schedules``)."""

from __future__ import annotations

import pytest
from stable_baselines3.common.utils import ConstantSchedule, FloatSchedule, LinearSchedule

from sb3_acer.common.schedules import (
    LR_SCHEDULES,
    SAVED_FORMS,
    named_schedule,
    saved_schedule,
    schedule_multiplier,
    scheduled_rate,
)

NAMES = ["linear", "constant", "double_linear_con", "middle_drop", "double_middle_drop"]


# SB2's definitions (stable_baselines/common/schedules.py), written out as there, as the oracle.
def sb2_constant(_):
    return 1.0


def sb2_linear(progress):
    return 1 - progress


def sb2_middle_drop(progress):
    eps = 0.75
    if 1 - progress < eps:
        return eps * 0.1
    return 1 - progress


def sb2_double_linear_con(progress):
    progress *= 2
    eps = 0.125
    if 1 - progress < eps:
        return eps
    return 1 - progress


def sb2_double_middle_drop(progress):
    eps1 = 0.75
    eps2 = 0.25
    if 1 - progress < eps1:
        if 1 - progress < eps2:
            return eps2 * 0.5
        return eps1 * 0.1
    return 1 - progress


SB2 = {
    "linear": sb2_linear,
    "constant": sb2_constant,
    "double_linear_con": sb2_double_linear_con,
    "middle_drop": sb2_middle_drop,
    "double_middle_drop": sb2_double_middle_drop,
}

# progress -> multiplier, from the lr_schedule row of sb2-acer-behaviour.md section 3.1.
EXPECTED = {
    "linear": {0.0: 1.0, 0.1: 0.9, 0.25: 0.75, 0.5: 0.5, 0.8: 0.19999999999999996, 1.0: 0.0},
    "constant": {0.0: 1.0, 0.1: 1.0, 0.25: 1.0, 0.5: 1.0, 0.8: 1.0, 1.0: 1.0},
    "double_linear_con": {0.0: 1.0, 0.1: 0.8, 0.25: 0.5, 0.4375: 0.125, 0.5: 0.125, 0.8: 0.125, 1.0: 0.125},
    "middle_drop": {0.0: 1.0, 0.1: 0.9, 0.25: 0.75, 0.26: 0.075, 0.5: 0.075, 1.0: 0.075},
    "double_middle_drop": {
        0.0: 1.0,
        0.1: 0.9,
        0.25: 0.75,
        0.26: 0.075,
        0.5: 0.075,
        0.75: 0.075,
        0.76: 0.125,
        1.0: 0.125,
    },
}


def test_the_five_schedules_are_registered():
    assert sorted(LR_SCHEDULES) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_schedules_give_the_hand_checked_values(name):
    for progress, multiplier in EXPECTED[name].items():
        assert schedule_multiplier(name, progress) == multiplier, (name, progress)


def _same(a: float, b: float) -> bool:
    """Equal up to one ulp: SB2 returns ``0.75 * 0.1 == 0.07500000000000001``, the port ``0.075``."""
    return a == pytest.approx(b, rel=2e-16, abs=0.0)


@pytest.mark.parametrize("name", NAMES)
def test_schedules_equal_sb2_on_a_grid(name):
    grid = [i / 400 for i in range(401)] + [0.125, 0.25, 0.4375, 0.75]
    for progress in grid:
        assert _same(schedule_multiplier(name, progress), SB2[name](progress)), (name, progress)
    # The regime boundaries fall where SB2's do (1 - p >= 0.75, 1 - p >= 0.25, 1 - 2p >= 0.125).
    for progress in (0.25, 0.25 + 1e-12, 0.4375, 0.4375 + 1e-12, 0.75, 0.75 + 1e-12):
        assert _same(schedule_multiplier(name, progress), SB2[name](progress)), (name, progress)


@pytest.mark.parametrize("name", NAMES)
def test_progress_is_clamped_to_the_unit_interval(name):
    for progress in (1.0 + 1e-9, 1.05, 2.0, 1e9):
        assert schedule_multiplier(name, progress) == schedule_multiplier(name, 1.0) == EXPECTED[name][1.0]
    for progress in (-1e-9, -0.5, -1e9):
        assert schedule_multiplier(name, progress) == schedule_multiplier(name, 0.0) == 1.0
    # SB2 would go negative here (a second learn() call with reset_num_timesteps=False).
    assert schedule_multiplier(name, 1.5) >= 0.0
    assert schedule_multiplier("linear", 1.5) == 0.0 != sb2_linear(1.5)


def test_unknown_schedule_name():
    with pytest.raises(
        ValueError,
        match=r"unknown lr_schedule 'cosine'; choose one of \['constant', 'double_linear_con', "
        r"'double_middle_drop', 'linear', 'middle_drop'\]",
    ):
        schedule_multiplier("cosine", 0.5)


# ---------------------------------------------------------------------- schedules saved as data


def _zoo_linear(rate: float):
    from rl_zoo3.utils import SimpleLinearSchedule  # the zoo's lin_<rate>

    return SimpleLinearSchedule(rate)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        pytest.param(lambda: ConstantSchedule(3e-4), (3e-4, "constant"), id="ConstantSchedule"),
        pytest.param(lambda: FloatSchedule(3e-4), (3e-4, "constant"), id="FloatSchedule-of-a-number"),
        pytest.param(lambda: LinearSchedule(1e-3, 0.0, 1.0), (1e-3, "linear"), id="LinearSchedule-to-0"),
        pytest.param(
            lambda: FloatSchedule(LinearSchedule(1e-3, 0, 1)), (1e-3, "linear"), id="FloatSchedule-of-linear"
        ),
        pytest.param(lambda: _zoo_linear(7e-4), (7e-4, "linear"), id="zoo-SimpleLinearSchedule"),
    ],
)
def test_named_schedule_reads_the_schedule_objects_sb2s_names_express(make, expected):
    schedule = make()
    assert named_schedule(schedule) == expected
    rate, name = expected
    for progress_remaining in (1.0, 0.75, 0.5, 0.3, 0.0):
        assert scheduled_rate(rate, name, progress_remaining) == pytest.approx(
            schedule(progress_remaining), rel=1e-12, abs=1e-18
        )


@pytest.mark.parametrize(
    "schedule",
    [
        pytest.param(lambda p: 1e-3 * p, id="lambda"),
        pytest.param(LinearSchedule(1e-3, 1e-4, 1.0), id="LinearSchedule-to-another-rate"),
        pytest.param(LinearSchedule(1e-3, 0.0, 0.5), id="LinearSchedule-ending-early"),
        pytest.param(ConstantSchedule(0.0), id="ConstantSchedule-of-0"),
        pytest.param(ConstantSchedule(float("nan")), id="ConstantSchedule-of-nan"),
    ],
)
def test_named_schedule_is_none_for_what_no_name_expresses(schedule):
    assert named_schedule(schedule) is None


def test_saved_schedule_keeps_names_and_turns_other_callables_into_a_rate_with_a_warning():
    assert saved_schedule(7e-4, "double_middle_drop", 1e-5) == (7e-4, "double_middle_drop")
    assert saved_schedule(LinearSchedule(1e-3, 0.0, 1.0), "constant", 5e-4) == (1e-3, "linear")
    with pytest.warns(UserWarning) as record:
        assert saved_schedule(lambda p: 1e-3 * p, "linear", 2.5e-4) == (2.5e-4, "constant")
    (message,) = [str(warning.message) for warning in record]
    assert (
        "is a callable, which a model file cannot hold: it is saved as the constant rate 0.00025" in message
    )
    assert message.endswith(f"A file holds these schedules as data: {SAVED_FORMS}")
    for form in ("'double_middle_drop'", "ConstantSchedule", "LinearSchedule(start, 0.0, 1.0)", "lin_<rate>"):
        assert form in SAVED_FORMS
    with pytest.warns(UserWarning, match="saved as the constant rate 0.001 "):  # decayed to 0: the initial
        assert saved_schedule(lambda p: 1e-3 * p, "linear", 0.0) == (1e-3, "constant")

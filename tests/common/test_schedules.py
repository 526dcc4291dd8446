"""The five learning-rate schedules of SB2's ACER (``sb3_acer.common.schedules``)."""

from __future__ import annotations

import pytest

from sb3_acer.common.schedules import LR_SCHEDULES, schedule_multiplier

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

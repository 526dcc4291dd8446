"""The checks of what a user hands ACER, each rule stated once: single values
(:mod:`~sb3_acer.common.checks.fields`: the rules that settings, presets, file readers, the replay memories
and the actor settings share), ACER's settings (:mod:`~sb3_acer.common.checks.settings`), spaces
(:mod:`~sb3_acer.common.checks.spaces`) and the observations given to ``predict``
(:mod:`~sb3_acer.common.checks.observations`)."""

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
    POSITIVE_INTEGER,
    POSITIVE_SECONDS,
    UNIT_NUMBER,
    Rule,
    check,
    check_finite_arrays,
    check_format_version,
    choice,
    integer_in,
    is_integer,
    is_number,
    or_none,
)
from sb3_acer.common.checks.observations import check_env_step, check_observation
from sb3_acer.common.checks.settings import HYPERPARAMETERS, check_hyperparameters, check_learn_arguments
from sb3_acer.common.checks.spaces import UnsupportedSpaceError, UnsupportedSpaceTypeError, check_spaces

__all__ = [
    "BOOLEAN",
    "DICT",
    "FINITE_NUMBER",
    "HYPERPARAMETERS",
    "INTEGER",
    "MAX_COUNT",
    "NON_NEGATIVE",
    "NON_NEGATIVE_INTEGER",
    "NUMBER",
    "POSITIVE",
    "POSITIVE_INTEGER",
    "POSITIVE_SECONDS",
    "UNIT_NUMBER",
    "Rule",
    "UnsupportedSpaceError",
    "UnsupportedSpaceTypeError",
    "check",
    "check_env_step",
    "check_finite_arrays",
    "check_format_version",
    "check_hyperparameters",
    "check_learn_arguments",
    "check_observation",
    "check_spaces",
    "choice",
    "integer_in",
    "is_integer",
    "is_number",
    "or_none",
]

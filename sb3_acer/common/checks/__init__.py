"""The checks of what a user hands ACER, each rule stated once: single values
(:mod:`~sb3_acer.common.checks.fields`: the rules that settings, presets, file readers, the replay memories
and the actor settings share, all re-exported here), ACER's settings
(:mod:`~sb3_acer.common.checks.settings`), spaces (:mod:`~sb3_acer.common.checks.spaces`) and the
observations given to ``predict`` (:mod:`~sb3_acer.common.checks.observations`)."""

from sb3_acer.common.checks import fields
from sb3_acer.common.checks.fields import *  # noqa: F403 - the rules, by their names in fields.__all__
from sb3_acer.common.checks.observations import check_env_step, check_observation
from sb3_acer.common.checks.settings import HYPERPARAMETERS, check_hyperparameters, check_learn_arguments
from sb3_acer.common.checks.spaces import UnsupportedSpaceError, UnsupportedSpaceTypeError, check_spaces

__all__ = [
    *fields.__all__,
    "HYPERPARAMETERS",
    "UnsupportedSpaceError",
    "UnsupportedSpaceTypeError",
    "check_env_step",
    "check_hyperparameters",
    "check_learn_arguments",
    "check_observation",
    "check_spaces",
]

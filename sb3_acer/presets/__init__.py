"""Tuned hyperparameter presets (``acer.yml``, in the rl-baselines3-zoo format): the names of
:mod:`~sb3_acer.presets.loader`, re-exported. :mod:`~sb3_acer.presets.expressions` reads the zoo's
``policy_kwargs`` strings without evaluating them, and :mod:`~sb3_acer.presets.zoo_format` hands the
presets to rl-baselines3-zoo."""

from sb3_acer.presets import loader
from sb3_acer.presets.loader import *  # noqa: F403 - the presets' names, by loader.__all__

__all__ = [*loader.__all__]

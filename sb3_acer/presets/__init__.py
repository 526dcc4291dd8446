"""Tuned hyperparameter presets (``acer.yml``, in the rl-baselines3-zoo format): the names of
:mod:`~sb3_acer.presets.loader`, re-exported. :mod:`~sb3_acer.presets.expressions` reads the zoo's
``policy_kwargs`` strings without evaluating them, and :mod:`~sb3_acer.presets.zoo_format` hands the
presets to rl-baselines3-zoo."""

from sb3_acer.presets.loader import (
    ATARI_ENTRY,
    ATARI_FRAME_STACK,
    ENV_WRAPPERS,
    NORMALIZE_KEYS,
    PRESET_FILE,
    RUN_KEYS,
    Preset,
    PresetError,
    WrapperSpec,
    available_presets,
    check_env_kwargs,
    env_wrappers,
    evaluation_normalization,
    has_atari_defaults,
    load_preset,
    normalize_kwargs,
    resolve_policy_kwargs,
    wrapper_class,
    zoo_schedules,
)

__all__ = [
    "ATARI_ENTRY",
    "ATARI_FRAME_STACK",
    "ENV_WRAPPERS",
    "NORMALIZE_KEYS",
    "PRESET_FILE",
    "RUN_KEYS",
    "Preset",
    "PresetError",
    "WrapperSpec",
    "available_presets",
    "check_env_kwargs",
    "env_wrappers",
    "evaluation_normalization",
    "has_atari_defaults",
    "load_preset",
    "normalize_kwargs",
    "resolve_policy_kwargs",
    "wrapper_class",
    "zoo_schedules",
]

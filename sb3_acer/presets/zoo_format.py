"""The presets of ``acer.yml`` as rl-baselines3-zoo reads a hyperparameter file: ``hyperparams``.

``python -m sb3_acer.zoo train`` passes ``--conf-file sb3_acer.presets.zoo_format`` to the zoo, which imports
this module and reads its ``hyperparams`` (a dict keyed by environment id, as the zoo's
``hyperparams/<algo>.yml``). It is built from ``acer.yml`` each time it is read, so the two never
differ. ``acer.yml`` is in the zoo's format already, and writes its linear decays as the zoo's
``lin_<rate>``, so that the zoo's ``-conf`` may also name the file itself: the zoo turns any number under
``learning_rate`` into a constant schedule, which ACER follows instead of its ``lr_schedule``. Here each
entry's ``learning_rate`` and ``lr_schedule`` (ACER's default ``'linear'`` when absent) become the zoo's
equivalent: ``lin_<rate>`` for the linear decay, the plain rate for ``'constant'``; the other named
schedules have no zoo equivalent and are refused. Class names in ``policy_kwargs`` are resolved (the zoo
would ``eval`` them), wrapper short names become import paths, and ``normalize`` becomes the zoo's
``True`` or dict of ``VecNormalize`` arguments. The ``atari`` entry, which needs the CLI's Atari
defaults, is not translated.
"""

from __future__ import annotations

import inspect
from typing import Any

from sb3_acer.presets import ATARI_ENTRY, Preset, PresetError, available_presets, load_preset

__all__ = ["MODULE", "zoo_entry", "zoo_hyperparameters", "zoo_learning_rate"]

#: What ``--conf-file`` names for the zoo (it imports a config that is not a ``.yml`` or ``.py`` file).
MODULE = __name__


def _default(name: str) -> Any:
    from sb3_acer.acer.acer import ACER

    return inspect.signature(ACER).parameters[name].default


def zoo_learning_rate(hyperparameters: dict[str, Any]) -> dict[str, Any]:
    """``hyperparameters`` (ACER constructor arguments) with ``learning_rate`` and ``lr_schedule`` written
    as the zoo reads them: ``'lin_<rate>'`` for the linear decay (which the zoo's ``SimpleLinearSchedule``
    computes as ACER's ``'linear'`` does), the rate for ``'constant'``, no entry for ACER's defaults.

    Raises:
        ValueError: another schedule, which the zoo cannot express.
    """
    result = dict(hyperparameters)
    schedule = result.pop("lr_schedule", _default("lr_schedule"))
    if "learning_rate" not in result and schedule == _default("lr_schedule"):
        return result
    rate = float(result.get("learning_rate", _default("learning_rate")))
    if schedule == "linear":
        result["learning_rate"] = f"lin_{rate!r}"
    elif schedule == "constant":
        result["learning_rate"] = rate
    else:
        raise ValueError(
            f"lr_schedule {schedule!r} has no rl-zoo3 equivalent (the zoo's schedules are 'lin_<rate>' and "
            "constant rates)"
        )
    return result


def zoo_entry(preset: Preset) -> dict[str, Any]:
    """The zoo's hyperparameter entry for ``preset`` (see the module's description)."""
    entry: dict[str, Any] = {
        "n_envs": preset.n_envs,
        "n_timesteps": preset.n_timesteps,
        "policy": preset.policy,
        **zoo_learning_rate(preset.hyperparameters),
    }
    if preset.normalize:
        entry["normalize"] = dict(preset.normalize_kwargs) or True
    if preset.env_wrapper:
        entry["env_wrapper"] = [{spec.name: dict(spec.kwargs)} for spec in preset.env_wrapper]
    if preset.env_kwargs:
        entry["env_kwargs"] = dict(preset.env_kwargs)
    return entry


def zoo_hyperparameters() -> dict[str, dict[str, Any]]:
    """Every preset of ``acer.yml`` but the ``atari`` entry, as the zoo's hyperparameter file has them.

    Raises:
        PresetError: an entry that the zoo cannot take, naming it.
    """
    result = {}
    for env_id in available_presets():
        if env_id == ATARI_ENTRY:
            continue
        preset = load_preset(env_id)
        try:
            result[env_id] = zoo_entry(preset)
        except ValueError as error:
            raise PresetError(f"preset {env_id!r} for rl-zoo3: {error}") from None
    return result


def __getattr__(name: str) -> Any:
    # The zoo reads ``importlib.import_module(conf_file).hyperparams``: built when read, from acer.yml.
    if name == "hyperparams":
        return zoo_hyperparameters()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

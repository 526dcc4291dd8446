"""The settings of a ``train`` run: the tuned preset for the environment (or the defaults), with the
command line's flags, ``--hyperparams`` and ``--env-kwargs`` laid over it, every key and value checked."""

from __future__ import annotations

import argparse
import inspect
from typing import Any, NamedTuple

import gymnasium as gym

from sb3_acer.acer.acer import ACER
from sb3_acer.cli.arguments import env_kwargs_option, parse_hyperparams
from sb3_acer.cli.environments import EnvInfo, resolve_env
from sb3_acer.cli.errors import UsageError, one_line
from sb3_acer.cli.imports import working_directory_importable
from sb3_acer.envs.atari import SAMPLERS, ale_game_name
from sb3_acer.presets import (
    ATARI_ENTRY,
    ATARI_FRAME_STACK,
    PRESET_FILE,
    Preset,
    PresetError,
    WrapperSpec,
    env_wrappers,
    load_preset,
    normalize_kwargs,
    resolve_policy_kwargs,
    zoo_schedules,
)

__all__ = [
    "DEFAULT_N_ENVS",
    "DEFAULT_TIMESTEPS",
    "FALLBACK_HYPERPARAMETERS",
    "TrainSettings",
    "train_settings",
]

#: Number of environments and steps of a run without a preset (Atari: SB2's ``run_atari`` settings).
DEFAULT_N_ENVS = 4
DEFAULT_TIMESTEPS = 100_000
#: ACER's settings on an env with no preset (not Atari, not MinAtar), over the constructor's SB2 defaults:
#: a constant step instead of SB2's linear decay to 0, which on CartPole, Acrobot and LunarLander at the
#: default budget learned as A2C's defaults do where the decay lagged (benchmarks/fallback_defaults.py).
FALLBACK_HYPERPARAMETERS: dict[str, Any] = {"lr_schedule": "constant"}
_FALLBACK_RUN = "(lr_schedule constant)"
ATARI_N_ENVS = 16
ATARI_TIMESTEPS = 10_000_000


#: The settings of an Atari game without a preset; its entry (or the ``atari`` entry) is laid over them.
ATARI_DEFAULTS = {
    "n_envs": ATARI_N_ENVS,
    "n_timesteps": ATARI_TIMESTEPS,
    "policy": "CnnPolicy",
    "lr_schedule": "constant",
}


#: Constructor arguments that have their own flag, and the flag to use instead.
OWN_FLAGS = {
    "seed": "--seed",
    "tensorboard_log": "--tensorboard-log",
    "verbose": "--verbose",
    "policy": "--policy",
    "n_envs": "--n-envs",
    "n_timesteps": "--timesteps",
}


#: The settings of a MinAtar game without a preset: the MinAtar paper's network (one 3x3 convolution of 16
#: channels, 128 units) and a constant learning rate; 16 envs; 1M steps.
MINATAR_N_ENVS = 16
MINATAR_TIMESTEPS = 1_000_000
MINATAR_POLICY_KWARGS = "dict(features_extractor_class=MinAtarCNN, net_arch=[])"
_MINATAR_RUN = "(CnnPolicy with MinAtarCNN, lr_schedule constant)"

#: ``--hyperparams`` keys that describe the run rather than the model.
RUN_KEYS = ("normalize", "env_wrapper")


class TrainSettings(NamedTuple):
    """Everything a ``train`` run uses, after presets, defaults and flags are combined."""

    env: EnvInfo
    n_envs: int
    timesteps: int
    policy: str
    normalize: bool
    #: ``VecNormalize`` arguments when ``normalize`` is set (empty: its defaults).
    normalize_kwargs: dict[str, Any]
    #: Wrappers of each env, outside its ``Monitor`` (the preset's or ``--hyperparams``' ``env_wrapper``).
    env_wrapper: tuple[WrapperSpec, ...]
    hyperparameters: dict[str, Any]
    seed: int
    source: str
    #: Keyword arguments of ``gymnasium.make`` (the preset's ``env_kwargs`` with ``--env-kwargs`` over them).
    env_kwargs: dict[str, Any]
    #: How an Atari game is run (:data:`~sb3_acer.envs.atari.SAMPLERS`); ``None`` for other games.
    sampler: str | None = None


def train_settings(args: argparse.Namespace) -> TrainSettings:
    """Combine the preset (or the defaults) with the command-line flags, checking everything."""
    overrides = parse_hyperparams(args.hyperparams or [])
    _check_hyperparameter_keys(overrides)
    try:
        overrides = zoo_schedules(overrides)
    except ValueError as error:
        raise UsageError(f"--hyperparams {error}") from None
    info = resolve_env(args.env_id, args.gym_packages or ())
    base = _base_settings(info, _preset(info))
    normalize, vec_normalize_kwargs, wrappers = base.normalize, base.normalize_kwargs, base.env_wrapper
    if "normalize" in overrides:
        try:
            parsed = normalize_kwargs(overrides.pop("normalize"))
        except ValueError as error:
            raise UsageError(f"--hyperparams {error}") from None
        normalize, vec_normalize_kwargs = parsed is not None, parsed or {}
    if "env_wrapper" in overrides:
        try:
            with working_directory_importable():  # a wrapper the user names is theirs to import
                wrappers = env_wrappers(overrides.pop("env_wrapper"), atari=info.atari)
        except ValueError as error:
            raise UsageError(f"--hyperparams {error}") from None
    hyperparameters = {**base.hyperparameters, **overrides}
    env_kwargs = {**base.env_kwargs, **env_kwargs_option(args.env_kwargs)}
    if "policy_kwargs" in hyperparameters:
        hyperparameters["policy_kwargs"] = _resolve_policy_kwargs(hyperparameters["policy_kwargs"])
    return base._replace(
        n_envs=base.n_envs if args.n_envs is None else args.n_envs,
        timesteps=base.timesteps if args.timesteps is None else args.timesteps,
        policy=base.policy if args.policy is None else args.policy,
        normalize=normalize,
        normalize_kwargs=vec_normalize_kwargs,
        env_wrapper=wrappers,
        hyperparameters=hyperparameters,
        seed=args.seed,
        env_kwargs=env_kwargs,
        sampler=_atari_sampler(args, info, bool(wrappers), bool(env_kwargs)),
    )


def _atari_sampler(
    args: argparse.Namespace, info: EnvInfo, wrapped: bool, made_with_kwargs: bool
) -> str | None:
    """``--sampler``: for an Atari game, ale-py's vector env (run_atari's default) wherever it serves the run,
    otherwise (or when asked) SB3's wrappers, which make a Python env per game; ``None`` for other games.

    Raises:
        UsageError: ``--sampler`` for a game that is not Atari's, or ``ale-vector`` where it cannot serve.
    """
    asked = getattr(args, "sampler", None)
    if not info.atari:
        if asked is not None:
            raise UsageError(f"--sampler {asked}: {info.env_id} is not an Atari game")
        return None
    if asked == "wrappers":
        return asked
    reasons = [
        (made_with_kwargs, "env_kwargs are arguments of gymnasium.make, which it does not call"),
        (wrapped, "env_wrapper wraps a Python env per game, which it does not have"),
        (
            getattr(args, "vec_env", "dummy") != "dummy",
            "it steps the games in threads of its own (--vec-env)",
        ),
    ]
    try:
        ale_game_name(info.name)
    except ValueError as error:  # sticky actions or another frame skip (ALE/...-v5): only the wrappers run it
        reasons.append((True, one_line(error)))
    refused = [reason for applies, reason in reasons if applies]
    if not refused:
        return SAMPLERS[0]
    if asked is not None:
        raise UsageError(f"--sampler {asked}: {refused[0]}; use --sampler wrappers")
    return "wrappers"


def _preset(info: EnvInfo) -> Preset | None:
    """The preset for the environment, its keys and values checked; ``None`` where there is none."""
    try:
        preset = load_preset(info.name, atari_defaults=ATARI_DEFAULTS if info.atari else None)
    except KeyError:
        return None
    except PresetError as error:
        raise UsageError(str(error)) from None
    _check_hyperparameter_keys(preset.hyperparameters, preset)
    _check_preset_values(preset)
    return preset


#: What a run applies to an Atari game, whatever its settings.
_ATARI_RUN = f"(AtariWrapper, {ATARI_FRAME_STACK}-frame stack, CnnPolicy, lr_schedule constant)"


def _base_settings(info: EnvInfo, preset: Preset | None) -> TrainSettings:
    """The preset's settings, or the defaults (Atari: SB2 run_atari's), with the line that says which, before
    the command line's (seed 0)."""
    env_id = info.name
    if preset is not None:
        source = f"Using the tuned preset for {env_id} ({PRESET_FILE})."
        if info.atari:
            which = (
                "the tuned preset ("
                if preset.entry != ATARI_ENTRY
                else (f"the preset '{ATARI_ENTRY}' (defaults for Atari games, ")
            )
            source = f"Using {which}{PRESET_FILE}) for {env_id}, over SB2 run_atari's settings {_ATARI_RUN}."
        base = TrainSettings(
            info,
            preset.n_envs,
            preset.n_timesteps,
            preset.policy,
            preset.normalize,
            dict(preset.normalize_kwargs),
            preset.env_wrapper,
            dict(preset.hyperparameters),
            0,
            source,
            dict(preset.env_kwargs),
        )
    else:
        if info.atari:
            run = f"SB2 run_atari's settings {_ATARI_RUN}"
            defaults = (ATARI_N_ENVS, ATARI_TIMESTEPS, "CnnPolicy", {"lr_schedule": "constant"})
        elif info.minatar:
            run = f"MinAtar's settings {_MINATAR_RUN}"
            hyperparameters = {"policy_kwargs": MINATAR_POLICY_KWARGS, "lr_schedule": "constant"}
            defaults = (MINATAR_N_ENVS, MINATAR_TIMESTEPS, "CnnPolicy", hyperparameters)
        else:
            run = f"the command line's fallback {_FALLBACK_RUN}"
            defaults = (DEFAULT_N_ENVS, DEFAULT_TIMESTEPS, "MlpPolicy", dict(FALLBACK_HYPERPARAMETERS))
        n_envs, timesteps, policy, hyperparameters = defaults
        source = f"No preset for {env_id}: using ACER's defaults with {run}."
        base = TrainSettings(info, n_envs, timesteps, policy, False, {}, (), hyperparameters, 0, source, {})
    sticky = gym.spec(env_id).kwargs.get("repeat_action_probability", 0.0) if info.atari else 0.0
    if sticky:
        source = base.source + (
            f" {env_id} keeps its sticky actions (repeat_action_probability={sticky}, as its version "
            "defines); NoFrameskip-v4 ids, as SB2's run_atari used, have none."
        )
        base = base._replace(source=source)
    return base


def _check_preset_values(preset: Preset) -> None:
    """The preset's own settings, checked as ACER checks them (without an env), so that a value it refuses
    is reported as the preset file's, not as the command's."""
    try:
        ACER.check_settings(preset.policy, **{**preset.hyperparameters, "verbose": 0})
    except (ValueError, TypeError) as error:
        raise UsageError(_preset_label(preset) + one_line(error)) from None


def _accepted_hyperparameters() -> list[str]:
    parameters = inspect.signature(ACER.__init__).parameters
    excluded = {"self", "policy", "env", "_init_setup_model", *OWN_FLAGS}
    return sorted(set(parameters) - excluded)


def _check_hyperparameter_keys(hyperparams: dict[str, Any], preset: Preset | None = None) -> None:
    """Refuse a key that is not an ACER argument (nor ``normalize`` or ``env_wrapper`` on the command line);
    for the arguments of a ``preset``, the message names the preset."""
    accepted = _accepted_hyperparameters()
    run_keys = RUN_KEYS if preset is None else ()
    where = "" if preset is None else _preset_label(preset)
    for key in hyperparams:
        if key in OWN_FLAGS and preset is None:
            raise UsageError(f"--hyperparams {key}: use {OWN_FLAGS[key]} instead")
        if key not in accepted and key not in run_keys:
            listed = ", ".join([*accepted, *run_keys])
            raise UsageError(f"{where}unknown hyperparameter {key!r} for ACER; accepted: {listed}")


def _preset_label(preset: Preset) -> str:
    """How an error names ``preset``, as :func:`~sb3_acer.presets.load_preset` does."""
    suffix = f" (for {preset.env_id})" if preset.entry != preset.env_id else ""
    return f"preset {preset.entry!r}{suffix} in {PRESET_FILE}: "


def _resolve_policy_kwargs(policy_kwargs: Any) -> Any:
    try:
        return resolve_policy_kwargs(policy_kwargs)
    except ValueError as error:
        raise UsageError(str(error)) from None

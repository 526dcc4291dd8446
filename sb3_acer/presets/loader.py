"""Tuned hyperparameter presets, in the rl-baselines3-zoo YAML format (``acer.yml``).

Each entry is keyed by environment id; ``n_envs``, ``n_timesteps``, ``policy``, ``normalize``,
``env_wrapper``, ``frame_stack`` and ``env_kwargs`` (keyword arguments of ``gymnasium.make``) describe the
run, every other key is an ``ACER`` constructor argument. As in the zoo:

- ``normalize`` is ``true`` (``VecNormalize`` with its defaults) or a dict of ``VecNormalize`` arguments
  (:data:`NORMALIZE_KEYS`), written as a string, ``"{'norm_obs': False, 'norm_reward': True}"`` or
  ``"dict(norm_obs=False, norm_reward=True)"``;
- ``env_wrapper`` names a wrapper class (or a list of them, each a name or a one-item ``{name: kwargs}``
  mapping) applied to each env outside its ``Monitor``: a short name of :data:`ENV_WRAPPERS`, or the full
  import path of any ``gymnasium.Wrapper`` class (e.g. ``minigrid.wrappers.ImgObsWrapper``);
- ``policy_kwargs`` is a dict or its string, e.g. ``"dict(net_arch=[64, 64], activation_fn=nn.ReLU,
  optimizer_class=RMSpropTFLike, optimizer_kwargs=dict(eps=1e-5))"``; the zoo ``eval``s such strings, here
  :func:`~sb3_acer.presets.expressions.read_expression` reads them without evaluating anything
  (constants, lists, tuples, dicts, ``dict(key=value, ...)`` and class names only), and
  :func:`resolve_policy_kwargs` resolves the names;
- ``learning_rate: lin_<number>`` is the linear schedule: ``learning_rate=<number>`` with
  ``lr_schedule='linear'``, ACER's decay to 0 over the run (:func:`zoo_schedules`);
- the ``atari`` entry applies to every Atari game without an entry of its own. An Atari game's entry is
  laid over the settings of a run without a preset (the caller's ``atari_defaults``: SB2 ``run_atari``'s
  for the CLI), which always applies SB3's ``AtariWrapper`` and a 4-frame stack: an entry may name that
  wrapper first in its ``env_wrapper`` (without arguments) and give ``frame_stack: 4``, as the zoo's do,
  and nothing else for these.

A setting that cannot be used raises :class:`PresetError`, naming the file and the entry.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import importlib
import inspect
import math
import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, NamedTuple

import gymnasium as gym
import yaml
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from torch import nn, optim

from sb3_acer.common.checks.fields import BOOLEAN, Rule, check, is_number
from sb3_acer.presets.expressions import ClassName, read_expression

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

RUN_KEYS = ("n_envs", "n_timesteps", "policy", "normalize", "env_wrapper", "frame_stack", "env_kwargs")
#: Where the presets are, as error messages name the file.
PRESET_FILE = "sb3_acer/presets/acer.yml"
#: The entry that applies to every Atari game without its own, as in the zoo.
ATARI_ENTRY = "atari"
#: The frames an Atari game's observation stacks (the only ``frame_stack`` an entry may give).
ATARI_FRAME_STACK = 4
#: SB3's Atari preprocessing, which the zoo names in an ``atari`` entry's ``env_wrapper``; the CLI applies it
#: to every Atari game, with its defaults.
ATARI_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"
#: ``optimizer_class`` names outside ``torch.optim`` that ``policy_kwargs`` may give, by their short name.
OPTIMIZERS = {"RMSpropTFLike": "stable_baselines3.common.sb2_compat.rmsprop_tf_like.RMSpropTFLike"}
#: The ``VecNormalize`` arguments a ``normalize`` dict may set (``gamma`` comes from the run's ``gamma``).
NORMALIZE_KEYS = ("norm_obs", "norm_reward", "clip_obs", "clip_reward", "epsilon")
#: The wrappers an ``env_wrapper`` setting may name, by their import path (the zoo's spelling). A short name
#: (the part after the last dot) names the same class. Any other wrapper is named by its full import path:
#: a preset and the command line are the user's own configuration; a run's ``.json`` file, which ``enjoy``
#: reads, may name only wrappers of modules imported already or of packages the user names (see
#: :func:`env_wrappers`).
ENV_WRAPPERS = ("sb3_contrib.common.wrappers.TimeFeatureWrapper",)


class PresetError(ValueError):
    """The preset file is damaged, or an entry of it has a setting that cannot be used (the message names the
    file and the entry)."""


class WrapperSpec(NamedTuple):
    """One wrapper of an ``env_wrapper`` setting: its import path (one of :data:`ENV_WRAPPERS`) and the
    keyword arguments it is built with; plain data, as a run's ``.json`` file stores it."""

    name: str
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class Preset:
    """A tuned configuration for one environment."""

    env_id: str
    n_envs: int
    n_timesteps: int
    policy: str
    normalize: bool
    hyperparameters: dict[str, Any] = field(default_factory=dict)
    #: ``VecNormalize`` arguments when ``normalize`` is set (empty: its defaults).
    normalize_kwargs: dict[str, Any] = field(default_factory=dict)
    #: Wrappers applied to each env outside its ``Monitor``, in order (:func:`env_wrappers`).
    env_wrapper: tuple[WrapperSpec, ...] = ()
    #: The entry of the preset file it comes from: ``env_id``, or ``"atari"`` for an Atari game without one.
    entry: str = ""
    #: Keyword arguments of ``gymnasium.make`` (the zoo's ``env_kwargs``).
    env_kwargs: dict[str, Any] = field(default_factory=dict)


def _text() -> str:
    return resources.files(__package__).joinpath("acer.yml").read_text()


def _read() -> dict[str, Any]:
    """The preset file's entries, by name.

    Raises:
        PresetError: the file is not YAML, or not a mapping.
    """
    damaged = f"the preset file {PRESET_FILE} is damaged"
    try:
        data = yaml.safe_load(_text())
    except (yaml.YAMLError, UnicodeDecodeError, RecursionError, OSError) as error:
        raise PresetError(f"{damaged}: {_read_problem(error)}") from None
    if not isinstance(data, dict):
        raise PresetError(f"{damaged}: it must map environment ids to settings")
    for name in data:
        if not isinstance(name, str):
            raise PresetError(f"{damaged}: entry names must be environment ids (strings), got {name!r}")
    return data


def _read_problem(error: Exception) -> str:
    """Why the preset file cannot be read, on one line: what YAML's ``error`` says is wrong and where, or
    that the text is not UTF-8, nested too deeply or cannot be read."""
    if isinstance(error, UnicodeDecodeError):
        return "it is not UTF-8 text"
    if isinstance(error, RecursionError):
        return "it is nested too deeply to read"
    if isinstance(error, OSError):
        return f"it cannot be read: {error.strerror or error}"
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None)
    if problem is None:
        return " ".join(str(error).split())
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"{problem}{where}"


def available_presets() -> list[str]:
    """Environment ids that have a preset (the ``atari`` entry, for any Atari game, is not one).

    Raises:
        PresetError: the preset file is damaged.
    """
    return sorted(name for name in _read() if name != ATARI_ENTRY)


def has_atari_defaults() -> bool:
    """Whether the preset file has an ``atari`` entry (defaults for Atari games without their own).

    Raises:
        PresetError: the preset file is damaged.
    """
    return ATARI_ENTRY in _read()


def load_preset(env_id: str, *, atari_defaults: Mapping[str, Any] | None = None) -> Preset:
    """The preset for ``env_id``, its zoo strings read (:func:`read_expression`, :func:`zoo_schedules`) and
    its ``policy_kwargs`` class names resolved (:func:`resolve_policy_kwargs`).

    Args:
        env_id: the environment id.
        atari_defaults: for an Atari game, the settings of a run without a preset (``n_envs``,
            ``n_timesteps``, ``policy`` and constructor arguments): the game's own entry, or else the
            ``atari`` entry, is laid over them. ``None``: ``env_id`` is not an Atari game.

    Raises:
        KeyError: no preset applies to ``env_id``.
        PresetError: the preset file is damaged, or the entry has a setting that cannot be used; the message
            names the file and the entry.
    """
    data = _read()
    atari = atari_defaults is not None
    name = env_id if env_id in data or not atari else ATARI_ENTRY
    if name not in data:
        raise KeyError(f"no ACER preset for {env_id!r}; presets exist for {', '.join(available_presets())}")
    label = repr(name) + (f" (for {env_id})" if name != env_id else "")
    try:
        return _preset(env_id, name, data[name], dict(atari_defaults or {}), atari=atari)
    except ValueError as error:
        raise PresetError(f"preset {label} in {PRESET_FILE}: {error}") from None


def _preset(env_id: str, name: str, raw: Any, defaults: dict[str, Any], *, atari: bool) -> Preset:
    if not isinstance(raw, dict):
        raise ValueError(f"the entry must map settings to values, got {raw!r}")
    entry = {**defaults, **zoo_schedules(raw)}
    if "policy_kwargs" in entry:
        entry["policy_kwargs"] = resolve_policy_kwargs(entry["policy_kwargs"])
    normalize = normalize_kwargs(entry.pop("normalize", False))
    wrappers = env_wrappers(entry.pop("env_wrapper", None), atari=atari)
    if "frame_stack" in entry:
        frame_stack = entry.pop("frame_stack")
        if not atari:
            raise ValueError("frame_stack: only Atari games are stacked")
        if frame_stack != ATARI_FRAME_STACK or isinstance(frame_stack, bool):
            raise ValueError(
                f"frame_stack: only {ATARI_FRAME_STACK} is supported (the stack the CLI builds), "
                f"got {frame_stack!r}"
            )
    env_kwargs = check_env_kwargs(entry.pop("env_kwargs", None) or {})
    return Preset(
        env_id=env_id,
        env_kwargs=env_kwargs,
        n_envs=_whole(entry.pop("n_envs", 1), "n_envs"),
        n_timesteps=_whole(entry.pop("n_timesteps", 1e6), "n_timesteps"),
        policy=str(entry.pop("policy", "MlpPolicy")),
        normalize=normalize is not None,
        hyperparameters=entry,
        normalize_kwargs=normalize or {},
        env_wrapper=wrappers,
        entry=name,
    )


def check_env_kwargs(value: Any) -> dict[str, Any]:
    """``value`` if it can be given to ``gymnasium.make`` as keyword arguments.

    Raises:
        ValueError: not a mapping of names, or it sets ``render_mode`` (``enjoy`` sets that).
    """
    if not isinstance(value, dict) or not all(isinstance(key, str) and key.isidentifier() for key in value):
        raise ValueError(f"env_kwargs must map argument names to values, got {value!r}")
    if "render_mode" in value:
        raise ValueError("env_kwargs render_mode: enjoy --render and --video-folder set it")
    for key, item in value.items():
        if not _json_keeps(item):  # model.json must give enjoy back the same value
            hint = (
                "use a list"
                if isinstance(item, tuple)
                else "use numbers, strings, booleans, None, lists, dicts"
            )
            raise ValueError(f"env_kwargs {key}: {item!r} cannot be kept in model.json; {hint}")
    return dict(value)


def _json_keeps(value: Any) -> bool:
    """Whether JSON gives ``value`` back as it is (a tuple would come back a list, a set not at all)."""
    if value is None or isinstance(value, bool | int | float | str):  # Python's json keeps inf and nan
        return True
    if isinstance(value, list):
        return all(_json_keeps(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(key, str) and _json_keeps(item) for key, item in value.items())
    return False


def _whole(value: Any, key: str) -> int:
    """``value`` as a positive whole number (``1e6`` and ``"1e6"`` count, as YAML may give them)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = math.nan
    if isinstance(value, bool) or not (number.is_integer() and number > 0):
        raise ValueError(f"{key} must be a positive integer, got {value!r}")
    return int(number)


def zoo_schedules(settings: Mapping[str, Any]) -> dict[str, Any]:
    """``settings`` with the zoo's ``learning_rate: lin_<number>`` read as ACER's linear decay from
    ``<number>`` to 0 over the run: ``learning_rate=<number>`` and ``lr_schedule='linear'``.

    Raises:
        ValueError: ``lin_`` without a number after it, or ``settings`` also setting another ``lr_schedule``.
    """
    result = dict(settings)
    value = result.get("learning_rate")
    if not (isinstance(value, str) and value.startswith("lin_")):
        return result
    try:
        rate = float(value.removeprefix("lin_"))
    except ValueError:
        rate = math.nan
    if not math.isfinite(rate):
        raise ValueError(f"learning_rate: {value!r} is not lin_<number>, e.g. lin_7e-4")
    schedule = result.setdefault("lr_schedule", "linear")
    if schedule != "linear":
        raise ValueError(f"learning_rate {value!r} is the linear schedule, but lr_schedule is {schedule!r}")
    result["learning_rate"] = rate
    return result


#: A ``VecNormalize`` bound or epsilon: a positive number (``inf`` too: no clipping).
_POSITIVE_NUMBER = Rule(lambda value: is_number(value) and value > 0, "must be a positive number")


def normalize_kwargs(value: Any) -> dict[str, Any] | None:
    """The ``VecNormalize`` arguments a ``normalize`` setting asks for, ``None`` for no normalisation.

    ``True`` gives ``{}`` (observations and rewards, ``VecNormalize``'s defaults); a dict, or its string as a
    zoo YAML file writes it (``"{'norm_obs': False}"`` or ``"dict(norm_obs=False)"``, read by
    :func:`read_expression`), gives its items, each one of :data:`NORMALIZE_KEYS`.

    Raises:
        ValueError: anything else, naming the problem.
    """
    if isinstance(value, str):
        try:
            value = read_expression(value)
        except SyntaxError:
            pass  # refused below, as the string it is
        except ValueError as error:
            raise ValueError(f"normalize: {error}") from None
    if value is True:
        return {}
    if value is False or value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError(
            "normalize must be True, False or a dict of VecNormalize arguments "
            f"({', '.join(NORMALIZE_KEYS)}), got {value!r}"
        )
    for key, item in value.items():
        if key not in NORMALIZE_KEYS:
            raise ValueError(
                f"normalize: unknown VecNormalize argument {key!r}; accepted: {', '.join(NORMALIZE_KEYS)}"
            )
        check(item, f"normalize: {key}", BOOLEAN if key.startswith("norm_") else _POSITIVE_NUMBER)
    return dict(value)


def env_wrappers(
    value: Any, *, atari: bool = False, packages: Collection[str] | None = None
) -> tuple[WrapperSpec, ...]:
    """The wrappers an ``env_wrapper`` setting asks for, in the order they wrap the env (the first is
    innermost); ``None`` or an empty list for none.

    As in the zoo, the setting is a name, a one-item mapping ``{name: kwargs}``, or a list of these; each name
    is one of :data:`ENV_WRAPPERS` or its last part, e.g. ``TimeFeatureWrapper``, or the full import path of
    a ``gymnasium.Wrapper`` class, e.g. ``minigrid.wrappers.ImgObsWrapper``. With ``packages`` (what ``enjoy``
    allows a run's ``.json`` file to name: the top-level packages the user named on the command line), a
    full path must be in one of these packages, or a class of a module imported already (found without an
    import), so that a file never makes Python import a module. A string
    holding a list or a mapping, as ``--hyperparams`` passes it, is read as one. Keyword arguments are
    checked against the class's signature, so a typo fails here rather than when the env is built.

    For an Atari game (``atari``), SB3's ``AtariWrapper`` may come first, as a zoo ``atari`` entry names it:
    the CLI applies it to every Atari game anyway, so it is left out of the result; it takes no arguments.

    Raises:
        ValueError: an unknown name, a malformed entry or an argument the wrapper does not take.
    """
    if isinstance(value, str) and value[:1] in "[{":
        with contextlib.suppress(ValueError, SyntaxError):
            value = ast.literal_eval(value)
    if value is None or value is False:
        return ()
    entries = value if isinstance(value, (list, tuple)) else [value]
    specs = []
    for index, entry in enumerate(entries):
        if isinstance(entry, dict) and len(entry) == 1:
            ((name, kwargs),) = entry.items()
            kwargs = {} if kwargs is None else kwargs
        else:
            name, kwargs = entry, {}
        if not isinstance(name, str) or not isinstance(kwargs, dict):
            raise ValueError(
                "env_wrapper must be a wrapper name, a {name: kwargs} mapping or a list of these, "
                f"got {entry!r}"
            )
        if name in (ATARI_WRAPPER, ATARI_WRAPPER.rpartition(".")[2]):
            if not atari:
                raise ValueError("env_wrapper: AtariWrapper applies only to Atari games")
            if kwargs:
                raise ValueError(
                    "env_wrapper: AtariWrapper takes no arguments here (the CLI applies it with its "
                    f"defaults), got {kwargs!r}"
                )
            if index > 0:
                raise ValueError("env_wrapper: AtariWrapper must come first (the CLI applies it innermost)")
            continue
        full = next((path for path in ENV_WRAPPERS if name in (path, path.rpartition(".")[2])), None)
        if full is None:
            full = _wrapper_path(name, packages)
        try:
            inspect.signature(_wrapper(full)).bind(None, **kwargs)
        except TypeError as error:
            raise ValueError(f"env_wrapper: {name}: {error}") from None
        specs.append(WrapperSpec(full, dict(kwargs)))
    return tuple(specs)


def _wrapper_path(name: str, packages: Collection[str] | None) -> str:
    """``name`` checked as the full import path of a wrapper class (not one of :data:`ENV_WRAPPERS`)."""
    accepted = f"accepted: {', '.join(ENV_WRAPPERS)}, or the full import path of a gymnasium.Wrapper class"
    if "." not in name:
        raise ValueError(f"env_wrapper: unknown wrapper {name!r}; {accepted}")
    package = name.partition(".")[0]
    module, _, short = name.rpartition(".")
    imported = module in sys.modules and short in vars(sys.modules[module])  # found without an import
    if packages is not None and package not in packages and not imported:
        raise ValueError(
            f"env_wrapper: {name} is in {module}, which is not imported and not in a package named on the "
            f"command line (a run folder does not choose what runs): pass --gym-packages {package} if you "
            "trust it"
        )
    cls = _wrapper(name)
    if not (isinstance(cls, type) and issubclass(cls, gym.Wrapper)):
        raise ValueError(f"env_wrapper: {name} is not a gymnasium.Wrapper class")
    return name


def _wrapper(path: str) -> type[gym.Wrapper]:
    module, _, name = path.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module), name)
    except ImportError as error:
        if (error.name or "").startswith("sb3_contrib"):
            raise ValueError(f"env_wrapper {path} needs {error.name}: pip install sb3-contrib") from None
        raise ValueError(f"env_wrapper {path}: cannot import {module}: {error}") from None
    except AttributeError:
        raise ValueError(f"env_wrapper {path}: {module} has no {name}") from None
    return cls


def wrapper_class(specs: tuple[WrapperSpec, ...]) -> Callable[[gym.Env], gym.Env] | None:
    """A function applying ``specs`` to one env (``make_vec_env``'s ``wrapper_class``); ``None`` for none."""
    if not specs:
        return None
    classes = [(_wrapper(spec.name), spec.kwargs) for spec in specs]

    def wrap(env: gym.Env) -> gym.Env:
        for cls, kwargs in classes:
            try:
                env = cls(env, **kwargs)
            except AssertionError as error:  # sb3-contrib checks the observation space with assert
                env.close()  # the Monitor inside has opened its log file
                raise ValueError(f"env_wrapper {cls.__name__}: {error}") from None
        return env

    return wrap


def evaluation_normalization(venv: VecEnv, like: VecNormalize) -> VecNormalize:
    """``venv`` in a frozen ``VecNormalize`` for evaluation: observations normalised as ``like`` does, with a
    copy of its current statistics, which are never updated; rewards unscaled."""
    env = VecNormalize(
        venv,
        training=False,
        norm_obs=like.norm_obs,
        norm_reward=False,
        clip_obs=like.clip_obs,
        clip_reward=like.clip_reward,
        gamma=like.gamma,
        epsilon=like.epsilon,
    )
    if like.norm_obs:
        env.obs_rms = copy.deepcopy(like.obs_rms)
    return env


def resolve_policy_kwargs(policy_kwargs: Any) -> Any:
    """Turn class names in ``policy_kwargs``, as a YAML preset or a command line can only give them, into
    the classes: ``activation_fn="ReLU"`` (or ``"nn.ReLU"``, ``"th.nn.ReLU"``, ``"torch.nn.ReLU"``, or the
    full path) into an activation class of ``torch.nn``, ``optimizer_class="Adam"`` (or ``"optim.Adam"``,
    ``"th.optim.Adam"``) into a ``torch.optim`` class, or ``"RMSpropTFLike"`` (also by its import path)
    into SB3's ``RMSpropTFLike``, and ``features_extractor_class="FlattenExtractor"`` into one of SB3's
    feature extractors (:data:`CLASS_KEYS`). A name under any other key is refused (the zoo's ``eval``
    would fail on it too), so ``ortho_init=false`` is an error rather than the true string ``'false'``.

    A string is first read as the zoo writes ``policy_kwargs``, e.g.
    ``"dict(net_arch=[64, 64], activation_fn=nn.ReLU)"``, by :func:`read_expression` (never ``eval``).

    Raises:
        ValueError: a string that is not such an expression, or a name that is not such a class.
    """
    if isinstance(policy_kwargs, str):
        try:
            policy_kwargs = read_expression(policy_kwargs)
        except SyntaxError:
            raise ValueError(f"policy_kwargs: {policy_kwargs!r} is not a Python expression") from None
        except ValueError as error:
            raise ValueError(f"policy_kwargs: {error}") from None
    if not isinstance(policy_kwargs, dict):
        return policy_kwargs
    resolved = dict(policy_kwargs)
    for key, value in resolved.items():
        if key in CLASS_KEYS and isinstance(value, str):
            resolved[key] = _class(key, value)
        else:
            _refuse_names(key, value)
    return resolved


#: The names of sb3-acer's ``MinAtarCNN``: short, at its module, and at its module of sb3-acer 0.1.
MINATAR_CNN_NAMES = (
    "MinAtarCNN",
    "sb3_acer.common.policies.torch_layers.MinAtarCNN",
    "sb3_acer.torch_layers.MinAtarCNN",
)

#: The ``policy_kwargs`` keys that take a class, which a preset or a command line gives by name.
CLASS_KEYS = ("activation_fn", "optimizer_class", "features_extractor_class")


def _class(key: str, name: str) -> type:
    """The class ``name`` gives for ``key``: an activation of ``torch.nn``, an optimizer of ``torch.optim``
    (or SB3's ``RMSpropTFLike``), or an SB3 features extractor (or sb3-acer's ``MinAtarCNN``), by its short
    name, with a module prefix (``nn.``, ``th.nn.``, ``torch.nn.``) or by its full path."""
    if key == "features_extractor_class" and name in MINATAR_CNN_NAMES:
        from sb3_acer.common.policies.torch_layers import MinAtarCNN

        return MinAtarCNN
    if key == "optimizer_class" and name in (*OPTIMIZERS, *OPTIMIZERS.values()):
        path = OPTIMIZERS.get(name, name)
        return getattr(importlib.import_module(path.rpartition(".")[0]), path.rpartition(".")[2])
    from stable_baselines3.common import torch_layers

    module, base, home, what = {
        "activation_fn": (
            nn,
            nn.Module,
            "torch.nn.modules.activation",
            "an activation class of torch.nn (e.g. nn.ReLU)",
        ),
        "optimizer_class": (optim, optim.Optimizer, "torch.optim", "a torch.optim class"),
        "features_extractor_class": (
            torch_layers,
            torch_layers.BaseFeaturesExtractor,
            torch_layers.__name__,
            "a features extractor of stable_baselines3.common.torch_layers (e.g. FlattenExtractor)",
        ),
    }[key]
    prefix, _, short = name.rpartition(".")
    value = getattr(module, short, None)
    short_module = module.__name__.rpartition(".")[2]
    prefixes = {"", short_module, f"th.{short_module}", module.__name__}
    if isinstance(value, type):
        full = value.__module__
        prefixes |= {full, full.replace("torch.", "th.", 1), full.removeprefix("torch.")}
    if (
        prefix not in prefixes
        or not isinstance(value, type)
        or not issubclass(value, base)
        or not (value.__module__.startswith(home) or value is nn.Identity)  # Identity: linear layers
    ):
        raise ValueError(f"policy_kwargs: {key} {name!r} is not {what}")
    return value


def _refuse_names(key: str, value: Any) -> None:
    """Raise ``ValueError`` if ``value`` holds a :class:`ClassName` (outside :data:`CLASS_KEYS`)."""
    if isinstance(value, ClassName):
        raise ValueError(
            f"policy_kwargs: {key}: the name {str(value)!r} is not a value; only "
            f"{', '.join(CLASS_KEYS[:-1])} and {CLASS_KEYS[-1]} take class names (write text in quotes, "
            "True/False/None as such)"
        )
    items = value.values() if isinstance(value, dict) else value if isinstance(value, list | tuple) else ()
    for item in items:
        _refuse_names(key, item)

"""Saving and loading ACER models: what a model file holds, and how a model is rebuilt from one.

:func:`save_model` writes what :func:`model_data` collects (hyperparameters, spaces, counters, random
generator states) and the state dicts of the policy, the average policy network and the optimizer, in the
format of :mod:`~sb3_acer.common.save_util.model_file` (with the replay memory of
:mod:`~sb3_acer.common.save_util.replay_file` if asked). :func:`load_model` (``ACER.load``) reads a file in
steps: the file, the saved settings, the caller's overrides, the model built from them, the environment,
the tensors (:func:`set_parameters`, every tensor checked before any is loaded), the counters, and the
replay memory and random generators. Nothing in a file is executed.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import pathlib
import platform
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import gymnasium as gym
import numpy as np
import stable_baselines3
import torch as th
from gymnasium import spaces
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.vec_env import unwrap_vec_normalize

from sb3_acer.acer.policies import replay_action_settings
from sb3_acer.common.checks.settings import (
    UnsupportedSpaceError,
    as_tensor,
    check_count,
    check_finite,
    check_spaces,
)
from sb3_acer.common.observations import observation_layout
from sb3_acer.common.optim import check_optimizer_state, load_optimizer_state
from sb3_acer.common.save_util.class_table import given_classes
from sb3_acer.common.save_util.custom_spaces import SPACE_KEYS, replaced_space
from sb3_acer.common.save_util.model_file import (
    FORMAT_NAME,
    FORMAT_VERSION,
    ModelFileError,
    decode_json_value,
    encode_json_value,
    read_model_data,
    read_model_file,
    read_model_tensors,
    space_from_json,
    space_to_json,
    write_model_file,
)
from sb3_acer.common.save_util.replay_file import (
    check_buffer_matches,
    read_embedded_buffer,
    write_buffer_entries,
)
from sb3_acer.common.save_util.rng_state import (
    generator_from_state,
    generator_state,
    global_rng_states,
    set_global_rng_states,
)

if TYPE_CHECKING:
    from sb3_acer.acer.acer import ACER

__all__ = [
    "HYPERPARAMETERS",
    "NEVER_SAVED",
    "SAVED_MODULES",
    "get_parameters",
    "global_state_restored_on_error",
    "install_replay_buffer",
    "load_model",
    "model_data",
    "replaced_saved_entries",
    "save_model",
    "set_parameters",
]

SelfACER = TypeVar("SelfACER", bound="ACER")
PathOrFile = str | pathlib.Path | io.BufferedIOBase

#: Constructor arguments saved in the model file, in the documented order.
HYPERPARAMETERS = (
    "gamma",
    "n_steps",
    "num_procs",
    "q_coef",
    "ent_coef",
    "max_grad_norm",
    "learning_rate",
    "lr_schedule",
    "q_lr_ratio",
    "rprop_alpha",
    "rprop_epsilon",
    "buffer_size",
    "replay_ratio",
    "replay_start",
    "correction_term",
    "trust_region",
    "alpha",
    "delta",
    "handle_timeout_termination",
    "retrace_lambda",
    "stats_window_size",
    "verbose",
    "tensorboard_log",
    "seed",
)
#: The model's attributes whose state dicts the file holds (``<name>.pth``).
SAVED_MODULES = ("policy", "policy_avg", "optimizer")
#: What SB3's ``save`` leaves out of every file, and the env's last state: no model file holds them, so
#: ``save(exclude=...)`` accepts these names as SB3's does, and they change nothing.
NEVER_SAVED = frozenset(
    {"policy", "device", "env", "rollout_buffer", "_vec_normalize_env", "_episode_storage", "_logger"}
    | {"_custom_logger", "_last_obs", "_last_episode_starts", "_last_original_obs"}
)


@contextlib.contextmanager
def global_state_restored_on_error() -> Iterator[None]:
    """Put torch's thread count and the global random generators back if the block raises: a model that
    fails to build (a policy_kwargs the network refuses, an unusable device) or to load changes nothing
    global."""
    threads, states = th.get_num_threads(), global_rng_states()
    try:
        yield
    except BaseException:
        th.set_num_threads(threads)
        set_global_rng_states(states)
        raise


# ---------------------------------------------------------------------- saving


def _policy_class_name(model: ACER) -> str:
    for alias, cls in model.taken_policy_aliases.items():
        if cls is model.policy_class:
            return alias
    return f"{model.policy_class.__module__}:{model.policy_class.__qualname__}"


def _saved_hyperparameters(model: ACER) -> dict[str, Any]:
    hyperparameters = {name: getattr(model, name) for name in HYPERPARAMETERS if name != "lr_schedule"}
    hyperparameters["lr_schedule"] = model.lr_schedule_name
    if callable(model.learning_rate):
        # A callable cannot be stored as data: store its current value as a constant rate (pass the
        # callable again to ACER.load(..., learning_rate=...) to keep scheduling). At the end of a
        # schedule that decays to 0 that value is 0, which is no learning rate: the initial one is
        # stored then, so that the file loads.
        current = model.current_learning_rate()
        hyperparameters["learning_rate"] = current if current > 0 else float(model.learning_rate(1.0))
        hyperparameters["lr_schedule"] = "constant"
    return hyperparameters


def model_data(model: ACER) -> dict[str, Any]:
    """The JSON data of ``model``'s file (its ``data`` entry): format, versions, settings, spaces,
    counters and the random generators' states."""
    import sb3_acer

    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "algorithm": "ACER",
        "versions": {
            "sb3_acer": sb3_acer.__version__,
            "stable_baselines3": stable_baselines3.__version__,
            "torch": th.__version__,
            "gymnasium": gym.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
        "policy_class": _policy_class_name(model),
        "policy_kwargs": encode_json_value(model.policy_kwargs, "policy_kwargs"),
        "hyperparameters": encode_json_value(_saved_hyperparameters(model), "hyperparameters"),
        "observation_space": space_to_json(model.observation_space),
        "action_space": space_to_json(model.action_space),
        "n_envs": int(model.n_envs),
        "num_timesteps": int(model.num_timesteps),
        "total_timesteps": int(model._total_timesteps),
        "progress_remaining": float(model._current_progress_remaining),
        "n_updates": int(model._n_updates),
        "n_replay_updates": int(model._n_replay_updates),
        "n_skipped_updates": int(model.n_skipped_updates),
        "trained_with_vec_normalize": bool(model.trained_with_vec_normalize),
        "rng_states": {**global_rng_states(), "replay": generator_state(model._replay_rng)},
    }


def save_model(
    model: ACER, path: PathOrFile, exclude: Iterable[str] | None = None, include: Iterable[str] | None = None
) -> None:
    """Write ``model`` to ``path`` (see ``ACER.save``): without the hyperparameters named in ``exclude`` and
    not in ``include`` (they load with their defaults, as SB3's excluded attributes do);
    ``include=["replay_buffer"]`` adds the replay memory, if the model has one.

    Raises:
        ValueError: ``exclude`` names something that is not a hyperparameter, ``replay_buffer`` or one of
            :data:`NEVER_SAVED`; nothing is written.
    """
    included = set(include or ())
    excluded = set(exclude or ()) - included
    unknown = sorted(excluded - {*HYPERPARAMETERS, "replay_buffer", *NEVER_SAVED})
    if unknown:
        raise ValueError(
            f"save cannot exclude {unknown}: only hyperparameters ({', '.join(HYPERPARAMETERS)}) and "
            "replay_buffer can be left out of a model file"
        )
    data = model_data(model)
    data["hyperparameters"] = {
        name: value for name, value in data["hyperparameters"].items() if name not in excluded
    }
    extra = None
    if "replay_buffer" in included and model.replay_buffer is not None:
        buffer = model.replay_buffer

        def extra(archive: zipfile.ZipFile) -> None:
            write_buffer_entries(archive, buffer)

    write_model_file(path, data, model.get_parameters(), extra=extra)


# ---------------------------------------------------------------------- parameters


def get_parameters(model: ACER) -> dict[str, dict]:
    """Copies of the state dicts of the :data:`SAVED_MODULES` of ``model``."""
    return {name: copy.deepcopy(_saved_module(model, name).state_dict()) for name in SAVED_MODULES}


def _saved_module(model: ACER, name: str) -> Any:
    """The module (or optimizer) saved as ``name``: a ``torch.compile``d policy's original module, whose
    weights are the same tensors under their own names (as SB3 saves it, GH#2137)."""
    module = getattr(model, name)
    return getattr(module, "_orig_mod", module)


def _check_module_state(module: th.nn.Module, name: str, state: dict[str, Any], exact_match: bool) -> None:
    own = module.state_dict()
    weights = {key for key, _ in module.named_parameters()}  # buffers may be infinite (bounds)
    missing = set(own) - set(state)
    extra = set(state) - set(own)
    if extra:
        raise RuntimeError(f"{name}: unexpected key(s) {sorted(extra)}")
    if exact_match and missing:
        raise RuntimeError(f"{name}: missing key(s) {sorted(missing)} (exact_match=True)")
    for key, value in state.items():
        tensor = as_tensor(value, f"{name}.{key}")
        if tuple(own[key].shape) != tuple(tensor.shape):
            raise RuntimeError(f"{name}.{key}: shape {tuple(tensor.shape)} != {tuple(own[key].shape)}")
        if key in weights:
            check_finite(tensor, f"{name}.{key}")


def _check_parameters(model: ACER, params: dict[str, Any], exact_match: bool) -> None:
    names = set(SAVED_MODULES)
    unknown = set(params) - names
    if unknown:
        raise ValueError(f"unknown parameter group(s) {sorted(unknown)}; expected some of {sorted(names)}")
    if exact_match and set(params) != names:
        # ValueError, as SB3 raises for missing objects (a module's missing keys stay torch's RuntimeError)
        raise ValueError(f"missing parameter group(s) {sorted(names - set(params))} (exact_match=True)")
    for name, state in params.items():
        if name == "optimizer":
            check_optimizer_state(model.optimizer, model.policy, state)
        else:
            _check_module_state(_saved_module(model, name), name, state, exact_match)


def _load_optimizer_state(model: ACER, state: dict[str, Any]) -> None:
    load_optimizer_state(model.optimizer, state, make_grouped=model._make_optimizer)
    if model.policy_kwargs.get("optimizer_class") is None:
        # The model's rprop_alpha and rprop_epsilon (given to load, say) win over the saved settings.
        for group in model.optimizer.param_groups:
            group.update(alpha=model.rprop_alpha, eps=model.rprop_epsilon)


def set_parameters(
    model: ACER, load_path_or_dict: PathOrFile | dict[str, dict], exact_match: bool = True
) -> None:
    """Load parameters into ``model`` from a model file or a ``get_parameters()``-style dict, after
    checking all of them (see ``ACER.set_parameters``)."""
    if isinstance(load_path_or_dict, dict):
        params = load_path_or_dict
    else:
        _, params = read_model_file(load_path_or_dict, device=model.device, limits=_tensor_limits(model))
    _check_parameters(model, params, exact_match)
    backup = model.get_parameters()
    try:
        for name, state in params.items():
            if name == "optimizer":
                _load_optimizer_state(model, state)
            else:
                _saved_module(model, name).load_state_dict(
                    {key: th.as_tensor(value) for key, value in state.items()}, strict=exact_match
                )
    except Exception:
        # E.g. an optimizer state of another network: restore everything loaded so far.
        for name, state in backup.items():
            _saved_module(model, name).load_state_dict(state)
        raise


#: What a tensor entry may hold beyond its tensors' bytes: the pickle of the state dict and the zip around it
#: (a few hundred bytes a tensor; this covers thousands).
TENSOR_ENTRY_SLACK = 1 << 20
#: The optimizer's state per parameter, in parameters: RMSProp keeps one tensor (its square average), Adam
#: two or three; four leaves room for any optimizer of the same kind.
OPTIMIZER_STATE_PER_PARAMETER = 4


def _tensor_limits(model: ACER) -> dict[str, int]:
    """The most bytes each of ``model``'s tensor entries may hold: what its state dict takes (the optimizer's:
    :data:`OPTIMIZER_STATE_PER_PARAMETER` tensors the size of each parameter), plus
    :data:`TENSOR_ENTRY_SLACK`."""

    def nbytes(tensors: Iterable[th.Tensor]) -> int:
        return sum(tensor.numel() * tensor.element_size() for tensor in tensors)

    limits = {
        name: nbytes(_saved_module(model, name).state_dict().values()) + TENSOR_ENTRY_SLACK
        for name in SAVED_MODULES
        if name != "optimizer"
    }
    weights = nbytes(model.policy.parameters())
    limits["optimizer"] = OPTIMIZER_STATE_PER_PARAMETER * weights + TENSOR_ENTRY_SLACK
    return limits


def install_replay_buffer(model: ACER, buffer: Any) -> None:
    """Install ``buffer`` as ``model``'s replay memory if it fits the model.

    Raises:
        ValueError: if it does not fit (another layout, capacity or LSTM state size).
    """
    actions = replay_action_settings(model.policy, model.action_space)
    check_buffer_matches(
        buffer,
        n_steps=model.n_steps,
        n_envs=model.n_envs,
        obs_shape=observation_layout(model.observation_space)[0],
        obs_dtype=observation_layout(model.observation_space)[1],
        n_actions=actions["n_actions"],
        action_size=actions.get("action_size", 0),
        capacity=model.buffer_size // model.n_steps,
        **({"action_dtype": np.dtype(actions["action_dtype"])} if "action_dtype" in actions else {}),
    )
    if model.replay_buffer is not None and getattr(buffer, "state_size", 0) != getattr(
        model.replay_buffer, "state_size", 0
    ):
        raise ValueError(
            f"the replay buffer holds LSTM states of size {getattr(buffer, 'state_size', 0)}, this "
            f"model's policy needs {getattr(model.replay_buffer, 'state_size', 0)}"
        )
    model.replay_buffer = buffer


# ---------------------------------------------------------------------- loading


@dataclass
class _SavedModel:
    """What a model file holds, decoded and checked (but not yet applied to a model)."""

    data: dict[str, Any]
    replay_buffer: Any
    rng_states: dict[str, Any] | None
    replay_rng: np.random.Generator | None
    hyperparameters: dict[str, Any]
    policy_kwargs: Any
    observation_space: spaces.Space
    action_space: spaces.Space
    policy_name: str


def _saved_replay_rng(path: PathOrFile, rng_states: Any) -> np.random.Generator | None:
    """The replay sampling generator of the saved ``rng_states`` (``None`` if the file has none)."""
    if rng_states is None:
        return None
    try:
        return generator_from_state(rng_states.get("replay"))
    except (AttributeError, ValueError) as error:
        raise ModelFileError(f"{path}: the saved random generator states are corrupt: {error}") from error


def _decode_settings(
    path: PathOrFile, data: dict[str, Any], replaced_policy_kwargs: Any, classes: dict[str, type]
) -> tuple[dict[str, Any], Any, spaces.Space, spaces.Space, str]:
    """The hyperparameters, policy kwargs, observation and action spaces and policy class name of ``data``
    (its ``data`` entry); ``replaced_policy_kwargs`` (if not ``None``) stand for the saved kwargs, unread;
    ``classes`` are the caller's, by path (besides the table of known classes).

    Raises:
        ModelFileError: if an entry is missing or cannot be used.
    """
    try:
        hyperparameters = decode_json_value(data["hyperparameters"], "hyperparameters", classes)
        policy_kwargs = (
            replaced_policy_kwargs
            if replaced_policy_kwargs is not None
            else decode_json_value(data["policy_kwargs"], "policy_kwargs", classes)
        )
        observation_space = space_from_json(data["observation_space"])
        action_space = space_from_json(data["action_space"])
        try:  # what the constructor refuses, a file cannot bring in (an edited or foreign data entry)
            check_spaces(observation_space, action_space)
        except UnsupportedSpaceError as error:
            raise ModelFileError(f"the model data holds spaces ACER cannot use: {error}") from None
        policy_name = data["policy_class"]
        if not isinstance(policy_name, str):
            raise ModelFileError(f"the model data's policy_class must be a name, not {policy_name!r}")
    except KeyError as error:
        raise ModelFileError(f"{path}: the model data lacks the entry {error}") from error
    except ModelFileError as error:
        raise ModelFileError(f"{path}: {error}") from None
    except (ValueError, TypeError, AttributeError, IndexError) as error:
        raise ModelFileError(f"{path}: the model data is invalid: {error}") from error
    if not isinstance(hyperparameters, dict):
        raise ModelFileError(f"{path}: the model data's hyperparameters are not an object")
    unknown = sorted(set(hyperparameters) - set(HYPERPARAMETERS))
    if unknown:
        raise ModelFileError(f"{path}: the model data holds unknown hyperparameters {unknown}")
    return hyperparameters, policy_kwargs, observation_space, action_space, policy_name


def _read_saved_model(
    path: PathOrFile,
    keep_buffer: bool,
    replaced_policy_kwargs: Any,
    print_system_info: bool,
    classes: dict[str, type],
) -> _SavedModel:
    """Read the file at ``path`` and decode what it holds (see :func:`_decode_settings`); the tensors are
    read once the model is built (:func:`_build_networks`), bounded by its state dicts."""
    data = read_model_data(path)
    if print_system_info:
        print("Saved with:", data.get("versions"))
    replay_buffer = read_embedded_buffer(path) if keep_buffer else None
    rng_states = data.get("rng_states")
    replay_rng = _saved_replay_rng(path, rng_states)
    hyperparameters, policy_kwargs, observation_space, action_space, policy_name = _decode_settings(
        path, data, replaced_policy_kwargs, classes
    )
    return _SavedModel(
        data=data,
        replay_buffer=replay_buffer,
        rng_states=rng_states,
        replay_rng=replay_rng,
        hyperparameters=hyperparameters,
        policy_kwargs=policy_kwargs,
        observation_space=observation_space,
        action_space=action_space,
        policy_name=policy_name,
    )


def _apply_arguments(
    cls: type[ACER],
    path: PathOrFile,
    saved: _SavedModel,
    custom_objects: dict[str, Any],
    kwargs: dict[str, Any],
    classes: dict[str, type],
) -> tuple[Any, bool, dict[str, Any]]:
    """Apply ``load``'s ``custom_objects`` and ``kwargs`` to ``saved``'s hyperparameters (the file at
    ``path``; ``classes``: the caller's, by path).

    Returns:
        The policy class, whether the caller gave it, and the hyperparameters the caller set.
    """
    given_policy_kwargs = kwargs.pop("policy_kwargs", None)
    if given_policy_kwargs is not None and encode_json_value(  # as saved: tuples become lists
        given_policy_kwargs, "policy_kwargs"
    ) != encode_json_value(saved.policy_kwargs, "policy_kwargs"):
        raise ValueError(
            f"the given policy_kwargs {given_policy_kwargs} differ from the saved ones {saved.policy_kwargs}"
        )
    # SB2 passed the policy as ``load(path, policy=...)``; SB3 as custom_objects.
    policy_class: Any = next(
        (
            source.pop(key)
            for source in (custom_objects, kwargs)
            for key in ("policy_class", "policy")
            if key in source
        ),
        None,
    )
    policy_given = policy_class is not None
    if policy_class is None and saved.policy_name in cls.taken_policy_aliases:
        policy_class = cls.taken_policy_aliases[saved.policy_name]
    elif policy_class is None:
        try:
            policy_class = decode_json_value({"__class__": saved.policy_name}, "policy_class", classes)
        except ModelFileError as error:
            raise ModelFileError(f"{path}: {error}") from None
    for key in kwargs:
        if key not in HYPERPARAMETERS:
            raise ValueError(f"unknown hyperparameter {key!r} for ACER.load")
    overrides = {**replaced_saved_entries(custom_objects), **kwargs}
    saved.hyperparameters.update(overrides)
    return policy_class, policy_given, overrides


def replaced_saved_entries(custom_objects: dict[str, Any]) -> dict[str, Any]:
    """The hyperparameters that ``load``'s ``custom_objects`` replace, as SB3's ``load`` reads them.

    A key that is one of :data:`HYPERPARAMETERS` replaces the saved value; any other key (``clip_range``,
    which rl-zoo3 passes for every algorithm) is ignored, as SB3 ignores keys its file does not hold. SB3's
    ``lr_schedule`` is the callable of the learning rate: a callable ``lr_schedule`` (rl-zoo3 passes
    ``lambda _: 0.0``) becomes ACER's callable ``learning_rate``, which ACER follows instead of its named
    ``lr_schedule`` (and which replaces a ``learning_rate`` given with it); a name stays ACER's
    ``lr_schedule``.
    """
    entries = {key: value for key, value in custom_objects.items() if key in HYPERPARAMETERS}
    if callable(entries.get("lr_schedule")):
        entries["learning_rate"] = entries.pop("lr_schedule")
    return entries


def _build_model(
    cls: type[SelfACER],
    path: PathOrFile,
    saved: _SavedModel,
    policy_class: Any,
    device: th.device | str,
    overrides: dict[str, Any],
) -> SelfACER:
    """The model of the saved settings, with the saved spaces and number of envs, networks not yet built."""
    try:
        model = cls(
            policy=policy_class,
            env=None,
            device=device,
            policy_kwargs=saved.policy_kwargs or None,
            _init_setup_model=False,
            **saved.hyperparameters,
        )
    except (ValueError, TypeError) as error:
        if overrides:  # the given values may be the cause: report the error as it is
            raise
        raise ModelFileError(f"{path}: the saved settings are invalid: {error}") from error
    model.observation_space = saved.observation_space
    model.action_space = saved.action_space
    n_envs = saved.data.get("n_envs", 1)
    if not isinstance(n_envs, int) or isinstance(n_envs, bool) or n_envs <= 0:
        raise ModelFileError(f"{path}: the model data's n_envs must be a positive integer, not {n_envs!r}")
    model.n_envs = n_envs
    return model


def _attach_env(model: ACER, env: GymEnv | str) -> None:
    """Give the loaded ``model`` the environment ``env``, whose spaces must be the saved ones."""
    vec_env = model._matching_env(env, "load: the environment's spaces differ from the saved model's")
    model.env = vec_env
    model.n_envs = vec_env.num_envs
    model._vec_normalize_env = unwrap_vec_normalize(vec_env)


def _build_networks(model: ACER, path: PathOrFile, policy_given: bool, settings_given: bool) -> None:
    """Build ``model``'s networks, optimizer and replay memory and load the saved tensors into them (each
    tensor entry read only up to the size of the state dict it fills). ``policy_given``: the caller gave the
    policy class or its ``policy_kwargs``; ``settings_given``: those or hyperparameters (an error they may
    cause is the caller's, reported as it is)."""
    try:
        model._setup_model()
    except (AssertionError, UnsupportedSpaceError) as error:  # e.g. NatureCNN needs images
        # The caller's policy, or the file's own (then the file contradicts itself).
        raise (ValueError if policy_given else ModelFileError)(
            f"load: the policy cannot be built for the saved observation space {model.observation_space}: "
            f"{error}"
        ) from None
    except (TypeError, ValueError) as error:  # a features_extractor_kwargs key the extractor refuses, or
        if settings_given:  # a buffer_size the machine cannot hold
            raise
        raise ModelFileError(f"{path}: the model cannot be built from the saved settings: {error}") from None
    except (RuntimeError, MemoryError) as error:  # e.g. Discrete(10**12) actions: out of memory
        raise ModelFileError(
            f"{path}: the policy cannot be built from the saved settings: {' '.join(str(error).split())}"
        ) from None
    tensors = read_model_tensors(path, _tensor_limits(model), device="cpu")
    try:
        model.set_parameters(tensors, exact_match=True)
    except (RuntimeError, ValueError) as error:
        raise ModelFileError(f"{path}: the saved tensors do not fit the model: {error}") from error


#: The counters of a model file, with their value when the file has none (files of sb3-acer 0.1).
_COUNTERS = (
    ("num_timesteps", "num_timesteps", 0),
    ("total_timesteps", "_total_timesteps", 0),
    ("n_updates", "_n_updates", 0),
    ("n_replay_updates", "_n_replay_updates", 0),
    ("n_skipped_updates", "n_skipped_updates", 0),
)


def _restore_counters(model: ACER, path: PathOrFile, data: dict[str, Any]) -> None:
    try:
        counters = {
            attribute: check_count(data.get(key, default), key) for key, attribute, default in _COUNTERS
        }
    except ValueError as error:
        raise ModelFileError(f"{path}: the model data holds an invalid counter: {error}") from None
    progress = data.get("progress_remaining", 1.0)
    if not isinstance(progress, int | float) or isinstance(progress, bool) or not 0.0 <= progress <= 1.0:
        raise ModelFileError(
            f"{path}: the model data holds an invalid counter: progress_remaining must be a number in "
            f"[0, 1], got {progress!r}"
        )
    for attribute, value in counters.items():
        setattr(model, attribute, value)
    model._current_progress_remaining = float(progress)
    flag = data.get("trained_with_vec_normalize", False)
    if not isinstance(flag, bool):
        raise ModelFileError(
            f"{path}: the model data's trained_with_vec_normalize must be true or false, got {flag!r}"
        )
    model._loaded_with_vec_normalize = flag


def _restore_replay_and_rng(model: ACER, path: PathOrFile, saved: _SavedModel, seed: int | None) -> None:
    """Install the saved replay memory, then seed the generators from ``seed`` or restore the saved ones."""
    if saved.replay_buffer is not None and model.replay_ratio > 0:
        try:
            install_replay_buffer(model, saved.replay_buffer)
        except ValueError as error:
            raise ValueError(
                f"load: {error}; pass custom_objects={{'replay_buffer': None}} to start with an "
                "empty replay memory"
            ) from error
    if seed is not None:
        # A seed given to load starts fresh streams from it rather than continuing the saved ones.
        model.set_random_seed(seed)
    elif saved.rng_states is not None:
        try:
            set_global_rng_states(saved.rng_states)
        except ValueError as error:
            raise ModelFileError(f"{path}: {error}") from error
        model._replay_rng = saved.replay_rng  # type: ignore[assignment]


def load_model(
    cls: type[SelfACER],
    path: PathOrFile,
    env: GymEnv | str | None = None,
    device: th.device | str = "auto",
    custom_objects: dict[str, Any] | None = None,
    print_system_info: bool = False,
    **kwargs: Any,
) -> SelfACER:
    """Load a model of class ``cls`` saved with :func:`save_model` (see ``ACER.load``).

    A file that fails to load leaves the global generators and torch's thread count as they were (building
    the model applies the saved ``num_procs`` and seed before the tensors are checked).
    """
    with global_state_restored_on_error():
        custom_objects = dict(custom_objects or {})
        # The classes the caller passes resolve the paths the file names them by (no module is imported).
        classes = given_classes(custom_objects)
        # custom_objects={"replay_buffer": None}: leave out the replay memory the file may hold.
        keep_buffer = custom_objects.pop("replay_buffer", True) is not None
        # custom_objects={"policy_kwargs": ...} replaces the saved ones unread (as in SB3): their classes may
        # live in a script this process cannot import; the saved tensors must still fit the network.
        replaced_policy_kwargs = custom_objects.pop("policy_kwargs", None)
        saved = _read_saved_model(path, keep_buffer, replaced_policy_kwargs, print_system_info, classes)
        saved = dataclasses.replace(
            saved,
            observation_space=replaced_space("observation_space", saved.observation_space, custom_objects),
            action_space=replaced_space("action_space", saved.action_space, custom_objects),
        )
        for key in SPACE_KEYS:
            custom_objects.pop(key, None)
        policy_class, policy_given, overrides = _apply_arguments(
            cls, path, saved, custom_objects, kwargs, classes
        )
        model = _build_model(cls, path, saved, policy_class, device, overrides)
        if env is not None:
            _attach_env(model, env)
        policy_given = policy_given or replaced_policy_kwargs is not None
        _build_networks(model, path, policy_given, policy_given or bool(overrides))
        _restore_counters(model, path, saved.data)
        _restore_replay_and_rng(model, path, saved, overrides.get("seed"))
        return model

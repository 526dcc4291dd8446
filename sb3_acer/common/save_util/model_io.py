"""What a model file means, apart from any algorithm: pure reading, checking and writing of its contents.

The algorithm gathers and restores its own state (:class:`~sb3_acer.common.base_class.DataFileAlgorithm`'s
``save``, ``load`` and ``set_parameters``); this module turns what it hands over into a file and a file back
into checked values: :func:`write_model` writes the data entry, the state dicts and (if asked) the replay
memory in the format of :mod:`~sb3_acer.common.save_util.model_file`; :func:`read_saved_model` reads and
decodes the data entry (:class:`SavedModel`), :func:`load_arguments` applies ``load``'s ``custom_objects``
and keyword arguments to it, :func:`read_counters` checks its counters, and :func:`check_parameters` /
:func:`load_parameters` check every tensor before any is loaded. It imports no algorithm and reads no
private attribute. Nothing in a file is executed.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import io
import pathlib
import platform
import zipfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import stable_baselines3
import torch as th
from gymnasium import spaces

from sb3_acer.common.checks.settings import (
    UnsupportedSpaceError,
    as_tensor,
    check_count,
    check_finite,
    check_spaces,
)
from sb3_acer.common.optim import check_optimizer_state
from sb3_acer.common.save_util.custom_spaces import SPACE_KEYS, replaced_space
from sb3_acer.common.save_util.model_file import (
    FORMAT_NAME,
    FORMAT_VERSION,
    ModelFileError,
    decode_json_value,
    encode_json_value,
    read_entry,
    read_json_entry,
    read_model_data,
    read_model_file,
    read_model_tensors,
    space_from_json,
    write_model_file,
)
from sb3_acer.common.save_util.replay_file import read_embedded_buffer, write_buffer_entries
from sb3_acer.common.save_util.rng_state import (
    generator_from_state,
    global_rng_states,
    set_global_rng_states,
)

__all__ = [
    "OPTIMIZER_STATE_PER_PARAMETER",
    "TENSOR_ENTRY_SLACK",
    "PathOrFile",
    "SavedCounters",
    "SavedModel",
    "check_exclusions",
    "check_parameters",
    "data_header",
    "global_state_restored_on_error",
    "load_arguments",
    "load_parameters",
    "networks_built_from_file",
    "read_counters",
    "read_parameters",
    "read_saved_model",
    "read_tensors",
    "replaced_saved_entries",
    "restore_global_rng_states",
    "saved_module",
    "saved_n_envs",
    "state_dict_copies",
    "tensor_limits",
    "with_given_spaces",
    "write_model",
]

PathOrFile = str | pathlib.Path | io.BufferedIOBase


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


# ---------------------------------------------------------------------- writing


def data_header(algorithm: str) -> dict[str, Any]:
    """The first entries of a model file's data: the format, its version, ``algorithm`` and the versions of
    the libraries that write it."""
    import sb3_acer

    return {
        "format": FORMAT_NAME,
        "format_version": FORMAT_VERSION,
        "algorithm": algorithm,
        "versions": {
            "sb3_acer": sb3_acer.__version__,
            "stable_baselines3": stable_baselines3.__version__,
            "torch": th.__version__,
            "gymnasium": gym.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
        },
    }


def check_exclusions(excluded: set[str], hyperparameters: Iterable[str], never_saved: Iterable[str]) -> None:
    """Raise ``ValueError`` if ``save(exclude=...)`` names something that is neither one of the
    ``hyperparameters``, ``replay_buffer`` nor one of ``never_saved`` (what no model file holds)."""
    names = tuple(hyperparameters)
    unknown = sorted(excluded - {*names, "replay_buffer", *never_saved})
    if unknown:
        raise ValueError(
            f"save cannot exclude {unknown}: only hyperparameters ({', '.join(names)}) and "
            "replay_buffer can be left out of a model file"
        )


def write_model(
    path: PathOrFile, data: dict[str, Any], params: dict[str, dict], replay_buffer: Any = None
) -> None:
    """Write a model file: the JSON ``data`` entry, the state dicts ``params`` and, unless ``None``, the
    replay memory ``replay_buffer`` (see :func:`~sb3_acer.common.save_util.model_file.write_model_file`)."""
    extra = None
    if replay_buffer is not None:

        def extra(archive: zipfile.ZipFile) -> None:
            write_buffer_entries(archive, replay_buffer)

    write_model_file(path, data, params, extra=extra)


# ---------------------------------------------------------------------- tensors


def saved_module(module: Any) -> Any:
    """The module (or optimizer) saved for ``module``: a ``torch.compile``d policy's original module, whose
    weights are the same tensors under their own names (as SB3 saves it, GH#2137). torch has no public name
    for it; ``_orig_mod`` is what SB3 reads too."""
    return getattr(module, "_orig_mod", module)


def state_dict_copies(modules: Mapping[str, Any]) -> dict[str, dict]:
    """Copies of the state dicts of ``modules`` (modules or optimizers, by their saved names)."""
    return {name: copy.deepcopy(saved_module(module).state_dict()) for name, module in modules.items()}


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


def check_parameters(
    modules: Mapping[str, Any], policy: th.nn.Module, params: dict[str, Any], exact_match: bool
) -> None:
    """Raise unless ``params`` (state dicts by saved name) fit ``modules`` (the modules and optimizers by
    saved name; an optimizer's state must be over ``policy``'s parameters).

    Raises:
        ValueError: an unknown group, or (``exact_match``) a missing one; an optimizer state of another kind.
        RuntimeError: a module's unexpected or (``exact_match``) missing key, or a tensor of another shape.
    """
    names = set(modules)
    unknown = set(params) - names
    if unknown:
        raise ValueError(f"unknown parameter group(s) {sorted(unknown)}; expected some of {sorted(names)}")
    if exact_match and set(params) != names:
        # ValueError, as SB3 raises for missing objects (a module's missing keys stay torch's RuntimeError)
        raise ValueError(f"missing parameter group(s) {sorted(names - set(params))} (exact_match=True)")
    for name, state in params.items():
        module = modules[name]
        if isinstance(module, th.optim.Optimizer):
            check_optimizer_state(module, policy, state)
        else:
            _check_module_state(saved_module(module), name, state, exact_match)


def load_parameters(
    modules: Mapping[str, Any],
    params: dict[str, Any],
    exact_match: bool,
    load_optimizer: Callable[[str, dict[str, Any]], None],
) -> None:
    """Load ``params`` (checked by :func:`check_parameters`) into ``modules``; an optimizer's state through
    ``load_optimizer(name, state)``. If one fails, everything loaded so far is put back."""
    backup = state_dict_copies(modules)
    try:
        for name, state in params.items():
            module = modules[name]
            if isinstance(module, th.optim.Optimizer):
                load_optimizer(name, state)
            else:
                saved_module(module).load_state_dict(
                    {key: th.as_tensor(value) for key, value in state.items()}, strict=exact_match
                )
    except Exception:
        # E.g. an optimizer state of another network: restore everything loaded so far.
        for name, state in backup.items():
            saved_module(modules[name]).load_state_dict(state)
        raise


def read_parameters(path: PathOrFile, device: th.device | str, limits: dict[str, int]) -> dict[str, Any]:
    """The state dicts of the model file at ``path`` (each entry read up to ``limits[name]`` bytes)."""
    _, params = read_model_file(path, device=device, limits=limits)
    return params


#: What a tensor entry may hold beyond its tensors' bytes: the pickle of the state dict and the zip around it
#: (a few hundred bytes a tensor; this covers thousands).
TENSOR_ENTRY_SLACK = 1 << 20
#: The optimizer's state per parameter, in parameters: RMSProp keeps one tensor (its square average), Adam
#: two or three; four leaves room for any optimizer of the same kind.
OPTIMIZER_STATE_PER_PARAMETER = 4


def tensor_limits(modules: Mapping[str, Any], policy: th.nn.Module) -> dict[str, int]:
    """The most bytes each tensor entry of a model with ``modules`` may hold: what its state dict takes (an
    optimizer's: :data:`OPTIMIZER_STATE_PER_PARAMETER` tensors the size of each of ``policy``'s parameters),
    plus :data:`TENSOR_ENTRY_SLACK`."""

    def nbytes(tensors: Iterable[th.Tensor]) -> int:
        return sum(tensor.numel() * tensor.element_size() for tensor in tensors)

    weights = nbytes(policy.parameters())
    return {
        name: (
            OPTIMIZER_STATE_PER_PARAMETER * weights
            if isinstance(module, th.optim.Optimizer)
            else nbytes(saved_module(module).state_dict().values())
        )
        + TENSOR_ENTRY_SLACK
        for name, module in modules.items()
    }


# ---------------------------------------------------------------------- reading


@dataclass
class SavedModel:
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
    path: PathOrFile,
    data: dict[str, Any],
    replaced_policy_kwargs: Any,
    classes: dict[str, type],
    names: tuple[str, ...],
) -> tuple[dict[str, Any], Any, spaces.Space, spaces.Space, str]:
    """The hyperparameters (among ``names``), policy kwargs, observation and action spaces and policy class
    name of ``data`` (its ``data`` entry); ``replaced_policy_kwargs`` (if not ``None``) stand for the saved
    kwargs, unread; ``classes`` are the caller's, by path (besides the table of known classes).

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
    unknown = sorted(set(hyperparameters) - set(names))
    if unknown:
        raise ModelFileError(f"{path}: the model data holds unknown hyperparameters {unknown}")
    return hyperparameters, policy_kwargs, observation_space, action_space, policy_name


#: The entry that marks a zip as a Stable-Baselines3 model file, and that of Stable-Baselines 2's.
SB3_VERSION_ENTRY, SB2_PARAMETER_LIST_ENTRY = "_stable_baselines3_version", "parameter_list"


def _foreign_model(path: PathOrFile) -> str:
    """What the model file of another library at ``path`` is, said after "is not an sb3-acer model file";
    ``""`` for anything else. Only the archive's entry names, its ``data`` JSON and SB3's version entry are
    read (each bounded), nothing is unpickled."""
    try:
        if isinstance(path, io.IOBase):
            path.seek(0)
        with zipfile.ZipFile(path) as archive:
            names = set(archive.namelist())
            data = read_json_entry(archive, "data", path, "model data") if "data" in names else None
            # SB3's data entry names its policy class as a pickle (sb3-acer's files, which copy SB3's
            # layout and so also hold its version entry, name it by a string).
            pickled_policy = isinstance(data, dict) and ":serialized:" in (data.get("policy_class") or {})
            if not pickled_policy:
                return ""
            if SB3_VERSION_ENTRY in names:
                version = read_entry(archive, SB3_VERSION_ENTRY, 64).decode("ascii", "replace").strip()
                library = f"Stable-Baselines3 model file (stable-baselines3 {version})"
            elif SB2_PARAMETER_LIST_ENTRY in names:
                library = "Stable-Baselines 2 model file"
            else:
                return ""
    except Exception:  # e.g. a corrupt entry (zlib.error): the refusal stands as it is, without a hint
        return ""
    return (
        f"; it is a {library}: load it with the class of the algorithm that saved it (e.g. "
        "stable_baselines3.PPO.load), and sb3-acer's own files with sb3_acer.ACER.load"
    )


def read_saved_model(
    path: PathOrFile,
    keep_buffer: bool,
    replaced_policy_kwargs: Any,
    print_system_info: bool,
    classes: dict[str, type],
    names: tuple[str, ...],
    algorithm: str,
) -> SavedModel:
    """Read the file at ``path`` of ``algorithm`` and decode what it holds (``names``: the hyperparameters it
    may hold); the tensors are read once the model is built (:func:`read_tensors`), bounded by its state
    dicts."""
    try:
        data = read_model_data(path, algorithm)
    except ModelFileError as error:
        raise ModelFileError(f"{error}{_foreign_model(path)}") from error
    if print_system_info:
        print("Saved with:", data.get("versions"))
    replay_buffer = read_embedded_buffer(path) if keep_buffer else None
    rng_states = data.get("rng_states")
    replay_rng = _saved_replay_rng(path, rng_states)
    hyperparameters, policy_kwargs, observation_space, action_space, policy_name = _decode_settings(
        path, data, replaced_policy_kwargs, classes, names
    )
    return SavedModel(
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


def with_given_spaces(saved: SavedModel, custom_objects: dict[str, Any]) -> SavedModel:
    """``saved`` with the spaces that ``load``'s ``custom_objects`` replace (their keys are taken out of
    ``custom_objects``)."""
    saved = dataclasses.replace(
        saved,
        observation_space=replaced_space("observation_space", saved.observation_space, custom_objects),
        action_space=replaced_space("action_space", saved.action_space, custom_objects),
    )
    for key in SPACE_KEYS:
        custom_objects.pop(key, None)
    return saved


def load_arguments(
    path: PathOrFile,
    saved: SavedModel,
    custom_objects: dict[str, Any],
    kwargs: dict[str, Any],
    classes: dict[str, type],
    aliases: Mapping[str, type],
    names: tuple[str, ...],
) -> tuple[Any, bool, dict[str, Any]]:
    """Apply ``load``'s ``custom_objects`` and ``kwargs`` to ``saved``'s hyperparameters (the file at
    ``path``; ``classes``: the caller's, by path; ``aliases``: the policy names; ``names``: the
    hyperparameters).

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
    if policy_class is None and saved.policy_name in aliases:
        policy_class = aliases[saved.policy_name]
    elif policy_class is None:
        try:
            policy_class = decode_json_value({"__class__": saved.policy_name}, "policy_class", classes)
        except ModelFileError as error:
            raise ModelFileError(f"{path}: {error}") from None
    for key in kwargs:
        if key not in names:
            raise ValueError(f"unknown hyperparameter {key!r} for ACER.load")
    overrides = {**replaced_saved_entries(custom_objects, names), **kwargs}
    saved.hyperparameters.update(overrides)
    return policy_class, policy_given, overrides


def replaced_saved_entries(custom_objects: dict[str, Any], names: tuple[str, ...]) -> dict[str, Any]:
    """The hyperparameters (among ``names``) that ``load``'s ``custom_objects`` replace, as SB3's ``load``
    reads them.

    A key that is one of ``names`` replaces the saved value; any other key (``clip_range``, which rl-zoo3
    passes for every algorithm) is ignored, as SB3 ignores keys its file does not hold. SB3's
    ``lr_schedule`` is the callable of the learning rate: a callable ``lr_schedule`` (rl-zoo3 passes
    ``lambda _: 0.0``) becomes ACER's callable ``learning_rate``, which ACER follows instead of its named
    ``lr_schedule`` (and which replaces a ``learning_rate`` given with it); a name stays ACER's
    ``lr_schedule``.
    """
    entries = {key: value for key, value in custom_objects.items() if key in names}
    if callable(entries.get("lr_schedule")):
        entries["learning_rate"] = entries.pop("lr_schedule")
    return entries


def saved_n_envs(path: PathOrFile, data: dict[str, Any]) -> int:
    """The number of envs the model was saved with (1 in files that do not say)."""
    n_envs = data.get("n_envs", 1)
    if not isinstance(n_envs, int) or isinstance(n_envs, bool) or n_envs <= 0:
        raise ModelFileError(f"{path}: the model data's n_envs must be a positive integer, not {n_envs!r}")
    return n_envs


@contextlib.contextmanager
def networks_built_from_file(
    path: PathOrFile, observation_space: spaces.Space, policy_given: bool, settings_given: bool
) -> Iterator[None]:
    """Report an error of building the networks of a loaded model (in the block) as the file's or the
    caller's. ``policy_given``: the caller gave the policy class or its ``policy_kwargs``;
    ``settings_given``: those or hyperparameters (an error they may cause is the caller's, reported as it
    is)."""
    try:
        yield
    except (AssertionError, UnsupportedSpaceError) as error:  # e.g. NatureCNN needs images
        # The caller's policy, or the file's own (then the file contradicts itself).
        raise (ValueError if policy_given else ModelFileError)(
            f"load: the policy cannot be built for the saved observation space {observation_space}: {error}"
        ) from None
    except (TypeError, ValueError) as error:  # a features_extractor_kwargs key the extractor refuses, or
        if settings_given:  # a buffer_size the machine cannot hold
            raise
        raise ModelFileError(f"{path}: the model cannot be built from the saved settings: {error}") from None
    except (RuntimeError, MemoryError) as error:  # e.g. Discrete(10**12) actions: out of memory
        raise ModelFileError(
            f"{path}: the policy cannot be built from the saved settings: {' '.join(str(error).split())}"
        ) from None


def read_tensors(path: PathOrFile, limits: dict[str, int]) -> dict[str, Any]:
    """The state dicts of the model file at ``path``, on the CPU (each up to ``limits[name]`` bytes)."""
    return read_model_tensors(path, limits, device="cpu")


class SavedCounters(NamedTuple):
    """The counters of a model file, checked."""

    #: The model's attribute for each counter and its value.
    values: dict[str, int]
    progress_remaining: float
    trained_with_vec_normalize: bool


def read_counters(
    path: PathOrFile, data: dict[str, Any], counters: Iterable[tuple[str, str, int]]
) -> SavedCounters:
    """The ``counters`` of ``data`` (``(key, attribute, default)``: the default where the file has none, as
    in files of sb3-acer 0.1), its progress remaining and whether it was trained with ``VecNormalize``.

    Raises:
        ModelFileError: a counter that is not a count, a progress outside [0, 1], a flag that is not a bool.
    """
    try:
        values = {attribute: check_count(data.get(key, default), key) for key, attribute, default in counters}
    except ValueError as error:
        raise ModelFileError(f"{path}: the model data holds an invalid counter: {error}") from None
    progress = data.get("progress_remaining", 1.0)
    if not isinstance(progress, int | float) or isinstance(progress, bool) or not 0.0 <= progress <= 1.0:
        raise ModelFileError(
            f"{path}: the model data holds an invalid counter: progress_remaining must be a number in "
            f"[0, 1], got {progress!r}"
        )
    flag = data.get("trained_with_vec_normalize", False)
    if not isinstance(flag, bool):
        raise ModelFileError(
            f"{path}: the model data's trained_with_vec_normalize must be true or false, got {flag!r}"
        )
    return SavedCounters(values, float(progress), flag)


def restore_global_rng_states(path: PathOrFile, states: dict[str, Any]) -> None:
    """Set the global random generators to the saved ``states``."""
    try:
        set_global_rng_states(states)
    except ValueError as error:
        raise ModelFileError(f"{path}: {error}") from error

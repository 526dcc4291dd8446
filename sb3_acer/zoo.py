"""ACER in rl-baselines3-zoo: ``python -m sb3_acer.zoo train|enjoy|record_video [the zoo's flags]``.

The zoo's scripts run as they are (``pip install sb3-acer[zoo]``), with ACER registered under ``acer``
(:func:`register`): in ``rl_zoo3.ALGOS``, and with an Optuna sampler of ACER's hyperparameters
(:func:`sample_acer_params`) for ``train -optimize``. ``--algo`` defaults to ``acer``, and ``train`` reads
the package's presets (``acer.yml``, through :mod:`sb3_acer.presets.zoo_format`) unless ``-conf`` names
another file. For example::

    python -m sb3_acer.zoo train --env CartPole-v1 -f logs
    python -m sb3_acer.zoo train --env CartPole-v1 -optimize --n-trials 20 -n 50000
    python -m sb3_acer.zoo enjoy --env CartPole-v1 -f logs
    python -m sb3_acer.zoo record_video --env CartPole-v1 -f logs -n 1000

``push_to_hub`` and ``load_from_hub`` share a run through the Hugging Face Hub (``pip install
'sb3-acer[zoo,hub]'``; :mod:`sb3_acer.zoo` bridges what the zoo's scripts need of today's packages, see
:func:`generate_metadata`, :func:`bundled_ffmpeg` and :func:`hub_download`)::

    python -m sb3_acer.zoo push_to_hub --env CartPole-v1 -f logs -orga your-name
    python -m sb3_acer.zoo load_from_hub --env CartPole-v1 -f downloads -orga your-name

The card ``push_to_hub`` writes (:func:`model_card`) gives commands of this entry and ``sb3-acer``, which
work as written. ``record_training`` starts Python again, where ACER would not be registered: it is not
forwarded.

A log folder is data, and may come from someone else: before forwarding a command that reads one (``enjoy``,
``record_video``, ``train --trained-agent``), :func:`check_log_folder` checks the files the zoo would read
from it and refuses, in one line, what would run code or import a module the user did not name (YAML tags
that PyYAML's unsafe loader runs, a ``normalize`` string the zoo would ``eval``, wrapper or callback classes
of other packages, pickled ``vecnormalize.pkl`` statistics, another algorithm's pickled model file). With
``--trust-log-folder`` (taken by this entry, not forwarded) the folder is trusted and read as the zoo reads
it. ``push_to_hub`` reads the run folder as ``enjoy`` does, and is checked the same way; ``load_from_hub``
checks each file it downloads before the zoo writes the folder (:func:`hub_download`), so a downloaded
folder holds only what ``enjoy`` plays without the flag, unless the flag was given to ``load_from_hub``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import io
import os
import pathlib
import runpy
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, NoReturn
from unittest import mock

import yaml

from sb3_acer.acer.acer import ACER
from sb3_acer.cli.errors import one_line
from sb3_acer.common.save_util.model_file import ModelFileError
from sb3_acer.presets.expressions import ClassName, read_expression
from sb3_acer.presets.zoo_format import MODULE as PRESETS_MODULE
from sb3_acer.presets.zoo_format import zoo_learning_rate

__all__ = [
    "ALGO",
    "HUB_TAGS",
    "MAX_METRICS_BYTES",
    "MAX_YAML_BYTES",
    "NET_ARCHS",
    "SCRIPTS",
    "TRUSTED_PACKAGES",
    "TRUST_FLAG",
    "LogFolderError",
    "bundled_ffmpeg",
    "check_log_folder",
    "convert_acer_params",
    "generate_metadata",
    "hub_download",
    "main",
    "model_card",
    "read_log_yaml",
    "register",
    "sample_acer_params",
]

#: The name the zoo knows ACER by (``--algo acer``).
ALGO = "acer"
#: The zoo's scripts this module forwards to (``rl_zoo3.<script>``).
SCRIPTS = ("train", "enjoy", "record_video", "push_to_hub", "load_from_hub")
#: The network sizes the sampler chooses from (``net_arch`` of the feed-forward policies: shared layers).
NET_ARCHS: dict[str, list[int]] = {"tiny": [64], "small": [64, 64], "medium": [256, 256]}
#: This entry's flag (not forwarded): trust the log folder, reading it as the zoo does, without the checks.
TRUST_FLAG = "--trust-log-folder"
#: Packages whose modules a log folder's YAML files may name (``env_wrapper``, ``!!python/name:``): those
#: sb3-acer and the zoo depend on. Others must be named on the command line (``--gym-packages``).
TRUSTED_PACKAGES = frozenset(
    {"gymnasium", "numpy", "rl_zoo3", "sb3_acer", "sb3_contrib", "stable_baselines3", "torch"}
)
#: The largest ``config.yml`` or ``args.yml`` read (the zoo's are a few kilobytes).
MAX_YAML_BYTES = 1 << 20
#: The settings of a zoo ``config.yml`` that name a class the zoo imports (by its import path) and calls,
#: and the class it must be.
MODULE_KEYS = {
    "env_wrapper": "gymnasium.Wrapper",
    "vec_env_wrapper": "stable_baselines3.common.vec_env.VecEnvWrapper",
    "callback": "stable_baselines3.common.callbacks.BaseCallback",
    "policy": "stable_baselines3.common.policies.BasePolicy",
}
#: The zoo's download folder: ``enjoy`` fetches a model missing there from the Hugging Face Hub.
HUB_FOLDER = "rl-trained-agents"


def _acer_params(sampled: dict[str, Any]) -> dict[str, Any]:
    """ACER's constructor arguments for the parameters of an Optuna trial: the network's name becomes
    ``policy_kwargs``."""
    hyperparameters = dict(sampled)
    net_arch = hyperparameters.pop("net_arch", None)
    if net_arch is not None:
        hyperparameters["policy_kwargs"] = {"net_arch": list(NET_ARCHS[net_arch])}
    return hyperparameters


def convert_acer_params(sampled: dict[str, Any]) -> dict[str, Any]:
    """The zoo's hyperparameters for a stored trial's parameters (the zoo's ``HYPERPARAMS_CONVERTER``,
    which ``train --trial-id`` lays over the hyperparameter file): as :func:`sample_acer_params` gives them,
    with the learning rate and its schedule written as the zoo reads them (``lin_<rate>`` or a constant
    rate, :func:`~sb3_acer.presets.zoo_format.zoo_learning_rate`), so that the trial is replayed as it ran."""
    return zoo_learning_rate(_acer_params(sampled))


def sample_acer_params(trial: Any, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
    """Sample ACER's constructor arguments for one Optuna trial (the zoo's ``HYPERPARAMS_SAMPLER``
    signature).

    The learning rate and its schedule (``'linear'`` or ``'constant'``: the zoo's file format has no other,
    and ``--trial-id`` replays a trial through it), ``n_steps``, ``replay_ratio``, ``buffer_size`` (at least
    ACER's default ``replay_start``, so replay always starts), ``delta``, ``ent_coef``, ``q_coef``,
    ``correction_term`` and the network size (:data:`NET_ARCHS`).
    """
    sampled = {
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 1e-2, log=True),
        "lr_schedule": trial.suggest_categorical("lr_schedule", ["linear", "constant"]),
        "n_steps": trial.suggest_categorical("n_steps", [5, 10, 20, 32, 64]),
        "replay_ratio": trial.suggest_categorical("replay_ratio", [0, 1, 2, 4, 8]),
        "buffer_size": trial.suggest_categorical("buffer_size", [1000, 5000, 20000, 50000]),
        "delta": trial.suggest_float("delta", 0.1, 10.0, log=True),
        "ent_coef": trial.suggest_float("ent_coef", 1e-8, 0.1, log=True),
        "q_coef": trial.suggest_float("q_coef", 0.1, 1.0),
        "correction_term": trial.suggest_float("correction_term", 1.0, 20.0, log=True),
        "net_arch": trial.suggest_categorical("net_arch", sorted(NET_ARCHS)),
    }
    return _acer_params(sampled)


def register() -> None:
    """Make ACER one of the zoo's algorithms (``--algo acer``), with its Optuna sampler."""
    from rl_zoo3 import hyperparams_opt
    from rl_zoo3.utils import ALGOS

    ALGOS[ALGO] = ACER
    hyperparams_opt.HYPERPARAMS_SAMPLER[ALGO] = sample_acer_params
    hyperparams_opt.HYPERPARAMS_CONVERTER[ALGO] = convert_acer_params  # type: ignore[assignment]


def _given(args: Sequence[str], *flags: str) -> bool:
    return any(arg in flags or arg.startswith(tuple(f"{flag}=" for flag in flags)) for arg in args)


def zoo_arguments(script: str, args: Sequence[str]) -> list[str]:
    """The zoo's command line for ``script``: ``args`` with ``--algo acer`` and, for ``train``, the package's
    presets as the hyperparameter file, unless ``args`` give their own."""
    result = list(args)
    if not _given(result, "--algo"):
        result = ["--algo", ALGO, *result]
    if script == "train" and not _given(result, "-conf", "--conf-file"):
        result = ["--conf-file", PRESETS_MODULE, *result]
    return result


# ------------------------------------------------------------------------------------ received log folders


class LogFolderError(ModelFileError):
    """A file of a zoo log folder is refused: it would run code or import a module the user did not name
    when the zoo reads it, or it is damaged (the message names the file and how to trust the folder)."""


class _Rules(NamedTuple):
    """What a log folder's files may name, and how the user trusts the folder: its path and the flags."""

    folder: str
    packages: frozenset[str]
    #: The command takes ``--gym-packages`` (``enjoy``; not ``record_video``).
    package_flag: bool

    def trust(self, package: str | None = None) -> str:
        """How to read the folder anyway: name ``package`` (where the command can) or trust the folder."""
        named = f"name its package with --gym-packages {package} or " if package and self.package_flag else ""
        return f"{named}pass {TRUST_FLAG} if you trust {self.folder}"


class _ZooYAMLLoader(yaml.SafeLoader):
    """PyYAML's safe loader with the three Python tags the zoo writes in its own files, read as data:
    ``!!python/object/apply:collections.OrderedDict`` (the whole file), ``!!python/tuple`` and
    ``!!python/name:`` of a module of :attr:`_Rules.packages` (``policy_kwargs`` classes), which becomes a
    :class:`~sb3_acer.presets.expressions.ClassName`; nothing is imported. Any other tag is refused."""

    def __init__(self, text: str, path: pathlib.Path, rules: _Rules) -> None:
        super().__init__(text)
        self.path = path
        self.rules = rules

    def refuse(self, node: yaml.Node, what: str) -> LogFolderError:
        line = node.start_mark.line + 1
        return LogFolderError(f"{self.path}, line {line}: refusing {what}; {self.rules.trust()}")


def _short_tag(tag: str) -> str:
    return tag.replace("tag:yaml.org,2002:", "!!", 1)


def _refused_tag(loader: _ZooYAMLLoader, node: yaml.Node) -> Any:
    raise loader.refuse(
        node,
        f"the YAML tag {_short_tag(str(node.tag))}, which the zoo's loader (yaml.UnsafeLoader) would run",
    )


def _ordered_dict(loader: _ZooYAMLLoader, node: yaml.Node) -> dict[Any, Any]:
    """``!!python/object/apply:collections.OrderedDict`` as ``yaml.dump`` writes it: a list of one argument,
    the list of ``[key, value]`` pairs."""
    args = loader.construct_sequence(node, deep=True) if isinstance(node, yaml.SequenceNode) else None
    pairs = args[0] if args else []
    if args is None or len(args) > 1 or not isinstance(pairs, list):
        raise loader.refuse(node, "an OrderedDict tag that is not a list of [key, value] pairs")
    if not all(isinstance(pair, list) and len(pair) == 2 for pair in pairs):
        raise loader.refuse(node, "an OrderedDict tag that is not a list of [key, value] pairs")
    try:
        return dict(pairs)
    except TypeError:
        raise loader.refuse(node, "an OrderedDict whose keys are not values a YAML key can be") from None


def _python_tuple(loader: _ZooYAMLLoader, node: yaml.Node) -> tuple[Any, ...]:
    if not isinstance(node, yaml.SequenceNode):
        raise loader.refuse(node, "a !!python/tuple tag that is not a list")
    return tuple(loader.construct_sequence(node, deep=True))


def _python_name(loader: _ZooYAMLLoader, suffix: str, node: yaml.Node) -> ClassName:
    """``!!python/name:module.Class``, which the zoo's loader imports: read as the class's name, if the
    module is in a package of :attr:`_Rules.packages`."""
    if "." not in suffix or suffix.partition(".")[0] not in loader.rules.packages:
        where = f"{loader.path}, line {node.start_mark.line + 1}"
        raise _foreign_module(where, f"!!python/name:{suffix}", "the zoo's loader", suffix, loader.rules)
    return ClassName(suffix)


_ZooYAMLLoader.add_constructor("tag:yaml.org,2002:python/object/apply:collections.OrderedDict", _ordered_dict)
_ZooYAMLLoader.add_constructor("tag:yaml.org,2002:python/tuple", _python_tuple)
_ZooYAMLLoader.add_multi_constructor("tag:yaml.org,2002:python/name:", _python_name)
_ZooYAMLLoader.add_constructor(None, _refused_tag)


def _foreign_module(where: str, what: str, reader: str, name: str, rules: _Rules) -> LogFolderError:
    """The error for ``name`` (``module.Class``), which ``reader`` would import though ``rules`` do not
    allow its package."""
    module = name.rpartition(".")[0] or name
    return LogFolderError(
        f"{where}: refusing {what}: {reader} would import {module}, which is not a module of "
        f"{', '.join(sorted(rules.packages))}; {rules.trust(name.partition('.')[0])}"
    )


def read_log_yaml(path: str | os.PathLike[str], packages: frozenset[str] = TRUSTED_PACKAGES) -> Any:
    """The data of a zoo log folder's YAML file (``config.yml``, ``args.yml``), read with PyYAML's safe
    loader and the Python tags the zoo itself writes (see :class:`_ZooYAMLLoader`): ``!!python/name:`` of a
    module of ``packages`` is read as its name; nothing is imported or run. The size is checked first.

    Raises:
        LogFolderError: a larger file than :data:`MAX_YAML_BYTES`, text that is not UTF-8 YAML, or a tag
            the zoo's own loader (``yaml.UnsafeLoader``) would run or import from.
    """
    return _read_yaml(pathlib.Path(path), _Rules(str(pathlib.Path(path).parent), packages, package_flag=True))


def _read_yaml(path: pathlib.Path, rules: _Rules) -> Any:
    try:
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:
            raise LogFolderError(
                f"{path} is {size} bytes, more than a zoo file of settings holds (at most {MAX_YAML_BYTES}); "
                f"{rules.trust()}"
            )
        with path.open("rb") as file:
            data = file.read(MAX_YAML_BYTES + 1)
    except OSError as error:
        raise LogFolderError(f"{path} cannot be read: {error.strerror or one_line(error)}") from None
    if len(data) > MAX_YAML_BYTES:
        raise LogFolderError(f"{path} grew past {MAX_YAML_BYTES} bytes while it was read; {rules.trust()}")
    try:
        loader = _ZooYAMLLoader(data.decode("utf-8"), path, rules)
    except UnicodeDecodeError:
        raise LogFolderError(f"{path} is not UTF-8 text, so not a zoo YAML file") from None
    try:
        return loader.get_single_data()
    except yaml.YAMLError as error:
        mark, problem = getattr(error, "problem_mark", None), getattr(error, "problem", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        raise LogFolderError(f"{path} is not valid YAML: {problem or one_line(error)}{where}") from None
    except RecursionError:
        raise LogFolderError(f"{path} is nested too deeply to read") from None
    finally:
        loader.dispose()


def _class_names(value: Any) -> list[str]:
    """The import paths a ``config.yml`` setting of :data:`MODULE_KEYS` names, as the zoo reads them: a
    name, a ``{name: kwargs}`` mapping or a list of these (anything else the zoo imports nothing from)."""
    entries = value if isinstance(value, list) else [value]
    names = []
    for entry in entries:
        keys = list(entry) if isinstance(entry, dict) else [entry]
        names += [key for key in keys if isinstance(key, str)]
    return names


def _plain(value: Any) -> bool:
    """``value`` holds only constants (no name for ``eval`` to look up)."""
    if isinstance(value, ClassName):
        return False
    if isinstance(value, dict):
        return all(_plain(key) and _plain(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return all(_plain(item) for item in value)
    return True


def _check_config(path: pathlib.Path, config: Any, rules: _Rules) -> None:
    """The settings of ``config.yml`` that the zoo ``eval``s (``normalize``) or imports from
    (:data:`MODULE_KEYS`)."""
    if not isinstance(config, dict):
        raise LogFolderError(f"{path} must map settings to values, not hold {type(config).__name__}")
    normalize = config.get("normalize")
    if isinstance(normalize, str) and normalize:
        try:
            value = read_expression(normalize)
        except (SyntaxError, ValueError):
            value = None
        if not isinstance(value, dict) or not _plain(value):
            raise LogFolderError(
                f"{path}: refusing normalize {normalize!r}, which the zoo would run as Python (eval): a "
                f"string must be a dict of constants, '{{...}}' or 'dict(...)'; {rules.trust()}"
            )
    for key, base in MODULE_KEYS.items():
        for name in _class_names(config.get(key)):
            if "." not in name:
                continue  # a policy's name (MlpPolicy); the zoo imports nothing
            if name.partition(".")[0] not in rules.packages:
                raise _foreign_module(str(path), f"{key} {name}", "the zoo", name, rules)
            if not _is_subclass(name, base):
                raise LogFolderError(
                    f"{path}: refusing {key} {name}: it is not a {base.rpartition('.')[2]} class, and the "
                    f"zoo would call it; {rules.trust()}"
                )


def _is_subclass(name: str, base: str) -> bool:
    """Whether ``name`` (``module.Class``, of a package the command line allows) imports as a subclass of
    ``base``."""
    classes = []
    for path in (name, base):
        module, _, attribute = path.rpartition(".")
        try:
            classes.append(getattr(importlib.import_module(module), attribute))
        except (ImportError, AttributeError):
            return False
    return isinstance(classes[0], type) and issubclass(classes[0], classes[1])


def _check_no_pickle(path: str, rules: _Rules) -> None:
    if os.path.lexists(path):
        raise LogFolderError(
            f"{path} holds pickled VecNormalize statistics, and unpickling a file can run any code; refusing "
            f"it; {rules.trust()}"
        )


class _Unparsed(Exception):
    """The zoo's own parser will refuse this command line too (before it reads a file)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Unparsed(message)


def _parser(script: str) -> argparse.ArgumentParser:
    """A parser of the zoo's options (of ``script``) that locate the files it reads, with the zoo's names,
    types and defaults (a subset of the zoo's options parses a command line as the zoo's parser does)."""
    parser = _Parser(add_help=False)
    parser.add_argument("--algo", default=ALGO)
    parser.add_argument("--env", default="CartPole-v1")
    if script in ("train", "enjoy"):  # a flag of one letter: "-Pi x.zip" is "-P -i x.zip"
        parser.add_argument("-P", "--progress", action="store_true")
    if script == "enjoy":
        parser.add_argument("--gym-packages", nargs="+", default=[])
    if script in ("push_to_hub", "load_from_hub"):  # the Hub's flags ("-name" is not "-n ame")
        hub = script == "push_to_hub"
        parser.add_argument("-orga", "--organization", required=hub, default=None if hub else "sb3")
        parser.add_argument("-name", "--repo-name")
    if script == "push_to_hub":
        parser.add_argument("-n", "--n-timesteps", type=int, default=1000)
        parser.add_argument("-m", "--commit-message")
        parser.add_argument("--no-render", action="store_true")
    if script == "train":
        parser.add_argument("-i", "--trained-agent", default="")
    elif script == "load_from_hub":
        parser.add_argument("-f", "--folder", required=True)
    else:
        parser.add_argument("-f", "--folder", default=HUB_FOLDER, required=script == "push_to_hub")
        parser.add_argument("--exp-id", type=int, default=0)
        parser.add_argument("--load-best", action="store_true")
        parser.add_argument("--load-checkpoint", type=int)
        parser.add_argument("--load-last-checkpoint", action="store_true")
    return parser


def _is_help(arg: str) -> bool:
    return arg == "-h" or (len(arg) > 2 and "--help".startswith(arg))


def _packages(env_id: str, gym_packages: Sequence[str]) -> frozenset[str]:
    """:data:`TRUSTED_PACKAGES` and the packages the command line names: ``--gym-packages``, the module of a
    ``module:EnvId`` id, and the package that registered the env (looked up, nothing imported)."""
    import gymnasium

    modules = [*gym_packages, env_id.rpartition(":")[0]]
    spec = gymnasium.registry.get(env_id.rpartition(":")[2])
    if spec is not None and isinstance(spec.entry_point, str):
        modules.append(spec.entry_point.partition(":")[0])
    return TRUSTED_PACKAGES | {module.partition(".")[0] for module in modules if module}


def check_log_folder(script: str, args: Sequence[str]) -> None:
    """Check what the zoo's ``script`` would read from a log folder given ``args`` (its command line, with
    ``--algo``), before it runs. ``enjoy``, ``record_video`` and ``push_to_hub`` read the run folder's
    ``config.yml`` and ``args.yml`` (with PyYAML's unsafe loader, ``eval`` of a ``normalize`` string, and
    imports of the classes they name), its ``vecnormalize.pkl`` (a pickle) and the model file;
    ``train --trained-agent`` reads the model, ``vecnormalize.pkl`` beside it and ACER's replay file (no
    pickle). ``load_from_hub`` reads no folder: its downloads are checked as they arrive
    (:func:`hub_download`). Nothing is read by other commands.

    Raises:
        LogFolderError: a file that would run code or import a module the command line does not name, a
            pickled file, another algorithm's model (pickled by Stable-Baselines3), or a run folder that
            is missing (``enjoy`` would fetch it from the Hugging Face Hub unchecked).
    """
    if any(_is_help(arg) for arg in args):
        return  # the zoo prints its help and reads nothing
    try:
        options = _parser(script).parse_known_args(list(args))[0]
    except _Unparsed:
        return  # the zoo's parser refuses it before reading anything
    from huggingface_sb3 import EnvironmentName

    _FOLDER_CHECKS[script](script, options, EnvironmentName(options.env))


def _check_trained_agent(script: str, options: argparse.Namespace, env_name: str) -> None:
    """``train --trained-agent MODEL``: the model and ``<folder of MODEL>/<env>/vecnormalize.pkl``."""
    if options.trained_agent:
        folder = os.path.dirname(options.trained_agent)
        rules = _Rules(folder or ".", TRUSTED_PACKAGES, package_flag=False)
        _check_algo(options.algo, options.trained_agent, rules)
        _check_no_pickle(os.path.join(folder, env_name, "vecnormalize.pkl"), rules)


def _check_algo(algo: str, where: str, rules: _Rules) -> None:
    """Only ACER's model files are data: other algorithms' are SB3 zips whose ``data`` holds pickles."""
    if algo != ALGO:
        raise LogFolderError(
            f"--algo {algo}: refusing to load {algo} model files ({where}): they hold pickles "
            f"(Stable-Baselines3's format), which can run any code; {rules.trust()}"
        )


def _run_path(script: str, options: argparse.Namespace, env_name: str) -> str:
    """The run folder the zoo's ``script`` reads, found as it finds it (``rl_zoo3.utils.get_model_path``).

    Raises:
        LogFolderError: no model there (``enjoy`` would download one from the Hugging Face Hub into a
            :data:`HUB_FOLDER` folder, unchecked).
    """
    from rl_zoo3.utils import get_model_path

    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the run it picks: the zoo prints it again
            _, _, run = get_model_path(
                options.exp_id,
                options.folder,
                options.algo,
                env_name,
                options.load_best,
                options.load_checkpoint,
                options.load_last_checkpoint,
            )
    except (AssertionError, ValueError) as error:
        hub = script == "enjoy" and HUB_FOLDER in options.folder
        download = (
            f"; enjoy would download it from the Hugging Face Hub, unchecked: pass {TRUST_FLAG} to allow it"
        )
        raise LogFolderError(f"{one_line(error)}{download if hub else ''}") from None
    return run


def _check_run_folder(script: str, options: argparse.Namespace, env_name: str) -> None:
    """``enjoy`` and ``record_video``: the run folder's model, ``<env>/config.yml``, ``<env>/args.yml`` and
    ``<env>/vecnormalize.pkl``."""
    gym_packages = getattr(options, "gym_packages", [])
    packages = _packages(options.env, gym_packages)
    _check_algo(options.algo, options.folder, _Rules(options.folder, packages, package_flag=False))
    run = _run_path(script, options, env_name)
    rules = _Rules(run, packages, package_flag=script == "enjoy")
    stats = pathlib.Path(run, env_name)
    if not stats.is_dir():
        return  # the zoo reads no settings and no statistics
    for name in ("config.yml", "args.yml"):
        path = stats / name
        if path.is_file():
            data = _read_yaml(path, rules)
            if name == "config.yml":
                _check_config(path, data, rules)
            elif not isinstance(data, dict):
                raise LogFolderError(f"{path} must map arguments to values, not hold {type(data).__name__}")
    _check_no_pickle(str(stats / "vecnormalize.pkl"), rules)


def _check_download(script: str, options: argparse.Namespace, env_name: str) -> None:
    """``load_from_hub``: only ACER's model files are data (each downloaded file is checked as it arrives,
    :func:`hub_download`)."""
    repo = f"{options.organization}/{options.repo_name or f'{options.algo}-{env_name}'}"
    _check_algo(options.algo, repo, _Rules(repo, TRUSTED_PACKAGES, package_flag=False))


#: What each forwarded script reads from a log folder, checked (a new script needs an entry).
_FOLDER_CHECKS: dict[str, Callable[[str, argparse.Namespace, str], None]] = {
    "train": _check_trained_agent,
    "enjoy": _check_run_folder,
    "record_video": _check_run_folder,
    "push_to_hub": _check_run_folder,
    "load_from_hub": _check_download,
}


# ------------------------------------------------------------------------------------- Hugging Face Hub

#: What the Hub's model cards are tagged with (the zoo's tags, and this package's).
HUB_TAGS = ("deep-reinforcement-learning", "reinforcement-learning", "stable-baselines3", "sb3-acer", "acer")
#: The largest ``train_eval_metrics.zip`` a download may extract (the zoo's holds monitor files and
#: ``evaluations.npz``: megabytes).
MAX_METRICS_BYTES = 1 << 30
#: The file ``load_from_hub`` takes for "no statistics" when the Hub does not have it.
HUB_STATISTICS = "vec_normalize.pkl"


def generate_metadata(model_name: str, env_id: str, mean_reward: float, std_reward: float) -> dict[str, Any]:
    """The model card's metadata (tags and evaluation), as ``rl_zoo3.push_to_hub`` imports it from
    ``huggingface_sb3.push_to_hub``, which no longer has it (``sb3-team-hf-integration`` 3.x): made with
    ``huggingface_hub``'s ``metadata_eval_result``, tagged :data:`HUB_TAGS` and the environment."""
    from huggingface_hub.repocard import metadata_eval_result

    evaluation = metadata_eval_result(
        model_pretty_name=model_name,
        task_pretty_name="reinforcement-learning",
        task_id="reinforcement-learning",
        metrics_pretty_name="mean_reward",
        metrics_id="mean_reward",
        metrics_value=f"{mean_reward:.2f} +/- {std_reward:.2f}",
        dataset_pretty_name=env_id,
        dataset_id=env_id,
    )
    return {"library_name": "stable-baselines3", "tags": [env_id, *HUB_TAGS], **evaluation}


def model_card(
    env_id: str,
    organization: str,
    repo_name: str | None = None,
    *,
    normalized: bool = False,
    hyperparameters: str = "",
) -> str:
    """The model card (``README.md``, without its metadata) of ACER trained on ``env_id`` in the zoo and
    pushed to ``organization/repo_name`` (by default the zoo's ``acer-<env>``): commands of
    ``python -m sb3_acer.zoo`` and ``sb3-acer``, and Python with ``ACER.load``, which work as written
    (rl_zoo3's own scripts have no ``acer``, and Stable-Baselines3's ``load`` does not read ACER's file).
    ``normalized``: the repository holds ``VecNormalize`` statistics (a pickle), which play only with
    ``--trust-log-folder``; ``hyperparameters``: a Markdown section appended as it is."""
    from huggingface_sb3 import EnvironmentName, ModelName

    env_name = EnvironmentName(env_id)
    default_name = ModelName(ALGO, env_name)
    repo_id = f"{organization}/{repo_name or default_name}"
    name = f" -name {repo_name}" if repo_name and repo_name != default_name else ""
    trust = f" {TRUST_FLAG}" if normalized else ""
    run = f"logs/{ALGO}/{env_name}_1"
    if normalized:
        play = (
            f"The model plays with `VecNormalize` statistics, `{HUB_STATISTICS}`: a pickle, which can run "
            f"any code when it is read. `{TRUST_FLAG}` downloads and reads it: give it only if you trust "
            f"{organization}. (`sb3-acer enjoy` reads its own statistics, not this pickle.)\n\n"
        )
        enjoy_cli = ""
    else:
        play = ""
        enjoy_cli = (
            "# or with sb3-acer's command line (the first download into logs/ is run 1)\n"
            f"sb3-acer enjoy {run}/{env_name}.zip --env {env_id}\n"
        )
    return f"""
# **ACER** Agent playing **{env_id}**

This is a trained model of an **ACER** agent (Actor-Critic with Experience Replay) playing **{env_id}**,
trained with [sb3-acer](https://pypi.org/project/sb3-acer/), ACER for
[Stable-Baselines3](https://github.com/DLR-RM/stable-baselines3), in the
[RL Zoo](https://github.com/DLR-RM/rl-baselines3-zoo).

ACER is not one of Stable-Baselines3's algorithms: load the model with sb3-acer's `ACER.load`
(`PPO.load` and the other algorithms of `stable_baselines3` cannot read it), and use the zoo through
`python -m sb3_acer.zoo` (`python -m rl_zoo3...` has no `--algo acer`).

## Usage (with sb3-acer and the RL Zoo)

{play}```bash
pip install "sb3-acer[zoo,hub]"
# Download the model and save it into the logs/ folder
python -m sb3_acer.zoo load_from_hub --algo {ALGO} --env {env_id} -orga {organization}{name} -f logs/{trust}
python -m sb3_acer.zoo enjoy --algo {ALGO} --env {env_id} -f logs/{trust}
{enjoy_cli}```

## Usage (from Python)

```python
from huggingface_hub import hf_hub_download

from sb3_acer import ACER

model = ACER.load(hf_hub_download(repo_id="{repo_id}", filename="{default_name}.zip"))
```

## Training (with the RL Zoo)

```bash
python -m sb3_acer.zoo train --algo {ALGO} --env {env_id} -f logs/
# Upload the model and generate video (when possible)
python -m sb3_acer.zoo push_to_hub --algo {ALGO} --env {env_id} -f logs/ -orga {organization}{name}
```

{hyperparameters}"""


def _card_writer(options: argparse.Namespace, metadata_save: Callable[..., None]) -> Callable[..., None]:
    """``metadata_save`` as ``rl_zoo3.push_to_hub`` calls it right after it wrote its own card (with
    rl_zoo3's commands, which have no ``acer``): writes :func:`model_card` there instead, keeping the zoo's
    hyperparameters section, then the metadata."""

    def save(path: str | os.PathLike[str], metadata: dict[str, Any]) -> None:
        readme = pathlib.Path(path)
        zoo_card = readme.read_text(encoding="utf-8") if readme.is_file() else ""
        start = zoo_card.find("## Hyperparameters")
        card = model_card(
            options.env,
            options.organization,
            options.repo_name,
            normalized=(readme.parent / HUB_STATISTICS).is_file(),
            hyperparameters=zoo_card[start:] if start >= 0 else "",
        )
        readme.write_text(card, encoding="utf-8")
        metadata_save(readme, metadata)

    return save


@contextlib.contextmanager
def bundled_ffmpeg() -> Iterator[str]:
    """Inside the block, the program ``ffmpeg`` is imageio-ffmpeg's binary (a dependency of moviepy, which
    ``sb3-acer[hub]`` installs): ``huggingface_sb3`` converts the replay video by running ``ffmpeg``,
    which a pip install does not bring. Yields the binary's path.

    Raises:
        ImportError: imageio-ffmpeg is not installed.
    """
    try:
        import imageio_ffmpeg
    except ImportError:
        raise ImportError(
            "the replay video needs imageio-ffmpeg's ffmpeg: pip install 'sb3-acer[hub]'"
        ) from None
    binary = imageio_ffmpeg.get_ffmpeg_exe()
    with tempfile.TemporaryDirectory(prefix="sb3_acer_ffmpeg_") as folder:
        os.symlink(binary, os.path.join(folder, "ffmpeg"))
        path = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
        with mock.patch.dict(os.environ, {"PATH": path}):
            yield binary


@contextlib.contextmanager
def _push_bridge(args: Sequence[str], trusted: bool) -> Iterator[None]:
    """What ``rl_zoo3.push_to_hub`` needs of today's packages while it runs: :func:`generate_metadata`, the
    ACER card (:func:`_card_writer`) and, for the replay video, :func:`bundled_ffmpeg`."""
    import huggingface_hub.repocard

    options = _options("push_to_hub", args)
    with contextlib.ExitStack() as stack:
        # the module (the package's attribute of that name is its function push_to_hub)
        hf_sb3 = importlib.import_module("huggingface_sb3.push_to_hub")
        stack.enter_context(mock.patch.object(hf_sb3, "generate_metadata", generate_metadata, create=True))
        if options is not None:
            writer = _card_writer(options, huggingface_hub.repocard.metadata_save)
            stack.enter_context(mock.patch.object(huggingface_hub.repocard, "metadata_save", writer))
            if not options.no_render:
                try:
                    stack.enter_context(bundled_ffmpeg())
                except ImportError as error:
                    raise SystemExit(
                        f"sb3_acer.zoo push_to_hub: error: {error}; or pass --no-render to push without one"
                    ) from None
        yield


def hub_download(
    repo_id: str, filename: str, *, trusted: bool = False, packages: frozenset[str] = TRUSTED_PACKAGES
) -> str:
    """Download ``filename`` of the Hub's ``repo_id`` (``huggingface_hub.hf_hub_download``) and return its
    path: ``huggingface_sb3.load_from_hub`` as ``rl_zoo3.load_from_hub`` calls it, but checked. Unless
    ``trusted``, each file is checked as :func:`check_log_folder` checks a run folder, before the zoo
    writes the folder: ``config.yml``, ``args.yml`` and ``env_kwargs.yml`` are read as data (classes of
    ``packages`` only), ``vec_normalize.pkl`` (a pickle) is refused, and ``train_eval_metrics.zip`` must
    hold at most :data:`MAX_METRICS_BYTES` in files without folders (the zoo extracts it into the run
    folder, where a ``CartPole-v1/config.yml`` would replace the checked one). ACER's model file is data.
    ``huggingface_sb3``'s own guard (``TRUST_REMOTE_CODE``), for Stable-Baselines3's pickled models, is not
    needed.

    Raises:
        LogFolderError: a refused file, or a file missing from the repository.
        requests.exceptions.HTTPError: no ``vec_normalize.pkl`` (what the zoo takes for no statistics).
    """
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        path = hf_hub_download(repo_id=repo_id, filename=filename, library_name="sb3-acer")
    except EntryNotFoundError:
        if filename == HUB_STATISTICS:
            from requests.exceptions import HTTPError  # what rl_zoo3.load_from_hub catches

            raise HTTPError(f"{repo_id} has no {filename}") from None
        raise LogFolderError(
            f"{repo_id} has no {filename}: not a repository of the zoo's push_to_hub"
        ) from None
    if not trusted:
        check = _DOWNLOAD_CHECKS.get(filename)
        if check is not None:
            check(pathlib.Path(path), _Rules(repo_id, packages, package_flag=False))
    return path


def _check_downloaded_yaml(path: pathlib.Path, rules: _Rules) -> None:
    data = _read_yaml(path, rules)
    if path.name == "config.yml":
        _check_config(path, data, rules)
    elif not isinstance(data, dict) and not (path.name == "env_kwargs.yml" and data is None):
        raise LogFolderError(f"{path} must map arguments to values, not hold {type(data).__name__}")


def _check_downloaded_statistics(path: pathlib.Path, rules: _Rules) -> None:
    _check_no_pickle(str(path), rules)


def _check_metrics(path: pathlib.Path, rules: _Rules) -> None:
    """``train_eval_metrics.zip``, which the zoo extracts into the run folder: plain files (no folders), at
    most :data:`MAX_METRICS_BYTES` extracted."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (OSError, zipfile.BadZipFile) as error:
        raise LogFolderError(f"{path} is not a zip archive: {one_line(error)}") from None
    for member in members:
        if "/" in member.filename or "\\" in member.filename or member.filename in ("", ".", ".."):
            raise LogFolderError(
                f"{path}: refusing {member.filename!r}: the zoo writes plain file names there, and "
                f"extracting this one would write into the run's folders (over its checked settings); "
                f"{rules.trust()}"
            )
    size = sum(member.file_size for member in members)
    if size > MAX_METRICS_BYTES:
        raise LogFolderError(
            f"{path} would extract {size} bytes, more than the zoo's metrics hold (at most "
            f"{MAX_METRICS_BYTES}); {rules.trust()}"
        )


#: How :func:`hub_download` checks each file ``rl_zoo3.load_from_hub`` downloads (the model: data).
_DOWNLOAD_CHECKS: dict[str, Callable[[pathlib.Path, _Rules], None]] = {
    "config.yml": _check_downloaded_yaml,
    "args.yml": _check_downloaded_yaml,
    "env_kwargs.yml": _check_downloaded_yaml,
    HUB_STATISTICS: _check_downloaded_statistics,
    "train_eval_metrics.zip": _check_metrics,
}


@contextlib.contextmanager
def _download_bridge(args: Sequence[str], trusted: bool) -> Iterator[None]:
    """``rl_zoo3.load_from_hub`` downloads with :func:`hub_download` (checked unless ``trusted``)."""
    import huggingface_sb3

    options = _options("load_from_hub", args)
    packages = TRUSTED_PACKAGES if options is None else _packages(options.env, [])
    download = functools.partial(hub_download, trusted=trusted, packages=packages)
    with mock.patch.object(huggingface_sb3, "load_from_hub", download):
        yield


def _options(script: str, args: Sequence[str]) -> argparse.Namespace | None:
    """``args`` as the zoo's ``script`` reads them (None: its parser will refuse them, reading nothing)."""
    try:
        return _parser(script).parse_known_args(list(args))[0]
    except _Unparsed:
        return None


#: What a forwarded script needs while it runs (``args``, trusted), beyond ACER's registration.
_BRIDGES: dict[str, Callable[[Sequence[str], bool], contextlib.AbstractContextManager[None]]] = {
    "push_to_hub": _push_bridge,
    "load_from_hub": _download_bridge,
}
#: The zoo's scripts that work in their ``if __name__ == "__main__":`` block (run as the zoo's command).
_MAIN_BLOCK_SCRIPTS = frozenset({"record_video", "push_to_hub", "load_from_hub"})


def _run_main_block(module: str) -> None:
    """Run ``module`` as ``python -m module`` does, in this process: a fresh copy, even where another
    script imported the module already (``enjoy`` imports ``load_from_hub``'s function)."""
    imported = sys.modules.pop(module, None)
    try:
        runpy.run_module(module, run_name="__main__")
    finally:
        if imported is not None:
            sys.modules[module] = imported


def _run(script: str, args: Sequence[str], trusted: bool = False) -> None:
    """Run the zoo's ``script`` in this process with ``args`` as its command line (and its bridge,
    :data:`_BRIDGES`)."""
    saved_argv = sys.argv
    sys.argv = [f"rl_zoo3.{script}", *args]
    try:
        with _BRIDGES.get(script, lambda args, trusted: contextlib.nullcontext())(args, trusted):
            if script in _MAIN_BLOCK_SCRIPTS:  # a script without a function: run it as the zoo's command does
                _run_main_block(f"rl_zoo3.{script}")
            else:
                getattr(importlib.import_module(f"rl_zoo3.{script}"), script)()
    finally:
        sys.argv = saved_argv


def main(argv: Sequence[str] | None = None) -> None:
    """Run the zoo's ``script`` (the first argument) with ACER registered and the rest of ``argv``, after
    :func:`check_log_folder` (unless ``argv`` holds :data:`TRUST_FLAG`). A file error (a
    :class:`~sb3_acer.common.save_util.model_file.ModelFileError`, :class:`LogFolderError` included) exits
    with one line on stderr."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in SCRIPTS:
        print(
            f"usage: python -m sb3_acer.zoo {{{','.join(SCRIPTS)}}} [{TRUST_FLAG}] [rl-zoo3 arguments]\n"
            "(pip install 'sb3-acer[zoo]'; run a script with --help for its arguments)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    script, trusted = argv[0], TRUST_FLAG in argv[1:]
    args = zoo_arguments(script, [arg for arg in argv[1:] if arg != TRUST_FLAG])
    try:
        importlib.import_module("rl_zoo3")
    except ImportError as error:
        raise SystemExit(f"sb3_acer.zoo needs rl-zoo3 ({error}): pip install 'sb3-acer[zoo]'") from None
    register()
    try:
        if not trusted:
            check_log_folder(script, args)
        _run(script, args, trusted)
    except ModelFileError as error:
        raise SystemExit(f"sb3_acer.zoo {script}: error: {one_line(error)}") from None


if __name__ == "__main__":
    main()

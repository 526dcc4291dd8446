"""The YAML files of a zoo log folder (``config.yml``, ``args.yml``, ``env_kwargs.yml``) read as data: a tag
that would run code, a class of a package the user did not name, or a pickle is refused with
:class:`LogFolderError`, which says how to trust the folder."""

from __future__ import annotations

import importlib
import os
import pathlib
from typing import Any, NamedTuple

import yaml

from sb3_acer.cli.errors import one_line
from sb3_acer.common.save_util.model_file import ModelFileError
from sb3_acer.presets.expressions import ClassName, read_expression

__all__ = [
    "MAX_YAML_BYTES",
    "TRUSTED_PACKAGES",
    "TRUST_FLAG",
    "LogFolderError",
    "Rules",
    "check_config",
    "check_no_pickle",
    "read_log_yaml",
    "read_yaml",
]

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


class LogFolderError(ModelFileError):
    """A file of a zoo log folder is refused: it would run code or import a module the user did not name
    when the zoo reads it, or it is damaged (the message names the file and how to trust the folder)."""


class Rules(NamedTuple):
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
    ``!!python/name:`` of a module of :attr:`Rules.packages` (``policy_kwargs`` classes), which becomes a
    :class:`~sb3_acer.presets.expressions.ClassName`; nothing is imported. Any other tag is refused."""

    def __init__(self, text: str, path: pathlib.Path, rules: Rules) -> None:
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
    module is in a package of :attr:`Rules.packages`."""
    if "." not in suffix or suffix.partition(".")[0] not in loader.rules.packages:
        where = f"{loader.path}, line {node.start_mark.line + 1}"
        raise _foreign_module(where, f"!!python/name:{suffix}", "the zoo's loader", suffix, loader.rules)
    return ClassName(suffix)


_ZooYAMLLoader.add_constructor("tag:yaml.org,2002:python/object/apply:collections.OrderedDict", _ordered_dict)
_ZooYAMLLoader.add_constructor("tag:yaml.org,2002:python/tuple", _python_tuple)
_ZooYAMLLoader.add_multi_constructor("tag:yaml.org,2002:python/name:", _python_name)
_ZooYAMLLoader.add_constructor(None, _refused_tag)


def _foreign_module(where: str, what: str, reader: str, name: str, rules: Rules) -> LogFolderError:
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
    return read_yaml(pathlib.Path(path), Rules(str(pathlib.Path(path).parent), packages, package_flag=True))


def read_yaml(path: pathlib.Path, rules: Rules) -> Any:
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


def check_config(path: pathlib.Path, config: Any, rules: Rules) -> None:
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


def check_no_pickle(path: str, rules: Rules) -> None:
    if os.path.lexists(path):
        raise LogFolderError(
            f"{path} holds pickled VecNormalize statistics, and unpickling a file can run any code; refusing "
            f"it; {rules.trust()}"
        )

"""What the commands import: the modules the user names, and never a module that only a file names.

The user names modules on the command line (``--gym-packages``, a ``module:EnvId`` id, an ``env_wrapper``
import path in ``--hyperparams``): :func:`import_user_module` imports them from an installed package or,
failing that, from the working directory, whichever way the command was started. The ``sb3-acer`` console
script does not have the working directory on ``sys.path`` (``python -m sb3_acer`` has it first): it is
appended at the end while a user-named module is imported, so that a file there never takes the place of
an installed package, and removed again.

A run's ``model.json`` is data from wherever the run folder came from: a module it names (``gym_packages``,
the ``module:`` prefix of ``env_id``, a wrapper's import path) is imported only when the user names it too
(its top-level package, on the command line) or it is imported already; :func:`check_file_modules` refuses
the others in one line that says which option to pass.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
from collections.abc import Collection, Iterable, Iterator
from types import ModuleType

from sb3_acer.cli.errors import CLIError

__all__ = ["check_file_modules", "import_user_module", "top_level", "working_directory_importable"]


def top_level(module: str) -> str:
    """The top-level package of ``module`` (``minigrid`` for ``minigrid.wrappers``)."""
    return module.partition(".")[0]


@contextlib.contextmanager
def working_directory_importable() -> Iterator[None]:
    """Inside the block, modules can be imported from the working directory too: it is appended to
    ``sys.path`` (at the end: an installed package of the same name comes first) unless it is there
    already, and removed again after."""
    cwd = os.getcwd()
    present = any(_same_folder(entry, cwd) for entry in sys.path if isinstance(entry, str))
    if not present:
        sys.path.append(cwd)
        importlib.invalidate_caches()  # a module written there since the last look is seen
    try:
        yield
    finally:
        if not present:
            with contextlib.suppress(ValueError):  # the import itself may have changed sys.path
                del sys.path[len(sys.path) - 1 - sys.path[::-1].index(cwd)]


def _same_folder(entry: str, folder: str) -> bool:
    try:
        return os.path.samefile(entry or os.curdir, folder)
    except OSError:  # a path entry that does not exist (or a zip file) is not the folder
        return False


def import_user_module(module: str) -> ModuleType:
    """Import ``module``, which the user named on the command line, from an installed package or the working
    directory (:func:`working_directory_importable`)."""
    with working_directory_importable():
        return importlib.import_module(module)


def check_file_modules(path: object, field: str, modules: Iterable[str], named: Collection[str]) -> None:
    """Raise :class:`CLIError` if the file ``path`` names in ``field`` a module (``modules``) that the user
    did not name (``named``: the top-level packages given on the command line) and that is not imported
    already: the file must not choose what runs. The message says which ``--gym-packages`` to pass."""
    missing = [module for module in modules if top_level(module) not in named and module not in sys.modules]
    if missing:
        packages = " ".join(dict.fromkeys(top_level(module) for module in missing))
        them = "it" if len(missing) == 1 else "them"
        raise CLIError(
            f"{path}: {field} names {', '.join(missing)}, which enjoy imports only when you name {them} (a "
            f"run folder does not choose what runs): pass --gym-packages {packages} if you trust {them}"
        )

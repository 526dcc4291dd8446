"""Where a benchmark record comes from: the command that reproduces it and the commit of the code that ran.

Standard library only (and Python 3.7's): the SB2 scripts import it under SB2's own Python, without torch.

A record names the commit its runs were made from. In this project's git checkout that is ``git rev-parse
--short HEAD`` (with ``+changes`` when tracked files differ from it). A copied tree (an unpacked sdist, a
copy sent to a GPU machine) has no history of its own: set ``SB3_ACER_COMMIT`` to the commit it was copied
from. Without either, the script stops before it runs anything, rather than write a record no one can
trace back to its code.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

#: The environment variable that names the commit a copied tree came from.
COMMIT_VARIABLE = "SB3_ACER_COMMIT"
#: A commit as records hold it: 7 to 40 hex digits, ``+changes`` when the tree differed from it.
COMMIT_FORMAT = re.compile(r"[0-9a-f]{7,40}(\+changes)?")
ROOT = Path(__file__).resolve().parent.parent


class UnknownCommitError(SystemExit):
    """No commit can be recorded: the tree is not this project's checkout and ``SB3_ACER_COMMIT`` is unset,
    or it is set to something that is no commit. A ``SystemExit``, so that a script ends with the message."""


def command_line(module: str, args: list[str]) -> str:
    """``python -m benchmarks.<module> <args>``, shell-quoted so that it pastes back as the same arguments;
    ``module`` may be given as the script's file name (``presets.py``)."""
    name = module[: -len(".py")] if module.endswith(".py") else module
    return " ".join(shlex.quote(arg) for arg in ["python", "-m", f"benchmarks.{name}", *args])


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=str(ROOT), capture_output=True, text=True, check=True)
    return done.stdout.strip()


def git_commit() -> str | None:
    """The short commit checked out, ``+changes`` when tracked files differ from it; ``None`` outside this
    project's own git checkout (an unpacked sdist, even inside some other repository)."""
    try:
        if Path(_git("rev-parse", "--show-toplevel")).resolve() != ROOT:
            return None
        commit = _git("rev-parse", "--short", "HEAD")
        changed = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return None
    return commit + ("+changes" if changed else "")


def source_commit() -> str:
    """The commit to record: ``SB3_ACER_COMMIT`` if set, else :func:`git_commit`.

    Raises:
        UnknownCommitError: ``SB3_ACER_COMMIT`` is set to no commit, or is unset outside a git checkout.
    """
    stated = os.environ.get(COMMIT_VARIABLE)
    if stated is not None:
        if not COMMIT_FORMAT.fullmatch(stated):
            raise UnknownCommitError(
                f"{COMMIT_VARIABLE}={stated!r} is no commit: give 7 to 40 hex digits (git rev-parse HEAD "
                "of the checkout this tree was copied from), optionally followed by +changes"
            )
        return stated
    commit = git_commit()
    if commit is None:
        raise UnknownCommitError(
            f"{ROOT} is not this project's git checkout, so no commit can be recorded for its runs: set "
            f"{COMMIT_VARIABLE} to the commit it was copied from (git rev-parse HEAD there)"
        )
    return commit

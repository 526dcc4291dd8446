"""How the commands report a failure: :class:`CLIError` (one line ``error: ...`` and an exit code),
:class:`UsageError` for a mistake on the command line (exit code 2), and the small helpers of their
messages."""

from __future__ import annotations

__all__ = [
    "PROG",
    "CLIError",
    "UsageError",
    "check_optional",
    "check_progress_bar",
    "count",
    "one_line",
    "stopped_by",
]

#: The name of the command, as its messages and help write it.
PROG = "sb3-acer"


class CLIError(Exception):
    """An error reported as one line ``error: ...``, with the exit code of the command."""

    def __init__(self, message: str, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(CLIError):
    """A problem with the command line itself (exit code 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=2)


def one_line(error: BaseException) -> str:
    """The message of ``error`` on one line (an exception's text may span several, e.g. a space's repr)."""
    return " ".join(str(error).split()) or type(error).__name__


def check_optional(module: str, purpose: str, install: str) -> None:
    try:
        __import__(module)
    except ImportError:
        raise CLIError(f"{purpose} needs {module}: {install}") from None


def check_progress_bar() -> None:
    """SB3's progress bar needs tqdm and rich: :class:`CLIError` naming the first missing, before a run."""
    for module in ("tqdm", "rich"):
        check_optional(module, "the progress bar", "pip install tqdm rich (or pass --no-progress-bar)")


def count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def stopped_by(failure: BaseException | None, steps: int) -> str:
    """The start of the error line of a run that ``failure`` stopped at ``steps``: ``"training stopped at
    step 40 by ValueError: <first line of the message>; "`` (``"AssertionError (no message)"`` for an empty
    message), or ``""`` without a failure."""
    if failure is None:
        return ""
    lines = [line.strip() for line in str(failure).splitlines() if line.strip()]
    cause = f"{type(failure).__name__}: {lines[0]}" if lines else f"{type(failure).__name__} (no message)"
    return f"training stopped at step {steps} by {cause}; "

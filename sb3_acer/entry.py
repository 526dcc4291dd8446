"""The one guard of every command's start: :func:`launch` loads a command's module, then runs its
``main``.

torch, Stable-Baselines3 and gymnasium take a second or more to load; a Ctrl-C pressed then is answered
as one pressed later, with the line ``interrupted`` and exit code 130, not a traceback. The guard works
because ``import sb3_acer`` loads none of them (its public names are imported on first use), so that the
package can be imported before the guard is in place. Every entry point goes through it: the ``sb3-acer``
console script (:func:`main`), ``python -m sb3_acer`` and ``python -m sb3_acer.run_atari``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

__all__ = ["launch", "main"]


def launch(module: str, argv: Sequence[str] | None = None) -> int:
    """Import ``module`` and return the exit code of its ``main(argv)`` (``None``: ``sys.argv[1:]``).

    Returns:
        The code ``main`` returns when it is a number, 0 for anything else (``run_atari``'s ``main`` returns
        the saved model's path), and 130 when Ctrl-C interrupts the import.
    """
    try:
        command = importlib.import_module(module)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    code = command.main(None if argv is None else list(argv))
    return code if isinstance(code, int) else 0


def main() -> int:
    """The ``sb3-acer`` command: :func:`sb3_acer.cli.main` on ``sys.argv[1:]``."""
    return launch("sb3_acer.cli")

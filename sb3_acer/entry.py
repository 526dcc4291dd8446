"""The ``sb3-acer`` console command's entry point: :func:`sb3_acer.cli.main`, with a Ctrl-C pressed while
its modules (torch, Stable-Baselines3, gymnasium: a second or more) load answered like one pressed later,
with one line and exit code 130, not a traceback."""

from __future__ import annotations

import importlib
import sys


def main() -> int:
    """Load :mod:`sb3_acer.cli` and run its ``main`` on ``sys.argv[1:]``; 130 if interrupted while loading."""
    try:
        cli = importlib.import_module("sb3_acer.cli")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return int(cli.main())

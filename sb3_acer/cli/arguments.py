"""The types of the command-line options (whole numbers in any notation, seeds, torch devices) and the
reader of ``key=value`` items (``--hyperparams``, ``--env-kwargs``)."""

from __future__ import annotations

import argparse
import ast
import math
import re
from collections.abc import Sequence
from typing import Any, NoReturn

import torch as th

from sb3_acer.cli.errors import UsageError
from sb3_acer.presets import check_env_kwargs
from sb3_acer.presets.expressions import read_expression

__all__ = [
    "Parser",
    "add_gym_packages",
    "check_device",
    "env_kwargs_option",
    "integer",
    "non_negative_int",
    "parse_hyperparams",
    "positive_int",
    "random_seed",
    "torch_device",
]

BARE_STRING = re.compile(r"[A-Za-z_][\w.\-+/:]*")


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors become :class:`UsageError` (one line, no usage dump)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see '{self.prog} -h')")


def parse_hyperparams(items: Sequence[str], flag: str = "--hyperparams") -> dict[str, Any]:
    """Parse ``key=value`` items; values are Python literals (``ast.literal_eval``), bare strings, or the
    expressions the zoo writes, such as ``dict(net_arch=[64, 64], activation_fn=nn.ReLU)``
    (:func:`~sb3_acer.presets.read_expression`, which evaluates nothing).

    Raises:
        UsageError: an item without ``=``, a key that is not an identifier, or a value that is none of these.
    """
    result: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise UsageError(f"{flag} expects key=value, got {item!r}")
        text = text.strip()
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            if BARE_STRING.fullmatch(text):
                value = text
            else:
                try:
                    value = read_expression(text)
                except SyntaxError:
                    raise UsageError(
                        f"{flag} {key}: {text!r} is not a Python literal (quote strings with "
                        "spaces or symbols, e.g. key=\"'a b'\")"
                    ) from None
                except ValueError as error:
                    raise UsageError(f"{flag} {key}: {error}") from None
        result[key] = value
    return result


def env_kwargs_option(items: list[str] | None) -> dict[str, Any]:
    """``--env-kwargs key=value ...``, read as ``--hyperparams`` are."""
    parsed = parse_hyperparams(items or [], flag="--env-kwargs")
    try:
        return check_env_kwargs(parsed)
    except ValueError as error:
        raise UsageError(f"--{error}".replace("--env_kwargs", "--env-kwargs", 1)) from None


def integer(text: str, what: str, minimum: int, maximum: int | None = None) -> int:
    """``text`` as a whole number in [minimum, maximum]; ``1e6`` and ``2.5E5`` count, ``1.5`` does not."""
    error = argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
    try:
        value = int(text)
    except ValueError:
        try:
            number = float(text)
        except ValueError:
            raise error from None
        if not math.isfinite(number) or not number.is_integer():
            raise error from None
        value = int(number)
    if value < minimum or (maximum is not None and value > maximum):
        raise error
    return value


def positive_int(text: str) -> int:
    """``--n-envs``, ``--timesteps``, ...: a whole number of at least 1."""
    return integer(text, "a positive integer", minimum=1)


def non_negative_int(text: str) -> int:
    """``--eval-freq``: a whole number of at least 0."""
    return integer(text, "a non-negative integer", minimum=0)


def random_seed(text: str) -> int:
    """``--seed``: a whole number numpy can seed with."""
    return integer(text, "a seed in [0, 2**32 - 1]", minimum=0, maximum=2**32 - 1)


def check_device(device: Any) -> None:
    """Raise ``ValueError`` unless ``device`` is ``'auto'``, the CPU, CUDA (SB3 falls back to the CPU without
    it) or Apple's ``mps`` where this torch has it."""
    if device == "auto":
        return
    usable = ["auto", "cpu", "cuda", "cuda:N"] + (["mps"] if th.backends.mps.is_available() else [])
    try:
        kind = th.device(device).type
    except (RuntimeError, TypeError):
        kind = None
    if kind not in ("cpu", "cuda") and not (kind == "mps" and "mps" in usable):
        raise ValueError(f"unusable torch device {device!r}; use one of {', '.join(usable)}")


def torch_device(text: str) -> str:
    """``--device``: a torch device this machine can use (:func:`check_device`)."""
    try:
        check_device(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


def add_gym_packages(parser: argparse.ArgumentParser, help: str) -> None:
    """Add ``--gym-packages PACKAGE ...`` (the zoo's flag: packages to import, as they register envs)."""
    parser.add_argument(
        "--gym-packages", nargs="+", action="extend", default=[], metavar="PACKAGE", help=help
    )

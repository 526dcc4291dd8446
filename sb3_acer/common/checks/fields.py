"""The rules a single value from outside must follow, each stated once: a whole number, a positive one, a
finite number, a flag, a known choice, a file's format version, arrays without NaN or inf.

The constructor's settings (:mod:`~sb3_acer.common.checks.settings`), the presets, the replay and model file
readers, the replay memories and the actor-learner settings all check their values with these, so a rule and
its words live here only. A rule is a :class:`Rule`: a test of the value and the words of the message that
names what is wrong, ``"<name> <text>, got <value!r>"`` (``n_actors must be a positive integer, got 0``);
:func:`check` applies one, with the name (and any prefix, ``RayActors: n_actors``) the caller gives.

Nothing here imports torch, an environment or another part of sb3-acer but
:mod:`sb3_acer.common.observations` (whose :func:`~sb3_acer.common.observations.all_finite` reads
structured arrays).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from sb3_acer.common.observations import all_finite

__all__ = [
    "BOOLEAN",
    "DICT",
    "FINITE_NUMBER",
    "INTEGER",
    "MAX_COUNT",
    "NON_NEGATIVE",
    "NON_NEGATIVE_INTEGER",
    "NUMBER",
    "POSITIVE",
    "POSITIVE_INTEGER",
    "POSITIVE_SECONDS",
    "UNIT_NUMBER",
    "Rule",
    "check",
    "check_finite_arrays",
    "check_format_version",
    "choice",
    "integer_in",
    "is_integer",
    "is_number",
    "or_none",
]

#: Largest step or update count a model keeps (an int64, as NumPy and the logger hold it).
MAX_COUNT = 2**63 - 1
#: How messages write the bounds that are powers of two.
_BOUND_TEXT = {MAX_COUNT: "2**63 - 1", 2**32 - 1: "2**32 - 1"}

T = TypeVar("T")


def is_integer(value: Any) -> bool:
    """Whether ``value`` is a whole number of Python's or NumPy's (a bool is not)."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    """Whether ``value`` is an int or float of Python's or NumPy's that a float holds (a bool is not, nor an
    integer too large for a float, such as 10**400: every setting is used as a float)."""
    if not isinstance(value, int | float | np.integer | np.floating) or isinstance(value, bool):
        return False
    try:
        float(value)
    except OverflowError:
        return False
    return True


@dataclass(frozen=True)
class Rule:
    """One rule a value must follow: ``test(value)`` (true if it does), and ``text``, the words that say it
    in a message written by ``template`` (with ``{name}``, ``{text}`` and ``{value}``)."""

    test: Callable[[Any], Any]
    text: str
    template: str = "{name} {text}, got {value!r}"

    def message(self, name: str, value: Any) -> str:
        """The message saying that ``value`` of ``name`` breaks the rule."""
        return self.template.format(name=name, text=self.text, value=value)


def check(value: T, name: str, rule: Rule, error: type[Exception] = ValueError) -> T:
    """``value`` if it follows ``rule``.

    Raises:
        error: (``ValueError`` unless told otherwise) naming ``name``, the rule and the value.
    """
    if not rule.test(value):
        raise error(rule.message(name, value))
    return value


def or_none(rule: Rule, text: str | None = None) -> Rule:
    """``rule``, or ``None``; said as ``text`` (``rule``'s own words unless given)."""
    return Rule(lambda value: value is None or rule.test(value), rule.text if text is None else text)


def integer_in(minimum: int, maximum: int) -> Rule:
    """A whole number in ``[minimum, maximum]``."""
    upper = _BOUND_TEXT.get(maximum, str(maximum))
    return Rule(
        lambda value: is_integer(value) and minimum <= value <= maximum,
        f"must be an integer in [{minimum}, {upper}]",
    )


def choice(choices: Collection[Any]) -> Rule:
    """One of ``choices``: ``unknown <name> <value>; choose one of [...]``."""
    return Rule(
        lambda value: isinstance(value, Hashable) and value in choices,
        str(sorted(choices)),
        "unknown {name} {value!r}; choose one of {text}",
    )


INTEGER = Rule(is_integer, "must be an integer")
POSITIVE_INTEGER = Rule(lambda value: is_integer(value) and value > 0, "must be a positive integer")
NON_NEGATIVE_INTEGER = Rule(lambda value: is_integer(value) and value >= 0, "must be a non-negative integer")
NUMBER = Rule(is_number, "must be a number")
FINITE_NUMBER = Rule(lambda value: is_number(value) and math.isfinite(value), "must be a finite number")
#: A probability, a discount, a fraction of the run: a number in [0, 1].
UNIT_NUMBER = Rule(lambda value: is_number(value) and 0 <= value <= 1, "must be a number in [0, 1]")
DICT = Rule(
    lambda value: isinstance(value, dict), "must be a dict", "{name} {text}, got {value.__class__.__name__}"
)
BOOLEAN = Rule(lambda value: isinstance(value, bool | np.bool_), "must be True or False")
#: Rules on a value whose type a rule above has checked already.
POSITIVE = Rule(lambda value: value > 0, "must be positive")
NON_NEGATIVE = Rule(lambda value: value >= 0, "must be non-negative")
POSITIVE_SECONDS = Rule(
    lambda value: is_number(value) and 0 < value < math.inf, "must be a positive number of seconds"
)


def check_format_version(
    version: Any, latest: int, source: str, damaged: str, error: type[Exception] = ValueError
) -> int:
    """``version`` if it is a file format version this code reads (a whole number from 1 to ``latest``).

    Args:
        version: the version the file declares.
        latest: the newest version this code reads.
        source: what the message says first: the file and what the version is of (``"model.zip has format
            version"``).
        damaged: what the message says is damaged when ``version`` is no version number.
        error: the error to raise (the file's own).

    Raises:
        error: ``version`` is no version number, or newer than ``latest``.
    """
    if not is_integer(version) or version < 1:
        raise error(f"{source} {version!r}, not a version number (1 to {latest}): {damaged}")
    if version > latest:
        raise error(f"{source} {version}, newer than this sb3-acer reads ({latest}); upgrade sb3-acer")
    return int(version)


def check_finite_arrays(name: str, *arrays: np.ndarray) -> None:
    """Raise ``ValueError`` (``<name> hold NaN or inf``) if a float among ``arrays`` (or a float field of a
    structured one) holds NaN or inf."""
    if not all(all_finite(array) for array in arrays):
        raise ValueError(f"{name} hold NaN or inf")

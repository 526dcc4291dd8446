"""The safe reader of the Python expressions the rl-baselines3-zoo writes in its YAML files
(``policy_kwargs``, ``normalize``): :func:`read_expression` reads their syntax tree and evaluates nothing."""

from __future__ import annotations

import ast
from typing import Any

__all__ = ["ClassName", "read_expression"]

#: What :func:`read_expression` accepts, as its errors say.
_ALLOWED = "(only constants, lists, tuples, dicts, dict(key=value, ...) and class names such as nn.ReLU)"


class ClassName(str):
    """A name in a zoo expression (``nn.ReLU``, ``RMSpropTFLike``): a class to resolve, never a value."""


def read_expression(text: str) -> Any:
    """The value of a Python expression as the zoo writes ``policy_kwargs`` and ``normalize`` in its YAML
    files, e.g. ``"dict(net_arch=[64, 64], activation_fn=nn.ReLU, optimizer_kwargs=dict(eps=1e-5))"``,
    read from its syntax tree; nothing is evaluated (the zoo calls ``eval``).

    Accepted: constants, lists, tuples, dicts with constant keys, ``-`` before a number, ``dict(...)`` with
    keyword arguments only (nested), and names, dotted or not (``nn.ReLU``, ``th.nn.Tanh``,
    ``RMSpropTFLike``), which become strings for :func:`~sb3_acer.presets.resolve_policy_kwargs` to resolve.

    Raises:
        SyntaxError: ``text`` is not a Python expression.
        ValueError: anything else (another call, attribute access on a call, a lambda, a subscript, an
            operator, ...), naming it.
    """
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (ValueError, MemoryError, RecursionError) as error:  # a null byte; a deep nesting
        raise SyntaxError(str(error)) from None
    try:
        return _expression_value(tree.body)
    except RecursionError:
        raise ValueError(f"an expression nested this deep is not allowed {_ALLOWED}") from None


def _dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _expression_value(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple)):
        items = [_expression_value(item) for item in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    if isinstance(node, ast.Dict):
        result = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise _not_allowed("the dict unpacking", node)
            if not isinstance(key, ast.Constant):
                raise _not_allowed("the dict key", key)
            result[key.value] = _expression_value(value)
        return result
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and isinstance(node.operand.value, (int, float, complex))
        and not isinstance(node.operand.value, bool)
    ):
        return -node.operand.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "dict"
        and not node.args
        and all(keyword.arg is not None for keyword in node.keywords)
    ):
        return {keyword.arg: _expression_value(keyword.value) for keyword in node.keywords}
    name = _dotted_name(node)
    if name is not None:
        return ClassName(name)
    kinds: list[tuple[type | tuple[type, ...], str]] = [
        (ast.Call, "the call"),
        (ast.Attribute, "attribute access"),
        (ast.Lambda, "the lambda"),
        (ast.Subscript, "the subscript"),
        ((ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare), "the operator in"),
        (ast.Set, "the set"),
    ]
    kind = next((kind for types, kind in kinds if isinstance(node, types)), "the expression")
    raise _not_allowed(kind, node)


def _not_allowed(kind: str, node: ast.expr) -> ValueError:
    return ValueError(f"{kind} {ast.unparse(node)!r} is not allowed {_ALLOWED}")

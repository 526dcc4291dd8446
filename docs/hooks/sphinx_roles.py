"""Griffe extension: the package's docstrings cite names as Sphinx does (:class:`Name`); render them as links.

The docstrings are Google style with Sphinx's roles (``:class:``, ``:func:``, ``:meth:``, ``:mod:``,
``:data:``, ``:attr:``, ``:exc:``, ``:obj:``), which ``help()`` and editors read well and mkdocstrings
would print as they are (``:class:Name``). Before rendering, each role becomes the name in code, linked to
its API entry where the docs have one: the name is resolved as Python would from the docstring's object
(``Name``, ``Name.attr``, ``.module.Name`` relative to the package, or a full path), and the link is
optional, so a name without an entry stays plain code. ``~`` shows only the last part, as in Sphinx. A
paragraph that ends with ``::`` (reStructuredText's "a literal block follows") ends with ``:``; the block,
indented, is code in Markdown too.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

#: A role: ``:class:`~a.b.C``` -> role ``class``, tilde, target ``a.b.C``.
ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj):`(?P<tilde>~?)(?P<target>[\w.]+)(?:\(\))?`"
)
#: A line ending with reStructuredText's ``::`` (not a line that is only ``::``).
LITERAL_MARK = re.compile(r"(?<=\S)::$", re.M)


def resolve(obj: griffe.Object, target: str) -> str | None:
    """The full path of ``target`` as written in ``obj``'s docstring, or None where it cannot be found."""
    if target.startswith("."):
        module = obj.module
        package = module if module.is_init_module else module.parent
        dots = len(target) - len(target.lstrip("."))
        for _ in range(dots - 1):
            package = package.parent if package is not None else None
        return None if package is None else f"{package.path}.{target.lstrip('.')}"
    first, _, rest = target.partition(".")
    try:
        path = obj.resolve(first)
    except (griffe.NameResolutionError, KeyError, AttributeError):
        # A full path (sb3_acer.common.rollout.collect_segment) or a name outside the object's scope.
        return target if "." in target else None
    return f"{path}.{rest}" if rest else path


def render_roles(text: str, obj: griffe.Object | None) -> str:
    """``text`` with each role as code in an optional link (plain code where ``obj`` cannot resolve it)."""

    def link(match: re.Match[str]) -> str:
        target = match["target"]
        shown = target.rsplit(".", 1)[-1] if match["tilde"] else target.lstrip(".")
        path = resolve(obj, target) if obj is not None else None
        if path is None:
            return f"`{shown}`"
        return f'<autoref identifier="{path}" optional><code>{shown}</code></autoref>'

    return LITERAL_MARK.sub(":", ROLE.sub(link, text))


class SphinxRoles(griffe.Extension):
    """Render the roles of every docstring of the package once it is loaded."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        """Rewrite the docstrings of ``pkg`` and everything defined in it (aliases are their targets')."""
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if obj.docstring is not None:
                obj.docstring.value = render_roles(obj.docstring.value, obj)
            stack.extend(member for member in obj.members.values() if not member.is_alias)

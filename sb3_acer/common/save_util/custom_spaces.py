"""``load``'s ``custom_objects`` for the spaces: ``{"observation_space": ..., "action_space": ...}`` replace
the saved spaces, as in SB3 (the zoo and users pass them, e.g. to load a model with other bounds), as long
as the saved networks still fit them."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["SPACE_KEYS", "replaced_space"]

#: The ``custom_objects`` keys this module handles.
SPACE_KEYS = ("observation_space", "action_space")


def _layout(space: spaces.Space) -> Any:
    """What the networks and the replay memory depend on: the space's kind, shape and sizes (the bounds of
    a ``Box`` may change; a ``Dict`` by its keys, in order)."""
    if isinstance(space, spaces.Dict):
        return ("Dict", tuple((key, _layout(sub)) for key, sub in space.spaces.items()))
    sizes: Any = None
    if isinstance(space, spaces.Discrete):
        sizes = int(space.n)
    elif isinstance(space, spaces.MultiDiscrete):
        sizes = np.asarray(space.nvec).tolist()
    return (type(space).__name__, tuple(space.shape or ()), sizes)


def replaced_space(key: str, saved: spaces.Space, custom_objects: dict[str, Any]) -> spaces.Space:
    """``custom_objects[key]`` in place of the ``saved`` space, or ``saved`` when it names none.

    Raises:
        ValueError: if the given value is not a Gymnasium space, or not one the saved networks fit (another
            kind, shape or number of actions).
    """
    if key not in custom_objects:
        return saved
    given = custom_objects[key]
    if not isinstance(given, spaces.Space):
        raise ValueError(
            f"load: custom_objects[{key!r}] must be a gymnasium space, got {type(given).__name__}"
        )
    if _layout(given) != _layout(saved):
        raise ValueError(
            f"load: custom_objects[{key!r}] {given} does not fit the saved model's {saved} (the networks "
            "were built for its kind and shape; only bounds may differ)"
        )
    return given

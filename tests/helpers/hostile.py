"""What a hostile file carries, for the tests that check nothing in a file runs."""

from __future__ import annotations

import pathlib
from typing import Any


class MarkerPayload:
    """Unpickling this creates ``marker`` (a stand-in for arbitrary code): the marker's absence after a load
    shows that nothing was unpickled."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return self.marker.touch, ()

"""ACER: the algorithm class (:mod:`.acer`) and its policy names (:mod:`.policies`)."""

from sb3_acer.acer.acer import ACER, UnsupportedSpaceError

__all__ = ["ACER", "UnsupportedSpaceError"]

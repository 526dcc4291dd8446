"""ACER (Actor-Critic with Experience Replay): the algorithm class, re-exported from
:mod:`~sb3_acer.acer.acer`."""

from sb3_acer.acer.acer import ACER, UnsupportedSpaceError

__all__ = ["ACER", "UnsupportedSpaceError"]

"""The ACER maths as small pure tensor functions: :mod:`.categorical` (``Discrete`` actions, paper eqs. 4-12)
and :mod:`.continuous` (``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions, eqs. 13-16, factorised)."""

from sb3_acer.common.functional import categorical, continuous
from sb3_acer.common.functional.categorical import *  # noqa: F403
from sb3_acer.common.functional.continuous import *  # noqa: F403

__all__ = ["categorical", "continuous", *categorical.__all__, *continuous.__all__]

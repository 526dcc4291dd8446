"""sb3-acer: ACER (Actor-Critic with Experience Replay) for Stable-Baselines3.

The names below are imported on first use (PEP 562), so that ``import sb3_acer`` does not load torch: the
commands' Ctrl-C guard (:mod:`sb3_acer.entry`) is in place before torch loads.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sb3_acer.acer.acer import ACER, UnsupportedSpaceError
    from sb3_acer.acer.policies import (
        CnnLnLstmPolicy,
        CnnLstmPolicy,
        CnnPolicy,
        MlpLnLstmPolicy,
        MlpLstmPolicy,
        MlpPolicy,
        MultiInputLstmPolicy,
        MultiInputPolicy,
        RecurrentACERPolicy,
    )

__version__ = "0.1.0"

#: Where each public name is defined.
_MODULE_OF = {
    "ACER": "sb3_acer.acer.acer",
    "UnsupportedSpaceError": "sb3_acer.acer.acer",
    "CnnLnLstmPolicy": "sb3_acer.acer.policies",
    "CnnLstmPolicy": "sb3_acer.acer.policies",
    "CnnPolicy": "sb3_acer.acer.policies",
    "MlpLnLstmPolicy": "sb3_acer.acer.policies",
    "MlpLstmPolicy": "sb3_acer.acer.policies",
    "MlpPolicy": "sb3_acer.acer.policies",
    "MultiInputLstmPolicy": "sb3_acer.acer.policies",
    "MultiInputPolicy": "sb3_acer.acer.policies",
    "RecurrentACERPolicy": "sb3_acer.acer.policies",
}

__all__ = [
    "ACER",
    "CnnLnLstmPolicy",
    "CnnLstmPolicy",
    "CnnPolicy",
    "MlpLnLstmPolicy",
    "MlpLstmPolicy",
    "MlpPolicy",
    "MultiInputLstmPolicy",
    "MultiInputPolicy",
    "RecurrentACERPolicy",
    "UnsupportedSpaceError",
    "__version__",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'sb3_acer' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})

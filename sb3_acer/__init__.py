"""sb3-acer: ACER (Actor-Critic with Experience Replay) for Stable-Baselines3."""

from sb3_acer.acer import ACER, UnsupportedSpaceError
from sb3_acer.policies import (
    CnnLnLstmPolicy,
    CnnLstmPolicy,
    CnnPolicy,
    MlpLnLstmPolicy,
    MlpLstmPolicy,
    MlpPolicy,
    RecurrentACERPolicy,
)

__version__ = "0.1.0"

__all__ = [
    "ACER",
    "CnnLnLstmPolicy",
    "CnnLstmPolicy",
    "CnnPolicy",
    "MlpLnLstmPolicy",
    "MlpLstmPolicy",
    "MlpPolicy",
    "RecurrentACERPolicy",
    "UnsupportedSpaceError",
    "__version__",
]

"""sb3-acer: ACER (Actor-Critic with Experience Replay) for Stable-Baselines3."""

from sb3_acer.acer import ACER, UnsupportedSpaceError
from sb3_acer.policies import CnnPolicy, MlpPolicy

__version__ = "0.1.0"

__all__ = ["ACER", "CnnPolicy", "MlpPolicy", "UnsupportedSpaceError", "__version__"]

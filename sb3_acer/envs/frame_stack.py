"""How many frames a vectorised environment stacks along the first observation axis."""

from __future__ import annotations

from gymnasium import spaces
from stable_baselines3.common.vec_env import VecEnv, VecEnvWrapper, VecFrameStack, VecTransposeImage
from stable_baselines3.common.vec_env.vec_check_nan import VecCheckNan
from stable_baselines3.common.vec_env.vec_monitor import VecMonitor

from sb3_acer.envs.atari import AtariVecEnv

__all__ = ["frame_stack_size"]

#: Wrappers that may sit above the frame stacking without changing the stacked frames.
TRANSPARENT_WRAPPERS = (VecTransposeImage, VecMonitor, VecCheckNan)


def frame_stack_size(env: VecEnv | None) -> int | None:
    """Number of frames stacked along the first observation axis by ``env``, or ``None`` if unknown.

    Recognised: ``VecFrameStack`` (optionally under ``VecTransposeImage``, ``VecMonitor`` or
    ``VecCheckNan``) and :class:`sb3_acer.envs.atari.AtariVecEnv`. A ``VecFrameStack`` stacks along the axis
    of its frames' channels: the first if they are channel-first, the last otherwise, which a
    ``VecTransposeImage`` above it moves to the first (SB3's Atari pipeline); channel-last frames with no
    transpose above (a small RGB image SB3 takes for channel-first, a ``uint8`` Box that is no image) are
    stacked along the last axis: ``None``. Stacked ``Dict`` observations: ``None``.
    """
    transposed = False
    while env is not None:
        if isinstance(env, VecFrameStack):
            if isinstance(env.observation_space, spaces.Dict):
                return None  # each key stacked on its own: the replay memory keeps whole Dict observations
            along_first = bool(env.stacked_obs.channels_first) != transposed
            return int(env.stacked_obs.n_stack) if along_first else None
        if isinstance(env, TRANSPARENT_WRAPPERS):
            if isinstance(env, VecTransposeImage) and not env.skip:
                transposed = not transposed
            env = env.venv
            continue
        if isinstance(env, VecEnvWrapper):
            return None
        return env.n_stack if isinstance(env, AtariVecEnv) and not transposed else None
    return None

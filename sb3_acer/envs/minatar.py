"""MinAtar (Young & Tian 2019, https://github.com/kenjyoung/MinAtar): five Atari games -- Asterix,
Breakout, Freeway, Seaquest, SpaceInvaders -- on a 10x10 grid, small enough to learn from pixels on a CPU.

The ``minatar`` package (``pip install "sb3-acer[minatar]"``) registers its Gymnasium ids only when
``minatar.gym.register_envs()`` is called: ``MinAtar/<Game>-v0`` (all 6 actions) and ``MinAtar/<Game>-v1``
(the game's minimal action set: Breakout 3, Freeway 3, SpaceInvaders 4, Asterix 5, Seaquest 6), with the
paper's settings by default (sticky actions with probability 0.1, ``sticky_action_prob``; difficulty that
rises during an episode, ``difficulty_ramping``; both ``gymnasium.make`` keyword arguments). The games speak
Gymnasium 1.x's API (``reset(seed=...)`` seeds the game, including its sticky actions) and never truncate an
episode: every game ends by itself (a lost ball or life, Freeway after 2500 steps).

Each observation is a boolean ``[10, 10, C]`` array, one channel per kind of object (C: Breakout and Asterix
4, SpaceInvaders 6, Freeway 7, Seaquest 10). :class:`MinAtarObservation` gives the channel-first float32
view ``[C, 10, 10]`` of 0.0 and 1.0 that a convolution takes: SB3 treats only ``uint8`` spaces with bounds
0 and 255 as images, so this view is neither divided by 255 nor transposed by SB3 or ACER, and
:class:`~sb3_acer.common.policies.MinAtarCNN` reads its first axis as the channels. :func:`make_minatar_env`
registers the ids, makes the game and puts that view on it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

__all__ = [
    "MINATAR_GAMES",
    "MinAtarObservation",
    "is_minatar_id",
    "make_minatar_env",
    "minatar_id",
    "register_minatar_envs",
]

#: The five games, as their Gymnasium ids spell them (``MinAtar/<game>-v1``).
MINATAR_GAMES = ("Asterix", "Breakout", "Freeway", "Seaquest", "SpaceInvaders")

#: The namespace of MinAtar's Gymnasium ids.
NAMESPACE = "MinAtar"

#: How to install the games, as the error of a missing ``minatar`` package says it.
INSTALL = 'pip install "sb3-acer[minatar]"'


def minatar_id(game: str, version: int = 1) -> str:
    """The Gymnasium id of ``game`` (one of :data:`MINATAR_GAMES`): ``MinAtar/<game>-v<version>``."""
    return f"{NAMESPACE}/{game}-v{version}"


def is_minatar_id(env_id: str) -> bool:
    """Whether ``env_id`` names a MinAtar game (``MinAtar/...``), registered yet or not."""
    return env_id.startswith(f"{NAMESPACE}/")


def register_minatar_envs() -> None:
    """Register MinAtar's Gymnasium ids (``minatar.gym.register_envs()``), once: a call after the ids are
    registered, by this function or by ``minatar`` itself, does nothing (registering them again would make
    Gymnasium warn that it overrides them).

    Raises:
        ImportError: the ``minatar`` package is not installed; the message says how to install it.
    """
    if any(is_minatar_id(env_id) for env_id in gym.registry):
        return
    try:
        from minatar import gym as minatar_gym
    except ModuleNotFoundError as error:
        if error.name not in ("minatar", "minatar.gym"):
            raise  # a module minatar needs, which its own error names
        raise ImportError(f"the MinAtar games need the minatar package: {INSTALL}", name="minatar") from None
    minatar_gym.register_envs()


class MinAtarObservation(gym.ObservationWrapper[np.ndarray, Any, np.ndarray]):
    """MinAtar's boolean ``[H, W, C]`` observations as a channel-first float32 ``[C, H, W]`` array of 0.0 and
    1.0 (``Box(0, 1)``): the same values, the channels first, as a convolution takes them.

    Args:
        env: a MinAtar game, or any env whose observations are ``[H, W, C]`` arrays of 0 and 1.

    Raises:
        ValueError: the env's observation space is not a three-dimensional ``Box``.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        space = env.observation_space
        if not isinstance(space, spaces.Box) or len(space.shape) != 3:
            raise ValueError(f"MinAtarObservation needs [H, W, C] Box observations, got {space}")
        height, width, channels = space.shape
        self.observation_space = spaces.Box(0.0, 1.0, shape=(channels, height, width), dtype=np.float32)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        """``observation`` (``[H, W, C]``) as a C-contiguous float32 ``[C, H, W]`` array."""
        return np.ascontiguousarray(np.moveaxis(observation, -1, 0), dtype=np.float32)


def make_minatar_env(env_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make(env_id, **kwargs)`` for a MinAtar id (registering the ids first, also in a worker
    process that has not), wrapped in :class:`MinAtarObservation`. SB3's ``make_vec_env`` takes it as its
    env factory: ``make_vec_env(make_minatar_env, n_envs, env_kwargs=dict(env_id="MinAtar/Breakout-v1"))``.

    Raises:
        ImportError: the ``minatar`` package is not installed (see :func:`register_minatar_envs`).
    """
    register_minatar_envs()
    return MinAtarObservation(gym.make(env_id, **kwargs))

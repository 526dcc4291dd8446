"""Checks of the spaces ACER is given: the env's observation and action spaces (at construction, on load,
from the CLI), and whether the policy chosen can take the observations.

Each check raises :class:`UnsupportedSpaceError` (a ``ValueError``) naming the space and what to do, before
anything is built: SB3's own checks are asserts, or fail deep inside a network.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
from gymnasium import spaces
from stable_baselines3.common.base_class import maybe_make_env
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import FlattenExtractor, NatureCNN
from stable_baselines3.common.type_aliases import GymEnv

from sb3_acer.envs.mujoco import require_mujoco

__all__ = [
    "SUPPORTED_SPACES",
    "UnsupportedSpaceError",
    "UnsupportedSpaceTypeError",
    "check_dict_space",
    "check_observation_space",
    "check_policy_observations",
    "check_policy_takes",
    "check_spaces",
    "check_starts_at_0",
    "features_extractor_of",
    "supported_env",
]

#: The spaces ACER takes, as actions and as observations (and as the keys of a ``Dict`` observation).
SUPPORTED_SPACES = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)


class UnsupportedSpaceError(ValueError):
    """An action or observation space that ACER cannot handle."""


class UnsupportedSpaceTypeError(UnsupportedSpaceError, NotImplementedError):
    """An observation space of a kind ACER takes in no form (``Tuple``, a ``Dict`` nested in a ``Dict``,
    ...): an :class:`UnsupportedSpaceError` that is also the ``NotImplementedError`` SB3 raises for it."""


def supported_env(env: GymEnv | str | None, verbose: int, needed: bool) -> GymEnv | None:
    """``env`` (made from its id if need be) once its spaces are checked: unsupported spaces are refused
    before BaseAlgorithm wraps the env, whose own checks are asserts (e.g. on unbounded Box actions) or name
    another algorithm's policies (Dict observations). ``needed``: the networks are built now."""
    if env is None:
        if needed:
            raise ValueError(
                "ACER needs an environment to build its networks: pass env (an env id, a gymnasium Env or "
                "a VecEnv); ACER.load(path) reads a saved model without one"
            )
        return None
    if isinstance(env, str):
        require_mujoco(env)
    env = maybe_make_env(env, verbose)
    check_spaces(env.observation_space, env.action_space)
    return env


def check_spaces(observation_space: spaces.Space, action_space: spaces.Space) -> None:
    """Raise :class:`UnsupportedSpaceError` unless ACER can use these spaces."""
    if not isinstance(action_space, SUPPORTED_SPACES):
        raise UnsupportedSpaceError(
            f"ACER supports Discrete, Box, MultiDiscrete and MultiBinary action spaces, got {action_space} "
            f"({type(action_space).__name__} actions are not supported)"
        )
    if isinstance(action_space, spaces.Box) and not np.isfinite([action_space.low, action_space.high]).all():
        # SB3's convention (the env gets the action clipped to the bounds) needs finite bounds.
        raise UnsupportedSpaceError(f"ACER needs Box action spaces with finite bounds, got {action_space}")
    if isinstance(observation_space, spaces.Dict):
        check_dict_space(observation_space)
    else:
        check_observation_space(observation_space)
    check_starts_at_0(action_space, "action")


def check_dict_space(observation_space: spaces.Dict) -> None:
    """Raise :class:`UnsupportedSpaceError` unless every key of the ``Dict`` observation space is a string
    and its subspace one ACER takes on its own (SB3's ``CombinedExtractor`` takes nothing nested)."""
    for key, subspace in observation_space.spaces.items():
        if not isinstance(key, str):
            raise UnsupportedSpaceError(
                f"ACER needs the keys of a Dict observation space to be strings, got {key!r} in "
                f"{observation_space}"
            )
        if isinstance(subspace, spaces.Dict | spaces.Tuple):
            raise UnsupportedSpaceTypeError(
                f"ACER does not support nested observation spaces: key {key!r} of the Dict observation "
                f"space is a {type(subspace).__name__} ({subspace}); flatten it into keys of the outer Dict "
                "with a wrapper"
            )
        try:
            check_observation_space(subspace)
        except UnsupportedSpaceError as error:
            raise type(error)(f"key {key!r} of the Dict observation space: {error}") from None


def check_starts_at_0(space: spaces.Space, kind: str) -> None:
    """Raise :class:`UnsupportedSpaceError` if ``space`` (of ``kind``: ``"action"`` or ``"observation"``) is
    a ``Discrete`` or ``MultiDiscrete`` that does not start at 0. Actions are sampled as 0 .. n-1 and
    observations one-hot encoded from 0 (as in SB3): a space with another start would silently get wrong
    actions or fail deep inside the network."""
    if isinstance(space, spaces.Discrete | spaces.MultiDiscrete) and np.any(space.start != 0):
        raise UnsupportedSpaceError(
            f"ACER needs {type(space).__name__} {kind} spaces that start at 0, got {space} "
            f"(start={space.start}); shift the {kind}s with a wrapper"
        )


def check_observation_space(observation_space: spaces.Space) -> None:
    """Raise :class:`UnsupportedSpaceError` unless ACER takes observations of this (non-``Dict``) space."""
    if not isinstance(observation_space, SUPPORTED_SPACES):
        raise UnsupportedSpaceTypeError(
            "ACER supports Box, Discrete, MultiDiscrete and MultiBinary observations, and Dict "
            f"observations of them (with MultiInputPolicy); got {observation_space}"
        )
    # SB3's preprocessing flattens a Box of at least one axis and a one-dimensional MultiDiscrete; these
    # others would fail deep inside learn() or with a NumPy message.
    if isinstance(observation_space, spaces.Box) and observation_space.shape == ():
        raise UnsupportedSpaceError(
            f"ACER does not support Box observations of shape () (a scalar), got {observation_space}; "
            "give them shape (1,) with a wrapper"
        )
    nvec_shape = np.shape(getattr(observation_space, "nvec", ()))
    if isinstance(observation_space, spaces.MultiDiscrete) and len(nvec_shape) != 1:
        raise UnsupportedSpaceError(
            f"ACER supports MultiDiscrete observations of one dimension, got nvec of shape {nvec_shape}: "
            f"{observation_space}; flatten them with a wrapper"
        )
    check_starts_at_0(observation_space, "observation")


def features_extractor_of(policy_class: type, policy_kwargs: dict[str, Any] | None) -> Any:
    """The features extractor class a policy builds, as its signature and ``policy_kwargs`` say (``None``
    if neither names one)."""
    extractor = (policy_kwargs or {}).get("features_extractor_class")
    for klass in policy_class.__mro__ if extractor is None else ():
        init = klass.__dict__.get("__init__")
        parameter = inspect.signature(init).parameters.get("features_extractor_class") if init else None
        if parameter is not None:  # the default of the nearest class that names it
            return parameter.default
    return extractor


def check_policy_observations(
    policy_class: type, policy_kwargs: dict[str, Any] | None, observation_space: spaces.Space
) -> None:
    """Raise :class:`UnsupportedSpaceError` if the observations are a ``Dict`` and the policy's features
    extractor takes one array (SB3's ``FlattenExtractor`` or ``NatureCNN``: the Mlp and Cnn policies), as
    SB3's algorithms do: a Dict needs ``MultiInputPolicy`` (or an extractor of dicts)."""
    if not isinstance(observation_space, spaces.Dict):
        return
    extractor = features_extractor_of(policy_class, policy_kwargs)
    if isinstance(extractor, type) and issubclass(extractor, FlattenExtractor | NatureCNN):
        name = getattr(policy_class, "__name__", "the policy")
        raise UnsupportedSpaceError(
            f"You must use `MultiInputPolicy` when working with a Dict observation space, not {name} "
            f"(its {extractor.__name__} takes one array); got {observation_space}"
        )


def check_policy_takes(
    policy_class: type, policy_kwargs: dict[str, Any], observation_space: spaces.Space
) -> None:
    """Raise :class:`UnsupportedSpaceError` if a policy on SB3's ``NatureCNN`` (the Cnn policies, as
    their signatures and ``policy_kwargs`` say) does not get images it can take. Called before building
    ACER's own Cnn policies, and for any other policy only once it failed to build, so that a subclass
    that builds is never second-guessed."""
    extractor = features_extractor_of(policy_class, policy_kwargs)
    if not (isinstance(extractor, type) and issubclass(extractor, NatureCNN)):
        return
    scaled = not policy_kwargs.get("normalize_images", True)
    name = getattr(policy_class, "__name__", "the policy")
    if not is_image_space(observation_space, check_channels=False, normalized_image=scaled):
        raise UnsupportedSpaceError(
            f"{name} needs image observations: uint8 [H, W, C] or [C, H, W] with values 0 to 255, "
            "or float images already scaled, channel-first, with "
            f"policy_kwargs=dict(normalize_images=False); got {observation_space}; use an Mlp policy "
            "for other observations"
        )
    # NatureCNN takes a float image's first axis for its channels; one whose last side is its smallest,
    # (84, 84, 3) say, is channel-last (SB3's own guess, the smallest side, refuses (48, 40, 40)).
    height, width, last = observation_space.shape  # type: ignore[misc]
    if scaled and observation_space.dtype != np.uint8 and last < min(height, width):
        raise UnsupportedSpaceError(
            f"{name}: float images must be channel-first [C, H, W] (only uint8 images are transposed), "
            f"got {observation_space}; transpose them with a wrapper"
        )

"""Which replay memory a model gets (:func:`make_replay_buffer`), and the classes a replay file may name."""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from sb3_acer.common.buffers.frame_buffer import FrameStackReplayBuffer
from sb3_acer.common.buffers.segment_buffer import SegmentReplayBuffer
from sb3_acer.common.observations import observation_layout

__all__ = ["BUFFER_CLASSES", "ReplayBuffer", "make_replay_buffer"]

#: The replay memories a replay file may name, by class name (the ``class`` of ``replay_buffer.json``).
BUFFER_CLASSES: dict[str, type[SegmentReplayBuffer] | type[FrameStackReplayBuffer]] = {
    "SegmentReplayBuffer": SegmentReplayBuffer,
    "FrameStackReplayBuffer": FrameStackReplayBuffer,
}

#: Either replay memory; both have ``put``, ``sample``, ``get``, ``has_at_least``, ``len``, ``nbytes``,
#: ``state_dict`` and ``load_state_dict``.
ReplayBuffer = SegmentReplayBuffer | FrameStackReplayBuffer


def make_replay_buffer(
    *,
    n_stack: int | None,
    observation_space: spaces.Space,
    buffer_size: int,
    n_steps: int,
    n_envs: int,
    n_actions: int,
    seed: int | None = None,
    state_size: int = 0,
    action_size: int = 0,
    action_dtype: np.dtype | type = np.int64,
) -> ReplayBuffer:
    """The replay memory for ``env``: frames stored once for a channel-first ``uint8`` frame stack (Atari),
    whole observations otherwise (Dict observations packed, one field per key: see
    :mod:`sb3_acer.common.observations`).

    Args:
        n_stack: number of frames the environment stacks along the first observation axis
            (:func:`sb3_acer.envs.frame_stack_size`), ``None`` if it stacks none or it is unknown.
        observation_space: the observation space the model sees (channel-first images).
        buffer_size: capacity in steps per environment.
        n_steps: segment length ``T``.
        n_envs: number of environments.
        n_actions: number of discrete actions.
        seed: seed of the sampling generators.
        state_size: size of a recurrent policy's LSTM state (0: feed-forward).
        action_size: 0 for ``Discrete`` actions, else the flat action size (``n_actions`` is then the size
            of the behaviour statistics); such buffers store whole observations.
        action_dtype: dtype of the stored actions when ``action_size`` is positive.
    """
    shape, obs_dtype = observation_layout(observation_space)
    if (
        not action_size
        and n_stack is not None
        and n_stack > 1
        and isinstance(observation_space, spaces.Box)
        and observation_space.dtype == np.uint8
        and len(shape) == 3
        and shape[0] % n_stack == 0
        and shape[0] <= min(shape[1:])
    ):
        return FrameStackReplayBuffer(
            buffer_size=buffer_size,
            n_steps=n_steps,
            n_envs=n_envs,
            obs_shape=shape,
            n_stack=n_stack,
            n_actions=n_actions,
            seed=seed,
            state_size=state_size,
        )
    return SegmentReplayBuffer(
        buffer_size=buffer_size,
        n_steps=n_steps,
        n_envs=n_envs,
        obs_shape=shape,
        obs_dtype=obs_dtype,
        n_actions=n_actions,
        seed=seed,
        state_size=state_size,
        action_size=action_size,
        action_dtype=action_dtype,
    )

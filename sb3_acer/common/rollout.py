"""Collect one on-policy segment from a vectorised environment.

SB3's ``VecEnv`` resets a finished sub-environment inside the same ``step`` call and puts the last
observation of the episode in ``info["terminal_observation"]``; a time-limit truncation is flagged by
``info["TimeLimit.truncated"]``. The segment records both, so that the update cuts the return on a
termination and bootstraps on a truncation (or, with ``handle_timeout_termination=False``, records a
time-limit end as a termination, as SB2 did).

A recurrent policy carries its LSTM state from step to step and from one segment to the next (the state is
reset where an episode starts, inside the policy); the segment records the state it started with.

Dict observations (a dict of per-key arrays from the env) are recorded packed into one structured array
(:mod:`sb3_acer.common.observations`); the policy and the callbacks see them as the env returned them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv

from sb3_acer.common.observations import ObservationArrays, observation_layout, pack_observations
from sb3_acer.common.policies import ACERPolicy, LSTMState, RecurrentACERPolicy
from sb3_acer.common.type_aliases import Segment

__all__ = [
    "RolloutResult",
    "SegmentRecorder",
    "StepRecord",
    "act",
    "collect_segment",
]


class StepRecord(NamedTuple):
    """One vector-env step, handed to the algorithm's bookkeeping hook."""

    new_obs: ObservationArrays
    actions: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    infos: list[dict[str, Any]]


class RolloutResult(NamedTuple):
    """Outcome of :func:`collect_segment`.

    Attributes:
        segment: the collected segment, or ``None`` when a callback stopped training mid-rollout.
        last_obs: observation to continue from.
        last_episode_starts: whether ``last_obs`` starts an episode, per env.
        last_lstm_state: recurrent policies: the state to continue from (``None`` for feed-forward ones).
    """

    segment: Segment | None
    last_obs: ObservationArrays
    last_episode_starts: np.ndarray
    last_lstm_state: LSTMState | None = None


class SegmentRecorder:
    """The arrays of one segment of ``n_steps`` steps of ``n_envs`` environments, filled step by step.

    Args:
        n_steps: segment length ``T``.
        n_envs: number of environments ``E``.
        n_actions: number of actions ``A`` (for the other action spaces: the size ``S`` of the behaviour
            statistics).
        obs_shape: shape of one observation.
        obs_dtype: dtype of the observations (structured for Dict observations, see
            :func:`~sb3_acer.common.observations.observation_layout`).
        action_size: 0 for ``Discrete`` actions (``[T, E]``), else the flat action size (``[T, E, size]``).
        action_dtype: dtype of the stored actions.
    """

    def __init__(
        self,
        n_steps: int,
        n_envs: int,
        n_actions: int,
        obs_shape: tuple[int, ...],
        obs_dtype: np.dtype,
        action_size: int = 0,
        action_dtype: np.dtype | type = np.int64,
    ) -> None:
        self.n_steps = n_steps
        self.obs_shape = obs_shape
        self.obs_dtype = obs_dtype
        self.observations = np.zeros((n_steps + 1, n_envs, *obs_shape), dtype=obs_dtype)
        action_shape = (action_size,) if action_size else ()
        self.actions = np.zeros((n_steps, n_envs, *action_shape), dtype=action_dtype)
        self.rewards = np.zeros((n_steps, n_envs), dtype=np.float32)
        self.mu_probs = np.zeros((n_steps, n_envs, n_actions), dtype=np.float32)
        self.terminated = np.zeros((n_steps, n_envs), dtype=bool)
        self.truncated = np.zeros((n_steps, n_envs), dtype=bool)
        self.episode_starts = np.zeros((n_steps + 1, n_envs), dtype=bool)
        self.final_index: list[tuple[int, int]] = []
        self.final_observations: list[np.ndarray] = []

    def record_action(
        self, t: int, obs: ObservationArrays, starts: np.ndarray, action: th.Tensor, probs: th.Tensor
    ) -> None:
        """Record the observation ``x_t``, its episode-start flags, the action taken and ``mu(.|x_t)``."""
        self.observations[t] = pack_observations(obs, self.obs_dtype)
        self.episode_starts[t] = starts
        self.actions[t] = action.cpu().numpy()
        self.mu_probs[t] = probs.cpu().numpy()

    def record_outcome(
        self,
        t: int,
        rewards: np.ndarray,
        dones: np.ndarray,
        infos: list[dict[str, Any]],
        handle_timeout_termination: bool,
    ) -> None:
        """Record the rewards of step ``t`` and how each finished episode ended: a time-limit end (with
        ``handle_timeout_termination``) as a truncation with its final observation, any other as a
        termination."""
        self.rewards[t] = rewards
        for env_idx in np.flatnonzero(dones):
            info = infos[env_idx]
            timed_out = info.get("TimeLimit.truncated", False) and "terminal_observation" in info
            if handle_timeout_termination and timed_out:
                self.truncated[t, env_idx] = True
                self.final_index.append((t, int(env_idx)))
                self.final_observations.append(
                    pack_observations(info["terminal_observation"], self.obs_dtype)
                )
            else:
                self.terminated[t, env_idx] = True

    def to_segment(
        self, obs: ObservationArrays, starts: np.ndarray, initial_state: tuple[np.ndarray, np.ndarray] | None
    ) -> Segment:
        """The segment, with ``obs`` as the bootstrap observation ``x_T``."""
        self.observations[self.n_steps] = pack_observations(obs, self.obs_dtype)
        self.episode_starts[self.n_steps] = starts
        final_observations = (
            np.stack(self.final_observations)
            if self.final_observations
            else np.zeros((0, *self.obs_shape), dtype=self.obs_dtype)
        )
        return Segment(
            observations=self.observations,
            actions=self.actions,
            rewards=self.rewards,
            mu_probs=self.mu_probs,
            terminated=self.terminated,
            truncated=self.truncated,
            episode_starts=self.episode_starts,
            final_index=np.array(self.final_index, dtype=np.int64).reshape(-1, 2),
            final_observations=final_observations,
            initial_state=initial_state,
        )


def act(
    policy: ACERPolicy, obs: ObservationArrays, starts: np.ndarray, lstm_state: LSTMState | None
) -> tuple[th.Tensor, th.Tensor, LSTMState | None]:
    """The action drawn from ``pi(.|x)`` for each env, the behaviour statistics ``mu`` (the probabilities
    for ``Discrete`` actions) and the recurrent state after this step (reset where ``starts``)."""
    flags = th.as_tensor(starts, dtype=th.bool, device=policy.device)
    return policy.behaviour(obs_as_tensor(obs, policy.device), lstm_state, flags)


def collect_segment(
    *,
    env: VecEnv,
    policy: ACERPolicy,
    n_steps: int,
    last_obs: ObservationArrays,
    last_episode_starts: np.ndarray,
    on_step: Callable[[StepRecord], bool],
    last_lstm_state: LSTMState | None = None,
    handle_timeout_termination: bool = True,
) -> RolloutResult:
    """Run ``policy`` for ``n_steps`` steps in every env of ``env`` and record the segment.

    Args:
        env: the vectorised environment.
        policy: acts by sampling from ``pi(.|x)``; the statistics of its distribution (the probabilities
            for ``Discrete`` actions) are stored as ``mu``; the env gets its actions through
            ``policy.dist.to_env`` (``Box`` actions clipped to the bounds, the unclipped ones stored).
        n_steps: segment length ``T``.
        last_obs: current observation of each env (a dict of arrays for Dict observations).
        last_episode_starts: whether each current observation starts an episode.
        on_step: called after every vector step; returning ``False`` stops the rollout.
        last_lstm_state: recurrent policies: the state ``(h, c)`` (each ``[1, E, n_lstm]``) after the
            previous step, ``None`` for zeros.
        handle_timeout_termination: record a time-limit end as a truncation (the update bootstraps from
            the final observation); ``False`` records it as a termination (the return is cut there).

    Returns:
        The segment (or ``None`` if stopped) and where to continue from.
    """
    n_envs = env.num_envs
    obs_shape, obs_dtype = (
        observation_layout(policy.observation_space)
        if isinstance(last_obs, dict)
        else (last_obs.shape[1:], last_obs.dtype)
    )
    dist = policy.dist
    recorder = SegmentRecorder(
        n_steps, n_envs, dist.stats_size, obs_shape, obs_dtype, **dist.stored_action_layout()
    )
    policy.set_training_mode(False)
    obs, starts = last_obs, last_episode_starts
    lstm_state: LSTMState | None = None
    initial_state: tuple[np.ndarray, np.ndarray] | None = None
    if isinstance(policy, RecurrentACERPolicy):
        lstm_state = last_lstm_state if last_lstm_state is not None else policy.initial_state(n_envs)
        initial_state = (lstm_state[0][0].cpu().numpy().copy(), lstm_state[1][0].cpu().numpy().copy())
    for t in range(n_steps):
        action, probs, lstm_state = act(policy, obs, starts, lstm_state)
        recorder.record_action(t, obs, starts, action, probs)
        step_obs, step_rewards, dones, infos = env.step(dist.to_env(recorder.actions[t]))
        new_obs = step_obs if isinstance(step_obs, dict) else np.asarray(step_obs)
        recorder.record_outcome(t, step_rewards, dones, infos, handle_timeout_termination)
        if not on_step(StepRecord(new_obs, recorder.actions[t], step_rewards, dones, infos)):
            return RolloutResult(
                segment=None,
                last_obs=new_obs,
                last_episode_starts=dones.astype(bool),
                last_lstm_state=lstm_state,
            )
        obs, starts = new_obs, dones.astype(bool)
    return RolloutResult(
        segment=recorder.to_segment(obs, starts, initial_state),
        last_obs=obs,
        last_episode_starts=starts,
        last_lstm_state=lstm_state,
    )

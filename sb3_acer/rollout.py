"""Collect one on-policy segment from a vectorised environment.

SB3's ``VecEnv`` resets a finished sub-environment inside the same ``step`` call and puts the last
observation of the episode in ``info["terminal_observation"]``; a time-limit truncation is flagged by
``info["TimeLimit.truncated"]``. The segment records both, so that the update cuts the return on a
termination and bootstraps on a truncation (or, with ``handle_timeout_termination=False``, records a
time-limit end as a termination, as SB2 did).

A recurrent policy carries its LSTM state from step to step and from one segment to the next (the state is
reset where an episode starts, inside the policy); the segment records the state it started with.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch as th
from stable_baselines3.common.utils import obs_as_tensor
from stable_baselines3.common.vec_env import VecEnv

from sb3_acer.policies import ACERPolicy, LSTMState, RecurrentACERPolicy
from sb3_acer.segment import Segment

__all__ = ["RolloutResult", "StepRecord", "collect_segment"]


class StepRecord(NamedTuple):
    """One vector-env step, handed to the algorithm's bookkeeping hook."""

    new_obs: np.ndarray
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
    last_obs: np.ndarray
    last_episode_starts: np.ndarray
    last_lstm_state: LSTMState | None = None


def sample_actions(probs: th.Tensor) -> th.Tensor:
    """One action per row of ``probs`` (``[B, A]``), drawn by inverting the cumulative distribution with a
    uniform number from torch's global generator (half the cost of ``torch.multinomial`` on small batches).

    An action of zero probability is never drawn; a ``u`` past the rounded total lands on the last action
    with positive probability.
    """
    cdf = probs.cumsum(-1)
    u = th.rand((probs.shape[0], 1), dtype=cdf.dtype, device=cdf.device) * cdf[:, -1:]
    return th.searchsorted(cdf, u, right=True).squeeze(-1).clamp_(max=probs.shape[-1] - 1)


def collect_segment(
    *,
    env: VecEnv,
    policy: ACERPolicy | RecurrentACERPolicy,
    n_steps: int,
    last_obs: np.ndarray,
    last_episode_starts: np.ndarray,
    on_step: Callable[[StepRecord], bool],
    last_lstm_state: LSTMState | None = None,
    handle_timeout_termination: bool = True,
) -> RolloutResult:
    """Run ``policy`` for ``n_steps`` steps in every env of ``env`` and record the segment.

    Args:
        env: the vectorised environment.
        policy: acts by sampling from ``pi(.|x)``; its probabilities are stored as ``mu``.
        n_steps: segment length ``T``.
        last_obs: current observation of each env.
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
    obs_buffer = np.zeros((n_steps + 1, n_envs, *last_obs.shape[1:]), dtype=last_obs.dtype)
    actions = np.zeros((n_steps, n_envs), dtype=np.int64)
    rewards = np.zeros((n_steps, n_envs), dtype=np.float32)
    mu_probs = np.zeros((n_steps, n_envs, policy.n_actions), dtype=np.float32)
    terminated = np.zeros((n_steps, n_envs), dtype=bool)
    truncated = np.zeros((n_steps, n_envs), dtype=bool)
    episode_starts = np.zeros((n_steps + 1, n_envs), dtype=bool)
    final_index: list[tuple[int, int]] = []
    final_obs: list[np.ndarray] = []

    policy.set_training_mode(False)
    obs, starts = last_obs, last_episode_starts
    lstm_state: LSTMState | None = None
    initial_state: tuple[np.ndarray, np.ndarray] | None = None
    if isinstance(policy, RecurrentACERPolicy):
        lstm_state = last_lstm_state if last_lstm_state is not None else policy.initial_state(n_envs)
        initial_state = (lstm_state[0][0].cpu().numpy().copy(), lstm_state[1][0].cpu().numpy().copy())
    for t in range(n_steps):
        with th.no_grad():
            if isinstance(policy, RecurrentACERPolicy):
                assert lstm_state is not None
                probs, lstm_state = policy.action_probs(
                    th.as_tensor(obs, device=policy.device),
                    lstm_state,
                    th.as_tensor(starts, dtype=th.bool, device=policy.device),
                )
            else:
                probs = policy.action_probs(obs_as_tensor(obs, policy.device))
            action = sample_actions(probs)
        obs_buffer[t] = obs
        episode_starts[t] = starts
        actions[t] = action.cpu().numpy()
        mu_probs[t] = probs.cpu().numpy()

        step_obs, step_rewards, dones, infos = env.step(actions[t])
        new_obs = np.asarray(step_obs)
        rewards[t] = step_rewards
        for env_idx in np.flatnonzero(dones):
            info = infos[env_idx]
            timed_out = info.get("TimeLimit.truncated", False) and "terminal_observation" in info
            if handle_timeout_termination and timed_out:
                truncated[t, env_idx] = True
                final_index.append((t, int(env_idx)))
                final_obs.append(np.asarray(info["terminal_observation"], dtype=last_obs.dtype))
            else:
                terminated[t, env_idx] = True
        if not on_step(StepRecord(new_obs, actions[t], step_rewards, dones, infos)):
            return RolloutResult(
                segment=None,
                last_obs=new_obs,
                last_episode_starts=dones.astype(bool),
                last_lstm_state=lstm_state,
            )
        obs, starts = new_obs, dones.astype(bool)

    obs_buffer[n_steps] = obs
    episode_starts[n_steps] = starts
    segment = Segment(
        observations=obs_buffer,
        actions=actions,
        rewards=rewards,
        mu_probs=mu_probs,
        terminated=terminated,
        truncated=truncated,
        episode_starts=episode_starts,
        final_index=np.array(final_index, dtype=np.int64).reshape(-1, 2),
        final_observations=(
            np.stack(final_obs) if final_obs else np.zeros((0, *last_obs.shape[1:]), dtype=last_obs.dtype)
        ),
        initial_state=initial_state,
    )
    return RolloutResult(
        segment=segment, last_obs=obs, last_episode_starts=starts, last_lstm_state=lstm_state
    )

"""The record that crosses from the rollout to the replay buffer and the update: one segment of experience."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Segment", "final_index_inside"]


def final_index_inside(final_index: np.ndarray, n_steps: int, n_envs: int) -> bool:
    """Whether every truncation row ``(t, e)`` of ``final_index`` ``[K, 2]`` lies in a segment of ``n_steps``
    steps of ``n_envs`` envs (the rule of :class:`Segment` and of a replay memory's stored rows)."""
    return not len(final_index) or bool(
        (final_index >= 0).all()
        and (final_index[:, 0] < n_steps).all()
        and (final_index[:, 1] < n_envs).all()
    )


@dataclass(frozen=True)
class Segment:
    """``T`` consecutive steps of ``E`` environments, time-major (NumPy only; no torch in here).

    Attributes:
        observations: ``[T + 1, E, *obs_shape]`` observations ``x_0 .. x_T`` as the env returned them
            (``x_T`` is the bootstrap observation), in the observation space's dtype; for a ``Dict``
            observation space ``[T + 1, E]`` of a structured dtype, one field per key
            (:mod:`sb3_acer.common.observations`).
        actions: ``[T, E]`` int64 actions ``a_t`` of a ``Discrete`` space; for the other action spaces
            ``[T, E, action_size]`` flat actions (:mod:`sb3_acer.common.distributions`: float32 unclipped
            draws for ``Box``, int64 choices per factor for ``MultiDiscrete`` / ``MultiBinary``).
        rewards: ``[T, E]`` float32 rewards ``r_t``.
        mu_probs: ``[T, E, A]`` float32 behaviour probabilities ``mu(.|x_t)``; for the other action spaces
            the ``[T, E, S]`` flat statistics of the behaviour distribution.
        terminated: ``[T, E]`` bool, the episode terminated after step ``t`` (cuts the return).
        truncated: ``[T, E]`` bool, the episode was truncated after step ``t`` (bootstraps from
            ``final_observations``).
        episode_starts: ``[T + 1, E]`` bool, ``x_t`` is the first observation of an episode.
        final_index: ``[K, 2]`` int64 ``(t, e)`` of every truncated step.
        final_observations: ``[K, *obs_shape]`` the observation at which each of those episodes was cut.
        initial_state: recurrent policies only: the LSTM state ``(h, c)``, each float32 ``[E, n_lstm]``,
            with which the behaviour policy entered step 0 (before the reset of ``episode_starts[0]``);
            ``None`` for feed-forward policies.
    """

    observations: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    mu_probs: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    episode_starts: np.ndarray
    final_index: np.ndarray
    final_observations: np.ndarray
    initial_state: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n_steps(self) -> int:
        return int(self.actions.shape[0])

    @property
    def n_envs(self) -> int:
        return int(self.actions.shape[1])

    def __post_init__(self) -> None:
        if self.actions.ndim not in (2, 3):
            raise ValueError(
                f"Segment.actions must be [T, E], got shape {self.actions.shape} "
                "(or [T, E, action_size] for Box, MultiDiscrete and MultiBinary actions)"
            )
        n_steps, n_envs = self.actions.shape[:2]
        expected = {
            "observations": (n_steps + 1, n_envs),
            "rewards": (n_steps, n_envs),
            "mu_probs": (n_steps, n_envs),
            "terminated": (n_steps, n_envs),
            "truncated": (n_steps, n_envs),
            "episode_starts": (n_steps + 1, n_envs),
        }
        for name, lead in expected.items():
            shape = getattr(self, name).shape
            if shape[: len(lead)] != lead:
                raise ValueError(f"Segment.{name} must start with shape {lead}, got {shape}")
        if self.mu_probs.ndim != 3:
            raise ValueError(f"Segment.mu_probs must be [T, E, A], got shape {self.mu_probs.shape}")
        if self.final_observations.shape[1:] != self.observations.shape[2:]:
            raise ValueError(
                f"Segment.final_observations must be [K, *obs_shape] with obs_shape = "
                f"{self.observations.shape[2:]}, got {self.final_observations.shape}"
            )
        if self.final_index.shape != (len(self.final_observations), 2):
            raise ValueError(
                f"Segment.final_index must be [K, 2] with K = {len(self.final_observations)}, "
                f"got {self.final_index.shape}"
            )
        if self.initial_state is not None:
            if not isinstance(self.initial_state, tuple) or len(self.initial_state) != 2:
                raise ValueError("Segment.initial_state must be a tuple (h, c) of two arrays")
            h, c = self.initial_state
            if h.ndim != 2 or h.shape[0] != n_envs or h.shape != c.shape:
                raise ValueError(
                    f"Segment.initial_state must be (h, c), each [E={n_envs}, n_lstm], got shapes "
                    f"{h.shape} and {c.shape}"
                )
        if not final_index_inside(self.final_index, n_steps, n_envs):
            raise ValueError(
                f"Segment.final_index rows (t, e) must lie in [0, {n_steps}) x [0, {n_envs}), "
                f"got {self.final_index.tolist()}"
            )

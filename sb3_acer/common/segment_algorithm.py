"""The learn loop of ACER on SB3's ``BaseAlgorithm``, with SB2's semantics.

:class:`SegmentAlgorithm` is to ACER what SB3's ``OnPolicyAlgorithm`` is to A2C: it steps all environments
together for ``n_steps`` (:func:`~sb3_acer.common.rollout.collect_segment`), hands each segment to ``train``
and logs. Unlike SB3 it continues the running episodes across ``learn`` calls (as SB2 did: the environments
are reset only on the first call, after ``set_env``, after a failed rollout or with a new seed), carries a
recurrent policy's LSTM state across segments, takes SB2's callable callbacks, and checks what the
environments return before it reaches the networks or the replay memory.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import numpy as np
from stable_baselines3.common.base_class import BaseAlgorithm, maybe_make_env
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.utils import check_for_correct_spaces, configure_logger, safe_mean
from stable_baselines3.common.vec_env import VecEnv

from sb3_acer.common.buffers import ReplayBuffer
from sb3_acer.common.callbacks import make_callback
from sb3_acer.common.checks.observations import check_env_step
from sb3_acer.common.checks.settings import check_learn_arguments
from sb3_acer.common.policies import ACERPolicy, LSTMState
from sb3_acer.common.rollout import RolloutResult, StepRecord, collect_segment
from sb3_acer.common.type_aliases import Segment

if TYPE_CHECKING:
    from sb3_acer.distributed import RayActors

__all__ = ["SegmentAlgorithm"]

SelfSegmentAlgorithm = TypeVar("SelfSegmentAlgorithm", bound="SegmentAlgorithm")


class SegmentAlgorithm(BaseAlgorithm):
    """SB3's ``BaseAlgorithm`` that learns from segments of ``n_steps`` x ``n_envs`` transitions.

    Subclasses set ``n_steps``, ``handle_timeout_termination`` and ``replay_buffer`` (``None`` without
    replay; its size is logged) and implement :meth:`train`.
    """

    policy: ACERPolicy
    n_steps: int
    handle_timeout_termination: bool
    replay_buffer: ReplayBuffer | None
    #: Recurrent policies: the LSTM state (h, c) reached in the training envs, carried across segments.
    _last_lstm_state: LSTMState | None

    def train(self, segment: Segment) -> None:
        """Learn from one freshly collected ``segment``."""
        raise NotImplementedError

    def learn(  # type: ignore[override]
        self: SelfSegmentAlgorithm,
        total_timesteps: int,
        callback: MaybeCallback = None,
        seed: int | None = None,
        log_interval: int | None = 100,
        tb_log_name: str = "ACER",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
        actors: RayActors | None = None,
    ) -> SelfSegmentAlgorithm:
        """Train for at least ``total_timesteps`` environment steps.

        Args:
            total_timesteps: number of environment steps (all envs together) to train for; a whole
                number, which may be written as a float (``1e5``).
            callback: an SB3 callback, a list of them, or SB2's callable ``(locals, globals) -> bool``.
            seed: re-seed before training (``None`` keeps the current seed); the environments are then
                reset, so that they start from it (without a seed, learn continues the running episodes).
            log_interval: number of on-policy iterations between two log dumps (0 or ``None``: never).
            tb_log_name: name of the TensorBoard run folder.
            reset_num_timesteps: restart the step counter (and the schedule) from 0.
            progress_bar: show a progress bar (needs ``tqdm`` and ``rich``).
            actors: collect the segments with Ray actors (:class:`~sb3_acer.distributed.RayActors`, needs
                ``pip install "sb3-acer[ray]"``) instead of this process's env; ``None`` (the default): the
                synchronous loop, deterministic for a given seed.

        Returns:
            The trained model.
        """
        check_learn_arguments(
            total_timesteps, callback, seed, log_interval, tb_log_name, has_env=self.env is not None
        )
        self.set_random_seed(seed)
        if seed is not None:
            self._last_obs = None  # the environments start again from the seed (a reset, as in SB3)
            self._last_lstm_state = None
        if actors is not None:
            from sb3_acer.distributed.learner import learn_with_actors  # Ray only when actors are asked for

            return learn_with_actors(
                self,
                actors,
                total_timesteps,
                callback,
                log_interval,
                tb_log_name,
                reset_num_timesteps,
                progress_bar,
            )
        total_timesteps, callback_obj = self._setup_learn(
            int(total_timesteps), callback, reset_num_timesteps, tb_log_name, progress_bar
        )
        callback_obj.on_training_start(locals(), globals())
        iteration = 0
        while self.num_timesteps < total_timesteps:
            callback_obj.on_rollout_start()
            segment = self._collect(callback_obj)
            if segment is None:
                break
            callback_obj.update_locals(locals())
            callback_obj.on_rollout_end()
            iteration += 1
            self._update_current_progress_remaining(self.num_timesteps, total_timesteps)
            self.train(segment)
            if log_interval and iteration % log_interval == 0:
                self.dump_logs(iteration)
        callback_obj.on_training_end()
        return self

    def _setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        # As BaseAlgorithm._setup_learn, except that the environment is reset only when it has to be
        # (first call or after set_env), as SB2 does: repeated learn() calls continue the same episodes.
        self.start_time = time.time_ns()
        if self.ep_info_buffer is None or reset_num_timesteps:
            self.ep_info_buffer = deque(maxlen=self._stats_window_size)
            self.ep_success_buffer = deque(maxlen=self._stats_window_size)
        if reset_num_timesteps:
            self.num_timesteps = 0
            self._episode_num = 0
        else:
            total_timesteps += self.num_timesteps
        self._total_timesteps = total_timesteps
        self._num_timesteps_at_start = self.num_timesteps
        if self._last_obs is None:
            assert self.env is not None
            reset_obs = self.env.reset()
            check_env_step(observations=reset_obs, num_timesteps=self.num_timesteps, what="reset")  # type: ignore[arg-type]
            self._last_obs = reset_obs  # type: ignore[assignment]
            self._last_episode_starts = np.ones((self.env.num_envs,), dtype=bool)
        if not self._custom_logger:
            self._logger = configure_logger(
                self.verbose, self.tensorboard_log, tb_log_name, reset_num_timesteps
            )
        return total_timesteps, self._init_callback(callback, progress_bar)

    def _init_callback(self, callback: MaybeCallback, progress_bar: bool = False) -> BaseCallback:
        # SB3's, which also takes SB2's callable callbacks.
        callback_obj = make_callback(callback, progress_bar)
        callback_obj.init_callback(self)
        return callback_obj

    def _update_current_progress_remaining(self, num_timesteps: int, total_timesteps: int) -> None:
        # SB3's, clamped to [0, 1]: the last segment may run past total_timesteps.
        fraction_done = float(num_timesteps) / float(max(total_timesteps, 1))
        self._current_progress_remaining = 1.0 - min(max(fraction_done, 0.0), 1.0)

    def _collect(self, callback: BaseCallback) -> Segment | None:
        """One segment from the environments (``None`` if a callback stopped training), with the step
        counter, the callbacks and the episode statistics updated at each step."""
        assert self.env is not None and self._last_obs is not None and self._last_episode_starts is not None

        def on_step(record: StepRecord) -> bool:
            check_env_step(
                observations=record.new_obs,
                rewards=record.rewards,
                infos=record.infos,
                num_timesteps=self.num_timesteps,
            )
            self.num_timesteps += self.env.num_envs  # type: ignore[union-attr]
            callback.update_locals(
                dict(
                    new_obs=record.new_obs,
                    actions=record.actions,
                    rewards=record.rewards,
                    dones=record.dones,
                    infos=record.infos,
                )
            )
            self._update_info_buffer(record.infos, record.dones)
            return bool(callback.on_step())

        start_timesteps = self.num_timesteps
        try:
            result = self._collect_segment(on_step)
        except BaseException:
            # E.g. bad data from the env, a failed worker or a Ctrl-C: nothing of this segment is kept
            # (the env has moved on from _last_obs), and the next learn() resets the env.
            self.num_timesteps = start_timesteps
            self._last_obs = None
            raise
        self._last_obs = result.last_obs
        self._last_episode_starts = result.last_episode_starts
        self._last_lstm_state = result.last_lstm_state
        return result.segment

    def _collect_segment(self, on_step: Callable[[StepRecord], bool]) -> RolloutResult:
        assert self.env is not None and self._last_obs is not None and self._last_episode_starts is not None
        return collect_segment(
            env=self.env,
            policy=self.policy,
            n_steps=self.n_steps,
            last_obs=self._last_obs,
            last_episode_starts=self._last_episode_starts,
            on_step=on_step,
            last_lstm_state=self._carried_lstm_state(),
            handle_timeout_termination=self.handle_timeout_termination,
        )

    def _carried_lstm_state(self) -> LSTMState | None:
        """The LSTM state to continue the rollout from, ``None`` (zeros) if it does not fit the env."""
        state = self._last_lstm_state
        if state is None or self.env is None or state[0].shape[1] != self.env.num_envs:
            return None
        return state

    def dump_logs(self, iteration: int = 0) -> None:
        """Write the ``rollout/``, ``time/`` and ``replay/`` records to the logger, as SB3's algorithms'
        ``dump_logs`` do (SB3's ``LogEveryNTimesteps`` calls it); ``iteration`` (the number of segments
        collected in this ``learn`` call) is logged when positive."""
        time_elapsed = max((time.time_ns() - self.start_time) / 1e9, sys.float_info.epsilon)
        fps = int((self.num_timesteps - self._num_timesteps_at_start) / time_elapsed)
        if iteration > 0:
            self.logger.record("time/iterations", iteration, exclude="tensorboard")
        if self.ep_info_buffer:
            self.logger.record("rollout/ep_rew_mean", safe_mean([info["r"] for info in self.ep_info_buffer]))
            self.logger.record("rollout/ep_len_mean", safe_mean([info["l"] for info in self.ep_info_buffer]))
        if self.ep_success_buffer:  # envs that report info["is_success"] at episode ends, as in SB3
            self.logger.record("rollout/success_rate", safe_mean(self.ep_success_buffer))
        self.logger.record("time/fps", fps)
        self.logger.record("time/time_elapsed", int(time_elapsed), exclude="tensorboard")
        self.logger.record("time/total_timesteps", self.num_timesteps, exclude="tensorboard")
        if self.replay_buffer is not None:
            self.logger.record("replay/segments", len(self.replay_buffer), exclude="tensorboard")
        self.logger.dump(step=self.num_timesteps)

    #: Whether the file this model was loaded from says it was trained on a ``VecNormalize`` env.
    _loaded_with_vec_normalize = False

    @property
    def trained_with_vec_normalize(self) -> bool:
        """Whether the model learns (or, loaded from a file, learned) on observations normalised by SB3's
        ``VecNormalize``: then it must be run with the same statistics. Saved in the model file (files of
        sb3-acer 0.1 do not say it: ``False``)."""
        return self._vec_normalize_env is not None or self._loaded_with_vec_normalize

    @property
    def stats_window_size(self) -> int:
        """Number of episodes the ``rollout/`` means average over (SB3's ``stats_window_size``)."""
        return self._stats_window_size

    def _matching_env(self, env: GymEnv | str, mismatch: str) -> VecEnv:
        """``env`` (made from its id if need be) wrapped as SB3 wraps it, once its spaces are found to be
        the model's; ``mismatch`` begins the ``ValueError``'s message if they are not."""
        vec_env = self._wrap_env(maybe_make_env(env, self.verbose), self.verbose)
        try:
            check_for_correct_spaces(vec_env, self.observation_space, self.action_space)
        except ValueError as error:
            raise ValueError(f"{mismatch}: {error}") from error
        return vec_env

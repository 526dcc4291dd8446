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
from typing import Any, Protocol, TypeVar

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.type_aliases import MaybeCallback
from stable_baselines3.common.utils import configure_logger, safe_mean

from sb3_acer.common.base_class import DataFileAlgorithm
from sb3_acer.common.buffers import ReplayBuffer
from sb3_acer.common.callbacks import make_callback
from sb3_acer.common.checks.observations import check_env_step
from sb3_acer.common.checks.settings import check_learn_arguments
from sb3_acer.common.policies import ACERPolicy, LSTMState
from sb3_acer.common.rollout import RolloutResult, StepRecord, collect_segment
from sb3_acer.common.type_aliases import Segment

__all__ = ["SegmentAlgorithm", "SegmentCollector"]

SelfSegmentAlgorithm = TypeVar("SelfSegmentAlgorithm", bound="SegmentAlgorithm")


class SegmentCollector(Protocol):
    """What ``learn(..., actors=...)`` takes: a collector outside this process's env (such as
    :class:`~sb3_acer.distributed.RayActors`) that runs the learn loop itself, through
    :meth:`SegmentAlgorithm.setup_learn` and :meth:`SegmentAlgorithm.learn_from_segment`."""

    def learn(
        self,
        model: Any,
        total_timesteps: int,
        callback: MaybeCallback,
        log_interval: int | None,
        tb_log_name: str,
        reset_num_timesteps: bool,
        progress_bar: bool,
    ) -> None:
        """Train ``model`` for ``total_timesteps`` steps on the segments this collector supplies."""


class SegmentAlgorithm(DataFileAlgorithm):
    """SB3's ``BaseAlgorithm`` that learns from segments of ``n_steps`` x ``n_envs`` transitions.

    Subclasses set ``n_steps``, ``handle_timeout_termination`` and ``replay_buffer`` (``None`` without
    replay; its size is logged) and implement :meth:`train`. A collector of its own (Ray actors) drives the
    loop through :meth:`setup_learn` and :meth:`learn_from_segment`.
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
        actors: SegmentCollector | None = None,
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
            actors.learn(
                self, total_timesteps, callback, log_interval, tb_log_name, reset_num_timesteps, progress_bar
            )
            return self
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
            self._train_segment(segment, total_timesteps)
            if log_interval and iteration % log_interval == 0:
                self.dump_logs(iteration)
        callback_obj.on_training_end()
        return self

    def _train_segment(self, segment: Segment, total_timesteps: int) -> None:
        """Move the schedule's progress to the step counter, then :meth:`train` on ``segment``."""
        self._update_current_progress_remaining(self.num_timesteps, total_timesteps)
        self.train(segment)

    def learn_from_segment(
        self,
        segment: Segment,
        dones: Any,
        infos: Any,
        callback: BaseCallback,
        total_timesteps: int,
        on_step: Callable[[list[dict[str, Any]]], None] | None = None,
    ) -> bool:
        """Learn from a ``segment`` a collector of its own supplies, as :meth:`learn` does from one it
        collects: count its steps and run the per-step callbacks and episode statistics (``dones[t]``,
        ``infos[t]``: step ``t``'s, of each env; ``on_step(infos[t])`` after each), then the rollout's end,
        the schedule's progress and :meth:`train`.

        Args:
            segment: the segment to learn from, ``n_steps`` steps of every env.
            dones: step by step, whether each env's episode ended (``n_steps`` rows).
            infos: step by step, each env's info dicts (``n_steps`` rows).
            callback: the callback :meth:`setup_learn` returned.
            total_timesteps: the step count :meth:`setup_learn` returned (the schedules' progress).
            on_step: called with each step's infos after its callbacks, if given.

        Returns:
            ``False`` if a callback stopped training (then nothing is trained on).
        """
        callback.on_rollout_start()
        for t in range(segment.n_steps):
            observations, actions, rewards = (
                segment.observations[t + 1],
                segment.actions[t],
                segment.rewards[t],
            )
            self._count_step(StepRecord(observations, actions, rewards, dones[t], infos[t]), callback)
            if on_step is not None:
                on_step(infos[t])
            if not callback.on_step():
                return False
        callback.update_locals({"segment": segment})
        callback.on_rollout_end()
        self._train_segment(segment, total_timesteps)
        return True

    def setup_learn(
        self,
        total_timesteps: int,
        callback: MaybeCallback = None,
        reset_num_timesteps: bool = True,
        tb_log_name: str = "run",
        progress_bar: bool = False,
    ) -> tuple[int, BaseCallback]:
        """Start a learn loop: the step counter, the logger, the episode statistics and the callback, as
        :meth:`learn` starts its own; public for a collector of its own (see :class:`SegmentCollector`).

        As SB3's ``BaseAlgorithm._setup_learn``, except that the environment is reset only when it has to
        be (first call or after ``set_env``), as SB2 does: repeated ``learn`` calls continue the same
        episodes.

        Args:
            total_timesteps: the steps to train for (counted on from the model's, unless
                ``reset_num_timesteps``).
            callback: as ``learn``'s: SB3 callbacks, a list of them, SB2's callable, or None.
            reset_num_timesteps: start the step count and the episode statistics from zero, in a new
                TensorBoard run.
            tb_log_name: the TensorBoard run's name.
            progress_bar: show a progress bar.

        Returns:
            The step count to train up to, and the callback to pass to :meth:`learn_from_segment`.
        """
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

    #: SB3's name for :meth:`setup_learn` (SB3's code and tests call it).
    _setup_learn = setup_learn

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
            self._count_step(record, callback)
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

    def _count_step(self, record: StepRecord, callback: BaseCallback) -> None:
        """Count one step of every env, hand it to the callback's locals and the episode statistics."""
        self.num_timesteps += len(record.dones)
        callback.update_locals(record._asdict())
        self._update_info_buffer(record.infos, record.dones)

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

    @property
    def stats_window_size(self) -> int:
        """Number of episodes the ``rollout/`` means average over (SB3's ``stats_window_size``)."""
        return self._stats_window_size

"""The learner: segments from the actors into the same ``train`` as the synchronous loop.

:func:`learn_with_actors` is what ``learn(..., actors=RayActors(...))`` runs instead of
:class:`~sb3_acer.common.segment_algorithm.SegmentAlgorithm`'s loop. For each segment an actor sends it counts
the steps, runs the callbacks and the episode statistics step by step (as the synchronous loop does while it
collects), then calls the model's ``train`` (the on-policy update, the replay memory, the
``Poisson(replay_ratio)`` replayed updates) and broadcasts the new weights every ``broadcast_interval``
updates. The actor is asked for its next segment before the update, so that sampling and learning overlap.

Logged besides the synchronous loop's keys: ``actors/policy_lag`` (updates between the weights a segment
was collected with and those it is learned by), ``actors/segments_per_s``, ``actors/restarts``,
``actors/lost_segments``, ``actors/stale_segments`` (dropped for a lag over ``max_policy_lag``) and
``actors/learner_idle`` (the fraction of the learner's time spent waiting for segments).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, TypeVar

from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import ResultsWriter
from stable_baselines3.common.type_aliases import MaybeCallback

from sb3_acer.distributed.actors import SegmentMessage
from sb3_acer.distributed.pool import ActorPool, writable

if TYPE_CHECKING:
    from sb3_acer.common.segment_algorithm import SegmentAlgorithm
    from sb3_acer.distributed.config import RayActors

__all__ = ["LearnerStats", "learn_with_actors"]

SelfAlgorithm = TypeVar("SelfAlgorithm", bound="SegmentAlgorithm")


class LearnerStats:
    """The learner's counters, over the whole call and since the last log dump."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.window_start = self.start
        self.segments = 0
        self.window_segments = 0
        self.idle = 0.0
        self.window_idle = 0.0
        self.stale = 0

    def received(self, waited: float) -> None:
        self.segments += 1
        self.window_segments += 1
        self.idle += waited
        self.window_idle += waited

    def record(self, model: SegmentAlgorithm, pool: ActorPool) -> dict[str, float]:
        """Record the ``actors/`` keys in the model's logger (and start a new window); returns them."""
        now = time.perf_counter()
        elapsed = max(now - self.window_start, 1e-9)
        values = {
            "actors/segments_per_s": self.window_segments / elapsed,
            "actors/learner_idle": self.window_idle / elapsed,
            "actors/restarts": float(pool.restarts),
            "actors/lost_segments": float(pool.lost_segments),
            "actors/stale_segments": float(self.stale),
        }
        for key, value in values.items():
            model.logger.record(key, value)
        self.window_start, self.window_segments, self.window_idle = now, 0, 0.0
        return values

    def totals(self, pool: ActorPool) -> dict[str, float]:
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        return {
            "actors/segments_per_s": self.segments / elapsed,
            "actors/learner_idle": self.idle / elapsed,
            "actors/restarts": float(pool.restarts),
            "actors/lost_segments": float(pool.lost_segments),
            "actors/stale_segments": float(self.stale),
            "actors/segments": float(self.segments),
        }


def _replay_steps(
    model: SegmentAlgorithm,
    callback: BaseCallback,
    message: SegmentMessage,
    monitor: ResultsWriter | None,
    start: float,
) -> bool:
    """Count the segment's steps and run the per-step callbacks and episode statistics, as the synchronous
    loop does while it collects; ``False`` if a callback stopped training."""
    segment = message.segment
    for t in range(segment.n_steps):
        model.num_timesteps += segment.n_envs
        dones, infos = message.dones[t], message.infos[t]
        callback.update_locals(
            dict(
                new_obs=segment.observations[t + 1],
                actions=segment.actions[t],
                rewards=segment.rewards[t],
                dones=dones,
                infos=infos,
            )
        )
        model._update_info_buffer(infos, dones)
        if monitor is not None:
            for info in infos:
                episode = info.get("episode")
                if episode is not None:
                    monitor.write_row(
                        {"r": episode["r"], "l": episode["l"], "t": round(time.perf_counter() - start, 6)}
                    )
        if not callback.on_step():
            return False
    return True


def learn_with_actors(
    model: SelfAlgorithm,
    actors: RayActors,
    total_timesteps: int,
    callback: MaybeCallback = None,
    log_interval: int | None = 100,
    tb_log_name: str = "ACER",
    reset_num_timesteps: bool = True,
    progress_bar: bool = False,
) -> SelfAlgorithm:
    """Train ``model`` on segments from Ray actors (``learn``'s arguments, see
    :meth:`~sb3_acer.common.segment_algorithm.SegmentAlgorithm.learn`); returns the model.

    Raises:
        RayNotInstalledError: Ray is not installed.
        ActorEnvError: an actor's env raised (the message names the actor and the env).
        ValueError: the actors' settings do not fit the model.
    """
    factory = actors.env_factory(model)
    actors.init_ray()
    total_timesteps, callback_obj = model._setup_learn(
        int(total_timesteps), callback, reset_num_timesteps, tb_log_name, progress_bar
    )
    pool = ActorPool(actors, factory, model)
    stats = LearnerStats()
    monitor = None
    if actors.monitor_file is not None:
        monitor = ResultsWriter(actors.monitor_file, header={"t_start": time.time(), "env_id": factory.name})
    try:
        pool.start()
        callback_obj.on_training_start(locals(), globals())
        _loop(model, actors, pool, stats, callback_obj, total_timesteps, log_interval, monitor)
    finally:
        pool.close()
        actors.stats = stats.totals(pool)
        if monitor is not None:
            monitor.close()
    callback_obj.on_training_end()
    return model


def _loop(
    model: SegmentAlgorithm,
    actors: RayActors,
    pool: ActorPool,
    stats: LearnerStats,
    callback: BaseCallback,
    total_timesteps: int,
    log_interval: int | None,
    monitor: ResultsWriter | None,
) -> None:
    """Receive, count, train and broadcast until ``total_timesteps`` steps are trained on."""
    updates = 0
    pool.broadcast(updates)
    pool.request_all()
    iteration = 0
    locals_: dict[str, Any] = {}
    while model.num_timesteps < total_timesteps:
        message, waited = pool.next()
        stats.received(waited)
        lag = updates - message.version
        if lag > actors.max_policy_lag:
            stats.stale += 1
            pool.request(message.actor_index)
            continue
        pool.request(message.actor_index)  # the actor samples while the learner learns
        message = writable(message)
        callback.on_rollout_start()
        if not _replay_steps(model, callback, message, monitor, stats.start):
            break
        locals_.update(segment=message.segment, iteration=iteration)
        callback.update_locals(locals_)
        callback.on_rollout_end()
        iteration += 1
        model._update_current_progress_remaining(model.num_timesteps, total_timesteps)
        model.logger.record_mean("actors/policy_lag", float(lag))
        model.train(message.segment)
        updates += 1
        if updates % actors.broadcast_interval == 0:
            pool.broadcast(updates)
        if log_interval and iteration % log_interval == 0:
            actors.stats = stats.record(model, pool)
            model.dump_logs(iteration)

"""The learner: segments from the actors into the same ``train`` as the synchronous loop.

:class:`RayActors` is what ``learn(..., actors=RayActors(...))`` takes: its :meth:`~RayActors.learn` runs the
learn loop instead of :class:`~sb3_acer.common.segment_algorithm.SegmentAlgorithm`'s own, through the
model's public hook (``setup_learn``, then ``learn_from_segment`` for each segment an actor sends: it counts
the steps, runs the callbacks and the episode statistics step by step, as the synchronous loop does while it
collects, then calls the model's ``train``: the on-policy update, the replay memory, the
``Poisson(replay_ratio)`` replayed updates), and broadcasts the new weights every ``broadcast_interval``
updates. The actor is asked for its next segment before the update, so that sampling and learning overlap.

Logged besides the synchronous loop's keys: ``actors/policy_lag`` (updates between the weights a segment
was collected with and those it is learned by), ``actors/segments_per_s``, ``actors/restarts``,
``actors/lost_segments``, ``actors/stale_segments`` (dropped for a lag over ``max_policy_lag``) and
``actors/learner_idle`` (the fraction of the learner's time spent waiting for segments).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.monitor import ResultsWriter
from stable_baselines3.common.type_aliases import MaybeCallback

from sb3_acer.distributed.config import ActorSettings
from sb3_acer.distributed.pool import ActorPool, writable

if TYPE_CHECKING:
    from sb3_acer.common.segment_algorithm import SegmentAlgorithm

__all__ = ["LearnerStats", "RayActors"]


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


class RayActors(ActorSettings):
    """Train with Ray actors: ``model.learn(total_timesteps, actors=RayActors("CartPole-v1", n_actors=4))``.

    ``n_actors`` Ray actors, each stepping ``envs_per_actor`` envs with a CPU copy of the policy, send
    whole segments to the learner (this process), which stores them in the replay memory and runs the
    same updates as the synchronous loop (one on-policy update per received segment, then
    ``Poisson(replay_ratio)`` replayed ones), and broadcasts its weights every ``broadcast_interval``
    updates. An actor that dies (also while it starts) is replaced; one that sends nothing within
    ``actor_timeout`` seconds (a hung env) is reported with a ``RuntimeWarning`` naming it and its env,
    stopped and replaced; an env that raises stops training with
    :class:`~sb3_acer.distributed.actors.ActorEnvError`. A local cluster started here is watched by a small
    process that stops what is left of it if this process is killed. See the "Distributed training"
    guide.

    Args:
        env: how the actors make their envs: an env id, an ``EnvSpec`` or a picklable callable
            ``env(n_envs=..., seed=...) -> VecEnv`` (see :class:`EnvFactory`); ``None``: the spec of the
            model's env (a ``DummyVecEnv`` made from an id; give ``env`` for wrapped envs such as Atari's).
        n_actors: number of actors.
        envs_per_actor: envs per actor; ``None``: the model's ``n_envs``, which it must equal (the replay
            memory is laid out per env: build the model with that many envs).
        address: the Ray cluster to join (``"auto"``, ``"ray://host:10001"``, ``"host:6379"``); ``None``
            starts a local one (when Ray is not started yet in this process). A ``host:port`` where nothing
            accepts a connection within seconds is refused with ``ConnectionError`` naming it.
        max_policy_lag: a segment collected with weights more than this many updates old is dropped
            (counted in ``actors/stale_segments``) and its actor given the newest weights.
        broadcast_interval: on-policy updates between two weight broadcasts (one ``ray.put`` each).
        max_restarts: actor restarts allowed in one ``learn`` call before training stops with an error.
        num_cpus_per_actor: CPUs Ray reserves for each actor.
        torch_threads: torch threads of each actor.
        env_kwargs: keyword arguments of ``gymnasium.make`` (with an env id).
        monitor_file: write every episode the actors finish to this SB3 ``Monitor`` CSV file (for
            ``sb3-acer plot`` and SB3's ``load_results``); ``None``: none.
        ray_init_kwargs: more keyword arguments of ``ray.init`` (e.g. ``num_cpus``).
        actor_timeout: seconds an actor may take to send a segment once asked before it is taken for hung
            (an env that does not answer): reported with a ``RuntimeWarning`` naming the actor and the env,
            stopped and replaced (a restart, counted against ``max_restarts``).
        start_timeout: seconds a new actor may take to start and make its envs (process start-up, imports,
            env creation), before it is taken for hung in the same way.
    """

    def learn(
        self,
        model: SegmentAlgorithm,
        total_timesteps: int,
        callback: MaybeCallback = None,
        log_interval: int | None = 100,
        tb_log_name: str = "ACER",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> None:
        """Train ``model`` on segments from Ray actors (what ``model.learn(..., actors=self)`` runs;
        ``learn``'s arguments, see :meth:`~sb3_acer.common.segment_algorithm.SegmentAlgorithm.learn`).

        Raises:
            RayNotInstalledError: Ray is not installed.
            ActorEnvError: an actor's env raised (the message names the actor and the env).
            ValueError: the actors' settings do not fit the model.
        """
        factory = self.env_factory(model)
        self.init_ray()
        total_timesteps, callback_obj = model.setup_learn(
            total_timesteps,
            callback,
            reset_num_timesteps=reset_num_timesteps,
            tb_log_name=tb_log_name,
            progress_bar=progress_bar,
        )
        pool = ActorPool(self, factory, model)
        stats = LearnerStats()
        monitor = None
        if self.monitor_file is not None:
            monitor = ResultsWriter(
                self.monitor_file, header={"t_start": time.time(), "env_id": factory.name}
            )
        try:
            pool.start()
            callback_obj.on_training_start(locals(), globals())
            _loop(model, self, pool, stats, callback_obj, total_timesteps, log_interval, monitor)
        finally:
            pool.close()
            self.stats = stats.totals(pool)
            if monitor is not None:
                monitor.close()
        callback_obj.on_training_end()


def _monitor_rows(monitor: ResultsWriter | None, start: float) -> Any:
    """The ``on_step`` of ``learn_from_segment`` that writes the episodes the actors finish to ``monitor``."""
    if monitor is None:
        return None

    def write(infos: list[dict[str, Any]]) -> None:
        for info in infos:
            episode = info.get("episode")
            if episode is not None:
                monitor.write_row(
                    {"r": episode["r"], "l": episode["l"], "t": round(time.perf_counter() - start, 6)}
                )

    return write


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
    on_step = _monitor_rows(monitor, stats.start)
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
        model.logger.record_mean("actors/policy_lag", float(lag))
        callback.update_locals({"iteration": iteration})
        segment, dones, infos = message.segment, message.dones, message.infos
        if not model.learn_from_segment(segment, dones, infos, callback, total_timesteps, on_step):
            break
        iteration += 1
        updates += 1
        if updates % actors.broadcast_interval == 0:
            pool.broadcast(updates)
        if log_interval and iteration % log_interval == 0:
            actors.stats = stats.record(model, pool)
            model.dump_logs(iteration)

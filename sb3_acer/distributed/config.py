"""The settings of actor-learner training (:class:`RayActors`, passed to ``learn``) and the env factory the
actors make their envs with."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv

from sb3_acer.common.checks.fields import (
    NON_NEGATIVE_INTEGER,
    POSITIVE_INTEGER,
    POSITIVE_SECONDS,
    Rule,
    check,
    is_number,
    or_none,
)
from sb3_acer.distributed.ray_support import (
    RAY_INSTALL,
    RayNotInstalledError,
    check_reachable,
    cluster_address,
    require_ray,
)

__all__ = ["EnvFactory", "RayActors"]


class EnvFactory:
    """Picklable ``factory(n_envs=..., seed=...) -> VecEnv`` from an env id, a Gymnasium ``EnvSpec`` or a
    callable of that signature.

    Args:
        env: a registered env id (made with SB3's ``make_vec_env``, ``Monitor``-wrapped), an ``EnvSpec``
            (made with ``gymnasium.make(spec)``, keeping its kwargs), or a callable
            ``env(n_envs=..., seed=...)`` returning a ``VecEnv`` (e.g. ``functools.partial`` of
            :func:`~sb3_acer.envs.make_atari_vec_env` and the game's id).
        env_kwargs: keyword arguments of ``gymnasium.make`` (env ids only).
    """

    def __init__(
        self,
        env: str | gym.envs.registration.EnvSpec | Callable[..., VecEnv],
        env_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if not (isinstance(env, str | gym.envs.registration.EnvSpec) or callable(env)):
            raise TypeError(f"RayActors: env must be an env id, an EnvSpec or a callable, got {env!r}")
        if env_kwargs and not isinstance(env, str):
            raise ValueError(
                "RayActors: env_kwargs apply to an env id only; give them to the factory instead"
            )
        self.env = env
        self.env_kwargs = dict(env_kwargs or {})

    @property
    def name(self) -> str:
        """The env as messages name it."""
        if isinstance(self.env, str):
            return self.env
        if isinstance(self.env, gym.envs.registration.EnvSpec):
            return self.env.id
        if isinstance(self.env, functools.partial) and self.env.args:  # partial(make_vec_env, "Pong...")
            first = self.env.args[0]
            return first if isinstance(first, str) else getattr(first, "__name__", repr(first))
        return getattr(self.env, "__name__", type(self.env).__name__)

    def __call__(self, n_envs: int, seed: int | None) -> VecEnv:
        if isinstance(self.env, str):
            return make_vec_env(self.env, n_envs=n_envs, seed=seed, env_kwargs=self.env_kwargs)
        if isinstance(self.env, gym.envs.registration.EnvSpec):
            return make_vec_env(functools.partial(gym.make, self.env), n_envs=n_envs, seed=seed)
        return self.env(n_envs=n_envs, seed=seed)


def _spec_of(env: VecEnv | None) -> gym.envs.registration.EnvSpec | None:
    """The ``EnvSpec`` of a ``DummyVecEnv``'s first env: its id, kwargs, time limit and the wrappers that
    ``gymnasium.make`` can make again (not ``Monitor``, which ``make_vec_env`` adds anyway); ``None`` if
    there is none."""
    if not isinstance(env, DummyVecEnv):
        return None
    spec = getattr(env.envs[0], "spec", None)
    if spec is None:
        return None
    recreatable = tuple(wrapper for wrapper in spec.additional_wrappers if wrapper.kwargs is not None)
    return dataclasses.replace(spec, additional_wrappers=recreatable)


#: The rules of :class:`RayActors`' settings, checked in this order.
_RULES = {
    "n_actors": POSITIVE_INTEGER,
    "broadcast_interval": POSITIVE_INTEGER,
    "torch_threads": POSITIVE_INTEGER,
    "max_policy_lag": NON_NEGATIVE_INTEGER,
    "max_restarts": NON_NEGATIVE_INTEGER,
    "envs_per_actor": or_none(POSITIVE_INTEGER),
    "num_cpus_per_actor": Rule(lambda value: is_number(value) and value >= 0, "must be >= 0"),
    "actor_timeout": POSITIVE_SECONDS,
    "start_timeout": POSITIVE_SECONDS,
    "address": or_none(Rule(lambda value: isinstance(value, str), ""), "must be a string or None"),
}


@dataclass
class RayActors:
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

    env: str | gym.envs.registration.EnvSpec | Callable[..., VecEnv] | None = None
    n_actors: int = 2
    envs_per_actor: int | None = None
    address: str | None = None
    max_policy_lag: int = 32
    broadcast_interval: int = 1
    max_restarts: int = 100
    num_cpus_per_actor: float = 1.0
    torch_threads: int = 1
    env_kwargs: dict[str, Any] | None = None
    monitor_file: str | None = None
    ray_init_kwargs: dict[str, Any] = field(default_factory=dict)
    actor_timeout: float = 120.0
    start_timeout: float = 300.0
    #: The last ``learn`` call's counters (``actors/...`` as logged), filled while it runs.
    stats: dict[str, float] = field(default_factory=dict, init=False, repr=False, compare=False)
    #: The live actors' Ray handles while ``learn`` runs (for monitoring and fault tests); empty after.
    handles: list[Any] = field(default_factory=list, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name, rule in _RULES.items():
            check(getattr(self, name), f"RayActors: {name}", rule)
        if self.address not in (None, "auto"):
            try:
                cluster_address(self.address)
            except ValueError as error:
                raise ValueError(f"RayActors: {error}") from None

    def env_factory(self, model: BaseAlgorithm) -> EnvFactory:
        """The factory the actors make their envs with, checked against ``model``.

        Raises:
            ValueError: ``envs_per_actor`` differs from the model's ``n_envs``, the model normalises with
                ``VecNormalize`` (not supported with actors), or ``env`` is ``None`` and cannot be found.
        """
        if self.envs_per_actor is not None and self.envs_per_actor != model.n_envs:
            raise ValueError(
                f"RayActors: envs_per_actor={self.envs_per_actor} but the model has n_envs={model.n_envs}: "
                "the replay memory is laid out per env, so build the model with envs_per_actor envs"
            )
        if model.get_vec_normalize_env() is not None:
            raise ValueError(
                "RayActors: VecNormalize is not supported with actors (its statistics are per process)"
            )
        if self.env is not None:
            return EnvFactory(self.env, self.env_kwargs)
        spec = _spec_of(model.get_env())
        if spec is None:
            raise ValueError(
                "RayActors: cannot tell how to make the actors' envs from the model's env; pass env= "
                "(an env id or a picklable callable env(n_envs=..., seed=...) -> VecEnv)"
            )
        return EnvFactory(spec)

    def init_ray(self) -> bool:
        """Start Ray (a local cluster with no ``address``) or join the cluster at ``address``, unless Ray is
        started in this process already; returns whether this call started it. A local cluster started
        here gets a watchdog (:mod:`sb3_acer.distributed.watchdog`) that stops it if this process dies.

        Raises:
            ConnectionError: nothing answers at ``address`` (or ``RAY_ADDRESS``) within seconds.
            RayNotInstalledError: Ray, or psutil (which the watchdog needs), is not installed.
        """
        ray = require_ray()
        if ray.is_initialized():
            return False
        check_reachable(self.address)
        # A local cluster without the dashboard (it starts more processes); a cluster joined keeps its own.
        kwargs: dict[str, Any] = {} if self.address else {"include_dashboard": False}
        kwargs.update(self.ray_init_kwargs)
        if self.address not in (None, "local"):  # joins a cluster: someone else's to stop
            ray.init(address=self.address, **kwargs)
            return True
        try:
            from sb3_acer.distributed import watchdog
        except ImportError as error:
            raise RayNotInstalledError(
                f"training with actors needs psutil, which is not installed: {RAY_INSTALL}"
            ) from error
        before = watchdog.child_pids()
        ray.init(address=self.address, **kwargs)
        started = watchdog.child_pids() - before  # a local cluster's processes (none: Ray joined one)
        if started:
            try:
                watchdog.start_watchdog(sorted(started))
            except BaseException:
                ray.shutdown()
                raise
        return True

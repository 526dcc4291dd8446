"""The settings of actor-learner training (:class:`ActorSettings`, which
:class:`~sb3_acer.distributed.RayActors` extends) and the env factory the actors make their envs with."""

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

__all__ = ["ActorSettings", "EnvFactory"]


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
class ActorSettings:
    """The settings of actor-learner training, checked on construction;
    :class:`~sb3_acer.distributed.RayActors` (the user-facing class, which documents them) adds the learn
    loop that uses them."""

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

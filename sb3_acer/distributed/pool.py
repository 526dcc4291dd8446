"""The learner's side of the actors: starting them, asking each for one segment at a time, broadcasting
weights (one ``ray.put`` per broadcast), and replacing an actor that died.

Each actor has at most one request in flight, so no more than ``n_actors`` segments wait for the learner.
An actor that dies (its process killed, its machine gone), while it starts or later, fails its request
with Ray's ``RayActorError``: the pool counts the segment as lost, starts a new actor in its place (with a
new seed, from the latest weights) and asks it again; the learner and its replay memory carry on. An
actor that does not answer within ``actor_timeout`` seconds (an env that hangs) is reported with a
``RuntimeWarning`` naming it and its env, killed and replaced the same way. An env that raises fails the
request with :class:`~sb3_acer.distributed.actors.ActorEnvError`, which stops training.
"""

from __future__ import annotations

import contextlib
import copy
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from sb3_acer.common.policies import ACERPolicy
from sb3_acer.distributed.actors import ActorEnvError, RolloutActor, SegmentMessage, Weights, actor_seed
from sb3_acer.distributed.ray_support import require_ray

if TYPE_CHECKING:
    from sb3_acer.common.segment_algorithm import SegmentAlgorithm
    from sb3_acer.distributed.config import ActorSettings, EnvFactory

__all__ = ["ActorPool", "weights_of", "writable"]


def weights_of(policy: ACERPolicy, version: int) -> Weights:
    """The policy's weights as NumPy arrays on the CPU, with their version."""
    return version, {name: tensor.detach().cpu().numpy() for name, tensor in policy.state_dict().items()}


def _env_error(error: Exception, index: int, env_name: str) -> ActorEnvError:
    """One clear :class:`ActorEnvError` from what a failed actor task raised (Ray wraps it in a
    ``RayTaskError`` with the remote traceback)."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, ActorEnvError):
        return ActorEnvError(str(cause.args[0]) if cause.args else str(cause))
    reason = f"{type(cause).__name__}: {cause}" if cause is not None else str(error).splitlines()[0]
    return ActorEnvError(f"actor {index} (env {env_name}): {reason}")


class ActorPool:
    """``settings.n_actors`` rollout actors for ``model``, their requests in flight and their faults.

    Args:
        settings: the actors' settings.
        factory: how the actors make their envs.
        model: the learner's model (its policy is copied to the actors, its spaces checked).
    """

    def __init__(self, settings: ActorSettings, factory: EnvFactory, model: SegmentAlgorithm) -> None:
        self.ray = require_ray()
        self.settings = settings
        self.factory = factory
        self.model = model
        self.remote_class = self.ray.remote(
            num_cpus=settings.num_cpus_per_actor, max_restarts=0, max_task_retries=0
        )(RolloutActor)
        policy = copy.deepcopy(model.policy).to("cpu")
        policy.set_training_mode(False)
        self.policy_ref = self.ray.put(policy)  # one copy in the object store for every actor (and restart)
        self.handles: list[Any] = []
        self.generations = [0] * settings.n_actors
        self.pending: dict[Any, int] = {}  # request -> actor index
        # request -> when its actor is taken for hung (time.monotonic) and the bound's name
        self.deadlines: dict[Any, tuple[float, str]] = {}
        self.fresh: set[int] = set()  # actors that have not answered yet (they start, then make their envs)
        self.weights_ref: Any = None
        self.version = 0
        self.restarts = 0
        self.lost_segments = 0
        self.collecting = False  # after start: a request lost is a segment lost

    def _new_actor(self, index: int) -> Any:
        model, settings = self.model, self.settings
        return self.remote_class.remote(
            index,
            self.factory,
            self.factory.name,
            model.n_envs,
            actor_seed(model.seed, index, self.generations[index]),
            self.policy_ref,
            model.n_steps,
            model.handle_timeout_termination,
            settings.torch_threads,
        )

    def start(self) -> None:
        """Start every actor, make its envs and check their spaces against the model's; an actor that dies
        or hangs meanwhile is replaced.

        Raises:
            ActorEnvError: an actor's envs could not be made or reset.
            ValueError: the cluster has fewer CPUs than the actors reserve (they would wait forever), or an
                actor's envs have other spaces than the model.
            RuntimeError: more than ``max_restarts`` actors were replaced in this ``learn`` call.
        """
        n_actors, per_actor = self.settings.n_actors, self.settings.num_cpus_per_actor
        needed = n_actors * per_actor
        cpus = float(self.ray.cluster_resources().get("CPU", 0.0))
        if needed > cpus:
            raise ValueError(
                f"{n_actors} actors of {per_actor:g} CPU need {needed:g} CPUs but the Ray cluster has "
                f"{cpus:g}: use fewer actors, a smaller num_cpus_per_actor, or a larger cluster"
            )
        self.handles = [self._new_actor(index) for index in range(self.settings.n_actors)]
        self.settings.handles = self.handles
        self.fresh = set(range(n_actors))
        for index in range(n_actors):
            self._ask_setup(index)
        while self.pending:
            request, index = self._ready(self._ask_setup)
            try:
                observation_space, action_space = self.ray.get(request)
            except self.ray.exceptions.RayActorError:
                self._replace(index, "died while it started")
                self._ask_setup(index)
                continue
            except self.ray.exceptions.RayTaskError as error:
                raise _env_error(error, index, self.factory.name) from None
            self._check_spaces(index, observation_space, action_space)
        self.collecting = True

    def _send(self, index: int, request: Any, setup: bool = False) -> None:
        """Wait for ``request`` to actor ``index`` for ``actor_timeout`` seconds (a segment), plus
        ``start_timeout`` while the actor has not answered yet (it starts and makes its envs first)."""
        settings, timeouts = self.settings, []
        if index in self.fresh:
            timeouts.append((settings.start_timeout, "start_timeout"))
        if not setup:
            timeouts.append((settings.actor_timeout, "actor_timeout"))
        seconds = sum(seconds for seconds, _ in timeouts)
        bound = f"{seconds:g} s ({' + '.join(name for _, name in timeouts)})"
        self.pending[request] = index
        self.deadlines[request] = (time.monotonic() + seconds, bound)

    def _ask_setup(self, index: int) -> None:
        """Ask actor ``index`` to make its envs."""
        self._send(index, self.handles[index].setup.remote(), setup=True)

    def _check_spaces(self, index: int, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        for what, theirs, ours in (
            ("observation", observation_space, self.model.observation_space),
            ("action", action_space, self.model.action_space),
        ):
            if theirs != ours:
                raise ValueError(
                    f"actor {index} (env {self.factory.name}): its {what} space {theirs} differs from the "
                    f"model's {ours}"
                )

    def broadcast(self, version: int) -> None:
        """Put the model's current weights in the object store (once for all actors) as ``version``."""
        self.weights_ref = self.ray.put(weights_of(self.model.policy, version))
        self.version = version

    def request(self, index: int) -> None:
        """Ask actor ``index`` for its next segment, with the latest broadcast weights."""
        self._send(index, self.handles[index].collect.remote(self.version, [self.weights_ref]))

    def request_all(self) -> None:
        for index in range(len(self.handles)):
            self.request(index)

    def next(self) -> tuple[SegmentMessage, float]:
        """The next segment any actor sends, and the seconds spent waiting for it. An actor that died or
        hung is replaced (its segment counted as lost) and asked again, until one arrives.

        Raises:
            ActorEnvError: an actor's env raised.
            RuntimeError: more than ``max_restarts`` actors were replaced in this ``learn`` call.
        """
        start = time.perf_counter()
        while True:
            request, index = self._ready(self.request)
            try:
                message = self.ray.get(request)
            except self.ray.exceptions.RayActorError:
                self._replace(index, "died")
                self.request(index)
                continue
            except self.ray.exceptions.RayTaskError as error:
                raise _env_error(error, index, self.factory.name) from None
            return message, time.perf_counter() - start

    def _ready(self, ask: Callable[[int], None]) -> tuple[Any, int]:
        """A request that is done and its actor's index. An actor that is past its request's deadline is
        reported, replaced and asked again with ``ask`` meanwhile."""
        while True:
            first = min(self.pending, key=lambda request: self.deadlines[request][0])
            left = max(self.deadlines[first][0] - time.monotonic(), 0.0)
            ready, _ = self.ray.wait(list(self.pending), num_returns=1, timeout=left)
            request = ready[0] if ready else first
            index = self.pending.pop(request)
            _, bound = self.deadlines.pop(request)
            if ready:
                self.fresh.discard(index)
                return request, index
            self._report_hung(index, bound)
            ask(index)

    def _report_hung(self, index: int, bound: str) -> None:
        """Actor ``index`` did not answer within ``bound``: warn, naming it and its env, and replace it."""
        what = f"did not answer within {bound}"
        warnings.warn(
            f"actor {index} (env {self.factory.name}) {what}; is its env hung? It is stopped and replaced",
            RuntimeWarning,
            stacklevel=3,
        )
        self._replace(index, what)

    def _replace(self, index: int, what: str) -> None:
        """Actor ``index`` died or hung (``what``): count its segment as lost, stop it and start another in
        its place (to be asked by the caller)."""
        self.lost_segments += self.collecting
        self.restarts += 1
        if self.restarts > self.settings.max_restarts:
            raise RuntimeError(
                f"actor {index} (env {self.factory.name}) {what}, and {self.restarts} actors were replaced "
                f"in this learn call (max_restarts={self.settings.max_restarts}); is a machine failing or "
                "out of memory, or an env hung?"
            )
        with contextlib.suppress(Exception):
            self.ray.kill(self.handles[index], no_restart=True)
        self.generations[index] += 1
        self.handles[index] = self._new_actor(index)
        self.fresh.add(index)

    def close(self) -> None:
        """Stop every actor (the requests in flight are dropped)."""
        for handle in self.handles:
            with contextlib.suppress(Exception):
                self.ray.kill(handle, no_restart=True)
        self.pending.clear()
        self.deadlines.clear()
        self.handles = []
        self.settings.handles = []


def writable(message: SegmentMessage) -> SegmentMessage:
    """``message`` with its segment's arrays copied out of the object store (they arrive read-only)."""
    segment = message.segment
    fields = {name: getattr(segment, name) for name in segment.__dataclass_fields__}
    for name, value in fields.items():
        if isinstance(value, np.ndarray):
            fields[name] = np.array(value)
        elif isinstance(value, tuple):
            fields[name] = tuple(np.array(part) for part in value)
    return message._replace(segment=type(segment)(**fields))

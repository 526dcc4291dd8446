"""The rollout actor: its own vectorised envs and a CPU copy of the policy, collecting whole segments.

:class:`RolloutActor` is a plain class that :mod:`sb3_acer.distributed.pool` turns into a Ray actor (so that
this module imports without Ray). Each :meth:`~RolloutActor.collect` runs the synchronous loop's
:func:`~sb3_acer.common.rollout.collect_segment` for ``n_steps`` steps with the weights it is given,
continuing the actor's running episodes (and a recurrent policy's LSTM state) from one segment to the next,
and returns a :class:`SegmentMessage`: the segment with its behaviour probabilities (and recurrent start
state), the weights version it was collected with, and each step's ``dones`` and infos for the learner's
bookkeeping. Whatever the env raises comes back as one :class:`ActorEnvError` naming the actor and the env.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm
from stable_baselines3.common.vec_env import VecEnv

from sb3_acer.common.checks.observations import check_env_step
from sb3_acer.common.observations import ObservationArrays
from sb3_acer.common.policies import ACERPolicy, LSTMState
from sb3_acer.common.rollout import StepRecord, collect_segment
from sb3_acer.common.type_aliases import Segment

__all__ = ["ActorEnvError", "RolloutActor", "SegmentMessage", "Weights", "actor_seed"]

#: What the learner broadcasts: ``(version, {name: float32 array})``, the policy's state dict as NumPy
#: arrays (they cross Ray's object store without a copy).
Weights = tuple[int, dict[str, np.ndarray]]


class ActorEnvError(RuntimeError):
    """An actor's environment failed (or returned bad data); the message names the actor and the env."""


class SegmentMessage(NamedTuple):
    """What an actor sends the learner for one segment.

    Attributes:
        segment: the segment, ``[T, E]`` with ``E`` the actor's envs.
        version: version of the weights the behaviour policy had.
        actor_index: which actor collected it.
        dones: ``[T, E]`` bool, the ``dones`` of each step.
        infos: the info dicts of each step (without ``terminal_observation``, which is in the segment).
        collect_seconds: time the actor spent collecting it.
    """

    segment: Segment
    version: int
    actor_index: int
    dones: np.ndarray
    infos: list[list[dict[str, Any]]]
    collect_seconds: float


def actor_seed(seed: int | None, index: int, generation: int) -> int | None:
    """The seed of actor ``index`` in its ``generation``-th start (0 first, then one more per restart), so
    that every actor and every restarted actor plays its own episodes."""
    if seed is None:
        return None
    return int(seed) + 10_007 * (index + 1) + 1_000_003 * generation


class RolloutActor:
    """A rollout actor (made a Ray actor by :class:`~sb3_acer.distributed.pool.ActorPool`).

    Args:
        index: the actor's number, named in its errors.
        env_fn: picklable ``env_fn(n_envs=..., seed=...)`` returning the actor's ``VecEnv``.
        env_name: the env as errors name it.
        n_envs: number of envs the actor steps together.
        seed: seed of the envs and of the action sampling (``None``: not seeded).
        policy: the policy, on the CPU (its weights are replaced by each broadcast).
        n_steps: segment length ``T``.
        handle_timeout_termination: as the model's (time-limit ends recorded as truncations).
        torch_threads: torch threads of this actor's process.
    """

    def __init__(
        self,
        index: int,
        env_fn: Callable[..., VecEnv],
        env_name: str,
        n_envs: int,
        seed: int | None,
        policy: ACERPolicy,
        n_steps: int,
        handle_timeout_termination: bool,
        torch_threads: int = 1,
    ) -> None:
        self.index = index
        self.env_fn = env_fn
        self.env_name = env_name
        self.n_envs = n_envs
        self.seed = seed
        self.policy = policy
        self.n_steps = n_steps
        self.handle_timeout_termination = handle_timeout_termination
        self.torch_threads = torch_threads
        self.env: VecEnv | None = None
        self.version = -1
        self.steps = 0
        self._last_obs: ObservationArrays | None = None
        self._last_starts: np.ndarray | None = None
        self._last_lstm_state: LSTMState | None = None

    def pid(self) -> int:
        """The actor's process id."""
        return os.getpid()

    def _error(self, error: BaseException) -> ActorEnvError:
        return ActorEnvError(
            f"actor {self.index} (env {self.env_name}): {type(error).__name__}: {error}".replace("\n", " ")
        )

    def setup(self) -> tuple[spaces.Space, spaces.Space]:
        """Make the envs (once) and reset them; returns their observation and action spaces.

        Raises:
            ActorEnvError: the envs could not be made or reset, or returned bad observations.
        """
        if self.env is None:
            th.set_num_threads(self.torch_threads)
            if self.seed is not None:
                th.manual_seed(self.seed)
            try:
                # Channel-first images, as the model's env got them (SB3 wraps it in VecTransposeImage):
                # exactly SB3's wrapping, which it offers only as this private static method.
                wrap_env = BaseAlgorithm._wrap_env  # noqa: SLF001
                env = wrap_env(
                    self.env_fn(n_envs=self.n_envs, seed=self.seed), verbose=0, monitor_wrapper=False
                )
                if env.num_envs != self.n_envs:
                    raise ValueError(f"the env factory made {env.num_envs} envs, not {self.n_envs}")
                reset_obs = env.reset()
                obs = reset_obs if isinstance(reset_obs, dict) else np.asarray(reset_obs)
                check_env_step(observations=obs, num_timesteps=0, what="reset")
            except Exception as error:
                raise self._error(error) from error
            self.env = env
            self._last_obs = obs
            self._last_starts = np.ones((self.n_envs,), dtype=bool)
        return self.env.observation_space, self.env.action_space

    def _load(self, version: int, box: list[Any]) -> None:
        """Load the weights of ``version`` from ``box[0]`` (an object reference) unless they are loaded."""
        if version == self.version:
            return
        import ray  # only ever called inside a Ray actor

        _, state = ray.get(box[0])
        self.policy.load_state_dict({name: th.tensor(value) for name, value in state.items()})
        self.version = version

    def collect(self, version: int, box: list[Any]) -> SegmentMessage:
        """Collect one segment with the weights of ``version`` (``box[0]`` refers to them).

        Raises:
            ActorEnvError: the env raised, or returned a non-finite observation or reward.
        """
        start = time.perf_counter()
        self.setup()
        self._load(version, box)
        assert self.env is not None and self._last_obs is not None and self._last_starts is not None
        dones: list[np.ndarray] = []
        infos: list[list[dict[str, Any]]] = []

        def on_step(record: StepRecord) -> bool:
            check_env_step(
                observations=record.new_obs,
                rewards=record.rewards,
                infos=record.infos,
                num_timesteps=self.steps,
            )
            self.steps += self.n_envs
            dones.append(np.asarray(record.dones, dtype=bool).copy())
            infos.append(
                [{k: v for k, v in info.items() if k != "terminal_observation"} for info in record.infos]
            )
            return True

        try:
            result = collect_segment(
                env=self.env,
                policy=self.policy,
                n_steps=self.n_steps,
                last_obs=self._last_obs,
                last_episode_starts=self._last_starts,
                on_step=on_step,
                last_lstm_state=self._last_lstm_state,
                handle_timeout_termination=self.handle_timeout_termination,
            )
        except Exception as error:
            raise self._error(error) from error
        assert result.segment is not None
        self._last_obs, self._last_starts = result.last_obs, result.last_episode_starts
        self._last_lstm_state = result.last_lstm_state
        return SegmentMessage(
            segment=result.segment,
            version=self.version,
            actor_index=self.index,
            dones=np.stack(dones),
            infos=infos,
            collect_seconds=time.perf_counter() - start,
        )

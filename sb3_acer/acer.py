"""ACER: Actor-Critic with Experience Replay (Wang et al. 2016) on Stable-Baselines3."""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import os
import pathlib
import platform
import sys
import time
import zipfile
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, TypeVar

import gymnasium as gym
import numpy as np
import stable_baselines3
import torch as th
from gymnasium import spaces
from stable_baselines3.common.base_class import BaseAlgorithm, maybe_make_env
from stable_baselines3.common.callbacks import BaseCallback, CallbackList, ProgressBarCallback
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike
from stable_baselines3.common.torch_layers import NatureCNN
from stable_baselines3.common.type_aliases import GymEnv, MaybeCallback
from stable_baselines3.common.utils import (
    check_for_correct_spaces,
    configure_logger,
    safe_mean,
)
from stable_baselines3.common.vec_env import unwrap_vec_normalize

from sb3_acer.envs import frame_stack_size
from sb3_acer.optim import FastRMSpropTFLike, apply_gradients, clip_grad_norm, zero_gradients
from sb3_acer.policies import (
    ACERPolicy,
    CnnLnLstmPolicy,
    CnnLstmPolicy,
    CnnPolicy,
    LSTMState,
    MlpLnLstmPolicy,
    MlpLstmPolicy,
    MlpPolicy,
    RecurrentACERPolicy,
    q_only_parameters,
)
from sb3_acer.replay import ReplayBuffer, make_replay_buffer
from sb3_acer.rollout import RolloutResult, StepRecord, collect_segment
from sb3_acer.schedules import LR_SCHEDULES, schedule_multiplier
from sb3_acer.segment import Segment
from sb3_acer.serialization.model_file import (
    FORMAT_NAME,
    FORMAT_VERSION,
    ModelFileError,
    decode_json_value,
    encode_json_value,
    read_model_file,
    space_from_json,
    space_to_json,
    write_model_file,
)
from sb3_acer.serialization.replay_file import (
    check_buffer_matches,
    load_buffer,
    read_embedded_buffer,
    save_buffer,
    write_buffer_entries,
)
from sb3_acer.serialization.rng_state import (
    generator_from_state,
    generator_state,
    global_rng_states,
    set_global_rng_states,
)
from sb3_acer.update import UpdateConfig, UpdateStats, compute_gradients
from sb3_acer.validation import check_env_step, check_observation

__all__ = ["ACER", "UnsupportedSpaceError"]

SelfACER = TypeVar("SelfACER", bound="ACER")

#: ``policy_kwargs`` entries that configure the optimizer rather than the networks (as in SB3).
OPTIMIZER_KEYS = ("optimizer_class", "optimizer_kwargs")
#: Optimizers whose per-parameter state tensors (other than a scalar step) have their parameter's shape and
#: are finite: a loaded state is checked against that.
ELEMENTWISE_OPTIMIZERS = (
    FastRMSpropTFLike,
    RMSpropTFLike,
    th.optim.RMSprop,
    th.optim.Adam,
    th.optim.AdamW,
    th.optim.SGD,
    th.optim.Adagrad,
    th.optim.Adamax,
    th.optim.NAdam,
    th.optim.RAdam,
)
#: Most torch threads ``num_procs`` may ask for (``torch.set_num_threads(10**6)`` kills the process).
MAX_NUM_PROCS = 1024

#: Constructor arguments saved in the model file, in the documented order.
HYPERPARAMETERS = (
    "gamma",
    "n_steps",
    "num_procs",
    "q_coef",
    "ent_coef",
    "max_grad_norm",
    "learning_rate",
    "lr_schedule",
    "q_lr_ratio",
    "rprop_alpha",
    "rprop_epsilon",
    "buffer_size",
    "replay_ratio",
    "replay_start",
    "correction_term",
    "trust_region",
    "alpha",
    "delta",
    "handle_timeout_termination",
    "retrace_lambda",
    "stats_window_size",
    "verbose",
    "tensorboard_log",
    "seed",
)


class UnsupportedSpaceError(ValueError):
    """An action or observation space that ACER cannot handle."""


class LegacyCallback(BaseCallback):
    """SB2's callable callback ``(locals, globals) -> bool``; only an explicit ``False`` stops training."""

    def __init__(self, callback: Callable[[dict[str, Any], dict[str, Any]], Any], verbose: int = 0) -> None:
        super().__init__(verbose)
        self.callback = callback

    def _on_step(self) -> bool:
        return self.callback(self.locals, self.globals) is not False


def _check_hyperparameters(params: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first invalid hyperparameter (before anything is built)."""

    def fail(name: str, rule: str) -> None:
        raise ValueError(f"{name} {rule}, got {params[name]!r}")

    def is_number(value: Any) -> bool:
        return isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool)

    for name in ("n_steps", "buffer_size", "replay_start"):
        if not isinstance(params[name], int | np.integer) or isinstance(params[name], bool):
            fail(name, "must be an integer")
    for name in ("gamma", "q_coef", "ent_coef", "rprop_alpha", "rprop_epsilon", "replay_ratio"):
        if not is_number(params[name]) or not np.isfinite(params[name]):
            fail(name, "must be a finite number")
    for name in ("correction_term", "delta", "alpha"):
        if not is_number(params[name]):
            fail(name, "must be a number")
    for name in ("trust_region", "handle_timeout_termination"):
        if not isinstance(params[name], bool | np.bool_):
            fail(name, "must be True or False")
    if params["n_steps"] <= 0:
        fail("n_steps", "must be positive")
    if not 0.0 <= params["gamma"] <= 1.0:
        fail("gamma", "must be in [0, 1]")
    if params["replay_ratio"] < 0:
        fail("replay_ratio", "must be non-negative")
    if params["replay_ratio"] > 0:
        if params["buffer_size"] < params["n_steps"]:
            fail("buffer_size", f"must be at least n_steps ({params['n_steps']}) to hold one segment")
        if params["replay_start"] > params["buffer_size"]:
            fail(
                "replay_start",
                f"must not exceed buffer_size ({params['buffer_size']}) or replay never starts",
            )
    if params["replay_start"] < 0:
        fail("replay_start", "must be non-negative")
    if not params["correction_term"] > 0:
        fail("correction_term", "must be positive")
    if not params["delta"] > 0:
        fail("delta", "must be positive")
    if not 0.0 <= params["alpha"] < 1.0:
        fail("alpha", "must be in [0, 1)")
    if not is_number(params["retrace_lambda"]) or not 0.0 <= params["retrace_lambda"] <= 1.0:
        fail("retrace_lambda", "must be a number in [0, 1]")
    window = params["stats_window_size"]
    if not isinstance(window, int | np.integer) or isinstance(window, bool) or window <= 0:
        fail("stats_window_size", "must be a positive integer")
    if not 0.0 < params["rprop_alpha"] <= 1.0:
        fail("rprop_alpha", "must be in (0, 1]")
    if params["rprop_epsilon"] <= 0:
        fail("rprop_epsilon", "must be positive")
    if params["q_coef"] < 0 or params["ent_coef"] < 0:
        fail("q_coef" if params["q_coef"] < 0 else "ent_coef", "must be non-negative")
    max_grad_norm = params["max_grad_norm"]
    if max_grad_norm is not None and (not is_number(max_grad_norm) or not max_grad_norm > 0):
        fail("max_grad_norm", "must be a positive number or None (no clipping)")
    learning_rate = params["learning_rate"]
    if not callable(learning_rate) and (
        not is_number(learning_rate) or not np.isfinite(learning_rate) or not learning_rate > 0
    ):
        fail(
            "learning_rate", "must be a positive finite number or a schedule (callable of progress remaining)"
        )
    if params["lr_schedule"] not in LR_SCHEDULES:
        raise ValueError(
            f"unknown lr_schedule {params['lr_schedule']!r}; choose one of {sorted(LR_SCHEDULES)}"
        )
    q_lr_ratio = params["q_lr_ratio"]
    if not is_number(q_lr_ratio) or not np.isfinite(q_lr_ratio) or not q_lr_ratio > 0:
        fail("q_lr_ratio", "must be a positive number")
    num_procs = params["num_procs"]
    if num_procs is not None and (
        not isinstance(num_procs, int | np.integer) or not 0 < num_procs <= MAX_NUM_PROCS
    ):
        # torch.set_num_threads of a huge number kills the process (segmentation fault).
        fail("num_procs", f"must be a positive integer at most {MAX_NUM_PROCS}, or None")
    verbose = params.get("verbose", 0)  # only the constructor's settings have verbose and tensorboard_log
    if not isinstance(verbose, int | np.integer) or verbose < 0:
        fail("verbose", "must be a non-negative integer")
    tensorboard_log = params.get("tensorboard_log")
    if tensorboard_log is not None and not isinstance(tensorboard_log, str | os.PathLike):
        fail("tensorboard_log", "must be a folder path (str or os.PathLike) or None")
    check_seed(params.get("seed"))
    device = params.get("device", "auto")
    if not isinstance(device, th.device) and device != "auto":
        try:
            th.device(device)
        except (RuntimeError, TypeError, ValueError) as error:
            raise ValueError(f"device {device!r} is not a torch device: {error}") from None


def check_seed(seed: Any, name: str = "seed") -> None:
    """Raise ``ValueError`` unless ``seed`` is ``None`` or an integer numpy and torch both accept."""
    if seed is not None and (
        not isinstance(seed, int | np.integer) or isinstance(seed, bool) or not 0 <= seed <= 2**32 - 1
    ):
        raise ValueError(f"{name} must be an integer in [0, 2**32 - 1], got {seed!r}")


@contextlib.contextmanager
def _global_state_restored_on_error() -> Iterator[None]:
    """Put torch's thread count and the global random generators back if the block raises: a model that
    fails to build (a policy_kwargs the network refuses, an unusable device) changes nothing global."""
    threads, states = th.get_num_threads(), global_rng_states()
    try:
        yield
    except BaseException:
        th.set_num_threads(threads)
        set_global_rng_states(states)
        raise


class ACER(BaseAlgorithm):
    """Actor-Critic with Experience Replay (Wang et al. 2016, arXiv:1611.01224) for ``Discrete`` actions.

    Synchronous ("A2C-style") ACER as in openai/baselines and SB2: ``E`` environments step together; each
    fresh segment of ``n_steps`` x ``E`` transitions gives one on-policy update, followed by
    ``Poisson(replay_ratio)`` updates on segments replayed from memory once ``replay_start`` steps per env
    are stored. Each update uses Retrace targets, truncated importance sampling with bias correction and
    (optionally) the trust region around an average policy network.

    The arguments from ``policy`` to ``policy_kwargs`` are SB2's, in SB2's order, so an SB2 call binds
    the same way; sb3-acer's own (``q_lr_ratio``, ``handle_timeout_termination``, ``retrace_lambda``) and
    ``seed`` and ``device`` are keyword-only (SB2's next positional argument was ``full_tensorboard_log``).

    Args:
        policy: policy class or name (``"MlpPolicy"``, ``"CnnPolicy"``, or the recurrent ``"MlpLstmPolicy"``,
            ``"MlpLnLstmPolicy"``, ``"CnnLstmPolicy"``, ``"CnnLnLstmPolicy"``, whose LSTM state is carried
            across segments, stored with each segment and reset where an episode starts).
        env: environment, its registered id, or an SB3 ``VecEnv``.
        gamma: discount factor, in [0, 1].
        n_steps: steps per environment per update (a batch is ``n_steps * n_envs`` transitions).
        num_procs: number of torch threads (``torch.set_num_threads``), at most 1024; ``None`` leaves
            torch's setting.
        q_coef: weight of the critic (Q) loss.
        ent_coef: weight of the entropy bonus (a mean over states, inside the trust-region projection).
            Like ``delta`` it is in the units of the rewards, since the advantages it is weighed against
            scale with them; the default 0.01 is baselines' and SB2's Atari value (clipped rewards).
        max_grad_norm: global-norm gradient clipping threshold; ``None`` disables clipping.
        learning_rate: initial RMSProp learning rate, or an SB3 schedule (a callable of the progress
            remaining, from 1 to 0), in which case ``lr_schedule`` is not applied.
        lr_schedule: ``'linear'``, ``'constant'``, ``'double_linear_con'``, ``'middle_drop'`` or
            ``'double_middle_drop'``; progress is counted in env steps and clamped to [0, 1].
        rprop_alpha: RMSProp decay (of the default optimizer).
        rprop_epsilon: RMSProp epsilon (inside the square root, TensorFlow style; of the default optimizer).
        buffer_size: replay capacity in steps per environment (``buffer_size // n_steps`` segments).
        replay_ratio: mean of the Poisson number of replay updates per on-policy update; 0 disables replay.
        replay_start: steps per environment that must be stored before replay starts.
        correction_term: importance-weight truncation ``c``.
        trust_region: project the policy gradient onto the KL trust region around the average policy.
        alpha: decay of the average policy network, ``theta_avg <- alpha theta_avg + (1 - alpha) theta``.
        delta: trust-region bound on the linearised KL divergence. It is in the units of the rewards: with
            rewards scaled by ``s`` (``VecNormalize``, a reward wrapper) ``delta * s`` gives the same step;
            the default 1 is the paper's Atari value, with rewards clipped to [-1, 1].
        verbose: 0 silent, 1 training information, 2 debug.
        tensorboard_log: TensorBoard log folder (``None``: no TensorBoard).
        _init_setup_model: build the networks now (``False`` is used by ``load``).
        policy_kwargs: keyword arguments of the policy (``net_arch``, ``activation_fn``, ...), and, as in
            SB3, ``optimizer_class`` (a ``torch.optim.Optimizer`` subclass, e.g. ``torch.optim.Adam``,
            instead of SB2's RMSProp, for which ``rprop_alpha`` and ``rprop_epsilon`` then do not apply) with
            its ``optimizer_kwargs`` (everything but ``lr``, which follows ``learning_rate``).
        q_lr_ratio: step size of the critic's own parameters (the ``qf`` tower and the ``Q`` head) as a
            multiple of the current learning rate; shared layers take the policy's step. RMSProp moves each
            weight by about the step size whatever the gradient's size, so this, not ``q_coef``, sets how
            fast the critic follows its targets. 1 (the default) is SB2's single step size.
        handle_timeout_termination: bootstrap the return from the value of the last observation where an
            episode ends on a time limit (``info["TimeLimit.truncated"]``), as SB3's replay buffers do.
            ``False`` cuts the return there as at a termination (SB2's behaviour), which makes running out
            of time as bad as ending the episode with the rewards collected so far.
        retrace_lambda: ``lambda`` of Retrace(lambda): the trace coefficients of the ``Q_ret`` targets
            are ``lambda * min(1, rho)``. 1 (the default) is ACER's; smaller values shorten the traces,
            trading the variance of the targets for bias, as GAE's lambda does (0: one-step targets).
        stats_window_size: number of episodes the ``rollout/`` means average over (SB3's).
        seed: seed of Python, NumPy, torch, the environments and the replay sampling.
        device: ``'auto'``, ``'cpu'`` or ``'cuda'``.
    """

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {
        "MlpPolicy": MlpPolicy,
        "CnnPolicy": CnnPolicy,
        "MlpLstmPolicy": MlpLstmPolicy,
        "MlpLnLstmPolicy": MlpLnLstmPolicy,
        "CnnLstmPolicy": CnnLstmPolicy,
        "CnnLnLstmPolicy": CnnLnLstmPolicy,
    }
    policy: ACERPolicy | RecurrentACERPolicy

    def __init__(
        self,
        policy: str | type[ACERPolicy] | type[RecurrentACERPolicy],
        env: GymEnv | str | None,
        gamma: float = 0.99,
        n_steps: int = 20,
        num_procs: int | None = None,
        q_coef: float = 0.5,
        ent_coef: float = 0.01,
        max_grad_norm: float | None = 10,
        learning_rate: float | Callable[[float], float] = 7e-4,
        lr_schedule: str = "linear",
        rprop_alpha: float = 0.99,
        rprop_epsilon: float = 1e-5,
        buffer_size: int = 5000,
        replay_ratio: float = 4,
        replay_start: int = 1000,
        correction_term: float = 10.0,
        trust_region: bool = True,
        alpha: float = 0.99,
        delta: float = 1,
        verbose: int = 0,
        tensorboard_log: str | None = None,
        _init_setup_model: bool = True,
        policy_kwargs: dict[str, Any] | None = None,
        *,
        q_lr_ratio: float = 1.0,
        handle_timeout_termination: bool = True,
        retrace_lambda: float = 1.0,
        stats_window_size: int = 100,
        seed: int | None = None,
        device: th.device | str = "auto",
    ) -> None:
        params = dict(locals())
        _check_hyperparameters(params)
        if isinstance(policy, str) and policy not in self.policy_aliases:
            raise ValueError(
                f"unknown policy {policy!r}; choose one of {sorted(self.policy_aliases)} or a class"
            )
        if not isinstance(policy, str) and not (
            isinstance(policy, type) and issubclass(policy, ACERPolicy | RecurrentACERPolicy)
        ):
            raise ValueError(
                "policy must be an ACERPolicy or RecurrentACERPolicy subclass or one of "
                f"{sorted(self.policy_aliases)}"
            )
        if policy_kwargs is not None:
            policy_class = self.policy_aliases[policy] if isinstance(policy, str) else policy
            _check_policy_kwargs(policy_class, policy_kwargs)
            _check_optimizer_kwargs(policy_kwargs)
        if env is None and _init_setup_model:
            raise ValueError(
                "ACER needs an environment to build its networks: pass env (an env id, a gymnasium Env or "
                "a VecEnv); ACER.load(path) reads a saved model without one"
            )
        if env is not None:
            # Refuse unsupported spaces before BaseAlgorithm wraps the env: its own checks are asserts
            # (e.g. on unbounded Box actions) or name another algorithm's policies (Dict observations).
            env = maybe_make_env(env, verbose)
            self._check_spaces(env.observation_space, env.action_space)
        # Nothing global changes unless the model is built: thread count and generators are put back.
        with _global_state_restored_on_error():
            if num_procs is not None:
                th.set_num_threads(int(num_procs))

            super().__init__(
                policy=policy,
                env=env,
                learning_rate=learning_rate,
                policy_kwargs=policy_kwargs,
                tensorboard_log=tensorboard_log,
                verbose=verbose,
                device=device,
                support_multi_env=True,
                seed=seed,
                stats_window_size=int(stats_window_size),
            )
            self.gamma = float(gamma)
            self.n_steps = int(n_steps)
            self.num_procs = num_procs
            self.q_coef = float(q_coef)
            self.ent_coef = float(ent_coef)
            self.max_grad_norm = None if max_grad_norm is None else float(max_grad_norm)
            self.lr_schedule_name = lr_schedule
            self.q_lr_ratio = float(q_lr_ratio)
            self.rprop_alpha = float(rprop_alpha)
            self.rprop_epsilon = float(rprop_epsilon)
            self.buffer_size = int(buffer_size)
            self.replay_ratio = float(replay_ratio)
            self.replay_start = int(replay_start)
            self.correction_term = float(correction_term)
            self.trust_region = bool(trust_region)
            self.alpha = float(alpha)
            self.delta = float(delta)
            self.handle_timeout_termination = bool(handle_timeout_termination)
            self.retrace_lambda = float(retrace_lambda)
            self.replay_buffer: ReplayBuffer | None = None
            self.n_skipped_updates = 0
            self._n_replay_updates = 0
            # Recurrent policies: the LSTM state (h, c) reached in the training envs, carried across segments.
            self._last_lstm_state: LSTMState | None = None
            self._replay_rng = np.random.default_rng(seed)

            if _init_setup_model:
                self._setup_model()

    # ------------------------------------------------------------------ set-up

    @classmethod
    def check_settings(
        cls, policy: str | type[ACERPolicy] | type[RecurrentACERPolicy], **kwargs: Any
    ) -> None:
        """Raise ``ValueError`` (or ``TypeError``) naming the first setting the constructor would refuse,
        without an environment and without building anything; torch's thread count is left as it is."""
        threads = th.get_num_threads()
        try:
            cls(policy, None, _init_setup_model=False, **kwargs)
        finally:
            th.set_num_threads(threads)

    @staticmethod
    def _check_spaces(observation_space: spaces.Space, action_space: spaces.Space) -> None:
        if not isinstance(action_space, spaces.Discrete):
            raise UnsupportedSpaceError(
                f"ACER supports only Discrete action spaces, got {action_space} "
                f"({type(action_space).__name__} actions are not supported)"
            )
        supported = (spaces.Box, spaces.Discrete, spaces.MultiDiscrete, spaces.MultiBinary)
        if not isinstance(observation_space, supported):
            raise UnsupportedSpaceError(
                "ACER supports Box, Discrete, MultiDiscrete and MultiBinary observations, "
                f"got {observation_space}"
            )
        # SB3's preprocessing flattens a Box of at least one axis and a one-dimensional MultiDiscrete; these
        # others would fail deep inside learn() or with a NumPy message.
        if isinstance(observation_space, spaces.Box) and observation_space.shape == ():
            raise UnsupportedSpaceError(
                f"ACER does not support Box observations of shape () (a scalar), got {observation_space}; "
                "give them shape (1,) with a wrapper"
            )
        nvec_shape = np.shape(getattr(observation_space, "nvec", ()))
        if isinstance(observation_space, spaces.MultiDiscrete) and len(nvec_shape) != 1:
            raise UnsupportedSpaceError(
                f"ACER supports MultiDiscrete observations of one dimension, got nvec of shape {nvec_shape}: "
                f"{observation_space}; flatten them with a wrapper"
            )
        # Actions are sampled as 0 .. n-1 and observations one-hot encoded from 0 (as in SB3): a space
        # with another start would silently get wrong actions or fail deep inside the network.
        for kind, space in (("action", action_space), ("observation", observation_space)):
            if isinstance(space, spaces.Discrete | spaces.MultiDiscrete) and np.any(space.start != 0):
                raise UnsupportedSpaceError(
                    f"ACER needs {type(space).__name__} {kind} spaces that start at 0, got {space} "
                    f"(start={space.start}); shift the {kind}s with a wrapper"
                )

    @property  # type: ignore[override]
    def lr_schedule(self) -> str:
        """The name of the learning-rate schedule (the constructor argument)."""
        return self.lr_schedule_name

    @lr_schedule.setter
    def lr_schedule(self, value: Any) -> None:
        # BaseAlgorithm assigns a callable here in _setup_lr_schedule; ACER computes its own schedule.
        if isinstance(value, str):
            self.lr_schedule_name = value

    def current_learning_rate(self) -> float:
        """Learning rate at the current training progress."""
        if callable(self.learning_rate):
            return float(self.learning_rate(self._current_progress_remaining))
        return float(self.learning_rate) * schedule_multiplier(
            self.lr_schedule_name, 1.0 - self._current_progress_remaining
        )

    def _check_policy_takes(self, observation_space: spaces.Space) -> None:
        """Raise :class:`UnsupportedSpaceError` if a policy on SB3's ``NatureCNN`` (the Cnn policies, as
        their signatures and ``policy_kwargs`` say) does not get images it can take. Called before building
        ACER's own Cnn policies, and for any other policy only once it failed to build, so that a subclass
        that builds is never second-guessed."""
        extractor = self.policy_kwargs.get("features_extractor_class")
        for klass in self.policy_class.__mro__ if extractor is None else ():
            init = klass.__dict__.get("__init__")
            parameter = inspect.signature(init).parameters.get("features_extractor_class") if init else None
            if parameter is not None:  # the default of the nearest class that names it
                extractor = parameter.default
                break
        if not (isinstance(extractor, type) and issubclass(extractor, NatureCNN)):
            return
        scaled = not self.policy_kwargs.get("normalize_images", True)
        name = getattr(self.policy_class, "__name__", "the policy")
        if not is_image_space(observation_space, check_channels=False, normalized_image=scaled):
            raise UnsupportedSpaceError(
                f"{name} needs image observations: uint8 [H, W, C] or [C, H, W] with values 0 to 255, "
                "or float images already scaled, channel-first, with "
                f"policy_kwargs=dict(normalize_images=False); got {observation_space}; use an Mlp policy "
                "for other observations"
            )
        # NatureCNN takes a float image's first axis for its channels; one whose last side is its smallest,
        # (84, 84, 3) say, is channel-last (SB3's own guess, the smallest side, refuses (48, 40, 40)).
        height, width, last = observation_space.shape  # type: ignore[misc]
        if scaled and observation_space.dtype != np.uint8 and last < min(height, width):
            raise UnsupportedSpaceError(
                f"{name}: float images must be channel-first [C, H, W] (only uint8 images are transposed), "
                f"got {observation_space}; transpose them with a wrapper"
            )

    def _setup_model(self) -> None:
        self.set_random_seed(self.seed)
        network_kwargs = {
            key: value for key, value in self.policy_kwargs.items() if key not in OPTIMIZER_KEYS
        }
        if self.policy_class in (CnnPolicy, CnnLstmPolicy, CnnLnLstmPolicy):
            # Its signature and policy_kwargs say what it builds (a subclass may build something else).
            self._check_policy_takes(self.observation_space)
        try:
            self.policy = self.policy_class(  # type: ignore[assignment]
                self.observation_space, self.action_space, **network_kwargs
            )
        except (AssertionError, RuntimeError):
            # SB3's NatureCNN asserts, or the convolution fails over kernel sizes: say what it needs.
            self._check_policy_takes(self.observation_space)
            raise
        self.policy = self.policy.to(self.device)
        # .to() again re-packs an nn.LSTM's weights after the copy (cuDNN wants them in one block).
        self.policy_avg = copy.deepcopy(self.policy).to(self.device)
        self.policy_avg.requires_grad_(False)
        self.policy_avg.set_training_mode(False)
        self.optimizer = self._make_optimizer(split_q=self.q_lr_ratio != 1.0)
        self._make_replay_buffer()

    def _make_optimizer(self, split_q: bool) -> th.optim.Optimizer:
        """The optimizer over the policy's parameters: one parameter group, or with ``split_q`` two (the
        policy's and shared parameters, then the critic's own, :func:`q_only_parameters`), so that the
        critic can take ``q_lr_ratio`` times the step. A ratio of 1 keeps SB2's single group, which model
        files written before ``q_lr_ratio`` existed hold."""
        params: Any = self.policy.parameters()
        if split_q:
            params = [{"params": group} for group in self._parameter_groups(split_q=True)]
        optimizer_class = self.policy_kwargs.get("optimizer_class")
        if optimizer_class is None:
            return FastRMSpropTFLike(
                params, lr=self.current_learning_rate(), alpha=self.rprop_alpha, eps=self.rprop_epsilon
            )
        return optimizer_class(
            params,
            lr=self.current_learning_rate(),
            **(self.policy_kwargs.get("optimizer_kwargs") or {}),
        )

    def _parameter_groups(self, split_q: bool) -> list[list[th.nn.Parameter]]:
        """The policy's parameters as :meth:`_make_optimizer` groups them."""
        if not split_q:
            return [list(self.policy.parameters())]
        q_ids = {id(p) for p in q_only_parameters(self.policy)}
        return [
            [p for p in self.policy.parameters() if id(p) not in q_ids],
            [p for p in self.policy.parameters() if id(p) in q_ids],
        ]

    def _set_learning_rate(self, learning_rate: float) -> None:
        """Give every parameter group its step: the critic's own group (the second, if any) takes
        ``q_lr_ratio`` times ``learning_rate``."""
        for index, group in enumerate(self.optimizer.param_groups):
            group["lr"] = learning_rate * (self.q_lr_ratio if index == 1 else 1.0)

    def _load_optimizer_state(self, state: dict[str, Any]) -> None:
        """Load an optimizer state dict saved with one parameter group or with the critic's apart (another
        ``q_lr_ratio``): the per-parameter state moves to the same parameter in this model's grouping."""
        self._load_saved_optimizer_state(state)
        if self.policy_kwargs.get("optimizer_class") is None:
            # The model's rprop_alpha and rprop_epsilon (given to load, say) win over the saved settings.
            for group in self.optimizer.param_groups:
                group.update(alpha=self.rprop_alpha, eps=self.rprop_epsilon)

    def _load_saved_optimizer_state(self, state: dict[str, Any]) -> None:
        if len(state["param_groups"]) == len(self.optimizer.param_groups):
            self.optimizer.load_state_dict(state)
            return
        if len(state["param_groups"]) not in (1, 2):
            raise ValueError(
                f"optimizer: {len(state['param_groups'])} parameter groups saved; ACER's optimizer has 1 or 2"
            )
        saved = self._make_optimizer(split_q=len(state["param_groups"]) == 2)
        saved.load_state_dict(state)
        settings = {k: v for k, v in saved.param_groups[0].items() if k != "params"}
        for group in self.optimizer.param_groups:
            group.update(settings)
        self.optimizer.state.clear()  # as load_state_dict does: the saved state replaces the current one
        for group in saved.param_groups:
            for p in group["params"]:
                if p in saved.state:
                    self.optimizer.state[p] = saved.state[p]

    def _make_replay_buffer(self) -> None:
        if self.replay_ratio <= 0 or self.env is None:
            self.replay_buffer = None
            return
        # Frame stacks (Atari) store each frame once; everything else stores whole observations.
        self.replay_buffer = make_replay_buffer(
            n_stack=frame_stack_size(self.env),
            observation_space=self.observation_space,
            buffer_size=self.buffer_size,
            n_steps=self.n_steps,
            n_envs=self.n_envs,
            n_actions=int(self.action_space.n),  # type: ignore[attr-defined]
            seed=self.seed,
            state_size=self.policy.n_lstm if isinstance(self.policy, RecurrentACERPolicy) else 0,
        )

    def set_random_seed(self, seed: int | None = None) -> None:
        """Seed Python, NumPy, torch, the action space, the environments and the replay sampling."""
        if seed is None:
            return
        super().set_random_seed(seed)
        self._replay_rng = np.random.default_rng(seed)
        if self.replay_buffer is not None:
            self.replay_buffer.seed(seed)

    def _init_callback(self, callback: MaybeCallback, progress_bar: bool = False) -> BaseCallback:
        if isinstance(callback, list):
            callback = CallbackList(callback)
        if callback is None:
            callback = CallbackList([])
        elif not isinstance(callback, BaseCallback):
            callback = LegacyCallback(callback)
        if progress_bar:
            callback = CallbackList([callback, ProgressBarCallback()])
        callback.init_callback(self)
        return callback

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
            from collections import deque

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

    def _update_current_progress_remaining(self, num_timesteps: int, total_timesteps: int) -> None:
        fraction_done = float(num_timesteps) / float(max(total_timesteps, 1))
        self._current_progress_remaining = 1.0 - min(max(fraction_done, 0.0), 1.0)

    # ------------------------------------------------------------------ training

    def learn(  # type: ignore[override]
        self: SelfACER,
        total_timesteps: int,
        callback: MaybeCallback = None,
        seed: int | None = None,
        log_interval: int | None = 100,
        tb_log_name: str = "ACER",
        reset_num_timesteps: bool = True,
        progress_bar: bool = False,
    ) -> SelfACER:
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

        Returns:
            The trained model.
        """
        # A whole number written as a float (learn(1e5), the zoo's n_timesteps) counts, as in SB3.
        whole_float = isinstance(total_timesteps, float) and float(total_timesteps).is_integer()
        if (
            not (isinstance(total_timesteps, int | np.integer) or whole_float)
            or isinstance(total_timesteps, bool)
            or total_timesteps < 0
        ):
            raise ValueError(f"total_timesteps must be a non-negative integer, got {total_timesteps!r}")
        if self.env is None:
            raise ValueError(
                "this model has no environment; pass one to ACER.load(..., env=...) or set_env()"
            )
        if log_interval is not None and (
            not isinstance(log_interval, int | np.integer)
            or isinstance(log_interval, bool)
            or log_interval < 0
        ):
            raise ValueError(f"log_interval must be a non-negative integer or None, got {log_interval!r}")
        if not isinstance(tb_log_name, str):
            raise ValueError(f"tb_log_name must be a string, got {tb_log_name!r}")
        check_seed(seed)
        callbacks = callback if isinstance(callback, list) else [callback]
        if not all(c is None or isinstance(c, BaseCallback) or callable(c) for c in callbacks):
            raise TypeError(
                "callback must be an SB3 BaseCallback, a list of them, a callable (locals, globals) -> bool "
                f"(SB2's), or None; got {callback!r}"
            )
        self.set_random_seed(seed)
        if seed is not None:
            self._last_obs = None  # the environments start again from the seed (a reset, as in SB3)
            self._last_lstm_state = None
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
                self._dump_logs(iteration)
        callback_obj.on_training_end()
        return self

    def _collect(self, callback: BaseCallback) -> Segment | None:
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
            last_obs=self._last_obs,  # type: ignore[arg-type]
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

    def train(self, segment: Segment) -> None:
        """One on-policy update on ``segment``, then ``Poisson(replay_ratio)`` replayed updates."""
        learning_rate = self.current_learning_rate()
        self._set_learning_rate(learning_rate)
        self.logger.record("train/learning_rate", learning_rate)
        self._gradient_step(segment, on_policy=True)
        if self.replay_buffer is not None:
            self.replay_buffer.put(segment)
            if self.replay_buffer.has_at_least(self.replay_start):
                n_replay = int(self._replay_rng.poisson(self.replay_ratio))
                for _ in range(n_replay):
                    self._gradient_step(self.replay_buffer.sample(), on_policy=False)
        self.logger.record("train/n_updates", self._n_updates, exclude="tensorboard")
        self.logger.record("train/n_replay_updates", self._n_replay_updates, exclude="tensorboard")
        self.logger.record("train/n_skipped_updates", self.n_skipped_updates)

    def _gradient_step(self, segment: Segment, on_policy: bool) -> UpdateStats | None:
        if not self.policy.training:
            self.policy.set_training_mode(True)
        zero_gradients(self.optimizer)
        loss, stats = compute_gradients(
            policy=self.policy,
            avg_policy=self.policy_avg,
            segment=segment,
            config=self._update_config(),
            with_stats=on_policy,
        )
        parameters, avg_parameters = self._parameter_lists()
        max_norm = self.max_grad_norm if self.max_grad_norm is not None else float("inf")
        norm_grads = float(clip_grad_norm(parameters, max_norm))
        if not (th.isfinite(loss) and np.isfinite(norm_grads)):
            # Never write non-finite values into the weights: skip this update and count it.
            self.n_skipped_updates += 1
            zero_gradients(self.optimizer)
            return None
        apply_gradients(self.optimizer)
        # theta_avg <- alpha * theta_avg + (1 - alpha) * theta, in place (SB3's polyak_update, batched).
        with th.no_grad():
            th._foreach_lerp_(avg_parameters, parameters, 1.0 - self.alpha)  # type: ignore[arg-type]
        self._n_updates += 1
        if not on_policy:
            self._n_replay_updates += 1
        trust_region_keys = ("avg_norm_k", "avg_norm_g", "avg_norm_k_dot_g", "avg_norm_adj")
        for key, value in stats._asdict().items():
            if key in trust_region_keys and not self.trust_region:
                continue
            if not np.isfinite(value):  # e.g. explained variance of constant targets: not informative
                continue
            self.logger.record_mean(f"train/{key}", value)
        self.logger.record_mean("train/norm_grads", norm_grads)
        if on_policy:
            self.logger.record_mean("train/on_policy_rho_mean", stats.rho_mean)
        return stats

    def _parameter_lists(self) -> tuple[list[th.nn.Parameter], list[th.nn.Parameter]]:
        """The policy's and the average network's parameters, in matching order (cached per module pair)."""
        key = (id(self.policy), id(self.policy_avg))
        cache = getattr(self, "_parameter_cache", None)
        if cache is None or cache[0] != key:
            params, avg_params = list(self.policy.parameters()), list(self.policy_avg.parameters())
            if [p.shape for p in params] != [p.shape for p in avg_params]:
                raise RuntimeError("policy and average policy network have different parameters")
            cache = (key, params, avg_params)
            self._parameter_cache = cache
        return cache[1], cache[2]

    def _update_config(self) -> UpdateConfig:
        return UpdateConfig(
            gamma=self.gamma,
            q_coef=self.q_coef,
            ent_coef=self.ent_coef,
            correction_term=self.correction_term,
            trust_region=self.trust_region,
            delta=self.delta,
            retrace_lambda=self.retrace_lambda,
        )

    @property
    def stats_window_size(self) -> int:
        """Number of episodes the ``rollout/`` means average over (SB3's ``stats_window_size``)."""
        return self._stats_window_size

    def _dump_logs(self, iteration: int) -> None:
        time_elapsed = max((time.time_ns() - self.start_time) / 1e9, sys.float_info.epsilon)
        fps = int((self.num_timesteps - self._num_timesteps_at_start) / time_elapsed)
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

    # ------------------------------------------------------------------ inference

    def predict(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        episode_start: np.ndarray | None = None,
        deterministic: bool = False,
        mask: np.ndarray | None = None,
    ) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
        """Action(s) for one observation or a batch (SB3's signature; SB2's ``mask`` is an alias).

        Returns:
            The action(s) and the next recurrent state (``None`` for feed-forward policies).
        """
        if mask is not None and episode_start is None:
            episode_start = mask
        self._check_observation(observation)
        return self.policy.predict(observation, state, episode_start, deterministic)

    def _check_observation(self, observation: Any) -> None:
        check_observation(observation, self.observation_space)

    def action_probability(
        self,
        observation: np.ndarray,
        state: tuple[np.ndarray, ...] | None = None,
        mask: np.ndarray | None = None,
        actions: np.ndarray | None = None,
        logp: bool = False,
    ) -> np.ndarray:
        """The policy's action probabilities (SB2's method).

        Args:
            observation: one observation or a batch of ``n``.
            state: recurrent policies: the state ``(h, c)`` returned by ``predict`` (``None``: zeros);
                unused by feed-forward policies.
            mask: recurrent policies: ``[n]`` episode-start flags (the state of those observations is
                reset); unused by feed-forward policies.
            actions: if given, the action(s) whose probability to return, one per observation.
            logp: return log-probabilities instead of probabilities.

        Returns:
            ``[n, A]`` probabilities (``[A]`` for a single observation); with ``actions``, ``[n, 1]``
            (``[1]`` for a single observation).
        """
        self._check_observation(observation)
        self.policy.set_training_mode(False)  # as predict does: dropout and the like off
        if isinstance(self.policy, RecurrentACERPolicy):
            inputs, vectorized, lstm_state, starts = self.policy.prepare_inputs(observation, state, mask)
            with th.no_grad():
                probs = self.policy.action_probs(inputs, lstm_state, starts)[0].cpu().numpy()
        else:
            obs_tensor, vectorized = self.policy.obs_to_tensor(observation)
            with th.no_grad():
                probs = self.policy.action_probs(obs_tensor).cpu().numpy()
        if actions is None:
            result = np.log(probs) if logp else probs
            return result if vectorized else result[0]
        actions_array = np.asarray(actions).reshape(-1)
        if actions_array.shape[0] != probs.shape[0]:
            raise ValueError(f"got {actions_array.shape[0]} actions for {probs.shape[0]} observation(s)")
        n_actions = probs.shape[1]
        if not np.issubdtype(actions_array.dtype, np.integer) or (
            (actions_array < 0).any() or (actions_array >= n_actions).any()
        ):
            raise ValueError(f"actions must be integers in [0, {n_actions}), got {actions_array}")
        chosen = probs[np.arange(len(actions_array)), actions_array].reshape(-1, 1)
        if logp:
            chosen = np.log(chosen)
        return chosen if vectorized else chosen.reshape(1)

    # ------------------------------------------------------------------ environment

    def set_env(self, env: GymEnv | str, force_reset: bool = True) -> None:
        """Use ``env`` (an environment, or an env id as the constructor takes) from now on; its spaces must
        match. A different number of envs is allowed.

        With a different number of environments the replay memory, which is laid out per environment, is
        started afresh.
        """
        if env is None:
            raise ValueError("set_env: env must be an environment or an env id, not None")
        if getattr(self, "observation_space", None) is None:
            raise ValueError(
                "set_env: this model was built without an environment and has no spaces to match; "
                "build it with ACER(policy, env)"
            )
        env = self._wrap_env(maybe_make_env(env, self.verbose), self.verbose)
        try:
            check_for_correct_spaces(env, self.observation_space, self.action_space)
        except ValueError as error:
            raise ValueError(
                f"set_env: the new environment's spaces differ from the model's: {error}"
            ) from error
        self._vec_normalize_env = unwrap_vec_normalize(env)
        n_envs_changed = env.num_envs != getattr(self, "n_envs", None)
        if force_reset or n_envs_changed:
            self._last_obs = None
            self._last_episode_starts = None
            self._last_lstm_state = None
        self.n_envs = env.num_envs
        self.env = env
        if hasattr(self, "policy") and (
            n_envs_changed or (self.replay_buffer is None and self.replay_ratio > 0)
        ):
            self._make_replay_buffer()

    # ------------------------------------------------------------------ parameters and files

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        return ["policy", "policy_avg", "optimizer"], []

    def get_parameters(self) -> dict[str, dict]:
        """Copies of the state dicts of ``policy``, ``policy_avg`` and ``optimizer``.

        They are copies (as SB2's arrays were), so that training afterwards does not change them and
        ``set_parameters`` can restore them.
        """
        return {
            name: copy.deepcopy(getattr(self, name).state_dict()) for name in self._get_torch_save_params()[0]
        }

    def set_parameters(  # type: ignore[override]
        self,
        load_path_or_dict: str | pathlib.Path | io.BufferedIOBase | dict[str, dict],
        exact_match: bool = True,
        device: th.device | str = "auto",
    ) -> None:
        """Load parameters from a model file or from a ``get_parameters()``-style dict.

        Everything is checked before anything is loaded: with ``exact_match=True`` every module's full
        state must be present (a missing or unexpected key raises ``RuntimeError``); with
        ``exact_match=False`` the given tensors are loaded and the rest is left as it is. Unknown module
        names and tensors of the wrong shape always raise, and leave the model unchanged.
        """
        del device
        if isinstance(load_path_or_dict, dict):
            params = load_path_or_dict
        else:
            _, params = read_model_file(load_path_or_dict, device=self.device)
        names = set(self._get_torch_save_params()[0])
        unknown = set(params) - names
        if unknown:
            raise ValueError(
                f"unknown parameter group(s) {sorted(unknown)}; expected some of {sorted(names)}"
            )
        if exact_match and set(params) != names:
            raise RuntimeError(f"missing parameter group(s) {sorted(names - set(params))} (exact_match=True)")
        for name, state in params.items():
            if name == "optimizer":
                self._check_optimizer_state(state)
                continue
            module: th.nn.Module = getattr(self, name)
            own = module.state_dict()
            weights = {key for key, _ in module.named_parameters()}  # buffers may be infinite (bounds)
            missing = set(own) - set(state)
            extra = set(state) - set(own)
            if extra:
                raise RuntimeError(f"{name}: unexpected key(s) {sorted(extra)}")
            if exact_match and missing:
                raise RuntimeError(f"{name}: missing key(s) {sorted(missing)} (exact_match=True)")
            for key, value in state.items():
                tensor = _as_tensor(value, f"{name}.{key}")
                if tuple(own[key].shape) != tuple(tensor.shape):
                    raise RuntimeError(
                        f"{name}.{key}: shape {tuple(tensor.shape)} != {tuple(own[key].shape)}"
                    )
                if key in weights:
                    _check_finite(tensor, f"{name}.{key}")
        backup = self.get_parameters()
        try:
            for name, state in params.items():
                if name == "optimizer":
                    self._load_optimizer_state(state)
                else:
                    getattr(self, name).load_state_dict(
                        {key: th.as_tensor(value) for key, value in state.items()}, strict=exact_match
                    )
        except Exception:
            # E.g. an optimizer state of another network: restore everything loaded so far.
            for name, state in backup.items():
                getattr(self, name).load_state_dict(state)
            raise

    def _check_optimizer_state(self, state: Any) -> None:
        """Raise ``ValueError`` unless ``state`` is a state dict of this model's kind of optimizer (torch's
        ``load_state_dict`` accepts another optimizer's, and the next step then fails)."""
        groups = state.get("param_groups") if isinstance(state, dict) else None
        if (
            not isinstance(groups, list)
            or not groups
            or not all(isinstance(group, dict) for group in groups)
            or not isinstance(state.get("state"), dict)
        ):
            raise ValueError("optimizer: not an optimizer state dict (with 'state' and 'param_groups')")
        if len(groups) not in (1, 2):
            raise ValueError(f"optimizer: {len(groups)} parameter groups saved; ACER's optimizer has 1 or 2")
        own = set(self.optimizer.param_groups[0]) - {"params"}
        unknown = sorted(set().union(*groups) - own - {"params"})
        if unknown:
            raise ValueError(
                f"optimizer: the saved state is an optimizer state with settings {unknown} unknown to this "
                f"model's {type(self.optimizer).__name__}: another optimizer's state cannot be loaded"
            )
        if not isinstance(self.optimizer, ELEMENTWISE_OPTIMIZERS):
            return  # e.g. Adafactor's factored statistics: another layout, not checked here
        # torch pairs the saved parameter ids in order with the parameters of the saved grouping (after its
        # check that the groups have the same sizes); a per-parameter tensor of these optimizers has its
        # parameter's shape, or the next step fails.
        saved_ids = [index for group in groups for index in group.get("params", [])]
        parameters = [p for group in self._parameter_groups(split_q=len(groups) == 2) for p in group]
        shapes = dict(zip(saved_ids, (tuple(p.shape) for p in parameters), strict=False))
        for index, entries in state["state"].items():
            if not isinstance(entries, dict):
                raise ValueError(f"optimizer: the state of parameter {index} is not a dict")
            for key, value in entries.items():
                if not isinstance(value, th.Tensor):
                    continue
                _check_finite(value, f"optimizer: state {index}.{key}")
                if value.dim() > 0 and index in shapes and tuple(value.shape) != shapes[index]:
                    raise ValueError(
                        f"optimizer: state {index}.{key} has shape {tuple(value.shape)}, its parameter "
                        f"{shapes[index]}"
                    )

    def _policy_class_name(self) -> str:
        for alias, cls in self.policy_aliases.items():
            if cls is self.policy_class:
                return alias
        return f"{self.policy_class.__module__}:{self.policy_class.__qualname__}"

    def _save_data(self) -> dict[str, Any]:
        import sb3_acer

        hyperparameters = {name: getattr(self, name) for name in HYPERPARAMETERS if name != "lr_schedule"}
        hyperparameters["lr_schedule"] = self.lr_schedule_name
        if callable(self.learning_rate):
            # A callable cannot be stored as data: store its current value as a constant rate (pass the
            # callable again to ACER.load(..., learning_rate=...) to keep scheduling). At the end of a
            # schedule that decays to 0 that value is 0, which is no learning rate: the initial one is
            # stored then, so that the file loads.
            current = self.current_learning_rate()
            hyperparameters["learning_rate"] = current if current > 0 else float(self.learning_rate(1.0))
            hyperparameters["lr_schedule"] = "constant"
        return {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "algorithm": "ACER",
            "versions": {
                "sb3_acer": sb3_acer.__version__,
                "stable_baselines3": stable_baselines3.__version__,
                "torch": th.__version__,
                "gymnasium": gym.__version__,
                "numpy": np.__version__,
                "python": platform.python_version(),
            },
            "policy_class": self._policy_class_name(),
            "policy_kwargs": encode_json_value(self.policy_kwargs, "policy_kwargs"),
            "hyperparameters": encode_json_value(hyperparameters, "hyperparameters"),
            "observation_space": space_to_json(self.observation_space),
            "action_space": space_to_json(self.action_space),
            "n_envs": int(self.n_envs),
            "num_timesteps": int(self.num_timesteps),
            "total_timesteps": int(self._total_timesteps),
            "progress_remaining": float(self._current_progress_remaining),
            "n_updates": int(self._n_updates),
            "n_replay_updates": int(self._n_replay_updates),
            "n_skipped_updates": int(self.n_skipped_updates),
            "rng_states": {**global_rng_states(), "replay": generator_state(self._replay_rng)},
        }

    def save(
        self,
        path: str | pathlib.Path | io.BufferedIOBase,
        exclude: Iterable[str] | None = None,
        include: Iterable[str] | None = None,
    ) -> None:
        """Save the model as data (JSON + tensors): hyperparameters, spaces, the policy, the average policy
        network, the optimizer state, the step counters, the schedule position and the random generators'
        states. ``.zip`` is appended to a path without suffix; a path is written atomically.

        Args:
            path: where to save (path or file-like).
            exclude: ignored (accepted for SB3 compatibility).
            include: ``["replay_buffer"]`` also stores the replay memory, which makes the file a complete
                checkpoint (see :meth:`save_replay_buffer`); other names are ignored.
        """
        del exclude
        extra = None
        if include is not None and "replay_buffer" in include and self.replay_buffer is not None:
            buffer = self.replay_buffer

            def extra(archive: zipfile.ZipFile) -> None:
                write_buffer_entries(archive, buffer)

        write_model_file(path, self._save_data(), self.get_parameters(), extra=extra)

    def save_replay_buffer(self, path: str | pathlib.Path | io.BufferedIOBase) -> None:
        """Save the replay memory as data (SB3's name): its arrays, write position and the per-env sampling
        generators. ``.pkl`` is appended to a path without suffix as SB3 does, but the file is a zip of JSON
        and ``.npy`` arrays, never a pickle; a path is written atomically.

        Raises:
            ValueError: if the model has no replay memory (``replay_ratio=0``, or no environment yet).
        """
        if self.replay_buffer is None:
            raise ValueError("this model has no replay buffer to save (replay_ratio=0 or no environment)")
        save_buffer(self.replay_buffer, path)

    def load_replay_buffer(
        self, path: str | pathlib.Path | io.BufferedIOBase, truncate_last_traj: bool = True
    ) -> None:
        """Load a replay memory saved by :meth:`save_replay_buffer` (or a checkpoint saved with
        ``save(path, include=["replay_buffer"])``), without unpickling anything. The buffer must fit this
        model: same ``n_steps``, number of envs, observation shape and dtype, actions and capacity;
        otherwise ``ValueError`` is raised and the model's own memory is kept.

        Args:
            path: replay buffer file (path or file-like).
            truncate_last_traj: accepted for SB3 compatibility; ACER stores whole segments, so there is
                no partial trajectory to truncate.
        """
        del truncate_last_traj
        if self.replay_ratio <= 0:
            raise ValueError("this model does not replay (replay_ratio=0): it has no use for a replay buffer")
        self._install_replay_buffer(load_buffer(path))

    def _install_replay_buffer(self, buffer: Any) -> None:
        """Install ``buffer`` as the replay memory if it fits this model; raise ``ValueError`` otherwise."""
        check_buffer_matches(
            buffer,
            n_steps=self.n_steps,
            n_envs=self.n_envs,
            obs_shape=tuple(self.observation_space.shape or ()),
            obs_dtype=np.dtype(self.observation_space.dtype or np.float32),
            n_actions=int(self.action_space.n),  # type: ignore[attr-defined]
            capacity=self.buffer_size // self.n_steps,
        )
        if self.replay_buffer is not None and getattr(buffer, "state_size", 0) != getattr(
            self.replay_buffer, "state_size", 0
        ):
            raise ValueError(
                f"the replay buffer holds LSTM states of size {getattr(buffer, 'state_size', 0)}, this "
                f"model's policy needs {getattr(self.replay_buffer, 'state_size', 0)}"
            )
        self.replay_buffer = buffer

    @classmethod
    def load(
        cls: type[SelfACER],
        path: str | pathlib.Path | io.BufferedIOBase,
        env: GymEnv | str | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfACER:
        """Load a model saved with :meth:`save` (nothing in the file is executed).

        Args:
            path: model file (path or file-like).
            env: environment (or env id) to continue training on (``None``: prediction only). Its spaces
                must match.
            device: device to load onto.
            custom_objects: values replacing saved entries, e.g. ``{"policy_class": MyPolicy}`` or
                ``{"learning_rate": 1e-4}`` (``policy`` is accepted for ``policy_class``).
            print_system_info: print the versions the file was saved with.
            force_reset: accepted for SB3 compatibility; the environment's state is not saved, so the
                first ``learn`` after loading always resets it.
            kwargs: hyperparameters to change (``policy_kwargs`` must equal the saved ones); SB2's
                ``policy=...`` is accepted too.

        The random generators (Python's, NumPy's and torch's global ones, and the replay sampling) are
        restored to their saved states, so that training continues the same random streams; with a
        ``seed`` given (``load(path, seed=1)``) they are seeded from it instead, as a new model's are.
        A file saved with ``include=["replay_buffer"]`` restores the replay memory too; it must fit the
        model (same number of envs, ``n_steps`` and ``buffer_size``); ``custom_objects={"replay_buffer":
        None}`` starts with an empty memory instead. ``custom_objects={"policy_kwargs": ...}`` replaces the
        saved ``policy_kwargs`` without reading them (for classes this process cannot import).
        """
        del force_reset
        # A file that fails to load leaves the global generators and torch's thread count as they were
        # (building the model applies the saved num_procs and seed before the tensors are checked).
        with _global_state_restored_on_error():
            return cls._load(path, env, device, custom_objects, print_system_info, **kwargs)

    @classmethod
    def _load(
        cls: type[SelfACER],
        path: str | pathlib.Path | io.BufferedIOBase,
        env: GymEnv | str | None,
        device: th.device | str,
        custom_objects: dict[str, Any] | None,
        print_system_info: bool,
        **kwargs: Any,
    ) -> SelfACER:
        data, tensors = read_model_file(path, device="cpu")
        if print_system_info:
            print("Saved with:", data.get("versions"))
        custom_objects = dict(custom_objects or {})
        # custom_objects={"replay_buffer": None}: leave out the replay memory the file may hold.
        keep_buffer = custom_objects.pop("replay_buffer", True) is not None
        replay_buffer = read_embedded_buffer(path) if keep_buffer else None
        rng_states = data.get("rng_states")
        replay_rng = None
        if rng_states is not None:
            try:
                replay_rng = generator_from_state(rng_states.get("replay"))
            except (AttributeError, ValueError) as error:
                raise ModelFileError(
                    f"{path}: the saved random generator states are corrupt: {error}"
                ) from error
        # custom_objects={"policy_kwargs": ...} replaces the saved ones unread (as in SB3): their classes may
        # live in a script this process cannot import; the saved tensors must still fit the network.
        replaced_policy_kwargs = custom_objects.pop("policy_kwargs", None)
        try:
            hyperparameters = decode_json_value(data["hyperparameters"])
            saved_policy_kwargs = (
                replaced_policy_kwargs
                if replaced_policy_kwargs is not None
                else decode_json_value(data["policy_kwargs"])
            )
            observation_space = space_from_json(data["observation_space"])
            action_space = space_from_json(data["action_space"])
            try:  # what the constructor refuses, a file cannot bring in (an edited or foreign data.json)
                cls._check_spaces(observation_space, action_space)
            except UnsupportedSpaceError as error:
                raise ModelFileError(f"{path}: data.json holds spaces ACER cannot use: {error}") from None
            policy_name = data["policy_class"]
            if not isinstance(policy_name, str):
                raise ModelFileError(f"{path}: data.json's policy_class must be a name, not {policy_name!r}")
        except KeyError as error:
            raise ModelFileError(f"{path}: data.json lacks the entry {error}") from error
        except ModelFileError:
            raise
        except (ValueError, TypeError, AttributeError, IndexError) as error:
            raise ModelFileError(f"{path}: data.json is invalid: {error}") from error
        if not isinstance(hyperparameters, dict):
            raise ModelFileError(f"{path}: data.json's hyperparameters are not an object")
        unknown = sorted(set(hyperparameters) - set(HYPERPARAMETERS))
        if unknown:
            raise ModelFileError(f"{path}: data.json holds unknown hyperparameters {unknown}")
        given_policy_kwargs = kwargs.get("policy_kwargs")
        if (
            given_policy_kwargs is not None
            and decode_json_value(
                encode_json_value(given_policy_kwargs, "policy_kwargs")  # as saved: tuples become lists
            )
            != saved_policy_kwargs
        ):
            raise ValueError(
                f"the given policy_kwargs {kwargs['policy_kwargs']} differ from the saved ones "
                f"{saved_policy_kwargs}"
            )
        kwargs.pop("policy_kwargs", None)
        # SB2 passed the policy as ``load(path, policy=...)``; SB3 as custom_objects.
        policy_class: Any = next(
            (
                source.pop(key)
                for source in (custom_objects, kwargs)
                for key in ("policy_class", "policy")
                if key in source
            ),
            None,
        )
        policy_given = policy_class is not None
        if policy_class is None:
            policy_class = (
                cls.policy_aliases[policy_name]
                if policy_name in cls.policy_aliases
                else decode_json_value({"__class__": policy_name})
            )
        overrides = {**custom_objects, **kwargs}
        for key, value in overrides.items():
            if key not in HYPERPARAMETERS:
                raise ValueError(f"unknown hyperparameter {key!r} for ACER.load")
            hyperparameters[key] = value

        try:
            model = cls(
                policy=policy_class,
                env=None,
                device=device,
                policy_kwargs=saved_policy_kwargs or None,
                _init_setup_model=False,
                **hyperparameters,
            )
        except (ValueError, TypeError) as error:
            if overrides:  # the given values may be the cause: report the error as it is
                raise
            raise ModelFileError(f"{path}: the saved settings are invalid: {error}") from error
        model.observation_space = observation_space
        model.action_space = action_space
        n_envs = data.get("n_envs", 1)
        if not isinstance(n_envs, int) or isinstance(n_envs, bool) or n_envs <= 0:
            raise ModelFileError(f"{path}: data.json's n_envs must be a positive integer, not {n_envs!r}")
        model.n_envs = n_envs
        if env is not None:
            env = model._wrap_env(maybe_make_env(env, model.verbose), model.verbose)
            try:
                check_for_correct_spaces(env, observation_space, action_space)
            except ValueError as error:
                raise ValueError(
                    f"load: the environment's spaces differ from the saved model's: {error}"
                ) from error
            model.env = env
            model.n_envs = env.num_envs
            model._vec_normalize_env = unwrap_vec_normalize(env)
        try:
            model._setup_model()
        except (AssertionError, UnsupportedSpaceError) as error:  # e.g. NatureCNN needs images
            # The caller's policy, or the file's own (then the file contradicts itself).
            raise (ValueError if policy_given else ModelFileError)(
                f"load: the policy cannot be built for the saved observation space {observation_space}: "
                f"{error}"
            ) from None
        except (RuntimeError, MemoryError) as error:  # e.g. Discrete(10**12) actions: out of memory
            raise ModelFileError(
                f"{path}: the policy cannot be built from the saved settings: {' '.join(str(error).split())}"
            ) from None
        try:
            model.set_parameters(tensors, exact_match=True)
        except (RuntimeError, ValueError) as error:
            raise ModelFileError(f"{path}: the saved tensors do not fit the model: {error}") from error
        try:
            model.num_timesteps = int(data.get("num_timesteps", 0))
            model._total_timesteps = int(data.get("total_timesteps", 0))
            model._current_progress_remaining = float(data.get("progress_remaining", 1.0))
            model._n_updates = int(data.get("n_updates", 0))
            model._n_replay_updates = int(data.get("n_replay_updates", 0))
            model.n_skipped_updates = int(data.get("n_skipped_updates", 0))
        except (ValueError, TypeError) as error:
            raise ModelFileError(f"{path}: data.json holds an invalid counter: {error}") from error
        if replay_buffer is not None and model.replay_ratio > 0:
            try:
                model._install_replay_buffer(replay_buffer)
            except ValueError as error:
                raise ValueError(
                    f"load: {error}; pass custom_objects={{'replay_buffer': None}} to start with an "
                    "empty replay memory"
                ) from error
        if overrides.get("seed") is not None:
            # A seed given to load starts fresh streams from it rather than continuing the saved ones.
            model.set_random_seed(overrides["seed"])
        elif rng_states is not None:
            try:
                set_global_rng_states(rng_states)
            except ValueError as error:
                raise ModelFileError(f"{path}: {error}") from error
            model._replay_rng = replay_rng  # type: ignore[assignment]
        return model


def _as_tensor(value: Any, name: str) -> th.Tensor:
    """``value`` as a tensor (a model file's entries may hold other things torch can read safely)."""
    try:
        return th.as_tensor(value)
    except (TypeError, ValueError, RuntimeError):
        raise ValueError(f"{name}: not a tensor ({type(value).__name__})") from None


def _check_finite(tensor: th.Tensor, name: str) -> None:
    """Raise ``ValueError`` if the floating ``tensor`` holds NaN or inf (a policy that cannot act)."""
    if tensor.is_floating_point() and not bool(th.isfinite(tensor).all()):
        raise ValueError(f"{name}: holds non-finite values (NaN or inf)")


def _keyword_check(cls: type, given: dict[str, Any], positional: set[str]) -> tuple[set[str], set[str]]:
    """The keywords of ``given`` that ``cls.__init__`` does not take, and those it takes (less
    ``positional``); no unknown ones if it takes ``**kwargs``."""
    parameters = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
    accepted = set(parameters) - {"self"} - positional
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return set(), accepted
    return set(given) - accepted, accepted


def _check_policy_kwargs(policy_class: type, policy_kwargs: dict[str, Any]) -> None:
    if not isinstance(policy_kwargs, dict):
        raise ValueError(f"policy_kwargs must be a dict, got {type(policy_kwargs).__name__}")
    network_kwargs = {key: value for key, value in policy_kwargs.items() if key not in OPTIMIZER_KEYS}
    unknown, accepted = _keyword_check(policy_class, network_kwargs, {"observation_space", "action_space"})
    if unknown:
        accepted |= set(OPTIMIZER_KEYS)
        raise ValueError(f"Unknown keywords for policy: {sorted(unknown)}; accepted: {sorted(accepted)}")


def _check_optimizer_kwargs(policy_kwargs: dict[str, Any]) -> None:
    optimizer_class = policy_kwargs.get("optimizer_class")
    optimizer_kwargs = policy_kwargs.get("optimizer_kwargs")
    if optimizer_class is None:
        if optimizer_kwargs:
            raise ValueError(
                "policy_kwargs: optimizer_kwargs needs an optimizer_class; the default RMSProp takes "
                "rprop_alpha and rprop_epsilon"
            )
        return
    if not (isinstance(optimizer_class, type) and issubclass(optimizer_class, th.optim.Optimizer)):
        raise ValueError(
            "policy_kwargs: optimizer_class must be a torch.optim.Optimizer subclass, "
            f"got {optimizer_class!r}"
        )
    if optimizer_kwargs is None:
        return
    if not isinstance(optimizer_kwargs, dict):
        raise ValueError(
            f"policy_kwargs: optimizer_kwargs must be a dict, got {type(optimizer_kwargs).__name__}"
        )
    if "lr" in optimizer_kwargs:
        raise ValueError(
            "policy_kwargs: optimizer_kwargs must not set 'lr'; the step size is learning_rate "
            "(with lr_schedule)"
        )
    unknown, accepted = _keyword_check(optimizer_class, optimizer_kwargs, {"params", "lr"})
    if unknown:
        raise ValueError(
            f"policy_kwargs: unknown optimizer_kwargs {sorted(unknown)} for {optimizer_class.__name__}; "
            f"accepted: {sorted(accepted)}"
        )

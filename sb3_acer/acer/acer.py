"""ACER: Actor-Critic with Experience Replay (Wang et al. 2016) on Stable-Baselines3.

The algorithm class: construction, model set-up, the train step (one on-policy and ``Poisson(replay_ratio)``
replayed updates per segment), prediction, environments, and the file methods. The learn loop it runs in
is :class:`~sb3_acer.common.segment_algorithm.SegmentAlgorithm`'s; checks of settings and inputs live in
:mod:`sb3_acer.common.checks.settings`, the optimizer in :mod:`sb3_acer.common.optim`. Its state in files
is its own: it names what it saves (``saved_hyperparameters``, ``saved_counters``,
``_get_torch_save_params``) and restores what only it knows (the optimizer's grouping, the replay memory,
the replay sampling generator); ``save`` and ``load`` are
:class:`~sb3_acer.common.base_class.DataFileAlgorithm`'s.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import numpy as np
import torch as th
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.vec_env import unwrap_vec_normalize

from sb3_acer.acer.policies import (
    POLICY_ALIASES,
    POLICY_BASES,
    SDN_POLICY_ALIASES,
    policy_classes_for_kwargs,
    replay_action_settings,
)
from sb3_acer.common.buffers import ReplayBuffer, SegmentReplayBuffer, make_replay_buffer
from sb3_acer.common.buffers.base import check_memory
from sb3_acer.common.checks.fields import check, choice
from sb3_acer.common.checks.observations import check_observation
from sb3_acer.common.checks.settings import (
    OPTIMIZER_KEYS,
    UnsupportedSpaceError,
    check_hyperparameters,
    check_policy,
    check_policy_kwargs,
    check_policy_observations,
    check_policy_takes,
    supported_env,
)
from sb3_acer.common.observations import observation_layout
from sb3_acer.common.optim import (
    apply_gradients,
    clip_grad_norm,
    load_optimizer_state,
    make_optimizer,
    set_learning_rate,
    zero_gradients,
)
from sb3_acer.common.policies import (
    ACERPolicy,
    CnnLnLstmPolicy,
    CnnLstmPolicy,
    CnnPolicy,
    LSTMState,
    RecurrentACERPolicy,
)
from sb3_acer.common.save_util.model_io import PathOrFile, SavedModel, global_state_restored_on_error
from sb3_acer.common.save_util.replay_file import check_buffer_matches
from sb3_acer.common.save_util.rng_state import generator_state
from sb3_acer.common.schedules import LR_SCHEDULES, saved_schedule, scheduled_rate
from sb3_acer.common.segment_algorithm import SegmentAlgorithm
from sb3_acer.common.type_aliases import Segment
from sb3_acer.common.update import UpdateConfig, UpdateStats, compute_gradients
from sb3_acer.envs import frame_stack_size

__all__ = ["ACER", "UnsupportedSpaceError"]

SelfACER = TypeVar("SelfACER", bound="ACER")


class ACER(SegmentAlgorithm):
    """Actor-Critic with Experience Replay (Wang et al. 2016, arXiv:1611.01224) for ``Discrete``, ``Box``,
    ``MultiDiscrete`` and ``MultiBinary`` actions.

    Synchronous ("A2C-style") ACER as in openai/baselines and SB2: ``E`` environments step together; each
    fresh segment of ``n_steps`` x ``E`` transitions gives one on-policy update, followed by
    ``Poisson(replay_ratio)`` updates on segments replayed from memory once ``replay_start`` steps per env
    are stored. Each update uses Retrace targets, truncated importance sampling with bias correction and
    (optionally) the trust region around an average policy network.

    The arguments from ``policy`` to ``policy_kwargs`` are SB2's, in SB2's order, so an SB2 call binds
    the same way; sb3-acer's own (``q_lr_ratio``, ``handle_timeout_termination``, ``retrace_lambda``) and
    ``seed`` and ``device`` are keyword-only (SB2's next positional argument was ``full_tensorboard_log``).

    Args:
        policy: policy class or name (``"MlpPolicy"``, ``"CnnPolicy"``, ``"MultiInputPolicy"`` for ``Dict``
            observations, or the recurrent ``"MlpLstmPolicy"``, ``"MlpLnLstmPolicy"``, ``"CnnLstmPolicy"``,
            ``"CnnLnLstmPolicy"``, ``"MultiInputLstmPolicy"``, whose LSTM state is carried across segments,
            stored with each segment and reset where an episode starts). Each builds the network for the
            action space: for ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions a stochastic dueling
            network, whose keywords ``policy_kwargs`` takes, e.g. ``fixed_std=0.3`` for the paper's
            fixed sigma.
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

    policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = POLICY_ALIASES
    #: Every name taken: the listed ones and the stochastic-dueling classes' own (old code, model files).
    taken_policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {**POLICY_ALIASES, **SDN_POLICY_ALIASES}

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
        policy_class, env = self._checked_arguments(dict(locals()))
        # Nothing global changes unless the model is built: thread count and generators are put back.
        with global_state_restored_on_error():
            if num_procs is not None:
                th.set_num_threads(int(num_procs))
            super().__init__(
                policy=policy_class,
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
            self._last_lstm_state: LSTMState | None = None
            self._replay_rng = np.random.default_rng(seed)
            if _init_setup_model:
                self._setup_model()

    @classmethod
    def _checked_arguments(cls, arguments: dict[str, Any]) -> tuple[type[BasePolicy], GymEnv | None]:
        """Check the constructor's ``arguments`` before anything changes; returns the policy class and the
        environment (made from its id)."""
        check_hyperparameters(arguments)
        policy_kwargs = arguments["policy_kwargs"]
        policy_class = check_policy(
            arguments["policy"], cls.taken_policy_aliases, POLICY_BASES, list(cls.policy_aliases)
        )
        env = supported_env(arguments["env"], arguments["verbose"], needed=arguments["_init_setup_model"])
        # The keywords of the policy built for the env's actions (MlpPolicy is an SDN policy for Box ones).
        action_space = None if env is None else env.action_space
        check_policy_kwargs(policy_classes_for_kwargs(policy_class, action_space), policy_kwargs)
        if env is not None:
            check_policy_observations(policy_class, policy_kwargs, env.observation_space)
        return policy_class, env

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

    @property
    def lr_schedule(self) -> Callable[[float], float]:
        """SB3's learning-rate schedule: the rate at a progress remaining (1 at the start, 0 at the end).

        The constructor's ``lr_schedule`` (SB2's argument) names the schedule: ``lr_schedule_name``. Set a
        callable here to replace the schedule, as SB3 code does (``model.lr_schedule = lambda _: 0.0``: it
        becomes the callable ``learning_rate``), or a name to choose another of SB2's schedules.
        """
        return self._scheduled_rate

    @lr_schedule.setter
    def lr_schedule(self, value: Any) -> None:
        if isinstance(value, str):
            self.lr_schedule_name = check(value, "lr_schedule", choice(LR_SCHEDULES))
        elif callable(value):
            self.learning_rate = value
        else:
            raise TypeError(f"lr_schedule must be a schedule name or a callable of progress, got {value!r}")

    def _scheduled_rate(self, progress_remaining: float) -> float:
        return scheduled_rate(self.learning_rate, self.lr_schedule_name, progress_remaining)

    def current_learning_rate(self) -> float:
        """Learning rate at the current training progress."""
        return self._scheduled_rate(self._current_progress_remaining)

    # ------------------------------------------------------------------ set-up

    def _setup_model(self) -> None:
        self.set_random_seed(self.seed)
        network_kwargs = {
            key: value for key, value in self.policy_kwargs.items() if key not in OPTIMIZER_KEYS
        }
        if self.policy_class in (CnnPolicy, CnnLstmPolicy, CnnLnLstmPolicy):
            # Its signature and policy_kwargs say what it builds (a subclass may build something else).
            check_policy_takes(self.policy_class, self.policy_kwargs, self.observation_space)
        try:
            self.policy = self.policy_class(self.observation_space, self.action_space, **network_kwargs)  # type: ignore[assignment]
        except (AssertionError, RuntimeError):
            # SB3's NatureCNN asserts, or the convolution fails over kernel sizes: say what it needs.
            check_policy_takes(self.policy_class, self.policy_kwargs, self.observation_space)
            raise
        self.policy = self.policy.to(self.device)
        # .to() again re-packs an nn.LSTM's weights after the copy (cuDNN wants them in one block).
        self.policy_avg = copy.deepcopy(self.policy).to(self.device)
        self.policy_avg.requires_grad_(False)
        self.policy_avg.set_training_mode(False)
        self.optimizer = self._make_optimizer(split_q=self.q_lr_ratio != 1.0)
        self._make_replay_buffer()

    def _make_optimizer(self, split_q: bool) -> th.optim.Optimizer:
        """The optimizer over the policy's parameters, with the critic's own in a second group if
        ``split_q`` (see :func:`~sb3_acer.common.optim.make_optimizer`)."""
        return make_optimizer(
            self.policy,
            split_q=split_q,
            learning_rate=self.current_learning_rate(),
            policy_kwargs=self.policy_kwargs,
            rprop_alpha=self.rprop_alpha,
            rprop_epsilon=self.rprop_epsilon,
        )

    def _make_replay_buffer(self) -> None:
        if self.env is not None:  # the segment learn collects, refused if it can never fit in memory
            shape, dtype = observation_layout(self.observation_space)
            n_actions = replay_action_settings(self.policy, self.action_space)["n_actions"]
            check_memory(
                SegmentReplayBuffer.estimate_nbytes(1, self.n_steps, self.n_envs, shape, dtype, n_actions),
                f"n_steps={self.n_steps} x n_envs={self.n_envs} (one segment)",
            )
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
            **replay_action_settings(self.policy, self.action_space),
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

    # ------------------------------------------------------------------ training

    def train(self, segment: Segment) -> None:
        """One on-policy update on ``segment``, then ``Poisson(replay_ratio)`` replayed updates."""
        learning_rate = self.current_learning_rate()
        set_learning_rate(self.optimizer, learning_rate, self.q_lr_ratio)
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
        check_observation(observation, self.observation_space)
        return self.policy.predict(observation, state, episode_start, deterministic)

    def action_probability(
        self,
        observation: np.ndarray | dict[str, np.ndarray],
        state: tuple[np.ndarray, ...] | None = None,
        mask: np.ndarray | None = None,
        actions: np.ndarray | None = None,
        logp: bool = False,
    ) -> np.ndarray:
        """The policy's action probabilities (SB2's method).

        Args:
            observation: one observation or a batch of ``n`` (for ``Dict`` observations a dict of arrays).
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
        check_observation(observation, self.observation_space)
        self.policy.set_training_mode(False)  # as predict does: dropout and the like off
        return self.policy.action_probability(observation, actions, logp, state, mask)

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
        env = self._matching_env(env, "set_env: the new environment's spaces differ from the model's")
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

    # ------------------------------------------------------------------ its state in files

    saved_algorithm: ClassVar[str] = "ACER"
    #: Constructor arguments saved in the model file, in the documented order.
    # fmt: off
    saved_hyperparameters: ClassVar[tuple[str, ...]] = (
        "gamma", "n_steps", "num_procs", "q_coef", "ent_coef", "max_grad_norm", "learning_rate",
        "lr_schedule", "q_lr_ratio", "rprop_alpha", "rprop_epsilon", "buffer_size", "replay_ratio",
        "replay_start",
        "correction_term", "trust_region", "alpha", "delta", "handle_timeout_termination", "retrace_lambda",
        "stats_window_size", "verbose", "tensorboard_log", "seed",
    )
    # fmt: on
    saved_counters: ClassVar[tuple[tuple[str, str, int], ...]] = (
        *SegmentAlgorithm.saved_counters,
        ("n_replay_updates", "_n_replay_updates", 0),
        ("n_skipped_updates", "n_skipped_updates", 0),
    )

    def _get_torch_save_params(self) -> tuple[list[str], list[str]]:
        return ["policy", "policy_avg", "optimizer"], []

    def _get_hyperparameters(self) -> dict[str, Any]:
        hyperparameters = super()._get_hyperparameters()
        hyperparameters["learning_rate"], hyperparameters["lr_schedule"] = saved_schedule(
            self.learning_rate, self.lr_schedule_name, self.current_learning_rate()
        )
        return hyperparameters

    def _get_rng_states(self) -> dict[str, Any]:
        return {"replay": generator_state(self._replay_rng)}

    def _load_optimizer_state(self, name: str, state: dict[str, Any]) -> None:
        load_optimizer_state(self.optimizer, state, make_grouped=self._make_optimizer)
        if self.policy_kwargs.get("optimizer_class") is None:
            # The model's rprop_alpha and rprop_epsilon (given to load, say) win over the saved settings.
            for group in self.optimizer.param_groups:
                group.update(alpha=self.rprop_alpha, eps=self.rprop_epsilon)

    def _restore_rng(self, path: PathOrFile, saved: SavedModel, seed: int | None) -> None:
        super()._restore_rng(path, saved, seed)
        if seed is None and saved.rng_states is not None:
            self._replay_rng = saved.replay_rng  # type: ignore[assignment]

    def _install_replay_buffer(self, buffer: Any) -> None:
        """Install ``buffer`` as the replay memory if it fits the model.

        Raises:
            ValueError: if it does not fit (another layout, capacity or LSTM state size).
        """
        actions = replay_action_settings(self.policy, self.action_space)
        shape, dtype = observation_layout(self.observation_space)
        check_buffer_matches(
            buffer,
            n_steps=self.n_steps,
            n_envs=self.n_envs,
            obs_shape=shape,
            obs_dtype=dtype,
            n_actions=actions["n_actions"],
            action_size=actions.get("action_size", 0),
            capacity=self.buffer_size // self.n_steps,
            **({"action_dtype": np.dtype(actions["action_dtype"])} if "action_dtype" in actions else {}),
        )
        own_size = getattr(self.replay_buffer, "state_size", 0)
        if self.replay_buffer is not None and getattr(buffer, "state_size", 0) != own_size:
            raise ValueError(
                f"the replay buffer holds LSTM states of size {getattr(buffer, 'state_size', 0)}, this "
                f"model's policy needs {own_size}"
            )
        self.replay_buffer = buffer

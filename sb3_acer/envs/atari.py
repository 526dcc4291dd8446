"""Atari environments for ACER: SB3's wrappers, or ale-py's threaded C++ ``AtariVectorEnv`` as a ``VecEnv``.

Both samplers give the same agent-facing environment: ``NoFrameskip-v4`` games (frameskip 1 in the
emulator, no sticky actions, minimal action set) with DeepMind's preprocessing -- random no-ops on reset,
the action repeated 4 frames with a max over the last two, a lost life ends the agent's episode (the game
goes on), FIRE on reset, 84x84 grayscale (``INTER_AREA``), rewards clipped to their sign, and the last 4
frames stacked channel-first as ``uint8 [4, 84, 84]`` (frames before an episode start are zero, as
``VecFrameStack`` makes them). ``info["episode"]`` carries the true, unclipped full-game score and length
(all lives; the length in emulator frames, as ``Monitor`` under ``AtariWrapper`` counts it: about 4 per
agent step, plus the reset's), so ``evaluate_policy`` and the ``rollout/ep_rew_mean`` log report game
scores, and Monitor logs and plots read the same with either sampler.

``"wrappers"``: ``make_atari_env`` (``Monitor`` below ``AtariWrapper``) in a ``DummyVecEnv``, then
``VecFrameStack(4)`` and ``VecTransposeImage``; Python, one env after the other.

``"ale-vector"``: :class:`AtariVecEnv`, ale-py's ``AtariVectorEnv`` (emulation, frame skip, max-pool,
resize and stacking in C++ worker threads) with SB3's same-step auto-reset. The emulator runs with
``episodic_life=False`` (ale-py 0.12 would restart the whole game after every lost life) and
``reward_clipping=False``; the adapter ends the agent's episode on a lost life, zeros the frames that
precede it, clips the rewards and keeps the raw game score. What differs from the wrappers:

* reset: ale-py presses FIRE for one frame and then runs ``U{0..noop_max-1} - 1`` single-frame no-ops;
  SB3 runs ``U{1..noop_max}`` no-ops, then FIRE and action 2 for 4 frames each;
* after a lost life the game simply continues: no no-op/FIRE/action-2 sequence, so in games that wait for
  FIRE (Breakout) the agent presses FIRE itself; the new episode's first frame is the frame where the life
  was lost;
* the max over the last two frames is taken on grayscale frames (SB3: on RGB frames, then converted);
* ale-py counts its episode frame limit (``max_frames_per_episode``) from after its reset frames, SB3's
  ``TimeLimit`` from the first no-op;
* no rendering: the emulators hand back only the preprocessed frames, so ``render()`` and ``get_images()``
  give nothing and ``VecVideoRecorder`` refuses the env (``sb3-acer enjoy --video-folder`` uses the
  wrappers);
* no per-game Python env: ``get_attr`` and ``env_method`` answer what every game shares
  (:attr:`AtariVecEnv.GAME_ATTRIBUTES`, :attr:`AtariVecEnv.GAME_METHODS`) and refuse the rest with the
  reason, and ``set_attr`` refuses.

Given the same emulator state and actions the two produce identical 84x84 frames on Breakout and Space
Invaders and differ on 0.2 % of Pong's pixels (mean absolute difference 0.02 grey levels), with identical
rewards and game ends (``tests/envs/test_atari.py::test_preprocessing_matches_the_wrappers``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.monitor import Monitor, ResultsWriter
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecFrameStack, VecTransposeImage
from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices, VecEnvStepReturn

__all__ = ["SAMPLERS", "AtariVecEnv", "ale_game_name", "make_atari_vec_env"]

#: The two ways to run Atari games, the faster first (see ``benchmarks/atari_throughput.py``).
SAMPLERS = ("ale-vector", "wrappers")


def _register_ale_envs() -> None:
    try:
        import ale_py
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError(
            "Atari needs ale-py and OpenCV: pip install 'sb3-acer[atari]' "
            "(ale-py ships the ROMs, nothing is downloaded)"
        ) from error
    gym.register_envs(ale_py)


def ale_game_name(env_id: str) -> str:
    """The ROM name (``"breakout"``) of a ``NoFrameskip-v4`` environment id (``"BreakoutNoFrameskip-v4"``).

    Raises:
        ValueError: unless ``env_id`` is a registered ale-py environment with frameskip 1 and no sticky
            actions (the ``NoFrameskip-v4`` semantics that DeepMind's preprocessing assumes).
    """
    _register_ale_envs()
    try:
        spec = gym.spec(env_id)
    except gym.error.Error as error:
        raise ValueError(
            f"unknown Atari environment {env_id!r} (expected e.g. 'BreakoutNoFrameskip-v4')"
        ) from error
    kwargs = spec.kwargs
    if "game" not in kwargs or not str(spec.entry_point).startswith("ale_py"):
        raise ValueError(f"{env_id!r} is not an ale-py Atari environment")
    if kwargs.get("frameskip") != 1 or kwargs.get("repeat_action_probability", 0.0) != 0.0:
        raise ValueError(
            f"{env_id!r} has frameskip={kwargs.get('frameskip')} and repeat_action_probability="
            f"{kwargs.get('repeat_action_probability')}; use a NoFrameskip-v4 id (frameskip 1, no sticky "
            "actions), e.g. 'BreakoutNoFrameskip-v4', since the preprocessing skips frames itself"
        )
    return str(kwargs["game"])


class AtariVecEnv(VecEnv):
    """ale-py's C++ ``AtariVectorEnv`` as an SB3 ``VecEnv`` with DeepMind preprocessing (see the module doc).

    ``step`` resets a finished game in the same call (SB3's semantics): the returned observation is the
    new episode's first one and ``info["terminal_observation"]`` the last one. A lost life ends the agent's
    episode (``done``) without resetting the game; ``info["episode"] = {"r", "l", "t"}`` is reported only
    at the end of the game, with the unclipped score of all its lives and its length in emulator frames
    (reset frames included), as ``Monitor`` under ``AtariWrapper`` reports them. A game cut at
    ``max_frames_per_episode`` emulator frames sets ``info["TimeLimit.truncated"]``.

    Args:
        game: ROM name, e.g. ``"breakout"`` (see :func:`ale_game_name`).
        num_envs: number of games.
        n_stack: number of frames stacked in an observation.
        frame_skip: emulator frames per agent step (the action is repeated; max over the last two frames).
        screen_size: height and width of a frame.
        noop_max: at most this many no-op frames after a reset.
        terminal_on_life_loss: a lost life ends the agent's episode.
        clip_reward: the agent's reward is the sign of the game's reward.
        max_frames_per_episode: emulator frames after which a game is truncated.
        num_threads: emulator threads (0: one per core, at most ``num_envs``).
        monitor_dir: folder for a ``Monitor`` CSV file (``ale_vector.monitor.csv``, one row per game
            over of any emulator, with its full-game score) that SB3's ``load_results`` and
            ``sb3-acer plot`` read; ``None`` writes none.
    """

    def __init__(
        self,
        game: str,
        num_envs: int,
        *,
        n_stack: int = 4,
        frame_skip: int = 4,
        screen_size: int = 84,
        noop_max: int = 30,
        terminal_on_life_loss: bool = True,
        clip_reward: bool = True,
        max_frames_per_episode: int = 108_000,
        num_threads: int = 0,
        monitor_dir: str | None = None,
    ) -> None:
        try:
            from ale_py.vector_env import AtariVectorEnv
        except ImportError as error:  # pragma: no cover - depends on the installation
            raise ImportError(
                "the 'ale-vector' sampler needs ale-py>=0.10: pip install 'sb3-acer[atari]'"
            ) from error
        if num_envs <= 0 or n_stack <= 0:
            raise ValueError(f"num_envs and n_stack must be positive, got {num_envs} and {n_stack}")
        self._vector = AtariVectorEnv(
            game,
            num_envs,
            num_threads=num_threads,
            max_num_frames_per_episode=max_frames_per_episode,
            repeat_action_probability=0.0,
            full_action_space=False,
            autoreset_mode="SameStep",
            img_height=screen_size,
            img_width=screen_size,
            grayscale=True,
            stack_num=n_stack,
            frameskip=frame_skip,
            maxpool=True,
            noop_max=noop_max,
            episodic_life=False,
            life_loss_info=False,
            reward_clipping=False,
            use_fire_reset=True,
        )
        self.game = game
        self.n_stack = n_stack
        self.terminal_on_life_loss = terminal_on_life_loss
        self.clip_reward = clip_reward
        self.render_mode = None
        observation_space = spaces.Box(0, 255, (n_stack, screen_size, screen_size), dtype=np.uint8)
        action_space = spaces.Discrete(int(self._vector.single_action_space.n))  # type: ignore[attr-defined]
        super().__init__(num_envs, observation_space, action_space)
        self._actions = np.zeros(num_envs, dtype=np.int64)
        self._lives = np.zeros(num_envs, dtype=np.int64)
        # Agent steps since the current (agent) episode's first observation: frames older are zeroed.
        self._since_start = np.zeros(num_envs, dtype=np.int64)
        self._game_returns = np.zeros(num_envs, dtype=np.float64)
        # The emulator frame (ale-py's frame_number, counted since the ROM was loaded) at which each game
        # began: a game's length is counted in frames, reset no-ops included, as Monitor counts them.
        self._game_start_frames = np.zeros(num_envs, dtype=np.int64)
        self._start_time = time.time()
        self._needs_reset = True
        self._monitor: ResultsWriter | None = None
        if monitor_dir is not None:  # ResultsWriter creates the folder
            self._monitor = ResultsWriter(
                os.path.join(monitor_dir, "ale_vector"),
                header={"t_start": self._start_time, "env_id": game, "num_envs": num_envs},
            )

    def _mask(self, obs: np.ndarray, since_start: np.ndarray) -> np.ndarray:
        """Zero, in place, the frames of ``obs [n, n_stack, H, W]`` that precede each episode's start."""
        n_zero = np.maximum(self.n_stack - 1 - since_start, 0)
        for row in np.flatnonzero(n_zero):
            obs[row, : n_zero[row]] = 0
        return obs

    def reset(self) -> np.ndarray:
        seeds = None
        if any(seed is not None for seed in self._seeds):
            # -1 leaves that emulator's seed as it is; the emulators take 31-bit seeds (VecEnv.seed(None)
            # draws 32-bit ones).
            seeds = np.array(
                [-1 if seed is None else int(seed) % (2**31 - 1) for seed in self._seeds], dtype=np.int64
            )
        obs, info = self._vector.reset(seed=seeds)
        self._reset_seeds()
        self._reset_options()
        obs = np.array(obs, dtype=np.uint8, copy=True)
        self._lives = np.asarray(info["lives"], dtype=np.int64).copy()
        self._since_start[:] = 0
        self._game_returns[:] = 0.0
        self._game_start_frames = self._game_start(info)
        self.reset_infos = [{"lives": int(lives)} for lives in self._lives]
        self._needs_reset = False
        return self._mask(obs, self._since_start)

    def step_async(self, actions: np.ndarray) -> None:
        if self._needs_reset:
            raise RuntimeError("AtariVecEnv: call reset() before step()")
        self._actions = np.asarray(actions, dtype=np.int64).reshape(self.num_envs)
        self._vector.send(self._actions)

    def step_wait(self) -> VecEnvStepReturn:
        obs, raw_rewards, terminated, truncated, info = self._vector.recv()
        obs = np.array(obs, dtype=np.uint8, copy=True)
        raw = np.asarray(raw_rewards, dtype=np.float64)
        game_over = np.asarray(terminated, dtype=bool) | np.asarray(truncated, dtype=bool)
        lives = np.asarray(info["lives"], dtype=np.int64)
        # As EpisodicLifeEnv: 0 < lives < previous lives (a game over resets the lives in the same step).
        life_lost = ~game_over & (lives > 0) & (lives < self._lives)
        dones = game_over | life_lost if self.terminal_on_life_loss else game_over
        self._game_returns += raw
        # Where the game that runs after this step began: for a game over, the new game reset in this step.
        game_starts = self._game_start(info)
        self._since_start += 1
        rewards = (np.sign(raw) if self.clip_reward else raw).astype(np.float32)
        infos: list[dict[str, Any]] = [{"lives": int(n)} for n in lives]
        for env_idx in np.flatnonzero(dones):
            final = info["final_obs"][env_idx] if game_over[env_idx] else obs[env_idx]
            final = np.array(final, dtype=np.uint8, copy=True)[None]
            infos[env_idx]["terminal_observation"] = self._mask(
                final, self._since_start[env_idx : env_idx + 1]
            )[0]
            infos[env_idx]["TimeLimit.truncated"] = bool(truncated[env_idx] and not terminated[env_idx])
            if game_over[env_idx]:
                infos[env_idx]["episode"] = {
                    "r": float(self._game_returns[env_idx]),
                    "l": int(game_starts[env_idx] - self._game_start_frames[env_idx]),
                    "t": round(time.time() - self._start_time, 6),
                }
                if self._monitor is not None:
                    self._monitor.write_row(infos[env_idx]["episode"])
                self._game_returns[env_idx] = 0.0
                self._game_start_frames[env_idx] = game_starts[env_idx]
            self._since_start[env_idx] = 0
        self._lives = lives.copy()
        return self._mask(obs, self._since_start), rewards, dones, infos

    @staticmethod
    def _game_start(info: dict[str, Any]) -> np.ndarray:
        """The frame at which each emulator's current game began (its reset frames included)."""
        return np.asarray(info["frame_number"], dtype=np.int64) - np.asarray(
            info["episode_frame_number"], dtype=np.int64
        )

    def get_action_meanings(self) -> list[str]:
        """The meaning of each action, as ale-py's ``AtariEnv.get_action_meanings`` gives it."""
        from ale_py import Action, ALEInterface, LoggerMode, roms

        ALEInterface.setLoggerMode(LoggerMode.Error)
        ale = ALEInterface()
        rom = roms.get_rom_path(self.game)
        assert rom is not None, self.game  # the vector env loaded it
        ale.loadROM(rom)
        names = {action: name for name, action in Action.__members__.items()}
        return [names[action] for action in ale.getMinimalActionSet()]

    def close(self) -> None:
        self._vector.close()
        if self._monitor is not None:
            self._monitor.close()

    def _indices(self, indices: VecEnvIndices) -> Sequence[int]:
        if indices is None:
            return range(self.num_envs)
        if isinstance(indices, int):
            return [indices]
        return list(indices)

    #: What every game answers alike, through ``get_attr`` and ``env_method`` (SB3's per-env access).
    GAME_ATTRIBUTES = ("render_mode", "observation_space", "action_space", "metadata")
    GAME_METHODS = ("get_action_meanings",)

    def _no_game_env(self, what: str) -> AttributeError:
        return AttributeError(
            "AtariVecEnv runs the games in ale-py's C++ vector env, which has no per-game Python env: "
            f"{what}; use sampler='wrappers' (SB3's Atari wrappers) for per-game access"
        )

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        """Attributes every game shares (:attr:`GAME_ATTRIBUTES`), once per index."""
        if attr_name not in self.GAME_ATTRIBUTES:
            raise self._no_game_env(f"no per-game attribute {attr_name!r}")
        value = getattr(self, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise self._no_game_env(f"cannot set {attr_name!r} on a game")

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **method_kwargs: Any
    ) -> list[Any]:
        """Methods every game answers alike (:attr:`GAME_METHODS`), once per index."""
        if method_name not in self.GAME_METHODS:
            raise self._no_game_env(f"no per-game method {method_name!r}")
        result = getattr(self, method_name)(*method_args, **method_kwargs)
        return [result for _ in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class: type[gym.Wrapper], indices: VecEnvIndices = None) -> list[bool]:
        """``True`` for ``Monitor``: the adapter reports full-game ``info["episode"]`` as ``Monitor`` does."""
        return [wrapper_class is Monitor for _ in self._indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


def make_atari_vec_env(
    env_id: str,
    n_envs: int,
    seed: int | None = None,
    *,
    sampler: str = "ale-vector",
    n_stack: int = 4,
    monitor_dir: str | None = None,
    num_threads: int = 0,
) -> VecEnv:
    """``n_envs`` preprocessed Atari games with channel-first ``uint8 [n_stack, 84, 84]`` observations.

    Args:
        env_id: a ``NoFrameskip-v4`` id, e.g. ``"BreakoutNoFrameskip-v4"``.
        n_envs: number of games played side by side.
        seed: game ``i`` is seeded with ``seed + i``.
        sampler: ``"ale-vector"`` (:class:`AtariVecEnv`) or ``"wrappers"`` (SB3's ``make_atari_env``).
        n_stack: frames per observation.
        monitor_dir: folder for ``Monitor`` CSV files (one per game with ``"wrappers"``, one for all
            games with ``"ale-vector"``).
        num_threads: emulator threads of ``"ale-vector"`` (0: one per core).
    """
    game = ale_game_name(env_id)
    if sampler == "ale-vector":
        env: VecEnv = AtariVecEnv(
            game, n_envs, n_stack=n_stack, num_threads=num_threads, monitor_dir=monitor_dir
        )
        if seed is not None:
            env.seed(seed)
    elif sampler == "wrappers":
        env = make_atari_env(
            env_id, n_envs=n_envs, seed=seed, monitor_dir=monitor_dir, vec_env_cls=DummyVecEnv
        )
        env = VecTransposeImage(VecFrameStack(env, n_stack=n_stack))
    else:
        raise ValueError(f"unknown sampler {sampler!r}; choose one of {list(SAMPLERS)}")
    return env

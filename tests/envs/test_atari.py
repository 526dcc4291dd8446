"""Atari: frame-deduplicated replay, ale-py's vector env behind SB3's VecEnv, run_atari on a real ROM."""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import pathlib
import signal
import sys
import tempfile
import warnings
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from ale_py.vector_env import AtariVectorEnv
from gymnasium import spaces
from stable_baselines3.common.atari_wrappers import MaxAndSkipEnv, WarpFrame
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv, VecFrameStack, VecMonitor, VecTransposeImage

from sb3_acer import ACER
from sb3_acer.cli.run_atari import build_parser, main
from sb3_acer.common.buffers import FrameStackReplayBuffer, make_replay_buffer
from sb3_acer.common.buffers.segment_buffer import SegmentReplayBuffer
from sb3_acer.common.distributions import Categorical
from sb3_acer.common.policies.categorical import sample_actions
from sb3_acer.common.rollout import collect_segment
from sb3_acer.common.save_util.replay_file import load_buffer, save_buffer
from sb3_acer.common.type_aliases import Segment
from sb3_acer.envs import frame_stack_size
from sb3_acer.envs.atari import AtariVecEnv, ale_game_name, make_atari_vec_env
from tests.helpers.acer_envs import fill_the_disk_for, run_interrupted_while_torch_loads

FIELDS = [field.name for field in dataclasses.fields(Segment)]


def assert_segments_equal(actual: Segment, expected: Segment) -> None:
    for name in FIELDS:
        a, b = getattr(actual, name), getattr(expected, name)
        if name == "initial_state":  # (h, c) of recurrent policies, or None
            assert (a is None) == (b is None)
            if a is not None:
                assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
            continue
        assert a.dtype == b.dtype, name
        assert a.shape == b.shape, name
        assert np.array_equal(a, b), name


class UniformPolicy:
    """Stands in for an ACERPolicy in ``collect_segment``: uniform action probabilities."""

    device = th.device("cpu")

    def __init__(self, n_actions: int) -> None:
        self.n_actions = n_actions
        self.dist = Categorical(spaces.Discrete(n_actions))

    def set_training_mode(self, mode: bool) -> None:
        del mode

    def behaviour(self, obs: th.Tensor, state: None, starts: th.Tensor) -> tuple[th.Tensor, th.Tensor, None]:
        probs = th.full((obs.shape[0], self.n_actions), 1.0 / self.n_actions)
        return sample_actions(probs), probs, None


class NoiseFrameEnv(gym.Env):
    """Every frame is fresh noise (so every frame is distinguishable); episodes end at random, by
    termination or by truncation."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, frame_shape: tuple[int, int, int]) -> None:
        self.observation_space = spaces.Box(0, 255, frame_shape, dtype=np.uint8)
        self.action_space = spaces.Discrete(3)

    def _frame(self) -> np.ndarray:
        return self.np_random.integers(1, 256, size=self.observation_space.shape, dtype=np.uint8)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return self._frame(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        end = self.np_random.random()
        return self._frame(), float(action), bool(end < 0.12), bool(0.12 <= end < 0.17), {}


def collect(env: VecEnv, n_steps: int, state: dict[str, Any]) -> Segment:
    result = collect_segment(
        env=env,
        policy=UniformPolicy(int(env.action_space.n)),  # type: ignore[arg-type, attr-defined]
        n_steps=n_steps,
        last_obs=state["obs"],
        last_episode_starts=state["starts"],
        on_step=lambda record: True,
    )
    assert result.segment is not None
    state["obs"], state["starts"] = result.last_obs, result.last_episode_starts
    return result.segment


def check_buffers_agree(
    reference: SegmentReplayBuffer, frames: FrameStackReplayBuffer, rng: np.random.Generator
):
    n = reference.num_in_buffer
    assert frames.num_in_buffer == n and len(frames) == n
    choices = [np.full(reference.n_envs, slot) for slot in range(n)]
    choices += [rng.integers(n, size=reference.n_envs) for _ in range(4)]
    for slots in choices:
        assert_segments_equal(frames.get(slots), reference.get(slots))


def paired_buffers(
    env: VecEnv, n_steps: int, capacity: int, state_size: int = 0
) -> tuple[FrameStackReplayBuffer, SegmentReplayBuffer]:
    """The frame buffer make_replay_buffer picks for ``env``, and the whole-observation buffer beside it
    (same capacity and sampling seed), to compare every read."""
    n_envs = env.num_envs
    buffer = make_replay_buffer(
        n_stack=frame_stack_size(env),
        observation_space=env.observation_space,
        buffer_size=capacity * n_steps,
        n_steps=n_steps,
        n_envs=n_envs,
        n_actions=3,
        seed=1,
        state_size=state_size,
    )
    assert isinstance(buffer, FrameStackReplayBuffer)
    shape = env.observation_space.shape
    assert shape is not None
    reference = SegmentReplayBuffer(
        capacity * n_steps, n_steps, n_envs, shape, np.dtype(np.uint8), 3, seed=1, state_size=state_size
    )
    return buffer, reference


@pytest.mark.parametrize(("n_steps", "frame_shape", "state_size"), [(5, (20, 24, 1), 0), (2, (20, 24, 3), 3)])
def test_frame_buffer_returns_the_stacks_the_env_returned(
    n_steps: int, frame_shape: tuple[int, int, int], state_size: int
) -> None:
    """Segments from VecFrameStack + VecTransposeImage, with random episode ends (terminations and
    truncations), a reset, a segment left out (a rollout stopped by a callback) and ring wrap-around: the
    frame buffer's segments equal the whole-observation buffer's, and both sample the same slots. With
    T = 2 < n_stack - 1 a stack reaches back two segments; RGB frames have 3 channels each; recurrent
    segments carry their initial LSTM state."""
    n_envs, n_stack, capacity = 3, 4, 3
    env = VecTransposeImage(
        VecFrameStack(DummyVecEnv([lambda: NoiseFrameEnv(frame_shape)] * n_envs), n_stack=n_stack)
    )
    env.seed(0)
    obs_shape = env.observation_space.shape
    assert obs_shape == (n_stack * frame_shape[2], *frame_shape[:2])
    buffer, reference = paired_buffers(env, n_steps, capacity, state_size)
    rng = np.random.default_rng(0)
    state = {"obs": env.reset(), "starts": np.ones(n_envs, dtype=bool)}
    n_final = 0
    for iteration in range(12):
        if iteration == 5:
            collect(env, n_steps, state)  # collected but not stored: the stream breaks
        if iteration == 8:
            state = {"obs": env.reset(), "starts": np.ones(n_envs, dtype=bool)}
        segment = collect(env, n_steps, state)
        if state_size:
            h, c = rng.standard_normal((2, n_envs, state_size)).astype(np.float32)
            segment = dataclasses.replace(segment, initial_state=(h, c))
        n_final += len(segment.final_index)
        reference.put(segment)
        buffer.put(segment)
        check_buffers_agree(reference, buffer, rng)
        assert_segments_equal(buffer.sample(), reference.sample())
    assert n_final > 0  # truncations (with their final observations) were replayed too
    # Only the oldest slot and the breaks keep a whole x_0.
    assert len(buffer.heads) <= 2 * n_envs


def test_frame_buffer_stores_observations_that_are_not_frame_stacks_whole() -> None:
    rng = np.random.default_rng(0)
    buffer = FrameStackReplayBuffer(10, 5, 2, (4, 6, 6), n_stack=4, n_actions=3)
    segment = Segment(
        observations=rng.integers(0, 256, size=(6, 2, 4, 6, 6), dtype=np.uint8),
        actions=np.zeros((5, 2), dtype=np.int64),
        rewards=np.zeros((5, 2), dtype=np.float32),
        mu_probs=np.full((5, 2, 3), 1 / 3, dtype=np.float32),
        terminated=np.zeros((5, 2), dtype=bool),
        truncated=np.zeros((5, 2), dtype=bool),
        episode_starts=np.zeros((6, 2), dtype=bool),
        final_index=np.zeros((0, 2), dtype=np.int64),
        final_observations=np.zeros((0, 4, 6, 6), dtype=np.uint8),
    )
    with pytest.warns(
        UserWarning, match=r"observations of env\(s\) \[0, 1\] are not one frame stream .* stored whole"
    ):
        buffer.put(segment)
    assert_segments_equal(buffer.get(np.zeros(2, dtype=np.int64)), segment)


def _stepping_elsewhere(env: VecEnv, at: set[int]) -> Callable[[Any], bool]:
    """An ``on_step`` that steps ``env`` once more after the vector steps in ``at``, as an EvalCallback
    given the training env does: the next observation no longer continues the frame stream."""
    calls = [0]

    def on_step(record: Any) -> bool:
        del record
        if calls[0] in at:
            env.step(np.zeros(env.num_envs, dtype=np.int64))
        calls[0] += 1
        return True

    return on_step


def test_frame_buffer_keeps_segments_whose_frame_stream_breaks() -> None:
    """The training env stepped outside the rollout (evaluate_policy on model.get_env() between learns,
    an EvalCallback given the training env) breaks the frame stream at x_0 -> x_1 or inside a segment:
    those segments are kept whole, and every read (wrap-around included) equals the whole-observation
    buffer's."""
    n_envs, n_steps, capacity = 2, 4, 3
    env = VecTransposeImage(VecFrameStack(DummyVecEnv([lambda: NoiseFrameEnv((12, 10, 1))] * n_envs), 4))
    env.seed(0)
    buffer, reference = paired_buffers(env, n_steps, capacity)
    rng = np.random.default_rng(0)
    state = {"obs": env.reset(), "starts": np.ones(n_envs, dtype=bool)}
    broke = 0
    for iteration in range(9):
        on_step: Callable[[Any], bool] = lambda record: True  # noqa: E731
        if iteration in (2, 6):
            env.step(np.zeros(n_envs, dtype=np.int64))  # stepped between learns: x_0 is stale
        if iteration in (3, 4):
            on_step = _stepping_elsewhere(env, {1})  # stepped inside the rollout
        result = collect_segment(
            env=env,
            policy=UniformPolicy(3),  # type: ignore[arg-type]
            n_steps=n_steps,
            last_obs=state["obs"],
            last_episode_starts=state["starts"],
            on_step=on_step,
        )
        assert result.segment is not None
        state["obs"], state["starts"] = result.last_obs, result.last_episode_starts
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            buffer.put(result.segment)
        broke += any("not one frame stream" in str(w.message) for w in caught)
        reference.put(result.segment)
        check_buffers_agree(reference, buffer, rng)
    assert broke == 4
    saved = io.BytesIO()
    save_buffer(buffer, saved)
    saved.seek(0)
    check_buffers_agree(reference, load_buffer(saved), rng)  # the whole segments are saved too


def test_acer_trains_on_after_the_training_env_is_evaluated() -> None:
    env = VecFrameStack(VecMonitor(DummyVecEnv([lambda: NoiseFrameEnv((8, 8, 1))] * 2)), 4)
    model = ACER("MlpPolicy", env, n_steps=5, buffer_size=100, replay_start=10, seed=0)
    assert isinstance(model.replay_buffer, FrameStackReplayBuffer)
    model.learn(100)
    evaluate_policy(model, model.get_env(), n_eval_episodes=2)
    with pytest.warns(UserWarning, match="not one frame stream"):
        model.learn(100, reset_num_timesteps=False)
    assert model.num_timesteps == 200


@pytest.mark.parametrize(("frame_shape", "high"), [((8, 8, 3), 255), ((4, 8, 8), 1)])
def test_frames_stacked_along_the_last_axis_are_stored_whole(
    frame_shape: tuple[int, int, int], high: int
) -> None:
    """VecFrameStack stacks channel-last frames along the last axis; with no VecTransposeImage above it
    (a small RGB image SB3 takes for channel-first, a uint8 Box that is no image) the stacks are not
    along the first axis, which the frame buffer needs."""

    class Planes(NoiseFrameEnv):
        def __init__(self) -> None:
            super().__init__(frame_shape)
            self.observation_space = spaces.Box(0, high, frame_shape, dtype=np.uint8)

        def _frame(self) -> np.ndarray:
            return self.np_random.integers(1, high + 1, size=frame_shape, dtype=np.uint8)

    env = VecFrameStack(DummyVecEnv([Planes] * 2), n_stack=4)
    assert not env.stacked_obs.channels_first
    model = ACER("MlpPolicy", env, n_steps=5, buffer_size=50, replay_start=10, seed=0)
    assert type(model.replay_buffer) is SegmentReplayBuffer
    model.learn(100)
    first = VecFrameStack(DummyVecEnv([Planes] * 2), n_stack=4, channels_order="first")
    assert frame_stack_size(first) == 4  # stacked along the first axis: the frame buffer's layout
    if high == 255:  # VecTransposeImage takes images only
        assert frame_stack_size(VecTransposeImage(first, skip=True)) == 4
    assert frame_stack_size(env) is None


@pytest.mark.parametrize("sampler", ["ale-vector", "wrappers"])
def test_frame_buffer_on_a_real_game(sampler: str) -> None:
    # The uniform policy samples with torch's global generator: seed it so that the game (and the lives it
    # loses inside the segments) does not depend on which tests ran before (conftest restores the state).
    th.manual_seed(0)
    env = make_atari_vec_env("BreakoutNoFrameskip-v4", 2, seed=3, sampler=sampler)
    try:
        buffer = make_replay_buffer(
            n_stack=frame_stack_size(env),
            observation_space=env.observation_space,
            buffer_size=40,
            n_steps=20,
            n_envs=2,
            n_actions=4,
            seed=0,
        )
        assert isinstance(buffer, FrameStackReplayBuffer)
        reference = SegmentReplayBuffer(40, 20, 2, (4, 84, 84), np.dtype(np.uint8), 4, seed=0)
        state = {"obs": env.reset(), "starts": np.ones(2, dtype=bool)}
        starts = 0
        for _ in range(4):
            segment = collect(env, 20, state)
            starts += int(segment.episode_starts[1:].sum())
            reference.put(segment)
            buffer.put(segment)
            check_buffers_agree(reference, buffer, np.random.default_rng(0))
        assert starts > 0  # lives were lost inside the segments
    finally:
        env.close()


@pytest.mark.parametrize("n_actions", [4, 18])
def test_replay_bytes_per_transition_at_atari_scale(n_actions: int) -> None:
    """SB2's Atari set-up (buffer_size 5000, T = 20, 16 envs, 4x84x84): at most 7.5 KB per transition,
    against about 29.7 KB for whole stacks (SB2's layout, kept by SegmentReplayBuffer)."""
    transitions = (5000 // 20) * 20 * 16
    frame_bytes = FrameStackReplayBuffer.estimate_nbytes(250, 20, 16, (4, 84, 84), 4, np.uint8, n_actions)
    whole_bytes = SegmentReplayBuffer.estimate_nbytes(250, 20, 16, (4, 84, 84), np.dtype(np.uint8), n_actions)
    assert frame_bytes / transitions <= 7500
    assert whole_bytes / transitions > 29_000
    assert whole_bytes / frame_bytes > 4.0


def test_replay_estimate_equals_the_filled_buffer() -> None:
    env = VecTransposeImage(VecFrameStack(DummyVecEnv([lambda: NoiseFrameEnv((20, 24, 1))] * 2), n_stack=4))
    env.seed(0)
    buffer = FrameStackReplayBuffer(15, 5, 2, (4, 20, 24), n_stack=4, n_actions=3)
    state = {"obs": env.reset(), "starts": np.ones(2, dtype=bool)}
    for _ in range(5):  # wraps around: the oldest slot holds its x_0, as the estimate assumes
        buffer.put(collect(env, 5, state))
    assert buffer.nbytes == FrameStackReplayBuffer.estimate_nbytes(3, 5, 2, (4, 20, 24), 4, np.uint8, 3)


def test_make_replay_buffer_keeps_whole_observations_without_frame_stacking() -> None:
    kwargs: dict[str, Any] = dict(buffer_size=20, n_steps=5, n_envs=1, n_actions=2)
    cartpole = make_vec_env("CartPole-v1", n_envs=1)
    buffer = make_replay_buffer(
        n_stack=frame_stack_size(cartpole), observation_space=cartpole.observation_space, **kwargs
    )
    assert type(buffer) is SegmentReplayBuffer
    images = VecTransposeImage(DummyVecEnv([lambda: NoiseFrameEnv((40, 40, 3))]))
    buffer = make_replay_buffer(
        n_stack=frame_stack_size(images), observation_space=images.observation_space, **kwargs
    )
    assert type(buffer) is SegmentReplayBuffer


# ---------------------------------------------------------------------------------------------- environments


def test_env_ids_need_noframeskip_semantics() -> None:
    assert ale_game_name("BreakoutNoFrameskip-v4") == "breakout"
    with pytest.raises(ValueError, match="NoFrameskip-v4"):
        ale_game_name("ALE/Breakout-v5")
    with pytest.raises(ValueError, match="unknown Atari environment"):
        ale_game_name("NoSuchGameNoFrameskip-v4")
    with pytest.raises(ValueError, match="unknown sampler"):
        make_atari_vec_env("BreakoutNoFrameskip-v4", 1, sampler="gym")


def test_ale_vector_env_semantics(tmp_path: pathlib.Path) -> None:
    """Same-step reset, life loss ends the agent's episode only, terminal observations, zero-padded stacks,
    clipped rewards and unclipped full-game scores (Space Invaders: invaders are worth 5 to 30 points),
    which the Monitor file records game by game. A second, unclipped copy with the same seed and actions
    shows the raw rewards."""
    from stable_baselines3.common.monitor import load_results

    clipped = AtariVecEnv("space_invaders", 2, monitor_dir=str(tmp_path / "monitor"))
    raw = AtariVecEnv("space_invaders", 2, clip_reward=False)
    clipped.seed(7)
    raw.seed(7)
    obs, obs_raw = clipped.reset(), raw.reset()
    assert obs.shape == (2, 4, 84, 84) and obs.dtype == np.uint8
    assert np.array_equal(obs, obs_raw)
    assert not obs[:, :3].any() and obs[:, 3].any()  # frames before the start are zero
    rng = np.random.default_rng(0)
    lives = np.array([info["lives"] for info in clipped.reset_infos])
    game_return, game_length, life_losses, games, largest = np.zeros(2), np.zeros(2, dtype=int), 0, 0, 0.0
    scores: list[tuple[float, int]] = []
    for _ in range(3000):
        actions = rng.integers(clipped.action_space.n, size=2)  # type: ignore[attr-defined]
        previous = obs
        obs, rewards, dones, infos = clipped.step(actions)
        obs_raw, rewards_raw, dones_raw, _ = raw.step(actions)
        assert np.array_equal(obs, obs_raw) and np.array_equal(dones, dones_raw)
        assert np.array_equal(rewards, np.sign(rewards_raw)) and rewards.dtype == np.float32
        game_return += rewards_raw
        game_length += 1
        largest = max(largest, float(rewards_raw.max()))
        for i in range(2):
            info = infos[i]
            if not dones[i]:
                assert "terminal_observation" not in info and "episode" not in info
                # The stack shifts by one frame; frames before the episode's start stay zero.
                assert np.array_equal(obs[i, :3], previous[i, 1:])
                continue
            final = info["terminal_observation"]
            assert final.shape == (4, 84, 84) and np.array_equal(final[:3], previous[i, 1:])
            assert info["TimeLimit.truncated"] is False
            assert not obs[i, :3].any()  # the new episode's stack starts empty
            if "episode" in info:  # game over: reset in the same step
                games += 1
                # The length counts emulator frames, as Monitor under AtariWrapper does: 4 per agent step
                # (the last step of a game may end within its 4), plus the reset's no-op and FIRE frames.
                assert info["episode"]["r"] == game_return[i]
                assert 4 * game_length[i] - 3 <= info["episode"]["l"] <= 4 * game_length[i] + 30
                assert info["lives"] == 3 and lives[i] == 1
                scores.append((info["episode"]["r"], info["episode"]["l"]))
                game_return[i], game_length[i] = 0.0, 0
            else:  # a lost life: the game goes on from the frame where it was lost
                life_losses += 1
                assert info["lives"] == lives[i] - 1
                assert np.array_equal(obs[i, 3], final[3])
        lives = np.array([info["lives"] for info in infos])
        if games >= 2:
            break
    assert games >= 2 and life_losses >= 2 * games
    assert largest > 1  # the scores above are unclipped
    clipped.close()
    raw.close()
    monitor = load_results(str(tmp_path / "monitor"))
    assert list(zip(monitor["r"], monitor["l"], strict=True)) == scores


def test_both_samplers_count_game_lengths_in_emulator_frames() -> None:
    """``info["episode"]["l"]`` is the game's length in emulator frames on both samplers (SB3's ``Monitor``
    sits under ``AtariWrapper``'s frame skip), so plots and ``rollout/ep_len_mean`` do not change with the
    sampler. Oracles: SB3's ``Monitor`` reports a game cut by ``TimeLimit`` at 400 frames as 400 long, with
    about a quarter as many agent steps; ale-py without reset no-ops spends one frame (FIRE) on a reset and
    4 on each agent step, so a game it cuts after 100 steps is 401 frames long."""
    from gymnasium.wrappers import TimeLimit
    from stable_baselines3.common.atari_wrappers import AtariWrapper
    from stable_baselines3.common.monitor import Monitor

    game = AtariWrapper(Monitor(TimeLimit(gym.make("PongNoFrameskip-v4").unwrapped, 400)))
    game.reset(seed=0)
    steps = 0
    while True:
        *_, info = game.step(0)
        steps += 1
        if "episode" in info:
            break
    game.close()
    assert info["episode"]["l"] == 400 and 4 * steps <= 400 <= 4 * steps + 30 + 8  # + no-ops, FIRE, 2

    vector = AtariVecEnv("pong", 1, max_frames_per_episode=400, noop_max=0, terminal_on_life_loss=False)
    vector.seed(0)
    vector.reset()
    lengths, steps = [], 0
    for _ in range(250):
        _, _, _, infos = vector.step(np.zeros(1, dtype=np.int64))
        steps += 1
        if "episode" in infos[0]:
            assert infos[0]["TimeLimit.truncated"] is True and steps == 100
            lengths.append(infos[0]["episode"]["l"])
            steps = 0
    vector.close()
    assert lengths == [1 + 4 * 100, 1 + 4 * 100]


def test_ale_vector_env_methods_reach_the_games_or_say_why_not() -> None:
    """SB3's ``env_method``, ``get_attr`` and ``set_attr`` address the games; the C++ vector env has no
    per-game Python env, so what a game cannot answer is refused with the reason instead of being done
    ``num_envs`` times on the adapter."""
    env = AtariVecEnv("breakout", 2)
    wrappers = make_atari_vec_env("BreakoutNoFrameskip-v4", 2, seed=0, sampler="wrappers")
    assert env.env_method("get_action_meanings", indices=[1]) == wrappers.env_method(
        "get_action_meanings", indices=[1]
    )
    assert env.env_method("get_action_meanings") == [["NOOP", "FIRE", "RIGHT", "LEFT"]] * 2
    assert env.get_attr("render_mode", indices=[0]) == [None]
    with pytest.raises(AttributeError, match="AtariVecEnv runs the games in ale-py's C\\+\\+ vector env"):
        env.env_method("reset")
    with pytest.raises(AttributeError, match="use sampler='wrappers'"):
        env.set_attr("foo", 1, indices=[0])
    with pytest.raises(AttributeError, match="no per-game attribute 'spec'"):
        env.get_attr("spec")
    env.close()
    wrappers.close()


def test_ale_vector_env_is_seeded() -> None:
    def first_games(seed: int | None) -> np.ndarray:
        env = AtariVecEnv("breakout", 2)
        env.seed(seed)
        observations = [env.reset()]
        for _ in range(30):
            observations.append(env.step(np.ones(2, dtype=np.int64))[0])
        env.close()
        return np.stack(observations)

    same = first_games(5)
    assert np.array_equal(same, first_games(5))
    assert not np.array_equal(same, first_games(6))  # the random no-ops differ
    first_games(None)  # VecEnv.seed(None) draws 32-bit seeds; the emulators take 31-bit ones


def test_ale_vector_env_reports_game_scores_to_evaluate_policy() -> None:
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.monitor import Monitor

    env = make_atari_vec_env("BreakoutNoFrameskip-v4", 2, seed=0)
    assert env.env_is_wrapped(Monitor) == [True, True]

    class Random:
        rng = np.random.default_rng(0)

        def predict(self, observation: np.ndarray, **kwargs: Any) -> tuple[np.ndarray, None]:
            return self.rng.integers(4, size=len(observation)), None

    returns, lengths = evaluate_policy(Random(), env, n_eval_episodes=2, return_episode_rewards=True)  # type: ignore[arg-type]
    env.close()
    # Whole games of 5 lives (a lost life takes at least ~20 steps), not single lives.
    assert len(returns) == 2 and min(lengths) > 5 * 20  # type: ignore[arg-type]


def _frame_differences(game: str, env_id: str, steps: int) -> np.ndarray:
    """Absolute differences of the preprocessed frames of both paths from the same emulator state, under
    the same random actions (no no-ops or FIRE on reset, so that both start alike)."""
    vector = AtariVectorEnv(
        game,
        1,
        noop_max=0,
        use_fire_reset=False,
        reward_clipping=False,
        stack_num=1,
        autoreset_mode="SameStep",
    )
    wrapped = WarpFrame(MaxAndSkipEnv(gym.make(env_id), skip=4))
    obs_v, _ = vector.reset(seed=3)
    obs_w, _ = wrapped.reset(seed=3)
    rng = np.random.default_rng(0)
    diffs = [np.abs(obs_v[0, 0].astype(int) - obs_w[:, :, 0].astype(int))]
    for _ in range(steps):
        action = int(rng.integers(vector.single_action_space.n))  # type: ignore[attr-defined]
        obs_v, reward_v, terminated_v, _, _ = vector.step(np.array([action]))
        obs_w, reward_w, terminated_w, _, _ = wrapped.step(action)
        assert reward_v[0] == reward_w and bool(terminated_v[0]) == terminated_w
        if terminated_w:
            break
        diffs.append(np.abs(obs_v[0, 0].astype(int) - obs_w[:, :, 0].astype(int)))
    vector.close()
    wrapped.close()
    return np.stack(diffs)


def test_preprocessing_matches_the_wrappers() -> None:
    """The C++ frame pipeline (frame skip, max-pool, grayscale, INTER_AREA resize) against SB3's
    MaxAndSkipEnv + WarpFrame. Measured: Breakout identical; Pong 0.2 % of pixels differ, mean absolute
    difference 0.018 grey levels (the max is taken after (C++) or before (SB3) the grayscale conversion,
    which matters only where a sprite moves between the last two frames). The bounds, 10x the measured
    values, are far below what a CNN policy could tell apart (a 1-grey-level change is 0.4 % of the
    input range); rewards and game ends agree exactly."""
    breakout = _frame_differences("breakout", "BreakoutNoFrameskip-v4", 300)
    assert len(breakout) > 100 and breakout.max() == 0
    pong = _frame_differences("pong", "PongNoFrameskip-v4", 400)
    assert len(pong) == 401
    assert pong.mean() < 0.2 and (pong > 0).mean() < 0.02


# ---------------------------------------------------------------------------------------------- run_atari


@pytest.mark.parametrize("sampler", ["ale-vector", "wrappers"])
def test_run_atari_trains_saves_checkpoints_and_evaluates_on_a_real_rom(
    sampler: str, tmp_path: pathlib.Path
) -> None:
    logdir = tmp_path / "run"
    saved = main(
        [
            f"--sampler={sampler}",
            "--num-timesteps=200",
            "--n-envs=2",
            "--buffer-size=60",
            "--replay-start=20",
            "--eval-freq=120",
            "--n-eval-episodes=1",
            "--checkpoint-freq=120",
            f"--logdir={logdir}",
            "--log-interval=2",
            "--verbose=0",
        ]
    )
    assert saved == logdir / "acer_BreakoutNoFrameskip-v4.zip"
    model = ACER.load(saved)
    assert model.num_timesteps == 200 and model._n_replay_updates > 0
    assert model.observation_space.shape == (4, 84, 84)
    assert sorted(path.name for path in (logdir / "checkpoints").iterdir()) == [
        "acer_BreakoutNoFrameskip-v4_120_steps.zip"
    ]
    evaluations = np.load(logdir / "evaluations.npz")
    assert evaluations["timesteps"].tolist() == [120]
    assert evaluations["ep_lengths"].min() > 5 * 20  # a whole game of 5 lives
    assert list((logdir / "ACER_1").glob("events.out.tfevents.*"))
    assert list((logdir / "monitor").glob("*.monitor.csv"))  # the training games' scores, for plotting
    # The CSV log the help promises, as SB2's logger wrote it: a row per log dump (--log-interval 2), and
    # the evaluation's own row.
    with open(logdir / "ACER_1" / "progress.csv") as file:
        rows = [row for row in csv.DictReader(file) if row["time/iterations"]]
        file.seek(0)
        assert any(row["eval/mean_reward"] for row in csv.DictReader(file))
    assert [int(row["time/iterations"]) for row in rows] == [2, 4]
    assert all(float(row["train/loss"]) == float(row["train/loss"]) for row in rows)  # numbers, not NaN


def test_run_atari_keeps_the_model_when_its_save_fails(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A disk that fills up during training: the model goes to a new temporary folder, said in one line."""
    target = tmp_path / "pong.zip"
    fill_the_disk_for(monkeypatch, target)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    argv = ["--num-timesteps=40", "--n-envs=2", "--eval-freq=0", "--checkpoint-freq=0", "--no-progress-bar"]
    with pytest.raises(SystemExit) as raised:
        main([*argv, f"--save-path={target}"])
    assert raised.value.code == 1
    (rescued,) = tmp_path.glob("sb3-acer-*/pong.zip")
    err = capsys.readouterr().err
    reason = "No space left on device"
    assert err == f"error: cannot save the model to {target}: {reason}; the trained model is in {rescued}\n"
    assert ACER.load(rescued).num_timesteps == 40

    def no_temporary_folder(*args: Any, **kwargs: Any) -> str:
        raise OSError(28, reason)

    # Nowhere else either (before: a traceback): one line.
    monkeypatch.setattr(tempfile, "mkdtemp", no_temporary_folder)
    with pytest.raises(SystemExit) as raised:
        main([*argv, f"--save-path={target}"])
    assert raised.value.code == 1
    err = capsys.readouterr().err
    assert err == f"error: cannot save the model to {target} nor anywhere else: {reason}\n"


def test_run_atari_keeps_the_model_when_training_fails(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An env, worker or callback that fails hours in: the model trained so far is saved, then one line."""
    from stable_baselines3.common.callbacks import BaseCallback

    import sb3_acer.cli.run_atari

    class Fails(BaseCallback):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__()

        def _on_step(self) -> bool:
            if self.num_timesteps >= 80:
                raise RuntimeError("the emulator crashed")
            return True

    monkeypatch.setattr(sb3_acer.cli.run_atari, "CheckpointCallback", Fails)
    target = tmp_path / "model.zip"
    argv = [
        "--num-timesteps=400",
        "--checkpoint-freq=40",
        "--n-envs=2",
        "--eval-freq=0",
        "--no-progress-bar",
        "--verbose=0",  # 1 (the default) also prints the traceback
        f"--save-path={target}",
    ]
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == 1
    assert ACER.load(target).num_timesteps == 40  # the segment being collected is dropped
    err = capsys.readouterr().err
    assert err == (
        "error: training stopped at step 40 by RuntimeError: the emulator crashed; the model trained so far "
        f"is in {target}\n"
    )


def test_run_atari_saves_the_model_when_interrupted(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C during training saves what was trained, as the CLI's train does."""
    from stable_baselines3.common.callbacks import BaseCallback

    import sb3_acer.cli.run_atari

    class CtrlC(BaseCallback):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__()

        def _on_step(self) -> bool:
            if self.num_timesteps >= 80:
                raise KeyboardInterrupt
            return True

    save = ACER.save

    def ctrl_c_again_while_saving(self: ACER, *args: Any, **kwargs: Any) -> None:
        os.kill(os.getpid(), signal.SIGINT)  # the impatient second press
        save(self, *args, **kwargs)

    monkeypatch.setattr(sb3_acer.cli.run_atari, "CheckpointCallback", CtrlC)
    monkeypatch.setattr(ACER, "save", ctrl_c_again_while_saving)
    saved = main(
        [
            "--num-timesteps=400",
            "--checkpoint-freq=40",
            "--n-envs=2",
            "--buffer-size=60",
            "--replay-start=20",
            "--eval-freq=0",
            f"--save-path={tmp_path / 'model.zip'}",
            "--no-progress-bar",
        ]
    )
    # The segment being collected at step 80 (steps 41-80) is dropped: the model was trained on 40 steps.
    assert ACER.load(saved).num_timesteps == 40
    out, err = capsys.readouterr()
    assert "interrupted at 40 steps; saving the model" in out
    assert "Ctrl-C: finishing the save first" in err
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize(
    ("policy", "policy_class"), [("lstm", "CnnLstmPolicy"), ("lnlstm", "CnnLnLstmPolicy")]
)
def test_run_atari_trains_recurrent_policies(policy: str, policy_class: str, tmp_path: pathlib.Path) -> None:
    saved = main(
        [
            f"--policy={policy}",
            "--num-timesteps=80",
            "--n-envs=2",
            "--buffer-size=40",
            "--replay-start=20",
            "--eval-freq=0",
            "--checkpoint-freq=0",
            f"--save-path={tmp_path / 'model.zip'}",
            "--no-progress-bar",
            "--verbose=0",
        ]
    )
    model = ACER.load(saved)
    assert type(model.policy).__name__ == policy_class
    assert model.num_timesteps == 80


def test_run_atari_help_documents_every_option() -> None:
    parser = build_parser()
    text = parser.format_help()
    for action in parser._actions:
        for option in action.option_strings:
            assert option in text
        if action.dest != "help":
            assert action.help, action.dest
    defaults = parser.parse_args([])
    assert defaults.env == "BreakoutNoFrameskip-v4" and defaults.num_timesteps == 10_000_000
    assert defaults.n_envs == 16 and defaults.policy == "cnn" and defaults.lr_schedule == "constant"
    assert defaults.sampler == "ale-vector"


@pytest.mark.parametrize(
    ("blocked", "argv", "message"),
    [
        (["tqdm"], [], "the progress bar needs tqdm: pip install tqdm rich (or pass --no-progress-bar)"),
        (["rich"], [], "the progress bar needs rich: pip install tqdm rich (or pass --no-progress-bar)"),
        (["tensorboard"], ["--no-progress-bar"], "--logdir needs tensorboard: pip install tensorboard"),
        (
            ["ale_py"],
            ["--no-progress-bar"],
            "Atari needs ale-py and OpenCV: pip install 'sb3-acer[atari]' (ale-py ships the ROMs, nothing is "
            "downloaded)",
        ),
        (
            ["cv2"],
            ["--no-progress-bar", "--sampler=wrappers"],
            "--sampler wrappers needs cv2: pip install 'sb3-acer[atari]'",
        ),
    ],
)
def test_run_atari_names_a_missing_optional_package_before_writing_anything(
    blocked: list[str],
    argv: list[str],
    message: str,
    tmp_path: pathlib.Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for module in blocked:
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
    with pytest.raises(SystemExit) as raised:
        main([*argv, f"--logdir={tmp_path / 'logs'}", "--n-envs=2", "--num-timesteps=40"])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {message}" in err and "Traceback" not in err
    assert not (tmp_path / "logs").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--buffer-size=0"], "buffer_size must be at least n_steps (20) to hold one segment, got 0"),
        (["--replay-ratio=-1"], "replay_ratio must be non-negative, got -1.0"),
        (["--learning-rate=-1"], "learning_rate must be a positive finite number"),
        (["--replay-start=100000"], "replay_start must not exceed buffer_size (5000)"),
        (["--seed=-1"], "seed must be an integer in [0, 2**32 - 1], got -1"),
        (["--device=nodev"], "device 'nodev' is not a torch device"),
        (["--torch-threads=0"], "--torch-threads must be positive"),
        (["--env-threads=-1"], "--env-threads must be 0 (one per core) or positive"),
        (["--checkpoint-freq=-5"], "--checkpoint-freq must be 0 (never) or positive"),
        (["--env=FooNoFrameskip-v4"], "unknown Atari environment 'FooNoFrameskip-v4'"),
        (["--env=ALE/Pong-v5"], "'ALE/Pong-v5' has frameskip=4"),
        (["--save-path={tmp}/afile/model.zip"], "--save-path {tmp}/afile/model.zip cannot be created: "),
        (["--logdir={tmp}/afile"], "--logdir {tmp}/afile is a file, not a folder"),
        (["--device=meta"], "unusable torch device 'meta'; use one of auto, cpu, cuda, cuda:N"),
    ],
)
def test_run_atari_refuses_bad_options_before_writing_anything(
    argv: list[str], message: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every option is checked before a game, a log or a model is made: a mistyped value or path costs
    nothing (before, a bad --save-path was found only when saving, after the whole run)."""
    (tmp_path / "afile").write_text("")
    before = sorted(tmp_path.rglob("*"))
    argv = [arg.format(tmp=tmp_path) for arg in argv]
    logdir = [] if any(arg.startswith("--logdir") for arg in argv) else [f"--logdir={tmp_path / 'logs'}"]
    with pytest.raises(SystemExit) as raised:
        main([*argv, *logdir, "--n-envs=2", "--num-timesteps=40", "--no-progress-bar"])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {message.format(tmp=tmp_path)}" in err and "Traceback" not in err
    assert sorted(tmp_path.rglob("*")) == before


QUICK = ["--n-envs=2", "--num-timesteps=40", "--eval-freq=0", "--no-progress-bar", "--verbose=0"]


@pytest.mark.parametrize("taken", ["checkpoints", "monitor"])
def test_run_atari_checks_its_checkpoint_and_monitor_folders_first(
    taken: str, tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / taken).write_text("")
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(SystemExit) as raised:
        main([*QUICK, "--checkpoint-freq=20", f"--logdir={tmp_path / 'logs'}"])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'logs' / taken} is a file, not a folder" in err and "Traceback" not in err
    assert sorted(tmp_path.rglob("*")) == before


def test_run_atari_makes_no_checkpoint_folder_for_a_run_shorter_than_the_checkpoint_freq(
    tmp_path: pathlib.Path,
) -> None:
    saved = main([*QUICK, f"--save-path={tmp_path}/"])  # a name ending in / is a folder, as in train
    assert saved == tmp_path / "acer_BreakoutNoFrameskip-v4.zip" and saved.is_file()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["acer_BreakoutNoFrameskip-v4.zip"]


def test_run_atari_counts_take_any_whole_number_notation() -> None:
    args = build_parser().parse_args(["--num-timesteps=1e7", "--checkpoint-freq=2.5E5", "--n-envs=16.0"])
    assert (args.num_timesteps, args.checkpoint_freq, args.n_envs) == (10_000_000, 250_000, 16)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--num-timesteps=1.5"])


def _earlier_run(logdir: pathlib.Path) -> dict[str, bytes]:
    files = {
        "acer_BreakoutNoFrameskip-v4.zip": b"model",
        "monitor/ale_vector.monitor.csv": b"scores",
        "checkpoints/acer_BreakoutNoFrameskip-v4_20_steps.zip": b"checkpoint",
        "best_model.zip": b"best",
        "evaluations.npz": b"evaluations",
    }
    for name, data in files.items():
        (logdir / name).parent.mkdir(parents=True, exist_ok=True)
        (logdir / name).write_bytes(data)
    return files


def test_run_atari_replaces_an_earlier_run_only_with_overwrite(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, a second run with the same --logdir silently replaced the first run's model, Monitor log and
    checkpoints, and left its best model and evaluations beside the new model."""
    logdir = tmp_path / "run"
    files = _earlier_run(logdir)
    argv = [*QUICK, "--checkpoint-freq=20", "--eval-freq=40", "--n-eval-episodes=1", f"--logdir={logdir}"]
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {logdir / 'acer_BreakoutNoFrameskip-v4.zip'}, {logdir / 'monitor'}" in err
    assert ", ... exist: pass --overwrite to replace them, or choose another --logdir or --save-path" in err
    assert {name: (logdir / name).read_bytes() for name in files} == files
    assert sorted(path.relative_to(logdir).as_posix() for path in logdir.rglob("*.*")) == sorted(files)

    saved = main([*argv, "--overwrite"])
    assert ACER.load(saved).num_timesteps == 40
    assert sorted(path.name for path in (logdir / "checkpoints").iterdir()) == [
        "acer_BreakoutNoFrameskip-v4_20_steps.zip",
        "acer_BreakoutNoFrameskip-v4_40_steps.zip",
    ]
    for name in files:  # each replaced by this run's own
        assert (logdir / name).read_bytes() != files[name], name
    assert not list(logdir.rglob(".*.previous"))


def test_run_atari_leaves_what_it_does_not_write_alone(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another game's checkpoints, and the evaluations and best model of a run that evaluated, are not this
    run's to replace when it does not evaluate: they neither stop it nor go with --overwrite."""
    logdir = tmp_path / "run"
    files = {
        name: data for name, data in _earlier_run(logdir).items() if "/" not in name or "checkpoints" in name
    }
    (logdir / "acer_BreakoutNoFrameskip-v4.zip").unlink()
    (logdir / "monitor" / "ale_vector.monitor.csv").unlink()
    del files["acer_BreakoutNoFrameskip-v4.zip"]
    for overwrite in ([], ["--overwrite"]):
        main([*QUICK, "--env=PongNoFrameskip-v4", "--checkpoint-freq=20", f"--logdir={logdir}", *overwrite])
        (logdir / "acer_PongNoFrameskip-v4.zip").unlink()
        for path in (logdir / "checkpoints").glob("acer_PongNoFrameskip-v4_*"):
            path.unlink()
        (logdir / "monitor" / "ale_vector.monitor.csv").unlink()
        assert {name: (logdir / name).read_bytes() for name in files} == files


@pytest.mark.parametrize("failure", ["memory", "ctrl-c while building", "ctrl-c before the first step"])
def test_run_atari_that_does_not_start_puts_the_earlier_run_back(
    failure: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--overwrite sets the earlier run's files aside until this run has trained something."""
    import sb3_acer.cli.run_atari

    logdir = tmp_path / "run"
    files = _earlier_run(logdir)
    if failure == "ctrl-c before the first step":

        def ctrl_c(self: ACER, *args: Any, **kwargs: Any) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(ACER, "learn", ctrl_c)
    else:
        error = MemoryError("Unable to allocate") if failure == "memory" else KeyboardInterrupt()
        monkeypatch.setattr(_FailsToBuild, "failure", error, raising=False)
        monkeypatch.setattr(sb3_acer.cli.run_atari, "ACER", _FailsToBuild)
    argv = [*QUICK, "--checkpoint-freq=20", "--eval-freq=40", f"--logdir={logdir}", "--overwrite"]
    with pytest.raises(SystemExit) as raised:
        main(argv)
    assert raised.value.code == (2 if failure == "memory" else 130)
    assert "Traceback" not in capsys.readouterr().err
    assert {name: (logdir / name).read_bytes() for name in files} == files
    assert sorted(path.relative_to(logdir).as_posix() for path in logdir.rglob("*.*")) == sorted(files)
    assert not list(logdir.rglob(".*"))


def test_run_atari_reports_a_folder_in_the_way_before_setting_anything_aside(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir = tmp_path / "run"
    files = _earlier_run(logdir)
    (logdir / "evaluations.npz").unlink()
    del files["evaluations.npz"]
    (logdir / "evaluations.npz").mkdir()
    with pytest.raises(SystemExit) as raised:
        main([*QUICK, "--checkpoint-freq=20", "--eval-freq=40", f"--logdir={logdir}", "--overwrite"])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert f"error: {logdir / 'evaluations.npz'} is in the way of this run's files and is not a file" in err
    assert {name: (logdir / name).read_bytes() for name in files} == files


def test_run_atari_saves_the_checkpoint_that_falls_in_the_rounded_up_steps(tmp_path: pathlib.Path) -> None:
    """Training is rounded up to whole updates (2 envs x 20 steps): 60 steps train 80, and a checkpoint
    every 80 steps is written (before, checkpoints were off for a --checkpoint-freq above the steps asked)."""
    main([*QUICK, "--num-timesteps=60", "--checkpoint-freq=80", f"--logdir={tmp_path}"])
    assert [path.name for path in (tmp_path / "checkpoints").iterdir()] == [
        "acer_BreakoutNoFrameskip-v4_80_steps.zip"
    ]


class _FailsToBuild(ACER):
    """Fails when the model is built (with its env), not when run_atari checks the settings (without)."""

    failure: ClassVar[BaseException]

    def __init__(self, policy: Any, env: Any, *args: Any, **kwargs: Any) -> None:
        if env is not None:
            raise self.failure
        super().__init__(policy, env, *args, **kwargs)


@pytest.mark.parametrize("where", ["make_atari_vec_env", "ACER"])
def test_run_atari_interrupted_while_it_starts_is_one_line(
    where: str, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sb3_acer.cli.run_atari

    def ctrl_c(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(_FailsToBuild, "failure", KeyboardInterrupt(), raising=False)
    monkeypatch.setattr(sb3_acer.cli.run_atari, where, _FailsToBuild if where == "ACER" else ctrl_c)
    with pytest.raises(SystemExit) as raised:
        main([*QUICK, f"--save-path={tmp_path / 'model.zip'}"])
    assert raised.value.code == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert not (tmp_path / "model.zip").exists()


def test_run_atari_without_memory_for_its_replay_is_one_line_and_keeps_no_log(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sb3_acer.cli.run_atari

    monkeypatch.setattr(
        _FailsToBuild, "failure", MemoryError("Unable to allocate 12.8 TiB for an array"), raising=False
    )
    monkeypatch.setattr(sb3_acer.cli.run_atari, "ACER", _FailsToBuild)
    with pytest.raises(SystemExit) as raised:
        main([*QUICK, f"--logdir={tmp_path / 'logs'}"])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert err.endswith(
        "error: cannot build the model: Unable to allocate 12.8 TiB for an array; lower --buffer-size or "
        "--n-envs\n"
    )
    assert "Traceback" not in err and not (tmp_path / "logs").exists()


def test_run_atari_interrupted_while_it_loads_is_one_line(tmp_path: pathlib.Path) -> None:
    """``python -m sb3_acer.run_atari`` loads torch, SB3 and gymnasium for a second or more first."""
    then = 'sys.argv = ["run_atari", "--num-timesteps=40"]\n'
    then += 'runpy.run_module("sb3_acer.run_atari", run_name="__main__")\n'
    result = run_interrupted_while_torch_loads(then, tmp_path)
    assert (result.returncode, result.stderr) == (130, "interrupted\n")
    assert list(tmp_path.iterdir()) == []


def _interrupted_at_the_first_step(monkeypatch: pytest.MonkeyPatch) -> None:
    """The games raise KeyboardInterrupt at the first step of training, through the real learn and the real
    callbacks."""
    import sb3_acer.cli.run_atari

    make = sb3_acer.cli.run_atari.make_atari_vec_env

    def interrupted(*args: Any, **kwargs: Any) -> VecEnv:
        env = make(*args, **kwargs)

        def step_wait() -> Any:
            raise KeyboardInterrupt

        env.step_wait = step_wait  # type: ignore[method-assign]
        return env

    monkeypatch.setattr(sb3_acer.cli.run_atari, "make_atari_vec_env", interrupted)


def test_run_atari_interrupted_before_the_first_step_keeps_the_earlier_model(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, a Ctrl-C right after the start saved an untrained model over the trained one, exit code 0;
    and the checkpoint folder CheckpointCallback makes was left behind."""
    target = tmp_path / "model.zip"
    target.write_bytes(b"trained")
    _interrupted_at_the_first_step(monkeypatch)
    argv = [*QUICK, "--checkpoint-freq=20", f"--logdir={tmp_path / 'logs'}", f"--save-path={target}"]
    with pytest.raises(SystemExit) as raised:
        main([*argv, "--overwrite"])
    assert raised.value.code == 130
    err = capsys.readouterr().err
    assert err == "interrupted before the first step: nothing was trained, so no model was saved\n"
    assert target.read_bytes() == b"trained"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["model.zip"]  # no logs, no checkpoints


def test_run_atari_never_saves_its_model_over_its_own_files(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, such a model was set aside with the run's own files, then deleted by a run that failed."""
    logdir = tmp_path / "run"
    files = _earlier_run(logdir)
    (tmp_path / "link.zip").symlink_to(logdir / "checkpoints" / "acer_BreakoutNoFrameskip-v4_20_steps.zip")
    cases = [
        ("checkpoints/acer_BreakoutNoFrameskip-v4_20_steps.zip", "its checkpoints"),
        (str(tmp_path / "link.zip"), "its checkpoints"),  # a link to one
        ("monitor/ale_vector.monitor.csv", "its Monitor log"),
        ("best_model.zip", "its best model"),
    ]
    for save_path, what in cases:
        target = save_path if save_path.startswith("/") else f"{logdir}/{save_path}"
        argv = [
            *QUICK,
            "--checkpoint-freq=20",
            "--eval-freq=40",
            f"--logdir={logdir}",
            f"--save-path={target}",
        ]
        with pytest.raises(SystemExit) as raised:
            main([*argv, "--overwrite"])
        assert raised.value.code == 2
        err = capsys.readouterr().err
        assert f"error: --save-path {target} is where this run writes {what}; choose another\n" in err
    assert {name: (logdir / name).read_bytes() for name in files} == files


def test_run_atari_names_files_a_stopped_run_left_aside(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run killed (SIGKILL) while it had set the earlier run's files aside cannot put them back; the next
    run says where they are instead of overwriting them with its own set-aside files."""
    logdir = tmp_path / "run"
    _earlier_run(logdir)
    aside = logdir / "monitor" / ".ale_vector.monitor.csv.previous"
    (logdir / "monitor" / "ale_vector.monitor.csv").rename(aside)
    for overwrite in ([], ["--overwrite"]):
        with pytest.raises(SystemExit) as raised:
            main([*QUICK, "--checkpoint-freq=20", f"--logdir={logdir}", *overwrite])
        assert raised.value.code == 2
        err = capsys.readouterr().err
        assert (
            f"error: {aside} is an earlier run's file, set aside by a run that was stopped before it could "
            f"put it back; rename it to {logdir / 'monitor' / 'ale_vector.monitor.csv'} (over that run's own "
            "file, if there is one), or remove it\n"
        ) in err
        assert aside.read_bytes() == b"scores"


def test_run_atari_saves_its_model_when_a_set_aside_file_went_missing(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, the missing file made the run put the earlier files back after training: it removed its own
    checkpoints and Monitor log, saved no model and ended in a traceback."""
    from stable_baselines3.common.callbacks import BaseCallback

    import sb3_acer.cli.run_atari

    logdir = tmp_path / "run"
    _earlier_run(logdir)
    aside = logdir / "monitor" / ".ale_vector.monitor.csv.previous"

    class RemovesTheSetAsideLog(BaseCallback):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__()

        def _on_step(self) -> bool:
            aside.unlink(missing_ok=True)
            return True

    monkeypatch.setattr(sb3_acer.cli.run_atari, "CheckpointCallback", RemovesTheSetAsideLog)
    saved = main([*QUICK, "--checkpoint-freq=20", f"--logdir={logdir}", "--overwrite"])
    assert ACER.load(saved).num_timesteps == 40
    assert (logdir / "monitor" / "ale_vector.monitor.csv").read_bytes() != b"scores"  # this run's
    assert not list(logdir.rglob(".*.previous"))


def test_a_second_run_atari_into_a_folder_in_use_stops(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two runs into one --logdir would mix their logs, and the second would take the first one's set-aside
    files for a stopped run's."""
    from sb3_acer.cli.run_folder import run_lock

    logdir = tmp_path / "run"
    with run_lock(logdir, busy="held by another run"), pytest.raises(SystemExit) as raised:
        main([*QUICK, f"--logdir={logdir}", "--overwrite"])
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert (
        f"error: another run is writing to {logdir}; wait for it to end, or choose another --logdir or "
        in err
    )
    assert not logdir.exists()

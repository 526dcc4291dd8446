"""Dict observations (``gymnasium.spaces.Dict``) with ``MultiInputPolicy`` and ``MultiInputLstmPolicy``, as
SB3's algorithms offer them: training with replay (with and without ``VecNormalize``, with image keys),
learning, prediction, the replay memory and its file, model files, and the errors for what is refused.

``DummyDictEnv`` and the use of ``SimpleMultiObsEnv`` follow SB3's ``tests/test_dict_env.py``.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import SimpleMultiObsEnv
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.torch_layers import CombinedExtractor
from stable_baselines3.common.vec_env import DummyVecEnv, VecFrameStack, VecNormalize

from sb3_acer import ACER, MultiInputLstmPolicy, MultiInputPolicy, UnsupportedSpaceError
from sb3_acer.common.buffers import FrameStackReplayBuffer, SegmentReplayBuffer, make_replay_buffer
from sb3_acer.common.checks.observations import check_env_step
from sb3_acer.common.observations import observation_layout, pack_observations, unpack_observations
from sb3_acer.common.policies import ACERPolicy
from sb3_acer.common.save_util.replay_file import load_buffer, save_buffer
from sb3_acer.common.type_aliases import Segment
from sb3_acer.envs import frame_stack_size

#: Small networks: the CNN of an image key gives 8 features, one hidden layer of 16 units.
SMALL_NET = dict(net_arch=[16], features_extractor_kwargs=dict(cnn_output_dim=8))


class DummyDictEnv(gym.Env):
    """SB3's test env (discrete actions): random ``img`` (36x36, one channel), ``vec`` and ``discrete`` keys;
    ``vec_only`` keeps only ``vec``, ``nested_dict_obs`` adds a nested Dict."""

    def __init__(self, channel_last: bool = False, nested_dict_obs: bool = False, vec_only: bool = False):
        super().__init__()
        self.action_space = spaces.Discrete(3)
        obs_shape = (36, 36, 1) if channel_last else (1, 36, 36)
        self.observation_space = spaces.Dict(
            {
                "img": spaces.Box(low=0, high=255, shape=obs_shape, dtype=np.uint8),
                "vec": spaces.Box(low=-1, high=1, shape=(2,), dtype=np.float32),
                "discrete": spaces.Discrete(4),
            }
        )
        if vec_only:
            self.observation_space = spaces.Dict(
                {"vec": spaces.Box(low=-1, high=1, shape=(2,), dtype=np.float32)}
            )
        if nested_dict_obs:
            self.observation_space.spaces["nested-dict"] = spaces.Dict(
                {"nested-dict-discrete": spaces.Discrete(4)}
            )

    def seed(self, seed: int | None = None) -> None:
        if seed is not None:
            self.observation_space.seed(seed)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return self.observation_space.sample(), 0.0, False, False, {}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        if seed is not None:
            self.observation_space.seed(seed)
        return self.observation_space.sample(), {}


class CueEnv(gym.Env):
    """Reward 1 for the action that the ``cue`` key names, 0 otherwise; ``noise`` is random and useless.
    Episodes of 10 steps (truncated): a random policy scores 10 / 3, the best one 10."""

    def __init__(self, n_actions: int = 3, episode_length: int = 10):
        self.observation_space = spaces.Dict(
            {"cue": spaces.Discrete(n_actions), "noise": spaces.Box(-1, 1, (4,), np.float32)}
        )
        self.action_space = spaces.Discrete(n_actions)
        self.episode_length = episode_length

    def _obs(self) -> dict[str, Any]:
        self.cue = int(self.np_random.integers(self.action_space.n))
        return {"cue": self.cue, "noise": self.np_random.uniform(-1, 1, 4).astype(np.float32)}

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        reward = float(int(action) == self.cue)
        self.t += 1
        return self._obs(), reward, False, self.t >= self.episode_length, {}


class CounterDictEnv(gym.Env):
    """Deterministic observations: ``count`` is the step number of the episode, ``parity`` its parity and
    ``img`` a uint8 array filled with it; episodes are truncated after 3 steps (a terminal observation)."""

    observation_space = spaces.Dict(
        {
            "count": spaces.Box(0, 100, (1,), np.float32),
            "img": spaces.Box(0, 255, (2, 2), np.uint8),
            "parity": spaces.Discrete(2),
        }
    )
    action_space = spaces.Discrete(2)

    def _obs(self) -> dict[str, Any]:
        return {
            "count": np.array([self.t], dtype=np.float32),
            "img": np.full((2, 2), self.t, dtype=np.uint8),
            "parity": self.t % 2,
        }

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        self.t += 1
        return self._obs(), 1.0, False, self.t >= 3, {}


def _settings(**changes: Any) -> dict[str, Any]:
    return {**dict(n_steps=5, buffer_size=50, replay_start=10, seed=0, policy_kwargs=SMALL_NET), **changes}


def _batch(space: spaces.Dict, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    space.seed(seed)
    samples = [space.sample() for _ in range(n)]
    return {key: np.stack([sample[key] for sample in samples]) for key in space.spaces}


# ---------------------------------------------------------------------- policies and training


def test_multi_input_policies_are_public_and_use_combined_extractor() -> None:
    assert ACER.policy_aliases["MultiInputPolicy"] is MultiInputPolicy
    assert ACER.policy_aliases["MultiInputLstmPolicy"] is MultiInputLstmPolicy
    model = ACER("MultiInputPolicy", DummyDictEnv(), **_settings())
    assert isinstance(model.policy, MultiInputPolicy)
    assert isinstance(model.policy.features_extractor, CombinedExtractor)
    # As SB3: the image key gets a CNN of cnn_output_dim features, the others are flattened (vec: 2,
    # discrete: one-hot of 4).
    assert model.policy.features_dim == 8 + 2 + 4


@pytest.mark.parametrize("vec_normalize", [False, True])
def test_simple_multi_obs_env_trains_with_replay(vec_normalize: bool) -> None:
    env = DummyVecEnv([lambda: SimpleMultiObsEnv(random_start=False)])
    if vec_normalize:
        env = VecNormalize(env, norm_obs_keys=["vec"])
    model = ACER("MultiInputPolicy", env, **_settings(replay_ratio=2))
    model.learn(40)
    assert model.num_timesteps == 40
    assert model._n_replay_updates > 0
    buffer = model.replay_buffer
    assert isinstance(buffer, SegmentReplayBuffer)
    assert buffer.observations.dtype.names == ("img", "vec")
    assert buffer.observations["img"].dtype == np.uint8
    assert buffer.observations["img"].shape[-3:] == (1, 64, 64)  # channel-first, as the model sees it
    if vec_normalize:
        # The replay memory holds what the model learned on: normalised vectors, raw images.
        assert model.get_vec_normalize_env() is env
        assert np.abs(buffer.observations["vec"][: buffer.num_in_buffer]).max() > 1.0
    mean_reward, _ = evaluate_policy(model, model.get_env(), n_eval_episodes=2, warn=False)
    assert np.isfinite(mean_reward)


@pytest.mark.parametrize("channel_last", [False, True])
def test_image_vector_and_discrete_keys(channel_last: bool) -> None:
    env = make_vec_env(
        lambda: gym.wrappers.TimeLimit(DummyDictEnv(channel_last=channel_last), 20), n_envs=2, seed=0
    )
    model = ACER("MultiInputPolicy", env, **_settings())
    model.learn(40)
    assert model._n_replay_updates > 0
    assert model.replay_buffer is not None
    stored = model.replay_buffer.observations
    assert stored.dtype.names == ("discrete", "img", "vec")
    assert stored["img"].shape[-3:] == (1, 36, 36)  # channel-last images are transposed, as in SB3
    # Terminal observations of the truncated episodes are kept packed too.
    assert any(len(index) for index, _ in model.replay_buffer.final[: model.replay_buffer.num_in_buffer])
    evaluate_policy(model, env, n_eval_episodes=2, warn=False)


@pytest.mark.parametrize("channel_last", [False, True])
def test_frame_stacked_dict_observations_are_stored_whole(channel_last: bool) -> None:
    env = VecFrameStack(
        DummyVecEnv([lambda: SimpleMultiObsEnv(random_start=True, channel_last=channel_last)]),
        n_stack=3,
        channels_order={"vec": None, "img": "last" if channel_last else "first"},
    )
    assert frame_stack_size(env) is None  # each key is stacked on its own
    model = ACER("MultiInputPolicy", env, **_settings())
    model.learn(20)
    assert isinstance(model.replay_buffer, SegmentReplayBuffer)
    assert model.replay_buffer.observations["img"].shape[-3:] == (3, 64, 64)
    assert model.replay_buffer.observations["vec"].shape[-1] == 15


def test_multi_input_lstm_policy_trains_and_predicts_with_state() -> None:
    env = make_vec_env(lambda: gym.wrappers.TimeLimit(DummyDictEnv(), 7), n_envs=2, seed=0)
    model = ACER(
        "MultiInputLstmPolicy",
        env,
        **_settings(policy_kwargs=dict(SMALL_NET, net_arch=[16, "lstm"], n_lstm=8)),
    )
    model.learn(40)
    assert model._n_replay_updates > 0
    assert model.replay_buffer is not None and model.replay_buffer.state_size == 8
    obs = env.reset()
    actions, state = model.predict(obs, episode_start=np.ones(2, dtype=bool))
    assert actions.shape == (2,) and state is not None and state[0].shape == (1, 2, 8)
    again, _ = model.predict(obs, state=state, episode_start=np.zeros(2, dtype=bool), deterministic=True)
    assert again.shape == (2,)
    probs = model.action_probability(obs, state=state, mask=np.zeros(2))
    np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)


def test_vector_only_dict_matches_flattened_observations_exactly() -> None:
    """As SB3's test_consistency: a Dict of one vector key and its flattened Box give the same networks
    and, with the same seed, the same training."""
    dict_env = gym.wrappers.TimeLimit(DummyDictEnv(vec_only=True), 100)
    flat_env = gym.wrappers.FlattenObservation(gym.wrappers.TimeLimit(DummyDictEnv(vec_only=True), 100))
    kwargs = dict(
        n_steps=5, buffer_size=50, replay_start=10, gamma=0.5, seed=1, policy_kwargs=dict(net_arch=[8, 8])
    )
    batch = _batch(dict_env.observation_space, 6)
    # One after the other: both draw from the global random generators.
    dict_model = ACER("MultiInputPolicy", dict_env, **kwargs)
    dict_before = dict_model.action_probability(batch)
    dict_model.learn(60)
    flat_model = ACER("MlpPolicy", flat_env, **kwargs)
    np.testing.assert_array_equal(flat_model.action_probability(batch["vec"]), dict_before)
    flat_model.learn(60)
    assert dict_model._n_replay_updates == flat_model._n_replay_updates > 0
    np.testing.assert_array_equal(
        dict_model.action_probability(batch), flat_model.action_probability(batch["vec"])
    )


def test_acer_learns_from_the_one_informative_key() -> None:
    """The rewarded action is in the ``cue`` key only; 2,000 steps (about 5 s) take ACER from the random
    policy's 3.3 to the best score of 10 per episode."""
    env = make_vec_env(CueEnv, n_envs=4, seed=0)
    model = ACER("MultiInputPolicy", env, n_steps=5, buffer_size=500, replay_start=50, ent_coef=0.0, seed=0)
    model.learn(2000)
    mean_reward, _ = evaluate_policy(
        model, make_vec_env(CueEnv, n_envs=1, seed=1), n_eval_episodes=20, deterministic=True
    )
    assert mean_reward >= 9.5


# ---------------------------------------------------------------------- prediction


def test_predict_takes_one_dict_observation_or_a_batch() -> None:
    env = DummyDictEnv()
    model = ACER("MultiInputPolicy", env, **_settings())
    single, _ = env.reset(seed=0)
    action, state = model.predict(single, deterministic=True)
    assert state is None and np.shape(action) == () and env.action_space.contains(int(action))
    assert model.action_probability(single).shape == (3,)
    batch = _batch(env.observation_space, 4)
    actions, _ = model.predict(batch, deterministic=True)
    assert actions.shape == (4,)
    probs = model.action_probability(batch)
    assert probs.shape == (4, 3)
    # Each row is the single observation's own prediction.
    for i in range(4):
        row = {key: value[i] for key, value in batch.items()}
        np.testing.assert_allclose(model.action_probability(row), probs[i], rtol=1e-5, atol=1e-7)
        assert model.predict(row, deterministic=True)[0] == actions[i]
    chosen = model.action_probability(batch, actions=actions)
    np.testing.assert_allclose(chosen[:, 0], probs[np.arange(4), actions])
    # Channel-last images are accepted as the env returns them, as SB3's predict does.
    last_env = DummyDictEnv(channel_last=True)
    last_model = ACER("MultiInputPolicy", last_env, **_settings())
    last_obs, _ = last_env.reset(seed=0)
    assert last_model.predict(last_obs)[0].shape == ()


@pytest.mark.parametrize(
    ("observation", "message"),
    [
        (np.zeros(2, dtype=np.float32), "must be a dict of arrays with the keys"),
        ({"vec": np.zeros(2, dtype=np.float32)}, r"missing \['discrete', 'img'\]"),
        ("extra", r"unknown \['extra'\]"),
        ("nan", r"observation\['vec'\]: observation holds a non-finite value"),
        ("mixed", r"all be single observations or batches of the same size, got 'discrete': single"),
    ],
)
def test_predict_refuses_observations_that_do_not_fit_the_dict(observation: Any, message: str) -> None:
    env = DummyDictEnv()
    model = ACER("MultiInputPolicy", env, **_settings())
    good, _ = env.reset(seed=0)
    if isinstance(observation, str) and observation == "extra":
        observation = {**good, "extra": np.zeros(1)}
    elif isinstance(observation, str) and observation == "nan":
        observation = {**good, "vec": np.array([np.nan, 0.0], dtype=np.float32)}
    elif isinstance(observation, str) and observation == "mixed":
        observation = {**_batch(env.observation_space, 2), "discrete": 1}
    with pytest.raises(ValueError, match=message):
        model.predict(observation)
    with pytest.raises(ValueError, match=message):
        model.action_probability(observation)


# ---------------------------------------------------------------------- the replay memory and its file


def _dict_segment(space: spaces.Dict, n_steps: int, n_envs: int, seed: int) -> tuple[Segment, dict]:
    """A segment of random observations of ``space`` (one truncation at (1, 0)) and its per-key arrays."""
    _, dtype = observation_layout(space)
    observations = _batch(space, (n_steps + 1) * n_envs, seed)
    per_key = {
        key: value.reshape(n_steps + 1, n_envs, *value.shape[1:]) for key, value in observations.items()
    }
    final = _batch(space, 1, seed + 100)
    rng = np.random.default_rng(seed)
    mu = rng.random((n_steps, n_envs, 3)).astype(np.float32)
    segment = Segment(
        observations=pack_observations(per_key, dtype),
        actions=rng.integers(3, size=(n_steps, n_envs)),
        rewards=rng.random((n_steps, n_envs)).astype(np.float32),
        mu_probs=mu / mu.sum(-1, keepdims=True),
        terminated=np.zeros((n_steps, n_envs), dtype=bool),
        truncated=np.zeros((n_steps, n_envs), dtype=bool),
        episode_starts=np.zeros((n_steps + 1, n_envs), dtype=bool),
        final_index=np.array([[1, 0]], dtype=np.int64),
        final_observations=pack_observations(final, dtype),
    )
    return segment, {"observations": per_key, "final": final}


def test_replay_memory_returns_exactly_what_was_stored_per_key() -> None:
    space = DummyDictEnv().observation_space
    buffer = make_replay_buffer(
        n_stack=None, observation_space=space, buffer_size=10, n_steps=5, n_envs=2, n_actions=3, seed=0
    )
    assert isinstance(buffer, SegmentReplayBuffer)
    segments = [_dict_segment(space, 5, 2, seed) for seed in (1, 2)]
    for segment, _ in segments:
        buffer.put(segment)
    # Env 0 from slot 1, env 1 from slot 0.
    replayed = buffer.get(np.array([1, 0]))
    observations = unpack_observations(replayed.observations)
    assert isinstance(observations, dict) and list(observations) == ["discrete", "img", "vec"]
    for key in ("discrete", "img", "vec"):
        expected = np.stack(
            [segments[1][1]["observations"][key][:, 0], segments[0][1]["observations"][key][:, 1]], axis=1
        )
        assert observations[key].dtype == space[key].dtype
        np.testing.assert_array_equal(observations[key], expected)
    # The truncation observation of slot 1 (env 0) comes back as it was stored.
    np.testing.assert_array_equal(replayed.final_index, [[1, 0]])
    final = unpack_observations(replayed.final_observations)
    assert isinstance(final, dict)
    for key in final:
        np.testing.assert_array_equal(final[key], segments[1][1]["final"][key])


def test_replay_file_round_trips_dict_observations_exactly() -> None:
    space = DummyDictEnv().observation_space
    buffer = make_replay_buffer(
        n_stack=None, observation_space=space, buffer_size=10, n_steps=5, n_envs=2, n_actions=3, seed=0
    )
    for seed in (1, 2, 3):
        buffer.put(_dict_segment(space, 5, 2, seed)[0])
    file = io.BytesIO()
    save_buffer(buffer, file)
    file.seek(0)
    loaded = load_buffer(file)
    assert isinstance(loaded, SegmentReplayBuffer)
    assert loaded.obs_dtype == buffer.obs_dtype and loaded.obs_dtype.names == ("discrete", "img", "vec")
    np.testing.assert_array_equal(loaded.observations, buffer.observations)
    for (index, obs), (own_index, own_obs) in zip(loaded.final, buffer.final, strict=True):
        np.testing.assert_array_equal(index, own_index)
        np.testing.assert_array_equal(obs, own_obs)
    # Both continue the same sampling stream.
    first, second = loaded.sample(), buffer.sample()
    np.testing.assert_array_equal(first.observations, second.observations)


def test_observations_reach_the_replay_memory_as_the_env_returned_them() -> None:
    env = make_vec_env(CounterDictEnv, n_envs=2, seed=0)
    model = ACER("MultiInputPolicy", env, n_steps=4, buffer_size=8, replay_start=8, seed=0)
    model.learn(8)
    buffer = model.replay_buffer
    assert buffer is not None and buffer.num_in_buffer == 1
    stored = unpack_observations(buffer.observations[0])
    assert isinstance(stored, dict)
    # Step counts 0 1 2 | 0 1 of both envs (episodes of 3 steps), as float, uint8 and int.
    counts = np.array([0, 1, 2, 0, 1])
    np.testing.assert_array_equal(stored["count"][:, :, 0], np.stack([counts, counts], axis=1))
    np.testing.assert_array_equal(stored["img"][:, 0, 0, 0], counts.astype(np.uint8))
    np.testing.assert_array_equal(stored["parity"][:, 1], counts % 2)
    # The truncated episode's last observation (count 3) is kept for the bootstrap.
    index, final = buffer.final[0]
    np.testing.assert_array_equal(index, [[2, 0], [2, 1]])
    np.testing.assert_array_equal(final["count"][:, 0], [3.0, 3.0])
    np.testing.assert_array_equal(final["parity"], [1, 1])


def test_frame_stack_buffer_refuses_dict_observations() -> None:
    _, dtype = observation_layout(DummyDictEnv().observation_space)
    with pytest.raises(
        ValueError, match=r"cannot store Dict observations \(keys \['discrete', 'img', 'vec'\]\)"
    ):
        FrameStackReplayBuffer(
            buffer_size=10,
            n_steps=5,
            n_envs=1,
            obs_shape=(4, 84, 84),
            n_stack=4,
            n_actions=3,
            obs_dtype=dtype,
        )


# ---------------------------------------------------------------------- model and replay files


def _same_predictions(first: ACER, second: ACER, batch: Mapping[str, np.ndarray]) -> None:
    np.testing.assert_array_equal(
        first.action_probability(dict(batch)), second.action_probability(dict(batch))
    )
    np.testing.assert_array_equal(
        first.predict(dict(batch), deterministic=True)[0], second.predict(dict(batch), deterministic=True)[0]
    )


@pytest.mark.parametrize("policy", ["MultiInputPolicy", "MultiInputLstmPolicy"])
def test_save_load_gives_identical_predictions(tmp_path: Any, policy: str) -> None:
    env = make_vec_env(lambda: gym.wrappers.TimeLimit(DummyDictEnv(), 20), n_envs=2, seed=0)
    kwargs = _settings()
    if policy == "MultiInputLstmPolicy":
        kwargs["policy_kwargs"] = dict(SMALL_NET, net_arch=[16, "lstm"], n_lstm=8)
    model = ACER(policy, env, **kwargs)
    model.learn(20)
    model.save(tmp_path / "model")
    loaded = ACER.load(tmp_path / "model", env=env)
    assert loaded.observation_space == model.observation_space
    assert list(loaded.observation_space.spaces) == list(model.observation_space.spaces)  # type: ignore[attr-defined]
    assert type(loaded.policy) is type(model.policy)
    _same_predictions(model, loaded, _batch(env.observation_space, 5))
    loaded.learn(10)  # and it trains on


def test_the_key_order_of_the_space_survives_save_and_load(tmp_path: Any) -> None:
    """Keys in an order that is not sorted (a Dict made of pairs keeps it): the stored fields and the
    concatenated features follow it, so the loaded model must have it too."""

    class UnsortedCueEnv(CueEnv):
        def __init__(self) -> None:
            super().__init__()
            self.observation_space = spaces.Dict(
                [("noise", self.observation_space["noise"]), ("cue", self.observation_space["cue"])]
            )

    env = make_vec_env(UnsortedCueEnv, n_envs=2, seed=0)
    model = ACER("MultiInputPolicy", env, **_settings(policy_kwargs=None))
    model.learn(20)
    assert model.replay_buffer is not None and model.replay_buffer.obs_dtype.names == ("noise", "cue")
    model.save(tmp_path / "model", include=["replay_buffer"])
    loaded = ACER.load(tmp_path / "model", env=env)
    assert list(loaded.observation_space.spaces) == ["noise", "cue"]  # type: ignore[attr-defined]
    assert loaded.replay_buffer is not None and loaded.replay_buffer.obs_dtype.names == ("noise", "cue")
    _same_predictions(model, loaded, _batch(env.observation_space, 5))


def test_checkpoint_with_replay_buffer_round_trips(tmp_path: Any) -> None:
    env = make_vec_env(lambda: gym.wrappers.TimeLimit(DummyDictEnv(), 20), n_envs=2, seed=0)
    model = ACER("MultiInputPolicy", env, **_settings())
    model.learn(30)
    assert model.replay_buffer is not None
    model.save_replay_buffer(tmp_path / "replay")
    model.save(tmp_path / "checkpoint", include=["replay_buffer"])
    fresh = ACER("MultiInputPolicy", env, **_settings())
    fresh.load_replay_buffer(tmp_path / "replay")
    restored = ACER.load(tmp_path / "checkpoint", env=env)
    for other in (fresh, restored):
        assert other.replay_buffer is not None
        np.testing.assert_array_equal(other.replay_buffer.observations, model.replay_buffer.observations)
        assert other.replay_buffer.num_in_buffer == model.replay_buffer.num_in_buffer
    # Training goes on identically from the checkpoint.
    restored.learn(10, reset_num_timesteps=False)
    model.learn(10, reset_num_timesteps=False)
    _same_predictions(model, restored, _batch(env.observation_space, 5))


def test_vec_normalize_statistics_round_trip(tmp_path: Any) -> None:
    env = VecNormalize(
        make_vec_env(lambda: gym.wrappers.TimeLimit(DummyDictEnv(), 20), n_envs=2, seed=0),
        norm_obs_keys=["vec"],
    )
    model = ACER("MultiInputPolicy", env, **_settings())
    model.learn(20)
    model.save(tmp_path / "model")
    env.save(str(tmp_path / "stats.pkl"))
    loaded = ACER.load(tmp_path / "model")
    assert loaded.trained_with_vec_normalize
    stats = VecNormalize.load(str(tmp_path / "stats.pkl"), DummyVecEnv([lambda: DummyDictEnv()]))
    stats.training = False
    raw = _batch(env.observation_space, 3)
    normalized = stats.normalize_obs(raw)
    assert isinstance(normalized, dict)
    _same_predictions(model, loaded, normalized)


# ---------------------------------------------------------------------- what is refused


@pytest.mark.parametrize("policy", ["MlpPolicy", "CnnPolicy", "MlpLstmPolicy"])
def test_dict_observations_need_a_multi_input_policy(policy: str) -> None:
    with pytest.raises(UnsupportedSpaceError, match=f"You must use `MultiInputPolicy`.*not {policy}"):
        ACER(policy, DummyDictEnv(), **_settings(policy_kwargs=None))


def test_a_policy_with_a_dict_extractor_is_accepted() -> None:
    model = ACER(
        ACERPolicy,
        DummyDictEnv(vec_only=True),
        policy_kwargs=dict(features_extractor_class=CombinedExtractor),
    )
    assert isinstance(model.policy.features_extractor, CombinedExtractor)


def test_nested_dict_observations_are_refused() -> None:
    # As SB3 (its test_dict_nested): a NotImplementedError, which is an UnsupportedSpaceError here too.
    with pytest.raises(NotImplementedError):
        ACER("MultiInputPolicy", DummyDictEnv(nested_dict_obs=True))
    with pytest.raises(
        UnsupportedSpaceError,
        match=r"does not support nested observation spaces: key 'nested-dict' of the Dict observation space "
        r"is a Dict \(Dict\('nested-dict-discrete': Discrete\(4\)\)\)",
    ):
        ACER("MultiInputPolicy", DummyDictEnv(nested_dict_obs=True))


class _SpaceEnv(gym.Env):
    def __init__(self, observation_space: spaces.Space) -> None:
        self.observation_space = observation_space
        self.action_space = spaces.Discrete(2)


@pytest.mark.parametrize(
    ("space", "message"),
    [
        (
            spaces.Tuple((spaces.Discrete(2), spaces.Discrete(3))),
            r"ACER supports Box, Discrete, MultiDiscrete and MultiBinary observations, and Dict observations "
            r"of them \(with MultiInputPolicy\); got Tuple\(Discrete\(2\), Discrete\(3\)\)",
        ),
        (
            spaces.Dict({"a": spaces.Tuple((spaces.Discrete(2),))}),
            r"nested observation spaces: key 'a' of the Dict observation space is a Tuple",
        ),
        (
            spaces.Dict({"a": spaces.Discrete(3, start=1)}),
            r"key 'a' of the Dict observation space: ACER needs Discrete observation spaces that start at 0",
        ),
        (
            spaces.Dict({"a": spaces.Box(0, 1, shape=())}),
            r"key 'a' of the Dict observation space: ACER does not support Box observations of shape \(\)",
        ),
    ],
)
def test_unsupported_observation_spaces_are_named(space: spaces.Space, message: str) -> None:
    with pytest.raises(UnsupportedSpaceError, match=message) as raised:
        ACER("MultiInputPolicy", _SpaceEnv(space))
    # A kind of space ACER never takes is also SB3's NotImplementedError; a space it takes in another form
    # (starting at 0, with an axis) is not.
    assert isinstance(raised.value, NotImplementedError) == ("Tuple" in str(raised.value))


def test_non_finite_dict_observations_name_the_key() -> None:
    observations = {
        "img": np.zeros((2, 1, 2, 2), dtype=np.uint8),
        "vec": np.array([[0.0, 1.0], [np.inf, 0.0]]),
    }
    with pytest.raises(
        ValueError, match=r"env 1 returned a non-finite observation \(key 'vec'\) at num_timesteps=7"
    ):
        check_env_step(observations=observations, rewards=np.zeros(2), num_timesteps=7)
    terminal = {"img": np.zeros((1, 2, 2), dtype=np.uint8), "vec": np.array([np.nan, 0.0])}
    good = {key: value[:1].repeat(2, axis=0) for key, value in observations.items()}
    with pytest.raises(ValueError, match=r"env 0 returned a non-finite terminal observation \(key 'vec'\)"):
        check_env_step(
            observations=good,
            rewards=np.zeros(2),
            infos=[{"terminal_observation": terminal}, {}],
            num_timesteps=7,
        )
    check_env_step(observations=good, rewards=np.zeros(2), num_timesteps=7)


def test_learn_stops_on_a_non_finite_dict_observation() -> None:
    class NanEnv(CounterDictEnv):
        def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
            obs, *rest = super().step(action)
            obs["count"] = np.array([np.nan], dtype=np.float32)
            return (obs, *rest)  # type: ignore[return-value]

    model = ACER("MultiInputPolicy", NanEnv(), n_steps=4, seed=0)
    with pytest.raises(ValueError, match=r"env 0 returned a non-finite observation \(key 'count'\)"):
        model.learn(8)
    assert th.isfinite(th.cat([p.flatten() for p in model.policy.parameters()])).all()

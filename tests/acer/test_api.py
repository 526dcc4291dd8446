"""The public API: construction (envs, policies, spaces), predict and action_probability, and the image checks
of Cnn policies."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, FlattenExtractor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv

from sb3_acer import ACER, CnnPolicy, MlpPolicy, UnsupportedSpaceError
from sb3_acer.common.policies import DuelingHead
from tests.helpers.acer_envs import ObservationSpaceEnv

# ---------------------------------------------------------------------------------------------- construction


def test_env_as_id_string(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings)
    assert isinstance(model.get_env(), DummyVecEnv)
    assert model.n_envs == 1
    assert model.observation_space == gym.make("CartPole-v1").observation_space
    assert model.action_space == spaces.Discrete(2)


def test_gymnasium_env_is_wrapped_in_monitor_and_dummy_vec_env(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", gym.make("CartPole-v1"), **small_settings)
    env = model.get_env()
    assert isinstance(env, DummyVecEnv)
    assert isinstance(env.envs[0], Monitor)


def test_dummy_vec_env_with_three_envs_learns(small_settings: Mapping[str, Any]) -> None:
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1") for _ in range(3)])
    model = ACER("MlpPolicy", venv, **small_settings).learn(60)
    assert model.n_envs == 3
    assert model.num_timesteps == 60  # 4 segments of 5 steps x 3 envs
    assert model.replay_buffer is not None and model.replay_buffer.n_envs == 3


def test_subproc_vec_env_learns(small_settings: Mapping[str, Any]) -> None:
    venv = SubprocVecEnv([lambda: gym.make("CartPole-v1") for _ in range(2)])
    try:
        model = ACER("MlpPolicy", venv, **small_settings).learn(60)
        assert model.num_timesteps == 60
        assert model._n_replay_updates > 0
        actions, _ = model.predict(venv.reset())
        assert actions.shape == (2,)
    finally:
        venv.close()


def test_policy_by_class_and_by_name() -> None:
    assert ACER(MlpPolicy, "CartPole-v1").policy_class is MlpPolicy
    assert ACER("MlpPolicy", "CartPole-v1").policy_class is MlpPolicy
    assert isinstance(ACER("MlpPolicy", "CartPole-v1").policy, MlpPolicy)
    assert ACER("CnnPolicy", "CartPole-v1", _init_setup_model=False).policy_class is CnnPolicy


class _ActionSpaceEnv(gym.Env):
    def __init__(self, action_space: spaces.Space) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = action_space


@pytest.mark.parametrize(
    ("action_space", "name"),
    [
        (spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32), "Box"),
        (spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32), "Box"),
        (spaces.MultiDiscrete([2, 3]), "MultiDiscrete"),
        (spaces.MultiBinary(3), "MultiBinary"),
    ],
)
def test_non_discrete_action_spaces_take_the_stochastic_dueling_policy(
    action_space: spaces.Space, name: str
) -> None:
    # Issue 46: these were refused; Dict and Tuple still are (tests/acer/test_action_spaces.py), and so are
    # unbounded Box actions, which SB3's convention (the env gets them clipped) cannot serve.
    if isinstance(action_space, spaces.Box) and not np.isfinite(action_space.high).all():
        with pytest.raises(UnsupportedSpaceError, match=r"ACER needs Box action spaces with finite bounds"):
            ACER("MlpPolicy", _ActionSpaceEnv(action_space))
        return
    model = ACER("MlpPolicy", _ActionSpaceEnv(action_space))
    assert model.policy_class is MlpPolicy  # the saved name; the network is built for the space
    assert type(model.policy) is MlpPolicy and isinstance(model.policy.head, DuelingHead)  # the dueling head
    assert type(model.action_space).__name__ == name


def test_discrete_spaces_with_non_zero_start_are_refused() -> None:
    with pytest.raises(
        UnsupportedSpaceError, match=r"Discrete action spaces that start at 0, got Discrete\(3, start=1\)"
    ):
        ACER("MlpPolicy", _ActionSpaceEnv(spaces.Discrete(3, start=1)))
    env = ObservationSpaceEnv(spaces.MultiDiscrete([2, 3], start=[0, 1]))
    with pytest.raises(UnsupportedSpaceError, match="MultiDiscrete observation spaces that start at 0"):
        ACER("MlpPolicy", env)


@pytest.mark.parametrize("policy", ["MlpPolicy", MlpPolicy])
def test_dict_observation_space_is_refused(policy: str | type[MlpPolicy]) -> None:
    # Dict observations need MultiInputPolicy (tests/acer/test_dict_observations.py), as in SB3.
    env = ObservationSpaceEnv(spaces.Dict({"a": spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)}))
    with pytest.raises(UnsupportedSpaceError, match=r"You must use `MultiInputPolicy`.*not MlpPolicy"):
        ACER(policy, env)


def test_num_procs_sets_torch_threads() -> None:
    # The autouse fixture in conftest.py restores the thread count afterwards.
    ACER("MlpPolicy", "CartPole-v1", num_procs=2, _init_setup_model=False)
    assert th.get_num_threads() == 2
    ACER("MlpPolicy", "CartPole-v1", num_procs=1, _init_setup_model=False)
    assert th.get_num_threads() == 1


# ---------------------------------------------------------------------------------------------- predict


@pytest.fixture(scope="module")
def cartpole_model(small_settings: Mapping[str, Any]) -> ACER:
    return ACER("MlpPolicy", "CartPole-v1", **small_settings).learn(100)


def test_predict_single_and_batch_shapes(cartpole_model: ACER) -> None:
    obs = np.array([0.01, -0.02, 0.03, 0.04], dtype=np.float32)
    action, state = cartpole_model.predict(obs)
    assert state is None
    assert action.shape == ()
    assert action in (0, 1)
    batch = np.random.default_rng(0).normal(size=(7, 4)).astype(np.float32)
    actions, _ = cartpole_model.predict(batch)
    assert actions.shape == (7,)
    assert set(actions.tolist()) <= {0, 1}


def test_predict_deterministic_is_argmax(cartpole_model: ACER) -> None:
    batch = np.random.default_rng(1).normal(size=(50, 4)).astype(np.float32) * 2
    actions, _ = cartpole_model.predict(batch, deterministic=True)
    probs = cartpole_model.action_probability(batch)
    np.testing.assert_array_equal(actions, probs.argmax(axis=1))


def test_predict_accepts_sb2_mask_alias(cartpole_model: ACER) -> None:
    obs = np.zeros((1, 4), dtype=np.float32)
    action, state = cartpole_model.predict(obs, mask=np.array([True]), deterministic=True)
    assert state is None
    assert action.shape == (1,)
    assert action[0] == cartpole_model.predict(obs, deterministic=True)[0][0]


@pytest.mark.parametrize("shape", [(3,), (2, 3), (4, 1), ()])
def test_predict_wrong_observation_shape_raises(cartpole_model: ACER, shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="observation"):
        cartpole_model.predict(np.zeros(shape, dtype=np.float32))
    with pytest.raises(ValueError, match="observation"):
        cartpole_model.action_probability(np.zeros(shape, dtype=np.float32))


@pytest.mark.parametrize(
    ("observation", "message"),
    [
        # SB3's predict fails inside torch on both ("cannot reshape tensor of 0 elements", "invalid values")
        (
            np.zeros((0, 4), dtype=np.float32),
            r"^observation is an empty batch, of shape \(0, 4\): give at least one",
        ),
        (
            np.full(4, 1e308),
            r"^observation holds a value float32 cannot hold at index \(0,\): 1e\+308 \(the networks "
            r"compute in float32, where it is inf\)$",
        ),
        (
            np.array([[0.0, 0.0, -4e38, 0.0]]),
            r"^observation holds a value float32 cannot hold at index \(0, 2\)",
        ),
        (np.array([0.0, 0.0, np.inf, 0.0]), r"^observation holds a non-finite value at index \(2,\): inf$"),
    ],
)
def test_predict_refuses_an_empty_batch_and_values_float32_cannot_hold(
    cartpole_model: ACER, observation: np.ndarray, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        cartpole_model.predict(observation)
    with pytest.raises(ValueError, match=message):
        cartpole_model.action_probability(observation)
    assert cartpole_model.predict(np.full(4, 1e30))[0] in (0, 1)  # a large float64 that float32 holds


def test_action_probability_shapes_and_logp(cartpole_model: ACER) -> None:
    obs = np.array([0.01, -0.02, 0.03, 0.04], dtype=np.float32)
    probs = cartpole_model.action_probability(obs)
    assert probs.shape == (2,)
    assert probs.sum() == pytest.approx(1.0, abs=1e-6)

    batch = np.random.default_rng(2).normal(size=(10, 4)).astype(np.float32)
    batch_probs = cartpole_model.action_probability(batch)
    assert batch_probs.shape == (10, 2)
    np.testing.assert_allclose(batch_probs.sum(axis=1), 1.0, atol=1e-6)

    actions = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 0])
    chosen = cartpole_model.action_probability(batch, actions=actions)
    assert chosen.shape == (10, 1)
    np.testing.assert_array_equal(chosen[:, 0], batch_probs[np.arange(10), actions])
    logp = cartpole_model.action_probability(batch, actions=actions, logp=True)
    assert logp.shape == (10, 1)
    np.testing.assert_allclose(np.exp(logp), chosen, rtol=1e-6)

    single = cartpole_model.action_probability(obs, actions=1)
    assert single.shape == (1,)
    assert single[0] == probs[1]
    single_logp = cartpole_model.action_probability(obs, actions=np.array([1]), logp=True)
    assert np.exp(single_logp[0]) == pytest.approx(probs[1], rel=1e-6)


def test_action_probability_logp_without_actions_returns_log_probabilities() -> None:
    """``action_probability(obs, logp=True)`` gives the log of every action's probability."""
    model = ACER("MlpPolicy", "CartPole-v1", seed=0)
    obs = np.array([0.1, -0.2, 0.03, 0.4], dtype=np.float32)
    probs = model.action_probability(obs)
    logp = model.action_probability(obs, logp=True)
    assert logp.shape == (2,)
    np.testing.assert_allclose(logp, np.log(probs), rtol=1e-6)
    assert (logp < 0).all()


def test_action_probability_rejects_bad_actions(cartpole_model: ACER) -> None:
    batch = np.zeros((3, 4), dtype=np.float32)
    with pytest.raises(ValueError, match="got 2 actions for 3 observation"):
        cartpole_model.action_probability(batch, actions=np.array([0, 1]))
    with pytest.raises(ValueError, match="actions must be integers in \\[0, 2\\)"):
        cartpole_model.action_probability(batch, actions=np.array([0, 1, 2]))


def test_vec_env_type_is_kept(cartpole_model: ACER) -> None:
    assert isinstance(cartpole_model.get_env(), VecEnv)


# ---------------------------------------------------------------- observation spaces the networks cannot take


@pytest.mark.parametrize(
    ("observation_space", "message"),
    [
        (spaces.Box(-1.0, 1.0, shape=(), dtype=np.float32), r"Box observations of shape \(\) \(a scalar\)"),
        (
            spaces.MultiDiscrete([[2, 3], [4, 2]]),
            r"MultiDiscrete observations of one dimension, got nvec of shape",
        ),
    ],
)
def test_observation_spaces_the_networks_cannot_take_are_refused_up_front(
    observation_space: spaces.Space, message: str
) -> None:
    with pytest.raises(UnsupportedSpaceError, match=message):
        ACER("MlpPolicy", ObservationSpaceEnv(observation_space))


# ------------------------------------------------------------------------------------ images for Cnn policies

FLOAT_IMAGE_LAST = spaces.Box(0.0, 1.0, (36, 36, 1), np.float32)
FLOAT_IMAGE_FIRST = spaces.Box(0.0, 1.0, (1, 36, 36), np.float32)
CNN_NEEDS = r"needs image observations: uint8 \[H, W, C\] or \[C, H, W\]"


@pytest.mark.parametrize("policy", ["CnnPolicy", "CnnLstmPolicy", "CnnLnLstmPolicy"])
@pytest.mark.parametrize(
    ("observation_space", "policy_kwargs", "message"),
    [
        (FLOAT_IMAGE_LAST, {}, CNN_NEEDS + r".*normalize_images=False.*got Box\(0.0, 1.0, \(36, 36, 1\)"),
        (spaces.Box(-1.0, 1.0, (6,), np.float32), {}, CNN_NEEDS),
        # Float images are not transposed: they must come channel-first.
        (FLOAT_IMAGE_LAST, {"normalize_images": False}, r"float images must be channel-first \[C, H, W\]"),
        # ... also where the network would build, taking the height for the channels (found by review).
        (
            spaces.Box(0.0, 1.0, (40, 41, 39), np.float32),
            {"normalize_images": False},
            r"float images must be channel-first \[C, H, W\]",
        ),
    ],
)
def test_a_cnn_policy_names_the_observations_it_needs(
    policy: str, observation_space: spaces.Box, policy_kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(UnsupportedSpaceError, match=message):
        ACER(policy, ObservationSpaceEnv(observation_space), n_steps=4, policy_kwargs=policy_kwargs)


class _VectorFeatures(BaseFeaturesExtractor):
    def __init__(self, observation_space: gym.spaces.Box) -> None:
        super().__init__(observation_space, features_dim=8)
        self.linear = th.nn.Linear(int(np.prod(observation_space.shape)), 8)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.linear(observations.flatten(1))


class _VectorCnnPolicy(CnnPolicy):
    """A CnnPolicy subclass whose own default extractor takes vectors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("features_extractor_class", _VectorFeatures)
        super().__init__(*args, **kwargs)


class _ScaledCnnPolicy(CnnPolicy):
    """A CnnPolicy subclass for images the env already scales."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["normalize_images"] = False
        super().__init__(*args, **kwargs)


@pytest.mark.parametrize("shape", [(48, 40, 40), (12, 36, 64), (1, 36, 36)])
def test_channel_first_float_images_with_many_channels_are_taken(shape: tuple[int, ...]) -> None:
    # Found by review (stop 41): SB3's guess (the smallest side is the channels) refused (48, 40, 40).
    space = spaces.Box(0.0, 1.0, shape, np.float32)
    model = ACER(
        "CnnPolicy", ObservationSpaceEnv(space), n_steps=4, policy_kwargs={"normalize_images": False}
    )
    assert model.policy.features_extractor.cnn[0].in_channels == shape[0]


@pytest.mark.parametrize(
    ("policy", "observation_space"),
    [(_VectorCnnPolicy, spaces.Box(-1.0, 1.0, (6,), np.float32)), (_ScaledCnnPolicy, FLOAT_IMAGE_FIRST)],
)
def test_cnn_policy_subclasses_that_build_are_not_second_guessed(
    policy: type, observation_space: spaces.Box
) -> None:
    # Found by review (stop 41): the check read the defaults of CnnPolicy, not what the subclass builds.
    model = ACER(policy, ObservationSpaceEnv(observation_space), n_steps=4, buffer_size=40, replay_start=8)
    assert model.learn(16).num_timesteps == 16


@pytest.mark.parametrize("policy", ["CnnPolicy", "CnnLstmPolicy"])
def test_a_cnn_policy_learns_from_scaled_channel_first_float_images(policy: str) -> None:
    model = ACER(
        policy,
        ObservationSpaceEnv(FLOAT_IMAGE_FIRST),
        n_steps=4,
        buffer_size=40,
        replay_start=8,
        seed=0,
        policy_kwargs={"normalize_images": False},
    )
    model.learn(40)
    assert model.num_timesteps == 40 and model._n_updates > 0


class DropoutExtractor(FlattenExtractor):
    """A features extractor with dropout: its output differs between training and evaluation mode."""

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        super().__init__(observation_space)
        self.dropout = th.nn.Dropout(0.5)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return self.dropout(super().forward(observations))


def test_action_probability_evaluates_the_policy_in_evaluation_mode() -> None:
    model = ACER(
        "MlpPolicy",
        "CartPole-v1",
        n_steps=5,
        seed=0,
        policy_kwargs=dict(features_extractor_class=DropoutExtractor),
    )
    model.learn(20)
    obs = np.full((3, 4), 0.3, dtype=np.float32)
    first = model.action_probability(obs)
    for _ in range(5):
        np.testing.assert_array_equal(model.action_probability(obs), first)


@pytest.mark.parametrize("policy", ["MlpPolicy", "MlpLstmPolicy"])
def test_policy_save_and_load_keep_the_features_extractor(policy: str, tmp_path: pathlib.Path) -> None:
    """SB3's policy.save / Policy.load (not ACER's model files): the loaded policy is the same network."""
    kwargs = dict(features_extractor_class=DropoutExtractor)
    model = ACER(policy, "CartPole-v1", n_steps=5, seed=0, policy_kwargs=kwargs)
    model.policy.save(tmp_path / "policy.pth")
    loaded = type(model.policy).load(tmp_path / "policy.pth")
    assert type(loaded.features_extractor) is DropoutExtractor
    saved, restored = model.policy.state_dict(), loaded.state_dict()
    assert saved.keys() == restored.keys()
    assert all(th.equal(saved[key], restored[key]) for key in saved)


# ------------------------------------------------------------------ share_features_extractor (SB3's option)


def test_a_separate_critic_extractor_trains_and_round_trips(
    small_settings: Mapping[str, Any], tmp_path: pathlib.Path
) -> None:
    model = ACER(
        "MlpPolicy", "CartPole-v1", policy_kwargs=dict(share_features_extractor=False), **small_settings
    )
    policy = model.policy
    assert not policy.share_features_extractor
    assert policy.critic_features_extractor is not policy.features_extractor
    critic_ids = {id(p) for p in policy.critic_parameters()}
    assert all(id(p) in critic_ids for p in policy.critic_features_extractor.parameters())
    assert not any(id(p) in critic_ids for p in policy.features_extractor.parameters())
    model.learn(200)
    model.save(tmp_path / "model.zip")
    loaded = ACER.load(tmp_path / "model.zip")
    assert not loaded.policy.share_features_extractor
    mine, theirs = policy.state_dict(), loaded.policy.state_dict()
    assert list(mine) == list(theirs) and all(th.equal(mine[key], theirs[key]) for key in mine)
    obs = np.zeros((3, 4), dtype=np.float32)
    np.testing.assert_array_equal(loaded.action_probability(obs), model.action_probability(obs))


def test_a_separate_critic_extractor_feeds_only_the_critic() -> None:
    """The dueling critic's latent is the critic extractor's features; the actor's statistics ignore it."""
    th.manual_seed(0)
    box = spaces.Box(-1, 1, (3,), np.float32)
    policy = MlpPolicy(box, spaces.Box(-1, 1, (2,), np.float32), share_features_extractor=False)
    obs = th.randn(5, 3)
    with th.no_grad():
        output = policy.evaluate(obs)
        th.testing.assert_close(output.critic_latent, policy.critic_features_extractor(obs), rtol=0, atol=0)
        stats = policy.statistics(obs)
        for parameter in policy.critic_parameters():
            parameter.add_(1.0)
        th.testing.assert_close(policy.statistics(obs), stats, rtol=0, atol=0)
        assert not th.equal(policy.evaluate(obs).values, output.values)
    image = spaces.Box(0, 255, (1, 36, 36), np.uint8)
    cnn = CnnPolicy(image, spaces.Discrete(2), share_features_extractor=False)
    critic_keys = [key for key in cnn.state_dict() if key.startswith("critic_features_extractor.cnn.")]
    assert len(critic_keys) == 6  # NatureCNN's three convolutions, saved beside the actor's
    critic_ids = {id(p) for p in cnn.critic_parameters()}
    assert all(id(p) in critic_ids for p in cnn.critic_features_extractor.parameters())
    assert not any(id(p) in critic_ids for p in cnn.features_extractor.parameters())


def test_the_shared_extractor_is_the_default_and_adds_nothing_to_the_state_dict() -> None:
    policy = MlpPolicy(spaces.Box(-1, 1, (3,), np.float32), spaces.Discrete(2))
    assert policy.share_features_extractor and not hasattr(policy, "critic_features_extractor")
    assert not any(key.startswith("critic_") for key in policy.state_dict())
    assert "share_features_extractor" not in policy._get_constructor_parameters()


def test_a_separate_critic_extractor_is_refused_with_shared_layers_and_by_recurrent_policies() -> None:
    with pytest.raises(
        ValueError, match=r"share_features_extractor=False gives the critic its own .* got \[64\]"
    ):
        MlpPolicy(
            spaces.Box(-1, 1, (3,), np.float32),
            spaces.Discrete(2),
            net_arch=[64],
            share_features_extractor=False,
        )
    with pytest.raises(ValueError, match=r"Unknown keywords for policy: \['share_features_extractor'\]"):
        ACER("MlpLstmPolicy", "CartPole-v1", policy_kwargs=dict(share_features_extractor=False))

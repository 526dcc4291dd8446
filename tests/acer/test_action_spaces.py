"""ACER on Box, MultiDiscrete and MultiBinary actions: SB3's identity environments learn, and predict,
action_probability, save / load and the replay memory work for float and multi-dimensional actions."""

from __future__ import annotations

import io
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.envs import (
    IdentityEnv,
    IdentityEnvBox,
    IdentityEnvMultiBinary,
    IdentityEnvMultiDiscrete,
)
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor

from sb3_acer import ACER, UnsupportedSpaceError
from sb3_acer.common.policies import ACERPolicy as SDNPolicy
from sb3_acer.common.policies import CategoricalHead, MlpPolicy
from sb3_acer.common.rollout import collect_segment

SDNMlpPolicy = ACER.taken_policy_aliases["SDNMlpPolicy"]

IDENTITY = {
    "box": lambda: IdentityEnvBox(eps=0.5),
    "multidiscrete": lambda: IdentityEnvMultiDiscrete(dim=2),
    "multibinary": lambda: IdentityEnvMultiBinary(dim=2),
}


@pytest.mark.parametrize("name", IDENTITY)
def test_mlp_policy_acts_in_every_action_space_with_the_stochastic_dueling_network(name: str) -> None:
    assert isinstance(ACER("MlpPolicy", IDENTITY[name]()).policy, SDNPolicy)


# Slow: SB3's identity tests in tests/sb3_generic/test_identity.py (Box, MultiDiscrete and MultiBinary, to
# the same threshold) keep ACER's learning on these spaces in the default suite.
@pytest.mark.slow
@pytest.mark.parametrize(("name", "steps"), [("box", 3000), ("multidiscrete", 1500), ("multibinary", 1500)])
def test_identity_envs_learn(name: str, steps: int) -> None:
    """SB3's identity tests' threshold: 90 of 100 over 20 deterministic episodes."""
    model = ACER(
        "MlpPolicy",
        IDENTITY[name](),
        n_steps=5,
        replay_start=50,
        buffer_size=2000,
        seed=0,
        learning_rate=1e-3,
    )
    assert isinstance(model.policy, SDNPolicy)
    model.learn(steps)
    mean, _ = evaluate_policy(model, Monitor(IDENTITY[name]()), n_eval_episodes=20)
    assert mean >= 90


class _SpaceEnv(gym.Env):
    def __init__(self, action_space: spaces.Space) -> None:
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = action_space

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action):
        self.last_action = action
        return self.observation_space.sample(), 0.0, False, False, {}


@pytest.mark.parametrize(
    "action_space",
    [spaces.Dict({"a": spaces.Discrete(2)}), spaces.Tuple((spaces.Discrete(2), spaces.Discrete(3)))],
)
def test_dict_and_tuple_action_spaces_are_refused_by_name(action_space: spaces.Space) -> None:
    name = type(action_space).__name__
    with pytest.raises(UnsupportedSpaceError, match=f"{name} actions are not supported") as info:
        ACER("MlpPolicy", _SpaceEnv(action_space))
    assert str(action_space) in str(info.value)


def test_the_sdn_names_of_0_1_are_the_policies_that_take_every_action_space() -> None:
    assert SDNMlpPolicy is MlpPolicy
    model = ACER("SDNMlpPolicy", _SpaceEnv(spaces.Discrete(3)))
    assert type(model.policy) is MlpPolicy and isinstance(model.policy.head, CategoricalHead)


def test_box_acts_unbounded_env_gets_clipped_actions_replay_stores_unclipped(small_settings) -> None:
    space = spaces.Box(-0.1, 0.1, shape=(2, 3), dtype=np.float32)
    model = ACER("MlpPolicy", _SpaceEnv(space), **small_settings)
    model._setup_learn(10)
    result = collect_segment(
        env=model.env,
        policy=model.policy,
        n_steps=5,
        last_obs=model._last_obs,
        last_episode_starts=np.ones(1, dtype=bool),
        on_step=lambda _: True,
    )
    segment = result.segment
    assert segment.actions.shape == (5, 1, 6) and segment.actions.dtype == np.float32
    assert np.abs(segment.actions).max() > 0.1  # sigma = 1: the stored draws leave the bounds
    assert segment.mu_probs.shape == (5, 1, 12)  # mean and log-std
    sent = model.env.envs[0].unwrapped.last_action
    assert sent.shape == (2, 3) and np.abs(sent).max() <= 0.1
    np.testing.assert_array_equal(sent, np.clip(segment.actions[-1, 0].reshape(2, 3), -0.1, 0.1))
    action, _ = model.predict(np.zeros(2, dtype=np.float32))
    assert action.shape == (2, 3) and np.abs(action).max() <= 0.1


def test_paper_fixed_sigma(small_settings) -> None:
    model = ACER("SDNMlpPolicy", IdentityEnvBox(eps=0.5), policy_kwargs=dict(fixed_std=0.3), **small_settings)
    assert "log_std" not in dict(model.policy.named_parameters())
    model.learn(100)
    stats = model.action_probability(np.zeros(1, dtype=np.float32))
    np.testing.assert_allclose(stats[1:], np.log(0.3), rtol=1e-6)


@pytest.mark.parametrize("policy", ["MlpPolicy", "SDNMlpPolicy"])
def test_the_sdn_keywords_are_taken_by_the_policy_names_a_box_space_builds(policy, small_settings) -> None:
    """``MlpPolicy`` builds an SDN policy for Box actions: its keywords (``fixed_std``, ``log_std_init``)
    are checked against that policy, not the Discrete one, and survive a save / load round trip."""
    kwargs = dict(fixed_std=0.3, net_arch=dict(pi=[8], qf=[8]))
    model = ACER(policy, IdentityEnvBox(eps=0.5), policy_kwargs=kwargs, **small_settings)
    assert model.policy.fixed_std == 0.3 and "log_std" not in dict(model.policy.named_parameters())
    buffer = io.BytesIO()
    model.save(buffer)
    buffer.seek(0)
    assert ACER.load(buffer).policy.fixed_std == 0.3


def test_the_sdn_keywords_are_refused_for_discrete_actions(small_settings) -> None:
    with pytest.raises(
        ValueError, match=r"Unknown keywords for policy: \['fixed_std'\]; accepted: \['activation_fn'"
    ):
        ACER("MlpPolicy", IdentityEnv(4), policy_kwargs=dict(fixed_std=0.3), **small_settings)


def test_a_misspelt_sdn_keyword_is_refused_naming_the_accepted_ones(small_settings) -> None:
    with pytest.raises(
        ValueError, match=r"Unknown keywords for policy: \['fixd_std'\]; accepted: .*'fixed_std'"
    ):
        ACER("MlpPolicy", IdentityEnvBox(eps=0.5), policy_kwargs=dict(fixd_std=0.3), **small_settings)


def test_action_probability_is_the_density_for_box(small_settings) -> None:
    model = ACER("MlpPolicy", IdentityEnvBox(eps=0.5), **small_settings)
    obs = np.array([[0.2], [-0.5]], dtype=np.float32)
    stats = model.action_probability(obs)
    assert stats.shape == (2, 2)
    actions = np.array([[0.3], [1.7]], dtype=np.float32)
    density = model.action_probability(obs, actions=actions)
    normal = th.distributions.Normal(th.as_tensor(stats[:, :1]), th.as_tensor(stats[:, 1:]).exp())
    expected = normal.log_prob(th.as_tensor(actions)).exp().numpy()
    np.testing.assert_allclose(density, expected, rtol=1e-5)
    np.testing.assert_allclose(
        model.action_probability(obs, actions=actions, logp=True), np.log(expected), rtol=1e-5
    )


@pytest.mark.parametrize("name", sorted(IDENTITY))
def test_save_load_round_trip_predicts_the_same(name, small_settings, tmp_path) -> None:
    model = ACER("MlpPolicy", IDENTITY[name](), **small_settings)
    model.learn(60)
    model.save(tmp_path / "model.zip", include=["replay_buffer"])
    loaded = ACER.load(tmp_path / "model.zip", env=IDENTITY[name]())
    assert type(loaded.policy) is type(model.policy)
    obs = np.stack([model.observation_space.sample() for _ in range(8)])
    first, _ = model.predict(obs, deterministic=True)
    again, _ = loaded.predict(obs, deterministic=True)
    np.testing.assert_array_equal(first, again)
    np.testing.assert_array_equal(model.action_probability(obs), loaded.action_probability(obs))
    assert loaded.replay_buffer is not None and len(loaded.replay_buffer) == len(model.replay_buffer)
    stored, restored = model.replay_buffer.state_dict(), loaded.replay_buffer.state_dict()
    np.testing.assert_array_equal(stored["actions"], restored["actions"])
    assert restored["actions"].dtype == stored["actions"].dtype
    np.testing.assert_array_equal(stored["mu_probs"], restored["mu_probs"])
    loaded.learn(20)  # the restored memory replays


def test_cnn_policy_on_images_with_box_actions(small_settings) -> None:
    from stable_baselines3.common.envs import FakeImageEnv

    SDNCnnPolicy = ACER.taken_policy_aliases["SDNCnnPolicy"]

    model = ACER("CnnPolicy", FakeImageEnv(action_dim=2, discrete=False), **small_settings)
    assert type(model.policy) is SDNCnnPolicy
    model.learn(30)
    action, _ = model.predict(model.observation_space.sample())
    assert action.shape == model.action_space.shape and np.abs(action).max() <= 1


def test_q_lr_ratio_splits_the_stochastic_dueling_critic(small_settings) -> None:
    model = ACER("MlpPolicy", IdentityEnvBox(eps=0.5), q_lr_ratio=3.0, **small_settings)
    critic = {id(p) for p in model.policy.critic_parameters()}
    groups = model.optimizer.param_groups
    assert len(groups) == 2 and {id(p) for p in groups[1]["params"]} == critic
    assert "log_std" in dict(model.policy.named_parameters())
    assert id(model.policy.log_std) not in critic
    model.learn(30)


def test_a_replay_memory_of_other_actions_is_refused(small_settings, tmp_path) -> None:
    # Box((1,)) and MultiBinary(1) both store one action and two statistics per step: the dtype differs.
    box = ACER("MlpPolicy", _SpaceEnv(spaces.Box(-1.0, 1.0, (1,))), **small_settings)
    box.learn(20)
    box.save_replay_buffer(tmp_path / "box.pkl")
    binary = ACER("MlpPolicy", _SpaceEnv(spaces.MultiBinary(1)), **small_settings)
    with pytest.raises(
        ValueError, match=r"the replay buffer has action_dtype=dtype\('float32'\) but this model needs"
    ):
        binary.load_replay_buffer(tmp_path / "box.pkl")
    discrete = ACER("MlpPolicy", _SpaceEnv(spaces.Discrete(2)), **small_settings)  # as many as 2 statistics
    with pytest.raises(
        ValueError, match=r"the replay buffer has action_size=1 but this model needs action_size=0"
    ):
        discrete.load_replay_buffer(tmp_path / "box.pkl")
    box.load_replay_buffer(tmp_path / "box.pkl")


class DictObservationBoxActions(gym.Env):
    """An image and a vector key, two continuous actions, rewarded for actions near 0."""

    observation_space = spaces.Dict(
        {"img": spaces.Box(0, 255, (36, 36, 1), np.uint8), "vec": spaces.Box(-1, 1, (3,), np.float32)}
    )
    action_space = spaces.Box(-1, 1, (2,), np.float32)

    def reset(self, seed: int | None = None, options: dict | None = None) -> tuple[dict, dict]:
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action: np.ndarray) -> tuple[dict, float, bool, bool, dict]:
        self.t += 1
        return self.observation_space.sample(), -float(np.sum(action**2)), self.t >= 20, False, {}


def test_dict_observations_with_box_actions_train_save_and_load(tmp_path: Any) -> None:
    SDNMultiInputPolicy = ACER.taken_policy_aliases["SDNMultiInputPolicy"]

    model = ACER("MultiInputPolicy", DictObservationBoxActions(), n_steps=5, replay_start=10, seed=0)
    assert type(model.policy) is SDNMultiInputPolicy
    model.learn(100)
    model.save(tmp_path / "model.zip")
    loaded = ACER.load(tmp_path / "model.zip")
    observation = DictObservationBoxActions().observation_space.sample()
    np.testing.assert_array_equal(
        model.predict(observation, deterministic=True)[0], loaded.predict(observation, deterministic=True)[0]
    )
    assert model.action_probability(observation).shape == (4,)  # the mean and the log-std of 2 actions


def test_the_listed_policy_names_are_sb3s_and_the_sdn_names_still_build_and_load(
    small_settings, tmp_path, capsys
) -> None:
    from sb3_acer.cli import main

    names = ["CnnLnLstmPolicy", "CnnLstmPolicy", "CnnPolicy", "MlpLnLstmPolicy", "MlpLstmPolicy", "MlpPolicy"]
    assert sorted(ACER.policy_aliases) == sorted([*names, "MultiInputLstmPolicy", "MultiInputPolicy"])
    assert main(["train", "-h"]) == 0
    usage = "".join(capsys.readouterr().out.split())
    assert "--policy{" + ",".join(sorted(ACER.policy_aliases)) + "}" in usage and "SDN" not in usage
    model = ACER("SDNMlpPolicy", IDENTITY["box"](), **small_settings)  # old code names the class
    assert type(model.policy) is SDNMlpPolicy
    model.save(tmp_path / "model.zip")
    loaded = ACER.load(tmp_path / "model.zip")
    assert loaded.policy_class is SDNMlpPolicy and type(loaded.policy) is SDNMlpPolicy

"""SB2 compatibility: the cases SB2's own test suite ran on ACER (section 7 of the behaviour notes), custom
policies and ``net_arch`` as SB2 took them, the SB2 docs example, and SB2's positional arguments."""

from __future__ import annotations

import inspect
import pathlib
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.envs import IdentityEnv
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv
from torch import nn

from sb3_acer import ACER, MlpPolicy


def identity_model(dim: int, total_timesteps: int, **kwargs: int) -> tuple[ACER, DummyVecEnv]:
    env = DummyVecEnv([lambda: Monitor(IdentityEnv(dim))])
    model = ACER(MlpPolicy, env, seed=0, n_steps=1, replay_ratio=1, **kwargs)
    return model.learn(total_timesteps), env


def check_identity_probabilities(model: ACER, dim: int) -> None:
    obs = np.array([dim - 1])
    probs = model.action_probability(obs)
    assert probs.shape == (1, dim)
    chosen = model.action_probability(obs, actions=np.array([dim - 1]))
    assert chosen.shape == (1, 1)
    assert chosen[0, 0] == probs[0, dim - 1]
    logp = model.action_probability(obs, actions=np.array([dim - 1]), logp=True)
    assert np.exp(logp[0, 0]) == pytest.approx(chosen[0, 0], rel=1e-6)


@pytest.mark.slow
def test_identity_discrete() -> None:
    """SB2's test_identity['acer']: IdentityEnv(10), n_steps=1, replay_ratio=1, 15000 steps (60-110 s)."""
    model, env = identity_model(10, 15_000)
    mean_reward, _ = evaluate_policy(model, env, n_eval_episodes=20, deterministic=True)
    assert mean_reward > 90  # out of 100; a random policy gets 10
    check_identity_probabilities(model, 10)


def test_identity_discrete_small() -> None:
    """The same case made fast: 4 actions, replay from 100 steps, 1000 steps (reaches 100 on seeds 0-2)."""
    model, env = identity_model(4, 1_000, replay_start=100)
    assert model._n_replay_updates > 500
    mean_reward, _ = evaluate_policy(model, env, n_eval_episodes=20, deterministic=True)
    assert mean_reward > 90  # out of 100; a random policy gets 25
    check_identity_probabilities(model, 4)


def test_predicted_action_shape_follows_the_observation() -> None:
    """SB2's test_auto_vec_detection: shape () for one observation, (1,) for a batch of one."""
    model = ACER(MlpPolicy, IdentityEnv(10), n_steps=5, replay_ratio=0)
    obs, _ = IdentityEnv(10).reset(seed=0)
    assert model.predict(obs)[0].shape == ()
    venv = DummyVecEnv([lambda: IdentityEnv(10)])
    assert model.predict(venv.reset())[0].shape == (1,)


class CustomPolicy(MlpPolicy):
    """SB2's test_custom_policy: shared layer, then separate towers."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        kwargs.setdefault("net_arch", [8, dict(pi=[8, 8], qf=[8, 8])])
        super().__init__(*args, **kwargs)


def test_sb2_custom_policy_class_trains_saves_and_loads(
    tmp_path: pathlib.Path, small_settings: Mapping[str, Any]
) -> None:
    model = ACER(CustomPolicy, "CartPole-v1", **small_settings).learn(100)
    obs = np.zeros(4, dtype=np.float32)
    for _ in range(100):
        action, _ = model.predict(obs)
        assert action in (0, 1)
        assert model.action_probability(obs).shape == (2,)
    model.save(tmp_path / "custom")
    loaded = ACER.load(tmp_path / "custom", policy=CustomPolicy)
    assert type(loaded.policy) is CustomPolicy
    assert [layer.out_features for layer in loaded.policy.modules() if isinstance(layer, nn.Linear)] == [
        8,  # shared
        8,  # pi
        8,
        8,  # qf
        8,
        2,  # action_net
        2,  # q_net
    ]


def test_custom_policy_kwargs_survive_save_load(tmp_path: pathlib.Path) -> None:
    kwargs = dict(net_arch=[8, dict(pi=[8, 8], qf=[8, 8])], activation_fn=nn.ReLU)
    model = ACER("MlpPolicy", "CartPole-v1", policy_kwargs=kwargs, n_steps=5, replay_start=10, buffer_size=50)
    model.learn(100)
    policy = model.policy
    assert [policy.shared_net[0].in_features, policy.shared_net[0].out_features] == [4, 8]
    assert len(policy.shared_net) == 2 and isinstance(policy.shared_net[1], nn.ReLU)
    assert len(policy.mlp_extractor.policy_net) == 4 and len(policy.mlp_extractor.value_net) == 4
    assert all(not isinstance(module, nn.Tanh) for module in policy.modules())

    model.save(tmp_path / "kwargs.zip")
    loaded = ACER.load(tmp_path / "kwargs.zip", env=gym.make("CartPole-v1"))
    assert loaded.policy_kwargs == kwargs
    assert str(loaded.policy) == str(model.policy)
    obs = np.random.default_rng(0).normal(size=(10, 4)).astype(np.float32)
    np.testing.assert_array_equal(loaded.action_probability(obs), model.action_probability(obs))
    with pytest.raises(ValueError, match="differ from the saved ones"):
        ACER.load(tmp_path / "kwargs.zip", policy_kwargs=dict(net_arch=[8]))
    loaded.learn(50)


def test_list_net_arch_is_shared_by_both_heads() -> None:
    policy = ACER("MlpPolicy", "CartPole-v1", policy_kwargs=dict(net_arch=[16, 16])).policy
    assert len(policy.shared_net) == 4
    assert len(policy.mlp_extractor.policy_net) == 0 and len(policy.mlp_extractor.value_net) == 0
    assert policy.action_net.in_features == policy.q_net.in_features == 16


def test_sb2_docs_example(tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The example of SB2's ACER page, on Gymnasium, SB3's SubprocVecEnv and sb3_acer (shortened)."""
    n_cpu = 2
    env = SubprocVecEnv([lambda: gym.make("CartPole-v1") for _ in range(n_cpu)])
    try:
        model = ACER(MlpPolicy, env, verbose=1)
        model.learn(total_timesteps=2000, log_interval=10)
        model.save(tmp_path / "acer_cartpole")
        del model  # remove to demonstrate saving and loading

        model = ACER.load(tmp_path / "acer_cartpole")
        obs = env.reset()
        for _ in range(50):
            action, _states = model.predict(obs)
            obs, rewards, _dones, _info = env.step(action)
            assert action.shape == (n_cpu,)
            assert rewards.shape == (n_cpu,)
    finally:
        env.close()
    output = capsys.readouterr().out
    assert "| train/" in output
    assert "loss_q" in output
    assert "total_timesteps" in output


# SB2 2.10's ``ACER.__init__`` (``acer_simple.py`` at hill-a/stable-baselines@259f278), in order.
SB2_POSITIONAL = [
    "policy", "env", "gamma", "n_steps", "num_procs", "q_coef", "ent_coef", "max_grad_norm",
    "learning_rate", "lr_schedule", "rprop_alpha", "rprop_epsilon", "buffer_size", "replay_ratio",
    "replay_start", "correction_term", "trust_region", "alpha", "delta", "verbose", "tensorboard_log",
    "_init_setup_model", "policy_kwargs", "full_tensorboard_log", "seed", "n_cpu_tf_sess",
]  # fmt: skip


def test_sb2_positional_arguments_bind_to_the_same_names() -> None:
    parameters = list(inspect.signature(ACER.__init__).parameters.values())[1:]  # without self
    positional = [p.name for p in parameters if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    # Every argument SB2 took by position and that still exists keeps its position; sb3-acer's own
    # arguments come after them and are keyword-only, so a longer SB2 call fails instead of mis-binding.
    assert positional == SB2_POSITIONAL[: SB2_POSITIONAL.index("full_tensorboard_log")]
    keyword_only = {p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY}
    assert keyword_only == {
        "q_lr_ratio",
        "handle_timeout_termination",
        "retrace_lambda",
        "stats_window_size",
        "seed",
        "device",
    }


def test_sb2_positional_call_binds_like_sb2() -> None:
    env = DummyVecEnv([lambda: IdentityEnv(4)])
    values = [0.95, 5, None, 0.25, 0.0, 5.0, 1e-3, "constant", 0.9, 1e-4, 100, 2, 50, 5.0, False, 0.9, 2.0]
    model = ACER(MlpPolicy, env, *values)
    names = SB2_POSITIONAL[2 : 2 + len(values)]
    # SB2's lr_schedule argument is kept as lr_schedule_name: the lr_schedule attribute is SB3's callable.
    attributes = ["lr_schedule_name" if name == "lr_schedule" else name for name in names]
    assert [getattr(model, name) for name in attributes] == values
    with pytest.raises(TypeError):
        ACER(MlpPolicy, env, *values, 0, None, True, None, False)  # SB2's full_tensorboard_log, by position

"""Dict observations, adapted from stable-baselines3 tests/test_dict_env.py (MIT, Copyright (c) 2019
Antonin Raffin), with ACER as the only algorithm, on discrete actions (as A2C in SB3's test).

Every case runs ACER's ``MultiInputPolicy`` (or ``MlpPolicy``/``CnnPolicy``, refused for ``Dict``
observations). Left out: SB3's checks of its
test environment and of ``VecNormalize`` alone.
"""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.envs import BitFlippingEnv, SimpleMultiObsEnv
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecFrameStack, VecNormalize

from sb3_acer import ACER

from .common import SMALL


class DummyDictEnv(gym.Env):
    """Custom Environment for testing purposes only"""

    metadata = {"render_modes": ["human"]}  # noqa: RUF012 (as SB3 writes it)

    def __init__(
        self,
        use_discrete_actions=False,
        channel_last=False,
        nested_dict_obs=False,
        vec_only=False,
    ):
        super().__init__()
        if use_discrete_actions:
            self.action_space = spaces.Discrete(3)
        else:
            self.action_space = spaces.Box(low=-1, high=1, shape=(2,), dtype=np.float32)
        N_CHANNELS = 1
        HEIGHT = 36
        WIDTH = 36

        if channel_last:  # noqa: SIM108 (as SB3 writes it)
            obs_shape = (HEIGHT, WIDTH, N_CHANNELS)
        else:
            obs_shape = (N_CHANNELS, HEIGHT, WIDTH)

        self.observation_space = spaces.Dict(
            {
                # Image obs
                "img": spaces.Box(low=0, high=255, shape=obs_shape, dtype=np.uint8),
                # Vector obs
                "vec": spaces.Box(low=-1, high=1, shape=(2,), dtype=np.float32),
                # Discrete obs
                "discrete": spaces.Discrete(4),
            }
        )

        # For checking consistency with normal MlpPolicy
        if vec_only:
            self.observation_space = spaces.Dict(
                {
                    # Vector obs
                    "vec": spaces.Box(low=-1, high=1, shape=(2,), dtype=np.float32),
                }
            )

        if nested_dict_obs:
            # Add dictionary observation inside observation space
            self.observation_space.spaces["nested-dict"] = spaces.Dict(
                {"nested-dict-discrete": spaces.Discrete(4)}
            )

    def seed(self, seed=None):
        if seed is not None:
            self.observation_space.seed(seed)

    def step(self, action):
        reward = 0.0
        terminated = truncated = False
        return self.observation_space.sample(), reward, terminated, truncated, {}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        if seed is not None:
            self.observation_space.seed(seed)
        return self.observation_space.sample(), {}

    def render(self):
        pass


#: ACER's settings in these cases (SB3: A2C and PPO with n_steps=64 and these networks).
KWARGS = dict(SMALL, policy_kwargs=dict(net_arch=[16], features_extractor_kwargs=dict(cnn_output_dim=16)))


@pytest.mark.parametrize("policy", ["MlpPolicy", "CnnPolicy"])
def test_policy_hint(policy):
    # Common mistake: using the wrong policy
    with pytest.raises(ValueError):
        ACER(policy, BitFlippingEnv(n_bits=4))


@pytest.mark.parametrize("model_class", [ACER])
def test_goal_env(model_class):
    env = BitFlippingEnv(n_bits=4)
    # check that goal env works for ACER, which has no HER replay buffer (as PPO and A2C)
    model = model_class("MultiInputPolicy", env, **SMALL).learn(250)
    evaluate_policy(model, model.get_env())


@pytest.mark.parametrize("model_class", [ACER])
def test_consistency(model_class):
    """
    Make sure that dict obs with vector only vs using flatten obs is equivalent.
    This ensures notable that the network architectures are the same.
    """
    use_discrete_actions = True
    dict_env = DummyDictEnv(use_discrete_actions=use_discrete_actions, vec_only=True)
    dict_env.seed(10)
    dict_env = gym.wrappers.TimeLimit(dict_env, 100)
    env = gym.wrappers.FlattenObservation(dict_env)
    obs, _ = dict_env.reset()

    n_steps = 128

    kwargs = dict(SMALL)

    kwargs["policy_kwargs"] = dict(net_arch=[8, 8])
    dict_model = model_class("MultiInputPolicy", dict_env, gamma=0.5, seed=1, **kwargs)
    action_before_learning_1, _ = dict_model.predict(obs, deterministic=True)
    dict_model.learn(total_timesteps=n_steps)

    # The cnn is not used in this test anyway
    normal_model = model_class("MlpPolicy", env, gamma=0.5, seed=1, **kwargs)
    action_before_learning_2, _ = normal_model.predict(obs["vec"], deterministic=True)
    normal_model.learn(total_timesteps=n_steps)

    action_1, _ = dict_model.predict(obs, deterministic=True)
    action_2, _ = normal_model.predict(obs["vec"], deterministic=True)

    assert np.allclose(action_before_learning_1, action_before_learning_2)
    assert np.allclose(action_1, action_2)


@pytest.mark.parametrize("model_class", [ACER])
@pytest.mark.parametrize("channel_last", [False, True])
def test_dict_spaces(model_class, channel_last):
    """
    Additional tests to check observation space support
    with mixed observation.
    """
    use_discrete_actions = True
    env = DummyDictEnv(use_discrete_actions=use_discrete_actions, channel_last=channel_last)
    env = gym.wrappers.TimeLimit(env, 100)

    n_steps = 128

    model = model_class("MultiInputPolicy", env, gamma=0.5, seed=1, **KWARGS)

    model.learn(total_timesteps=n_steps)

    evaluate_policy(model, env, n_eval_episodes=5, warn=False)


@pytest.mark.parametrize("model_class", [ACER])
def test_multiprocessing(model_class):
    use_discrete_actions = True

    def make_env():
        env = DummyDictEnv(use_discrete_actions=use_discrete_actions, channel_last=False)
        env = gym.wrappers.TimeLimit(env, 50)
        return env

    # Not in SB3's test: fork, as the other tests of this suite, which spares each worker an import of torch.
    env = make_vec_env(
        make_env, n_envs=2, vec_env_cls=SubprocVecEnv, vec_env_kwargs=dict(start_method="fork")
    )

    n_steps = 128

    try:
        model = model_class("MultiInputPolicy", env, gamma=0.5, seed=1, **KWARGS)

        model.learn(total_timesteps=n_steps)
    finally:
        env.close()  # not in SB3's test: the worker processes stopped, even when the case fails


@pytest.mark.parametrize("model_class", [ACER])
@pytest.mark.parametrize("channel_last", [False, True])
def test_dict_vec_framestack(model_class, channel_last):
    """
    Additional tests to check observation space support
    for Dictionary spaces and VecEnvWrapper using MultiInputPolicy.
    """
    use_discrete_actions = True
    channels_order = {"vec": None, "img": "last" if channel_last else "first"}
    env = DummyVecEnv(
        [
            lambda: SimpleMultiObsEnv(
                random_start=True, discrete_actions=use_discrete_actions, channel_last=channel_last
            )
        ]
    )

    env = VecFrameStack(env, n_stack=3, channels_order=channels_order)

    n_steps = 128

    kwargs = dict(SMALL, policy_kwargs=dict(net_arch=[8], features_extractor_kwargs=dict(cnn_output_dim=8)))

    model = model_class("MultiInputPolicy", env, gamma=0.5, seed=1, **kwargs)

    model.learn(total_timesteps=n_steps)

    evaluate_policy(model, env, n_eval_episodes=5, warn=False)


@pytest.mark.parametrize("model_class", [ACER])
def test_vec_normalize(model_class):
    """
    Additional tests to check observation space support
    for GoalEnv and VecNormalize using MultiInputPolicy.
    """
    env = DummyVecEnv([lambda: gym.wrappers.TimeLimit(DummyDictEnv(use_discrete_actions=True), 100)])
    env = VecNormalize(env, norm_obs_keys=["vec"])

    n_steps = 128

    model = model_class("MultiInputPolicy", env, gamma=0.5, seed=1, **KWARGS)

    model.learn(total_timesteps=n_steps)

    evaluate_policy(model, env, n_eval_episodes=5, warn=False)


def test_dict_nested():
    """
    Make sure we throw an appropriate error with nested Dict observation spaces
    """
    # Test without manual wrapping to vec-env
    env = DummyDictEnv(nested_dict_obs=True, use_discrete_actions=True)

    with pytest.raises(NotImplementedError):
        _ = ACER("MultiInputPolicy", env, seed=1)

    # Test with manual vec-env wrapping

    with pytest.raises(NotImplementedError):
        env = DummyVecEnv([lambda: DummyDictEnv(nested_dict_obs=True)])

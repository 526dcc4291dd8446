"""Reproducible training, adapted from stable-baselines3 tests/test_deterministic.py (MIT, Copyright (c)
2019 Antonin Raffin), with ACER as the only algorithm.

ACER takes every action space A2C takes, so it gets A2C's environment, ``Pendulum-v1`` (``Box`` actions),
where SB3 gives DQN ``CartPole-v1``.
"""

import pytest

from sb3_acer import ACER

from .common import SMALL

N_STEPS_TRAINING = 500
SEED = 0


@pytest.mark.parametrize("algo", [ACER])
def test_deterministic_training_common(algo):
    results = [[], []]
    rewards = [[], []]
    # Smaller network
    kwargs = {"policy_kwargs": dict(net_arch=[64])}
    # ACER, as A2C: Pendulum-v1, with its small budget so that it replays within the 500 steps.
    env_id = "Pendulum-v1"
    kwargs.update(SMALL)

    for i in range(2):
        model = algo("MlpPolicy", env_id, seed=SEED, **kwargs)
        model.learn(N_STEPS_TRAINING)
        env = model.get_env()
        obs = env.reset()
        for _ in range(100):
            action, _ = model.predict(obs, deterministic=False)
            obs, reward, _, _ = env.step(action)
            results[i].append(action)
            rewards[i].append(reward)
    assert sum(results[0]) == sum(results[1]), results
    assert sum(rewards[0]) == sum(rewards[1]), rewards

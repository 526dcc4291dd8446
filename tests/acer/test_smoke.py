"""End-to-end smoke test: construct, learn a few iterations with replay, predict."""

import numpy as np

from sb3_acer import ACER


def test_learn_runs_on_policy_and_replay_updates() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_start=10, buffer_size=50, seed=0)
    model.learn(total_timesteps=200)
    assert model.num_timesteps == 200
    assert model._n_updates > 40  # 40 on-policy updates plus the replayed ones
    assert model._n_replay_updates > 0
    action, state = model.predict(np.zeros(4, dtype=np.float32))
    assert state is None
    assert action.shape == ()

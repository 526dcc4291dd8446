"""Action sampling during rollouts, where a rollout continues from, and the policies' cached device."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER
from sb3_acer.common.policies.categorical import sample_actions
from sb3_acer.common.rollout import RolloutResult, StepRecord, collect_segment
from tests.helpers.acer_envs import CounterEnv


def test_sample_actions_follows_the_probabilities() -> None:
    probs = th.tensor([[0.2, 0.0, 0.8], [0.0, 1.0, 0.0], [0.5, 0.5, 0.0], [0.1, 0.3, 0.6]])
    n = 100_000
    th.manual_seed(0)
    actions = sample_actions(probs.repeat(n, 1)).view(n, len(probs))
    for row, p in enumerate(probs):
        frequencies = th.bincount(actions[:, row], minlength=3).double() / n
        # 5 standard errors of a binomial frequency.
        tolerance = 5 * th.sqrt(p.double() * (1 - p.double()) / n) + 1e-12
        assert th.all((frequencies - p.double()).abs() <= tolerance), (row, frequencies, p)
        assert th.all(frequencies[p == 0] == 0), "an action of zero probability was drawn"


def test_sample_actions_stays_in_range_when_probabilities_sum_below_one() -> None:
    probs = th.tensor([[0.3, 0.3, 0.3999999]], dtype=th.float32).repeat(10_000, 1)
    actions = sample_actions(probs)
    assert actions.min() >= 0 and actions.max() <= 2


@pytest.mark.parametrize(
    ("u", "expected"),
    [
        # u = 0 lies on the flat start of the CDF: "right" skips the leading zero-probability actions.
        (0.0, [1, 2, 1, 0]),
        # The largest float32 below 1 lands on the last action of positive probability.
        (1 - 2**-24, [1, 2, 2, 1]),
    ],
)
def test_sample_actions_never_draws_a_zero_probability_action_at_the_ends_of_the_uniform_range(
    monkeypatch: pytest.MonkeyPatch, u: float, expected: list[int]
) -> None:
    """th.rand draws from [0, 1): u = 0 is possible, and must not pick an action of probability 0."""

    def constant_rand(shape: tuple[int, ...], **kwargs: Any) -> th.Tensor:
        return th.full(shape, u, dtype=kwargs.get("dtype"), device=kwargs.get("device"))

    monkeypatch.setattr(th, "rand", constant_rand)
    probs = th.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.5, 0.5], [0.3, 0.7, 0.0]])
    assert sample_actions(probs).tolist() == expected


def test_sample_actions_is_reproducible_with_torch_seed() -> None:
    probs = th.softmax(th.randn(64, 5, generator=th.Generator().manual_seed(1)), dim=-1)
    th.manual_seed(7)
    first = sample_actions(probs)
    th.manual_seed(7)
    assert th.equal(first, sample_actions(probs))


@pytest.mark.parametrize("policy", ["MlpPolicy", "MlpLstmPolicy"])
def test_cached_device_follows_the_module(policy: str) -> None:
    model = ACER(policy, "CartPole-v1", n_steps=2, policy_kwargs=dict(n_lstm=4) if "Lstm" in policy else None)
    assert model.policy.device == th.device("cpu")
    model.policy.to("meta")
    assert model.policy.device == th.device("meta")
    model.policy.to_empty(device="cpu")
    assert model.policy.device == th.device("cpu")


# ------------------------------------------------------------------------------------ continuing a rollout


def _counter_env(terminate_at: int) -> DummyVecEnv:
    return DummyVecEnv([lambda: CounterEnv(terminate_at)])


def _recurrent_model(env: DummyVecEnv) -> ACER:
    return ACER("MlpLstmPolicy", env, n_steps=3, replay_ratio=0, seed=0, policy_kwargs=dict(n_lstm=4))


def _from_reset(env: DummyVecEnv) -> RolloutResult:
    """Where a rollout starts on a freshly reset env: every observation starts an episode."""
    return RolloutResult(segment=None, last_obs=env.reset(), last_episode_starts=np.ones(1, dtype=bool))


def _continue(
    model: ACER,
    env: DummyVecEnv,
    n_steps: int,
    previous: RolloutResult,
    on_step: Callable[[StepRecord], bool] = lambda record: True,
) -> RolloutResult:
    """Collect a segment from where ``previous`` left off, as ``learn`` does."""
    return collect_segment(
        env=env,
        policy=model.policy,
        n_steps=n_steps,
        last_obs=previous.last_obs,
        last_episode_starts=previous.last_episode_starts,
        last_lstm_state=previous.last_lstm_state,
        on_step=on_step,
    )


def test_an_episode_ending_on_a_segments_last_step_starts_the_next_segment() -> None:
    """The next segment's x_0 is a reset observation: it is flagged as an episode start, so the LSTM
    restarts from zeros there and the update cuts the traces."""
    env = _counter_env(terminate_at=3)
    model = _recurrent_model(env)
    first = _continue(model, env, 3, _from_reset(env))
    assert first.last_episode_starts.tolist() == [True]
    assert first.last_obs.tolist() == [[0.0]]
    second = _continue(model, env, 3, first)
    assert first.segment is not None and second.segment is not None
    for segment in (first.segment, second.segment):
        assert segment.observations[:, 0, 0].tolist() == [0.0, 1.0, 2.0, 0.0]
        assert segment.episode_starts[:, 0].tolist() == [True, False, False, True]
    # Same observations from a reset LSTM state: the same probabilities, exactly.
    assert np.array_equal(second.segment.mu_probs, first.segment.mu_probs)


def test_a_rollout_stopped_at_an_episode_end_continues_with_a_new_episode() -> None:
    """A callback that stops training on the step that ends an episode: the next learn starts from the reset
    observation, flagged as an episode start (not with the flag of the step before)."""
    env = _counter_env(terminate_at=3)
    model = _recurrent_model(env)
    stopped = _continue(model, env, 5, _from_reset(env), on_step=lambda record: not record.dones[0])
    assert stopped.segment is None
    assert stopped.last_obs.tolist() == [[0.0]]
    assert stopped.last_episode_starts.tolist() == [True]
    resumed = _continue(model, env, 3, stopped)
    reference_env = _counter_env(terminate_at=3)
    reference = _continue(model, reference_env, 3, _from_reset(reference_env))
    assert resumed.segment is not None and reference.segment is not None
    assert resumed.segment.episode_starts[:, 0].tolist() == [True, False, False, True]
    assert np.array_equal(resumed.segment.mu_probs, reference.segment.mu_probs)


def test_a_rollout_stopped_mid_episode_continues_the_lstm_state() -> None:
    """A callback that stops training mid-episode: the next learn continues the episode with the LSTM state
    it had reached, as if the rollout had never stopped (not from zeros)."""
    env = _counter_env(terminate_at=10)
    model = _recurrent_model(env)
    steps: list[StepRecord] = []

    def stop_after_two_steps(record: StepRecord) -> bool:
        steps.append(record)
        return len(steps) < 2

    stopped = _continue(model, env, 5, _from_reset(env), on_step=stop_after_two_steps)
    assert stopped.segment is None
    assert stopped.last_obs.tolist() == [[2.0]]
    assert stopped.last_episode_starts.tolist() == [False]

    unbroken_env, two_steps_env = _counter_env(terminate_at=10), _counter_env(terminate_at=10)
    unbroken = _continue(model, unbroken_env, 4, _from_reset(unbroken_env))
    two_steps = _continue(model, two_steps_env, 2, _from_reset(two_steps_env))
    assert stopped.last_lstm_state is not None and two_steps.last_lstm_state is not None
    for got, expected in zip(stopped.last_lstm_state, two_steps.last_lstm_state, strict=True):
        assert th.equal(got, expected)
        assert th.count_nonzero(got) > 0

    resumed = _continue(model, env, 2, stopped)
    assert resumed.segment is not None and unbroken.segment is not None
    assert resumed.segment.initial_state is not None
    for got, expected in zip(resumed.segment.initial_state, two_steps.last_lstm_state, strict=True):
        assert np.array_equal(got, expected[0].numpy())
    assert resumed.segment.observations[:, 0, 0].tolist() == [2.0, 3.0, 4.0]
    assert np.array_equal(resumed.segment.mu_probs, unbroken.segment.mu_probs[2:])

"""Action sampling during rollouts and the policies' cached device."""

from __future__ import annotations

import pytest
import torch as th

from sb3_acer import ACER
from sb3_acer.rollout import sample_actions


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

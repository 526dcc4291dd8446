"""The action distributions of ``sb3_acer.common.distributions`` (Gaussian, factorised categorical, and the
categorical of discrete actions in the same flat layout): closed-form gradients against ``torch.autograd``,
the trust-region projection per family, and the actions sent to the env."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from sb3_acer.common.distributions import Categorical, DiagGaussian, Factorised, make_action_distribution
from sb3_acer.common.functional import categorical as F

SPACES = {
    "box": spaces.Box(-1.0, 1.0, (2, 2), dtype=np.float32),
    "multidiscrete": spaces.MultiDiscrete([3, 2, 4]),
    "multibinary": spaces.MultiBinary(3),
}


def _stats(dist, gen: th.Generator, lead: tuple[int, ...]) -> th.Tensor:
    raw = th.randn(*lead, dist.stats_size, generator=gen, dtype=th.float64)
    if isinstance(dist, Factorised):
        return dist.statistics(2 * raw)
    return th.cat([raw[..., : dist.dim], 0.3 * raw[..., dist.dim :]], -1)


@pytest.mark.parametrize("name", sorted(SPACES))
def test_distribution_closed_form_gradients_equal_autograd(name):
    dist = make_action_distribution(SPACES[name])
    gen = th.Generator().manual_seed(0)
    stats, avg = _stats(dist, gen, (3, 2)), _stats(dist, gen, (3, 2))
    th.manual_seed(1)
    actions = dist.sample(stats)
    assert actions.shape == (3, 2, dist.action_size)
    leaf = stats.clone().requires_grad_()
    for value, closed in (
        (dist.log_prob(leaf, actions), dist.log_prob_gradient(stats, actions)),
        (dist.entropy(leaf), dist.entropy_gradient(stats)),
        (dist.kl(avg, leaf), dist.kl_gradient(avg, stats)),
    ):
        (auto,) = th.autograd.grad(value.sum(), leaf)
        if isinstance(dist, Factorised):  # padded choices: no gradient needed there
            auto = auto * dist.valid.flatten().to(auto.dtype)
            closed = closed * dist.valid.flatten().to(closed.dtype)
        th.testing.assert_close(closed, auto, rtol=1e-6, atol=1e-6)
    assert bool((dist.kl(avg, stats) > 0).all())
    th.testing.assert_close(dist.kl(stats, stats), th.zeros(3, 2, dtype=th.float64), rtol=0, atol=1e-9)


def test_the_categorical_distribution_is_the_discrete_maths_in_the_flat_layout():
    dist = make_action_distribution(spaces.Discrete(4))
    assert isinstance(dist, Categorical) and (dist.stats_size, dist.action_dim) == (4, 1)
    gen = th.Generator().manual_seed(5)
    stats = th.softmax(th.randn(3, 2, 4, generator=gen, dtype=th.float64), -1)
    avg = th.softmax(th.randn(3, 2, 4, generator=gen, dtype=th.float64), -1)
    th.manual_seed(6)
    actions = dist.sample(stats)
    assert actions.shape == (3, 2) and th.equal(dist.mode(stats), stats.argmax(-1))
    assert th.equal(dist.entropy(stats), F.categorical_entropy(stats, eps=F.EPS))
    assert th.equal(dist.kl(avg, stats), F.categorical_kl(p_probs=avg, q_probs=stats, eps=F.EPS))
    assert th.equal(dist.kl_gradient(avg, stats), F.kl_gradient(avg_probs=avg, pi_probs=stats, eps=F.EPS))
    leaf = stats.clone().requires_grad_()
    for value, closed in (
        (dist.log_prob(leaf, actions), dist.log_prob_gradient(stats, actions)),
        (dist.entropy(leaf), dist.entropy_gradient(stats)),
        (dist.kl(avg, leaf), dist.kl_gradient(avg, stats)),
    ):
        (auto,) = th.autograd.grad(value.sum(), leaf)
        th.testing.assert_close(closed, auto, rtol=1e-6, atol=1e-6)


def test_gaussian_with_fixed_sigma_projects_the_mean_only():
    space = SPACES["box"]
    learned, fixed = DiagGaussian(space, learn_log_std=True), DiagGaussian(space, learn_log_std=False)
    gen = th.Generator().manual_seed(2)
    stats, avg = _stats(learned, gen, (4, 3)), _stats(learned, gen, (4, 3))
    actions = learned.sample(stats)
    for closed in (
        fixed.log_prob_gradient(stats, actions),
        fixed.kl_gradient(avg, stats),
        fixed.entropy_gradient(stats),
    ):
        assert th.equal(closed[..., 4:], th.zeros(4, 3, 4, dtype=th.float64))
    th.testing.assert_close(fixed.kl_gradient(avg, stats)[..., :4], learned.kl_gradient(avg, stats)[..., :4])


def test_factorised_projection_is_per_factor_and_invalid_choices_are_never_drawn():
    dist = Factorised(SPACES["multidiscrete"])
    gen = th.Generator().manual_seed(3)
    stats, avg = _stats(dist, gen, (5, 2)), _stats(dist, gen, (5, 2))
    assert th.equal(dist.probs(stats)[..., 1, 2:], th.zeros(5, 2, 2, dtype=th.float64))
    th.manual_seed(4)
    draws = dist.sample(stats.expand(200, 5, 2, -1))
    assert bool((draws < th.as_tensor(dist.nvec)).all())
    g = 30 * dist.log_prob_gradient(stats, dist.sample(stats))
    k = dist.kl_gradient(avg, stats)
    step = dist.project(g, k, delta=0.5)
    per_factor = (dist.probs(k) * dist.probs(step.z)).sum(-1)
    assert bool((per_factor <= 0.5 + 1e-6).all())
    assert step.z.shape == g.shape and step.adj.shape == (5, 2)


def test_box_actions_go_to_the_env_clipped_and_reshaped():
    dist = make_action_distribution(SPACES["box"])
    actions = np.array([[-3.0, 0.5, 2.0, 0.0]], dtype=np.float32)
    np.testing.assert_array_equal(dist.to_env(actions), [[[-1.0, 0.5], [1.0, 0.0]]])
    binary = make_action_distribution(SPACES["multibinary"])
    assert binary.to_env(np.array([[1, 0, 1]])).dtype == SPACES["multibinary"].dtype
    with pytest.raises(ValueError, match=r"no ACER action distribution for Dict"):
        make_action_distribution(spaces.Dict({"a": spaces.Discrete(2)}))

"""The batched TF-style RMSProp must reproduce SB3's RMSpropTFLike exactly."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

from sb3_acer.common.optim import FastRMSpropTFLike, clip_grad_norm


def _run(
    optimizer_class: type, steps: int = 25, fast: bool = False, **kwargs: float
) -> tuple[list[th.Tensor], dict]:
    gen = th.Generator().manual_seed(3)
    net = th.nn.Sequential(th.nn.Linear(5, 7), th.nn.Tanh(), th.nn.Linear(7, 2))
    with th.no_grad():
        for p in net.parameters():
            p.copy_(th.randn(p.shape, generator=gen))
    optimizer = optimizer_class(net.parameters(), lr=7e-3, alpha=0.99, eps=1e-5, **kwargs)
    for _ in range(steps):
        x = th.randn(16, 5, generator=gen)
        optimizer.zero_gradients() if fast else optimizer.zero_grad()
        net(x).pow(2).mean().backward()
        net[2].bias.grad = None  # a parameter without gradient is skipped, as in the parent
        optimizer.apply_gradients() if fast else optimizer.step()
    return [p.detach().clone() for p in net.parameters()], optimizer.state_dict()


@pytest.mark.parametrize("fast", [False, True], ids=["step", "apply_gradients"])
@pytest.mark.parametrize("kwargs", [{}, {"momentum": 0.9}, {"centered": True}, {"weight_decay": 0.1}])
def test_fast_rmsprop_equals_sb3_rmsprop_tf_like(kwargs: dict, fast: bool) -> None:
    expected, expected_state = _run(RMSpropTFLike, **kwargs)
    got, got_state = _run(FastRMSpropTFLike, fast=fast, **kwargs)
    for a, b in zip(expected, got, strict=True):
        th.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert expected_state["state"].keys() == got_state["state"].keys()
    for key, state in expected_state["state"].items():
        assert state["step"] == got_state["state"][key]["step"]
        th.testing.assert_close(state["square_avg"], got_state["state"][key]["square_avg"])


def test_fast_rmsprop_state_loads_into_sb3_optimizer() -> None:
    _, state = _run(FastRMSpropTFLike, steps=3)
    net = th.nn.Sequential(th.nn.Linear(5, 7), th.nn.Tanh(), th.nn.Linear(7, 2))
    RMSpropTFLike(net.parameters(), lr=7e-3).load_state_dict(state)


def test_apply_gradients_runs_registered_hooks() -> None:
    net = th.nn.Linear(3, 1)
    optimizer = FastRMSpropTFLike(net.parameters(), lr=1e-2)
    calls: list[str] = []
    optimizer.register_step_pre_hook(lambda *_: calls.append("pre"))
    optimizer.register_step_post_hook(lambda *_: calls.append("post"))
    net(th.ones(2, 3)).sum().backward()
    optimizer.apply_gradients()
    assert calls == ["pre", "post"]


def test_zero_gradients_clears_every_gradient() -> None:
    net = th.nn.Linear(3, 1)
    optimizer = FastRMSpropTFLike(net.parameters(), lr=1e-2)
    net(th.ones(2, 3)).sum().backward()
    optimizer.zero_gradients()
    assert all(p.grad is None for p in net.parameters())


@pytest.mark.parametrize("max_norm", [0.05, 1e6, float("inf")])
def test_clip_grad_norm_equals_torch(max_norm: float) -> None:
    gen = th.Generator().manual_seed(4)
    nets = [th.nn.Sequential(th.nn.Linear(5, 7), th.nn.Tanh(), th.nn.Linear(7, 2)) for _ in range(2)]
    x = th.randn(9, 5, generator=gen)
    for net in nets:
        net.load_state_dict(nets[0].state_dict())
        net(x).pow(2).sum().backward()
        net[2].bias.grad = None  # parameters without gradient are ignored by both
    expected = th.nn.utils.clip_grad_norm_(list(nets[0].parameters()), max_norm)
    got = clip_grad_norm(list(nets[1].parameters()), max_norm)
    th.testing.assert_close(got, expected)
    for a, b in zip(nets[0].parameters(), nets[1].parameters(), strict=True):
        assert (a.grad is None) == (b.grad is None)
        if a.grad is not None:
            th.testing.assert_close(a.grad, b.grad, rtol=0, atol=0)


def test_clip_grad_norm_of_mixed_dtypes_falls_back_to_torch() -> None:
    a = th.nn.Parameter(th.ones(3))
    b = th.nn.Parameter(th.ones(2, dtype=th.float64))
    a.grad, b.grad = th.full((3,), 3.0), th.full((2,), 4.0, dtype=th.float64)
    norm = clip_grad_norm([a, b], 1.0)
    assert float(norm) == pytest.approx(np.sqrt(27 + 32))
    assert float(th.linalg.vector_norm(th.cat([a.grad.double(), b.grad]))) == pytest.approx(1.0, rel=1e-5)

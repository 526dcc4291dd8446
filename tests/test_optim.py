"""The batched TF-style RMSProp must reproduce SB3's RMSpropTFLike exactly."""

from __future__ import annotations

import pytest
import torch as th
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

from sb3_acer.optim import FastRMSpropTFLike


def _run(optimizer_class: type, steps: int = 25, **kwargs: float) -> tuple[list[th.Tensor], dict]:
    gen = th.Generator().manual_seed(3)
    net = th.nn.Sequential(th.nn.Linear(5, 7), th.nn.Tanh(), th.nn.Linear(7, 2))
    with th.no_grad():
        for p in net.parameters():
            p.copy_(th.randn(p.shape, generator=gen))
    optimizer = optimizer_class(net.parameters(), lr=7e-3, alpha=0.99, eps=1e-5, **kwargs)
    for _ in range(steps):
        x = th.randn(16, 5, generator=gen)
        optimizer.zero_grad()
        net(x).pow(2).mean().backward()
        net[2].bias.grad = None  # a parameter without gradient is skipped, as in the parent
        optimizer.step()
    return [p.detach().clone() for p in net.parameters()], optimizer.state_dict()


@pytest.mark.parametrize("kwargs", [{}, {"momentum": 0.9}, {"centered": True}, {"weight_decay": 0.1}])
def test_fast_rmsprop_equals_sb3_rmsprop_tf_like(kwargs: dict) -> None:
    expected, expected_state = _run(RMSpropTFLike, **kwargs)
    got, got_state = _run(FastRMSpropTFLike, **kwargs)
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

"""The optimizer: the batched TF-style RMSProp reproduces SB3's RMSpropTFLike exactly; ``policy_kwargs`` may
name another optimizer than SB2's RMSProp, as in SB3, which is saved and restored, and every optimizer a
model file may name trains ACER."""

from __future__ import annotations

import json
import pathlib
import zipfile
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

from sb3_acer import ACER
from sb3_acer.common.optim import FastRMSpropTFLike, clip_grad_norm
from sb3_acer.common.save_util.class_table import CLASS_TABLE

# ---------------------------------------------------------------------------------- the batched RMSProp


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


# ---------------------------------------------------------------------------------- another optimizer

ADAM = {"optimizer_class": th.optim.Adam, "optimizer_kwargs": {"betas": (0.8, 0.99), "eps": 1e-6}}


def _first_step_sizes(model: ACER) -> th.Tensor:
    """Absolute change of every weight over the first (on-policy) update, relative to the learning rate."""
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(model.n_steps * model.n_envs)
    assert model._n_updates == 1
    after = [p.detach() for p in model.policy.parameters()]
    return th.cat([(a - b).abs().flatten() for a, b in zip(after, before, strict=True)]) / 1e-3


def test_adam_takes_the_steps_adam_takes(small_settings: Mapping[str, Any]) -> None:
    kwargs: dict[str, Any] = dict(small_settings, learning_rate=1e-3, lr_schedule="constant", replay_ratio=0)
    model = ACER("MlpPolicy", "CartPole-v1", policy_kwargs=ADAM, **kwargs)
    assert type(model.optimizer) is th.optim.Adam
    group = model.optimizer.param_groups[0]
    assert group["betas"] == (0.8, 0.99) and group["eps"] == 1e-6
    # Adam's first step is lr * g / (|g| + eps): about lr for every weight with a gradient, never more.
    steps = _first_step_sizes(model)
    assert steps.max() <= 1.0 + 1e-5
    assert steps.median() > 0.9
    # SB2's RMSProp (square average starting at ones) takes steps of about lr * g instead: a control.
    default = ACER("MlpPolicy", "CartPole-v1", **kwargs)
    assert type(default.optimizer) is FastRMSpropTFLike
    assert _first_step_sizes(default).median() < 0.5


def test_the_learning_rate_schedule_drives_another_optimizer(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", policy_kwargs=ADAM, learning_rate=1e-3, **small_settings)
    model.learn(100)
    # The linear schedule reaches 0 at the run's last update (Adam alone would keep its initial 1e-3).
    assert model.optimizer.param_groups[0]["lr"] == 0.0
    assert model.logger.name_to_value["train/learning_rate"] == 0.0


def test_optimizer_class_and_state_round_trip(
    tmp_path: pathlib.Path, small_settings: Mapping[str, Any]
) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", policy_kwargs=ADAM, **small_settings)
    model.learn(100)
    model.save(tmp_path / "adam")
    with zipfile.ZipFile(tmp_path / "adam.zip") as archive:
        saved = json.loads(archive.read("data"))["policy_kwargs"]
    assert saved == {
        "optimizer_class": {"__class__": "torch.optim.adam:Adam"},
        "optimizer_kwargs": {"betas": [0.8, 0.99], "eps": 1e-6},
    }
    loaded = ACER.load(tmp_path / "adam.zip", env=gym.make("CartPole-v1"))
    assert type(loaded.optimizer) is th.optim.Adam
    original, restored = model.optimizer.state_dict(), loaded.optimizer.state_dict()
    assert original["state"].keys() == restored["state"].keys() and original["state"]
    for index, state in original["state"].items():
        assert state.keys() == {"step", "exp_avg", "exp_avg_sq"}
        for key, value in state.items():
            assert th.equal(restored["state"][index][key], value), (index, key)
    loaded.learn(20, reset_num_timesteps=False)
    assert loaded.num_timesteps == 120


@pytest.mark.parametrize("saved_path", ["sb3_acer.common.optim", "sb3_acer.optim"])
def test_acer_optimizer_loads_under_its_module_and_its_module_of_0_1(
    tmp_path: pathlib.Path, small_settings: Mapping[str, Any], saved_path: str
) -> None:
    """A file names FastRMSpropTFLike by its module; files of 0.1 named sb3_acer.optim, before the move."""
    settings = {"optimizer_class": FastRMSpropTFLike, "net_arch": [8]}
    ACER("MlpPolicy", "CartPole-v1", policy_kwargs=settings, **small_settings).save(tmp_path / "model")
    with zipfile.ZipFile(tmp_path / "model.zip") as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(entries["data"])
    assert data["policy_kwargs"]["optimizer_class"] == {
        "__class__": "sb3_acer.common.optim:FastRMSpropTFLike"
    }
    data["policy_kwargs"]["optimizer_class"] = {"__class__": f"{saved_path}:FastRMSpropTFLike"}
    entries["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(tmp_path / "model.zip", "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    assert type(ACER.load(tmp_path / "model.zip").optimizer) is FastRMSpropTFLike


def test_optimizer_kwargs_may_be_none() -> None:
    model = ACER(
        "MlpPolicy", "CartPole-v1", policy_kwargs={"optimizer_class": th.optim.SGD, "optimizer_kwargs": None}
    )
    assert type(model.optimizer) is th.optim.SGD


@pytest.mark.parametrize(
    "optimizer_class",
    sorted(
        {cls for cls in CLASS_TABLE.values() if issubclass(cls, th.optim.Optimizer)}, key=lambda c: c.__name__
    ),
    ids=lambda cls: cls.__name__,
)
def test_every_optimizer_a_model_file_may_name_trains_acer(
    optimizer_class: type[th.optim.Optimizer], small_settings: Mapping[str, Any]
) -> None:
    model = ACER(
        "MlpPolicy",
        "CartPole-v1",
        policy_kwargs={"optimizer_class": optimizer_class, "net_arch": [8]},
        **{**small_settings, "replay_ratio": 0, "lr_schedule": "constant"},
    )
    before = [p.detach().clone() for p in model.policy.parameters()]
    model.learn(model.n_steps)
    assert (model._n_updates, model.n_skipped_updates) == (1, 0)
    assert any(not th.equal(p, b) for p, b in zip(model.policy.parameters(), before, strict=True))

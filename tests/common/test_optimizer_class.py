"""``policy_kwargs`` may name another optimizer than SB2's RMSProp, as in SB3; it is saved and restored, and
every optimizer a model file may name trains ACER."""

from __future__ import annotations

import json
import pathlib
import zipfile
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import pytest
import torch as th

from sb3_acer import ACER
from sb3_acer.common.optim import FastRMSpropTFLike
from sb3_acer.common.save_util.class_table import CLASS_TABLE

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

"""Model files: what they hold, that loading restores it exactly, and that they are read as data only."""

from __future__ import annotations

import collections
import importlib.util
import io
import json
import os
import pathlib
import pickle
import re
import stat
import sys
import zipfile
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import stable_baselines3 as sb3
import torch as th
from stable_baselines3 import PPO
from stable_baselines3.common.envs import IdentityEnv
from stable_baselines3.common.torch_layers import FlattenExtractor, NatureCNN
from stable_baselines3.common.utils import ConstantSchedule, LinearSchedule
from stable_baselines3.common.vec_env import DummyVecEnv
from torch import nn

import sb3_acer
from sb3_acer import ACER, MlpPolicy
from sb3_acer.common.policies import MinAtarCNN
from sb3_acer.common.save_util.class_table import CLASS_TABLE
from sb3_acer.common.save_util.model_file import (
    FORMAT_NAME,
    FORMAT_VERSION,
    ModelFileError,
    decode_json_value,
    read_model_file,
    space_from_json,
    space_to_json,
    write_model_file,
)
from tests.helpers.file_bombs import ALLOWED_MB, BOMB_BYTES, declare_size, peak_increases, rewrite_padded
from tests.helpers.hostile import MarkerPayload

OBS_BATCH = np.random.default_rng(0).normal(size=(20, 4)).astype(np.float32)

#: Every constructor hyperparameter with a non-default value.
HYPERPARAMETERS: dict[str, Any] = dict(
    gamma=0.95,
    n_steps=4,
    num_procs=1,
    q_coef=0.3,
    ent_coef=0.02,
    max_grad_norm=5.0,
    learning_rate=3e-4,
    lr_schedule="double_middle_drop",
    rprop_alpha=0.9,
    rprop_epsilon=1e-4,
    buffer_size=40,
    replay_ratio=2.0,
    replay_start=8,
    correction_term=5.0,
    trust_region=False,
    alpha=0.9,
    delta=0.5,
    handle_timeout_termination=False,
    retrace_lambda=0.7,
    stats_window_size=7,
    q_lr_ratio=2.0,
    verbose=0,
    seed=3,
)


class CustomPolicy(MlpPolicy):
    """A user's policy subclass, defined in an imported module (this one)."""


def all_tensors(model: ACER) -> dict[str, th.Tensor]:
    """Every tensor of the policy, the average network and the optimizer, flattened by name."""
    tensors = {f"policy.{k}": v for k, v in model.policy.state_dict().items()}
    tensors.update({f"policy_avg.{k}": v for k, v in model.policy_avg.state_dict().items()})
    for index, state in model.optimizer.state_dict()["state"].items():
        tensors.update({f"optimizer.{index}.{k}": v for k, v in state.items() if isinstance(v, th.Tensor)})
    return {name: tensor.detach().clone() for name, tensor in tensors.items()}


def assert_same_tensors(a: dict[str, th.Tensor], b: dict[str, th.Tensor]) -> None:
    assert a.keys() == b.keys()
    for name in a:
        assert th.equal(a[name], b[name]), name


def rewrite_entry(source: pathlib.Path | io.BytesIO, target: pathlib.Path, name: str, content: bytes) -> None:
    """Copy a model file, replacing (or adding) the entry ``name``."""
    with zipfile.ZipFile(source) as archive:
        entries = {info.filename: archive.read(info.filename) for info in archive.infolist()}
    entries[name] = content
    with zipfile.ZipFile(target, "w") as archive:
        for entry, data in entries.items():
            archive.writestr(entry, data)


def read_data(source: pathlib.Path) -> dict[str, Any]:
    with zipfile.ZipFile(source) as archive:
        return json.loads(archive.read("data"))


def write_data(source: pathlib.Path, target: pathlib.Path, data: dict[str, Any]) -> None:
    """Copy a model file with ``data`` as its ``data.json``."""
    rewrite_entry(source, target, "data", json.dumps(data).encode())


def edit_data(source: pathlib.Path, target: pathlib.Path, **changes: Any) -> None:
    write_data(source, target, {**read_data(source), **changes})


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[ACER, pathlib.Path]:
    tensorboard_log = str(tmp_path_factory.mktemp("tb"))
    model = ACER("MlpPolicy", "CartPole-v1", tensorboard_log=tensorboard_log, **HYPERPARAMETERS)
    model.learn(200)
    path = tmp_path_factory.mktemp("models") / "acer"
    model.save(path)
    return model, path.with_suffix(".zip")


# ---------------------------------------------------------------------------------------------- round trip


def test_save_appends_zip_and_holds_json_and_tensor_entries(trained: tuple[ACER, pathlib.Path]) -> None:
    _, path = trained
    assert path.exists()
    with zipfile.ZipFile(path) as archive:
        assert sorted(archive.namelist()) == [
            "_stable_baselines3_version",
            "data",
            "optimizer.pth",
            "policy.pth",
            "policy_avg.pth",
            "pytorch_variables.pth",
            "system_info.txt",
        ]
        data = json.loads(archive.read("data"))
    assert data["format"] == "sb3-acer"
    assert data["algorithm"] == "ACER"
    assert data["policy_class"] == "MlpPolicy"
    assert data["num_timesteps"] == 200


@pytest.mark.parametrize("via", ["path", "bytesio"])
def test_load_restores_everything(trained: tuple[ACER, pathlib.Path], via: str) -> None:
    model, path = trained
    source: pathlib.Path | io.BytesIO = path
    if via == "bytesio":
        source = io.BytesIO()
        model.save(source)
        source.seek(0)
    loaded = ACER.load(source)

    for name, value in HYPERPARAMETERS.items():
        attribute = "lr_schedule_name" if name == "lr_schedule" else name  # lr_schedule is SB3's callable
        assert getattr(loaded, attribute) == value, name
    assert loaded.lr_schedule_name == "double_middle_drop"
    assert loaded.tensorboard_log == model.tensorboard_log
    assert loaded.num_timesteps == model.num_timesteps == 200
    assert loaded._n_updates == model._n_updates
    assert loaded._n_replay_updates == model._n_replay_updates > 0
    assert loaded._current_progress_remaining == model._current_progress_remaining
    assert loaded.current_learning_rate() == model.current_learning_rate()
    assert loaded.n_envs == 1
    assert loaded.get_env() is None
    assert loaded.observation_space == model.observation_space
    assert loaded.action_space == model.action_space

    # The average network differs from the policy after training, and both come back exactly.
    assert not th.equal(model.policy.action_net.weight, model.policy_avg.action_net.weight)
    assert_same_tensors(all_tensors(loaded), all_tensors(model))
    assert loaded.optimizer.state_dict()["param_groups"] == model.optimizer.state_dict()["param_groups"]

    np.testing.assert_array_equal(loaded.action_probability(OBS_BATCH), model.action_probability(OBS_BATCH))
    np.testing.assert_array_equal(
        loaded.predict(OBS_BATCH, deterministic=True)[0], model.predict(OBS_BATCH, deterministic=True)[0]
    )


def test_loaded_model_continues_training_like_the_original(trained: tuple[ACER, pathlib.Path]) -> None:
    _, path = trained
    loaded = ACER.load(path, env=gym.make("CartPole-v1"))
    loaded.learn(40, reset_num_timesteps=False)
    assert loaded.num_timesteps == 240
    assert loaded._total_timesteps == 240


def test_load_with_a_different_number_of_envs(trained: tuple[ACER, pathlib.Path]) -> None:
    _, path = trained
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1") for _ in range(3)])
    loaded = ACER.load(path, env=venv)
    assert loaded.n_envs == 3
    assert loaded.replay_buffer is not None and loaded.replay_buffer.n_envs == 3
    loaded.learn(60)
    assert loaded.num_timesteps == 60
    assert loaded.predict(venv.reset())[0].shape == (3,)


def test_load_with_env_of_other_spaces_raises(trained: tuple[ACER, pathlib.Path]) -> None:
    _, path = trained
    with pytest.raises(ValueError, match="spaces differ"):
        ACER.load(path, env=gym.make("MountainCar-v0"))


def test_load_kwargs_and_custom_objects_override_hyperparameters(trained: tuple[ACER, pathlib.Path]) -> None:
    _, path = trained
    loaded = ACER.load(path, custom_objects={"learning_rate": 1e-2}, delta=2.0)
    assert loaded.learning_rate == 1e-2
    assert loaded.delta == 2.0
    assert loaded.gamma == HYPERPARAMETERS["gamma"]
    with pytest.raises(ValueError, match="unknown hyperparameter 'bogus'"):
        ACER.load(path, bogus=1)


def test_custom_objects_replace_the_spaces_when_the_networks_fit(trained: tuple[ACER, pathlib.Path]) -> None:
    """As SB3's load: the spaces of custom_objects replace the saved ones (other bounds); another shape, kind
    or number of actions, or a value that is not a space, is refused with the key named."""
    model, path = trained
    wider = gym.spaces.Box(-10.0, 10.0, model.observation_space.shape, np.float32)
    loaded = ACER.load(path, custom_objects={"observation_space": wider, "action_space": model.action_space})
    assert loaded.observation_space == wider and loaded.action_space == model.action_space
    observation = np.zeros(model.observation_space.shape, np.float32)
    assert (
        loaded.predict(observation, deterministic=True)[0]
        == model.predict(observation, deterministic=True)[0]
    )
    n = int(model.action_space.n)
    for key, space in [
        ("observation_space", gym.spaces.Box(-1.0, 1.0, (7,), np.float32)),
        ("action_space", gym.spaces.Discrete(n + 1)),
        ("action_space", gym.spaces.MultiBinary(n)),
    ]:
        with pytest.raises(ValueError, match=rf"custom_objects\['{key}'\] .* does not fit the saved model's"):
            ACER.load(path, custom_objects={key: space})
    with pytest.raises(
        ValueError, match=r"custom_objects\['action_space'\] must be a gymnasium space, got int"
    ):
        ACER.load(path, custom_objects={"action_space": 3})


@pytest.mark.parametrize("q_lr_ratio", [None, 1.0])  # the saved grouping (two groups), or another one
def test_load_overrides_of_the_optimizer_settings_reach_the_optimizer(
    trained: tuple[ACER, pathlib.Path], q_lr_ratio: float | None
) -> None:
    # Found by review (stop 41): the saved optimizer state put back the saved alpha and eps.
    _, path = trained
    extra = {} if q_lr_ratio is None else {"q_lr_ratio": q_lr_ratio}
    loaded = ACER.load(path, rprop_alpha=0.5, rprop_epsilon=0.1, **extra)
    groups = loaded.optimizer.param_groups
    assert len(groups) == (2 if q_lr_ratio is None else 1)
    assert all((group["alpha"], group["eps"]) == (0.5, 0.1) for group in groups)
    # The model's own settings win over those of a state given to set_parameters, too.
    other = ACER.load(path)
    other.set_parameters(loaded.get_parameters())
    own = (HYPERPARAMETERS["rprop_alpha"], HYPERPARAMETERS["rprop_epsilon"])
    assert all((group["alpha"], group["eps"]) == own for group in other.optimizer.param_groups)


def optimizer_state_by_name(model: ACER) -> dict[str, dict[str, Any]]:
    names = {id(p): name for name, p in model.policy.named_parameters()}
    return {names[id(p)]: state for p, state in model.optimizer.state.items()}


@pytest.mark.parametrize("ratio", [1.0, 2.0, 4.0])
def test_load_with_another_q_lr_ratio_keeps_each_parameters_optimizer_state(
    trained: tuple[ACER, pathlib.Path], ratio: float, tmp_path: pathlib.Path
) -> None:
    """The file holds two optimizer groups (q_lr_ratio 2); loading with ratio 1 makes one group, and a
    file written with one group loads into two. Every parameter keeps its own RMSProp state either way."""
    model, path = trained
    original = optimizer_state_by_name(model)
    assert len(original) == len(list(model.policy.parameters()))
    loaded = ACER.load(path, q_lr_ratio=ratio)
    assert len(loaded.optimizer.param_groups) == (1 if ratio == 1.0 else 2)
    loaded.save(tmp_path / "regrouped")
    again = ACER.load(tmp_path / "regrouped.zip", q_lr_ratio=2.0)
    for restored in (loaded, again):
        states = optimizer_state_by_name(restored)
        assert states.keys() == original.keys()
        for name, state in original.items():
            assert states[name].keys() == state.keys(), name
            for key, value in state.items():
                assert th.equal(th.as_tensor(states[name][key]), th.as_tensor(value)), (name, key)
    loaded.set_env(gym.make("CartPole-v1"))
    loaded.learn(8, reset_num_timesteps=False)
    rate = loaded.current_learning_rate()
    assert [group["lr"] for group in loaded.optimizer.param_groups] == (
        [rate] if ratio == 1.0 else [rate, rate * ratio]
    )


def test_set_parameters_from_another_grouping_replaces_the_optimizer_state(
    trained: tuple[ACER, pathlib.Path],
) -> None:
    """A state saved before any update (and with one group) leaves no RMSProp state behind in a trained
    model whose optimizer has two groups, as torch's load_state_dict would."""
    _, path = trained
    model = ACER.load(path)
    assert len(model.optimizer.param_groups) == 2 and model.optimizer.state
    fresh = ACER("MlpPolicy", "CartPole-v1", **{**HYPERPARAMETERS, "q_lr_ratio": 1.0})
    assert len(fresh.optimizer.param_groups) == 1 and not fresh.optimizer.state
    model.set_parameters(fresh.get_parameters())
    assert not model.optimizer.state
    assert_same_tensors(all_tensors(model), all_tensors(fresh))


def test_set_env_on_a_loaded_model_checks_spaces_and_rebuilds_the_replay_memory(
    trained: tuple[ACER, pathlib.Path],
) -> None:
    _, path = trained
    loaded = ACER.load(path)
    with pytest.raises(ValueError, match="spaces differ"):
        loaded.set_env(gym.make("MountainCar-v0"))
    loaded.set_env(DummyVecEnv([lambda: gym.make("CartPole-v1") for _ in range(2)]))
    assert loaded.n_envs == 2
    loaded.learn(40)
    assert loaded.num_timesteps == 40
    loaded.set_env(gym.make("CartPole-v1"))  # back to one env: the replay memory is rebuilt
    assert loaded.replay_buffer is not None and loaded.replay_buffer.n_envs == 1
    loaded.learn(20)


def test_set_env_without_force_reset_keeps_the_episode() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", replay_ratio=0, n_steps=5).learn(10)
    last_obs = model._last_obs
    model.set_env(model.get_env(), force_reset=False)
    assert model._last_obs is last_obs
    model.set_env(model.get_env())
    assert model._last_obs is None


def test_skipped_updates_and_total_timesteps_survive_save_load(tmp_path: pathlib.Path) -> None:
    """``n_skipped_updates`` and ``_total_timesteps`` are saved and restored."""
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, seed=0).learn(50)
    model.n_skipped_updates = 3
    path = tmp_path / "model.zip"
    model.save(path)
    loaded = ACER.load(path)
    assert loaded.n_skipped_updates == 3
    assert loaded._total_timesteps == 50


# ---------------------------------------------------------------------------------------------- policy kwargs


def test_policy_kwargs_must_match_on_load(tmp_path: pathlib.Path) -> None:
    kwargs = dict(net_arch=[16, dict(pi=[8], qf=[8])], activation_fn=nn.ReLU)
    model = ACER("MlpPolicy", "CartPole-v1", policy_kwargs=kwargs, n_steps=5, replay_ratio=0)
    model.save(tmp_path / "model.zip")
    with pytest.raises(ValueError, match="differ from the saved ones"):
        ACER.load(tmp_path / "model.zip", policy_kwargs=dict(net_arch=[16, dict(pi=[8], qf=[8])]))
    same_with_tuples = dict(net_arch=(16, dict(pi=(8,), qf=[8])), activation_fn=nn.ReLU)
    loaded = ACER.load(tmp_path / "model.zip", env=gym.make("CartPole-v1"), policy_kwargs=same_with_tuples)
    assert loaded.policy_kwargs == kwargs
    assert isinstance(loaded.policy.shared_net[1], nn.ReLU)
    loaded.learn(20)
    assert ACER.load(tmp_path / "model.zip").policy_kwargs == kwargs  # omitted: the saved ones


def test_custom_policy_class_round_trip(tmp_path: pathlib.Path) -> None:
    model = ACER(CustomPolicy, "CartPole-v1", n_steps=5, replay_ratio=0)
    model.save(tmp_path / "custom.zip")
    with zipfile.ZipFile(tmp_path / "custom.zip") as archive:
        assert json.loads(archive.read("data"))["policy_class"] == f"{__name__}:CustomPolicy"
    # Imported (this module) is not enough: the file resolves a class of the caller's only when passed.
    with pytest.raises(ModelFileError, match=r"custom_objects=\{'policy_class': CustomPolicy\}"):
        ACER.load(tmp_path / "custom.zip")
    loaded = ACER.load(tmp_path / "custom.zip", custom_objects={"policy_class": CustomPolicy})
    assert type(loaded.policy) is CustomPolicy
    np.testing.assert_array_equal(loaded.action_probability(OBS_BATCH), model.action_probability(OBS_BATCH))


def test_custom_objects_replace_an_unloadable_policy_class(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """SB2's test_save_custom_objects: a policy entry that cannot be loaded, replaced by custom_objects."""
    _, path = trained
    broken = tmp_path / "broken.zip"
    edit_data(path, broken, policy_class="no_such_module_for_acer:Policy")
    with pytest.raises(ModelFileError, match="no_such_module_for_acer"):
        ACER.load(broken)
    loaded = ACER.load(broken, custom_objects={"policy_class": CustomPolicy})
    assert type(loaded.policy) is CustomPolicy
    assert ACER.load(broken, policy=CustomPolicy).policy_class is CustomPolicy  # SB2's spelling


# ---------------------------------------------------------------------------------------------- damaged files


def test_missing_file_raises_file_not_found(tmp_path: pathlib.Path) -> None:
    with pytest.raises(FileNotFoundError):
        ACER.load(tmp_path / "nothing.zip")
    with pytest.raises(FileNotFoundError):
        ACER.load(tmp_path / "nothing")


def test_truncated_file_raises(trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path) -> None:
    _, path = trained
    content = path.read_bytes()
    for length in (0, 100, len(content) // 2, len(content) - 10):
        truncated = tmp_path / f"truncated_{length}.zip"
        truncated.write_bytes(content[:length])
        with pytest.raises(ModelFileError, match="truncated"):
            ACER.load(truncated)
        with pytest.raises(ModelFileError, match="truncated"):
            ACER.load(io.BytesIO(content[:length]))


def test_not_a_zip_raises(tmp_path: pathlib.Path) -> None:
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(np.random.default_rng(0).bytes(5000))
    with pytest.raises(ModelFileError, match="not a model file"):
        ACER.load(garbage)


@pytest.mark.parametrize("entry", ["data", "policy.pth", "optimizer.pth"])
def test_corrupt_entry_raises(trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, entry: str) -> None:
    _, path = trained
    content = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(entry)
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for offset in (start + 5, start + info.compress_size // 2):
        damaged = content.copy()
        damaged[offset : offset + 16] = bytes(16)
        target = tmp_path / f"corrupt_{offset}.zip"
        target.write_bytes(bytes(damaged))
        with pytest.raises(ModelFileError, match=r"damaged|corrupt"):
            ACER.load(target)


def test_wrong_algorithm_raises(trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path) -> None:
    _, path = trained
    edit_data(path, tmp_path / "ppo.zip", algorithm="PPO")
    with pytest.raises(ModelFileError, match="holds a PPO model, not an ACER model"):
        ACER.load(tmp_path / "ppo.zip")


def test_stable_baselines3_file_is_refused(tmp_path: pathlib.Path) -> None:
    PPO("MlpPolicy", "CartPole-v1", n_steps=16, batch_size=16).save(tmp_path / "sb3_ppo.zip")
    says = (
        r"sb3_ppo\.zip is not an sb3-acer model file \(SB2 and SB3 model files, which unpickle code, are not "
        rf"read\); it is a Stable-Baselines3 model file \(stable-baselines3 {re.escape(sb3.__version__)}\): "
        r"load it with the class of the algorithm that saved it \(e\.g\. stable_baselines3\.PPO\.load\), "
        r"and sb3-acer's own files with sb3_acer\.ACER\.load$"
    )
    with pytest.raises(ModelFileError, match=says):
        ACER.load(tmp_path / "sb3_ppo.zip")
    with pytest.raises(ModelFileError, match=says.replace(r"sb3_ppo\.zip", r"<_io\.BytesIO object at \w+>")):
        ACER.load(io.BytesIO((tmp_path / "sb3_ppo.zip").read_bytes()))


def test_a_zip_of_neither_library_is_only_not_an_sb3_acer_file(tmp_path: pathlib.Path) -> None:
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("data", "{}")
    with pytest.raises(ModelFileError, match=r"are not read\)$"):
        ACER.load(tmp_path / "other.zip")


def test_newer_format_version_raises(trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path) -> None:
    _, path = trained
    edit_data(path, tmp_path / "future.zip", format_version=3)
    with pytest.raises(ModelFileError, match=r"format version 3, newer than this sb3-acer reads \(2\)"):
        ACER.load(tmp_path / "future.zip")


@pytest.mark.parametrize(
    ("name", "saved", "default"),
    [
        # Files written before the switch existed bootstrap on time limits, as those versions did.
        ("handle_timeout_termination", False, True),
        # Files written before Retrace(lambda) existed used lambda = 1 (ACER's traces).
        ("retrace_lambda", 0.7, 1.0),
        # Files written before q_lr_ratio existed hold one optimizer group; the loader regroups either way.
        ("q_lr_ratio", 2.0, 1.0),
        # Files written before stats_window_size was a setting averaged over SB3's 100 episodes.
        ("stats_window_size", 7, 100),
    ],
)
def test_file_without_a_newer_hyperparameter_loads_with_the_default(
    name: str, saved: Any, default: Any, trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    data = read_data(path)
    value = data["hyperparameters"].pop(name)
    assert (value, type(value)) == (saved, type(saved))
    write_data(path, tmp_path / "older.zip", data)
    loaded = getattr(ACER.load(tmp_path / "older.zip"), name)
    assert (loaded, type(loaded)) == (default, type(default))


def test_missing_data_entry_raises(trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path) -> None:
    _, path = trained
    data = read_data(path)
    del data["hyperparameters"]
    write_data(path, tmp_path / "partial.zip", data)
    with pytest.raises(ModelFileError, match="lacks the entry 'hyperparameters'"):
        ACER.load(tmp_path / "partial.zip")


# ------------------------------------------------------------------------------------------ files are data


def test_pickle_payload_in_tensor_entry_is_not_executed(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    payload = io.BytesIO()
    th.save({"action_net.weight": MarkerPayload(tmp_path / "pwned_by_load")}, payload)
    # The payload is live: an unrestricted torch.load runs it.
    th.load(io.BytesIO(payload.getvalue()), weights_only=False)
    assert (tmp_path / "pwned_by_load").exists()
    (tmp_path / "pwned_by_load").unlink()

    rewrite_entry(path, tmp_path / "evil.zip", "policy.pth", payload.getvalue())
    with pytest.raises(ModelFileError, match=r"policy\.pth is corrupt or holds something other than tensors"):
        ACER.load(tmp_path / "evil.zip")
    assert not (tmp_path / "pwned_by_load").exists()
    model = ACER("MlpPolicy", "CartPole-v1")
    with pytest.raises(ModelFileError, match=r"policy\.pth"):
        model.set_parameters(tmp_path / "evil.zip")
    assert not (tmp_path / "pwned_by_load").exists()


def test_plain_pickle_in_tensor_entry_is_not_executed(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    rewrite_entry(
        path, tmp_path / "evil.zip", "optimizer.pth", pickle.dumps(MarkerPayload(tmp_path / "pwned"))
    )
    with pytest.raises(ModelFileError, match=r"optimizer\.pth"):
        ACER.load(tmp_path / "evil.zip")
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("package", [th, sb3_acer])
def test_model_file_never_imports_a_module(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, package: Any
) -> None:
    """A module inside torch's or sb3-acer's package that exits the process on import (past every
    ``except Exception``): a file naming it raises ModelFileError, and the module is never imported."""
    _, path = trained
    marker = tmp_path / "imported"
    (tmp_path / "acer_exits_on_import.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nimport sys\nimport torch\n"
        "class Policy(torch.nn.Module):\n    pass\nsys.exit(3)\n"
    )
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    module = f"{package.__name__}.acer_exits_on_import"
    assert importlib.util.find_spec(module) is not None  # importable: only the table keeps it out
    edit_data(path, tmp_path / "policy.zip", policy_class=f"{module}:Policy")
    edit_data(
        path, tmp_path / "kwargs.zip", policy_kwargs={"activation_fn": {"__class__": f"{module}:Policy"}}
    )
    imported = set(sys.modules)
    with pytest.raises(ModelFileError, match=rf"policy\.zip: policy_class names the class '{module}:Policy'"):
        ACER.load(tmp_path / "policy.zip")
    with pytest.raises(ModelFileError, match=r"kwargs\.zip: policy_kwargs\.activation_fn names the class"):
        ACER.load(tmp_path / "kwargs.zip")
    assert not marker.exists()
    assert set(sys.modules) == imported


@pytest.mark.parametrize("name", ["os:system", "builtins:dict", "pathlib:Path", "collections:OrderedDict"])
def test_model_file_refuses_classes_that_are_not_in_the_table(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, name: str
) -> None:
    """A path outside the table is refused, even passed in custom_objects unless it is a torch module or
    optimizer class (a file naming any other class is not called with its kwargs)."""
    qualname = name.partition(":")[2]
    message = (
        f"policy_kwargs.activation_fn names the class {name!r}, which is none of sb3-acer's policies and "
        "extractors, Stable-Baselines3's extractors, or torch's activations and optimizers; a model file "
        "never imports a module (that would run its code): pass the class, ACER.load(path, "
        f"custom_objects={{'activation_fn': {qualname}}}), or the whole policy_kwargs, "
        "custom_objects={'policy_kwargs': ...}"
    )
    with pytest.raises(ModelFileError, match=f"^{re.escape(message)}$"):
        decode_json_value({"__class__": name}, "policy_kwargs.activation_fn")
    _, path = trained
    edit_data(path, tmp_path / "class.zip", policy_kwargs={"activation_fn": {"__class__": name}})
    in_file = f"{tmp_path / 'class.zip'}: {message}"
    with pytest.raises(ModelFileError, match=f"^{re.escape(in_file)}$"):
        ACER.load(tmp_path / "class.zip")
    with pytest.raises(ModelFileError, match=re.escape(message)):
        ACER.load(tmp_path / "class.zip", custom_objects={"activation_fn": collections.OrderedDict})
    assert decode_json_value({"__class__": "torch.nn.modules.activation:ReLU"}) is nn.ReLU


def test_the_class_table_holds_every_path_a_model_file_names_its_classes_by(tmp_path: pathlib.Path) -> None:
    for cls in CLASS_TABLE.values():  # the path a file written today names
        assert CLASS_TABLE[f"{cls.__module__}:{cls.__qualname__}"] is cls
    for name in ACER.policy_aliases.values():  # sb3-acer 0.1's module, and today's public path
        assert CLASS_TABLE[f"sb3_acer.policies:{name.__name__}"] is name
    assert CLASS_TABLE["sb3_acer.policies.feed_forward:MlpPolicy"] is MlpPolicy
    assert CLASS_TABLE["sb3_acer.torch_layers:MinAtarCNN"] is MinAtarCNN
    # sb3-acer 0.1's stochastic-dueling classes are the policies of the same name without SDN.
    assert CLASS_TABLE["sb3_acer.policies.sdn:SDNMlpPolicy"] is MlpPolicy
    assert (
        CLASS_TABLE["sb3_acer.policies.sdn_recurrent:SDNMlpLnLstmPolicy"]
        is ACER.policy_aliases["MlpLnLstmPolicy"]
    )
    assert (
        CLASS_TABLE["sb3_acer.policies:RecurrentSDNPolicy"]
        is CLASS_TABLE["sb3_acer.policies:RecurrentACERPolicy"]
    )
    assert CLASS_TABLE["stable_baselines3.common.torch_layers:NatureCNN"] is NatureCNN
    assert CLASS_TABLE["torch.nn.modules.activation:Tanh"] is nn.Tanh
    assert CLASS_TABLE["torch.optim:Adam"] is CLASS_TABLE["torch.optim.adam:Adam"] is th.optim.Adam
    assert not {th.optim.LBFGS, th.optim.SparseAdam, th.optim.Optimizer} & set(CLASS_TABLE.values())
    # A class of the caller's resolves the path of its module and qualname when passed in custom_objects.
    model = ACER(
        "MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0, policy_kwargs=dict(activation_fn=MyTanh)
    )
    model.save(tmp_path / "mine.zip")
    with pytest.raises(ModelFileError, match=r"custom_objects=\{'activation_fn': MyTanh\}"):
        ACER.load(tmp_path / "mine.zip")
    loaded = ACER.load(tmp_path / "mine.zip", custom_objects={"activation_fn": MyTanh})
    assert loaded.policy_kwargs["activation_fn"] is MyTanh


class MyTanh(nn.Tanh):
    """A user's activation class."""


# ---------------------------------------------------------------------------------------------- parameters


def test_get_parameters_are_copies_and_round_trip(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings)
    model.learn(50)
    params = model.get_parameters()
    assert set(params) == {"policy", "policy_avg", "optimizer"}
    before = all_tensors(model)
    probs_before = model.action_probability(OBS_BATCH)
    model.learn(50)
    assert not np.array_equal(model.action_probability(OBS_BATCH), probs_before)
    model.set_parameters(params)
    assert_same_tensors(all_tensors(model), before)
    np.testing.assert_array_equal(model.action_probability(OBS_BATCH), probs_before)


def test_set_parameters_exact_match_missing_key_changes_nothing() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", seed=0)
    other = ACER("MlpPolicy", "CartPole-v1", seed=1).get_parameters()
    before = all_tensors(model)

    del other["policy"]["action_net.bias"]
    with pytest.raises(RuntimeError, match=r"policy: missing key\(s\) \['action_net.bias'\]"):
        model.set_parameters(other, exact_match=True)
    assert_same_tensors(all_tensors(model), before)

    del other["optimizer"]
    with pytest.raises(ValueError, match=r"missing parameter group\(s\) \[.optimizer.\]"):  # as SB3
        model.set_parameters(other, exact_match=True)
    assert_same_tensors(all_tensors(model), before)

    other["policy"]["q_net.bias"] = th.zeros(5)
    with pytest.raises(RuntimeError, match=r"q_net\.bias: shape"):
        model.set_parameters(other, exact_match=False)
    assert_same_tensors(all_tensors(model), before)

    with pytest.raises(ValueError, match="unknown parameter group"):
        model.set_parameters({"critic": {}}, exact_match=False)
    assert_same_tensors(all_tensors(model), before)


def test_set_parameters_bad_optimizer_state_changes_nothing() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", seed=0)
    other = ACER("MlpPolicy", "CartPole-v1", seed=1, policy_kwargs=dict(net_arch=[8])).get_parameters()
    params = ACER("MlpPolicy", "CartPole-v1", seed=1).get_parameters()
    params["optimizer"] = other["optimizer"]  # another network's optimizer: fewer parameter tensors
    before = all_tensors(model)
    with pytest.raises(ValueError):
        model.set_parameters(params)
    assert_same_tensors(all_tensors(model), before)


def test_set_parameters_partial_without_exact_match() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", seed=0)
    other = ACER("MlpPolicy", "CartPole-v1", seed=1)
    before = all_tensors(model)
    weight = other.policy.action_net.weight.detach().clone()
    model.set_parameters({"policy": {"action_net.weight": weight}}, exact_match=False)
    after = all_tensors(model)
    assert th.equal(after["policy.action_net.weight"], weight)
    assert not th.equal(before["policy.action_net.weight"], weight)
    changed = {name for name in before if not th.equal(before[name], after[name])}
    assert changed == {"policy.action_net.weight"}


@pytest.mark.parametrize("via", ["path", "str", "bytesio"])
def test_set_parameters_from_file(trained: tuple[ACER, pathlib.Path], via: str) -> None:
    saved, path = trained
    model = ACER("MlpPolicy", "CartPole-v1", **HYPERPARAMETERS)
    assert not np.array_equal(model.action_probability(OBS_BATCH), saved.action_probability(OBS_BATCH))
    source: Any = {"path": path, "str": str(path), "bytesio": io.BytesIO(path.read_bytes())}[via]
    model.set_parameters(source)
    assert_same_tensors(all_tensors(model), all_tensors(saved))
    np.testing.assert_array_equal(model.action_probability(OBS_BATCH), saved.action_probability(OBS_BATCH))


def test_identity_model_survives_save_load_with_env(tmp_path: pathlib.Path) -> None:
    """SB2's test_model_manipulation in small: the loaded model acts the same in its env."""
    env = DummyVecEnv([lambda: IdentityEnv(4, ep_length=20)])
    model = ACER("MlpPolicy", env, seed=0, n_steps=5, buffer_size=100, replay_start=20).learn(300)
    obs = np.arange(4)
    model.save(tmp_path / "identity")
    loaded = ACER.load(tmp_path / "identity", env=env)
    np.testing.assert_array_equal(
        loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0]
    )
    assert loaded.action_probability(obs, actions=obs).shape == (4, 1)
    loaded.learn(100)


def test_a_callable_learning_rate_is_saved_as_a_rate_the_file_loads_with(tmp_path: pathlib.Path) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=10, replay_ratio=0, learning_rate=lambda p: 1e-3 * p)
    model._current_progress_remaining = 0.25
    with pytest.warns(UserWarning, match="which a model file cannot hold: it is saved as the constant rate"):
        model.save(tmp_path / "mid")
    loaded = ACER.load(tmp_path / "mid.zip")
    assert (loaded.learning_rate, loaded.lr_schedule_name) == (pytest.approx(2.5e-4), "constant")
    model.learn(40)  # the schedule ends at 0, which is no learning rate: the initial one is stored
    assert model.current_learning_rate() == 0.0
    with pytest.warns(UserWarning, match="A file holds these schedules as data: a number with lr_schedule"):
        model.save(tmp_path / "end")
    loaded = ACER.load(tmp_path / "end.zip")
    assert (loaded.learning_rate, loaded.lr_schedule_name) == (pytest.approx(1e-3), "constant")


def _zoo_linear(rate: float) -> Any:
    """The zoo's ``lin_<rate>``, as rl-zoo3 passes it to the algorithm."""
    return pytest.importorskip("rl_zoo3.utils").SimpleLinearSchedule(rate)


@pytest.mark.parametrize(
    ("make", "saved"),
    [
        pytest.param(lambda: LinearSchedule(1e-3, 0.0, 1.0), (1e-3, "linear"), id="SB3-LinearSchedule"),
        pytest.param(lambda: ConstantSchedule(5e-4), (5e-4, "constant"), id="SB3-ConstantSchedule"),
        pytest.param(lambda: _zoo_linear(1e-3), (1e-3, "linear"), id="zoo-lin_1e-3"),
    ],
)
def test_a_named_schedule_survives_save_and_load_and_training_resumes_on_its_curve(
    tmp_path: pathlib.Path, make: Any, saved: tuple[float, str]
) -> None:
    schedule = make()
    rate, name = saved
    model = ACER("MlpPolicy", "CartPole-v1", seed=0, n_steps=10, replay_ratio=0, learning_rate=schedule)

    def stop_at(trained: ACER, steps: int) -> Any:  # SB2's callable callback: stop once steps are taken
        return lambda locals_, globals_: trained.num_timesteps < steps

    model.learn(100, callback=stop_at(model, 50))  # last update at 40 of 100 steps: progress remaining 0.6
    model.save(tmp_path / "mid")  # no warning (warnings are errors here): the schedule is data
    loaded = ACER.load(tmp_path / "mid.zip", env="CartPole-v1")
    assert (loaded.learning_rate, loaded.lr_schedule_name) == saved
    for progress_remaining in (1.0, 0.6, 0.5, 0.3, 0.0):
        assert loaded.lr_schedule(progress_remaining) == pytest.approx(
            schedule(progress_remaining), rel=1e-12, abs=1e-18
        )
    before, after = {"linear": (0.6, 0.4), "constant": (1.0, 1.0)}[name]
    for trained in (model, loaded):
        assert trained.current_learning_rate() == pytest.approx(rate * before, rel=1e-12)
        trained.learn(50, reset_num_timesteps=False, callback=stop_at(trained, 70))  # update at 60 of 100
        assert trained.num_timesteps == 70
        assert trained.current_learning_rate() == pytest.approx(rate * after, rel=1e-12)


SHORT_KEY_STATE = {"bit_generator": "MT19937", "state": {"key": [1, 2, 3], "pos": 0}}


#: The text of an integer of 5000 digits, past Python's limit for reading one (4300 digits).
DIGITS_5000 = "9" * 5000


def _tamper(data: dict[str, Any], change: str) -> None:
    counter = {
        "num_timesteps of 1.5": ("num_timesteps", 1.5),
        "num_timesteps of -5": ("num_timesteps", -5),
        "num_timesteps of true": ("num_timesteps", True),
        "n_updates that is text": ("n_updates", "3"),
        "total_timesteps of 2**63": ("total_timesteps", 2**63),
        "progress_remaining of 2": ("progress_remaining", 2.0),
        "progress_remaining of NaN": ("progress_remaining", float("nan")),
    }
    if change in counter:
        key, value = counter[change]
        data[key] = value
    elif change == "5000-digit integer":
        data["n_skipped_updates"] = "DIGITS_5000"  # written as a number by write_data's caller
    elif change == "unknown features_extractor_kwargs key":
        data["policy_kwargs"]["features_extractor_kwargs"] = {"warp": 9}
    elif change == "gamma of 10**400":
        data["hyperparameters"]["gamma"] = 10**400
    elif change == "stats_window_size of 10**30":
        data["hyperparameters"]["stats_window_size"] = 10**30
    elif change == "LBFGS as the optimizer":
        data["policy_kwargs"]["optimizer_class"] = {"__class__": "torch.optim.lbfgs:LBFGS"}
    elif change == "replay generator with a short key":
        data["rng_states"]["replay"] = SHORT_KEY_STATE
    elif change == "numpy state with a short key":
        data["rng_states"]["numpy"]["key"] = [1, 2, 3]
    elif change == "unknown hyperparameter":
        data["hyperparameters"]["warp_speed"] = 9
    elif change == "hyperparameters not an object":
        data["hyperparameters"] = [1]
    elif change == "invalid hyperparameter value":
        data["hyperparameters"]["gamma"] = 2.0
    elif change == "Box shape that does not fit its bounds":
        data["observation_space"]["shape"] = [7]
    elif change == "Discrete with n=0":
        data["action_space"]["n"] = 0
    elif change == "counter that is not a number":
        data["num_timesteps"] = "abc"
    elif change == "n_envs that is not a number":
        data["n_envs"] = "abc"
    elif change == "n_envs of zero":
        data["n_envs"] = 0
    elif change == "policy class that is not a name":
        data["policy_class"] = 5
    elif change == "num_procs of a million":  # torch.set_num_threads(10**6) kills the process
        data["hyperparameters"]["num_procs"] = 10**6
    elif change == "action space too large to build":
        data["action_space"]["n"] = 10**12


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("replay generator with a short key", "random generator states are corrupt"),
        ("numpy state with a short key", "malformed random generator states"),
        ("unknown hyperparameter", r"the model data holds unknown hyperparameters \['warp_speed'\]"),
        ("hyperparameters not an object", "hyperparameters are not an object"),
        ("invalid hyperparameter value", "the saved settings are invalid: gamma must be in"),
        ("Box shape that does not fit its bounds", "the model data is invalid"),
        ("Discrete with n=0", "the model data is invalid"),
        ("counter that is not a number", "the model data holds an invalid counter"),
        ("n_envs that is not a number", "the model data's n_envs must be a positive integer, not 'abc'"),
        ("n_envs of zero", "the model data's n_envs must be a positive integer, not 0"),
        ("policy class that is not a name", "the model data's policy_class must be a name, not 5"),
        ("num_procs of a million", "the saved settings are invalid: num_procs must be .* at most 1024"),
        ("action space too large to build", "the policy cannot be built from the saved settings: .*allocate"),
        (
            "num_timesteps of 1.5",
            r"invalid counter: num_timesteps must be an integer in \[0, 2\*\*63 - 1\], got 1.5$",
        ),
        ("num_timesteps of -5", r"invalid counter: num_timesteps must be an integer in .*, got -5$"),
        ("num_timesteps of true", r"invalid counter: num_timesteps must be an integer in .*, got True$"),
        ("n_updates that is text", r"invalid counter: n_updates must be an integer in .*, got '3'$"),
        (
            "total_timesteps of 2**63",
            r"invalid counter: total_timesteps must be .*, got 9223372036854775808$",
        ),
        (
            "progress_remaining of 2",
            r"invalid counter: progress_remaining must be a number in \[0, 1\], got 2.0$",
        ),
        (
            "progress_remaining of NaN",
            r"invalid counter: progress_remaining must be a number in .*, got nan$",
        ),
        ("5000-digit integer", r"bad\.zip: data is corrupt: Exceeds the limit \(4300 digits\)"),
        (
            "unknown features_extractor_kwargs key",
            r"bad\.zip: the model cannot be built from the saved settings: .*keyword argument 'warp'",
        ),
        (
            "gamma of 10**400",
            r"bad\.zip: the saved settings are invalid: gamma must be a finite number, got 1000",
        ),
        (
            "stats_window_size of 10**30",
            r"bad\.zip: the saved settings are invalid: stats_window_size must be .* at most 2\*\*63 - 1",
        ),
        (
            "LBFGS as the optimizer",
            r"policy_kwargs\.optimizer_class names the class 'torch\.optim\.lbfgs:LBFGS', which is none of",
        ),
    ],
)
def test_every_tampered_model_file_raises_model_file_error(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, change: str, message: str
) -> None:
    _, path = trained
    data = read_data(path)
    _tamper(data, change)
    text = json.dumps(data).replace('"DIGITS_5000"', DIGITS_5000)
    rewrite_entry(path, tmp_path / "bad.zip", "data", text.encode())
    with pytest.raises(ModelFileError, match=message):
        ACER.load(tmp_path / "bad.zip")


def test_a_saved_buffer_size_no_machine_holds_is_the_files_error_and_a_given_one_the_callers(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    edit_data(
        path,
        tmp_path / "huge.zip",
        hyperparameters={**read_data(path)["hyperparameters"], "buffer_size": 10**20},
    )
    assert ACER.load(tmp_path / "huge.zip").buffer_size == 10**20  # no env: no replay memory is made
    message = (
        r"huge\.zip: the model cannot be built from the saved settings: buffer_size=100000000000000000000 "
    )
    with pytest.raises(ModelFileError, match=message + r"\(the replay memory\) needs [0-9,]+ bytes"):
        ACER.load(tmp_path / "huge.zip", env=gym.make("CartPole-v1"))
    with pytest.raises(
        ValueError, match=r"^buffer_size=100000000000000000000 \(the replay memory\)"
    ) as raised:
        ACER.load(path, env=gym.make("CartPole-v1"), buffer_size=10**20)
    assert not isinstance(raised.value, ModelFileError)


def test_tensors_that_do_not_fit_raise_model_file_error(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    other = tmp_path / "other.pth"
    th.save({"weight": th.zeros(3)}, other)
    rewrite_entry(path, tmp_path / "bad.zip", "policy.pth", other.read_bytes())
    with pytest.raises(ModelFileError, match="the saved tensors do not fit the model"):
        ACER.load(tmp_path / "bad.zip")
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist() if name != "policy.pth"}
    with zipfile.ZipFile(tmp_path / "missing.zip", "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    with pytest.raises(ModelFileError, match="the saved tensors do not fit the model"):
        ACER.load(tmp_path / "missing.zip")


def test_invalid_override_at_load_is_reported_as_the_callers(trained: tuple[ACER, pathlib.Path]) -> None:
    _, path = trained
    with pytest.raises(ValueError, match="gamma must be in") as raised:
        ACER.load(path, gamma=2.0)
    assert not isinstance(raised.value, ModelFileError)


# --------------------------------------------------------- custom objects, optimizer states and seeds at load


class ScriptExtractor(FlattenExtractor):
    """Stands for a features extractor defined in a training script (``__main__``)."""


def test_custom_objects_replace_policy_kwargs_naming_a_class_that_cannot_be_found(
    tmp_path: pathlib.Path,
) -> None:
    # Trained in a script whose extractor class the loading script cannot import: the saved policy_kwargs
    # name it, and custom_objects={"policy_kwargs": ...} gives the class instead (as SB3's load does).
    model = ACER(
        "MlpPolicy",
        "CartPole-v1",
        n_steps=5,
        replay_ratio=0,
        seed=0,
        policy_kwargs=dict(features_extractor_class=ScriptExtractor, net_arch=[16]),
    )
    model.save(tmp_path / "script.zip")
    data = read_data(tmp_path / "script.zip")
    assert data["policy_kwargs"]["features_extractor_class"] == {"__class__": f"{__name__}:ScriptExtractor"}
    data["policy_kwargs"]["features_extractor_class"] = {"__class__": "__main__:ScriptExtractor"}
    write_data(tmp_path / "script.zip", tmp_path / "elsewhere.zip", data)
    with pytest.raises(ModelFileError, match=r"custom_objects=\{'policy_kwargs': \.\.\.\}"):
        ACER.load(tmp_path / "elsewhere.zip")
    given = dict(features_extractor_class=ScriptExtractor, net_arch=[16])
    loaded = ACER.load(tmp_path / "elsewhere.zip", custom_objects={"policy_kwargs": given})
    assert type(loaded.policy.features_extractor) is ScriptExtractor
    np.testing.assert_array_equal(loaded.action_probability(OBS_BATCH), model.action_probability(OBS_BATCH))
    # Another network given this way does not fit the saved tensors.
    with pytest.raises(ModelFileError, match="the saved tensors do not fit the model"):
        ACER.load(tmp_path / "elsewhere.zip", custom_objects={"policy_kwargs": dict(net_arch=[8])})


def test_set_parameters_refuses_another_optimizers_state_and_changes_nothing() -> None:
    adam = ACER("MlpPolicy", "CartPole-v1", seed=1, policy_kwargs=dict(optimizer_class=th.optim.Adam))
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, seed=0)
    before = all_tensors(model)
    with pytest.raises(ValueError, match=r"optimizer: the saved state is an? .*'betas'.*another optimizer"):
        model.set_parameters(adam.get_parameters())
    assert_same_tensors(all_tensors(model), before)
    model.learn(20)  # still trains


def test_load_with_a_seed_reseeds_instead_of_restoring_the_saved_streams(
    trained: tuple[ACER, pathlib.Path],
) -> None:
    _, path = trained

    def draws(model: ACER) -> tuple[float, ...]:
        return (np.random.random(), float(th.rand(1)), float(model._replay_rng.random()))

    restored = [draws(ACER.load(path)) for _ in range(2)]
    assert restored[0] == restored[1]  # the saved streams, continued
    seeded = {seed: draws(ACER.load(path, seed=seed)) for seed in (1, 2)}
    assert seeded[1] != seeded[2] and restored[0] not in seeded.values()
    assert draws(ACER.load(path, seed=1)) == seeded[1]
    assert ACER.load(path, seed=1).seed == 1


def test_a_load_that_fails_leaves_the_thread_count_and_generators_as_they_were(
    tmp_path: pathlib.Path,
) -> None:
    threads = th.get_num_threads()
    ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0, num_procs=threads + 1).save(tmp_path / "m")
    th.set_num_threads(threads)
    numpy_state, torch_state = np.random.get_state()[1].copy(), th.get_rng_state()  # type: ignore[index]
    with pytest.raises(ModelFileError, match="the saved tensors do not fit the model"):
        ACER.load(tmp_path / "m.zip", custom_objects={"policy_kwargs": dict(net_arch=[8])})
    assert th.get_num_threads() == threads  # the saved num_procs was not left applied
    np.testing.assert_array_equal(np.random.get_state()[1], numpy_state)  # type: ignore[index]
    assert th.equal(th.get_rng_state(), torch_state)
    with pytest.raises(ValueError, match=r"the policy cannot be built for the saved observation space Box"):
        ACER.load(tmp_path / "m.zip", policy="CnnPolicy")  # SB3's NatureCNN asserts it gets images
    assert th.get_num_threads() == threads


# ------------------------------------------------------------ damaged entries, file permissions, saved spaces


def rewrite_tensors(source: pathlib.Path, target: pathlib.Path, name: str, state: Any) -> None:
    """Copy a model file with ``state`` saved by torch as its entry ``name``."""
    buffer = io.BytesIO()
    th.save(state, buffer)
    rewrite_entry(source, target, name, buffer.getvalue())


def test_deeply_nested_data_json_raises_model_file_error(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    rewrite_entry(path, tmp_path / "bad.zip", "data", b"[" * 100_000)
    with pytest.raises(ModelFileError, match=r"bad\.zip: data is corrupt"):
        ACER.load(tmp_path / "bad.zip")


#: Each entry padded to expand 1000-fold, the size its zip then declares (``None``: the true one), the error.
MODEL_BOMBS = (
    (
        "data",
        None,
        rf"entry data declares {BOMB_BYTES // 10**5}\d{{5}} bytes, more than the 67108864 it may hold",
    ),
    ("data", 4096, r"is damaged \(truncated or corrupt\): Bad CRC-32 for file 'data'"),
    ("policy.pth", None, r"entry policy\.pth declares \d+ bytes, more than the \d+ .* do not fit the model"),
    ("optimizer.pth", None, r"entry optimizer\.pth declares \d+ bytes, more than the \d+ it may hold"),
    ("extra.pth", None, r"unknown tensor entry extra\.pth \(refused unread\)"),
)


def test_model_file_entries_that_expand_1000_fold_are_refused_in_bounded_memory(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """A 100 KB file whose entry decompresses to 100 MB (``data`` padded with whitespace, a tensor entry or an
    unknown one padded with zeros) is refused before it is read: before, ``ACER.load`` read every entry whole
    (1.4 GB for 600 MB of padding). An entry that holds more than its zip declares is refused once it passes
    that size."""
    model, path = trained
    bombs = []
    with zipfile.ZipFile(path) as archive:
        honest = {name: archive.read(name) for name in archive.namelist()}
    for case, (entry, declared, _) in enumerate(MODEL_BOMBS):
        bombs.append(tmp_path / f"bomb{case}.zip")
        content = honest.get(entry, b"")
        head, tail = (content[:-1], content[-1:]) if entry == "data" else (content, b"")
        rewrite_padded(path, bombs[-1], entry, head, tail, padding=b" " if entry == "data" else b"\0")
        if declared is not None:
            declare_size(bombs[-1], entry, declared)
        assert bombs[-1].stat().st_size < 2 * BOMB_BYTES // 1000 + path.stat().st_size
    results = peak_increases(
        f"from sb3_acer import ACER\nACER.load({str(path)!r})",
        [f"ACER.load({str(bomb)!r})" for bomb in bombs],
    )
    for (entry, _, error), bomb, (increase, outcome) in zip(MODEL_BOMBS, bombs, results, strict=True):
        assert outcome.startswith("ModelFileError: ") and re.search(error, outcome), outcome
        assert increase < ALLOWED_MB, f"loading the {entry} bomb took {increase:.0f} MB more"
        if entry.endswith(".pth"):  # set_parameters reads the file within the model's sizes too
            with pytest.raises(ModelFileError, match=error):
                model.set_parameters(bomb)


def test_a_tensor_record_declaring_more_than_its_entry_holds_is_refused_before_torch_reads_it(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """``torch.load`` reads each record of a ``torch.save`` archive at the size its inner zip declares: a
    record may not declare more than the entry holds (checked before torch reads it)."""
    model, path = trained
    inner = tmp_path / "policy.pth"
    th.save(model.policy.state_dict(), inner)
    with zipfile.ZipFile(inner) as archive:
        record = next(name for name in archive.namelist() if "/data/" in name)
    declare_size(inner, record, 2**31)
    rewrite_entry(path, tmp_path / "bad.zip", "policy.pth", inner.read_bytes())
    with pytest.raises(
        ModelFileError,
        match=r"entry policy\.pth is corrupt .*: its records declare \d+ bytes, more than the \d+ it holds",
    ):
        ACER.load(tmp_path / "bad.zip")


def test_a_space_of_infinite_size_is_invalid_model_data(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """Found by the fuzzing test: ``"n": Infinity`` raised ``OverflowError``."""
    _, path = trained
    data = read_data(path)
    data["action_space"]["n"] = float("inf")
    rewrite_entry(path, tmp_path / "bad.zip", "data", json.dumps(data).encode())
    with pytest.raises(
        ModelFileError, match="the model data is invalid: Discrete space: cannot convert float inf"
    ):
        ACER.load(tmp_path / "bad.zip")


def test_a_tensor_entry_holding_text_raises_model_file_error(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    model, path = trained
    state: dict[str, Any] = dict(model.policy.state_dict())
    state["action_net.bias"] = "abc"
    rewrite_tensors(path, tmp_path / "bad.zip", "policy.pth", state)
    with pytest.raises(ModelFileError, match=r"policy\.action_net\.bias: not a tensor \(str\)"):
        ACER.load(tmp_path / "bad.zip")


def test_non_finite_weights_are_refused_on_load_and_by_set_parameters(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    model, path = trained
    state = {key: value.clone() for key, value in model.policy.state_dict().items()}
    state["action_net.weight"][0, 0] = float("nan")
    rewrite_tensors(path, tmp_path / "nan.zip", "policy.pth", state)
    with pytest.raises(
        ModelFileError, match=r"policy\.action_net\.weight: holds non-finite values \(NaN or inf\)"
    ):
        ACER.load(tmp_path / "nan.zip")

    fresh = ACER("MlpPolicy", "CartPole-v1", seed=0)
    params = fresh.get_parameters()
    params["policy_avg"]["q_net.bias"][1] = float("inf")
    before = all_tensors(fresh)
    with pytest.raises(ValueError, match=r"policy_avg\.q_net\.bias: holds non-finite values"):
        fresh.set_parameters(params)
    assert_same_tensors(all_tensors(fresh), before)


def test_optimizer_state_of_the_wrong_shape_is_refused_and_changes_nothing(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, seed=0)
    model.learn(20)
    params = model.get_parameters()
    (index, state), *_ = params["optimizer"]["state"].items()
    name = next(key for key, value in state.items() if isinstance(value, th.Tensor) and value.dim() > 0)
    state[name] = th.zeros(3)
    before = all_tensors(model)
    with pytest.raises(
        ValueError, match=rf"optimizer: state {index}\.{name} has shape \(3,\), its parameter \("
    ):
        model.set_parameters(params)
    assert_same_tensors(all_tensors(model), before)
    model.learn(20)  # still trains

    _, path = trained
    rewrite_tensors(path, tmp_path / "bad.zip", "optimizer.pth", params["optimizer"])
    with pytest.raises(ModelFileError, match="the saved tensors do not fit the model: optimizer: state"):
        ACER.load(tmp_path / "bad.zip")


def test_num_procs_above_the_limit_is_refused_before_anything_changes() -> None:
    threads = th.get_num_threads()
    with pytest.raises(ValueError, match="num_procs must be a positive integer at most 1024, or None"):
        ACER("MlpPolicy", "CartPole-v1", num_procs=10**6)
    assert th.get_num_threads() == threads


def test_saving_over_a_file_keeps_its_permissions_and_writes_through_a_symlink(
    tmp_path: pathlib.Path,
) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0, seed=0)
    private = tmp_path / "private.zip"
    model.save(private)
    private.chmod(0o600)
    model.save(private)
    assert stat.S_IMODE(private.stat().st_mode) == 0o600  # a private model stays private

    target = tmp_path / "runs" / "best.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0, seed=1).save(target)
    link = tmp_path / "latest.zip"
    link.symlink_to(target)
    model.save(link)
    assert link.is_symlink() and link.resolve() == target.resolve()  # the link is kept, its file updated
    assert_same_tensors(all_tensors(ACER.load(target)), all_tensors(model))
    assert sorted(p.name for p in target.parent.iterdir()) == ["best.zip"]  # no temporary file left


class BoundsExtractor(FlattenExtractor):
    """Keeps the observation bounds as buffers: CartPole's velocity bounds are infinite."""

    def __init__(self, observation_space: gym.spaces.Box) -> None:
        super().__init__(observation_space)
        self.register_buffer("high", th.as_tensor(observation_space.high))


def test_infinite_buffers_and_factored_optimizer_state_still_round_trip(tmp_path: pathlib.Path) -> None:
    """The checks of non-finite weights and of optimizer state shapes leave alone what a model may hold:
    infinite module buffers (bounds), and the factored state of an optimizer such as Adafactor."""
    for policy_kwargs in (
        dict(features_extractor_class=BoundsExtractor),
        dict(optimizer_class=th.optim.Adafactor),
    ):
        model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, seed=0, policy_kwargs=policy_kwargs)
        model.learn(20)
        model.set_parameters(model.get_parameters())
        model.save(tmp_path / "m")
        loaded = ACER.load(tmp_path / "m.zip", custom_objects={"policy_kwargs": policy_kwargs})
        assert_same_tensors(all_tensors(loaded), all_tensors(model))


def test_a_new_model_file_gets_the_umasks_permissions_and_a_replaced_one_keeps_its_own(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    """Saving writes a temporary file (created 0o600) and renames it: a new file must still get the mode
    an ordinary open() gives it (0o666 less the umask), and a file saved over keeps its mode, whatever the
    umask."""
    model, _ = trained
    previous_umask = os.umask(0o027)
    try:
        model.save(tmp_path / "group_readable")
        assert stat.S_IMODE((tmp_path / "group_readable.zip").stat().st_mode) == 0o640
        os.umask(0o022)
        model.save(tmp_path / "shared")
        assert stat.S_IMODE((tmp_path / "shared.zip").stat().st_mode) == 0o644
        os.umask(0o077)
        model.save(tmp_path / "shared")  # replaced: keeps 0o644, not the umask's 0o600
        assert stat.S_IMODE((tmp_path / "shared.zip").stat().st_mode) == 0o644
        (tmp_path / "group_readable.zip").chmod(0o664)
        model.save(tmp_path / "group_readable")
        assert stat.S_IMODE((tmp_path / "group_readable.zip").stat().st_mode) == 0o664
    finally:
        os.umask(previous_umask)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["group_readable.zip", "shared.zip"]


@pytest.mark.parametrize("version", ["1", 1.0, None, [1], True, 0])
def test_a_format_version_that_is_not_an_integer_raises_model_file_error(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, version: Any
) -> None:
    """format_version must be a version number: a string, a float, a list, a bool, 0 or a missing version is
    reported as a damaged file, not a TypeError from comparing it (nor read as version 1, nor as newer)."""
    _, path = trained
    edit_data(path, tmp_path / "version.zip", format_version=version)
    message = f"version.zip has format version {version!r}, not a version number (1 to {FORMAT_VERSION})"
    with pytest.raises(ModelFileError, match=re.escape(message) + ": data is damaged$"):
        ACER.load(tmp_path / "version.zip")


@pytest.mark.parametrize("format_name", ["missing", "sb3-ppo", "SB3-ACER", None])
def test_data_json_of_another_format_is_refused(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path, format_name: str | None
) -> None:
    """The format name is what marks a zip as an sb3-acer model file: without it (or with another one) the
    file is refused even when everything else would load."""
    _, path = trained
    data = read_data(path)
    if format_name == "missing":
        del data["format"]
    else:
        data["format"] = format_name
    write_data(path, tmp_path / "other.zip", data)
    with pytest.raises(
        ModelFileError,
        match=r"other\.zip is not an sb3-acer model file "
        r"\(SB2 and SB3 model files, which unpickle code, are not read\)$",
    ):
        ACER.load(tmp_path / "other.zip")


def _space_through_a_model_file(space: gym.spaces.Space, path: pathlib.Path) -> gym.spaces.Space:
    """``space`` written into a model file's data.json and read back."""
    header = {"format": FORMAT_NAME, "algorithm": "ACER", "format_version": FORMAT_VERSION}
    write_model_file(path, {**header, "space": space_to_json(space)}, {})
    data, tensors = read_model_file(path)
    assert tensors == {}
    return space_from_json(data["space"])


@pytest.mark.parametrize(("n", "start"), [(3, 1), (4, -2), (5, 0)])
def test_discrete_spaces_keep_their_start_through_a_model_file(
    tmp_path: pathlib.Path, n: int, start: int
) -> None:
    """A space is written to data.json and read back whole, a Discrete space's start included (ACER needs
    start 0, and can only tell a space that does not if the start survives the file)."""
    restored = _space_through_a_model_file(gym.spaces.Discrete(n, start=start), tmp_path / "spaces.zip")
    assert isinstance(restored, gym.spaces.Discrete)
    assert (int(restored.n), int(restored.start)) == (n, start)
    assert restored == gym.spaces.Discrete(n, start=start)
    # A file written before the start was recorded holds Discrete spaces that start at 0.
    assert space_from_json({"type": "Discrete", "n": n}) == gym.spaces.Discrete(n, start=0)


def test_multidiscrete_spaces_keep_their_start_through_a_model_file(tmp_path: pathlib.Path) -> None:
    space = gym.spaces.MultiDiscrete([2, 3], start=[1, -1])
    restored = _space_through_a_model_file(space, tmp_path / "spaces.zip")
    assert isinstance(restored, gym.spaces.MultiDiscrete)
    assert (restored.nvec.tolist(), restored.start.tolist()) == ([2, 3], [1, -1])


def test_a_saved_action_space_that_does_not_start_at_0_is_refused_on_load(
    trained: tuple[ACER, pathlib.Path], tmp_path: pathlib.Path
) -> None:
    _, path = trained
    edit_data(path, tmp_path / "start.zip", action_space={"type": "Discrete", "n": 2, "start": 1})
    with pytest.raises(ModelFileError, match="start at 0"):
        ACER.load(tmp_path / "start.zip")


def test_save_excludes_hyperparameters_as_sb3_does(tmp_path: pathlib.Path) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, verbose=2, gamma=0.9, seed=0)
    model.save(tmp_path / "excluded", exclude=["verbose", "gamma"])
    loaded = ACER.load(tmp_path / "excluded.zip")
    assert (loaded.verbose, loaded.gamma, loaded.n_steps) == (0, 0.99, 5)  # the defaults; the rest as saved
    model.save(tmp_path / "included", exclude=["verbose"], include=["verbose"])
    assert ACER.load(tmp_path / "included.zip").verbose == 2
    with pytest.raises(ValueError, match=r"^save cannot exclude \['policy_kwargs'\]: only hyperparameters"):
        model.save(tmp_path / "refused", exclude=["policy_kwargs"])
    assert not (tmp_path / "refused.zip").exists()


def test_save_accepts_excluding_what_sb3_never_saves_and_changes_nothing(tmp_path: pathlib.Path) -> None:
    # SB3's save accepts the names it leaves out anyway (env, policy, the logger, ...); they raised here.
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, seed=0)
    model.save(tmp_path / "plain.zip")
    model.save(tmp_path / "excluded.zip", exclude=["env", "policy", "_logger", "_last_obs", "device"])
    plain, excluded = read_data(tmp_path / "plain.zip"), read_data(tmp_path / "excluded.zip")
    assert excluded == plain
    assert_same_tensors(all_tensors(ACER.load(tmp_path / "excluded.zip")), all_tensors(model))


@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_a_compiled_policy_saves_its_own_weights_as_sb3_does(tmp_path: pathlib.Path) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, seed=0)
    weights = {name: tensor.clone() for name, tensor in model.policy.state_dict().items()}
    model.policy = th.compile(model.policy)  # type: ignore[assignment]  # compiled lazily: never run here
    assert all(name.startswith("_orig_mod.") for name in model.policy.state_dict())
    model.save(tmp_path / "compiled.zip")
    loaded = ACER.load(tmp_path / "compiled.zip")
    assert loaded.policy.state_dict().keys() == weights.keys()
    assert all(th.equal(loaded.policy.state_dict()[name], tensor) for name, tensor in weights.items())
    model.set_parameters(loaded.get_parameters())  # and back into the compiled one

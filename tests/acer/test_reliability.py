"""Bad input and failures get a clear error before any state changes: observations given to predict,
non-finite env data and losses, set_env with other spaces, failing subprocess envs, a missing env, Ctrl-C in
a rollout. tests/reliability_cases.md lists every case and its test, and a test here checks they exist."""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import time
from collections.abc import Mapping
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.vec_env import DummyVecEnv

import sb3_acer.common.segment_algorithm
from sb3_acer import ACER
from sb3_acer.common.rollout import collect_segment
from sb3_acer.envs.subproc import SafeSubprocVecEnv, SubprocEnvError


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


# ------------------------------------------------------------------------------------------ hyperparameters


# ---------------------------------------------------------------------------------------------- predict


class _SpaceEnv(gym.Env):
    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, observation_space: spaces.Space) -> None:
        self.observation_space = observation_space
        self.action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict]:
        return self.observation_space.sample(), 0.0, False, False, {}


SPACES = {
    "box": spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32),
    "discrete": spaces.Discrete(5),
    "multidiscrete": spaces.MultiDiscrete([3, 4]),
    "multibinary": spaces.MultiBinary(4),
    "image": spaces.Box(0, 255, shape=(8, 8, 3), dtype=np.uint8),
}


@pytest.fixture(scope="module")
def models() -> dict[str, ACER]:
    return {name: ACER("MlpPolicy", _SpaceEnv(space), replay_ratio=0) for name, space in SPACES.items()}


@pytest.mark.parametrize(
    ("space", "observation", "message"),
    [
        ("box", np.array([np.nan, 0.0, 0.0], dtype=np.float32), r"non-finite value at index \(0,\): nan"),
        ("box", np.array([[0.0, 0.0, 0.0], [0.0, np.inf, 0.0]]), r"non-finite value at index \(1, 1\): inf"),
        ("box", np.array(["a", "b", "c"]), "must hold numbers .* got dtype <U1"),
        ("box", np.array([1 + 1j, 0, 0]), "must hold numbers .* got dtype complex128"),
        ("box", np.array([None, None, None]), "must hold numbers .* got dtype object"),
        ("box", [[0.0, 0.0, 0.0], [0.0, 0.0]], "cannot be read as an array of numbers"),
        ("box", {"obs": np.zeros(3)}, "must be an array"),
        ("box", np.zeros(4, dtype=np.float32), r"observation shape \(4,\) matches neither"),
        ("discrete", 2.0, "Discrete observations must be integers, got dtype float64"),
        ("discrete", np.array([1, 5]), r"observation 5 at index \(1,\) is outside Discrete\(5\)"),
        ("discrete", -1, r"observation -1 at index \(0,\) is outside"),
        ("discrete", "3", "must hold numbers"),
        ("multidiscrete", np.array([2, 4]), r"observation 4 at index \(1,\) is outside MultiDiscrete"),
        ("multidiscrete", np.array([0.0, 1.0]), "MultiDiscrete observations must be integers"),
        ("multibinary", np.array([0, 1, 2, 0]), "MultiBinary observations must be 0 or 1, got 2"),
        ("image", np.full((8, 8, 3), 300), "observation value 300 at index .* is outside the bounds"),
        ("image", np.full((8, 8, 3), -1.0), "observation value -1.0 at index .* is outside the bounds"),
        ("image", np.full((8, 8, 3), np.nan), "non-finite value"),
    ],
)
def test_bad_observations_for_predict_raise(
    models: dict[str, ACER], space: str, observation: Any, message: str
) -> None:
    model = models[space]
    with pytest.raises(ValueError, match=message):
        model.predict(observation)
    with pytest.raises(ValueError, match=message):
        model.action_probability(observation)


@pytest.mark.parametrize(
    ("space", "observation"),
    [
        ("box", np.array([5.0, -5.0, 0.0], dtype=np.float32)),  # outside the declared bounds: allowed
        ("box", [0.1, 0.2, 0.3]),
        ("discrete", np.int32(4)),
        ("discrete", np.array([0, 4], dtype=np.uint8)),
        ("multidiscrete", np.array([[2, 3], [0, 0]])),
        ("multibinary", np.array([True, False, True, True])),
        ("multibinary", np.array([1.0, 0.0, 0.0, 1.0])),
        ("image", np.full((8, 8, 3), 255, dtype=np.uint8)),
        ("image", np.zeros((2, 3, 8, 8), dtype=np.uint8)),  # channel-first batch
    ],
)
def test_good_observations_for_predict_are_accepted(
    models: dict[str, ACER], space: str, observation: Any
) -> None:
    actions, _ = models[space].predict(observation)
    assert set(np.atleast_1d(actions).tolist()) <= {0, 1}


# ---------------------------------------------------------------------------------------------- env data


class BadDataEnv(gym.Env):
    """Observation ``[t, 0]``, reward 1; at step ``bad_at`` a NaN reward, a NaN observation, or an infinite
    observation at which the episode is truncated (the terminal observation); ``"reset"``: NaN at reset."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, what: str | None = None, bad_at: int = 8) -> None:
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self.what, self.bad_at, self.t = what, bad_at, 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.t = 0
        value = np.nan if self.what == "reset" else 0.0
        return np.array([0.0, value], dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.t += 1
        obs, reward, truncated = np.array([self.t, 0.0], dtype=np.float32), 1.0, False
        if self.t == self.bad_at:
            if self.what == "reward":
                reward = float("nan")
            elif self.what == "observation":
                obs[1] = np.nan
            elif self.what == "terminal":
                obs[1], truncated = np.inf, True
        return obs, reward, False, truncated, {}


@pytest.mark.parametrize(
    ("what", "message"),
    [
        ("reward", r"env 1 returned a non-finite reward nan at num_timesteps=14 \(step\)"),
        (
            "observation",
            r"env 1 returned a non-finite observation at num_timesteps=14 \(step\): \[8.0, nan\]",
        ),
        (
            "terminal",
            r"env 1 returned a non-finite terminal observation at num_timesteps=14 \(step\): \[8.0, inf\]",
        ),
    ],
)
def test_non_finite_env_data_raises_naming_env_and_step(
    what: str, message: str, small_settings: Mapping[str, Any]
) -> None:
    env = DummyVecEnv([lambda: BadDataEnv(), lambda: BadDataEnv(what)])
    model = ACER("MlpPolicy", env, **small_settings)
    with pytest.raises(ValueError, match=message):
        model.learn(100)
    # The first segment (steps 1-5) was trained on; nothing of the second (bad at step 8) was kept.
    assert model.num_timesteps == 10
    assert model._n_updates - model._n_replay_updates == 1
    assert model.replay_buffer is not None and len(model.replay_buffer) == 1
    assert np.isfinite(model.replay_buffer.rewards).all()
    assert all(th.isfinite(tensor).all() for tensor in all_tensors(model).values())
    assert model._last_obs is None  # the next learn() starts from a reset


def test_non_finite_reset_observation_raises_before_anything_changes(
    small_settings: Mapping[str, Any],
) -> None:
    model = ACER(
        "MlpPolicy", DummyVecEnv([lambda: BadDataEnv(), lambda: BadDataEnv("reset")]), **small_settings
    )
    before = all_tensors(model)
    with pytest.raises(
        ValueError, match=r"env 1 returned a non-finite observation at num_timesteps=0 \(reset\)"
    ):
        model.learn(100)
    assert model._last_obs is None and model.num_timesteps == 0
    assert_same_tensors(all_tensors(model), before)


# ------------------------------------------------------------------------------------------ non-finite loss


def test_non_finite_loss_skips_the_update_counts_it_and_changes_no_weight(
    small_settings: Mapping[str, Any],
) -> None:
    # A constant learning rate: after learn(20) the linear schedule would be at 0 and no update would move.
    model = ACER("MlpPolicy", "CartPole-v1", replay_ratio=0, lr_schedule="constant", **small_settings)
    model.learn(20)  # the optimizer has state
    assert model.env is not None
    result = collect_segment(
        env=model.env,
        policy=model.policy,
        n_steps=5,
        last_obs=model.env.reset(),  # type: ignore[arg-type]
        last_episode_starts=np.ones(1, dtype=bool),
        on_step=lambda record: True,
    )
    assert result.segment is not None
    rewards = result.segment.rewards.copy()
    rewards[2, 0] = np.nan
    poisoned = dataclasses.replace(result.segment, rewards=rewards)
    before, n_updates = all_tensors(model), model._n_updates
    model.train(poisoned)
    assert model.n_skipped_updates == 1
    assert model._n_updates == n_updates
    assert_same_tensors(all_tensors(model), before)
    model.train(result.segment)  # the same segment, finite: the update is made
    assert model.n_skipped_updates == 1 and model._n_updates == n_updates + 1
    after = all_tensors(model)
    changed = [name for name in before if not th.equal(before[name], after[name])]
    assert "policy.action_net.weight" in changed and "policy_avg.action_net.weight" in changed
    assert any(name.startswith("optimizer.") for name in changed)


def test_nan_rewards_with_the_env_check_off_never_reach_the_weights(
    monkeypatch: pytest.MonkeyPatch, small_settings: Mapping[str, Any]
) -> None:
    """The second line of defence: even if non-finite data got in, no update writes NaN into the weights."""
    monkeypatch.setattr(sb3_acer.common.segment_algorithm, "check_env_step", lambda **kwargs: None)
    env = DummyVecEnv([lambda: BadDataEnv("reward", bad_at=3)])
    model = ACER("MlpPolicy", env, **small_settings)
    model.learn(100)
    assert model.n_skipped_updates >= 1  # the on-policy update of the NaN segment, and its replays
    assert all(th.isfinite(tensor).all() for tensor in all_tensors(model).values())
    assert model._n_updates > 10


# ---------------------------------------------------------------------------------------------- set_env


def test_set_env_with_other_spaces_raises_and_keeps_everything(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings).learn(30)
    env, buffer, last_obs, n_envs = model.env, model.replay_buffer, model._last_obs, model.n_envs
    for other in (gym.make("MountainCar-v0"), DummyVecEnv([lambda: gym.make("Acrobot-v1")] * 2)):
        with pytest.raises(ValueError, match="set_env: the new environment's spaces differ"):
            model.set_env(other)  # type: ignore[arg-type]
        assert model.env is env and model.replay_buffer is buffer and model._last_obs is last_obs
        assert model.n_envs == n_envs and buffer is not None and len(buffer) == 6
    model.learn(10, reset_num_timesteps=False)
    assert model.num_timesteps == 40


def test_env_whose_spaces_changed_is_refused_by_set_env(small_settings: Mapping[str, Any]) -> None:
    env = _SpaceEnv(spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32))
    model = ACER("MlpPolicy", env, **small_settings)
    env.observation_space = spaces.Box(-1.0, 1.0, shape=(4,), dtype=np.float32)
    with pytest.raises(ValueError, match=r"spaces differ.*Observation spaces do not match"):
        model.set_env(env)
    env.observation_space = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
    env.action_space = spaces.Discrete(3)
    with pytest.raises(ValueError, match=r"spaces differ.*Action spaces do not match"):
        model.set_env(env)


# ------------------------------------------------------------------------------------------ subprocess envs


class FailingEnv(gym.Wrapper):
    """CartPole whose ``fail_at``-th step raises, hangs, or kills its process."""

    def __init__(self, how: str, fail_at: int = 3) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.how, self.fail_at, self.n = how, fail_at, 0

    def step(self, action: Any) -> Any:
        self.n += 1
        if self.n == self.fail_at:
            if self.how == "raise":
                raise RuntimeError("the env exploded")
            if self.how == "hang":
                time.sleep(3600)
            if self.how == "exit":
                os._exit(3)
        return self.env.step(action)


def _safe_env(how: str, fail_at: int = 3, timeout: float = 1.0) -> SafeSubprocVecEnv:
    return SafeSubprocVecEnv(
        [lambda: gym.make("CartPole-v1"), lambda: FailingEnv(how, fail_at)],
        start_method="fork",
        timeout=timeout,
    )


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("raise", r"worker 1 raised RuntimeError: the env exploded \(exit code 1\) while running 'step'"),
        ("hang", r"worker 1 did not answer within 1.0 s \(timeout\) while running 'step'"),
        ("exit", r"worker 1 died \(exit code 3\) while running 'step'"),
    ],
)
def test_safe_subproc_vec_env_failing_worker_raises_in_bounded_time(how: str, message: str) -> None:
    env = _safe_env(how)
    env.reset()
    start = time.monotonic()
    with pytest.raises(SubprocEnvError, match=message) as info:
        for _ in range(5):
            env.step(np.zeros(2, dtype=np.int64))
    assert time.monotonic() - start < 10
    assert isinstance(info.value, RuntimeError)
    if how == "raise":
        assert 'in step\n    raise RuntimeError("the env exploded")' in str(
            info.value
        )  # the worker's traceback
    assert not any(process.is_alive() for process in env.processes)  # all workers were stopped
    with pytest.raises(SubprocEnvError, match="closed after a worker failure"):
        env.reset()
    env.close()  # returns at once


def test_safe_subproc_vec_env_error_surfaces_from_learn(small_settings: Mapping[str, Any]) -> None:
    env = _safe_env("hang", fail_at=12)
    model = ACER("MlpPolicy", env, **small_settings)
    start = time.monotonic()
    with pytest.raises(SubprocEnvError, match=r"worker 1 did not answer within 1\.0 s"):
        model.learn(200)
    assert time.monotonic() - start < 15
    assert model.num_timesteps == 20  # the last complete segment; the interrupted one is not counted


def test_safe_subproc_vec_env_reports_an_env_that_cannot_be_created() -> None:
    def broken() -> gym.Env:
        raise ValueError("no such game")

    with pytest.raises(
        SubprocEnvError,
        match=r"worker 1 raised ValueError: no such game \(exit code 1\) while running 'get_spaces'",
    ):
        SafeSubprocVecEnv([lambda: gym.make("CartPole-v1"), broken], start_method="fork")


def test_safe_subproc_vec_env_refuses_workers_with_different_spaces() -> None:
    with pytest.raises(ValueError, match="env 1 has spaces"):
        SafeSubprocVecEnv(
            [lambda: gym.make("CartPole-v1"), lambda: gym.make("Acrobot-v1")], start_method="fork"
        )


def test_safe_subproc_vec_env_trains_and_closes(small_settings: Mapping[str, Any]) -> None:
    env = SafeSubprocVecEnv([lambda: gym.make("CartPole-v1")] * 2, start_method="fork", timeout=30)
    try:
        model = ACER("MlpPolicy", env, **small_settings).learn(60)
        assert model.num_timesteps == 60 and model._n_replay_updates > 0
        assert env.get_attr("spec")[0].id == "CartPole-v1"
    finally:
        env.close()
    assert env.closed and not any(process.is_alive() for process in env.processes)
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        SafeSubprocVecEnv([lambda: gym.make("CartPole-v1")], timeout=0)


# ------------------------------------------------------------------------------------------ the table


def test_every_row_of_the_reliability_cases_names_an_existing_test() -> None:
    root = pathlib.Path(__file__).resolve().parents[2]
    rows = [
        line
        for line in (root / "tests" / "reliability_cases.md").read_text().splitlines()
        if line.startswith("| ")
    ]
    table = [row for row in rows[2:] if "---" not in row]
    named = [re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", row) for row in table]
    assert all(named), [row for row, names in zip(table, named, strict=True) if not names]
    assert len(named) >= 50
    for path, test in (name for names in named for name in names):  # every test a row names, not the first
        source = (root / path).read_text()
        assert re.search(rf"^def {test}\(", source, re.M), f"{path}::{test} does not exist"


# --------------------------------------------------------- an env missing or given by id; Ctrl-C in a rollout


def test_a_model_without_environment_says_so() -> None:
    with pytest.raises(ValueError, match=r"ACER needs an environment to build its networks"):
        ACER("MlpPolicy", None)
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5)
    with pytest.raises(ValueError, match=r"set_env: env must be an environment or an env id, not None"):
        model.set_env(None)  # type: ignore[arg-type]
    assert model.get_env() is not None


def test_set_env_and_load_take_an_env_id_as_the_constructor_does(tmp_path: pathlib.Path) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, buffer_size=50, replay_start=10)
    model.set_env("CartPole-v1")
    assert model.get_env() is not None and model.get_env().num_envs == 1
    model.save(tmp_path / "m")
    loaded = ACER.load(tmp_path / "m", env="CartPole-v1")
    assert loaded.learn(10).num_timesteps == 10
    with pytest.raises(ValueError, match="spaces differ"):
        model.set_env("Acrobot-v1")


class InterruptAt(BaseCallback):
    """Raises KeyboardInterrupt (a Ctrl-C) at the given call of ``on_step``."""

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at

    def _on_step(self) -> bool:
        if self.n_calls == self.at:
            raise KeyboardInterrupt
        return True


def test_ctrl_c_during_a_rollout_keeps_nothing_of_the_segment(small_settings: Mapping[str, Any]) -> None:
    """As for an exception: the next learn() starts from a reset and num_timesteps is at the last complete
    segment (the env had moved on from the observation the model held: a stored transition would have
    joined two moments of the game)."""
    model = ACER("MlpPolicy", DummyVecEnv([lambda: gym.make("CartPole-v1")]), **small_settings)
    with pytest.raises(KeyboardInterrupt):
        model.learn(100, callback=InterruptAt(8))
    assert model.num_timesteps == 5
    assert model._last_obs is None  # the next learn() starts from a reset
    model.learn(20, reset_num_timesteps=False)
    assert model.num_timesteps == 25

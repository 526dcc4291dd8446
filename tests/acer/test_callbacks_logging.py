"""Callbacks (SB3 and SB2's legacy callable), the progress bar, the logger and TensorBoard run folders."""

from __future__ import annotations

import csv
import pathlib
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.callbacks import (
    BaseCallback,
    CheckpointCallback,
    EvalCallback,
    EveryNTimesteps,
    LogEveryNTimesteps,
    StopTrainingOnRewardThreshold,
)
from stable_baselines3.common.logger import configure
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER


class HookRecorder(BaseCallback):
    """Counts every hook and checks what a step callback can see."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = dict(training_start=0, rollout_start=0, step=0, rollout_end=0, training_end=0)
        self.step_keys: set[str] = set()

    def _on_training_start(self) -> None:
        self.calls["training_start"] += 1

    def _on_rollout_start(self) -> None:
        self.calls["rollout_start"] += 1

    def _on_step(self) -> bool:
        self.calls["step"] += 1
        self.step_keys = set(self.locals)
        return True

    def _on_rollout_end(self) -> None:
        self.calls["rollout_end"] += 1

    def _on_training_end(self) -> None:
        self.calls["training_end"] += 1


def test_callback_sees_all_five_hooks(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings)
    recorder = HookRecorder()
    model.learn(100, callback=recorder)
    assert recorder.calls == dict(
        training_start=1, rollout_start=20, step=100, rollout_end=20, training_end=1
    )
    assert recorder.model is model
    assert recorder.num_timesteps == 100
    assert recorder.training_env is model.get_env()
    assert {"new_obs", "actions", "rewards", "dones", "infos"} <= recorder.step_keys


def test_each_callback_of_a_list_sees_every_hook() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0)
    first, second = HookRecorder(), HookRecorder()
    model.learn(50, callback=[first, second])
    expected = dict(training_start=1, rollout_start=10, step=50, rollout_end=10, training_end=1)
    assert first.calls == second.calls == expected


def test_sb3_callbacks_on_cartpole(tmp_path: pathlib.Path) -> None:
    """SB2's test_callbacks: checkpoint, evaluation with a reward threshold, every-n-timesteps."""
    model = ACER("MlpPolicy", "CartPole-v1", seed=0, n_steps=10, replay_start=100, buffer_size=500)
    eval_callback = EvalCallback(
        Monitor(gym.make("CartPole-v1")),
        callback_on_new_best=StopTrainingOnRewardThreshold(reward_threshold=10_000),
        n_eval_episodes=2,
        eval_freq=100,
        best_model_save_path=str(tmp_path / "best"),
        log_path=str(tmp_path / "eval"),
        warn=False,
    )
    every = EveryNTimesteps(
        n_steps=250, callback=CheckpointCallback(save_freq=1, save_path=str(tmp_path / "every"))
    )
    checkpoint = CheckpointCallback(save_freq=100, save_path=str(tmp_path / "checkpoints"))
    model.learn(500, callback=[checkpoint, eval_callback, every])
    assert model.num_timesteps == 500

    saved = sorted(path.name for path in (tmp_path / "checkpoints").iterdir())
    assert saved == [f"rl_model_{steps}_steps.zip" for steps in (100, 200, 300, 400, 500)]
    assert sorted(path.name for path in (tmp_path / "every").iterdir()) == [
        "rl_model_250_steps.zip",
        "rl_model_500_steps.zip",
    ]
    evaluations = np.load(tmp_path / "eval" / "evaluations.npz")
    np.testing.assert_array_equal(evaluations["timesteps"], [100, 200, 300, 400, 500])
    assert evaluations["results"].shape == (5, 2)
    best = ACER.load(tmp_path / "best" / "best_model.zip")
    assert best.num_timesteps in (100, 200, 300, 400, 500)
    assert ACER.load(tmp_path / "checkpoints" / "rl_model_300_steps.zip").num_timesteps == 300


def test_reward_threshold_stops_training_early(tmp_path: pathlib.Path) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", seed=0, n_steps=10, replay_ratio=0)
    eval_callback = EvalCallback(
        Monitor(gym.make("CartPole-v1")),
        callback_on_new_best=StopTrainingOnRewardThreshold(reward_threshold=0.0),
        n_eval_episodes=1,
        eval_freq=50,
        warn=False,
    )
    model.learn(500, callback=eval_callback)
    assert model.num_timesteps == 50


def test_legacy_callable_returning_none_continues() -> None:
    seen: list[Any] = []

    def callback(locals_: dict[str, Any], globals_: dict[str, Any]) -> None:
        seen.append(locals_["self"])

    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0)
    model.learn(50, callback=callback)
    assert model.num_timesteps == 50
    assert len(seen) == 50
    assert all(item is model for item in seen)


def test_legacy_callable_returning_false_stops() -> None:
    calls = []

    def callback(locals_: dict[str, Any], globals_: dict[str, Any]) -> bool:
        calls.append(1)
        return len(calls) < 7

    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0)
    model.learn(100, callback=callback)
    assert len(calls) == 7
    assert model.num_timesteps == 7
    assert model._n_updates == 1  # the partial second segment is thrown away, as in SB2


def test_legacy_callable_returning_falsy_non_false_continues() -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0)
    model.learn(20, callback=lambda locals_, globals_: 0)
    assert model.num_timesteps == 20


@pytest.mark.filterwarnings("ignore:rich is experimental/alpha")  # tqdm.rich's own warning
def test_progress_bar_counts_every_step(capsys: pytest.CaptureFixture[str]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0)
    model.learn(50, progress_bar=True)
    assert model.num_timesteps == 50
    assert "50/50" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------- logging


def test_tensorboard_continued_run_uses_one_folder(tmp_path: pathlib.Path) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", verbose=1, tensorboard_log=str(tmp_path), seed=0)
    model.learn(1000, log_interval=10)
    model.learn(1000, log_interval=10, reset_num_timesteps=False)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ACER_1"]
    assert list((tmp_path / "ACER_1").glob("events.out.tfevents.*"))
    model.logger.close()


def test_tensorboard_new_runs_get_new_folders(tmp_path: pathlib.Path) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", tensorboard_log=str(tmp_path), n_steps=10, replay_ratio=0)
    model.learn(100, log_interval=5)
    model.learn(100, log_interval=5)
    model.learn(100, log_interval=5, tb_log_name="other")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["ACER_1", "ACER_2", "other_1"]
    model.logger.close()


def test_tensorboard_receives_the_scalars_at_each_log_interval(tmp_path: pathlib.Path) -> None:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    model = ACER("MlpPolicy", "CartPole-v1", tensorboard_log=str(tmp_path), n_steps=20, replay_start=40)
    model.learn(400, log_interval=5)
    model.logger.close()
    accumulator = EventAccumulator(str(tmp_path / "ACER_1"))
    accumulator.Reload()
    tags = set(accumulator.Tags()["scalars"])
    assert {"train/loss", "train/learning_rate", "train/kl_avg", "rollout/ep_rew_mean", "time/fps"} <= tags
    assert [event.step for event in accumulator.Scalars("train/loss")] == [100, 200, 300, 400]


LOGGED_KEYS = {
    "train/loss",
    "train/loss_q",
    "train/loss_policy",
    "train/loss_f",
    "train/loss_bc",
    "train/entropy",
    "train/explained_variance",
    "train/norm_grads",
    "train/avg_norm_k",
    "train/avg_norm_g",
    "train/avg_norm_k_dot_g",
    "train/avg_norm_adj",
    "train/rho_mean",
    "train/rho_truncated_frac",
    "train/kl_avg",
    "train/learning_rate",
    "train/on_policy_rho_mean",
    "train/n_updates",
    "train/n_replay_updates",
    "time/fps",
    "time/total_timesteps",
    "rollout/ep_rew_mean",
    "rollout/ep_len_mean",
}


def test_every_logged_key_is_written_and_finite(tmp_path: pathlib.Path) -> None:
    logger = configure(str(tmp_path), ["csv"])
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=20, replay_start=40, buffer_size=200, seed=0)
    model.set_logger(logger)
    model.learn(400, log_interval=5)
    logger.close()
    with open(tmp_path / "progress.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 4
    assert set(rows[0]) >= LOGGED_KEYS
    last = rows[-1]
    for key in LOGGED_KEYS:
        assert np.isfinite(float(last[key])), key
    assert int(last["time/total_timesteps"]) == 400
    assert int(last["train/n_replay_updates"]) > 0
    assert float(last["train/learning_rate"]) == 0.0
    assert float(rows[0]["train/learning_rate"]) == pytest.approx(7e-4 * (1 - 100 / 400))
    assert 0.0 <= float(last["train/rho_truncated_frac"]) <= 1.0


def test_log_every_n_timesteps_dumps_through_sb3s_public_dump_logs(tmp_path: pathlib.Path) -> None:
    """SB3's ``LogEveryNTimesteps`` calls ``model.dump_logs()``, which every SB3 algorithm has (it stopped
    training with NotImplementedError before); the dumps it asks for are written at its steps, without
    ``time/iterations`` (no iteration is given), as SB3's algorithms write them."""
    logger = configure(str(tmp_path), ["csv"])
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=8, replay_start=16, buffer_size=64, seed=0)
    model.set_logger(logger)
    model.learn(128, callback=LogEveryNTimesteps(n_steps=32), log_interval=None)
    logger.close()
    with open(tmp_path / "progress.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert [int(row["time/total_timesteps"]) for row in rows] == [32, 64, 96, 128]
    assert "time/iterations" not in rows[0]
    assert all(int(row["time/fps"]) > 0 for row in rows)


# ------------------------------------------------------------------- episode statistics and seeding as in SB3


class ReportsSuccess(gym.Wrapper):
    """Reports ``info["is_success"]`` at each episode end: every other episode succeeds."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.episodes = 0

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = self.env.step(action)
        if terminated or truncated:
            info["is_success"] = self.episodes % 2 == 0
            self.episodes += 1
        return obs, float(reward), terminated, truncated, info


def test_success_rate_and_the_statistics_window_are_those_of_sb3(tmp_path: pathlib.Path) -> None:
    logger = configure(str(tmp_path), ["csv"])
    env = DummyVecEnv([lambda: Monitor(ReportsSuccess(gym.make("CartPole-v1")))])
    model = ACER("MlpPolicy", env, n_steps=20, replay_ratio=0, stats_window_size=4, seed=0)
    model.set_logger(logger)
    model.learn(400, log_interval=5)
    logger.close()
    with open(tmp_path / "progress.csv") as handle:
        last = list(csv.DictReader(handle))[-1]
    assert model.ep_success_buffer is not None and len(model.ep_success_buffer) == 4  # the window
    assert float(last["rollout/success_rate"]) == pytest.approx(np.mean(model.ep_success_buffer))
    assert float(last["rollout/ep_len_mean"]) == pytest.approx(
        np.mean([i["l"] for i in model.ep_info_buffer])
    )
    model.save(tmp_path / "m")
    assert ACER.load(tmp_path / "m.zip").stats_window_size == 4
    with pytest.raises(ValueError, match="stats_window_size must be a positive integer"):
        ACER("MlpPolicy", "CartPole-v1", stats_window_size=0)


def test_learn_with_a_seed_starts_the_environments_from_it() -> None:
    """As SB3's learn(seed=...): the environments are reset from the seed, also after an earlier learn."""
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_ratio=0, seed=0)
    model.learn(20)
    model.learn(0, seed=3)
    fresh = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    fresh.seed(3)
    np.testing.assert_array_equal(model._last_obs, fresh.reset())

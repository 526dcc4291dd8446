"""``sb3-acer train``: short real runs, what they write and use (presets, normalisation, wrappers,
``--env-kwargs``, evaluations, ``--vec-env``)."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.monitor import load_results
from torch import nn, optim

import sb3_acer
import sb3_acer.cli.run_folder
import sb3_acer.cli.train.run
import sb3_acer.cli.train.start
from sb3_acer import ACER
from tests.helpers.cli_helpers import (
    EVALUATED,
    FAST,
    assert_one_line_error,
    run,
    settings_of,
    train,
    use_presets,
)


def test_train_writes_monitor_logs_model_and_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    code, out, err = run(
        capsys,
        "train",
        "CartPole-v1",
        "--timesteps",
        "500",
        "--log-folder",
        str(tmp_path / "logs"),
        "--eval-freq",
        "250",
        "--eval-episodes",
        "2",
        "--tensorboard-log",
        str(tmp_path / "tb"),
        "--hyperparams",
        "ent_coef=0.01",
    )
    assert code == 0, err
    run_dir = tmp_path / "logs" / "CartPole-v1_0"
    assert sorted(path.name for path in run_dir.glob("*.monitor.csv")) == [
        f"{rank}.monitor.csv" for rank in range(4)
    ]
    assert "Using the tuned preset for CartPole-v1" in out
    assert "500 steps, 4 envs, seed 0" in out
    # 500 requested; the preset's 4 envs x 10 steps make whole 40-step segments: 13 of them.
    assert "Trained on CartPole-v1: 520 env steps in" in out
    # The summary's training return is the mean over the (fewer than 100) Monitor episodes.
    episodes = load_results(str(run_dir))
    assert 0 < len(episodes) < 100 and episodes["l"].sum() <= 520
    assert f"mean training return (last {len(episodes)} episodes): {episodes['r'].mean():.2f}" in out
    evaluations = np.load(run_dir / "evaluations.npz")
    assert evaluations["timesteps"].tolist() == [248, 496]  # every 250 // 4 = 62 vector steps
    last = evaluations["results"][-1]
    assert f"evaluation return (2 episodes at step 496): {last.mean():.2f} +/- {last.std():.2f}" in out
    assert f"model: {run_dir / 'model.zip'}" in out
    assert list((tmp_path / "tb").glob("CartPole-v1_0_1/events.out.tfevents.*"))

    model = ACER.load(run_dir / "model.zip")
    assert model.num_timesteps == 520
    assert model.ent_coef == 0.01 and model.n_steps == 10  # the flag over the preset's 0.0; the preset's 10
    info = json.loads((run_dir / "model.json").read_text())
    assert info["env_id"] == "CartPole-v1" and info["seed"] == 0 and info["normalize"] is False
    assert info["hyperparameters"]["ent_coef"] == 0.01


def test_policy_kwargs_may_name_the_activation_and_the_optimizer(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    hyperparams = "policy_kwargs={'activation_fn': 'nn.ReLU', 'net_arch': [16], 'optimizer_class': 'Adam'}"
    code, _, err = train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", hyperparams)
    assert code == 0, err
    model = ACER.load(tmp_path / "CartPole-v1_0" / "model.zip")
    assert model.policy_kwargs == {
        "activation_fn": nn.ReLU,
        "net_arch": [16],
        "optimizer_class": optim.Adam,
    }
    assert type(model.optimizer) is optim.Adam
    info = json.loads((tmp_path / "CartPole-v1_0" / "model.json").read_text())
    assert info["hyperparameters"]["policy_kwargs"] == {
        "activation_fn": "ReLU",
        "net_arch": [16],
        "optimizer_class": "Adam",
    }


def test_normalize_saves_plain_statistics_that_enjoy_uses(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    save_path = tmp_path / "models" / "cartpole"
    code, out, err = train(
        capsys, tmp_path, "--hyperparams", "normalize=True", "--save-path", str(save_path), "--seed", "3"
    )
    assert code == 0, err
    stats_path = tmp_path / "models" / "cartpole.vecnormalize.npz"
    assert f"normalisation statistics: {stats_path}" in out
    with np.load(stats_path, allow_pickle=False) as stats:
        assert stats["obs_mean"].shape == (4,)
        # reset + 130 vector steps (13 segments of 10), 4 envs each
        assert float(stats["obs_count"]) == pytest.approx(524 + 1e-4)
        assert bool(stats["norm_obs"]) and bool(stats["norm_reward"])
    assert (tmp_path / "models" / "cartpole.zip").is_file()

    code, out, err = run(capsys, "enjoy", str(save_path), "--episodes", "2", "--deterministic")
    assert code == 0, err
    assert "CartPole-v1: mean return over 2 episodes" in out

    stats_path.unlink()
    code, _, err = run(capsys, "enjoy", str(save_path), "--episodes", "1")
    assert_one_line_error(code, err, 1, "the model was trained with VecNormalize but")


def test_normalize_dict_sets_vecnormalize_arguments_and_enjoy_follows(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # Rewards only, as the zoo's normalize: "{'norm_obs': False, 'norm_reward': True}".
    setting = "normalize={'norm_obs': False, 'norm_reward': True, 'clip_reward': 5.0}"
    # The evaluation env syncs with a VecNormalize that keeps no observation statistics.
    code, out, err = train(
        capsys, tmp_path, "--hyperparams", setting, "--eval-freq", "250", "--eval-episodes", "1"
    )
    assert code == 0, err
    assert "evaluation return (1 episode at step 496)" in out
    assert "VecNormalize({'norm_obs': False, 'norm_reward': True, 'clip_reward': 5.0})" in out
    run_dir = tmp_path / "CartPole-v1_0"
    info = json.loads((run_dir / "model.json").read_text())
    assert info["normalize"] is True
    assert info["normalize_kwargs"] == {"norm_obs": False, "norm_reward": True, "clip_reward": 5.0}
    with np.load(run_dir / "model.vecnormalize.npz", allow_pickle=False) as stats:
        assert not bool(stats["norm_obs"]) and bool(stats["norm_reward"])
        assert float(stats["clip_reward"]) == 5.0
        assert float(stats["ret_count"]) > 1.0  # the return statistics were updated
    code, out, err = run(capsys, "enjoy", str(run_dir), "--episodes", "1", "--deterministic")
    assert code == 0, err
    assert "CartPole-v1: mean return over 1 episode " in out


def test_env_wrapper_wraps_training_evaluation_and_enjoy(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    setting = "env_wrapper=[{'TimeFeatureWrapper': {'max_steps': 400}}]"
    code, out, err = train(
        capsys, tmp_path, "--hyperparams", setting, "--eval-freq", "250", "--eval-episodes", "1"
    )
    assert code == 0, err
    assert "seed 0, TimeFeatureWrapper({'max_steps': 400})" in out
    assert "evaluation return (1 episode at step 496)" in out  # the evaluation env has the feature too
    run_dir = tmp_path / "CartPole-v1_0"
    info = json.loads((run_dir / "model.json").read_text())
    assert info["env_wrapper"] == [{"sb3_contrib.common.wrappers.TimeFeatureWrapper": {"max_steps": 400}}]
    model = ACER.load(run_dir / "model.zip")
    assert model.observation_space.shape == (5,)  # CartPole's 4 numbers and the remaining time
    code, out, err = run(capsys, "enjoy", str(run_dir), "--episodes", "1")
    assert code == 0, err
    assert "CartPole-v1: mean return over 1 episode " in out
    # Without the wrapper in MODEL.json the env does not fit the model: a one-line error, not a crash.
    info["env_wrapper"] = []
    (run_dir / "model.json").write_text(json.dumps(info))
    code, _, err = run(capsys, "enjoy", str(run_dir), "--episodes", "1")
    assert_one_line_error(code, err, 2, "the model does not fit CartPole-v1")
    # MODEL.json may only name a wrapper class: it is data, not a way to call a function.
    info["env_wrapper"] = ["os.system"]
    (run_dir / "model.json").write_text(json.dumps(info))
    code, _, err = run(capsys, "enjoy", str(run_dir), "--episodes", "1")
    assert_one_line_error(
        code, err, 1, f"{run_dir / 'model.json'}: env_wrapper: os.system is not a gymnasium.Wrapper class"
    )


def test_env_wrapper_that_does_not_fit_the_env_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    code, _, err = run(
        capsys,
        "train",
        "FrozenLake-v1",
        *FAST,
        "--log-folder",
        str(tmp_path),
        "--hyperparams",
        "env_wrapper=TimeFeatureWrapper",
    )
    assert_one_line_error(
        code, err, 2, "invalid settings: env_wrapper TimeFeatureWrapper: `TimeFeatureWrapper` only supports"
    )
    assert not (tmp_path / "FrozenLake-v1_0").exists()


def test_normalize_false_overrides_a_normalizing_preset(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    code, out, err = run(
        capsys,
        "train",
        "MountainCar-v0",
        *FAST,
        "--log-folder",
        str(tmp_path),
        "--hyperparams",
        "normalize=False",
    )
    assert code == 0, err
    assert "VecNormalize" not in out.splitlines()[1]
    run_dir = tmp_path / "MountainCar-v0_0"
    assert json.loads((run_dir / "model.json").read_text())["normalize"] is False
    assert not (run_dir / "model.vecnormalize.npz").exists()


def test_atari_without_opencv_is_one_line_before_anything_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cv2", None)  # import cv2 raises ImportError
    # ale-vector (the default) preprocesses in ale-py, without OpenCV; SB3's wrappers need it.
    logs = str(tmp_path / "logs")
    code, _, err = run(
        capsys,
        "train",
        "PongNoFrameskip-v4",
        *FAST,
        "--n-envs",
        "2",
        "--sampler",
        "wrappers",
        "--log-folder",
        logs,
    )
    assert_one_line_error(
        code, err, 1, "Atari preprocessing (AtariWrapper) needs cv2: pip install 'sb3-acer[atari]'"
    )
    assert not any((tmp_path / "logs").rglob("*.*"))


def test_train_runs_an_atari_game_on_ale_vector_wherever_it_serves_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    """One training command: ``train`` plays Atari on run_atari's sampler, ale-py's vector env, unless the
    run needs a Python env per game (SB3's wrappers)."""
    pytest.importorskip("ale_py")
    assert settings_of("PongNoFrameskip-v4").sampler == "ale-vector"
    assert settings_of("PongNoFrameskip-v4", "--sampler", "wrappers").sampler == "wrappers"
    assert settings_of("CartPole-v1").sampler is None
    for argv in (
        ["ALE/Pong-v5"],  # sticky actions
        ["PongNoFrameskip-v4", "--env-kwargs", "full_action_space=True"],
        ["PongNoFrameskip-v4", "--hyperparams", "env_wrapper=gymnasium.wrappers.ClipReward"],
        ["PongNoFrameskip-v4", "--vec-env", "subproc"],
    ):
        assert settings_of(*argv).sampler == "wrappers", argv
    code, _, err = run(capsys, "train", "ALE/Pong-v5", "--sampler", "ale-vector")
    assert_one_line_error(
        code, err, 2, "--sampler ale-vector: 'ALE/Pong-v5' has frameskip=4 and repeat_action_probability=0.25"
    )
    assert err.endswith("; use --sampler wrappers\n")
    code, _, err = run(
        capsys, "train", "PongNoFrameskip-v4", "--sampler", "ale-vector", "--vec-env", "subproc"
    )
    assert_one_line_error(
        code,
        err,
        2,
        "--sampler ale-vector: it steps the games in threads of its own (--vec-env); use --sampler",
    )
    code, _, err = run(capsys, "train", "CartPole-v1", "--sampler", "wrappers", "--log-folder", str(tmp_path))
    assert_one_line_error(code, err, 2, "--sampler wrappers: CartPole-v1 is not an Atari game")
    assert list(tmp_path.iterdir()) == []


def test_train_an_atari_game_with_run_atari_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    pytest.importorskip("ale_py")
    code, out, err = run(
        capsys,
        "train",
        "PongNoFrameskip-v4",
        "--n-envs",
        "1",
        "--timesteps",
        "20",
        "--no-progress-bar",
        "--log-folder",
        str(tmp_path),
    )
    assert code == 0, err
    assert "No preset for PongNoFrameskip-v4: using ACER's defaults with SB2 run_atari's settings" in out
    model = ACER.load(tmp_path / "PongNoFrameskip-v4_0" / "model.zip")
    assert model.observation_space.shape == (4, 84, 84)  # AtariWrapper, 4 frames, channel first
    assert model.lr_schedule_name == "constant"
    assert type(model.policy).__name__ == "CnnPolicy"


def record_evaluation_modes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The ``deterministic`` flag of each ``EvalCallback`` that ``train`` makes, from now on."""
    evaluations: list[bool] = []
    real = sb3_acer.cli.train.run.EvalCallback

    def recording(*args: Any, **kwargs: Any) -> Any:
        evaluations.append(kwargs["deterministic"])
        return real(*args, **kwargs)

    monkeypatch.setattr(sb3_acer.cli.train.run, "EvalCallback", recording)
    return evaluations


def test_eval_freq_keeps_the_best_model_with_its_description_and_statistics(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by review (stop 41): as the zoo does, --eval-freq keeps the best evaluated model; here with the
    # run description and the normalisation statistics of that moment, so that enjoy plays it as it was.
    evaluations = record_evaluation_modes(monkeypatch)
    code, out, err = train(capsys, tmp_path, "--timesteps", "200", *EVALUATED)
    assert code == 0, err
    run_dir = tmp_path / "CartPole-v1_0"
    best = run_dir / "best_model.zip"
    results = np.load(run_dir / "evaluations.npz")
    mean_returns = results["results"].mean(axis=1)
    best_step = int(results["timesteps"][int(np.argmax(mean_returns))])  # the first of equal bests
    assert ACER.load(best).num_timesteps == best_step
    description = json.loads((run_dir / "best_model.json").read_text())
    assert description["num_timesteps"] == best_step and description["env_id"] == "CartPole-v1"
    assert (run_dir / "best_model.vecnormalize.npz").is_file()
    assert f"best model: {best} (evaluation return {mean_returns.max():.2f} at step {best_step})" in out
    assert run(capsys, "enjoy", str(best), "--episodes", "1")[0] == 0
    assert evaluations == [True]  # a classic control game is evaluated deterministically, as in the zoo
    # --overwrite removes the best model too.
    assert train(capsys, tmp_path, "--timesteps", "100", "--overwrite")[0] == 0
    assert not best.exists() and not (run_dir / "best_model.json").exists()


def test_vec_env_subproc_trains_an_atari_game(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # Found by review (stop 41): the workers had not registered ale-py's games.
    pytest.importorskip("ale_py")
    pong = ["PongNoFrameskip-v4", "--n-envs", "2", "--timesteps", "40", "--vec-env", "subproc"]
    code, _, err = run(capsys, "train", *pong, "--no-progress-bar", "--log-folder", str(tmp_path))
    assert code == 0, err
    assert ACER.load(tmp_path / "PongNoFrameskip-v4_0" / "model.zip").num_timesteps == 40


def test_env_kwargs_that_json_cannot_keep_or_the_env_refuses_are_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # Found by review (stop 41): a tuple came back from model.json as a list; a value the env refuses
    # was a traceback in enjoy.
    code, _, err = train(capsys, tmp_path, "--env-kwargs", "sutton_barto_reward=(1, 2)")
    assert_one_line_error(
        code, err, 2, "--env-kwargs sutton_barto_reward: (1, 2) cannot be kept in model.json; use a list"
    )
    assert not (tmp_path / "CartPole-v1_0").exists()
    assert train(capsys, tmp_path, "--timesteps", "100")[0] == 0
    run_dir = str(tmp_path / "CartPole-v1_0")
    code, _, err = run(capsys, "enjoy", run_dir, "--env", "FrozenLake-v1", "--env-kwargs", "map_name='5x5'")
    assert_one_line_error(
        code, err, 2, "cannot make FrozenLake-v1 for the model: FrozenLake-v1 cannot be made"
    )
    code, _, err = run(capsys, "enjoy", run_dir, "--env-kwargs", "bogus=1")
    assert_one_line_error(code, err, 2, "cannot make CartPole-v1 for the model: CartPole-v1 cannot be made")


def test_atari_games_are_evaluated_stochastically_as_in_the_zoo(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ale_py")
    evaluations = record_evaluation_modes(monkeypatch)
    pong = ["PongNoFrameskip-v4", "--n-envs", "2", "--timesteps", "40", "--eval-freq", "1000"]
    code, _, err = run(capsys, "train", *pong, "--no-progress-bar", "--log-folder", str(tmp_path))
    assert code == 0, err
    assert evaluations == [False]


def test_env_kwargs_reach_training_evaluation_and_enjoy(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # By review (stop 41): the zoo's --env-kwargs. CartPole's Sutton-Barto reward is 0 a step and -1 at
    # the end, so every return shows which environment played.
    kwargs = ["--env-kwargs", "sutton_barto_reward=True"]
    code, _, err = train(capsys, tmp_path, "--timesteps", "200", "--eval-freq", "100", *kwargs)
    assert code == 0, err
    run_dir = tmp_path / "CartPole-v1_0"
    assert all(float(r) <= 0 for r in load_results(str(run_dir))["r"])
    assert np.all(np.load(run_dir / "evaluations.npz")["results"] == -1.0)
    assert json.loads((run_dir / "model.json").read_text())["env_kwargs"] == {"sutton_barto_reward": True}
    code, out, err = run(capsys, "enjoy", str(run_dir), "--episodes", "2")
    assert code == 0, err
    assert "return -1.00" in out
    # Given to enjoy, they are laid over the saved ones.
    code, out, err = run(
        capsys, "enjoy", str(run_dir), "--episodes", "1", "--env-kwargs", "sutton_barto_reward=False"
    )
    assert code == 0, err
    assert "return -1.00" not in out


def test_env_kwargs_of_a_preset_and_their_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_presets(monkeypatch, {"CartPole-v1": {"n_envs": 2, "env_kwargs": {"sutton_barto_reward": True}}})
    assert settings_of("CartPole-v1").env_kwargs == {"sutton_barto_reward": True}
    assert settings_of("CartPole-v1", "--env-kwargs", "sutton_barto_reward=False").env_kwargs == {
        "sutton_barto_reward": False
    }
    code, _, err = train(capsys, tmp_path, "--env-kwargs", "bogus=1")
    assert_one_line_error(
        code,
        err,
        2,
        "invalid settings: CartPole-v1 cannot be made with env_kwargs "
        "{'sutton_barto_reward': True, 'bogus': 1}",
    )
    code, _, err = train(capsys, tmp_path, "--env-kwargs", "render_mode='human'")
    assert_one_line_error(code, err, 2, "--env-kwargs render_mode: enjoy --render and --video-folder set it")
    use_presets(monkeypatch, {"CartPole-v1": {"env_kwargs": [1]}})
    code, _, err = train(capsys, tmp_path)
    assert_one_line_error(
        code, err, 2, "preset 'CartPole-v1' in sb3_acer/presets/acer.yml: env_kwargs must map"
    )
    assert not tmp_path.joinpath("CartPole-v1_0").exists()


def test_vec_env_subproc_trains_as_the_dummy_vec_env_does(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # By review (stop 41): the zoo's --vec-env. The same seed gives the same episodes in either.
    runs = {}
    for vec_env in ("dummy", "subproc"):
        logs = tmp_path / vec_env
        code, out, err = train(capsys, logs, "--timesteps", "200", "--n-envs", "2", "--vec-env", vec_env)
        assert code == 0, err
        runs[vec_env] = load_results(str(logs / "CartPole-v1_0"))[["r", "l"]].to_numpy().tolist()
    assert runs["subproc"] == runs["dummy"] and len(runs["dummy"]) > 2
    assert "(SafeSubprocVecEnv)" in out


def test_an_env_without_preset_gets_the_fallback_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    """MountainCarContinuous-v0 has no preset: a constant step (FALLBACK_HYPERPARAMETERS) over the
    constructor's SB2 defaults, said on the first line; the constructor itself keeps SB2's linear decay."""
    code, out, err = run(
        capsys,
        "train",
        "MountainCarContinuous-v0",
        "--timesteps",
        "40",
        "--no-progress-bar",
        "--log-folder",
        str(tmp_path),
    )
    assert code == 0, err
    assert (
        "No preset for MountainCarContinuous-v0: using ACER's defaults with the command line's fallback "
        "(lr_schedule " in out
    )
    assert ACER.load(tmp_path / "MountainCarContinuous-v0_0" / "model.zip").lr_schedule_name == "constant"
    assert ACER("MlpPolicy", "CartPole-v1").lr_schedule_name == "linear"


def test_a_dict_space_with_a_text_key_gets_the_apis_message(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    """Before: ``train`` of MiniGrid (a Dict with a ``Text`` key, ``mission``) said "'NoneType' object is not
    iterable" (``DummyVecEnv`` buffering the Text key); now the API's message, naming the key."""
    if "TextKey-v0" not in gym.registry:
        gym.register("TextKey-v0", entry_point="tests.helpers.acer_envs:TextKeyEnv")
    code, out, err = run(capsys, "train", "TextKey-v0", *FAST, "--log-folder", str(tmp_path))
    assert_one_line_error(
        code,
        err,
        2,
        "ACER cannot use TextKey-v0: key 'mission' of the Dict observation space: ACER supports Box, "
        "Discrete, MultiDiscrete and MultiBinary observations, and Dict observations of them (with "
        "MultiInputPolicy); got Text(",
    )
    assert out == "" and not any(tmp_path.iterdir())

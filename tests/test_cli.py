"""The ``sb3-acer`` command, driven in-process through ``main(argv)``: short real runs of train, enjoy and
plot, the help texts, and the one-line errors."""

from __future__ import annotations

import importlib.metadata
import inspect
import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import types
import zipfile
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest
from acer_envs import fill_the_disk_for, run_interrupted_while_torch_loads
from gymnasium import spaces
from stable_baselines3.common.monitor import load_results
from torch import nn, optim

import sb3_acer
import sb3_acer.cli.run_folder
import sb3_acer.cli.train
import sb3_acer.cli.training
from sb3_acer import ACER
from sb3_acer.cli import main
from sb3_acer.cli.arguments import parse_hyperparams
from sb3_acer.cli.errors import CLIError
from sb3_acer.cli.plot import learning_curves
from sb3_acer.cli.run_folder import LOCK_NAME, run_lock

FAST = ["--timesteps", "500", "--no-progress-bar"]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def train(capsys: pytest.CaptureFixture[str], logs: pathlib.Path, *extra: str) -> tuple[int, str, str]:
    return run(capsys, "train", "CartPole-v1", *FAST, "--log-folder", str(logs), *extra)


def assert_one_line_error(code: int, err: str, expected_code: int, starts_with: str) -> None:
    assert code == expected_code
    assert err.startswith(f"error: {starts_with}"), err
    assert err.count("\n") == 1 and "Traceback" not in err


# ---------------------------------------------------------------------------------------------- help


@pytest.mark.parametrize("command", [[], ["train"], ["enjoy"], ["plot"]])
def test_help_of_each_command_has_examples(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, out, _ = run(capsys, *command, "-h")
    assert code == 0
    assert "examples:" in out
    assert f"sb3-acer {command[0] if command else 'train'} " in out.split("examples:")[1]


def test_train_help_lists_the_presets(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "train", "-h")
    assert "Presets: Acrobot-v1, CartPole-v1, LunarLander-v3, MountainCar-v0." in out


# ---------------------------------------------------------------------------------------------- errors


def test_unknown_env_id_is_one_line_and_exit_code_2(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    code, _, err = run(capsys, "train", "CartPol-v1", "--log-folder", str(tmp_path))
    assert_one_line_error(code, err, 2, "unknown environment id 'CartPol-v1'")
    assert "Did you mean: `CartPole`?" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("gamma", "--hyperparams expects key=value, got 'gamma'"),
        ("=0.9", "--hyperparams expects key=value, got '=0.9'"),
        ("gamma=0.9.9", "--hyperparams gamma: '0.9.9' is not a Python literal"),
        ("foo=1", "unknown hyperparameter 'foo' for ACER; accepted: alpha, buffer_size"),
        ("seed=1", "--hyperparams seed: use --seed instead"),
        ("n_envs=2", "--hyperparams n_envs: use --n-envs instead"),
        ("gamma=2", "invalid settings: gamma must be in [0, 1], got 2"),
        ("lr_schedule=cosine", "invalid settings: unknown lr_schedule 'cosine'"),
        ("normalize=1", "--hyperparams normalize must be True, False or a dict of VecNormalize arguments"),
        ("normalize={'norm_rewards': True}", "--hyperparams normalize: unknown VecNormalize argument"),
        (
            "env_wrapper=TimeLimit",
            "--hyperparams env_wrapper: unknown wrapper 'TimeLimit'; accepted: sb3_contrib",
        ),
        (
            "env_wrapper={'TimeFeatureWrapper': {'max_step': 10}}",
            "--hyperparams env_wrapper: TimeFeatureWrapper: got an unexpected keyword argument 'max_step'",
        ),
        (
            "policy_kwargs={'activation_fn': 'relu'}",
            "policy_kwargs: activation_fn 'relu' is not an activation class of torch.nn",
        ),
        (
            "policy_kwargs={'optimizer_class': 'Adamm'}",
            "policy_kwargs: optimizer_class 'Adamm' is not a torch.optim class",
        ),
        (
            "policy_kwargs={'optimizer_class': 'Adam', 'optimizer_kwargs': {'lr': 1.0}}",
            "invalid settings: policy_kwargs: optimizer_kwargs must not set 'lr'",
        ),
    ],
)
def test_bad_hyperparams_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, item: str, message: str
) -> None:
    code, _, err = train(capsys, tmp_path, "--hyperparams", item)
    assert_one_line_error(code, err, 2, message)
    # No half-made run is left behind to block the corrected command.
    assert not (tmp_path / "CartPole-v1_0").exists()


def test_unsupported_action_space_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    code, out, err = run(capsys, "train", "Pendulum-v1", *FAST, "--log-folder", str(tmp_path))
    assert out == ""  # checked before the run is announced
    assert_one_line_error(code, err, 2, "invalid settings: ACER supports only Discrete action spaces")
    assert not tmp_path.joinpath("Pendulum-v1_0").exists()


def test_argparse_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "train", "CartPole-v1", "--n-envs", "0")
    assert_one_line_error(code, err, 2, "argument --n-envs: expected a positive integer, got '0'")
    code, _, err = run(capsys, "train", "CartPole-v1", "--eval-freq", "-5")
    assert_one_line_error(code, err, 2, "argument --eval-freq: expected a non-negative integer, got '-5'")
    code, _, err = run(capsys)
    assert_one_line_error(code, err, 2, "the following arguments are required: COMMAND")


def test_missing_model_file(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    code, _, err = run(capsys, "enjoy", str(tmp_path / "nothing.zip"))
    assert_one_line_error(code, err, 2, "no model file")


def test_plot_without_monitor_logs(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    code, _, err = run(capsys, "plot", str(tmp_path), "--out", str(tmp_path / "x.png"))
    assert_one_line_error(code, err, 1, "no Monitor logs (*.monitor.csv) in")


def test_console_entry_exits_with_the_code(tmp_path: pathlib.Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "sb3_acer", "enjoy", "model.zip", "--env", "Nope-v0"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr == "error: no model file 'model.zip'\n"


# Sends the process SIGINT when torch starts loading, as a Ctrl-C pressed while the command starts would.
def test_ctrl_c_while_the_command_loads_is_one_line(tmp_path: pathlib.Path) -> None:
    then = 'sys.argv = ["sb3-acer", "--version"]\nfrom sb3_acer.entry import main\nraise SystemExit(main())\n'
    result = run_interrupted_while_torch_loads(then, tmp_path)
    assert (result.returncode, result.stderr) == (130, "interrupted\n")


def test_the_package_loads_torch_on_first_use() -> None:
    script = (
        "import sys, sb3_acer; before = 'torch' in sys.modules; acer = sb3_acer.ACER; "
        "from sb3_acer.acer import ACER; print(before, 'torch' in sys.modules, acer is ACER)"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout == "False True True\n", result.stderr
    with pytest.raises(AttributeError, match="module 'sb3_acer' has no attribute 'Nope'"):
        sb3_acer.Nope  # noqa: B018


def test_console_script_is_the_entry_point() -> None:
    (script,) = importlib.metadata.entry_points(group="console_scripts", name="sb3-acer")
    assert script.value == "sb3_acer.entry:main"


# ---------------------------------------------------------------------------------------------- parsing


def test_parse_hyperparams_reads_literals_and_bare_words() -> None:
    parsed = parse_hyperparams(
        [
            "learning_rate=1e-3",
            "n_steps=5",
            "trust_region=False",
            "max_grad_norm=None",
            "lr_schedule=constant",
            "policy_kwargs={'net_arch': [32, {'pi': [8]}]}",
            "device='cpu'",
            "name=' a b '",
            "other=cuda:0",  # found by review (stop 41): device=cuda:0 was "not a Python literal"
        ]
    )
    assert parsed == {
        "learning_rate": 1e-3,
        "n_steps": 5,
        "trust_region": False,
        "max_grad_norm": None,
        "lr_schedule": "constant",
        "policy_kwargs": {"net_arch": [32, {"pi": [8]}]},
        "device": "cpu",
        "name": " a b ",
        "other": "cuda:0",
    }


# ---------------------------------------------------------------------------------------------- train


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


def test_existing_run_needs_overwrite_and_stale_ranks_are_removed(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path, "--timesteps", "100")[0] == 0
    code, _, err = train(capsys, tmp_path, "--timesteps", "100")
    assert_one_line_error(code, err, 2, f"{tmp_path / 'CartPole-v1_0'} already holds a run")
    code, _, _ = train(capsys, tmp_path, "--timesteps", "100", "--n-envs", "2", "--overwrite")
    assert code == 0
    assert sorted(path.name for path in (tmp_path / "CartPole-v1_0").glob("*.monitor.csv")) == [
        "0.monitor.csv",
        "1.monitor.csv",
    ]


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
    # MODEL.json may only name an accepted wrapper: it is data, not a way to import code.
    info["env_wrapper"] = ["os.system"]
    (run_dir / "model.json").write_text(json.dumps(info))
    code, _, err = run(capsys, "enjoy", str(run_dir), "--episodes", "1")
    assert_one_line_error(code, err, 1, f"{run_dir / 'model.json'}: env_wrapper: unknown wrapper 'os.system'")


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


# ---------------------------------------------------------------------------------------------- enjoy


def test_enjoy_prints_the_returns_of_n_episodes(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path)[0] == 0
    run_dir = tmp_path / "CartPole-v1_0"
    code, out, err = run(capsys, "enjoy", str(run_dir), "--episodes", "3", "--deterministic", "--seed", "5")
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("episode ")]
    assert len(lines) == 3
    returns = [float(line.split("return ")[1].split(",")[0]) for line in lines]
    lengths = [int(line.split("length ")[1]) for line in lines]
    assert returns == [float(length) for length in lengths]  # CartPole pays 1 per step
    assert f"mean return over 3 episodes {np.mean(returns):.2f} +/- {np.std(returns):.2f}" in out
    # Same seed, deterministic actions: the same episodes.
    again = run(
        capsys, "enjoy", str(run_dir / "model.zip"), "--episodes", "3", "--deterministic", "--seed", "5"
    )
    assert again[1] == out


def test_enjoy_refuses_an_env_that_does_not_fit(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    code, _, err = run(capsys, "enjoy", str(model_path))
    assert_one_line_error(code, err, 2, "pass --env ENV_ID")
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "Acrobot-v1")
    assert_one_line_error(code, err, 2, "the model does not fit Acrobot-v1")


class _RenderEnv(gym.Env):
    """Episodes of 4 steps, rendered as a small grey frame."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._t = 0
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._t += 1
        return np.full(2, self._t / 4, dtype=np.float32), 1.0, self._t >= 4, False, {}

    def render(self) -> np.ndarray:
        return np.full((8, 8, 3), 100 + self._t, dtype=np.uint8)


@pytest.fixture
def render_env_id() -> Any:
    env_id = "Sb3AcerTestRender-v0"
    gym.register(env_id, entry_point=_RenderEnv)
    yield env_id
    del gym.registry[env_id]


def test_enjoy_video_needs_moviepy(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "moviepy", None)  # import moviepy raises ImportError
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--video-folder", "v")
    assert code == 1
    assert err == "error: video recording needs moviepy: pip install moviepy\n"


def test_enjoy_render_without_pygame_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pygame", None)  # import pygame raises ImportError
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    code, out, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--render")
    assert_one_line_error(code, err, 1, "cannot show CartPole-v1: pygame is not installed")
    assert "pip install" in err and "episode" not in out


def test_atari_without_opencv_is_one_line_before_anything_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cv2", None)  # import cv2 raises ImportError
    code, _, err = run(
        capsys, "train", "PongNoFrameskip-v4", *FAST, "--n-envs", "2", "--log-folder", str(tmp_path / "logs")
    )
    assert_one_line_error(
        code, err, 1, "Atari preprocessing (AtariWrapper) needs cv2: pip install 'sb3-acer[atari]'"
    )
    assert not any((tmp_path / "logs").rglob("*.*"))


@pytest.fixture
def fake_moviepy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """moviepy's ImageSequenceClip, recording the name and the number of frames of each video written."""
    written: list[tuple[str, int]] = []

    class ImageSequenceClip:  # stands in for moviepy's: records what would be encoded
        def __init__(self, frames: list[np.ndarray], fps: float) -> None:
            self.frames = frames

        def write_videofile(self, path: str, logger: Any = None) -> None:
            written.append((pathlib.Path(path).name, len(self.frames)))
            pathlib.Path(path).write_bytes(b"video")

    fake = {name: types.ModuleType(name) for name in ("moviepy", "moviepy.video", "moviepy.video.io")}
    clip_module = types.ModuleType("moviepy.video.io.ImageSequenceClip")
    clip_module.ImageSequenceClip = ImageSequenceClip  # type: ignore[attr-defined]
    fake["moviepy.video.io.ImageSequenceClip"] = clip_module
    for name, module in fake.items():
        monkeypatch.setitem(sys.modules, name, module)
    return written


def test_enjoy_that_fails_before_playing_leaves_no_video_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, fake_moviepy: list[tuple[str, int]]
) -> None:
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    videos = tmp_path / "new" / "videos"
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "Acrobot-v1", "--video-folder", str(videos))
    assert_one_line_error(code, err, 2, "the model does not fit Acrobot-v1")
    assert not (tmp_path / "new").exists() and fake_moviepy == []


def test_enjoy_video_without_pygame_is_one_line_and_leaves_no_folder(
    capsys: pytest.CaptureFixture[str],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_moviepy: list[tuple[str, int]],
) -> None:
    monkeypatch.setitem(sys.modules, "pygame", None)  # import pygame raises ImportError
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    videos = tmp_path / "new" / "videos"
    code, _, err = run(
        capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--video-folder", str(videos)
    )
    assert_one_line_error(code, err, 1, "cannot record CartPole-v1: pygame is not installed")
    assert not (tmp_path / "new").exists() and fake_moviepy == []


def test_enjoy_records_one_video_per_episode(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, render_env_id: str, fake_moviepy: list[Any]
) -> None:
    written = fake_moviepy

    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", render_env_id, n_steps=5).save(model_path)
    videos = tmp_path / "videos"
    code, out, err = run(
        capsys,
        "enjoy",
        str(model_path),
        "--env",
        render_env_id,
        "--episodes",
        "2",
        "--video-folder",
        str(videos),
    )
    assert code == 0, err
    assert out.count("return 4.00, length 4") == 2
    # Two whole episodes of 5 frames (reset + 4 steps); not the episode begun by the final auto-reset.
    assert written == [(f"{render_env_id}-episode-0.mp4", 5), (f"{render_env_id}-episode-1.mp4", 5)]


# ---------------------------------------------------------------------------------------------- plot


def write_monitor(run_dir: pathlib.Path, returns: list[float], lengths: list[int]) -> None:
    run_dir.mkdir(parents=True)
    rows = "".join(f"{r},{n},{i + 1}.0\n" for i, (r, n) in enumerate(zip(returns, lengths, strict=True)))
    (run_dir / "0.monitor.csv").write_text('#{"t_start": 0.0, "env_id": "X"}\nr,l,t\n' + rows)


def test_runs_that_share_no_steps_are_not_averaged(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, the mean was one point at the short run's end, where the long run's smoothed curve had no
    value yet (np.interp held its first value)."""
    write_monitor(tmp_path / "exp" / "CartPole-v1_0", [9], [9])
    write_monitor(tmp_path / "exp" / "CartPole-v1_1", [float(i) for i in range(20)], [10] * 20)
    write_monitor(tmp_path / "exp" / "Acrobot-v1_0", [-5, -3], [20, 30])
    curves = learning_curves([str(tmp_path / "exp")], window=10)
    assert [curve.label for curve in curves] == ["Acrobot-v1"]
    assert capsys.readouterr().err == (
        "CartPole-v1: its 2 runs share no range of steps (a smoothed curve starts at 100 steps, another "
        "ends at 9), skipped\n"
    )
    (tmp_path / "exp" / "Acrobot-v1_0" / "0.monitor.csv").unlink()
    code, _, err = run(
        capsys, "plot", str(tmp_path / "exp"), "--window", "10", "--out", str(tmp_path / "c.png")
    )
    assert code == 1 and not (tmp_path / "c.png").exists()
    assert err == (
        "error: nothing to draw: CartPole-v1: its 2 runs share no range of steps (a smoothed curve starts at "
        "100 steps, another ends at 9)\n"
    )


def test_learning_curves_average_the_seeds_of_an_experiment(tmp_path: pathlib.Path) -> None:
    write_monitor(tmp_path / "exp" / "CartPole-v1_0", [1, 2, 3, 4], [10, 10, 10, 10])
    write_monitor(tmp_path / "exp" / "CartPole-v1_1", [3, 4, 5, 6], [10, 10, 10, 10])
    write_monitor(tmp_path / "exp" / "Acrobot-v1_0", [-5, -3], [20, 30])
    write_monitor(tmp_path / "other" / "Acrobot-v1_7", [-9, -9, -9], [5, 5, 40])
    curves = {c.label: c for c in learning_curves([str(tmp_path / "exp"), str(tmp_path / "other")], window=1)}
    assert sorted(curves) == ["CartPole-v1", "exp/Acrobot-v1", "other/Acrobot-v1"]
    cartpole = curves["CartPole-v1"]
    assert cartpole.n_runs == 2
    assert cartpole.steps[0] == 10 and cartpole.steps[-1] == 40
    np.testing.assert_allclose(cartpole.mean, 2 + (cartpole.steps - 10) / 10)
    np.testing.assert_allclose(cartpole.std, 1.0)
    assert curves["exp/Acrobot-v1"].n_runs == 1 and curves["exp/Acrobot-v1"].mean[-1] == -3
    # A moving average over 2 episodes starts at the second episode's end.
    smoothed = learning_curves([str(tmp_path / "exp" / "CartPole-v1_0")], window=2)[0]
    assert smoothed.steps[0] == 20 and smoothed.mean[0] == 1.5 and smoothed.mean[-1] == 3.5


def test_train_two_seeds_then_plot_a_png(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    from matplotlib import image

    logs = tmp_path / "logs"
    for seed in ("0", "1"):
        assert train(capsys, logs, "--seed", seed)[0] == 0
    out_png = tmp_path / "plots" / "curves.png"
    code, out, err = run(capsys, "plot", str(logs), "--out", str(out_png), "--window", "5")
    assert code == 0, err
    assert "CartPole-v1: 2 runs, return" in out
    assert out_png.stat().st_size > 10_000
    pixels = image.imread(out_png)
    assert pixels.shape[:2] == (540, 840)  # 7 x 4.5 inches at 120 dpi
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 50  # a drawing, not a blank


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
    assert model.lr_schedule == "constant"
    assert type(model.policy).__name__ == "CnnPolicy"


def test_a_v5_atari_id_keeps_its_sticky_actions_and_says_so() -> None:
    # Decided (stop 41, by review): an ALE/...-v5 id is the game with sticky actions (Machado et al.,
    # 2018); train keeps them (only the frame skip moves to AtariWrapper) and says so, and a NoFrameskip-v4
    # id has none, as in SB2's run_atari.
    pytest.importorskip("ale_py")
    from sb3_acer.cli.environments import make_env, resolve_env

    for env_id, sticky in (("ALE/Pong-v5", 0.25), ("PongNoFrameskip-v4", 0.0)):
        settings = settings_of(env_id)
        note = "keeps its sticky actions (repeat_action_probability=0.25"
        assert (note in settings.source) == (sticky > 0), settings.source
        venv = make_env(resolve_env(env_id), n_envs=1, seed=0)
        try:
            ale = venv.envs[0].unwrapped  # type: ignore[attr-defined]
            assert ale._frameskip == 1
            assert ale.ale.getFloat("repeat_action_probability") == pytest.approx(sticky)
        finally:
            venv.close()


def test_enjoy_carries_the_lstm_state_of_a_recurrent_model(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_path = tmp_path / "model.zip"
    ACER("MlpLstmPolicy", "CartPole-v1", n_steps=5, policy_kwargs=dict(n_lstm=8)).save(model_path)
    seen: list[tuple[bool, np.ndarray]] = []
    original = ACER.predict

    def spy(self: ACER, observation: Any, state: Any = None, episode_start: Any = None, **kwargs: Any) -> Any:
        seen.append((state is not None, np.asarray(episode_start).copy()))
        return original(self, observation, state=state, episode_start=episode_start, **kwargs)

    monkeypatch.setattr(ACER, "predict", spy)
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--episodes", "1")
    assert code == 0, err
    assert len(seen) > 2
    assert not seen[0][0] and seen[0][1].all()  # first step: no state yet, episode start
    # Every later step gets the state returned by the previous one.
    assert all(has_state for has_state, _ in seen[1:])
    assert not seen[1][1].any()


# ----------------------------------------------------------------- failed commands change nothing


def snapshot(folder: pathlib.Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in folder.rglob("*") if path.is_file()}


def test_a_failed_overwrite_keeps_the_previous_run(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    logs = tmp_path / "logs"
    assert train(capsys, logs, "--timesteps", "100")[0] == 0
    before = snapshot(tmp_path)
    code, out, err = train(capsys, logs, "--timesteps", "100", "--overwrite", "--hyperparams", "n_steps=0")
    assert_one_line_error(code, err, 2, "invalid settings: n_steps must be positive")
    assert out == "" and snapshot(tmp_path) == before
    # The model alone is a run too: without --overwrite it is not replaced.
    for path in (logs / "CartPole-v1_0").glob("*.monitor.csv"):
        path.unlink()
    code, _, err = train(capsys, logs, "--timesteps", "100")
    assert_one_line_error(code, err, 2, f"{logs / 'CartPole-v1_0'} already holds a run")


def test_save_path_is_not_replaced_without_overwrite(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    (tmp_path / "mine.zip").write_text("precious")
    (tmp_path / "mine.json").write_text('{"precious": 1}')
    before = snapshot(tmp_path)
    code, _, err = train(capsys, tmp_path / "logs", "--save-path", str(tmp_path / "mine.zip"))
    assert_one_line_error(code, err, 2, f"{tmp_path / 'mine.zip'} exists; pass --overwrite")
    assert snapshot(tmp_path) == before and not (tmp_path / "logs").exists()
    assert train(capsys, tmp_path / "logs", "--save-path", str(tmp_path / "mine.zip"), "--overwrite")[0] == 0
    assert json.loads((tmp_path / "mine.json").read_text())["env_id"] == "CartPole-v1"


def test_overwrite_of_a_linked_save_path_replaces_the_link_and_keeps_its_target(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # Decided: --overwrite replaces this run's files; a file elsewhere that a link points to is not one.
    (tmp_path / "kept.zip").write_text("precious")
    (tmp_path / "mine.zip").symlink_to(tmp_path / "kept.zip")
    save = ["--save-path", str(tmp_path / "mine.zip"), "--timesteps", "100"]
    code, _, err = train(capsys, tmp_path / "logs", *save)
    assert_one_line_error(code, err, 2, f"{tmp_path / 'mine.zip'} exists; pass --overwrite")
    assert train(capsys, tmp_path / "logs", *save, "--overwrite")[0] == 0
    assert not (tmp_path / "mine.zip").is_symlink() and (tmp_path / "kept.zip").read_text() == "precious"
    assert ACER.load(tmp_path / "mine.zip").num_timesteps >= 100


@pytest.mark.skipif(not pathlib.Path("/proc/self").exists(), reason="needs Linux's /proc")
@pytest.mark.parametrize("flag", ["--save-path", "--log-folder"])
def test_a_folder_that_refuses_new_files_is_found_before_training(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, flag: str
) -> None:
    # Found by review (stop 41): as root, os.access says /proc is writable, but no file can be made there;
    # the run trained to the end and then failed (exit 1), losing the model and leaving its Monitor logs.
    target = "/proc/acer.zip" if flag == "--save-path" else "/proc/acer-logs"
    logs = ["--log-folder", str(tmp_path / "logs")] if flag == "--save-path" else []
    code, out, err = run(capsys, "train", "CartPole-v1", *FAST, *logs, flag, target)
    what = f"{flag} {target}" if flag == "--save-path" else f"the run folder {target}/CartPole-v1_0"
    # (Without root the permission bits already say no.)
    reason = "/proc refuses new files" if os.access("/proc", os.W_OK) else "no write permission in /proc"
    assert_one_line_error(code, err, 2, f"{what} cannot be written: {reason}")
    assert out == "" and not (tmp_path / "logs").exists()


def test_a_save_that_fails_after_training_keeps_the_model_elsewhere(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A disk that fills up during training: the trained model is saved where it can be, and said so.
    target = tmp_path / "mine.zip"
    fill_the_disk_for(monkeypatch, target)
    code, _, err = train(capsys, tmp_path / "logs", "--save-path", str(target), "--timesteps", "100")
    rescued = tmp_path / "logs" / "CartPole-v1_0" / "model.zip"
    assert_one_line_error(
        code,
        err,
        1,
        f"cannot save the model to {target}: No space left on device; the trained model is in {rescued}",
    )
    assert ACER.load(rescued).num_timesteps >= 100
    assert json.loads(rescued.with_suffix(".json").read_text())["env_id"] == "CartPole-v1"
    assert not target.exists()
    # The run folder itself refuses the model: a new temporary folder takes it.
    target = tmp_path / "logs2" / "CartPole-v1_0" / "model.zip"
    fill_the_disk_for(monkeypatch, target)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    code, _, err = train(capsys, tmp_path / "logs2", "--timesteps", "100")
    (rescue_folder,) = (tmp_path / "tmp").glob("sb3-acer-*")
    rescued = rescue_folder / "model.zip"
    assert_one_line_error(
        code,
        err,
        1,
        f"cannot save the model to {target}: No space left on device; the trained model is in {rescued}",
    )
    assert ACER.load(rescued).num_timesteps >= 100


@pytest.mark.parametrize("spelling", ["{folder}", "{folder}/"])
def test_a_save_path_or_plot_out_naming_a_folder_writes_inside_it(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    # Found by review (stop 41): --save-path models/ wrote models.zip beside the folder, and plot --out
    # plots/ wrote plots.png beside it.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    code, out, err = train(capsys, tmp_path / "logs", "--save-path", spelling.format(folder="models"))
    assert code == 0, err
    assert sorted(path.name for path in (tmp_path / "models").iterdir()) == ["model.json", "model.zip"]
    assert f"model: {pathlib.Path('models') / 'model.zip'}" in out and not (tmp_path / "models.zip").exists()
    # A new folder: a trailing separator says it is one.
    if spelling.endswith("/"):
        assert train(capsys, tmp_path / "logs", "--save-path", "new/", "--seed", "1")[0] == 0
        assert (tmp_path / "new" / "model.zip").is_file()
    (tmp_path / "plots").mkdir()
    code, out, err = run(capsys, "plot", str(tmp_path / "logs"), "--out", spelling.format(folder="plots"))
    assert code == 0, err
    assert [path.name for path in (tmp_path / "plots").iterdir()] == ["learning_curves.png"]
    assert not (tmp_path / "plots.png").exists()


#: A normalised run evaluated every 50 steps.
EVALUATED = ["--eval-freq", "50", "--eval-episodes", "2", "--hyperparams", "normalize=True"]


def record_evaluation_modes(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The ``deterministic`` flag of each ``EvalCallback`` that ``train`` makes, from now on."""
    evaluations: list[bool] = []
    real = sb3_acer.cli.training.EvalCallback

    def recording(*args: Any, **kwargs: Any) -> Any:
        evaluations.append(kwargs["deterministic"])
        return real(*args, **kwargs)

    monkeypatch.setattr(sb3_acer.cli.training, "EvalCallback", recording)
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


BEST_RUN = ["--timesteps", "400", *EVALUATED]


def around_best_model_saves(monkeypatch: pytest.MonkeyPatch, before: Callable[[int], None]) -> list[int]:
    """Call ``before(count)`` ahead of each save of ``best_model.zip`` (``count``: 1 for the first);
    returns the list of the steps at which they were made."""
    save = ACER.save
    saves: list[int] = []

    def watched(self: ACER, path: Any, *args: Any, **kwargs: Any) -> None:
        if pathlib.Path(path).name == "best_model.zip":
            saves.append(self.num_timesteps)
            before(len(saves))
        save(self, path, *args, **kwargs)

    monkeypatch.setattr(ACER, "save", watched)
    return saves


def test_a_best_model_that_cannot_be_saved_does_not_stop_training(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Found by review (stop 41): a full disk at a best-model save ended the run and lost the model.
    def full_from_second_best(count: int) -> None:
        if count >= 2:
            raise OSError(28, "No space left on device")

    saves = around_best_model_saves(monkeypatch, full_from_second_best)
    code, out, err = train(capsys, tmp_path, *BEST_RUN)
    assert code == 0, err
    run_dir = tmp_path / "CartPole-v1_0"
    assert err.startswith(
        f"warning: cannot save the best model to {run_dir / 'best_model.zip'}: No space left"
    )
    assert len(saves) >= 2, "the scenario needs a second best"
    assert ACER.load(run_dir / "model.zip").num_timesteps >= 400
    # No best model is better than one whose files disagree: the set is removed and the summary says so.
    assert not any(run_dir.glob("best_model*")) and "best model:" not in out
    assert all(line.startswith("warning: cannot save the best model") for line in err.splitlines())


def test_ctrl_c_during_a_best_model_save_keeps_its_files_together(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def ctrl_c_at_second_best(count: int) -> None:
        if count == 2:
            os.kill(os.getpid(), signal.SIGINT)  # between the model and its description

    saves = around_best_model_saves(monkeypatch, ctrl_c_at_second_best)
    code, _, err = train(capsys, tmp_path, *BEST_RUN)
    assert code == 130, err
    run_dir = tmp_path / "CartPole-v1_0"
    best = ACER.load(run_dir / "best_model.zip").num_timesteps
    assert len(saves) == 2 and best == saves[1]
    assert json.loads((run_dir / "best_model.json").read_text())["num_timesteps"] == best
    # Training stopped there (the interrupted segment is undone, as for any Ctrl-C in a callback).
    assert ACER.load(run_dir / "model.zip").num_timesteps <= best < 400


def test_save_path_cannot_be_the_best_model(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    best = tmp_path / "CartPole-v1_0" / "best_model.zip"
    code, _, err = train(capsys, tmp_path, "--eval-freq", "50", "--save-path", str(best))
    assert_one_line_error(code, err, 2, f"--save-path {best}: the run keeps its best model there")
    assert train(capsys, tmp_path, "--save-path", str(best))[0] == 0  # without evaluations it is free


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


class _CrashingCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole that raises at its 60th step, as a buggy environment can hours into a run."""

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.steps = 0

    def step(self, action: Any) -> Any:
        self.steps += 1
        if self.steps == 60:
            raise RuntimeError("the simulator crashed")
        return self.env.step(action)


def test_an_env_that_fails_during_training_keeps_the_model_trained_so_far(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # Found by review (stop 41): the failure was a traceback and the model was lost.
    gym.register("CrashingCartPole-v0", entry_point=_CrashingCartPole)
    code, _, err = run(
        capsys,
        "train",
        "CrashingCartPole-v0",
        *FAST,
        "--n-envs",
        "1",
        "--timesteps",
        "200",
        "--log-folder",
        str(tmp_path),
    )
    model_path = tmp_path / "CrashingCartPole-v0_0" / "model.zip"
    assert_one_line_error(
        code,
        err,
        1,
        # n_steps 20 (no preset): the segment the crash broke off is not kept
        "training stopped at step 40 by RuntimeError: the simulator crashed; the model trained so far is in "
        f"{model_path}",
    )
    assert ACER.load(model_path).num_timesteps == 40
    assert json.loads(model_path.with_suffix(".json").read_text())["num_timesteps"] == 40


class _FailingCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole whose ``how`` fails: ``reset`` at once, a NaN observation or an empty assertion at step 30."""

    def __init__(self, how: str) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.how, self.steps = how, 0

    def reset(self, **kwargs: Any) -> Any:
        if self.how == "reset":
            raise ValueError("bad level name")
        return self.env.reset(**kwargs)

    def step(self, action: Any) -> Any:
        self.steps += 1
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.steps == 30 and self.how == "nan":
            obs = np.full_like(obs, np.nan)
        if self.steps == 30 and self.how == "assert":
            raise AssertionError
        return obs, reward, terminated, truncated, info


@pytest.mark.parametrize(
    ("how", "extra", "message"),
    [
        (
            "reset",
            [],
            "training stopped at step 0 by ValueError: bad level name; nothing was trained, so no ",
        ),
        (
            "nan",
            ["--hyperparams", "normalize=True"],
            "training stopped at step 20 by ValueError: env 0 returned a non-finite observation",
        ),
        (
            "assert",
            [],
            "training stopped at step 20 by AssertionError (no message); the model trained so far is",
        ),
    ],
)
def test_a_failure_never_saves_what_cannot_be_used_and_always_names_its_cause(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, how: str, extra: list[str], message: str
) -> None:
    # Found by review (stop 41): an untrained model, NaN statistics, or an empty reason.
    gym.register(f"Failing{how}-v0", entry_point=_FailingCartPole, kwargs={"how": how})
    argv = ["--n-envs", "1", "--timesteps", "200", "--no-progress-bar", *extra]
    code, _, err = run(capsys, "train", f"Failing{how}-v0", *argv, "--log-folder", str(tmp_path))
    assert_one_line_error(code, err, 1, message)
    run_dir = tmp_path / f"Failing{how}-v0_0"
    saved = (run_dir / "model.zip").exists()
    assert saved == (how == "assert"), err
    if how == "nan":
        assert "the normalisation statistics hold NaN or inf, so no model was saved" in err
    if how == "reset":  # nothing of the run is left: the same command works again without --overwrite
        assert not list(run_dir.glob("*"))


class _FlakyCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole whose ``reset`` fails while the class attribute ``down`` is set."""

    down = False

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))

    def reset(self, **kwargs: Any) -> Any:
        if _FlakyCartPole.down:
            raise RuntimeError("simulator not reachable")
        return self.env.reset(**kwargs)

    def close(self) -> None:
        if _FlakyCartPole.down:
            raise RuntimeError("simulator not reachable")
        self.env.close()


@pytest.mark.parametrize("how", ["reset and close fail", "Ctrl-C at the first reset", "statistics overflow"])
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning"
)  # Monitor's file, if close fails
def test_an_overwrite_that_saves_nothing_keeps_the_earlier_run(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # Found by review (stop 41): the earlier run's files were deleted once the model was built, or left
    # aside, mixed with this run's best model and evaluations.
    for env_id, entry_point in (
        ("FlakyCartPole-v0", _FlakyCartPole),
        ("SpikeOverwriteCartPole-v0", _SpikeCartPole),
    ):
        if env_id not in gym.registry:
            gym.register(env_id, entry_point=entry_point)
    env_id = "SpikeOverwriteCartPole-v0" if how == "statistics overflow" else "FlakyCartPole-v0"
    argv = ["train", env_id, "--n-envs", "1", "--timesteps", "100", "--no-progress-bar", "--seed", "3"]
    argv += ["--log-folder", str(tmp_path / "logs"), "--save-path", str(tmp_path / "saved" / "m.zip")]
    argv += ["--hyperparams", "normalize=True"]
    if how == "statistics overflow":
        monkeypatch.setattr(_SpikeCartPole, "spike_at", 10**9)  # the earlier run is a normal one
    assert run(capsys, *argv)[0] == 0
    before = snapshot(tmp_path)
    if how == "reset and close fail":
        monkeypatch.setattr(_FlakyCartPole, "down", True)
        expected = (1, "training stopped at step 0 by RuntimeError: simulator not reachable")
    elif how == "Ctrl-C at the first reset":
        monkeypatch.setattr(
            _FlakyCartPole, "reset", lambda self, **kwargs: (_ for _ in ()).throw(KeyboardInterrupt)
        )
        expected = (130, "interrupted before the first step: nothing was trained, so no model was saved")
    else:
        monkeypatch.setattr(_SpikeCartPole, "spike_at", 30)
        expected = (1, "the normalisation statistics hold NaN or inf, so no model was saved")
    code, out, err = run(capsys, *argv, "--overwrite", "--eval-freq", "20")
    assert code == expected[0], err
    if how == "Ctrl-C at the first reset":  # one line, no "saving the model" (found by review)
        assert err == expected[1] + "\n" and "saving the model" not in out
    else:
        assert_one_line_error(code, err, 1, expected[1])
    assert snapshot(tmp_path) == before  # no file of this run, every file of the earlier one


class _SpikeCartPole(gym.Wrapper):  # type: ignore[type-arg]
    """CartPole with one finite but huge observation (1e200) at step 30: VecNormalize's variance overflows."""

    spike_at = 30

    def __init__(self) -> None:
        super().__init__(gym.make("CartPole-v1"))
        self.observation_space = spaces.Box(-np.inf, np.inf, (4,), np.float64)
        self.steps = 0

    def step(self, action: Any) -> Any:
        self.steps += 1
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self.steps == _SpikeCartPole.spike_at:
            obs = np.full(4, 1e200)
        return obs.astype(np.float64), reward, terminated, truncated, info

    def reset(self, **kwargs: Any) -> Any:
        obs, info = self.env.reset(**kwargs)
        return obs.astype(np.float64), info


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_statistics_that_overflowed_are_never_saved(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    # Found by review (stop 41): a run that ended normally saved an infinite variance, which enjoy refuses.
    gym.register("SpikeCartPole-v0", entry_point=_SpikeCartPole)
    argv = ["train", "SpikeCartPole-v0", "--n-envs", "1", "--timesteps", "100", "--no-progress-bar"]
    code, _, err = run(capsys, *argv, "--hyperparams", "normalize=True", "--log-folder", str(tmp_path))
    assert_one_line_error(code, err, 1, "the normalisation statistics hold NaN or inf, so no model was saved")
    assert not list(tmp_path.glob("*/model*"))


def test_a_failed_training_whose_save_fails_too_says_both(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gym.register("Failingassert-v1", entry_point=_FailingCartPole, kwargs={"how": "assert"})
    target = tmp_path / "mine.zip"
    fill_the_disk_for(monkeypatch, target)
    argv = ["--n-envs", "1", "--timesteps", "200", "--no-progress-bar", "--save-path", str(target)]
    code, _, err = run(capsys, "train", "Failingassert-v1", *argv, "--log-folder", str(tmp_path))
    rescued = tmp_path / "Failingassert-v1_0" / "model.zip"
    assert_one_line_error(
        code,
        err,
        1,
        "training stopped at step 20 by AssertionError (no message); cannot save the model to "
        f"{target}: No space left on device; the model trained so far is in {rescued}",
    )


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


def test_overwrite_removes_every_file_of_the_previous_run(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    run_dir = tmp_path / "CartPole-v1_0"
    first = ["--timesteps", "100", "--eval-freq", "50", "--hyperparams", "normalize=True"]
    assert train(capsys, tmp_path, *first)[0] == 0
    assert {"model.vecnormalize.npz", "evaluations.npz"} <= {path.name for path in run_dir.iterdir()}
    # A run without normalisation saved elsewhere: the folder keeps none of the old run's files, so
    # neither enjoy nor plot can mistake them for this run's.
    second = ["--timesteps", "100", "--n-envs", "1", "--overwrite", "--save-path", str(tmp_path / "m.zip")]
    assert train(capsys, tmp_path, *second)[0] == 0
    assert sorted(path.name for path in run_dir.iterdir()) == ["0.monitor.csv"]


def test_enjoy_follows_the_run_description_over_stray_statistics(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path / "a", "--timesteps", "100", "--hyperparams", "normalize=True")[0] == 0
    assert train(capsys, tmp_path / "b", "--timesteps", "100")[0] == 0
    model = tmp_path / "b" / "CartPole-v1_0" / "model.zip"
    plain = run(capsys, "enjoy", str(model), "--episodes", "2", "--deterministic")
    stray = tmp_path / "a" / "CartPole-v1_0" / "model.vecnormalize.npz"
    (model.parent / stray.name).write_bytes(stray.read_bytes())  # model.json says normalize: false
    assert run(capsys, "enjoy", str(model), "--episodes", "2", "--deterministic") == plain


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["--policy", "CnnPolicy"],
            "CnnPolicy needs image observations (uint8, [H, W, C] or [C, H, W]); CartPole-v1",
        ),
        (
            ["--hyperparams", "device=bogus"],
            "--hyperparams device: unusable torch device 'bogus'; use one of auto, cpu, cuda, cuda:N",
        ),
        (["--seed", "-1"], "argument --seed: expected a seed in [0, 2**32 - 1], got '-1'"),
        (["--timesteps", "1e400"], "argument --timesteps: expected a positive integer, got '1e400'"),
        (["--timesteps", "1.5e0"], "argument --timesteps: expected a positive integer, got '1.5e0'"),
        (
            ["--tensorboard-log", "{tmp}/notes.txt"],
            "--tensorboard-log {tmp}/notes.txt is a file, not a folder",
        ),
        (["--save-path", "{tmp}/saved.zip"], "--save-path {tmp}/saved.zip is a folder, not a file"),
        (
            ["--save-path", "{tmp}/notes.txt/m.zip"],
            "--save-path {tmp}/notes.txt/m.zip cannot be created: {tmp}/notes.txt is a file",
        ),
        (
            ["--log-folder", "{tmp}/notes.txt"],
            "the run folder {tmp}/notes.txt/CartPole-v1_0 cannot be created",
        ),
    ],
)
def test_setup_errors_are_one_line_before_anything_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, extra: list[str], message: str
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "saved.zip").mkdir()
    logs = tmp_path / "logs"
    extra = [arg.format(tmp=tmp_path) for arg in extra]
    code, out, err = run(capsys, "train", "CartPole-v1", *FAST, "--log-folder", str(logs), *extra)
    assert_one_line_error(code, err, 2, message.format(tmp=tmp_path))
    assert out == "" and sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt", "saved.zip"]


def test_whole_numbers_in_any_notation() -> None:
    from sb3_acer.cli.arguments import positive_int

    assert [positive_int(text) for text in ("7", "1e3", "1E3", "2.5e5", "100.0")] == [
        7,
        1000,
        1000,
        250000,
        100,
    ]


def test_hyperparams_before_the_env_id_is_explained(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "train", "--hyperparams", "ent_coef=0.01", "CartPole-v1")
    assert_one_line_error(code, err, 2, "ENV_ID is missing: --hyperparams takes every word after it")


def test_hyperparams_list_ends_with_double_dash(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    code, _, err = run(
        capsys,
        "train",
        *FAST,
        "--log-folder",
        str(tmp_path),
        "--hyperparams",
        "ent_coef=0.02",
        "--",
        "CartPole-v1",
    )
    assert code == 0, err
    assert ACER.load(tmp_path / "CartPole-v1_0" / "model.zip").ent_coef == 0.02


def test_enjoy_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--device", "bogus")
    assert_one_line_error(code, err, 2, "argument --device: unusable torch device 'bogus'")
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--seed", "-1")
    assert_one_line_error(code, err, 2, "argument --seed: expected a seed in [0, 2**32 - 1]")
    # A space whose repr spans lines still gives one line.
    gym.register("WideBox-v0", entry_point=_WideBoxEnv)
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "WideBox-v0")
    assert_one_line_error(code, err, 2, "the model does not fit WideBox-v0")
    for text, reason in (("{bad", "Expecting property name"), ("[1]", "not a run description")):
        (tmp_path / "model.json").write_text(text)
        code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1")
        assert_one_line_error(code, err, 1, f"cannot read {tmp_path / 'model.json'}: {reason}")


class _WideBoxEnv(gym.Env):
    observation_space = spaces.Box(-np.arange(1.0, 31.0), np.arange(1.0, 31.0), dtype=np.float64)
    action_space = spaces.Discrete(2)


def test_plot_errors_are_one_line_and_write_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    write_monitor(tmp_path / "logs" / "X_0", [1, 2, 3], [10, 10, 10])
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "old.png").mkdir()
    before = snapshot(tmp_path)
    logs = str(tmp_path / "logs")
    for extra, expected_code, message in (
        (
            ["--out", "curves.xyz"],
            2,
            "--out curves.xyz: unknown image format '.xyz'; use one of .png, .pdf, .svg, .jpg, .jpeg",
        ),
        (["--out", f"{tmp_path}/old.png"], 2, f"--out {tmp_path}/old.png is a folder, not a file"),
        (["--out", f"{tmp_path}/notes.txt/c.png"], 2, f"--out {tmp_path}/notes.txt/c.png cannot be created"),
        (["--dpi", "100000"], 2, "argument --dpi: expected a resolution in [1, 1000] dots per inch"),
    ):
        code, _, err = run(capsys, "plot", logs, *extra)
        assert_one_line_error(code, err, expected_code, message)
    assert snapshot(tmp_path) == before
    (tmp_path / "logs" / "X_0" / "0.monitor.csv").write_text("r,l,t\n1,10,1.0\n")
    code, _, err = run(capsys, "plot", logs, "--out", str(tmp_path / "c.png"))
    assert_one_line_error(
        code,
        err,
        1,
        f"{tmp_path / 'logs' / 'X_0' / '0.monitor.csv'} is not a readable Monitor log: its first line is not",
    )


def test_plot_of_a_run_in_progress_and_of_a_run_given_twice(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir = tmp_path / "X_0"
    write_monitor(run_dir, [1, 2, 3], [10, 10, 10])
    with open(run_dir / "0.monitor.csv", "a") as file:
        file.write("12.0,1")  # the line Monitor is writing: r and l, but l may be cut short
    monkeypatch.chdir(tmp_path)
    code, out, err = run(capsys, "plot", "X_0", str(run_dir), "--out", "curves", "--window", "1")
    assert code == 0, err
    assert out.splitlines() == ["X: 1 run, return 3.00 +/- 0.00 at 30 steps", "saved curves.png"]
    assert (tmp_path / "curves.png").stat().st_size > 1000


def test_ctrl_c_before_training_exits_130_without_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    def interrupted(*args: Any, **kwargs: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(sb3_acer.cli.training, "make_env", interrupted)
    code, _, err = train(capsys, tmp_path)
    assert code == 130 and err == "interrupted\n"
    assert not (tmp_path / "CartPole-v1_0").exists()


def test_plot_reports_unreadable_monitor_logs_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    write_monitor(tmp_path / "X_0", [1, 2], [10, 10])
    monitor = tmp_path / "X_0" / "0.monitor.csv"
    for content, reason in (
        (b"\xff\xfe\x00garbage\n", "'utf-8' codec can't decode"),
        (b'#{"t_start": 0.0}\nx,y\n1,2\n', "no r, l, t columns"),
        (b'#{"t_start": "soon"}\nr,l,t\n1,10,1.0\n', ""),
        (b'#{"t_start": 0.0}\nr,l,t\n1,10,1.0\nabc,def,2.0\n', "column r holds a value that is not a number"),
    ):
        monitor.write_bytes(content)
        code, _, err = run(capsys, "plot", str(tmp_path / "X_0"), "--out", str(tmp_path / "c.png"))
        assert_one_line_error(code, err, 1, f"{monitor} is not a readable Monitor log: {reason}")
    code, _, err = run(capsys, "plot", str(tmp_path / "X_0"), "--out", str(tmp_path / "c.pgf"))
    assert_one_line_error(code, err, 2, f"--out {tmp_path / 'c.pgf'}: unknown image format '.pgf'")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["X_0"]


def test_overwrite_of_the_run_model_under_another_spelling(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert train(capsys, pathlib.Path("logs"), "--timesteps", "100")[0] == 0
    absolute = tmp_path / "logs" / "CartPole-v1_0" / "model.zip"
    code, _, err = train(
        capsys, pathlib.Path("logs"), "--timesteps", "100", "--overwrite", "--save-path", str(absolute)
    )
    assert code == 0, err
    assert ACER.load(absolute).num_timesteps >= 100 and (absolute.parent / "0.monitor.csv").exists()


def test_files_in_the_way_are_reported_before_anything_is_removed(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    logs = tmp_path / "logs"
    assert train(capsys, logs, "--timesteps", "100")[0] == 0
    (tmp_path / "m.json").mkdir()
    before = snapshot(tmp_path)
    code, _, err = train(
        capsys, logs, "--timesteps", "100", "--overwrite", "--save-path", str(tmp_path / "m.zip")
    )
    assert_one_line_error(code, err, 2, f"--save-path {tmp_path / 'm.json'} is a folder, not a file")
    code, _, err = train(capsys, logs, "--timesteps", "100", "--save-path", str(tmp_path / "m.json"))
    assert_one_line_error(code, err, 2, f"--save-path {tmp_path / 'm.json'}: the model file must end in .zip")
    (logs / "CartPole-v1_5").symlink_to(tmp_path / "gone")
    code, _, err = train(capsys, logs, "--timesteps", "100", "--seed", "5")
    assert_one_line_error(code, err, 2, f"the run folder {logs / 'CartPole-v1_5'} cannot be created: ")
    # Without write permission in the run folder (simulated: root may write anywhere).
    run_dir = logs / "CartPole-v1_0"
    real_access = os.access
    monkeypatch.setattr(
        sb3_acer.cli.run_folder.os,
        "access",
        lambda path, mode: pathlib.Path(path) != run_dir and real_access(path, mode),
    )
    code, _, err = train(capsys, logs, "--timesteps", "100", "--overwrite")
    assert_one_line_error(
        code, err, 2, f"the run folder {run_dir} cannot be written: no write permission in {run_dir}"
    )
    code, _, err = train(
        capsys, logs, "--timesteps", "100", "--seed", "1", "--save-path", str(run_dir / "m.zip")
    )
    assert_one_line_error(code, err, 2, f"--save-path {run_dir / 'm.zip'} cannot be written")
    assert snapshot(tmp_path) == before


def test_enjoy_plays_a_model_normalised_without_clipping(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    hyperparams = "normalize=dict(clip_obs=1e999, clip_reward=1e999)"  # infinite bounds: no clipping
    assert train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", hyperparams)[0] == 0
    code, out, err = run(capsys, "enjoy", str(tmp_path / "CartPole-v1_0" / "model.zip"), "--episodes", "1")
    assert code == 0, err
    assert "mean return over 1 episode" in out


def test_enjoy_reports_damaged_files_beside_the_model_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", "normalize=True")[0] == 0
    model = tmp_path / "CartPole-v1_0" / "model.zip"
    description = model.with_suffix(".json")
    good = description.read_text()
    for value in ("5", '["CartPole-v1"]'):
        description.write_text(f'{{"env_id": {value}}}')
        code, _, err = run(capsys, "enjoy", str(model))
        assert_one_line_error(code, err, 1, f"cannot read {description}: 'env_id' must be a str, got")
    description.write_text(good)
    statistics = model.with_suffix(".vecnormalize.npz")
    np.savez(
        tmp_path / "wrong.npz",
        obs_mean=np.zeros(7),
        obs_var=np.ones(7),
        obs_count=1.0,
        norm_obs=True,
        clip_obs=10.0,
        clip_reward=10.0,
        gamma=0.99,
        epsilon=1e-8,
        ret_mean=0.0,
        ret_var=1.0,
        ret_count=1.0,
    )
    good_statistics = statistics.read_bytes()
    with np.load(statistics) as saved:
        fields = {name: saved[name] for name in saved.files}
    damaged = []
    for name, value, reason in (
        ("clip_obs", np.array([10.0, 10.0]), "clip_obs is not a number: float64[2]"),
        ("obs_var", np.full(4, np.nan), "observation statistics hold NaN, inf or a negative variance"),
        ("obs_var", -np.ones(4), "observation statistics hold NaN, inf or a negative variance"),
        ("epsilon", np.float64(0.0), "epsilon = 0.0 is out of range"),
    ):
        buffer = io.BytesIO()
        np.savez(buffer, **{**fields, name: value})
        damaged.append((buffer.getvalue(), reason))
    flipped = bytearray(good_statistics)
    with zipfile.ZipFile(io.BytesIO(good_statistics)) as archive:
        first = archive.infolist()[0]
    name_length, extra_length = np.frombuffer(good_statistics, "<u2", 2, first.header_offset + 26)
    flipped[first.header_offset + 30 + name_length + extra_length + first.file_size - 1] ^= 0xFF  # CRC fails
    for content, reason in (
        (b"garbage", "cannot read"),
        (
            (tmp_path / "wrong.npz").read_bytes(),
            "observation statistics of shape (7,), for observations of shape (4,)",
        ),
        (good_statistics[: len(good_statistics) // 2], "damaged (truncated or corrupt)"),
        (bytes(flipped), "damaged (truncated or corrupt)"),
        *damaged,
    ):
        statistics.write_bytes(content)
        code, _, err = run(capsys, "enjoy", str(model))
        assert_one_line_error(code, err, 1, f"cannot read {statistics}: ")
        assert reason in err
    with zipfile.ZipFile(model) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(entries["data.json"])
    data["policy_class"] = "CnnPolicy"  # a file that contradicts itself: images expected, CartPole's vector
    entries["data.json"] = json.dumps(data).encode()
    contradicting = tmp_path / "contradicting.zip"
    with zipfile.ZipFile(contradicting, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    code, _, err = run(capsys, "enjoy", str(contradicting), "--env", "CartPole-v1")
    assert_one_line_error(code, err, 1, f"cannot load {contradicting}: load: the policy cannot be built")
    for device in ("meta", "xpu"):
        code, _, err = run(capsys, "enjoy", str(model), "--device", device)
        assert_one_line_error(code, err, 2, f"argument --device: unusable torch device '{device}'")


def _failing_on_second_build(failure: BaseException) -> type[ACER]:
    """ACER whose second construction raises ``failure``: ``train``'s check passes, building the run fails."""
    calls: list[int] = []

    class Failing(ACER):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            calls.append(1)
            if len(calls) == 2:
                raise failure
            super().__init__(*args, **kwargs)

    # train checks a preset's keys against ACER's signature: keep it.
    Failing.__init__.__signature__ = inspect.signature(ACER.__init__)  # type: ignore[attr-defined]
    return Failing


def test_a_run_that_fails_to_start_puts_the_earlier_run_back(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    assert train(capsys, tmp_path, "--timesteps", "100")[0] == 0
    before = snapshot(tmp_path)
    for failure, expected_code in (
        (MemoryError("Unable to allocate 5.57 GiB"), 2),
        (KeyboardInterrupt(), 130),
    ):
        failing = _failing_on_second_build(failure)
        monkeypatch.setattr(sb3_acer.cli.train, "ACER", failing)
        monkeypatch.setattr(sb3_acer.cli.training, "ACER", failing)
        code, _, err = train(capsys, tmp_path, "--timesteps", "100", "--n-envs", "2", "--overwrite")
        assert code == expected_code, err
        assert snapshot(tmp_path) == before  # no .previous file left, no new Monitor log


def test_enjoy_checks_its_video_folder_and_the_env_before_playing(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert (
        train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", "env_wrapper=TimeFeatureWrapper")[0]
        == 0
    )
    run_dir = str(tmp_path / "CartPole-v1_0")
    (tmp_path / "afile").write_text("mine")
    code, _, err = run(capsys, "enjoy", run_dir, "--video-folder", str(tmp_path / "afile"))
    assert_one_line_error(code, err, 2, f"--video-folder {tmp_path / 'afile'} is a file, not a folder")
    (tmp_path / "videos").mkdir()
    (tmp_path / "videos" / "CartPole-v1-episode-0.mp4").write_text("an earlier video")
    code, _, err = run(capsys, "enjoy", run_dir, "--video-folder", str(tmp_path / "videos"))
    assert_one_line_error(code, err, 2, f"--video-folder {tmp_path / 'videos'} already holds videos")
    code, _, err = run(capsys, "enjoy", run_dir, "--env", "FrozenLake-v1")
    assert_one_line_error(
        code, err, 2, "cannot make FrozenLake-v1 for the model: env_wrapper TimeFeatureWrapper"
    )
    (tmp_path / "CartPole-v1_0" / "model.json").write_text('{"normalize": false}')
    code, _, err = run(capsys, "enjoy", run_dir)
    assert_one_line_error(
        code, err, 2, f"pass --env ENV_ID ({tmp_path / 'CartPole-v1_0' / 'model.json'} names no"
    )


def test_enjoy_of_a_normalised_model_on_another_env_says_it_does_not_fit(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", "normalize=True")[0] == 0
    code, _, err = run(capsys, "enjoy", str(tmp_path / "CartPole-v1_0"), "--env", "Acrobot-v1")
    assert_one_line_error(code, err, 2, "the model does not fit Acrobot-v1")


def test_an_env_needing_a_missing_module_and_a_name_too_long(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    gym.register("NeedsAMissingModule-v0", entry_point="sb3_acer_no_such_module:Env")
    code, _, err = run(capsys, "train", "NeedsAMissingModule-v0", *FAST, "--log-folder", str(tmp_path))
    assert_one_line_error(code, err, 1, "NeedsAMissingModule-v0 needs a module that is not installed")
    long_name = str(tmp_path / ("d" * 300))
    code, _, err = train(capsys, pathlib.Path(long_name))
    assert_one_line_error(code, err, 2, "the run folder")
    assert "File name too long" in err
    code, _, err = train(capsys, tmp_path, "--save-path", str(tmp_path / ("m" * 245 + ".zip")))
    assert_one_line_error(code, err, 2, "--save-path")
    assert "the file name is too long to be saved safely" in err
    code, _, err = run(capsys, "plot", long_name)
    assert code in (1, 2) and err.count("\n") == 1 and "Traceback" not in err


def test_plot_of_a_folder_that_is_a_run_and_holds_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    write_monitor(tmp_path / "mixed", [1, 2], [10, 10])
    write_monitor(tmp_path / "mixed" / "CartPole-v1_0", [3, 4], [10, 10])
    labels = sorted(curve.label for curve in learning_curves([str(tmp_path / "mixed")], window=1))
    assert labels == ["CartPole-v1", "mixed"]


def test_ctrl_c_in_enjoy_prints_the_episodes_played(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert train(capsys, tmp_path, "--timesteps", "100")[0] == 0
    predict = ACER.predict
    calls = []

    def interrupted_later(self: ACER, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 200:
            raise KeyboardInterrupt
        return predict(self, *args, **kwargs)

    monkeypatch.setattr(ACER, "predict", interrupted_later)
    code, out, err = run(capsys, "enjoy", str(tmp_path / "CartPole-v1_0"), "--episodes", "1000")
    assert code == 130 and err == "interrupted\n"
    assert "CartPole-v1: mean return over" in out and out.count("episode ") >= 2


def test_ctrl_c_while_saving_still_writes_every_file_of_the_run(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A second Ctrl-C (or a first one just after training) lands while the model is being saved: the save
    # goes on, the run description and statistics beside the model are written, and the command exits 130.
    save = ACER.save

    def interrupted_while_saving(self: ACER, *args: Any, **kwargs: Any) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        save(self, *args, **kwargs)

    monkeypatch.setattr(ACER, "save", interrupted_while_saving)
    code, out, err = train(capsys, tmp_path, "--hyperparams", "normalize=True")
    run_dir = tmp_path / "CartPole-v1_0"
    assert code == 130, err
    assert "Ctrl-C: finishing the save first" in err and "Traceback" not in err
    assert sorted(path.name for path in run_dir.glob("model.*")) == [
        "model.json",
        "model.vecnormalize.npz",
        "model.zip",
    ]
    assert json.loads((run_dir / "model.json").read_text())["num_timesteps"] == 520
    assert ACER.load(run_dir / "model.zip").num_timesteps == 520
    assert f"model: {run_dir / 'model.zip'}" in out
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # put back


def test_a_second_train_into_the_same_run_folder_stops_while_the_first_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two runs of the same env and seed (a shell loop that forgot --seed) started together both pass the
    # checks; the second to reach the run folder finds it locked by the first and stops, changing nothing.
    fcntl = pytest.importorskip("fcntl")  # POSIX: elsewhere runs are not locked

    assert train(capsys, tmp_path)[0] == 0
    run_dir = tmp_path / "CartPole-v1_0"
    before = snapshot(run_dir)
    assert not (run_dir / ".sb3-acer-train.lock").exists()  # released and removed after the run
    with open(run_dir / ".sb3-acer-train.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)  # the first run, still training
        code, _, err = train(capsys, tmp_path, "--overwrite")
    assert_one_line_error(code, err, 1, f"another sb3-acer train is writing to {run_dir}")
    (run_dir / ".sb3-acer-train.lock").unlink()
    assert snapshot(run_dir) == before

    # A run that passed its checks while the first was still training, and gets the folder once the first
    # has finished, finds the first run's files there: without --overwrite it stops.
    previous_files = sb3_acer.cli.training.previous_files
    calls: list[int] = []

    def first_run_finishes_in_between(*args: Any) -> list[pathlib.Path]:
        calls.append(1)
        return [] if len(calls) == 1 else previous_files(*args)

    monkeypatch.setattr(sb3_acer.cli.train, "previous_files", first_run_finishes_in_between)
    monkeypatch.setattr(sb3_acer.cli.training, "previous_files", first_run_finishes_in_between)
    code, _, err = train(capsys, tmp_path)
    assert_one_line_error(code, err, 2, f"{run_dir} already holds a run; pass --overwrite")
    assert snapshot(run_dir) == before


# ---------------------------------------------------------------------------------------------- zoo format

ALLOWED = "(only constants, lists, tuples, dicts, dict(key=value, ...) and class names such as nn.ReLU)"
ATARI_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"


def use_presets(monkeypatch: pytest.MonkeyPatch, entries: dict[str, Any]) -> None:
    import sb3_acer.presets

    monkeypatch.setattr(sb3_acer.presets, "_read", lambda: entries)


def settings_of(*argv: str) -> Any:
    from sb3_acer.cli import build_parser
    from sb3_acer.cli.settings import train_settings

    return train_settings(build_parser().parse_args(["train", *argv]))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"normalize": "{'norm_rewards': True}"},
            "normalize: unknown VecNormalize argument 'norm_rewards'; accepted: norm_obs,",
        ),
        ({"normalize": "VecNormalize"}, "normalize must be True, False or a dict of VecNormalize arguments"),
        ({"env_wrapper": "TimeLimit"}, "env_wrapper: unknown wrapper 'TimeLimit'; accepted: sb3_contrib"),
        (
            {"env_wrapper": {"TimeFeatureWrapper": {"max_step": 10}}},
            "env_wrapper: TimeFeatureWrapper: got an unexpected keyword argument 'max_step'",
        ),
        (
            {"policy_kwargs": {"activation_fn": "Relu"}},
            "policy_kwargs: activation_fn 'Relu' is not an activation class of torch.nn",
        ),
        (
            {"policy_kwargs": "dict(optimizer_class=Adamm)"},
            "policy_kwargs: optimizer_class 'Adamm' is not a torch.optim class",
        ),
        ({"clip_range": "lin_0.2"}, "unknown hyperparameter 'clip_range' for ACER; accepted: alpha,"),
        ({"frame_stack": 4}, "frame_stack: only Atari games are stacked"),
        ("n_envs", "the entry must map settings to values, got 'n_envs'"),
    ],
)
def test_bad_preset_entry_is_a_one_line_error_naming_the_file_and_the_entry(
    capsys: pytest.CaptureFixture[str],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    entry: Any,
    message: str,
) -> None:
    use_presets(monkeypatch, {"CartPole-v1": entry})
    code, out, err = train(capsys, tmp_path)
    assert_one_line_error(code, err, 2, f"preset 'CartPole-v1' in sb3_acer/presets/acer.yml: {message}")
    assert out == "" and list(tmp_path.iterdir()) == []


def damage_the_preset_file(monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    import sb3_acer.presets

    files = types.SimpleNamespace(
        joinpath=lambda name: types.SimpleNamespace(read_text=lambda: "CartPole-v1:\n  n_envs: [4\n")
    )
    monkeypatch.setattr(sb3_acer.presets, "resources", types.SimpleNamespace(files=lambda package: files))


DAMAGED = (
    "the preset file sb3_acer/presets/acer.yml is damaged: expected ',' or ']', but got '<stream end>' "
    "(line 3, column 1)"
)


def test_a_damaged_preset_file_breaks_only_train(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    damage_the_preset_file(monkeypatch)
    code, out, _ = run(capsys, "train", "-h")
    assert code == 0
    assert f"Presets: none ({DAMAGED})." in " ".join(out.split())
    code, _, err = run(capsys, "enjoy", str(tmp_path / "nothing.zip"))
    assert_one_line_error(code, err, 2, "no model file")
    code, out, err = train(capsys, tmp_path)
    assert_one_line_error(code, err, 2, DAMAGED)
    assert err == f"error: {DAMAGED}\n"
    assert out == "" and list(tmp_path.iterdir()) == []


def test_a_damaged_preset_file_does_not_break_the_import(tmp_path: pathlib.Path) -> None:
    """The help text of train lists the presets; it is built when the parser is, not on import."""
    script = (
        "import types, sys\n"
        "import sb3_acer.presets as presets\n"
        "text = types.SimpleNamespace(read_text=lambda: 'CartPole-v1: [')\n"
        "files = types.SimpleNamespace(joinpath=lambda name: text)\n"
        "presets.resources = types.SimpleNamespace(files=lambda package: files)\n"
        "from sb3_acer.cli import main\n"
        "sys.exit(main(['enjoy', 'model.zip']))\n"
    )
    root = str(pathlib.Path(__file__).resolve().parents[1])  # this checkout's sb3_acer, not an installed one
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": root},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stderr == "error: no model file 'model.zip'\n"
    assert result.returncode == 2


def test_zoo_policy_kwargs_string_on_the_command_line(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

    hyperparams = (
        "policy_kwargs=dict(net_arch=[16], activation_fn=th.nn.Tanh, optimizer_class=RMSpropTFLike, "
        "optimizer_kwargs=dict(eps=1e-5))"
    )
    code, _, err = train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", hyperparams)
    assert code == 0, err
    model = ACER.load(tmp_path / "CartPole-v1_0" / "model.zip")
    assert model.policy_kwargs == {
        "net_arch": [16],
        "activation_fn": nn.Tanh,
        "optimizer_class": RMSpropTFLike,
        "optimizer_kwargs": {"eps": 1e-5},
    }
    assert type(model.optimizer) is RMSpropTFLike


def test_zoo_strings_in_a_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

    entry = {
        "n_envs": 2,
        "policy_kwargs": "dict(net_arch=[64, 64], activation_fn=nn.ReLU, optimizer_class=RMSpropTFLike, "
        "optimizer_kwargs=dict(eps=1e-5))",
        "normalize": "dict(norm_obs=False, norm_reward=True)",
        "learning_rate": "lin_7e-4",
    }
    use_presets(monkeypatch, {"CartPole-v1": entry})
    settings = settings_of("CartPole-v1")
    assert settings.n_envs == 2 and settings.normalize
    assert settings.normalize_kwargs == {"norm_obs": False, "norm_reward": True}
    assert settings.hyperparameters == {
        "policy_kwargs": {
            "net_arch": [64, 64],
            "activation_fn": nn.ReLU,
            "optimizer_class": RMSpropTFLike,
            "optimizer_kwargs": {"eps": 1e-5},
        },
        "learning_rate": 7e-4,
        "lr_schedule": "linear",
    }
    # A command-line lr_schedule overrides the preset's lin_; its learning rate stays.
    settings = settings_of("CartPole-v1", "--hyperparams", "lr_schedule=constant")
    assert (settings.hyperparameters["learning_rate"], settings.hyperparameters["lr_schedule"]) == (
        7e-4,
        "constant",
    )


def test_parse_hyperparams_reads_the_zoo_dict_form_without_running_code(tmp_path: pathlib.Path) -> None:
    from sb3_acer.cli.errors import UsageError

    assert parse_hyperparams(["policy_kwargs=dict(net_arch=[64, 64], activation_fn=nn.ReLU)"]) == {
        "policy_kwargs": {"net_arch": [64, 64], "activation_fn": "nn.ReLU"}
    }
    assert parse_hyperparams(["normalize=dict(norm_obs=False)"]) == {"normalize": {"norm_obs": False}}
    target = tmp_path / "x"
    with pytest.raises(UsageError) as error:
        parse_hyperparams([f"policy_kwargs=__import__('os').system('touch {target}')"])
    assert str(error.value) == (
        f"--hyperparams policy_kwargs: the call \"__import__('os').system('touch {target}')\" is not "
        f"allowed {ALLOWED}"
    )
    assert not target.exists()


@pytest.mark.parametrize(
    ("items", "message"),
    [
        (
            ["policy_kwargs=dict(net_arch=[64]).copy()"],
            f"--hyperparams policy_kwargs: the call 'dict(net_arch=[64]).copy()' is not allowed {ALLOWED}",
        ),
        (
            ["learning_rate=lin_7e-4", "lr_schedule=constant"],
            "--hyperparams learning_rate 'lin_7e-4' is the linear schedule, but lr_schedule is 'constant'",
        ),
        (["learning_rate=lin_x"], "--hyperparams learning_rate: 'lin_x' is not lin_<number>, e.g. lin_7e-4"),
        (["clip_range=lin_0.2"], "unknown hyperparameter 'clip_range' for ACER; accepted: alpha,"),
        (
            ["env_wrapper=[AtariWrapper]"],
            "--hyperparams env_wrapper: AtariWrapper applies only to Atari games",
        ),
    ],
)
def test_bad_zoo_hyperparams_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, items: list[str], message: str
) -> None:
    code, out, err = train(capsys, tmp_path, "--hyperparams", *items)
    assert_one_line_error(code, err, 2, message)
    assert out == "" and list(tmp_path.iterdir()) == []


def test_lin_learning_rate_on_the_command_line() -> None:
    settings = settings_of("CartPole-v1", "--hyperparams", "learning_rate=lin_7e-4")
    assert settings.hyperparameters["learning_rate"] == 7e-4
    assert settings.hyperparameters["lr_schedule"] == "linear"  # over the preset's own schedule


def train_pong(capsys: pytest.CaptureFixture[str], logs: pathlib.Path) -> tuple[int, str, str]:
    """A 40-step ``train`` of Pong on 2 envs (the Atari settings, the preset file as patched)."""
    return run(
        capsys,
        "train",
        "PongNoFrameskip-v4",
        "--n-envs",
        "2",
        "--timesteps",
        "40",
        "--no-progress-bar",
        "--log-folder",
        str(logs),
    )


ZOO_ATARI = {
    "env_wrapper": [ATARI_WRAPPER],
    "frame_stack": 4,
    "policy": "CnnPolicy",
    "n_envs": 8,
    "ent_coef": 0.02,
    "learning_rate": "lin_1e-3",
    "policy_kwargs": "dict(optimizer_class=RMSpropTFLike, optimizer_kwargs=dict(eps=1e-5))",
}


def test_the_atari_entry_applies_to_atari_games_without_their_own(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("ale_py")
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

    use_presets(monkeypatch, {"atari": ZOO_ATARI, "CartPole-v1": {"n_envs": 2}})
    _, out, _ = run(capsys, "train", "-h")
    assert "Presets: CartPole-v1, atari (defaults for Atari games)." in out
    settings = settings_of("PongNoFrameskip-v4")
    assert (settings.n_envs, settings.timesteps, settings.policy) == (8, 10_000_000, "CnnPolicy")
    assert settings.env_wrapper == () and not settings.normalize
    assert settings.source == (
        "Using the preset 'atari' (defaults for Atari games, sb3_acer/presets/acer.yml) for "
        "PongNoFrameskip-v4, over SB2 run_atari's settings (AtariWrapper, 4-frame stack, CnnPolicy, "
        "lr_schedule constant)."
    )
    code, out, err = train_pong(capsys, tmp_path)
    assert code == 0, err
    assert out.startswith(settings.source)
    model = ACER.load(tmp_path / "PongNoFrameskip-v4_0" / "model.zip")
    assert model.observation_space.shape == (4, 84, 84)  # AtariWrapper, 4 frames, channel first
    assert (model.ent_coef, model.learning_rate, model.lr_schedule) == (0.02, 1e-3, "linear")
    assert type(model.optimizer) is RMSpropTFLike


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"env_wrapper": [{ATARI_WRAPPER: {"clip_reward": False}}]},
            "env_wrapper: AtariWrapper takes no arguments here (the CLI applies it with its defaults), "
            "got {'clip_reward': False}",
        ),
        ({"frame_stack": 8}, "frame_stack: only 4 is supported (the stack the CLI builds), got 8"),
    ],
)
def test_atari_entry_settings_the_cli_cannot_follow_are_one_line_errors(
    capsys: pytest.CaptureFixture[str],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    change: dict[str, Any],
    message: str,
) -> None:
    pytest.importorskip("ale_py")
    use_presets(monkeypatch, {"atari": {**ZOO_ATARI, **change}})
    code, out, err = train_pong(capsys, tmp_path)
    expected = f"preset 'atari' (for PongNoFrameskip-v4) in sb3_acer/presets/acer.yml: {message}"
    assert_one_line_error(code, err, 2, expected)
    assert err == f"error: {expected}\n"
    assert out == "" and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"gamma": "0.99"}, "gamma must be a finite number, got '0.99'"),
        ({"n_steps": 10.5}, "n_steps must be an integer, got 10.5"),
        ({"policy": 123}, "unknown policy '123'"),
        ({"policy_kwargs": "[1, 2]"}, "policy_kwargs must be a dict"),
    ],
)
def test_a_preset_value_acer_refuses_is_reported_as_the_presets(
    capsys: pytest.CaptureFixture[str],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    entry: dict[str, Any],
    message: str,
) -> None:
    use_presets(monkeypatch, {"CartPole-v1": {"n_envs": 2, **entry}})
    code, out, err = train(capsys, tmp_path)
    assert_one_line_error(code, err, 2, f"preset 'CartPole-v1' in sb3_acer/presets/acer.yml: {message}")
    assert out == "" and list(tmp_path.iterdir()) == []


def test_lin_learning_rate_with_an_explicit_exponent_sign_on_the_command_line() -> None:
    settings = settings_of("CartPole-v1", "--hyperparams", "learning_rate=lin_1e+3")
    assert settings.hyperparameters["learning_rate"] == 1000.0
    assert settings.hyperparameters["lr_schedule"] == "linear"


def test_the_run_lock_is_held_by_one_run_at_a_time_even_as_the_lock_file_is_replaced(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Run B opened the lock file just before run A, ending, removed it; B then locks that removed file,
    # while run C has created and locked a new one. B must see that its file is no longer the lock, take
    # the path's file instead, find it held by C, and stop.
    fcntl = pytest.importorskip("fcntl")
    run_dir = tmp_path / "run"
    lock_path = run_dir / LOCK_NAME
    run_dir.mkdir()
    busy = f"another sb3-acer train is writing to {run_dir}"
    with run_lock(run_dir, busy=busy):  # run A
        orphan = open(lock_path)  # noqa: SIM115 - B's early open
    assert not lock_path.exists()
    with open(lock_path, "w") as run_c:
        fcntl.flock(run_c, fcntl.LOCK_EX | fcntl.LOCK_NB)
        opened = []

        def open_as_b(path: Any, *args: Any, **kwargs: Any) -> Any:
            opened.append(path)
            return orphan if len(opened) == 1 else open(path, *args, **kwargs)

        monkeypatch.setattr(sb3_acer.cli.run_folder, "open", open_as_b, raising=False)
        stopped = pytest.raises(CLIError, match=busy)
        with stopped, run_lock(run_dir, busy=busy):
            pytest.fail("run B got the lock while run C holds it")
    assert orphan.closed

"""``--actors N [--envs-per-actor K] [--ray-address ADDR]`` of ``sb3-acer train`` and ``run_atari``, on a
local Ray cluster shared by the folder (``conftest.py``)."""

from __future__ import annotations

import pathlib
import sys
from typing import Any

import pytest
from stable_baselines3.common.monitor import load_results

from sb3_acer import ACER
from tests.helpers.cli_helpers import assert_one_line_error, run, train


def test_train_with_actors(
    ray_cluster: Any, capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    code, out, err = train(capsys, tmp_path, "--actors", "2", "--envs-per-actor", "2", "--timesteps", "1000")
    assert code == 0, err
    assert "2 envs on each of 2 Ray actors" in out
    run_dir = tmp_path / "CartPole-v1_0"
    model = ACER.load(run_dir / "model.zip")
    assert model.n_envs == 2 and model.num_timesteps >= 1000
    # The learner writes the actors' episodes as a Monitor log (for sb3-acer plot); the learner's own env
    # writes none.
    assert sorted(path.name for path in run_dir.glob("*.monitor.csv")) == ["actors.monitor.csv"]
    episodes = load_results(str(run_dir))
    assert len(episodes) > 0 and episodes["r"].min() >= 1
    assert ray_cluster.is_initialized()  # a cluster the command did not start is left running


def test_run_atari_with_actors(ray_cluster: Any, tmp_path: pathlib.Path) -> None:
    pytest.importorskip("ale_py")
    from sb3_acer.cli.run_atari import main

    saved = main(
        [
            "--env", "PongNoFrameskip-v4", "--actors", "2", "--envs-per-actor", "2", "--num-timesteps", "200",
            "--buffer-size", "40", "--replay-start", "20", "--save-path", str(tmp_path / "pong"),
            "--logdir", str(tmp_path / "logs"), "--no-progress-bar", "--verbose", "0",
        ]
    )  # fmt: skip
    model = ACER.load(saved)
    assert model.num_timesteps >= 200 and model.n_envs == 2
    assert (tmp_path / "logs" / "monitor" / "actors.monitor.csv").is_file()


def test_actor_options_need_actors(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    code, _, err = train(capsys, tmp_path, "--envs-per-actor", "2")
    assert_one_line_error(code, err, 2, "--envs-per-actor needs --actors")
    code, _, err = train(capsys, tmp_path, "--ray-address", "auto")
    assert_one_line_error(code, err, 2, "--ray-address needs --actors")
    code, _, err = train(capsys, tmp_path, "--actors", "2", "--hyperparams", "normalize=True")
    assert_one_line_error(code, err, 2, "--actors: VecNormalize")
    assert not (tmp_path / "CartPole-v1_0").exists()


def test_a_ray_address_where_nothing_answers_is_one_line(
    closed_port: int,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: pathlib.Path,
) -> None:
    ray = pytest.importorskip("ray")
    calls: list[Any] = []
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: calls.append(args))
    address = f"127.0.0.1:{closed_port}"
    code, _, err = train(capsys, tmp_path, "--actors", "1", "--ray-address", address)
    assert_one_line_error(
        code,
        err,
        2,
        f"--ray-address: no Ray cluster answers at {address} (connection refused); start one there with "
        "`ray start --head`, or leave out the address to start a local one",
    )
    code, _, err = train(capsys, tmp_path, "--actors", "1", "--ray-address", "headnode")
    assert_one_line_error(
        code, err, 2, "--ray-address: Ray address 'headnode' is not HOST:PORT or ray://HOST:PORT"
    )
    monkeypatch.setenv("RAY_ADDRESS", address)  # what ray.init joins without --ray-address
    code, _, err = train(capsys, tmp_path, "--actors", "1")
    assert_one_line_error(code, err, 1, f"--actors: no Ray cluster answers at RAY_ADDRESS={address}")
    assert "unset RAY_ADDRESS to start a local one" in err
    assert calls == [] and not (tmp_path / "CartPole-v1_0").exists()  # nothing started, nothing made


def test_actors_without_ray(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    code, _, err = train(capsys, tmp_path, "--actors", "2")
    assert code != 0
    assert err == 'error: --actors needs ray: pip install "sb3-acer[ray]"\n'
    code, _, err = run(
        capsys,
        "train",
        "CartPole-v1",
        "--timesteps",
        "100",
        "--no-progress-bar",
        "--log-folder",
        str(tmp_path),
    )
    assert code == 0, err  # everything else works

"""benchmarks/mujoco_v5.py: a tiny run writes its record (final evaluation, learning curve, steps/s), keeps
each finished run in --run-dir and takes it from there instead of running it again."""

from __future__ import annotations

import inspect
import json
import pathlib
from typing import Any

import pytest

pytest.importorskip("mujoco")

import benchmarks.mujoco_v5 as bench
from sb3_acer import ACER
from sb3_acer.presets import available_presets, load_preset, resolve_policy_kwargs


def test_a_tiny_run_writes_the_record_and_resumes(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run_dir, out = tmp_path / "runs", tmp_path / "out.json"
    argv = ["--envs", "InvertedPendulum-v5", "--algos", "ACER", "--seeds", "0", "--timesteps", "400"]
    argv += [
        "--eval-episodes",
        "2",
        "--set",
        "replay_start=100",
        "--run-dir",
        str(run_dir),
        "--out",
        str(out),
    ]
    bench.main(argv)
    record = json.loads(out.read_text())
    (result,) = record["results"]
    assert (result["algo"], result["env_id"], result["seed"]) == ("ACER", "InvertedPendulum-v5", 0)
    assert result["n_timesteps"] >= 400 and result["steps_per_second"] > 0
    assert result["final_eval_mean"] > 0
    assert result["curve_steps"] and len(result["curve_steps"]) == len(result["curve_seconds"])
    assert result["settings"]["replay_start"] == 100
    assert record["meta"]["zoo_off_policy"]["figures"]["Hopper-v5"]["SAC"][0] > 0
    kept = run_dir / "InvertedPendulum-v5_ACER_0.json"
    assert kept.exists() and "InvertedPendulum-v5_ACER_0.json" in record["meta"]["kept_runs"]

    def not_again(*job: Any) -> Any:
        raise AssertionError(f"ran {job} again")

    monkeypatch.setattr(bench, "run_one", not_again)
    bench.main([*argv, "--collect"])
    assert json.loads(out.read_text())["results"] == record["results"]
    with pytest.raises(SystemExit, match="kept for other settings"):
        bench.main([*argv[:-4], "--set", "replay_start=200", "--run-dir", str(run_dir)])


def test_every_env_has_settings_and_the_zoo_figures() -> None:
    for env_id in bench.MUJOCO_ENVS:
        assert env_id in bench.PPO_ZOO and env_id in bench.ACER_PRESETS and env_id in bench.ZOO_OFF_POLICY
    assert "-v3" in bench.ZOO_OFF_POLICY_VERSION


def test_jobs_run_in_parallel_processes_and_keep_each_run(tmp_path: pathlib.Path) -> None:
    """``--jobs 2``: two seeds run in two spawned processes; the record keeps the jobs' order, says so in
    its machine line, and each run is kept in --run-dir as a serial run would be."""
    run_dir, out = tmp_path / "runs", tmp_path / "out.json"
    argv = ["--envs", "InvertedPendulum-v5", "--algos", "ACER", "--seeds", "3", "4", "--timesteps", "200"]
    argv += ["--eval-episodes", "1", "--set", "replay_start=100", "--jobs", "2"]
    bench.main([*argv, "--run-dir", str(run_dir), "--out", str(out)])
    record = json.loads(out.read_text())
    assert [result["seed"] for result in record["results"]] == [3, 4]
    assert "2 parallel job(s)" in record["meta"]["machine"]
    assert sorted(path.name for path in run_dir.iterdir()) == [
        "InvertedPendulum-v5_ACER_3.json",
        "InvertedPendulum-v5_ACER_4.json",
    ]


@pytest.mark.parametrize("env_id", [e for e in bench.MUJOCO_ENVS if e in available_presets()])
def test_the_preset_is_what_the_benchmark_measured(env_id: str) -> None:
    # A user who trains with the preset gets the settings of the reported runs, constructor defaults included.
    preset, measured = load_preset(env_id), dict(bench.ACER_PRESETS[env_id])
    assert (preset.n_envs, preset.policy) == (measured.pop("n_envs"), measured.pop("policy"))
    assert measured.pop("normalize") == "obs" and preset.normalize_kwargs == {
        "norm_obs": True,
        "norm_reward": False,
    }
    settings = dict(preset.hyperparameters)
    assert settings.pop("policy_kwargs", {}) == resolve_policy_kwargs(measured.pop("policy_kwargs", "dict()"))
    defaults = inspect.signature(ACER).parameters
    unmeasured = [key for key in settings if key not in measured]  # the benchmark left them at the defaults
    assert {key: settings.pop(key) for key in unmeasured} == {
        key: defaults[key].default for key in unmeasured
    }
    assert settings == measured


@pytest.mark.parametrize(("sigma", "lowest", "highest"), [(0.01, 0.0, 0.0), (10.0, 0.6, 0.9)])
def test_the_action_bounds_record_counts_the_actions_the_env_clips(
    tmp_path: pathlib.Path, sigma: float, lowest: float, highest: float
) -> None:
    # InvertedPendulum's bounds are [-3, 3]: a near-zero mean with sigma 10 leaves about 76% of the draws
    # outside them, with sigma 0.01 none.
    from benchmarks import action_bounds

    out = tmp_path / "bounds.json"
    kwargs = f"dict(fixed_std={sigma})"
    argv = ["--env", "InvertedPendulum-v5", "--timesteps", "400", "--every", "200", "--out", str(out)]
    action_bounds.main([*argv, "--set", f"policy_kwargs={kwargs}"])
    record = json.loads(out.read_text())
    assert [r["step"] for r in record["results"]] == [200, 400]
    assert record["meta"]["settings"]["policy_kwargs"] == kwargs
    for row in record["results"]:
        assert lowest <= row["share_out_of_bounds"] <= highest
        assert row["mean_abs_mean"] <= row["max_abs_mean"] < 0.5


def test_ppo_time_feature_is_the_zoos_published_walker_agents_settings(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from sb3_contrib.common.wrappers import TimeFeatureWrapper
    from stable_baselines3 import PPO

    model, env = bench.make_model("PPO-TimeFeature", "Ant-v5", 0, {})
    _, plain_env = bench.make_model("PPO", "Ant-v5", 0, {})
    assert env.observation_space.shape[0] == plain_env.observation_space.shape[0] + 1  # the remaining time
    assert env.env_is_wrapped(TimeFeatureWrapper) == [True]
    assert plain_env.env_is_wrapped(TimeFeatureWrapper) == [False]
    defaults = inspect.signature(PPO).parameters
    assert (model.n_steps, model.batch_size, model.n_epochs) == tuple(
        defaults[name].default for name in ("n_steps", "batch_size", "n_epochs")
    )
    assert bench.describe("PPO-TimeFeature", "Ant-v5", {})["env_wrapper"] == "TimeFeatureWrapper"
    env.close()
    plain_env.close()
    _, acer_env = bench.make_model("ACER", "Walker2d-v5", 0, {"time_feature": True})  # a tuning candidate
    assert acer_env.env_is_wrapped(TimeFeatureWrapper) == [True] * 8
    assert bench.wrapper("ACER", "Walker2d-v5", {}) is None
    acer_env.close()
    # run on the tasks of TIME_FEATURE_ENVS only
    argv = ["--envs", "Hopper-v5", "Ant-v5", "--algos", "PPO-TimeFeature", "--run-dir", str(tmp_path)]
    bench.main([*argv, "--collect"])
    assert "not run yet (3): Ant-v5_PPO-TimeFeature_10.json, Ant-v5_PPO-TimeFeature_11.json," in (
        capsys.readouterr().err
    )


def test_evaluations_during_training_record_the_training_clock_without_their_own_time(
    tmp_path: pathlib.Path,
) -> None:
    argv = ["--envs", "InvertedPendulum-v5", "--algos", "ACER", "--seeds", "0", "--timesteps", "400"]
    argv += ["--eval-episodes", "1", "--set", "replay_start=100", "--run-dir", str(tmp_path)]
    out = tmp_path / "out.json"
    bench.main([*argv, "--eval-every", "160", "--out", str(out)])
    (result,) = json.loads(out.read_text())["results"]
    assert result["eval_curve_steps"] == [160, 320]  # 4 envs x 20 steps a segment: 160 and 320 first pass
    assert len(result["eval_curve_returns"]) == 2 and all(r > 0 for r in result["eval_curve_returns"])
    seconds = result["eval_curve_seconds"]
    assert 0 < seconds[0] < seconds[1] <= result["train_seconds"]
    kept = json.loads((tmp_path / "InvertedPendulum-v5_ACER_0.json").read_text())
    assert kept["job"]["eval_every"] == 160
    with pytest.raises(SystemExit, match="kept for other settings"):
        bench.main(argv)  # the kept run had evaluations during training; one without them is another run

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

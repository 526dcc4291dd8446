"""Every preset builds a working model, and every preset has its measured result in docs/results.md."""

from __future__ import annotations

import json
import pathlib
import re
import shlex
import sys
import types
from collections.abc import Callable
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv, VecNormalize
from torch import nn, optim

from sb3_acer import ACER
from sb3_acer.envs.minatar import is_minatar_id, make_minatar_env
from sb3_acer.presets import (
    PresetError,
    WrapperSpec,
    available_presets,
    env_wrappers,
    evaluation_normalization,
    load_preset,
    normalize_kwargs,
    resolve_policy_kwargs,
    wrapper_class,
)
from sb3_acer.presets import loader as presets
from sb3_acer.presets.expressions import read_expression

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "results.md"


@pytest.mark.parametrize("env_id", available_presets())
def test_preset_builds_and_trains_one_segment(env_id: str) -> None:
    preset = load_preset(env_id)
    assert preset.n_timesteps > 0 and preset.n_envs > 0
    maker: Any = env_id
    if is_minatar_id(env_id):  # the command line makes MinAtar games with their channel-first float view
        maker = partial(make_minatar_env, env_id)
    env: VecEnv = make_vec_env(maker, n_envs=2, seed=0, wrapper_class=wrapper_class(preset.env_wrapper))
    if preset.normalize:
        gamma = float(preset.hyperparameters.get("gamma", 0.99))
        env = VecNormalize(env, gamma=gamma, **preset.normalize_kwargs)
    else:
        assert preset.normalize_kwargs == {}
    model = ACER(preset.policy, env, seed=0, **preset.hyperparameters)
    model.learn(2 * model.n_steps)
    assert model.num_timesteps == 2 * model.n_steps


@pytest.mark.parametrize("env_id", available_presets())
def test_preset_result_is_in_the_benchmarks_table(env_id: str) -> None:
    text = DOCS.read_text()
    rows = [line for line in text.splitlines() if line.startswith(f"| {env_id} |")]
    assert rows, f"the results tables of docs/results.md have no row for {env_id}"
    assert all("not yet" not in row for row in rows), f"{env_id}'s preset is not measured: {rows}"


def test_presets_benchmark_script_runs_and_records(
    tmp_path: pathlib.Path, capsys: pytest.CaptureFixture
) -> None:
    from benchmarks import presets as bench

    out = tmp_path / "result.json"
    # A repeated --set adds to the earlier ones (argparse's default would keep only the last).
    options = [
        "--seeds",
        "0",
        "1",
        "--eval-episodes",
        "2",
        "--set",
        "n_timesteps=160",
        "--set",
        "ent_coef=0.0",
    ]
    options += ["--out", str(out)]
    bench.main(["--envs", "CartPole-v1", *options])
    data = json.loads(out.read_text())
    assert data["meta"]["command"].startswith("python -m benchmarks.presets --envs CartPole-v1")
    runs = data["results"]
    assert [r["seed"] for r in runs] == [0, 1]
    assert all(
        r["overrides"] == {"n_timesteps": 160, "ent_coef": 0.0} and r["n_timesteps"] == 160 for r in runs
    )
    assert all(8.0 <= r["eval_stochastic_mean"] <= 500.0 for r in runs)  # CartPole returns: 8 to 500
    for r in runs:
        for mode in ("stochastic", "deterministic"):
            # CartPole pays 1 per step, so the mean length is the mean return; its time limit is 500 steps.
            assert r[f"eval_{mode}_mean_length"] == pytest.approx(r[f"eval_{mode}_mean"])
            assert r[f"eval_{mode}_timeout_frac"] in (0.0, 0.5, 1.0)
            assert (r[f"eval_{mode}_timeout_frac"] == 1.0) == (r[f"eval_{mode}_mean"] == 500.0)
    assert "| CartPole-v1 | 2 | 160 |" in capsys.readouterr().out


def test_class_names_in_policy_kwargs_resolve_to_torch_classes() -> None:
    kwargs = {"activation_fn": "nn.ReLU", "net_arch": [8]}
    assert resolve_policy_kwargs(kwargs) == {"activation_fn": nn.ReLU, "net_arch": [8]}
    assert resolve_policy_kwargs({"activation_fn": "torch.nn.ELU"})["activation_fn"] is nn.ELU
    assert kwargs["activation_fn"] == "nn.ReLU"  # the preset's own dict is left alone
    assert resolve_policy_kwargs({"activation_fn": nn.Tanh}) == {"activation_fn": nn.Tanh}
    with pytest.raises(ValueError, match=r"activation_fn 'Linear2' is not an activation class of torch\.nn"):
        resolve_policy_kwargs({"activation_fn": "Linear2"})
    with pytest.raises(
        ValueError, match=r"activation_fn 'functional' is not an activation class of torch\.nn"
    ):
        resolve_policy_kwargs({"activation_fn": "functional"})
    assert resolve_policy_kwargs({"optimizer_class": "optim.Adam"}) == {"optimizer_class": optim.Adam}
    assert resolve_policy_kwargs({"optimizer_class": "torch.optim.SGD"}) == {"optimizer_class": optim.SGD}
    with pytest.raises(ValueError, match=r"optimizer_class 'ReLU' is not a torch\.optim class"):
        resolve_policy_kwargs({"optimizer_class": "ReLU"})
    with pytest.raises(ValueError, match=r"optimizer_class 'Optimizer2' is not a torch\.optim class"):
        resolve_policy_kwargs({"optimizer_class": "Optimizer2"})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, {}),
        (False, None),
        (None, None),
        ({"norm_obs": False}, {"norm_obs": False}),
        # The zoo writes the dict as a string in its YAML files.
        ("{'norm_obs': False, 'norm_reward': True}", {"norm_obs": False, "norm_reward": True}),
        (
            {"clip_obs": 5, "clip_reward": 2.5, "epsilon": 1e-6},
            {"clip_obs": 5, "clip_reward": 2.5, "epsilon": 1e-6},
        ),
    ],
)
def test_normalize_setting_gives_vecnormalize_arguments(value: object, expected: dict | None) -> None:
    assert normalize_kwargs(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (1, "normalize must be True, False or a dict of VecNormalize arguments (norm_obs, norm_reward, "),
        ("yes", "normalize must be True, False or a dict of VecNormalize arguments"),
        ("{'norm_obs'", "normalize must be True, False or a dict of VecNormalize arguments"),
        (
            {"gamma": 0.9},
            "normalize: unknown VecNormalize argument 'gamma'; accepted: norm_obs, norm_reward,",
        ),
        ({"norm_reward": 0}, "normalize: norm_reward must be True or False, got 0"),
        ({"clip_obs": 0}, "normalize: clip_obs must be a positive number, got 0"),
        ({"epsilon": True}, "normalize: epsilon must be a positive number, got True"),
        ({"clip_reward": "10"}, "normalize: clip_reward must be a positive number, got '10'"),
    ],
)
def test_bad_normalize_setting_is_refused(value: object, message: str) -> None:
    with pytest.raises(ValueError) as error:
        normalize_kwargs(value)
    assert str(error.value).startswith(message)


@pytest.mark.parametrize("norm_obs", [True, False])
def test_evaluation_normalizes_observations_as_training_and_leaves_rewards(norm_obs: bool) -> None:
    training = VecNormalize(
        make_vec_env("CartPole-v1", n_envs=2, seed=0),
        norm_obs=norm_obs,
        clip_obs=3.0,
        clip_reward=4.0,
        gamma=0.9,
        epsilon=1e-6,
    )
    training.reset()
    for _ in range(20):
        training.step(np.array([0, 1]))
    evaluation = evaluation_normalization(make_vec_env("CartPole-v1", n_envs=1, seed=1), like=training)
    assert not evaluation.training and not evaluation.norm_reward
    assert evaluation.norm_obs is norm_obs
    assert (evaluation.clip_obs, evaluation.clip_reward, evaluation.gamma, evaluation.epsilon) == (
        3.0,
        4.0,
        0.9,
        1e-6,
    )
    obs = evaluation.reset()
    if norm_obs:
        # A copy of the training statistics, not the same object: evaluating never moves training's.
        assert evaluation.obs_rms is not training.obs_rms
        np.testing.assert_array_equal(evaluation.obs_rms.mean, training.obs_rms.mean)
        np.testing.assert_array_equal(evaluation.obs_rms.var, training.obs_rms.var)
        expected = np.clip(
            (evaluation.get_original_obs() - training.obs_rms.mean) / np.sqrt(training.obs_rms.var + 1e-6),
            -3,
            3,
        )
        np.testing.assert_allclose(obs, expected, rtol=1e-5, atol=1e-6)
    else:
        assert not hasattr(evaluation, "obs_rms")
        np.testing.assert_array_equal(obs, evaluation.get_original_obs())
    _, reward, _, _ = evaluation.step(np.array([0]))
    assert reward.tolist() == [1.0]  # CartPole's reward, unscaled


def test_presets_benchmark_overrides_parse_values() -> None:
    from benchmarks.presets import parse_overrides

    assert parse_overrides(["learning_rate=2e-3", "normalize=True", "lr_schedule=constant"]) == {
        "learning_rate": 2e-3,
        "normalize": True,
        "lr_schedule": "constant",
    }
    with pytest.raises(SystemExit, match="key=value"):
        parse_overrides(["learning_rate"])


def test_the_benchmarks_share_one_table_and_one_settings_check() -> None:
    from benchmarks.common import check_overrides, markdown_table, mean_std

    assert markdown_table(["a", "b"], [[1, 2.5]], "lr") == "| a | b |\n| --- | ---: |\n| 1 | 2.5 |\n"
    assert mean_std([1.0, 3.0]) == "2.0 ± 1.0" and mean_std([2.0], digits=2) == "2.00 ± 0.00"
    check_overrides({"learning_rate": 1.0}, ["learning_rate"])
    with pytest.raises(SystemExit, match=r"--set: unknown ACER settings \['lerning_rate'\]"):
        check_overrides({"lerning_rate": 1.0}, ["learning_rate"])


def test_recorded_command_is_shell_quoted(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A recorded command pastes back into a shell as the same arguments (e.g. a dict passed to --set)."""
    from benchmarks.common import write_results
    from benchmarks.provenance import COMMIT_VARIABLE, git_commit

    if git_commit() is None:  # an unpacked sdist: the commit it came from is stated
        monkeypatch.setenv(COMMIT_VARIABLE, "0123abc")
    args = ["--envs", "LunarLander-v3", "--set", "policy_kwargs={'net_arch': [64, 64]}", "n_steps=40"]
    out = tmp_path / "r.json"
    write_results(out, script="presets.py", args=args, machine="m", results=[])
    meta = json.loads(out.read_text())["meta"]
    assert shlex.split(meta["command"]) == ["python", "-m", "benchmarks.presets", *args]
    assert re.fullmatch(r"[0-9a-f]{7,}(\+changes)?", meta["commit"])
    assert meta["commit"] in (git_commit(), "0123abc")


def test_a_copied_tree_records_the_stated_commit_or_stops(tmp_path: pathlib.Path) -> None:
    """A copy of the benchmarks (an unpacked sdist, a tree sent to a GPU machine), even inside some other git
    repository, records the commit that SB3_ACER_COMMIT names, and without it stops with a message naming the
    variable: it recorded no commit (or the other repository's) before."""
    import os
    import shutil
    import subprocess

    outer = tmp_path / "outer"
    (outer / "copy" / "benchmarks").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(outer)], check=True)
    identity = ["-c", "user.name=t", "-c", "user.email=t@t", "-C", str(outer)]
    subprocess.run(["git", *identity, "commit", "-q", "--allow-empty", "-m", "outer"], check=True)
    shutil.copy(
        pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "provenance.py",
        outer / "copy" / "benchmarks",
    )
    (outer / "copy" / "benchmarks" / "__init__.py").write_text("")
    script = "from benchmarks.provenance import git_commit, source_commit; print(git_commit()); "
    script += "print(source_commit())"
    env = {k: v for k, v in os.environ.items() if k != "SB3_ACER_COMMIT"}

    def run(**extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", script],
            cwd=outer / "copy",
            env={**env, **extra},
            capture_output=True,
            text=True,
        )

    stated = run(SB3_ACER_COMMIT="7c36d14a1cb6fa4a17dca820363e99c5f6bbde44")
    assert (stated.returncode, stated.stdout) == (0, "None\n7c36d14a1cb6fa4a17dca820363e99c5f6bbde44\n")
    unknown = run()
    assert unknown.returncode == 1 and unknown.stdout == "None\n"
    assert "is not this project's git checkout" in unknown.stderr
    assert "set SB3_ACER_COMMIT to the commit it was copied from" in unknown.stderr
    wrong = run(SB3_ACER_COMMIT="HEAD")
    assert wrong.returncode == 1 and "SB3_ACER_COMMIT='HEAD' is no commit" in wrong.stderr


def test_recurrent_benchmark_set_options_add_up_and_take_text() -> None:
    from benchmarks.common import parse_overrides
    from benchmarks.recurrent_cartpole import build_parser

    args = build_parser().parse_args(
        ["--set", "n_envs=2", "--set", "replay_start=40", "lr_schedule=constant"]
    )
    assert parse_overrides(args.set) == {"n_envs": 2, "replay_start": 40, "lr_schedule": "constant"}


def test_sb2_reference_command_leaves_out_only_the_output_path() -> None:
    """benchmarks/sb2_reference.py runs under SB2's Python 3.7; its recorded command drops ``--out PATH`` in
    both spellings and nothing else."""
    from benchmarks.sb2_reference import _without_out

    args = ["--seeds", "0", "1", "--out", "r.json", "--jobs", "2", "--out=s.json", "--timesteps", "100"]
    assert _without_out(args) == ["--seeds", "0", "1", "--jobs", "2", "--timesteps", "100"]
    assert _without_out(["--outdir", "x"]) == ["--outdir", "x"]


def test_discounted_returns_match_the_direct_sum() -> None:
    from benchmarks.critic_fit import discounted_returns

    rewards = [1.0, -2.0, 0.5, 100.0]
    gamma = 0.9
    expected = [sum(gamma**k * r for k, r in enumerate(rewards[t:])) for t in range(len(rewards))]
    assert discounted_returns(rewards, gamma) == pytest.approx(expected)
    assert discounted_returns([], gamma) == []


def test_critic_fit_benchmark_runs_and_records(tmp_path: pathlib.Path) -> None:
    from benchmarks import critic_fit

    out = tmp_path / "fit.json"
    critic_fit.main(["--steps", "640", "--every", "320", "--probe-steps", "50", "--out", str(out)])
    data = json.loads(out.read_text())
    assert data["meta"]["command"].startswith("python -m benchmarks.critic_fit --steps 640")
    runs = data["results"]
    # 32 envs step 32 transitions at a time: the probes fall on the first multiples of 32 past 320 and 640.
    assert [(r["config"], r["steps"]) for r in runs] == [
        ("preset", 320),
        ("preset", 640),
        ("rewards normalised", 320),
        ("rewards normalised", 640),
        ("critic step x3", 320),
        ("critic step x3", 640),
    ]
    for r in runs:
        assert r["probe_steps"] >= 50
        assert r["value_std"] >= 0.0 and r["return_std"] > 0.0
        assert -1.0 <= r["correlation"] <= 1.0
        assert r["explained_variance"] <= 1.0
    assert [r["reward_scale"] for r in runs[:2] + runs[4:]] == [1.0] * 4
    # VecNormalize's scale: the running std of the discounted return, well above 1 for LunarLander.
    assert all(r["reward_scale"] > 2.0 for r in runs[2:4])
    # The Q head starts at zero (gain 0.01), and the probes come before the first update (a segment is
    # 32 x 20 steps).
    assert all(abs(r["value_mean"]) < 1.0 for r in runs)


def test_critic_fit_benchmark_runs_the_chosen_configurations(tmp_path: pathlib.Path) -> None:
    from benchmarks import critic_fit

    out = tmp_path / "fit.json"
    argv = ["--steps", "1300", "--every", "1300", "--probe-steps", "20"]
    critic_fit.main([*argv, "--configs", "critic step x3", "preset", "--out", str(out)])
    runs = {r["config"]: r for r in json.loads(out.read_text())["results"]}
    assert list(runs) == ["critic step x3", "preset"]
    # Two updates (a segment is 32 x 20 steps) from the same seed: the critic with three times the step
    # has moved about three times as far from zero.
    assert [r["steps"] for r in runs.values()] == [1312, 1312]
    ratio = runs["critic step x3"]["value_mean"] / runs["preset"]["value_mean"]
    assert 2.0 < ratio < 4.0


TIME_FEATURE = "sb3_contrib.common.wrappers.TimeFeatureWrapper"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, ()),
        (False, ()),
        ([], ()),
        ("TimeFeatureWrapper", (WrapperSpec(TIME_FEATURE, {}),)),
        (TIME_FEATURE, (WrapperSpec(TIME_FEATURE, {}),)),
        ({TIME_FEATURE: {"max_steps": 50}}, (WrapperSpec(TIME_FEATURE, {"max_steps": 50}),)),
        ({"TimeFeatureWrapper": None}, (WrapperSpec(TIME_FEATURE, {}),)),
        # As --hyperparams passes it, and as a zoo file lists several.
        ("[{'TimeFeatureWrapper': {'test_mode': True}}]", (WrapperSpec(TIME_FEATURE, {"test_mode": True}),)),
        (
            ["TimeFeatureWrapper", {"TimeFeatureWrapper": {"max_steps": 9}}],
            (WrapperSpec(TIME_FEATURE, {}), WrapperSpec(TIME_FEATURE, {"max_steps": 9})),
        ),
    ],
)
def test_env_wrapper_setting_is_read_as_the_zoo_writes_it(value: object, expected: tuple) -> None:
    assert env_wrappers(value) == expected


def test_env_wrapper_takes_any_wrapper_class_by_its_path_unless_packages_are_limited(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = WrapperSpec("gymnasium.wrappers.TimeLimit", {"max_episode_steps": 5})
    assert env_wrappers({"gymnasium.wrappers.TimeLimit": {"max_episode_steps": 5}}) == (spec,)
    assert env_wrappers([{spec.name: spec.kwargs}], packages={"gymnasium"}) == (spec,)
    # Limited to other packages, a class of a module imported already is found without an import ...
    assert env_wrappers([{spec.name: spec.kwargs}], packages={"minigrid"}) == (spec,)
    # ... and a module that is not imported is refused, not imported.
    marker = tmp_path / "MARKER"
    (tmp_path / "unimported.py").write_text(
        f"import pathlib, gymnasium\npathlib.Path({str(marker)!r}).touch()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        ValueError,
        match=r"^env_wrapper: unimported\.Wrapper is in unimported, which is not imported and not in a "
        r"package named on the command line .*: pass --gym-packages unimported if you trust it$",
    ):
        env_wrappers("unimported.Wrapper", packages={"minigrid"})
    assert not marker.exists() and "unimported" not in sys.modules
    env = wrapper_class((spec,))(gym.make("CartPole-v1"))  # type: ignore[misc]
    env.reset(seed=0)
    assert [env.step(0)[3] for _ in range(5)] == [False] * 4 + [True]  # truncated at the fifth step


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("TimeLimit", "env_wrapper: unknown wrapper 'TimeLimit'; accepted: "),
        (
            "gymnasium.wrappers.NoSuchWrapper",
            "env_wrapper gymnasium.wrappers.NoSuchWrapper: gymnasium.wrappers has no NoSuchWrapper",
        ),
        ("no_such_package.Wrapper", "env_wrapper no_such_package.Wrapper: cannot import no_such_package"),
        ("os.system", "env_wrapper: os.system is not a gymnasium.Wrapper class"),
        ({"TimeFeatureWrapper": {"steps": 5}}, "env_wrapper: TimeFeatureWrapper: got an unexpected keyword"),
        ({"TimeFeatureWrapper": 5}, "env_wrapper must be a wrapper name, a {name: kwargs} mapping"),
        (
            {"TimeFeatureWrapper": {}, "Other": {}},
            "env_wrapper must be a wrapper name, a {name: kwargs} mapping",
        ),
        (3, "env_wrapper must be a wrapper name"),
    ],
)
def test_bad_env_wrapper_settings_name_the_problem(value: object, message: str) -> None:
    with pytest.raises(ValueError) as error:
        env_wrappers(value)
    assert str(error.value).startswith(message), str(error.value)


def test_time_feature_wrapper_appends_the_remaining_time_outside_monitor() -> None:
    wrap = wrapper_class(env_wrappers("TimeFeatureWrapper"))
    assert wrap is not None and wrapper_class(()) is None
    env = make_vec_env("CartPole-v1", n_envs=1, seed=0, wrapper_class=wrap)
    assert env.observation_space.shape == (5,)
    obs = env.reset()
    assert obs[0, -1] == 1.0
    for step in range(1, 4):
        obs, _, dones, infos = env.step(np.array([step % 2]))
        assert not dones[0]
        # CartPole-v1's time limit, 500 steps, read from the env's spec.
        assert obs[0, -1] == pytest.approx(1.0 - step / 500)
    # The episode statistics come from the Monitor inside the wrapper: the raw returns and lengths.
    while not dones[0]:
        obs, _, dones, infos = env.step(np.array([0]))
    assert infos[0]["episode"]["r"] == infos[0]["episode"]["l"] > 3
    assert obs[0, -1] == 1.0  # the next episode's first observation


# ---------------------------------------------------------------------------------------------- zoo format

ZOO_POLICY_KWARGS = (
    "dict(net_arch=[64, 64], activation_fn=nn.ReLU, optimizer_class=RMSpropTFLike, "
    "optimizer_kwargs=dict(eps=1e-5))"
)
ALLOWED = "(only constants, lists, tuples, dicts, dict(key=value, ...) and class names such as nn.ReLU)"
ATARI_DEFAULTS = {"n_envs": 16, "n_timesteps": 10_000_000, "policy": "CnnPolicy", "lr_schedule": "constant"}
ATARI_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"


def use_presets(monkeypatch: pytest.MonkeyPatch, entries: object) -> None:
    """Make the preset file hold ``entries`` (as ``yaml.safe_load`` would give them)."""
    monkeypatch.setattr(presets, "_read", lambda: entries)


def use_preset_text(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    """Make the preset file's text ``text``, read through the package's resources as acer.yml is."""
    files = types.SimpleNamespace(joinpath=lambda name: types.SimpleNamespace(read_text=lambda: text))
    monkeypatch.setattr(presets, "resources", types.SimpleNamespace(files=lambda package: files))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            ZOO_POLICY_KWARGS,
            {
                "net_arch": [64, 64],
                "activation_fn": "nn.ReLU",
                "optimizer_class": "RMSpropTFLike",
                "optimizer_kwargs": {"eps": 1e-5},
            },
        ),
        (
            "dict(net_arch=dict(pi=[8], qf=[16]), activation_fn=th.nn.Tanh)",
            {
                "net_arch": {"pi": [8], "qf": [16]},
                "activation_fn": "th.nn.Tanh",
            },
        ),
        ("{'norm_obs': False, 'clip_obs': 5.0}", {"norm_obs": False, "clip_obs": 5.0}),
        ("[(1, -2), -0.5, None, True, 'a']", [(1, -2), -0.5, None, True, "a"]),
        ("dict()", {}),
        ("RMSpropTFLike", "RMSpropTFLike"),
    ],
)
def test_expression_reader_reads_the_zoo_strings(text: str, expected: object) -> None:
    assert read_expression(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("__import__('os').system('ls')", "the call \"__import__('os').system('ls')\""),
        ("eval('1')", "the call \"eval('1')\""),
        ("list([1])", "the call 'list([1])'"),
        ("nn.ReLU()", "the call 'nn.ReLU()'"),
        ("dict([('a', 1)])", "the call \"dict([('a', 1)])\""),
        ("dict(**kwargs)", "the call 'dict(**kwargs)'"),
        ("dict(a=1).keys", "attribute access 'dict(a=1).keys'"),
        ("lambda: 0", "the lambda 'lambda: 0'"),
        ("x[0]", "the subscript 'x[0]'"),
        ("1 + 2", "the operator in '1 + 2'"),
        ("-'a'", "the operator in \"-'a'\""),
        ("not True", "the operator in 'not True'"),
        ("{x: 1}", "the dict key 'x'"),
        ("{**x}", "the dict unpacking '{**x}'"),
        ("{1, 2}", "the set '{1, 2}'"),
        ("[x for x in y]", "the expression '[x for x in y]'"),
    ],
)
def test_expression_reader_refuses_anything_else(text: str, message: str) -> None:
    with pytest.raises(ValueError) as error:
        read_expression(text)
    assert str(error.value) == f"{message} is not allowed {ALLOWED}"


def test_expression_reader_never_runs_the_code(tmp_path: pathlib.Path) -> None:
    target = tmp_path / "x"
    for text in (f"__import__('os').system('touch {target}')", f"dict(a=open('{target}', 'w'))"):
        with pytest.raises(ValueError, match="is not allowed"):
            read_expression(text)
    assert not target.exists()


def test_expression_reader_reports_what_is_not_an_expression() -> None:
    with pytest.raises(SyntaxError):
        read_expression("dict(a=")
    with pytest.raises(SyntaxError):
        read_expression("a = 1")


def test_policy_kwargs_resolve_the_zoo_names() -> None:
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

    assert resolve_policy_kwargs(ZOO_POLICY_KWARGS) == {
        "net_arch": [64, 64],
        "activation_fn": nn.ReLU,
        "optimizer_class": RMSpropTFLike,
        "optimizer_kwargs": {"eps": 1e-5},
    }
    path = "stable_baselines3.common.sb2_compat.rmsprop_tf_like.RMSpropTFLike"
    assert resolve_policy_kwargs({"optimizer_class": path})["optimizer_class"] is RMSpropTFLike
    assert resolve_policy_kwargs({"activation_fn": "th.nn.Tanh"})["activation_fn"] is nn.Tanh
    assert resolve_policy_kwargs({"optimizer_class": "th.optim.Adam"})["optimizer_class"] is optim.Adam
    with pytest.raises(ValueError) as error:
        resolve_policy_kwargs("dict(activation_fn=getattr(nn, 'ReLU'))")
    assert str(error.value) == f"policy_kwargs: the call \"getattr(nn, 'ReLU')\" is not allowed {ALLOWED}"
    with pytest.raises(ValueError) as error:
        resolve_policy_kwargs("dict(net_arch=[64,")
    assert str(error.value) == "policy_kwargs: 'dict(net_arch=[64,' is not a Python expression"


def test_preset_reads_the_zoo_strings(monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

    entry = {"policy_kwargs": ZOO_POLICY_KWARGS, "normalize": "dict(norm_obs=False, clip_reward=5.0)"}
    use_presets(monkeypatch, {"CartPole-v1": entry})
    preset = load_preset("CartPole-v1")
    assert preset.hyperparameters["policy_kwargs"]["optimizer_class"] is RMSpropTFLike
    assert preset.normalize and preset.normalize_kwargs == {"norm_obs": False, "clip_reward": 5.0}


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ({"learning_rate": "lin_7e-4"}, {"learning_rate": 7e-4, "lr_schedule": "linear"}),
        (
            {"learning_rate": "lin_0.001", "lr_schedule": "linear"},
            {"learning_rate": 1e-3, "lr_schedule": "linear"},
        ),
        ({"learning_rate": 5e-4}, {"learning_rate": 5e-4}),
    ],
)
def test_lin_learning_rate_is_acer_linear_schedule(entry: dict, expected: dict) -> None:
    assert presets.zoo_schedules(entry) == expected


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            {"learning_rate": "lin_7e-4", "lr_schedule": "constant"},
            "learning_rate 'lin_7e-4' is the linear schedule, but lr_schedule is 'constant'",
        ),
        ({"learning_rate": "lin_fast"}, "learning_rate: 'lin_fast' is not lin_<number>, e.g. lin_7e-4"),
        ({"learning_rate": "lin_nan"}, "learning_rate: 'lin_nan' is not lin_<number>, e.g. lin_7e-4"),
    ],
)
def test_bad_lin_learning_rate_is_refused(entry: dict, message: str) -> None:
    with pytest.raises(ValueError) as error:
        presets.zoo_schedules(entry)
    assert str(error.value) == message


def test_lin_learning_rate_in_a_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    use_presets(monkeypatch, {"CartPole-v1": {"learning_rate": "lin_2e-3", "ent_coef": 0.0}})
    assert load_preset("CartPole-v1").hyperparameters == {
        "learning_rate": 2e-3,
        "lr_schedule": "linear",
        "ent_coef": 0.0,
    }


ZOO_ATARI = {
    "env_wrapper": [ATARI_WRAPPER],
    "frame_stack": 4,
    "policy": "CnnPolicy",
    "n_envs": 8,
    "ent_coef": 0.02,
    "policy_kwargs": "dict(optimizer_class=RMSpropTFLike, optimizer_kwargs=dict(eps=1e-5))",
}


def test_atari_entry_applies_to_atari_games_without_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

    own = {"n_envs": 4, "learning_rate": "lin_1e-3"}
    use_presets(monkeypatch, {"atari": ZOO_ATARI, "BreakoutNoFrameskip-v4": own, "CartPole-v1": {}})
    assert available_presets() == ["BreakoutNoFrameskip-v4", "CartPole-v1"]
    assert presets.has_atari_defaults()
    pong = load_preset("PongNoFrameskip-v4", atari_defaults=ATARI_DEFAULTS)
    assert (pong.entry, pong.n_envs, pong.n_timesteps, pong.policy) == ("atari", 8, 10_000_000, "CnnPolicy")
    assert pong.env_wrapper == () and not pong.normalize
    assert pong.hyperparameters == {
        "lr_schedule": "constant",
        "ent_coef": 0.02,
        "policy_kwargs": {"optimizer_class": RMSpropTFLike, "optimizer_kwargs": {"eps": 1e-5}},
    }
    # A game's own entry replaces the atari entry, over the same run_atari defaults.
    breakout = load_preset("BreakoutNoFrameskip-v4", atari_defaults=ATARI_DEFAULTS)
    assert (breakout.entry, breakout.n_envs, breakout.policy) == ("BreakoutNoFrameskip-v4", 4, "CnnPolicy")
    assert breakout.hyperparameters == {"learning_rate": 1e-3, "lr_schedule": "linear"}
    with pytest.raises(KeyError):
        load_preset("PongNoFrameskip-v4")  # not an Atari game, as far as the caller says
    assert load_preset("CartPole-v1").entry == "CartPole-v1"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"env_wrapper": [{ATARI_WRAPPER: {"terminal_on_life_loss": False}}]},
            "env_wrapper: AtariWrapper takes no arguments here (the CLI applies it with its defaults), "
            "got {'terminal_on_life_loss': False}",
        ),
        (
            {"env_wrapper": ["TimeFeatureWrapper", "AtariWrapper"]},
            "env_wrapper: AtariWrapper must come first (the CLI applies it innermost)",
        ),
        ({"frame_stack": 2}, "frame_stack: only 4 is supported (the stack the CLI builds), got 2"),
    ],
)
def test_atari_entry_settings_the_cli_does_not_support_are_refused(
    monkeypatch: pytest.MonkeyPatch, change: dict, message: str
) -> None:
    use_presets(monkeypatch, {"atari": {**ZOO_ATARI, **change}})
    with pytest.raises(presets.PresetError) as error:
        load_preset("PongNoFrameskip-v4", atari_defaults=ATARI_DEFAULTS)
    assert str(error.value) == (
        f"preset 'atari' (for PongNoFrameskip-v4) in sb3_acer/presets/acer.yml: {message}"
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"frame_stack": 4}, "frame_stack: only Atari games are stacked"),
        ({"env_wrapper": "AtariWrapper"}, "env_wrapper: AtariWrapper applies only to Atari games"),
        (
            {"normalize": "{'norm_rewards': True}"},
            "normalize: unknown VecNormalize argument 'norm_rewards'; accepted: norm_obs, norm_reward, "
            "clip_obs, clip_reward, epsilon",
        ),
        (
            {"env_wrapper": "TimeLimit"},
            "env_wrapper: unknown wrapper 'TimeLimit'; accepted: "
            "sb3_contrib.common.wrappers.TimeFeatureWrapper, or the full import path of a gymnasium.Wrapper "
            "class",
        ),
        (
            {"policy_kwargs": {"activation_fn": "Relu"}},
            "policy_kwargs: activation_fn 'Relu' is not an activation class of torch.nn (e.g. nn.ReLU)",
        ),
        (
            {"policy_kwargs": "dict(activation_fn=__import__('os'))"},
            f"policy_kwargs: the call \"__import__('os')\" is not allowed {ALLOWED}",
        ),
        ({"learning_rate": "lin_x"}, "learning_rate: 'lin_x' is not lin_<number>, e.g. lin_7e-4"),
        ({"n_envs": "four"}, "n_envs must be a positive integer, got 'four'"),
        ("n_envs: 4", "the entry must map settings to values, got 'n_envs: 4'"),
    ],
)
def test_bad_preset_entries_name_the_file_and_the_entry(
    monkeypatch: pytest.MonkeyPatch, entry: object, message: str
) -> None:
    use_presets(monkeypatch, {"CartPole-v1": entry})
    with pytest.raises(presets.PresetError) as error:
        load_preset("CartPole-v1")
    assert str(error.value) == f"preset 'CartPole-v1' in sb3_acer/presets/acer.yml: {message}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "CartPole-v1:\n  n_envs: [4\n",
            "the preset file sb3_acer/presets/acer.yml is damaged: expected ',' or ']', but got "
            "'<stream end>' (line 3, column 1)",
        ),
        (
            "- CartPole-v1\n",
            "the preset file sb3_acer/presets/acer.yml is damaged: it must map environment ids to settings",
        ),
    ],
)
def test_damaged_preset_file_is_named_with_its_problem(
    monkeypatch: pytest.MonkeyPatch, text: str, message: str
) -> None:
    use_preset_text(monkeypatch, text)
    for read in (available_presets, lambda: load_preset("CartPole-v1")):
        with pytest.raises(presets.PresetError) as error:
            read()
        assert str(error.value) == message


# ---------------------------------------------------------------------- found by review (stop 39)


def test_names_resolve_only_where_a_class_is_meant() -> None:
    """A bare name is a class only under activation_fn, optimizer_class and features_extractor_class; the
    zoo's eval would fail on ``false``, so it is refused rather than kept as the (true) string 'false'."""
    from stable_baselines3.common.torch_layers import FlattenExtractor

    with pytest.raises(ValueError) as error:
        resolve_policy_kwargs("dict(net_arch=[64, 64], ortho_init=false)")
    assert str(error.value) == (
        "policy_kwargs: ortho_init: the name 'false' is not a value; only activation_fn, optimizer_class "
        "and features_extractor_class take class names (write text in quotes, True/False/None as such)"
    )
    with pytest.raises(ValueError, match="net_arch: the name 'big' is not a value"):
        resolve_policy_kwargs("dict(net_arch=dict(pi=[big]))")
    assert resolve_policy_kwargs("dict(ortho_init=False)") == {"ortho_init": False}
    assert resolve_policy_kwargs({"lr": "text"}) == {"lr": "text"}  # a quoted string stays one
    extractor = resolve_policy_kwargs("dict(features_extractor_class=FlattenExtractor)")
    assert extractor["features_extractor_class"] is FlattenExtractor
    # A module's full path names the same class; a Module that is not an activation is refused.
    full = resolve_policy_kwargs("dict(activation_fn=torch.nn.modules.activation.ReLU)")
    assert full["activation_fn"] is nn.ReLU
    partial = resolve_policy_kwargs("dict(activation_fn=nn.modules.activation.ReLU)")
    assert partial["activation_fn"] is nn.ReLU
    assert resolve_policy_kwargs("dict(activation_fn=nn.Identity)")["activation_fn"] is nn.Identity
    with pytest.raises(ValueError) as error:
        resolve_policy_kwargs("dict(activation_fn=nn.Module)")
    assert str(error.value) == (
        "policy_kwargs: activation_fn 'nn.Module' is not an activation class of torch.nn (e.g. nn.ReLU)"
    )
    with pytest.raises(ValueError, match=r"activation_fn 'nn\.Linear' is not an activation class"):
        resolve_policy_kwargs({"activation_fn": "nn.Linear"})
    with pytest.raises(ValueError, match=r"activation_fn 'os\.path\.ReLU' is not an activation class"):
        resolve_policy_kwargs({"activation_fn": "os.path.ReLU"})


def _unreadable(error: BaseException) -> Callable[[], str]:
    def read_text() -> str:
        raise error

    return read_text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1:\n  n_envs: 4\n", "entry names must be environment ids (strings), got 1"),
        ("a: " + "[" * 20000, "it is nested too deeply to read"),
        (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), "it is not UTF-8 text"),
        (FileNotFoundError(2, "No such file or directory"), "it cannot be read: No such file or directory"),
    ],
)
def test_every_damaged_preset_file_is_a_preset_error(
    monkeypatch: pytest.MonkeyPatch, text: str | BaseException, message: str
) -> None:
    if isinstance(text, str):
        use_preset_text(monkeypatch, text)
    else:
        files = types.SimpleNamespace(
            joinpath=lambda name: types.SimpleNamespace(read_text=_unreadable(text))
        )
        monkeypatch.setattr(presets, "resources", types.SimpleNamespace(files=lambda package: files))
    with pytest.raises(presets.PresetError) as error:
        available_presets()
    assert str(error.value) == f"the preset file sb3_acer/presets/acer.yml is damaged: {message}"


def test_env_kwargs_may_hold_infinite_bounds() -> None:
    # Found by review (stop 41): Python's json keeps inf (Hopper's healthy_z_range is (0.7, inf)).
    from sb3_acer.presets import check_env_kwargs

    assert check_env_kwargs({"z_range": [0.7, float("inf")]}) == {"z_range": [0.7, float("inf")]}
    with pytest.raises(ValueError, match=r"env_kwargs z: \{1, 2\} cannot be kept in model.json"):
        check_env_kwargs({"z": {1, 2}})


@pytest.mark.parametrize("key", ["n_envs", "n_timesteps"])
def test_preset_counts_must_be_positive(key: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A preset's ``n_envs`` / ``n_timesteps`` of 0 is refused; 1 and ``1e6`` are accepted."""
    use_presets(monkeypatch, {"CartPole-v1": {key: 0}})
    with pytest.raises(PresetError, match=rf"'CartPole-v1' in .*: {key} must be a positive integer, got 0$"):
        load_preset("CartPole-v1")
    use_presets(monkeypatch, {"CartPole-v1": {key: 1}})
    assert getattr(load_preset("CartPole-v1"), key) == 1
    use_presets(monkeypatch, {"CartPole-v1": {key: "1e6"}})
    assert getattr(load_preset("CartPole-v1"), key) == 1_000_000

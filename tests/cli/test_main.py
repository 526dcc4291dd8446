"""The ``sb3-acer`` command itself, driven in-process through ``main(argv)``: the help texts, the one-line
errors and exit codes, the entry points and their Ctrl-C guard, ``key=value`` parsing, and how ``train``
combines a preset (the zoo's format) with the command line."""

from __future__ import annotations

import importlib.metadata
import os
import pathlib
import subprocess
import sys
import types
from typing import Any

import gymnasium as gym
import pytest
from torch import nn

import sb3_acer
import sb3_acer.cli.run_folder
import sb3_acer.cli.train.run
import sb3_acer.cli.train.start
from sb3_acer import ACER
from sb3_acer.cli.arguments import parse_hyperparams
from sb3_acer.presets import available_presets
from tests.helpers.acer_envs import run_interrupted_while_torch_loads
from tests.helpers.cli_helpers import (
    FAST,
    assert_one_line_error,
    run,
    settings_of,
    train,
    use_presets,
)


@pytest.mark.parametrize("command", [[], ["train"], ["enjoy"], ["plot"]])
def test_help_of_each_command_has_examples(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    code, out, _ = run(capsys, *command, "-h")
    assert code == 0
    assert "examples:" in out
    assert f"sb3-acer {command[0] if command else 'train'} " in out.split("examples:")[1]


def test_train_help_lists_the_presets(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run(capsys, "train", "-h")
    presets = sorted(available_presets())
    assert {"CartPole-v1", "MinAtar/Breakout-v1", "Pendulum-v1"} <= set(presets)
    assert f"Presets: {', '.join(presets)}." in " ".join(out.split())
    assert "ACER's defaults are used with 4 envs, 100000 steps and lr_schedule constant" in " ".join(
        out.split()
    )


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
    # Box actions are supported (issue 46); Tuple and Dict actions are not.
    if "TupleActions-v0" not in gym.registry:
        gym.register("TupleActions-v0", entry_point="tests.helpers.acer_envs:TupleActionEnv")
    code, out, err = run(capsys, "train", "TupleActions-v0", *FAST, "--log-folder", str(tmp_path))
    assert out == ""  # checked before the run is announced
    assert_one_line_error(
        code, err, 2, "ACER cannot use TupleActions-v0: ACER supports Discrete, Box, MultiDiscrete and"
    )
    assert not tmp_path.joinpath("TupleActions-v0_0").exists()


def test_argparse_errors_are_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "train", "CartPole-v1", "--n-envs", "0")
    assert_one_line_error(code, err, 2, "argument --n-envs: expected a positive integer, got '0'")
    code, _, err = run(capsys, "train", "CartPole-v1", "--eval-freq", "-5")
    assert_one_line_error(code, err, 2, "argument --eval-freq: expected a non-negative integer, got '-5'")
    code, _, err = run(capsys)
    assert_one_line_error(code, err, 2, "the following arguments are required: COMMAND")


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
        "from sb3_acer.acer.acer import ACER; print(before, 'torch' in sys.modules, acer is ACER)"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout == "False True True\n", result.stderr
    with pytest.raises(AttributeError, match="module 'sb3_acer' has no attribute 'Nope'"):
        sb3_acer.Nope  # noqa: B018


def test_console_script_is_the_entry_point() -> None:
    (script,) = importlib.metadata.entry_points(group="console_scripts", name="sb3-acer")
    assert script.value == "sb3_acer.entry:main"


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


ALLOWED = "(only constants, lists, tuples, dicts, dict(key=value, ...) and class names such as nn.ReLU)"


ATARI_WRAPPER = "stable_baselines3.common.atari_wrappers.AtariWrapper"


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

    import sb3_acer.presets.loader

    files = types.SimpleNamespace(
        joinpath=lambda name: types.SimpleNamespace(read_text=lambda: "CartPole-v1:\n  n_envs: [4\n")
    )
    monkeypatch.setattr(
        sb3_acer.presets.loader, "resources", types.SimpleNamespace(files=lambda package: files)
    )


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
        "import sb3_acer.presets.loader as presets\n"
        "text = types.SimpleNamespace(read_text=lambda: 'CartPole-v1: [')\n"
        "files = types.SimpleNamespace(joinpath=lambda name: text)\n"
        "presets.resources = types.SimpleNamespace(files=lambda package: files)\n"
        "from sb3_acer.cli import main\n"
        "sys.exit(main(['enjoy', 'model.zip']))\n"
    )
    root = str(pathlib.Path(__file__).resolve().parents[2])  # this checkout's sb3_acer, not an installed one
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
    assert (model.ent_coef, model.learning_rate, model.lr_schedule_name) == (0.02, 1e-3, "linear")
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

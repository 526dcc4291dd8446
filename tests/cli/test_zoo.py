"""rl-baselines3-zoo with ACER (issue 45): ``python -m sb3_acer.zoo`` runs the zoo's train, enjoy,
record_video and ``-optimize`` in-process on CartPole with tiny budgets, and ``ACER.load`` takes the
``custom_objects`` the zoo passes."""

from __future__ import annotations

import contextlib
import csv
import pathlib
import pickle
import re
import shutil
import subprocess
import sys
from collections import OrderedDict
from collections.abc import Iterator
from importlib import resources
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("rl_zoo3")
optuna = pytest.importorskip("optuna")

import yaml  # noqa: E402

from sb3_acer import ACER  # noqa: E402
from sb3_acer.presets import load_preset  # noqa: E402
from sb3_acer.presets.expressions import ClassName  # noqa: E402
from sb3_acer.presets.zoo_format import zoo_hyperparameters, zoo_learning_rate  # noqa: E402
from sb3_acer.zoo import (  # noqa: E402
    MAX_YAML_BYTES,
    NET_ARCHS,
    LogFolderError,
    check_log_folder,
    convert_acer_params,
    main,
    read_log_yaml,
    sample_acer_params,
)
from tests.helpers.hostile import MarkerPayload  # noqa: E402

#: What rl-zoo3's enjoy and record_video always pass to ``load`` (rl_zoo3/enjoy.py).
ZOO_CUSTOM_OBJECTS = {"learning_rate": 0.0, "lr_schedule": lambda _: 0.0, "clip_range": lambda _: 0.0}


@pytest.fixture(scope="module")
def zoo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """A folder where the zoo trained ACER on CartPole for 400 steps (``logs/acer/CartPole-v1_1``)."""
    folder = tmp_path_factory.mktemp("zoo")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        main(["train", "--env", "CartPole-v1", "-f", "logs", "-n", "400", "--eval-freq", "-1", "--seed", "0"])
        yield folder


def test_train_uses_the_package_presets(zoo_run: pathlib.Path) -> None:
    run = zoo_run / "logs" / "acer" / "CartPole-v1_1"
    model = ACER.load(run / "CartPole-v1.zip")
    assert model.num_timesteps >= 400
    preset = load_preset("CartPole-v1")
    for name in ("n_steps", "replay_ratio", "buffer_size", "replay_start", "delta", "ent_coef"):
        assert getattr(model, name) == preset.hyperparameters[name], name
    assert model.n_envs == preset.n_envs
    config = yaml.load((run / "CartPole-v1" / "config.yml").read_text(), Loader=yaml.UnsafeLoader)
    # ACER's linear decay of acer.yml, as the zoo writes it (a plain rate would be a constant schedule)
    assert dict(config)["learning_rate"] == "lin_0.004"
    args = yaml.load((run / "CartPole-v1" / "args.yml").read_text(), Loader=yaml.UnsafeLoader)
    assert dict(args)["conf_file"] == "sb3_acer.presets.zoo_format"


def test_enjoy_plays_the_trained_model(
    zoo_run: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(zoo_run)
    main(["enjoy", "--env", "CartPole-v1", "-f", "logs", "--no-render", "-n", "100", "--seed", "0"])
    assert "Episode Reward" in capsys.readouterr().out


def test_record_video_writes_a_video(zoo_run: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("moviepy")
    pytest.importorskip("pygame")
    monkeypatch.chdir(zoo_run)
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")
    main(["record_video", "--env", "CartPole-v1", "-f", "logs", "-n", "20", "-o", "videos"])
    assert list((zoo_run / "videos").glob("*.mp4"))


def test_optimize_runs_two_trials_with_the_acer_sampler(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    main(
        [
            "train",
            "--env",
            "CartPole-v1",
            "-f",
            "logs",
            "-optimize",
            "--n-trials",
            "2",
            "-n",
            "300",
            "--n-evaluations",
            "1",
            "--eval-episodes",
            "1",
            "--sampler",
            "random",
            "--pruner",
            "none",
            "--seed",
            "0",
            "--storage",
            "study.log",
            "--study-name",
            "acer",
        ]
    )
    (report,) = (tmp_path / "logs" / "acer").glob("report_CartPole-v1_2-trials-*.csv")
    with report.open() as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 2
    assert all(row["state"] == "COMPLETE" for row in rows)
    sampled = {"learning_rate", "lr_schedule", "n_steps", "replay_ratio", "buffer_size", "delta"}
    sampled |= {"ent_coef", "q_coef", "correction_term", "net_arch"}
    assert {f"params_{name}" for name in sampled} <= set(rows[0])

    # --trial-id trains with a stored trial's values, its learning rate schedule included.
    replay = [
        "train",
        "--env",
        "CartPole-v1",
        "-f",
        "replay",
        "-n",
        "200",
        "--eval-freq",
        "-1",
        "--seed",
        "0",
    ]
    main([*replay, "--storage", "study.log", "--study-name", "acer", "--trial-id", "1"])
    trial = rows[1]
    model = ACER.load(tmp_path / "replay" / "acer" / "CartPole-v1_1" / "CartPole-v1.zip")
    assert model.n_steps == int(trial["params_n_steps"]) and model.delta == float(trial["params_delta"])
    assert model.policy.net_arch == NET_ARCHS[trial["params_net_arch"]]
    config = yaml.load(
        (tmp_path / "replay" / "acer" / "CartPole-v1_1" / "CartPole-v1" / "config.yml").read_text(),
        Loader=yaml.UnsafeLoader,
    )
    rate = float(trial["params_learning_rate"])
    linear = trial["params_lr_schedule"] == "linear"
    assert dict(config)["learning_rate"] == (f"lin_{rate!r}" if linear else rate)


@pytest.mark.parametrize("choice", [0, -1])
def test_every_sampled_setting_builds_a_model(choice: int) -> None:
    # The extremes of every range the sampler offers are valid ACER settings (replay always starts).
    trial = optuna.trial.FixedTrial(
        {
            "learning_rate": [1e-5, 1e-2][choice],
            "lr_schedule": ["constant", "linear"][choice],
            "n_steps": [5, 64][choice],
            "replay_ratio": [0, 8][choice],
            "buffer_size": [1000, 50000][choice],
            "delta": [0.1, 10.0][choice],
            "ent_coef": [1e-8, 0.1][choice],
            "q_coef": [0.1, 1.0][choice],
            "correction_term": [1.0, 20.0][choice],
            "net_arch": ["tiny", "medium"][choice],
        }
    )
    params = sample_acer_params(trial, n_actions=2, n_envs=4, additional_args={})
    model = ACER("MlpPolicy", "CartPole-v1", **params)
    assert model.policy.net_arch == NET_ARCHS[["tiny", "medium"][choice]]
    assert model.lr_schedule_name == ["constant", "linear"][choice]


def test_converter_writes_a_trial_as_the_zoo_file_format_reads_it() -> None:
    # train --trial-id lays these over the hyperparameter file, whose learning rates the zoo makes schedules
    assert convert_acer_params({"net_arch": "small", "learning_rate": 1e-3, "lr_schedule": "linear"}) == {
        "learning_rate": "lin_0.001",
        "policy_kwargs": {"net_arch": [64, 64]},
    }
    assert convert_acer_params({"learning_rate": 1e-3, "lr_schedule": "constant"}) == {"learning_rate": 1e-3}


def test_zoo_presets_keep_acer_schedules() -> None:
    presets = zoo_hyperparameters()
    assert set(presets) >= {"CartPole-v1", "LunarLander-v3"}
    lunar = presets["LunarLander-v3"]
    assert lunar["learning_rate"] == "lin_0.001"
    assert lunar["env_wrapper"] == [{"sb3_contrib.common.wrappers.TimeFeatureWrapper": {}}]
    assert presets["MountainCar-v0"]["normalize"] is True
    assert all("lr_schedule" not in entry for entry in presets.values())
    assert zoo_learning_rate({"learning_rate": 1e-3, "lr_schedule": "constant"}) == {"learning_rate": 1e-3}
    assert zoo_learning_rate({"lr_schedule": "linear"}) == {}  # ACER's defaults: nothing to pass
    assert zoo_learning_rate({"lr_schedule": "constant"}) == {"learning_rate": 7e-4}
    with pytest.raises(ValueError, match="'middle_drop' has no rl-zoo3 equivalent"):
        zoo_learning_rate({"learning_rate": 1e-3, "lr_schedule": "middle_drop"})


def test_the_zoo_reading_acer_yml_itself_keeps_each_presets_schedule() -> None:
    """Before: ``-conf`` naming the file ``sb3_acer/presets/acer.yml`` (not the module) made each linear
    preset's ``learning_rate: !!float`` a constant schedule, which ACER follows over ``lr_schedule``."""
    from rl_zoo3.exp_manager import ExperimentManager

    entries = yaml.safe_load((resources.files("sb3_acer.presets") / "acer.yml").read_text())  # as the zoo
    rated = {env_id: entry for env_id, entry in entries.items() if "learning_rate" in entry}
    assert len(rated) == 14
    for env_id, entry in rated.items():
        zoo_rate = ExperimentManager._preprocess_schedules(dict(entry))["learning_rate"]
        preset = load_preset(env_id).hyperparameters
        linear = {"linear": True, "constant": False}[preset["lr_schedule"]]
        for progress_remaining in (1.0, 0.5, 0.1):
            expected = preset["learning_rate"] * (progress_remaining if linear else 1.0)
            assert zoo_rate(progress_remaining) == expected, (env_id, progress_remaining)


def test_main_refuses_an_unknown_script(capsys) -> None:
    with pytest.raises(SystemExit) as raised:
        main(["record_training"])  # starts Python again, where ACER would not be registered
    assert raised.value.code == 2
    assert "{train,enjoy,record_video,push_to_hub,load_from_hub}" in capsys.readouterr().err


# ------------------------------------------------------------------------------------ custom_objects


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    path = tmp_path_factory.mktemp("custom") / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5, learning_rate=1e-3, seed=0).save(path)
    return path


def test_load_takes_the_custom_objects_of_the_zoo(saved: pathlib.Path) -> None:
    model = ACER.load(saved, custom_objects=dict(ZOO_CUSTOM_OBJECTS))
    # SB3's lr_schedule (a callable of the learning rate) is ACER's callable learning_rate: no more learning.
    assert callable(model.learning_rate)
    assert model.current_learning_rate() == 0.0
    assert model.n_steps == 5
    assert not hasattr(model, "clip_range")


@pytest.mark.parametrize(
    ("custom_objects", "expected"),
    [
        ({"delta": 2.0, "gamma": 0.9}, {"delta": 2.0, "gamma": 0.9}),  # ACER's keys replace the saved values
        ({"lr_schedule": "constant"}, {"lr_schedule": "constant", "learning_rate": 1e-3}),  # a name stays one
        ({"clip_range": 0.2, "target_kl": None, "ent_coef": 0.5}, {"ent_coef": 0.5}),  # others are ignored
    ],
)
def test_custom_objects_replace_only_acer_hyperparameters(
    saved: pathlib.Path, custom_objects: dict[str, Any], expected: dict[str, Any]
) -> None:
    model = ACER.load(saved, custom_objects=custom_objects)
    for name, value in expected.items():
        attribute = "lr_schedule_name" if name == "lr_schedule" else name  # lr_schedule is SB3's callable
        assert getattr(model, attribute) == value, name


def test_load_keyword_arguments_still_refuse_unknown_names(saved: pathlib.Path) -> None:
    # Keyword arguments set the model's settings: a misspelt one is an error, unlike custom_objects.
    with pytest.raises(ValueError, match=r"unknown hyperparameter 'clip_range' for ACER\.load"):
        ACER.load(saved, clip_range=0.2)


# ------------------------------------------------------------------------------- received log folders
# A log folder may come from someone else: what the zoo would run or import from it is refused in one line
# naming the file and --trust-log-folder; a trusted folder, or an honest one, plays as before.

ENJOY = ["enjoy", "--env", "CartPole-v1", "-f", "logs", "--no-render", "-n", "20", "--seed", "0"]
RUN = pathlib.Path("logs", "acer", "CartPole-v1_1")
#: A module that a received config names; importing it creates MARKER in the current folder.
HOSTILE_MODULE = "zoo_hostile_module"


@pytest.fixture
def received(
    zoo_run: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[pathlib.Path]:
    """A copy of the zoo's log folder in the current folder (``tmp_path``, which also holds
    :data:`HOSTILE_MODULE` on ``sys.path``); its settings folder ``logs/acer/CartPole-v1_1/CartPole-v1``."""
    shutil.copytree(zoo_run / "logs", tmp_path / "logs")
    monkeypatch.chdir(tmp_path)
    module = (
        f"open({str(tmp_path / 'MARKER')!r}, 'w').close()\n"
        "import gymnasium\n\n\nclass Wrapper(gymnasium.Wrapper):\n    pass\n"
    )
    (tmp_path / f"{HOSTILE_MODULE}.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / RUN / "CartPole-v1"
    sys.modules.pop(HOSTILE_MODULE, None)


def refused(argv: list[str]) -> str:
    """The one-line message ``main(argv)`` exits with."""
    with pytest.raises(SystemExit) as raised:
        main(argv)
    message = raised.value.code
    assert isinstance(message, str) and "\n" not in message, message
    return message


def _honest_config(settings: pathlib.Path, **changes: Any) -> str:
    """The zoo's own config.yml with ``changes``, as the zoo writes it (an OrderedDict)."""
    config = dict(yaml.load((settings / "config.yml").read_text(), Loader=yaml.UnsafeLoader))
    return yaml.dump(OrderedDict(sorted({**config, **changes}.items())))


def _tag(settings: pathlib.Path) -> None:
    (settings / "config.yml").write_text('!!python/object/apply:os.system ["touch MARKER"]\n')


def _args_tag(settings: pathlib.Path) -> None:
    text = (settings / "args.yml").read_text()
    (settings / "args.yml").write_text(
        text + "  - - hostile\n    - !!python/object/apply:os.system [touch MARKER]\n"
    )


def _normalize(settings: pathlib.Path) -> None:
    hostile = "__import__('os').system('touch MARKER')"
    (settings / "config.yml").write_text(_honest_config(settings, normalize=hostile))


def _wrapper(settings: pathlib.Path) -> None:
    config = _honest_config(settings, env_wrapper=[{f"{HOSTILE_MODULE}.Wrapper": {}}])
    (settings / "config.yml").write_text(config)


def _name_tag(settings: pathlib.Path) -> None:
    text = (settings / "config.yml").read_text()
    (settings / "config.yml").write_text(
        text + f"  - - policy_kwargs\n    - !!python/name:{HOSTILE_MODULE}.Wrapper ''\n"
    )


def _pickle(settings: pathlib.Path) -> None:
    (settings / "config.yml").write_text(_honest_config(settings, normalize=True))
    (settings / "vecnormalize.pkl").write_bytes(pickle.dumps(MarkerPayload(settings.parents[3] / "MARKER")))


def _zoo_reads(settings: pathlib.Path) -> None:
    """What the zoo's enjoy does with the settings folder before it plays."""
    from rl_zoo3.utils import get_saved_hyperparams, get_wrapper_class
    from stable_baselines3.common.vec_env import VecNormalize

    with contextlib.suppress(AttributeError, TypeError):  # the payloads return os.system's exit code
        hyperparams, _ = get_saved_hyperparams(str(settings), test_mode=True)
        get_wrapper_class(hyperparams)
    yaml.load((settings / "args.yml").read_text(), Loader=yaml.UnsafeLoader)
    if (settings / "vecnormalize.pkl").exists():
        with pytest.raises(AttributeError):  # the payload ran; what it returned is no VecNormalize
            VecNormalize.load(str(settings / "vecnormalize.pkl"), None)  # type: ignore[arg-type]


#: How each case tampers with the settings folder, and what the refusal says.
HOSTILE = {
    "config.yml tag": (
        _tag,
        r"config\.yml, line 1: refusing the YAML tag !!python/object/apply:os\.system, ",
    ),
    "args.yml tag": (
        _args_tag,
        r"args\.yml, line \d+: refusing the YAML tag !!python/object/apply:os\.system",
    ),
    "normalize": (_normalize, r"config\.yml: refusing normalize \"__import__\('os'\).*\(eval\)"),
    "env_wrapper": (_wrapper, rf"config\.yml: refusing env_wrapper {HOSTILE_MODULE}\.Wrapper: the zoo would"),
    "python/name": (_name_tag, rf"config\.yml, line \d+: refusing !!python/name:{HOSTILE_MODULE}\.Wrapper: "),
    "vecnormalize.pkl": (_pickle, r"vecnormalize\.pkl holds pickled VecNormalize statistics"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_received_folder_that_would_run_code_is_refused_in_one_line(
    received: pathlib.Path, case: str
) -> None:
    tamper, expected = HOSTILE[case]
    tamper(received)
    # The payload is live: the zoo's own readers run it.
    _zoo_reads(received)
    assert (received.parents[3] / "MARKER").exists()
    (received.parents[3] / "MARKER").unlink()
    sys.modules.pop(HOSTILE_MODULE, None)

    for script in (ENJOY, ["record_video", *ENJOY[1:]]):
        message = refused(script)
        assert re.search(expected, message), message
        assert message.startswith(f"sb3_acer.zoo {script[0]}: error: {RUN / 'CartPole-v1'}")
        assert message.endswith(f"pass --trust-log-folder if you trust {RUN}")
    assert not (received.parents[3] / "MARKER").exists()
    assert HOSTILE_MODULE not in sys.modules


def test_the_zoos_own_files_are_read_as_data(tmp_path: pathlib.Path) -> None:
    # What the zoo writes: an OrderedDict of the presets, with classes as !!python/name: and tuples.
    for env_id, expected in [
        ("HalfCheetah-v5", {"activation_fn": "torch.nn.modules.activation.ReLU"}),
        (
            "MinAtar/Breakout-v1",
            {"features_extractor_class": "sb3_acer.common.policies.torch_layers.MinAtarCNN"},
        ),
    ]:
        settings = {**zoo_hyperparameters()[env_id], "env_kwargs": {"shape": (84, 84)}}
        (tmp_path / "config.yml").write_text(yaml.dump(OrderedDict(sorted(settings.items()))))
        assert "!!python/name:" in (tmp_path / "config.yml").read_text()
        config = read_log_yaml(tmp_path / "config.yml")
        assert type(config) is dict and list(config) == sorted(settings)
        assert config["env_kwargs"] == {"shape": (84, 84)}
        for key, name in expected.items():
            assert config["policy_kwargs"][key] == name and isinstance(
                config["policy_kwargs"][key], ClassName
            )
        assert {k: v for k, v in config.items() if k != "policy_kwargs"} == {
            k: v for k, v in settings.items() if k != "policy_kwargs"
        }
    # Without torch among the packages, the class's module is refused (nothing is imported either way).
    with pytest.raises(
        LogFolderError, match=r"refusing !!python/name:sb3_acer\.common\.policies\.torch_layers\.MinAtarCNN"
    ):
        read_log_yaml(tmp_path / "config.yml", packages=frozenset({"torch"}))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("#" * (MAX_YAML_BYTES + 1), rf"config\.yml is {MAX_YAML_BYTES + 1} bytes, more than a zoo file"),
        (
            "a: [1\n",
            r"config\.yml is not valid YAML: expected ',' or '\]', but got '<stream end>' "
            r"\(line 2, column 1\)$",
        ),
        ("\xff", r"config\.yml is not UTF-8 text"),
        ("[" * 100_000, r"config\.yml is nested too deeply to read"),
        (
            "!!python/object/apply:collections.OrderedDict {args: [[]]}\n",
            r"an OrderedDict tag that is not a list",
        ),
        (
            "!!python/object/apply:collections.OrderedDict [[[a, 1, 2]]]\n",
            r"that is not a list of \[key, value\]",
        ),
        (
            "!!python/object/apply:collections.OrderedDict [[[[a], 1]]]\n",
            r"whose keys are not values a YAML key",
        ),
        ("!python/tuple {a: 1}\n", r"refusing the YAML tag !python/tuple"),
        ("!!python/tuple {a: 1}\n", r"refusing a !!python/tuple tag that is not a list"),
        ("!!python/name:eval ''\n", r"refusing !!python/name:eval: the zoo's loader would import eval"),
        ("!!python/module:os ''\n", r"refusing the YAML tag !!python/module:os"),
    ],
)
def test_a_damaged_or_hostile_yaml_file_raises_log_folder_error(
    tmp_path: pathlib.Path, text: str, expected: str
) -> None:
    path = tmp_path / "config.yml"
    path.write_bytes(text.encode("latin-1") if text == "\xff" else text.encode())
    with pytest.raises(LogFolderError, match=expected):
        read_log_yaml(path)


def test_an_unreadable_yaml_file_raises_log_folder_error(tmp_path: pathlib.Path) -> None:
    (tmp_path / "config.yml").mkdir()  # a folder where the file should be: open fails
    with pytest.raises(LogFolderError, match=r"config\.yml cannot be read: Is a directory$"):
        read_log_yaml(tmp_path / "config.yml")


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        ({"normalize": "dict(norm_obs=True, clip_obs=10.0)"}, None),  # the zoo's own spellings are read
        ({"normalize": "{'norm_obs': False}"}, None),
        (
            {
                "normalize": {"norm_obs": True},
                "env_wrapper": "sb3_contrib.common.wrappers.TimeFeatureWrapper",
            },
            None,
        ),
        ({"callback": [{"rl_zoo3.callbacks.ParallelTrainCallback": {}}], "policy": "MlpPolicy"}, None),
        ({"normalize": "True"}, r"refusing normalize 'True', which the zoo would run as Python \(eval\)"),
        ({"normalize": "dict(norm_obs=os.sep)"}, r"refusing normalize 'dict\(norm_obs=os\.sep\)'"),
        (
            {"vec_env_wrapper": "os.path.VecEnv"},
            r"refusing vec_env_wrapper os\.path\.VecEnv: the zoo would import os\.path,",
        ),
        (
            {"callback": [{"my_callbacks.Log": {}}]},
            r"refusing callback my_callbacks\.Log: the zoo would import my_callbacks,",
        ),
        (
            {"policy": "my_policies.Policy"},
            r"name its package with --gym-packages my_policies or pass --trust-log-folder",
        ),
        ({"vec_env_wrapper": "stable_baselines3.common.vec_env.VecNormalize"}, None),
        ({"policy": "sb3_acer.acer.policies.MlpPolicy"}, None),
        (
            {"env_wrapper": [{"torch.save": {"f": "written"}}]},
            r"refusing env_wrapper torch\.save: it is not a Wrapper class, and the zoo would call it; pass",
        ),
        (
            {"callback": "gymnasium.Wrapper"},
            r"refusing callback gymnasium\.Wrapper: it is not a BaseCallback class",
        ),
        (
            {"env_wrapper": "gymnasium.wrappers.NoSuchWrapper"},
            r"gymnasium\.wrappers\.NoSuchWrapper: it is not a",
        ),
    ],
)
def test_config_settings_the_zoo_evals_or_imports_from_are_checked(
    received: pathlib.Path, settings: dict[str, Any], expected: str | None
) -> None:
    (received / "config.yml").write_text(yaml.dump(settings))
    if expected is None:
        check_log_folder("enjoy", ["--algo", "acer", *ENJOY[1:]])
    else:
        with pytest.raises(LogFolderError, match=expected):
            check_log_folder("enjoy", ["--algo", "acer", *ENJOY[1:]])


def test_a_function_named_as_a_wrapper_is_refused(received: pathlib.Path) -> None:
    from rl_zoo3.utils import get_wrapper_class

    # Live: the zoo calls what env_wrapper names with the env and the file's arguments (here, writing a file).
    written = received.parents[3] / "written"
    wrap = get_wrapper_class({"env_wrapper": [{"torch.save": {"f": str(written)}}]})
    assert wrap is not None
    wrap(gym.make("CartPole-v1"))
    assert written.is_file()
    written.unlink()

    (received / "config.yml").write_text(
        _honest_config(received, env_wrapper=[{"torch.save": {"f": str(written)}}])
    )
    assert "refusing env_wrapper torch.save: it is not a Wrapper class" in refused(ENJOY)
    assert not written.exists()


def test_a_package_the_user_names_may_be_imported(received: pathlib.Path, capsys) -> None:
    _wrapper(received)
    main([*ENJOY, "--gym-packages", HOSTILE_MODULE])  # the user's own choice: the zoo imports it
    assert "Episode Reward" in capsys.readouterr().out
    assert HOSTILE_MODULE in sys.modules


HUB_DOWNLOAD = (
    "; enjoy would download it from the Hugging Face Hub, unchecked: pass --trust-log-folder to allow it"
)


@pytest.mark.parametrize(
    ("argv", "folder", "expected"),
    [
        (["enjoy", "--no-render"], None, f"The rl-trained-agents/acer folder was not found{HUB_DOWNLOAD}"),
        (
            ["enjoy", "--load-best"],
            "rl-trained-agents/acer/CartPole-v1_1",
            "No model found for acer on CartPole-v1, path: rl-trained-agents/acer/CartPole-v1_1/"
            f"best_model.zip{HUB_DOWNLOAD}",
        ),
        (["record_video", "-f", "elsewhere"], None, "The elsewhere/acer folder was not found"),
        (
            ["enjoy", "-f", "logs", "--algo", "ppo"],
            None,
            "--algo ppo: refusing to load ppo model files (logs): they hold pickles (Stable-Baselines3's "
            "format), which can run any code; pass --trust-log-folder if you trust logs",
        ),
        (
            ["train", "--algo", "a2c", "-i", "run/model.zip"],
            None,
            "--algo a2c: refusing to load a2c model files (run/model.zip): they hold pickles",
        ),
        (
            ["load_from_hub", "-f", "downloads", "--algo", "ppo"],
            None,
            "--algo ppo: refusing to load ppo model files (sb3/ppo-CartPole-v1): they hold pickles",
        ),
        (
            ["push_to_hub", "-f", "logs", "-orga", "someone", "--algo", "ppo"],
            None,
            "--algo ppo: refusing to load ppo model files (logs): they hold pickles",
        ),
    ],
)
def test_folders_that_cannot_be_checked_are_refused(
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    folder: str | None,
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    if folder is not None:
        (tmp_path / folder).mkdir(parents=True)
    before = sorted(tmp_path.rglob("*"))
    message = refused([argv[0], "--env", "CartPole-v1", *argv[1:]])
    assert message.startswith(f"sb3_acer.zoo {argv[0]}: error: {expected}"), message
    assert sorted(tmp_path.rglob("*")) == before  # nothing was downloaded or written


def test_help_is_forwarded(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)  # no log folder: the zoo prints its help and reads nothing
    with pytest.raises(SystemExit) as raised:
        main(["enjoy", "--hel"])
    assert raised.value.code == 0
    assert capsys.readouterr().out.startswith("usage: rl_zoo3.enjoy [-h]")


def test_a_damaged_model_file_is_one_line(received: pathlib.Path) -> None:
    (received.parent / "CartPole-v1.zip").write_bytes(b"not a zip")
    message = refused(ENJOY)  # ACER.load's ModelFileError, raised inside the zoo
    assert message == (
        f"sb3_acer.zoo enjoy: error: {RUN / 'CartPole-v1.zip'} is not a model file "
        "(not a zip archive or truncated): File is not a zip file"
    )


TRAIN = ["train", "--env", "CartPole-v1", "-f", "logs", "--eval-freq", "-1", "--seed", "0"]


@pytest.fixture(scope="module")
def normalized_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pathlib.Path]:
    """A folder where the zoo trained ACER on CartPole with VecNormalize (``vecnormalize.pkl``, a pickle)."""
    folder = tmp_path_factory.mktemp("zoo_normalized")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        main([*TRAIN, "-n", "400", "-params", "normalize:True"])
        yield folder


def test_the_users_own_normalized_folder_plays_when_trusted(
    normalized_run: pathlib.Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.chdir(normalized_run)
    statistics = RUN / "CartPole-v1" / "vecnormalize.pkl"
    assert statistics.is_file()
    assert refused(ENJOY) == (
        f"sb3_acer.zoo enjoy: error: {statistics} holds pickled VecNormalize statistics, and unpickling a "
        f"file can run any code; refusing it; pass --trust-log-folder if you trust {RUN}"
    )
    main([*ENJOY, "--trust-log-folder"])
    out = capsys.readouterr().out
    assert "Loading running average" in out and "Episode Reward" in out

    # train --trained-agent reads the statistics beside the model too
    again = [*TRAIN, "-n", "200", "-i", str(RUN / "CartPole-v1.zip"), "-params", "normalize:True"]
    assert refused(again).startswith(f"sb3_acer.zoo train: error: {statistics} holds pickled VecNormalize")
    assert not (normalized_run / "logs" / "acer" / "CartPole-v1_2").exists()
    main([*again, "--trust-log-folder"])
    out = capsys.readouterr().out
    assert "Loading pretrained agent" in out and "Loading saved VecNormalize stats" in out
    assert (normalized_run / "logs" / "acer" / "CartPole-v1_2" / "CartPole-v1.zip").is_file()


def test_the_command_prints_one_line_and_no_traceback(received: pathlib.Path) -> None:
    _tag(received)
    result = subprocess.run(
        [sys.executable, "-m", "sb3_acer.zoo", *ENJOY],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"sb3_acer.zoo enjoy: error: {RUN / 'CartPole-v1' / 'config.yml'}, line 1: refusing the YAML tag "
        f"!!python/object/apply:os.system, which the zoo's loader (yaml.UnsafeLoader) would run; pass "
        f"--trust-log-folder if you trust {RUN}"
    ]
    assert not (received.parents[3] / "MARKER").exists()


@pytest.mark.parametrize(
    "spelling",
    [["-i", "run/model.zip"], ["-Pi", "run/model.zip"], ["--trained", "run/model.zip"], ["-irun/model.zip"]],
)
def test_the_trained_agent_is_found_however_the_zoo_parser_would_read_it(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, spelling: list[str]
) -> None:
    # argparse takes abbreviations and bundled one-letter flags: the check reads the line as the zoo does.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run" / "CartPole-v1").mkdir(parents=True)
    (tmp_path / "run" / "CartPole-v1" / "vecnormalize.pkl").write_bytes(b"")
    (tmp_path / "run" / "model.zip").write_bytes(b"")
    message = refused(["train", "--env", "CartPole-v1", *spelling])
    assert message.startswith("sb3_acer.zoo train: error: run/CartPole-v1/vecnormalize.pkl holds pickled")
    assert message.endswith("pass --trust-log-folder if you trust run")

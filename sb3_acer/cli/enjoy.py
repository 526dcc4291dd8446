"""``sb3-acer enjoy MODEL``: run a saved model for a few episodes and print the returns (or record them),
in the environment, wrappers and normalisation that ``train`` wrote beside the model."""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from stable_baselines3.common.utils import check_for_correct_spaces
from stable_baselines3.common.vec_env import VecEnv

from sb3_acer.acer.acer import ACER
from sb3_acer.cli.arguments import (
    add_gym_packages,
    env_kwargs_option,
    positive_int,
    random_seed,
    torch_device,
)
from sb3_acer.cli.environments import EnvInfo, make_env, resolve_env, torch_threads
from sb3_acer.cli.errors import PROG, CLIError, UsageError, count, one_line
from sb3_acer.cli.imports import check_file_modules, top_level
from sb3_acer.cli.normalization import load_normalization
from sb3_acer.cli.run_folder import check_can_create, model_file, remove_folders, sidecar
from sb3_acer.common.save_util.model_file import ModelFileError
from sb3_acer.presets import WrapperSpec, check_env_kwargs, env_wrappers

__all__ = ["add_parser", "cmd_enjoy"]

ENJOY_EXAMPLES = f"""\
examples:
  {PROG} enjoy logs/CartPole-v1_0/model.zip --episodes 10 --deterministic
  {PROG} enjoy logs/CartPole-v1_0               # a run folder: its model.zip
  {PROG} enjoy my_model.zip --env CartPole-v1   # a model saved from Python
  {PROG} enjoy logs/CartPole-v1_0 --video-folder videos/   # needs moviepy

The environment id, its wrappers and the VecNormalize statistics are read from MODEL.json and
MODEL.vecnormalize.npz next to the model, as written by '{PROG} train'. MODEL.json chooses no module to
import: give the run's --gym-packages again (e.g. --gym-packages minigrid).

Statistics saved by Stable-Baselines3 (VecNormalize.save(), the zoo's vecnormalize.pkl) are a pickle, which
can run code: convert a file you trust once ('{PROG} convert-stats vecnormalize.pkl stats.npz', then
--norm-stats stats.npz), or play with --norm-stats vecnormalize.pkl --trust-pickle."""


def _video_recorder(info: EnvInfo, folder: str, n_episodes: int) -> Callable[[gym.Env], gym.Env]:
    """A wrapper recording the first ``n_episodes`` episodes to ``folder`` (Gymnasium's ``RecordVideo``)."""
    try:
        import moviepy  # noqa: F401
    except ImportError:
        raise CLIError("video recording needs moviepy: pip install moviepy") from None
    from gymnasium.wrappers import RecordVideo

    def record(env: gym.Env) -> gym.Env:
        # Only the episodes that are played to the end: the vec env resets after the last one.
        return RecordVideo(
            env,
            video_folder=folder,
            episode_trigger=lambda episode: episode < n_episodes,
            name_prefix=info.env_id.replace("/", "-"),
            disable_logger=True,
        )

    return record


#: The largest ``model.json`` read: ``train`` writes a few KB (the settings of the run); a file from elsewhere
#: is not read whole before its size is known.
MAX_RUN_INFO_BYTES = 1 << 20


def _read_run_info(path: pathlib.Path) -> dict[str, Any]:
    """The run description ``train`` wrote beside a model, checked enough to be used."""

    def damaged(reason: str) -> CLIError:
        return CLIError(f"cannot read {path}: {reason}; repair or remove it")

    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_RUN_INFO_BYTES + 1)
        if len(raw) > MAX_RUN_INFO_BYTES:
            raise damaged(f"it is larger than {MAX_RUN_INFO_BYTES} bytes, which no run description is")
        run_info = json.loads(raw.decode())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise damaged(one_line(error)) from None
    except RecursionError:
        raise damaged("it is nested too deeply to be a run description") from None
    if not isinstance(run_info, dict):
        raise damaged("not a run description (a JSON object)")
    for key, kind in (("env_id", str), ("normalize", bool)):
        if key in run_info and not isinstance(run_info[key], kind):
            raise damaged(f"{key!r} must be a {kind.__name__}, got {run_info[key]!r}")
    packages = run_info.get("gym_packages", [])
    if not (isinstance(packages, list) and all(isinstance(package, str) for package in packages)):
        raise damaged(f"'gym_packages' must be a list of package names, got {packages!r}")
    return run_info


def _resolve_run_env(
    args: argparse.Namespace, env_id: str, run_info: dict[str, Any], info_path: pathlib.Path
) -> tuple[EnvInfo, tuple[WrapperSpec, ...]]:
    """The environment and wrappers to play in. What the run's file names is imported only where the user
    names it too (``--gym-packages``, ``--env``) or it is imported already
    (:func:`~sb3_acer.cli.imports.check_file_modules`): a received run folder does not choose what runs."""
    named = {top_level(module) for module in args.gym_packages}
    if args.env is not None and ":" in args.env:
        named.add(top_level(args.env.rpartition(":")[0]))
    file_packages = run_info.get("gym_packages", [])
    check_file_modules(info_path, "gym_packages", file_packages, named)
    if args.env is None and ":" in env_id:
        check_file_modules(info_path, "env_id", [env_id.rpartition(":")[0]], named)
    info = resolve_env(env_id, [*file_packages, *args.gym_packages])
    try:
        return info, env_wrappers(run_info.get("env_wrapper"), packages=named)
    except ValueError as error:
        raise CLIError(f"{info_path}: {error}") from None


def _enjoy_env(
    args: argparse.Namespace,
    env_id: str,
    info: EnvInfo,
    model: ACER,
    model_path: pathlib.Path,
    run_info: dict[str, Any],
    video: Callable[[gym.Env], gym.Env] | None,
    wrappers: tuple[WrapperSpec, ...],
    env_kwargs: dict[str, Any],
) -> VecEnv:
    """The env ``enjoy`` plays the model in: checked to fit it, normalised as it was trained."""
    render_mode = "rgb_array" if video is not None else ("human" if args.render else None)
    try:
        env = make_env(
            info, 1, args.seed, render_mode=render_mode, video=video, wrappers=wrappers, env_kwargs=env_kwargs
        )
    except CLIError:
        raise
    except (ValueError, TypeError, AssertionError) as error:  # a saved wrapper that cannot wrap this env
        raise UsageError(f"cannot make {env_id} for the model: {one_line(error)}") from None
    try:
        check_for_correct_spaces(env, model.observation_space, model.action_space)
    except ValueError as error:
        env.close()
        raise UsageError(f"the model does not fit {env_id}: {one_line(error)}") from None
    normalization_path = (
        sidecar(model_path, ".vecnormalize.npz") if args.norm_stats is None else args.norm_stats
    )
    # --norm-stats, the run description or the model file say whether the model was trained normalised;
    # without them (a model of sb3-acer 0.1 saved from Python), statistics beside the model are used.
    normalized = (
        args.norm_stats is not None
        or model.trained_with_vec_normalize
        or run_info.get("normalize", normalization_path.is_file())
    )
    if normalized and normalization_path.is_file():
        try:
            env = load_normalization(env, normalization_path, trust_pickle=args.trust_pickle)
        except (OSError, ValueError, KeyError) as error:
            env.close()
            raise CLIError(f"cannot read {normalization_path}: {one_line(error)}") from None
    elif normalized:
        env.close()
        raise CLIError(
            f"the model was trained with VecNormalize but {normalization_path} is missing: "
            "pass --norm-stats PATH (the .vecnormalize.npz file its run wrote; SB3's vecnormalize.pkl "
            f"with --trust-pickle, or converted once with '{PROG} convert-stats')"
        )
    return env


def cmd_enjoy(args: argparse.Namespace) -> int:
    with torch_threads(1):  # one observation at a time: threads only add overhead
        return _enjoy(args)


def _enjoy(args: argparse.Namespace) -> int:
    model_path = _model_path(args.model)
    info_path = sidecar(model_path, ".json")
    run_info = _read_run_info(info_path) if info_path.exists() else {}
    env_id = args.env or run_info.get("env_id")
    if not env_id:
        reason = "names no environment" if info_path.exists() else "does not exist to name the environment"
        raise UsageError(f"pass --env ENV_ID ({info_path} {reason})")
    info, wrappers = _resolve_run_env(args, env_id, run_info, info_path)
    try:
        env_kwargs = check_env_kwargs(run_info.get("env_kwargs") or {})
    except ValueError as error:
        raise CLIError(f"{info_path}: {error}") from None
    env_kwargs.update(env_kwargs_option(args.env_kwargs))
    video_folder = _check_video_folder(args)
    video = None if video_folder is None else _video_recorder(info, str(video_folder), args.episodes)
    model = _load_model(model_path, args.device)
    # RecordVideo makes its folder when the env is made: gone again if the model cannot play there.
    video_made = (
        [] if video_folder is None else [f for f in [video_folder, *video_folder.parents] if not f.exists()]
    )
    try:
        env = _enjoy_env(args, env_id, info, model, model_path, run_info, video, wrappers, env_kwargs)
    except BaseException:
        remove_folders(video_made)  # nothing was recorded in them
        raise
    returns, interrupted = _play(args, model, env, info, video_made, recording=video is not None)
    env.close()
    if returns:
        print(
            f"{info.env_id}: mean return over {count(len(returns), 'episode')} {np.mean(returns):.2f} "
            f"+/- {np.std(returns):.2f}"
        )
    if interrupted:
        print("interrupted", file=sys.stderr)
        return 130
    if args.video_folder is not None:
        print(f"videos: {args.video_folder}")
    return 0


def _load_model(model_path: pathlib.Path, device: str) -> ACER:
    """The model in ``model_path``; a file that cannot be loaded is one line, whatever refused it.

    Raises:
        CLIError: the file is damaged or not a model (``ModelFileError``), or cannot be read (``OSError``).
            Any other exception but an ``ImportError`` (a broken installation) comes from a file
            ``ACER.load`` should have refused with ``ModelFileError``: still one line, which says so.
    """
    try:
        return ACER.load(model_path, device=device)
    except (ModelFileError, OSError) as error:
        raise CLIError(f"cannot load {model_path}: {one_line(error)}") from None
    except ImportError:  # this Python's installation, not the file
        raise
    except Exception as error:  # a file from elsewhere: one line, never a traceback
        raise CLIError(
            f"cannot load {model_path}: {type(error).__name__}: {one_line(error)} (a damaged file that "
            "sb3-acer did not recognise as one; please report it)"
        ) from None


def _model_path(text: str) -> pathlib.Path:
    """The model file ``MODEL`` names: itself, ``model.zip`` in a run folder, or the name with ``.zip``."""
    model_path = pathlib.Path(text)
    if model_path.is_dir():
        model_path = model_path / "model.zip"
    elif not model_path.exists():
        model_path = model_file(model_path)
    if not model_path.is_file():
        raise UsageError(f"no model file {str(model_path)!r}")
    return model_path


def _check_video_folder(args: argparse.Namespace) -> pathlib.Path | None:
    """``--video-folder``, checked: a folder that can be made and holds no video it would replace."""
    if args.video_folder is not None and args.render:
        raise UsageError("--render and --video-folder cannot be combined")
    if args.video_folder is None:
        return None
    video_folder = pathlib.Path(args.video_folder)
    check_can_create(video_folder, "--video-folder", folder=True)
    if video_folder.is_dir() and any(video_folder.glob("*.mp4")):
        raise UsageError(
            f"--video-folder {video_folder} already holds videos, which would be replaced; choose "
            "another folder or remove them"
        )
    return video_folder


def _play(
    args: argparse.Namespace,
    model: ACER,
    env: VecEnv,
    info: EnvInfo,
    video_made: list[pathlib.Path],
    recording: bool,
) -> tuple[list[float], bool]:
    """Play ``--episodes`` episodes, printing each return; returns them and whether Ctrl-C stopped it."""
    returns: list[float] = []
    # Recurrent policies carry their LSTM state from step to step and reset it at episode starts.
    state: tuple[np.ndarray, ...] | None = None
    episode_start = np.ones((env.num_envs,), dtype=bool)
    try:
        obs = env.reset()
        while len(returns) < args.episodes:
            action, state = model.predict(
                obs,  # type: ignore[arg-type]
                state=state,
                episode_start=episode_start,
                deterministic=args.deterministic,
            )
            obs, _, dones, infos = env.step(action)
            episode_start = dones
            episode = infos[0].get("episode")
            if episode is not None:
                returns.append(float(episode["r"]))
                print(f"episode {len(returns)}: return {episode['r']:.2f}, length {episode['l']}")
    except KeyboardInterrupt:
        return returns, True
    except gym.error.DependencyNotInstalled as error:  # no pygame to draw frames, met at the first one
        with warnings.catch_warnings():  # RecordVideo's "zero frames to save": the error below says why
            warnings.simplefilter("ignore")
            env.close()
        remove_folders(video_made)
        raise CLIError(
            f"cannot {'record' if recording else 'show'} {info.env_id}: {one_line(error)}"
        ) from None
    return returns, False


def add_parser(commands: Any) -> None:
    """Add the ``enjoy`` command to ``commands`` (the subparsers of the ``sb3-acer`` parser)."""
    enjoy = commands.add_parser(
        "enjoy",
        help="run a saved model and print its episode returns",
        description="Run a saved model for some episodes and print the returns (optionally record videos).",
        epilog=ENJOY_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    enjoy.add_argument("model", metavar="MODEL", help="model file (.zip) or run folder")
    enjoy.add_argument("--env", metavar="ENV_ID", help="environment id (default: from MODEL.json)")
    add_gym_packages(
        enjoy,
        "import these packages first, as they register environments; a module MODEL.json names (its "
        "gym_packages, a module:ENV_ID, a wrapper) is imported only if its package is named here or in --env",
    )
    enjoy.add_argument(
        "--env-kwargs",
        nargs="+",
        action="extend",
        metavar="KEY=VALUE",
        help="keyword arguments of gymnasium.make, over those MODEL.json saved",
    )
    enjoy.add_argument(
        "--norm-stats",
        type=pathlib.Path,
        metavar="PATH",
        help="VecNormalize statistics to play with (default: MODEL.vecnormalize.npz beside the model)",
    )
    enjoy.add_argument(
        "--trust-pickle",
        action="store_true",
        help="read statistics pickled by Stable-Baselines3 (vecnormalize.pkl), which can run code: only for "
        "a file you trust",
    )
    enjoy.add_argument("--episodes", type=positive_int, default=5, help="number of episodes (default 5)")
    enjoy.add_argument("--deterministic", action="store_true", help="take the most probable action")
    enjoy.add_argument("--seed", type=random_seed, default=0, help="environment seed (default 0)")
    enjoy.add_argument("--render", action="store_true", help="show the environment in a window")
    enjoy.add_argument("--video-folder", metavar="DIR", help="record each episode to DIR (needs moviepy)")
    enjoy.add_argument("--device", type=torch_device, default="auto", help="torch device (default: auto)")
    enjoy.set_defaults(func=cmd_enjoy)

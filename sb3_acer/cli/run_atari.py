"""Train ACER on an Atari game: SB2's acer/run_atari.py, with checkpoints, evaluation and TensorBoard.

Example:
    python -m sb3_acer.run_atari --env PongNoFrameskip-v4 --num-timesteps 10000000 --logdir runs/pong

Games are NoFrameskip-v4 ids with DeepMind's preprocessing (see sb3_acer/envs/atari.py); the ROMs ship with
ale-py. --num-timesteps counts agent steps over all environments, each 4 emulator frames: the default 10M
is 40M frames. Training runs for exactly --num-timesteps steps (rounded up to whole updates of n_envs x 20
steps); SB2's script trained 10% more than it was asked to. The model is saved at the end (--save-path),
and every --checkpoint-freq steps during training; Ctrl-C (SIGINT) stops training and saves the model
trained so far (nothing before the first step). An earlier run's files where this run writes them stop it
before it starts, unless --overwrite. Every --eval-freq steps the policy plays --n-eval-episodes full
games on separately seeded environments, whose true (unclipped) scores are printed, logged
(eval/mean_reward) and saved in <logdir>/evaluations.npz. Training episode scores (rollout/ep_rew_mean)
are full-game, unclipped scores too, and with --logdir they are written to <logdir>/monitor/*.monitor.csv,
which `sb3-acer plot <logdir>/monitor` draws; the training log goes to <logdir>/ACER_<n> (TensorBoard
events and progress.csv). With --actors N the games are played by N Ray actors of --envs-per-actor games
each, feeding one learner (docs/guide/distributed.md); their episodes go to
<logdir>/monitor/actors.monitor.csv.
"""

from __future__ import annotations

import argparse
import fnmatch
import inspect
import pathlib
import sys
from typing import Any, NamedTuple

from stable_baselines3.common.callbacks import BaseCallback, CheckpointCallback, EvalCallback
from stable_baselines3.common.logger import Logger, configure
from stable_baselines3.common.utils import get_latest_run_id
from stable_baselines3.common.vec_env import VecEnv

from sb3_acer.acer.acer import ACER
from sb3_acer.cli.actors import (
    TrainEnvFactory,
    actor_settings,
    add_actor_options,
    check_actor_options,
    ray_session,
)
from sb3_acer.cli.arguments import check_device, integer
from sb3_acer.cli.environments import EnvInfo
from sb3_acer.cli.errors import CLIError, UsageError, check_optional, check_progress_bar, one_line
from sb3_acer.cli.run_folder import (
    RunFiles,
    check_can_create,
    check_nothing_set_aside,
    check_replaceable,
    in_folder,
    run_lock,
    set_aside_files,
)
from sb3_acer.cli.train.run import NothingSaved, finish_run, learn_until_stopped
from sb3_acer.common.schedules import LR_SCHEDULES
from sb3_acer.envs.atari import SAMPLERS, ale_game_name, make_atari_vec_env

__all__ = ["build_parser", "main"]

#: ``--policy`` choices (SB2's): Nature CNN, and the CNN followed by an LSTM, plain or layer-normalised.
POLICIES = {"cnn": "CnnPolicy", "lstm": "CnnLstmPolicy", "lnlstm": "CnnLnLstmPolicy"}


def _whole_number(text: str) -> int:
    """An integer option, in any notation that names one (``1e7``, as ``sb3-acer train`` takes); its range is
    checked with the other options."""
    return integer(text, "a whole number", minimum=-(2**63))


#: The end of an option's help that gives its default.
_DEFAULT = " (default: %(default)s)"
_COUNT = dict(type=_whole_number)

#: SB2's options and run_atari's own, by group: (flags, argparse settings, help, whether the help ends with
#: the default).
OPTIONS: dict[str, list[tuple[tuple[str, ...], dict[str, Any], str, bool]]] = {
    "game and run (SB2's options)": [
        (("--env",), dict(default="BreakoutNoFrameskip-v4"), "NoFrameskip-v4 environment id", True),
        (("--seed",), dict(_COUNT, default=0), "seed of everything; game i gets seed + i", True),
        (
            ("--num-timesteps",),
            dict(_COUNT, default=10_000_000),
            "agent steps to train for, all envs together; 1 step = 4 frames",
            True,
        ),
        (
            ("--policy",),
            dict(choices=sorted(POLICIES), default="cnn"),
            "cnn: Nature CNN; lstm / lnlstm: Nature CNN + LSTM (256 units), plain / layer-normalised",
            True,
        ),
        (
            ("--lr_schedule", "--lr-schedule"),
            dict(dest="lr_schedule", choices=sorted(LR_SCHEDULES), default="constant", metavar="NAME"),
            "learning-rate schedule: " + ", ".join(sorted(LR_SCHEDULES)),
            True,
        ),
        (
            ("--logdir",),
            dict(default=None),
            "folder for TensorBoard and CSV logs (<logdir>/ACER_<n>), Monitor files, evaluations and "
            "checkpoints; nothing is logged to disk without it",
            True,
        ),
    ],
    "training": [
        (("--n-envs",), dict(_COUNT, default=16), "games played side by side", True),
        (
            ("--sampler",),
            dict(choices=SAMPLERS, default=SAMPLERS[0]),
            "ale-vector: ale-py's threaded C++ vector env (faster); wrappers: SB3's Atari wrappers",
            True,
        ),
        (("--device",), dict(default="auto"), "torch device: auto, cpu, cuda, cuda:1, ...", True),
        (("--learning-rate",), dict(type=float, default=7e-4), "initial learning rate", True),
        (
            ("--buffer-size",),
            dict(_COUNT, default=5000),
            "replay capacity in steps per env (SB2's Atari value)",
            True,
        ),
        (("--replay-ratio",), dict(type=float, default=4.0), "mean replay updates per update", True),
        (("--replay-start",), dict(_COUNT, default=1000), "steps per env stored before replay starts", True),
        (("--torch-threads",), dict(_COUNT, default=None), "torch CPU threads (default: torch's)", False),
        (
            ("--env-threads",),
            dict(_COUNT, default=0),
            "emulator threads of ale-vector (0: one per core)",
            True,
        ),
    ],
    "output": [
        (
            ("--save-path",),
            dict(default=None),
            "where the final model is saved (default: <logdir>/acer_<env>.zip, or ./acer_<env>.zip)",
            False,
        ),
        (
            ("--checkpoint-freq",),
            dict(_COUNT, default=1_000_000),
            "save a checkpoint every this many steps in <logdir or save folder>/checkpoints; 0: never",
            True,
        ),
        (("--eval-freq",), dict(_COUNT, default=250_000), "evaluate every this many steps; 0: never", True),
        (
            ("--n-eval-episodes",),
            dict(_COUNT, default=5),
            "full games per evaluation, played in parallel",
            True,
        ),
        (
            ("--eval-deterministic",),
            dict(action="store_true"),
            "evaluate the greedy policy instead of sampling (with ale-vector, a greedy policy that never "
            "presses FIRE after a lost life plays on until the 108k-frame limit in games such as Breakout)",
            False,
        ),
        (("--log-interval",), dict(_COUNT, default=100), "updates between log lines", True),
        (
            ("--overwrite",),
            dict(action="store_true"),
            "replace an earlier run's model, Monitor log, checkpoints, evaluations and best model where "
            "this run writes them (without it, such files stop the run before it starts)",
            False,
        ),
        (("--no-progress-bar",), dict(action="store_true"), "hide the progress bar", False),
        (("--verbose",), dict(type=int, default=1, choices=(0, 1, 2)), "0: quiet", True),
    ],
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sb3_acer.run_atari",
        description=__doc__,
        formatter_class=lambda prog: argparse.RawDescriptionHelpFormatter(prog, max_help_position=32),
    )
    for title, options in OPTIONS.items():
        group = parser.add_argument_group(title)
        for flags, settings, text, with_default in options:
            group.add_argument(*flags, **settings, help=text + (_DEFAULT if with_default else ""))
        if title == "training":
            add_actor_options(group)
    return parser


#: Steps per env of one update: ACER's ``n_steps``, which run_atari leaves at its default (SB2's 20).
N_STEPS: int = inspect.signature(ACER).parameters["n_steps"].default


class _Paths(NamedTuple):
    """Where a run writes: the final model, the folders of its Monitor log and checkpoints (None when it
    writes none), and whether it writes evaluations (``evaluations.npz`` and ``best_model.zip`` in the
    log folder)."""

    final: pathlib.Path
    monitor: pathlib.Path | None
    checkpoints: pathlib.Path | None
    evaluations: bool


def _reached(freq: int, args: argparse.Namespace) -> bool:
    """Whether a callback acting every ``freq`` steps (every ``max(freq // n_envs, 1)`` vector steps) acts
    in this run, which trains ``--num-timesteps`` rounded up to whole updates of ``n_envs x N_STEPS``."""
    if freq <= 0 or args.n_envs <= 0 or args.num_timesteps <= 0:
        return False
    update = args.n_envs * N_STEPS
    trained = -(-args.num_timesteps // update) * update
    return trained // args.n_envs >= max(freq // args.n_envs, 1)


def _paths(args: argparse.Namespace, logdir: pathlib.Path | None) -> _Paths:
    name = f"acer_{args.env.split('/')[-1]}.zip"
    if args.save_path is not None:  # a folder (an existing one, or a name ending in /) gets the default name
        save_path = pathlib.Path(in_folder(args.save_path, name))
    else:
        save_path = (logdir or pathlib.Path(".")) / name
    final = save_path if save_path.suffix else save_path.with_suffix(".zip")
    # CheckpointCallback makes its folder when training starts: only for a run long enough to use it.
    checkpoints = (logdir or final.parent) / "checkpoints" if _reached(args.checkpoint_freq, args) else None
    monitor = logdir / "monitor" if logdir else None
    return _Paths(final, monitor, checkpoints, logdir is not None and _reached(args.eval_freq, args))


def _check_options(args: argparse.Namespace, logdir: pathlib.Path | None, paths: _Paths) -> None:
    """Raise ``ValueError`` (or the CLI's path error) naming the first option that cannot work: the
    counts, the game, ACER's settings (checked by building the model without an env), the device and the
    paths."""
    for name in ("num_timesteps", "n_envs", "n_eval_episodes"):
        if getattr(args, name) <= 0:
            raise ValueError(f"--{name.replace('_', '-')} must be positive")
    if args.torch_threads is not None and args.torch_threads <= 0:
        raise ValueError("--torch-threads must be positive")
    if args.env_threads < 0:
        raise ValueError("--env-threads must be 0 (one per core) or positive")
    for name, meaning in (("checkpoint_freq", "never"), ("eval_freq", "never"), ("log_interval", "never")):
        if getattr(args, name) < 0:
            raise ValueError(f"--{name.replace('_', '-')} must be 0 ({meaning}) or positive")
    ale_game_name(args.env)  # ImportError without ale-py
    if args.sampler == "wrappers":  # SB3's AtariWrapper fails on the first frame without it
        check_optional("cv2", "--sampler wrappers", "pip install 'sb3-acer[atari]'")
    ACER.check_settings(POLICIES[args.policy], **_acer_settings(args))
    check_device(args.device)  # one torch has no backend for (mps, xla, meta), found before the games start
    if not args.no_progress_bar:
        check_progress_bar()
    if logdir is not None:
        check_optional("tensorboard", "--logdir", "pip install tensorboard")
        check_can_create(logdir, "--logdir", folder=True)
    for folder, what in ((paths.monitor, "the Monitor folder"), (paths.checkpoints, "the checkpoint folder")):
        if folder is not None:
            check_can_create(folder, what, folder=True)
    check_can_create(paths.final, "--save-path", folder=False)


def _run_files(
    args: argparse.Namespace, logdir: pathlib.Path | None, paths: _Paths
) -> list[tuple[pathlib.Path, str, str]]:
    """Where this run writes besides its model, as (folder, glob pattern, what): its Monitor log, this game's
    checkpoints, and its evaluations and best model."""
    places = []
    if paths.monitor is not None:
        places.append((paths.monitor, "*.monitor.csv", "its Monitor log"))
    if paths.checkpoints is not None:
        places.append((paths.checkpoints, f"acer_{args.env.split('/')[-1]}_*_steps.zip", "its checkpoints"))
    if logdir is not None and paths.evaluations:
        places += [
            (logdir, "evaluations.npz", "its evaluations"),
            (logdir, "best_model.zip", "its best model"),
        ]
    return places


def _acer_settings(args: argparse.Namespace) -> dict[str, Any]:
    """ACER's constructor arguments from the command line (all but the policy and the env)."""
    return dict(
        learning_rate=args.learning_rate,
        lr_schedule=args.lr_schedule,
        buffer_size=args.buffer_size,
        replay_ratio=args.replay_ratio,
        replay_start=args.replay_start,
        num_procs=args.torch_threads,
        verbose=args.verbose,
        tensorboard_log=args.logdir or None,
        seed=args.seed,
        device=args.device,
    )


def main(argv: list[str] | None = None) -> pathlib.Path:
    """Parse ``argv``, train, save; returns the path of the saved model."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.envs_per_actor is not None and args.actors is not None:  # the model's envs are one actor's
        args.n_envs = args.envs_per_actor
    logdir = pathlib.Path(args.logdir) if args.logdir else None
    paths = _paths(args, logdir)
    try:
        check_actor_options(args)
        _check_options(args, logdir, paths)
        # One run at a time where runs write (the run lock of `sb3-acer train`): a second one would mix its
        # logs with the first one's, and take the files the first set aside for a stopped run's.
        folder = logdir or paths.final.parent
        busy = f"another run is writing to {folder}; wait for it to end, or choose another --logdir or "
        busy += "--save-path"
        with run_lock(folder, busy=busy):
            earlier = _check_earlier_run(args, logdir, paths)
            return _train(args, logdir, paths, earlier)
    except (ValueError, ImportError, CLIError) as error:
        # one line, exit status 2: before anything is made or written, or (out of memory) put back
        parser.error(str(error))
    except KeyboardInterrupt:  # while it loads or starts (training saves the model itself)
        print("interrupted", file=sys.stderr)
        raise SystemExit(130) from None


def _check_earlier_run(
    args: argparse.Namespace, logdir: pathlib.Path | None, paths: _Paths
) -> list[pathlib.Path]:
    """The files of an earlier run that this one replaces (with --overwrite; without, their existence is an
    error), or would leave beside its own as if they were its own: the model and the run's files
    (:func:`_run_files`); files it does not write (another game's checkpoints, the evaluations of a run that
    does not evaluate) are not its to replace. The model must not be saved over one of the run's own files,
    and no earlier run's file may still be set aside by a run that was killed before it could put it back."""
    target = paths.final.resolve()  # a link is followed: its target is what the save replaces
    earlier = [paths.final] if paths.final.exists() else []
    for folder, pattern, what in _run_files(args, logdir, paths):
        if target.parent == folder.resolve() and fnmatch.fnmatch(target.name, pattern):
            raise ValueError(f"--save-path {paths.final} is where this run writes {what}; choose another")
        check_nothing_set_aside(set_aside_files(folder, pattern))
        earlier += sorted(folder.glob(pattern))
    if earlier and not args.overwrite:
        listed = ", ".join(str(path) for path in earlier[:3]) + (", ..." if len(earlier) > 3 else "")
        raise ValueError(
            f"{listed} exist{'s' if len(earlier) == 1 else ''}: pass --overwrite to replace "
            f"{'it' if len(earlier) == 1 else 'them'}, or choose another --logdir or --save-path"
        )
    check_replaceable(earlier)
    return earlier


def _train(
    args: argparse.Namespace, logdir: pathlib.Path | None, paths: _Paths, earlier: list[pathlib.Path]
) -> pathlib.Path:
    """Train and save. With --overwrite, the earlier run's files (but its model, which the new one replaces
    when it is saved) are set aside as hidden ``.<name>.previous`` files until this run has trained
    something, and put back if it has not (a failure or Ctrl-C before the first step)."""
    places = [(folder, pattern) for folder, pattern, _ in _run_files(args, logdir, paths)]
    files = RunFiles(places, [path for path in earlier if path != paths.final])
    try:
        # The folders the run writes in (CheckpointCallback would make its own at the start of training).
        for folder in (paths.monitor, paths.checkpoints):
            if folder is not None:
                files.make_folders(folder)
        return _run(args, logdir, paths, files)
    except BaseException:
        files.abandon()  # nothing, once the run has something to save
        raise


def _run(
    args: argparse.Namespace, logdir: pathlib.Path | None, paths: _Paths, files: RunFiles
) -> pathlib.Path:
    """Make the games and the model, train, and save (:func:`~sb3_acer.cli.train.run.finish_run`); the
    run's log folder is added to ``files``. With ``--actors`` the learner's own games are not played
    (they give the model its spaces) and the actors' episodes go to the Monitor log."""
    actors = actor_settings(
        args, TrainEnvFactory(EnvInfo(args.env, atari=True), sampler=args.sampler), paths.monitor
    )
    env, model = _start(args, None if actors is not None else paths.monitor)
    eval_env: VecEnv | None = None
    logger: Logger | None = None
    try:
        logger = _logger(args, logdir, model, files)
        if args.eval_freq > 0:
            eval_env = make_atari_vec_env(
                args.env,
                args.n_eval_episodes,
                seed=args.seed + 10_000,
                sampler=args.sampler,
                num_threads=args.env_threads,
            )
        if args.verbose:
            buffer = model.replay_buffer
            size = f"{buffer.nbytes / 1e9:.2f} GB ({type(buffer).__name__})" if buffer is not None else "none"
            print(
                f"ACER on {args.env}: {args.n_envs} envs ({args.sampler}), {args.num_timesteps} steps "
                f"({4 * args.num_timesteps} frames), replay memory {size}, device {model.device}"
            )
        with ray_session(actors):
            interrupted, failure = learn_until_stopped(
                model,
                args.verbose,
                total_timesteps=args.num_timesteps,
                callback=_callbacks(args, logdir, paths, eval_env),
                log_interval=args.log_interval,
                progress_bar=not args.no_progress_bar,
                actors=actors,
            )
    finally:
        env.close()
        if eval_env is not None:
            eval_env.close()
        if logger is not None:
            logger.close()  # flushes progress.csv and the TensorBoard events
    _finish(model, interrupted, failure, files, paths.final)
    if args.verbose:
        print(f"saved the model to {paths.final}")
    return paths.final


def _start(args: argparse.Namespace, monitor: pathlib.Path | None) -> tuple[VecEnv, ACER]:
    """The training games (their episodes in ``monitor``, if given) and the model; a replay memory larger
    than the machine's is a :class:`UsageError` that says which options to lower."""
    env = make_atari_vec_env(
        args.env,
        args.n_envs,
        seed=args.seed,
        sampler=args.sampler,
        monitor_dir=None if monitor is None else str(monitor),
        num_threads=args.env_threads,
    )
    try:
        return env, ACER(POLICIES[args.policy], env, **_acer_settings(args))
    except MemoryError as error:
        env.close()
        raise UsageError(
            f"cannot build the model: {one_line(error)}; lower --buffer-size or --n-envs"
        ) from None
    except BaseException:
        env.close()
        raise


def _logger(
    args: argparse.Namespace, logdir: pathlib.Path | None, model: ACER, files: RunFiles
) -> Logger | None:
    """With ``--logdir``, the model's logger: TensorBoard and CSV (``progress.csv``, as SB2's logger wrote)
    in ``<logdir>/ACER_<n>``, SB3's folder, which is added to the run's ``files``."""
    if logdir is None:
        return None
    run = logdir / f"ACER_{get_latest_run_id(str(logdir), 'ACER') + 1}"
    files.logs.append(run)
    logger = configure(str(run), ["stdout", "csv", "tensorboard"] if args.verbose else ["csv", "tensorboard"])
    model.set_logger(logger)
    return logger


def _callbacks(
    args: argparse.Namespace, logdir: pathlib.Path | None, paths: _Paths, eval_env: VecEnv | None
) -> list[BaseCallback]:
    """The checkpoints (every ``--checkpoint-freq`` steps) and the evaluations (on ``eval_env``)."""
    callbacks: list[BaseCallback] = []
    if paths.checkpoints is not None:
        callbacks.append(
            CheckpointCallback(
                save_freq=max(args.checkpoint_freq // args.n_envs, 1),
                save_path=str(paths.checkpoints),
                name_prefix=f"acer_{args.env.split('/')[-1]}",
                verbose=args.verbose,
            )
        )
    if eval_env is not None:
        callbacks.append(
            EvalCallback(
                eval_env,
                n_eval_episodes=args.n_eval_episodes,
                eval_freq=max(args.eval_freq // args.n_envs, 1),
                log_path=str(logdir) if logdir else None,
                best_model_save_path=str(logdir) if logdir else None,
                deterministic=args.eval_deterministic,
                verbose=args.verbose,
            )
        )
    return callbacks


def _finish(
    model: ACER, interrupted: bool, failure: Exception | None, files: RunFiles, final: pathlib.Path
) -> None:
    """Save what was trained at ``final`` (:func:`~sb3_acer.cli.train.run.finish_run`); ``SystemExit`` with
    one line when nothing was trained, the model could not be saved there, or a failure stopped training."""

    def save(path: pathlib.Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        model.save(path)

    try:
        finish_run(model, interrupted, failure, files, save, final)
    except NothingSaved:
        raise SystemExit(130) from None
    except CLIError as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(1) from None

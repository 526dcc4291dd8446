"""A ``train`` run in its locked run folder: the earlier run's files set aside (``--overwrite``), the envs
and the model built, trained (with evaluations and the best model under ``--eval-freq``), saved with the
run's description and statistics, and summed up. A run that trains nothing keeps nothing and puts the
earlier run's files back; a model that cannot be saved where it should is saved elsewhere. ``run_atari``
trains and ends its runs through the same steps (:func:`learn_until_stopped`, :func:`finish_run`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import pathlib
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
from stable_baselines3.common.callbacks import BaseCallback, EvalCallback
from stable_baselines3.common.utils import safe_mean
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

import sb3_acer
from sb3_acer.acer.acer import ACER
from sb3_acer.cli.actors import ray_session
from sb3_acer.cli.environments import make_env
from sb3_acer.cli.errors import PROG, CLIError, UsageError, count, one_line, stopped_by
from sb3_acer.cli.imports import top_level
from sb3_acer.cli.normalization import finite_statistics, save_normalization
from sb3_acer.cli.run_folder import (
    RunFiles,
    check_nothing_set_aside,
    check_replaceable,
    save_elsewhere,
    set_aside_files,
    set_aside_name,
    sidecar,
)
from sb3_acer.cli.train.settings import TrainSettings
from sb3_acer.common.save_util.model_file import saving_through_ctrl_c, write_atomically
from sb3_acer.distributed import RayActors
from sb3_acer.envs.atari import SAMPLERS, make_atari_vec_env
from sb3_acer.presets import ENV_WRAPPERS, evaluation_normalization

__all__ = [
    "RUN_FILES",
    "BestModelSaver",
    "NothingSaved",
    "finish_run",
    "learn_until_stopped",
    "model_files",
    "previous_files",
    "run",
    "run_env",
    "save_trained",
    "training_env",
]

#: The files a ``train`` run writes in its run folder (``--save-path`` moves the three ``model.*`` ones).
RUN_FILES = (
    "*.monitor.csv",
    "evaluations.npz",
    "model.zip",
    "model.json",
    "model.vecnormalize.npz",
    "best_model.zip",
    "best_model.json",
    "best_model.vecnormalize.npz",
)


def model_files(model_path: pathlib.Path) -> list[pathlib.Path]:
    """The model file and the two files ``train`` writes beside it."""
    return [model_path, sidecar(model_path, ".json"), sidecar(model_path, ".vecnormalize.npz")]


def previous_files(run_dir: pathlib.Path, model_path: pathlib.Path, overwrite: bool) -> list[pathlib.Path]:
    """The files of an earlier run that this one would replace (each once, however it is spelt); without
    ``overwrite`` their existence is a usage error, so that nothing a user has is replaced by accident.
    With it, each must be a file that can be removed, so that none is removed unless all can be. An earlier
    run's file that a killed run set aside and never put back is in the way either way (as in
    ``run_atari``): this run would set its own aside over it."""
    check_nothing_set_aside(
        [stale for pattern in RUN_FILES for stale in set_aside_files(run_dir, pattern)]
        + [aside for path in model_files(model_path) if (aside := set_aside_name(path)).exists()]
    )
    in_run_dir = sorted({path for pattern in RUN_FILES for path in run_dir.glob(pattern)})
    if in_run_dir and not overwrite:
        raise UsageError(
            f"{run_dir} already holds a run; pass --overwrite to replace it, or choose another --seed "
            "or --log-folder"
        )
    seen = {path.resolve() for path in in_run_dir}
    beside_model = [path for path in model_files(model_path) if path.exists() and path.resolve() not in seen]
    if beside_model and not overwrite:
        raise UsageError(
            f"{beside_model[0]} exists; pass --overwrite to replace it, or choose another --save-path"
        )
    check_replaceable([*in_run_dir, *beside_model])
    return in_run_dir + beside_model


def run_env(
    settings: TrainSettings,
    n_envs: int,
    seed: int,
    monitor_dir: pathlib.Path | None = None,
    subprocesses: bool = False,
) -> VecEnv:
    """``n_envs`` envs of the run: an Atari game on ale-vector by
    :func:`~sb3_acer.envs.atari.make_atari_vec_env`, any other env (and Atari on SB3's wrappers) by
    :func:`~sb3_acer.cli.environments.make_env` with the run's wrappers and env kwargs."""
    if settings.sampler == SAMPLERS[0]:
        monitor = None if monitor_dir is None else str(monitor_dir)
        return make_atari_vec_env(settings.env.name, n_envs, seed=seed, monitor_dir=monitor)
    return make_env(
        settings.env,
        n_envs,
        seed,
        monitor_dir=monitor_dir,
        wrappers=settings.env_wrapper,
        env_kwargs=settings.env_kwargs,
        subprocesses=subprocesses,
    )


def training_env(
    settings: TrainSettings, n_envs: int, monitor_dir: pathlib.Path | None = None, subprocesses: bool = False
) -> VecEnv:
    """The run's training env: ``n_envs`` envs (:func:`run_env`), in ``VecNormalize`` when the run
    normalises."""
    env = run_env(settings, n_envs, settings.seed, monitor_dir, subprocesses)
    if not settings.normalize:
        return env
    try:
        gamma = float(settings.hyperparameters.get("gamma", 0.99))
        return VecNormalize(env, gamma=gamma, **settings.normalize_kwargs)
    except BaseException:
        env.close()
        raise


class BestModelSaver(BaseCallback):
    """Given to an ``EvalCallback`` as ``callback_on_new_best``: saves the model at each new best mean return
    with ``save(path)`` (the model, its description and statistics) through Ctrl-C, which then stops
    training once the files are written. A save that fails removes the best model's files (they would no
    longer belong together) and training goes on, with a warning."""

    def __init__(self, path: pathlib.Path, save: Callable[[pathlib.Path], object]) -> None:
        super().__init__()
        self.path = path
        self.save = save
        self.saved_at: int | None = None  # the step of the best model on disk

    def _on_step(self) -> bool:
        with saving_through_ctrl_c() as pressed:
            try:
                self.save(self.path)
                self.saved_at = self.num_timesteps
            except (OSError, ValueError) as error:  # a full disk; statistics that overflowed
                self.saved_at = None
                for path in model_files(self.path):
                    with contextlib.suppress(OSError):
                        path.unlink()
                reason = (error.strerror if isinstance(error, OSError) else None) or one_line(error)
                print(
                    f"warning: cannot save the best model to {self.path}: {reason}; training goes on "
                    "without it",
                    file=sys.stderr,
                )
        if pressed:
            raise KeyboardInterrupt
        return True


def _close(env: VecEnv | None) -> None:
    if env is not None:
        with contextlib.suppress(Exception):  # an env that failed may fail to close too
            env.close()


def _save_run(
    model: ACER, env: VecEnv, settings: TrainSettings, run_dir: pathlib.Path, model_path: pathlib.Path
) -> pathlib.Path | None:
    """Save the model, its normalisation statistics (returns their path, if any) and the run description
    (``model.json``) at ``model_path``.

    Raises:
        ValueError: the statistics hold NaN or inf (enjoy could not use them); nothing is written.
    """
    if isinstance(env, VecNormalize) and not finite_statistics(env):
        raise ValueError("the normalisation statistics hold NaN or inf")
    model_path.parent.mkdir(parents=True, exist_ok=True)
    model.save(model_path)
    normalization_path = None
    if isinstance(env, VecNormalize):
        normalization_path = sidecar(model_path, ".vecnormalize.npz")
        save_normalization(env, normalization_path)
    run_info = dict(
        env_id=settings.env.env_id,
        gym_packages=list(settings.env.packages),
        atari=settings.env.atari,
        n_envs=settings.n_envs,
        total_timesteps=settings.timesteps,
        num_timesteps=int(model.num_timesteps),
        policy=settings.policy,
        normalize=settings.normalize,
        normalize_kwargs=settings.normalize_kwargs,
        env_wrapper=[{spec.name: spec.kwargs} for spec in settings.env_wrapper],
        env_kwargs=_json_safe(settings.env_kwargs),
        seed=settings.seed,
        hyperparameters=_json_safe(settings.hyperparameters),
        run_dir=str(run_dir),
        sb3_acer_version=sb3_acer.__version__,
    )
    description = (json.dumps(run_info, indent=2) + "\n").encode()
    write_atomically(sidecar(model_path, ".json"), lambda file: file.write(description))
    return normalization_path


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda obj: getattr(obj, "__name__", repr(obj))))


def run(
    settings: TrainSettings,
    args: argparse.Namespace,
    run_dir: pathlib.Path,
    run_name: str,
    model_path: pathlib.Path,
    actors: RayActors | None = None,
) -> int:
    """The run itself, in the locked run folder: the earlier run's files are set aside, the model
    trained (by ``actors`` if given), saved and summed up; returns the exit code (130 when Ctrl-C stopped
    it)."""
    # Again, now that no other run can write here: a run of the same folder may have ended since the check.
    previous = previous_files(run_dir, model_path, args.overwrite)
    # --overwrite: the earlier run's files go, so that none of them is taken for this run's (a run with
    # fewer envs would leave stale Monitor ranks; a model.vecnormalize.npz would be applied by enjoy).
    # They are set aside (renamed) until the run has trained something, and put back if it has not.
    files = RunFiles([(run_dir, pattern) for pattern in RUN_FILES], previous)
    try:
        files.make_folders(run_dir)
    except OSError as error:
        files.abandon()
        raise CLIError(f"cannot prepare the run: {one_line(error)}") from None
    env, model = _start(settings, args, run_dir, files, monitor=actors is None)
    eval_callback, on_best = _evaluation(settings, args, run_dir, model, env)
    start = time.perf_counter()
    with ray_session(actors):
        interrupted, failure = learn_until_stopped(
            model,
            args.verbose,
            total_timesteps=settings.timesteps,
            callback=[] if eval_callback is None else [eval_callback],
            progress_bar=not args.no_progress_bar,
            tb_log_name=run_name,
            actors=actors,
        )
    elapsed = time.perf_counter() - start
    # A NaN observation, or one so large that the variance overflowed: enjoy could not use the statistics.
    unusable = isinstance(env, VecNormalize) and not finite_statistics(env)
    saved: list[pathlib.Path | None] = []  # the statistics' path, once the model is saved
    try:
        pressed = finish_run(
            model,
            interrupted,
            failure,
            files,
            lambda path: saved.append(_save_run(model, env, settings, run_dir, path)),
            model_path,
            rescue=("model.zip", [run_dir]),
            unusable="the normalisation statistics hold NaN or inf" if unusable else None,
        )
    except NothingSaved:
        return 130
    finally:
        _close(env)
    _summary(model, settings, elapsed, eval_callback, on_best, run_dir, model_path, saved[0])
    return 130 if interrupted or pressed else 0


class NothingSaved(Exception):
    """Ctrl-C stopped a run that had nothing to save, which :func:`finish_run` said on stderr: exit code
    130."""


def finish_run(
    model: ACER,
    interrupted: bool,
    failure: Exception | None,
    files: RunFiles,
    save: Callable[[pathlib.Path], object],
    path: pathlib.Path,
    rescue: tuple[str, list[pathlib.Path]] | None = None,
    unusable: str | None = None,
) -> bool:
    """The end of a run that :func:`learn_until_stopped` stopped, ``train``'s and ``run_atari``'s: a model
    that trained nothing (or that is ``unusable``, said why) is not saved, and the run's ``files`` are
    abandoned; otherwise they are kept and the model saved by :func:`save_trained`, whose Ctrl-C it returns.

    Raises:
        NothingSaved: Ctrl-C stopped the run before it had anything to save.
        CLIError: a failure stopped the run, or the model could not be saved at ``path``.
    """
    if (failure is not None or interrupted) and model.num_timesteps == 0:
        unusable = "nothing was trained"
    if unusable is not None:
        files.abandon()
        if interrupted and failure is None:
            when = "before the first step" if model.num_timesteps == 0 else f"at {model.num_timesteps} steps"
            print(f"interrupted {when}: {unusable}, so no model was saved", file=sys.stderr)
            raise NothingSaved
        raise CLIError(f"{stopped_by(failure, model.num_timesteps)}{unusable}, so no model was saved")
    if interrupted:
        print(f"\ninterrupted at {model.num_timesteps} steps; saving the model", flush=True)
    files.keep()
    return save_trained(model, save, path, failure, rescue)


def learn_until_stopped(model: ACER, verbose: int, **learn_kwargs: Any) -> tuple[bool, Exception | None]:
    """``model.learn(**learn_kwargs)`` until it is done, Ctrl-C stops it (``interrupted``) or the env, a
    worker or a callback fails hours in (``failure``, whose traceback is printed when ``verbose``): what was
    trained is kept either way. Returns ``(interrupted, failure)``."""
    try:
        model.learn(**learn_kwargs)
    except KeyboardInterrupt:
        return True, None
    except Exception as error:
        if verbose:
            traceback.print_exc()
        return False, error
    return False, None


def save_trained(
    model: ACER,
    save: Callable[[pathlib.Path], object],
    path: pathlib.Path,
    failure: Exception | None,
    rescue: tuple[str, list[pathlib.Path]] | None = None,
) -> bool:
    """Save what was trained with ``save(path)`` through Ctrl-C (returns whether it was pressed); where
    ``path`` refuses it (the disk filled up, the folder went away), as ``rescue``'s name (default: the same)
    in its folders or a temporary one.

    Raises:
        CLIError: the model could not be saved at ``path`` (the line says where it is), or ``failure``
            stopped training (the line says so, and where the model trained so far is).
    """
    stopped = stopped_by(failure, model.num_timesteps)
    trained = "the trained model" if failure is None else "the model trained so far"
    with saving_through_ctrl_c() as pressed:
        try:
            save(path)
        except OSError as error:
            reason = error.strerror or one_line(error)
            name, folders = rescue or (path.name, [])
            elsewhere = save_elsewhere(save, path, name, folders)
            if elsewhere is None:
                raise CLIError(
                    f"{stopped}cannot save the model to {path} nor anywhere else: {reason}"
                ) from None
            raise CLIError(
                f"{stopped}cannot save the model to {path}: {reason}; {trained} is in {elsewhere}"
            ) from None
    if failure is not None:
        raise CLIError(f"{stopped}{trained} is in {path}")
    return bool(pressed)


def _start(
    settings: TrainSettings,
    args: argparse.Namespace,
    run_dir: pathlib.Path,
    files: RunFiles,
    monitor: bool = True,
) -> tuple[VecEnv, ACER]:
    """The run's envs (Monitor logs in ``run_dir`` if ``monitor``; with actors the learner writes them) and
    model. If they cannot be made, the run's ``files`` are abandoned (:meth:`RunFiles.abandon`)."""
    env: VecEnv | None = None
    try:
        env = training_env(
            settings,
            settings.n_envs,
            monitor_dir=run_dir if monitor else None,
            subprocesses=args.vec_env == "subproc",
        )
        model = ACER(
            settings.policy,
            env,
            seed=settings.seed,
            verbose=args.verbose,
            tensorboard_log=args.tensorboard_log,
            **settings.hyperparameters,
        )
    except BaseException as error:  # Ctrl-C included
        _close(env)
        files.abandon()
        if isinstance(error, CLIError) or not isinstance(error, Exception):
            raise
        if isinstance(error, OSError):
            raise CLIError(f"cannot write the run: {one_line(error)}") from None
        raise UsageError(f"invalid settings: {one_line(error)}") from None
    return env, model


def _evaluation(
    settings: TrainSettings, args: argparse.Namespace, run_dir: pathlib.Path, model: ACER, env: VecEnv
) -> tuple[EvalCallback | None, BestModelSaver | None]:
    """``--eval-freq``: the callback evaluating the model on a separate env, and the one saving the best."""
    if not args.eval_freq:
        return None, None
    eval_env = run_env(settings, 1, settings.seed + 1000)
    if isinstance(env, VecNormalize):
        # EvalCallback syncs its statistics with the training env's before each evaluation.
        eval_env = evaluation_normalization(eval_env, like=env)
    best_path = run_dir / "best_model.zip"
    on_best = BestModelSaver(best_path, lambda path: _save_run(model, env, settings, run_dir, path))
    eval_callback = EvalCallback(
        eval_env,
        # The best model is saved with its description and the statistics of that moment (the zoo saves
        # it alone), so that enjoy plays it as it was evaluated.
        callback_on_new_best=on_best,
        n_eval_episodes=args.eval_episodes,
        eval_freq=max(args.eval_freq // settings.n_envs, 1),
        log_path=str(run_dir),
        deterministic=not settings.env.atari,  # as the zoo: sampled actions on Atari (no stuck games)
        verbose=1,
    )
    return eval_callback, on_best


def _summary(
    model: ACER,
    settings: TrainSettings,
    elapsed: float,
    eval_callback: EvalCallback | None,
    on_best: BestModelSaver | None,
    run_dir: pathlib.Path,
    model_path: pathlib.Path,
    normalization_path: pathlib.Path | None,
) -> None:
    """What the run trained, how it did, and where its files are."""
    episodes = list(model.ep_info_buffer or [])
    print()
    print(f"Trained on {settings.env.env_id}: {model.num_timesteps} env steps in {elapsed:.1f} s")
    if episodes:
        print(
            f"  mean training return (last {len(episodes)} episodes): "
            f"{safe_mean([episode['r'] for episode in episodes]):.2f}"
        )
    else:
        print("  mean training return: no episode finished")
    if eval_callback is None:
        print("  evaluation: not run (pass --eval-freq)")
    elif not eval_callback.evaluations_results:
        print("  evaluation: none yet (--eval-freq is larger than the steps trained)")
    else:
        last = np.asarray(eval_callback.evaluations_results[-1])
        at_step = eval_callback.evaluations_timesteps[-1]
        print(
            f"  evaluation return ({count(len(last), 'episode')} at step {at_step}): "
            f"{last.mean():.2f} +/- {last.std():.2f} (best {eval_callback.best_mean_reward:.2f})"
        )
    if eval_callback is not None and on_best is not None and on_best.saved_at is not None:
        print(
            f"  best model: {on_best.path} (evaluation return "
            f"{eval_callback.best_mean_reward:.2f} at step {on_best.saved_at})"
        )
    print(f"  model: {model_path}")
    if normalization_path is not None:
        print(f"  normalisation statistics: {normalization_path}")
    print(f"  Monitor logs: {run_dir}  (plot: {PROG} plot {run_dir})")
    # enjoy imports no module that only model.json names: the command names them again
    wrapper_modules = [spec.name for spec in settings.env_wrapper if spec.name not in ENV_WRAPPERS]
    packages = " ".join(
        dict.fromkeys(top_level(module) for module in (*settings.env.modules, *wrapper_modules))
    )
    print(f"  watch it: {PROG} enjoy {model_path}" + (f" --gym-packages {packages}" if packages else ""))

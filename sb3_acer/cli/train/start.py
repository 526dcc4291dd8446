"""``sb3-acer train ENV_ID``: its options, and everything checked before anything is written (the paths,
the seed, the settings, by building the model once on a single env without logs); then the run folder is
locked and the run (:mod:`sb3_acer.cli.train.run`) starts."""

from __future__ import annotations

import argparse
import contextlib
import pathlib
from typing import Any

from gymnasium import spaces
from stable_baselines3.common.preprocessing import is_image_space
from stable_baselines3.common.torch_layers import NatureCNN
from stable_baselines3.common.vec_env import VecEnv

from sb3_acer.acer.acer import ACER
from sb3_acer.cli.actors import TrainEnvFactory, actor_settings, check_actor_options
from sb3_acer.cli.arguments import check_device
from sb3_acer.cli.environments import torch_threads
from sb3_acer.cli.errors import PROG, CLIError, UsageError, check_optional, check_progress_bar, one_line
from sb3_acer.cli.run_folder import check_can_create, in_folder, model_file, run_lock
from sb3_acer.cli.train.run import model_files, previous_files, run, training_env
from sb3_acer.cli.train.settings import (
    TrainSettings,
    train_settings,
)
from sb3_acer.envs.atari import SAMPLERS
from sb3_acer.presets import (
    WrapperSpec,
)

__all__ = ["cmd_train"]


def cmd_train(args: argparse.Namespace) -> int:
    settings = train_settings(args)
    check_actor_options(args, settings.normalize)
    if args.envs_per_actor is not None:  # with actors, the model's envs are one actor's
        settings = settings._replace(n_envs=args.envs_per_actor)
    # The small MLPs are several times faster on one thread than with threads competing for the cores;
    # --hyperparams num_procs=N chooses the count.
    single = settings.policy == "MlpPolicy" and "num_procs" not in settings.hyperparameters
    with torch_threads(1 if single else None):
        return _train(settings, args)


def _train(settings: TrainSettings, args: argparse.Namespace) -> int:
    if not args.no_progress_bar:
        check_progress_bar()
    if args.tensorboard_log is not None:
        check_optional("tensorboard", "--tensorboard-log", "pip install tensorboard")
    env_name = settings.env.name.replace("/", "-")
    run_name = f"{env_name}_{settings.seed}"
    run_dir = pathlib.Path(args.log_folder) / run_name
    model_path = (
        model_file(in_folder(args.save_path, "model.zip")) if args.save_path else run_dir / "model.zip"
    )
    # Everything is checked before anything is written: a failed command leaves the files as they were.
    check_can_create(run_dir, "the run folder", folder=True)
    if model_path.suffix != ".zip":
        raise UsageError(
            f"--save-path {args.save_path}: the model file must end in .zip (or have no suffix), since "
            "its .json and .vecnormalize.npz are written beside it"
        )
    for path in model_files(model_path):
        check_can_create(path, "--save-path", folder=False)
    if args.eval_freq and model_path.resolve() == (run_dir / "best_model.zip").resolve():
        raise UsageError(
            f"--save-path {args.save_path}: the run keeps its best model there (--eval-freq); choose another"
        )
    if args.tensorboard_log is not None:
        check_can_create(pathlib.Path(args.tensorboard_log), "--tensorboard-log", folder=True)
    previous_files(run_dir, model_path, args.overwrite)  # checked again once the run folder is locked
    _check_model(settings)
    print(settings.source)
    print(
        f"Training ACER ({settings.policy}) on {settings.env.env_id}: {settings.timesteps} steps, "
        f"{settings.n_envs} envs{' (SafeSubprocVecEnv)' if args.vec_env == 'subproc' else ''}"
        + (f" ({settings.sampler})" if settings.sampler else "")
        + (f" on each of {args.actors} Ray actors" if args.actors else "")
        + ", "
        f"seed {settings.seed}"
        + (", VecNormalize" if settings.normalize else "")
        + (f"({settings.normalize_kwargs})" if settings.normalize and settings.normalize_kwargs else "")
        + "".join(f", {_describe(spec)}" for spec in settings.env_wrapper)
        + (f", {settings.hyperparameters}" if settings.hyperparameters else "")
    )
    busy = f"another {PROG} train is writing to {run_dir}; wait for it to end, or choose another --seed or "
    # On ale-vector (run_env's split); on SB3's wrappers an Atari game is made as any other env.
    sampler = settings.sampler if settings.sampler == SAMPLERS[0] else None
    factory = TrainEnvFactory(settings.env, settings.env_wrapper, settings.env_kwargs, sampler)
    actors = actor_settings(args, factory, run_dir)
    with run_lock(run_dir, busy=busy + "--log-folder"):
        return run(settings, args, run_dir, run_name, model_path, actors)


def _check_policy_fits(
    policy: str, env_id: str, observation_space: spaces.Space, hyperparameters: dict[str, Any]
) -> None:
    """A Cnn policy needs image observations, unless ``policy_kwargs`` names another features extractor
    than NatureCNN (e.g. :class:`~sb3_acer.common.policies.MinAtarCNN` for MinAtar's float grids)."""
    policy_kwargs = hyperparameters.get("policy_kwargs")
    extractor = policy_kwargs.get("features_extractor_class") if isinstance(policy_kwargs, dict) else None
    if extractor not in (None, NatureCNN):
        return
    if policy.startswith("Cnn") and not is_image_space(observation_space, check_channels=False):
        shape = getattr(observation_space, "shape", None)
        raise UsageError(
            f"{policy} needs image observations (uint8, [H, W, C] or [C, H, W]); {env_id} observes "
            f"{type(observation_space).__name__} of shape {shape}: use an Mlp policy"
        )


def _check_model(settings: TrainSettings) -> None:
    """Build the run's model once on a single env without logs, so that every setting is checked before the
    run folder, the logs or an earlier run's files are touched."""
    if "device" in settings.hyperparameters:
        try:
            check_device(settings.hyperparameters["device"])
        except ValueError as error:
            raise UsageError(f"--hyperparams device: {error}") from None
    env: VecEnv | None = None
    try:
        env = training_env(settings, n_envs=1)
        _check_policy_fits(
            settings.policy, settings.env.env_id, env.observation_space, settings.hyperparameters
        )
        ACER(settings.policy, env, seed=settings.seed, **settings.hyperparameters)
    except CLIError:
        raise
    except Exception as error:  # whatever the model's or the env's constructor refuses
        raise UsageError(f"invalid settings: {one_line(error)}") from None
    finally:
        if env is not None:
            with contextlib.suppress(Exception):  # the check is over; an env's own close is not a setting
                env.close()


def _describe(spec: WrapperSpec) -> str:
    name = spec.name.rpartition(".")[2]
    return f"{name}({spec.kwargs})" if spec.kwargs else name

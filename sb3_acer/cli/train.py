"""``sb3-acer train ENV_ID``: its options, and everything checked before anything is written (the paths,
the seed, the settings, by building the model once on a single env without logs); then the run folder is
locked and the run (:mod:`sb3_acer.cli.training`) starts."""

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
from sb3_acer.cli.actors import TrainEnvFactory, actor_settings, add_actor_options, check_actor_options
from sb3_acer.cli.arguments import add_gym_packages, check_device, non_negative_int, positive_int, random_seed
from sb3_acer.cli.environments import torch_threads
from sb3_acer.cli.errors import PROG, CLIError, UsageError, check_optional, one_line
from sb3_acer.cli.run_folder import check_can_create, in_folder, model_file, run_lock
from sb3_acer.cli.settings import (
    ATARI_N_ENVS,
    ATARI_TIMESTEPS,
    DEFAULT_N_ENVS,
    DEFAULT_TIMESTEPS,
    TrainSettings,
    train_settings,
)
from sb3_acer.cli.training import model_files, previous_files, run, training_env
from sb3_acer.presets import (
    ATARI_ENTRY,
    ATARI_FRAME_STACK,
    PresetError,
    WrapperSpec,
    available_presets,
    has_atari_defaults,
)

__all__ = ["add_parser", "cmd_train"]

TRAIN_EXAMPLES = f"""\
examples:
  {PROG} train CartPole-v1
  {PROG} train CartPole-v1 --seed 1 --timesteps 20000 --eval-freq 5000
  {PROG} train Acrobot-v1 --n-envs 8 --hyperparams ent_coef=0.01 lr_schedule=constant normalize=True
  {PROG} train LunarLander-v3 --hyperparams "policy_kwargs={{'net_arch': {{'pi': [128], 'qf': [256]}}}}"
  {PROG} train FrozenLake-v1 --env-kwargs is_slippery=False
  {PROG} train PongNoFrameskip-v4 --tensorboard-log tb/
  {PROG} train CartPole-v1 --actors 2 --envs-per-actor 4

Presets: {{presets}}.
Without one, ACER's defaults are used with {DEFAULT_N_ENVS} envs, {DEFAULT_TIMESTEPS} steps and lr_schedule
constant (Atari: {ATARI_N_ENVS} envs, AtariWrapper, {ATARI_FRAME_STACK}-frame stack, CnnPolicy, lr_schedule
constant, {ATARI_TIMESTEPS} steps, as SB2's run_atari).
--hyperparams values are Python literals (1e-3, True, None, [64, 64], {{'net_arch': [32]}}), bare
words (linear) or the zoo's dict(...) strings, read without eval (constants, lists, tuples, dicts,
dict(key=value, ...) and class names only). Besides ACER's constructor arguments, 'normalize' turns
VecNormalize on: True, or a dict of its arguments ({{'norm_obs': False}}: rewards only), and
'env_wrapper' wraps each env, as in the zoo: TimeFeatureWrapper (sb3-contrib's: the remaining time as an
extra observation), None for no wrapper. Inside policy_kwargs, 'activation_fn' may name a torch.nn class
(ReLU, nn.ReLU) and 'optimizer_class' a torch.optim class (Adam) or RMSpropTFLike. As in the zoo,
learning_rate=lin_7e-4 is the linear schedule (learning_rate=7e-4, lr_schedule=linear)."""


def _train_epilog() -> str:
    """The train command's examples, with the presets read when the parser is built (not on import: a
    damaged preset file must not break the other commands)."""
    try:
        names = available_presets() + (
            [f"{ATARI_ENTRY} (defaults for Atari games)"] if has_atari_defaults() else []
        )
        presets = ", ".join(names) or "none"
    except PresetError as error:
        presets = f"none ({error})"
    return TRAIN_EXAMPLES.replace("{presets}", presets)


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
        check_optional("tqdm", "the progress bar", "pip install tqdm rich (or pass --no-progress-bar)")
        check_optional("rich", "the progress bar", "pip install tqdm rich (or pass --no-progress-bar)")
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
        + (f" on each of {args.actors} Ray actors" if args.actors else "")
        + ", "
        f"seed {settings.seed}"
        + (", VecNormalize" if settings.normalize else "")
        + (f"({settings.normalize_kwargs})" if settings.normalize and settings.normalize_kwargs else "")
        + "".join(f", {_describe(spec)}" for spec in settings.env_wrapper)
        + (f", {settings.hyperparameters}" if settings.hyperparameters else "")
    )
    busy = f"another {PROG} train is writing to {run_dir}; wait for it to end, or choose another --seed or "
    actors = actor_settings(
        args, TrainEnvFactory(settings.env, settings.env_wrapper, settings.env_kwargs), run_dir
    )
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


def add_parser(commands: Any) -> None:
    """Add the ``train`` command to ``commands`` (the subparsers of the ``sb3-acer`` parser)."""
    train = commands.add_parser(
        "train",
        help="train ACER on an environment (tuned preset when one exists)",
        description="Train ACER on ENV_ID with its tuned preset (or ACER's defaults), then save it.",
        epilog=_train_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    train.add_argument("env_id", metavar="ENV_ID", help="Gymnasium environment id, e.g. CartPole-v1")
    add_gym_packages(
        train, "import these packages first, as they register their environments (e.g. minigrid)"
    )
    train.add_argument("--n-envs", type=positive_int, help="parallel environments (default: preset)")
    train.add_argument("--timesteps", type=positive_int, help="environment steps, all envs (default: preset)")
    train.add_argument(
        "--seed", type=random_seed, default=0, help="random seed; also names the run folder (default 0)"
    )
    train.add_argument("--policy", choices=sorted(ACER.policy_aliases), help="policy (default: preset)")
    train.add_argument(
        "--hyperparams",
        nargs="+",
        action="extend",
        metavar="KEY=VALUE",
        help="override constructor arguments, e.g. ent_coef=0.01 lr_schedule=constant",
    )
    train.add_argument(
        "--env-kwargs",
        nargs="+",
        action="extend",
        metavar="KEY=VALUE",
        help="keyword arguments of gymnasium.make (the zoo's --env-kwargs), over the preset's env_kwargs, "
        "e.g. sutton_barto_reward=True; saved in model.json for enjoy",
    )
    train.add_argument(
        "--vec-env",
        choices=("dummy", "subproc"),
        default="dummy",
        help="dummy: the envs step in this process (default); subproc: each in its own process "
        "(SafeSubprocVecEnv, for envs slow to step), as the zoo's --vec-env",
    )
    add_actor_options(train)
    train.add_argument("--log-folder", default="logs", help="parent of the run folder (default: logs)")
    train.add_argument(
        "--save-path",
        help="model file, .zip, or a folder for model.zip (one that exists, or a name ending in /) "
        "(default: <run folder>/model.zip); its .json goes beside it",
    )
    train.add_argument("--tensorboard-log", metavar="DIR", help="write TensorBoard logs to DIR")
    train.add_argument(
        "--eval-freq",
        type=non_negative_int,
        default=0,
        metavar="STEPS",
        help="evaluate every STEPS env steps (all envs together) on a separate env; 0: never (default)",
    )
    train.add_argument("--eval-episodes", type=positive_int, default=5, help="episodes per evaluation")
    train.add_argument("--verbose", type=int, default=0, choices=(0, 1, 2), help="ACER's log output")
    train.add_argument("--no-progress-bar", action="store_true", help="no progress bar")
    train.add_argument("--overwrite", action="store_true", help="replace an existing run in the run folder")
    train.set_defaults(func=cmd_train)

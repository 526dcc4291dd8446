"""The options of ``sb3-acer train ENV_ID`` and its help, with the presets read when the parser is built."""

from __future__ import annotations

import argparse
from typing import Any

from sb3_acer.acer.acer import ACER
from sb3_acer.cli.actors import add_actor_options
from sb3_acer.cli.arguments import add_gym_packages, non_negative_int, positive_int, random_seed
from sb3_acer.cli.errors import PROG
from sb3_acer.cli.train.settings import ATARI_N_ENVS, ATARI_TIMESTEPS, DEFAULT_N_ENVS, DEFAULT_TIMESTEPS
from sb3_acer.cli.train.start import cmd_train
from sb3_acer.envs.atari import SAMPLERS
from sb3_acer.presets import (
    ATARI_ENTRY,
    ATARI_FRAME_STACK,
    PresetError,
    available_presets,
    has_atari_defaults,
)

__all__ = ["add_parser"]

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
constant (Atari: {ATARI_N_ENVS} envs on ale-py's vector env (--sampler) with DeepMind's
preprocessing, {ATARI_FRAME_STACK}-frame stack, CnnPolicy, lr_schedule constant, {ATARI_TIMESTEPS} steps, as
SB2's run_atari).
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
    train.add_argument(
        "--sampler",
        choices=SAMPLERS,
        help="Atari games: ale-vector, ale-py's threaded C++ vector env (as run_atari; the default "
        "wherever it serves the run); wrappers, SB3's AtariWrapper in a Python env per game (the default "
        "with env_kwargs, env_wrapper, --vec-env subproc or sticky actions, as ALE/...-v5 ids have)",
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

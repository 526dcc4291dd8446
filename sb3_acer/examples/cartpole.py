"""The main job of ``make run``: train ACER on CartPole-v1 with a progress bar, save, reload, evaluate."""

from __future__ import annotations

import argparse

import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_acer import ACER
from sb3_acer.cli.arguments import positive_int, random_seed
from sb3_acer.cli.errors import CLIError
from sb3_acer.cli.run_folder import check_can_create, in_folder, model_file
from sb3_acer.presets import load_preset


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__)
    preset = load_preset("CartPole-v1")
    parser.add_argument(
        "--timesteps",
        type=positive_int,
        default=preset.n_timesteps,
        help="environment steps to train for (default: the preset's, %(default)s)",
    )
    parser.add_argument("--seed", type=random_seed, default=0, help="random seed (default: %(default)s)")
    parser.add_argument(
        "--save-path",
        default="acer_cartpole.zip",
        help="where to save the model; .zip is added to a name without suffix, and a folder (one that "
        "exists, or a name ending in /) gets acer_cartpole.zip (default: %(default)s)",
    )
    parser.add_argument(
        "--eval-episodes", type=positive_int, default=10, help="evaluation episodes (default: %(default)s)"
    )
    parser.add_argument("--no-progress-bar", action="store_true", help="hide the progress bar")
    args = parser.parse_args(argv)
    save_path = model_file(in_folder(args.save_path, "acer_cartpole.zip"))
    try:  # before training, so that a mistyped path costs nothing
        check_can_create(save_path, "--save-path", folder=False)
    except CLIError as error:
        parser.error(str(error))

    th.set_num_threads(1)
    # The tuned preset (sb3_acer/presets/acer.yml): solves CartPole-v1 in about 15-20k steps.
    env = make_vec_env("CartPole-v1", n_envs=preset.n_envs, seed=args.seed)
    model = ACER(preset.policy, env, seed=args.seed, verbose=1, **preset.hyperparameters)
    model.learn(total_timesteps=args.timesteps, progress_bar=not args.no_progress_bar, log_interval=250)
    model.save(save_path)
    print(f"saved to {save_path}")

    loaded = ACER.load(save_path)
    eval_env = make_vec_env("CartPole-v1", n_envs=1, seed=args.seed + 1000)
    mean_return, std_return = evaluate_policy(
        loaded, eval_env, n_eval_episodes=args.eval_episodes, deterministic=True
    )
    print(f"evaluation over {args.eval_episodes} episodes: {mean_return:.1f} +/- {std_return:.1f}")
    return float(mean_return)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()

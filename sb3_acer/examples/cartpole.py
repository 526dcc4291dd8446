"""The main job of ``make run``: train ACER on CartPole-v1 with a progress bar, save, reload, evaluate."""

from __future__ import annotations

import argparse

import torch as th
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy

from sb3_acer import ACER
from sb3_acer.presets import load_preset


def main(argv: list[str] | None = None) -> float:
    parser = argparse.ArgumentParser(description=__doc__)
    preset = load_preset("CartPole-v1")
    parser.add_argument(
        "--timesteps", type=int, default=preset.n_timesteps, help="environment steps to train for (preset)"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save-path", default="acer_cartpole.zip", help="where to save the model")
    parser.add_argument("--eval-episodes", type=int, default=10)
    parser.add_argument("--no-progress-bar", action="store_true")
    args = parser.parse_args(argv)

    th.set_num_threads(1)
    # The tuned preset (sb3_acer/presets/acer.yml): solves CartPole-v1 in about 15-20k steps.
    env = make_vec_env("CartPole-v1", n_envs=preset.n_envs, seed=args.seed)
    model = ACER(preset.policy, env, seed=args.seed, verbose=1, **preset.hyperparameters)
    model.learn(total_timesteps=args.timesteps, progress_bar=not args.no_progress_bar, log_interval=250)
    model.save(args.save_path)
    print(f"saved to {args.save_path}")

    loaded = ACER.load(args.save_path)
    eval_env = make_vec_env("CartPole-v1", n_envs=1, seed=args.seed + 1000)
    mean_return, std_return = evaluate_policy(
        loaded, eval_env, n_eval_episodes=args.eval_episodes, deterministic=True
    )
    print(f"evaluation over {args.eval_episodes} episodes: {mean_return:.1f} +/- {std_return:.1f}")
    return float(mean_return)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()

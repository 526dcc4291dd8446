"""How well ACER's critic fits the return early in training, on raw and on normalised rewards.

The script trains the LunarLander-v3 preset three times from the same seed: as it is; with the rewards
scaled by ``VecNormalize`` (``normalize={'norm_obs': False}``, with ``ent_coef`` and ``delta`` divided by
about the scale, so that the policy update keeps its weights); and on raw rewards with three times the step
for the critic's own parameters (``q_lr_ratio=3``). Every ``--every`` steps it plays the current
policy (sampled actions) on a separately seeded env for at least ``--probe-steps`` steps of whole episodes,
and compares the critic's ``V(x) = sum_a pi(a|x) Q(x, a)`` with the discounted Monte Carlo return ``G`` from
each visited state (an episode cut by the time limit counts as ended there). ``V`` is reported in reward units
(for normalised rewards, multiplied back by ``VecNormalize``'s current scale, recorded as ``reward_scale``).

Usage::

    python -m benchmarks.critic_fit --out benchmarks/results/tuning/critic_fit.json

It shows why the LunarLander preset's critic explains nothing for its first third: RMSProp moves each weight
by about the learning rate per update whatever the gradient's size, so a Q head that starts at zero takes
thousands of updates to reach returns of -100; normalised rewards are within its reach at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecEnv, VecNormalize

from benchmarks.common import commit_at_start, machine_description, script_parser, write_results
from sb3_acer import ACER
from sb3_acer.common.functional.categorical import explained_variance
from sb3_acer.presets import load_preset, wrapper_class

ENV_ID = "LunarLander-v3"
#: The second configuration: rewards divided by VecNormalize's running return scale (about 50 here), with
#: ent_coef (preset 0.01) and delta (0.1) divided by about the same.
NORMALISED = {"normalize": {"norm_obs": False}, "ent_coef": 2e-4, "delta": 2e-3}
#: Each configuration's name and its overrides of the preset.
CONFIGS = {"preset": {}, "rewards normalised": NORMALISED, "critic step x3": {"q_lr_ratio": 3.0}}


@dataclass
class CriticFit:
    config: str
    seed: int
    steps: int
    probe_steps: int
    reward_scale: float
    value_mean: float
    value_std: float
    return_mean: float
    return_std: float
    explained_variance: float
    correlation: float


def discounted_returns(rewards: list[float], gamma: float) -> list[float]:
    """``G_t = sum_k gamma^k r_{t+k}`` to the end of the episode, for every step ``t``."""
    returns = []
    discounted = 0.0
    for reward in reversed(rewards):
        discounted = reward + gamma * discounted
        returns.append(discounted)
    return returns[::-1]


def probe(
    model: Any,
    gamma: float,
    seed: int,
    min_steps: int,
    scale: float,
    wrap: Callable[[gym.Env], gym.Env] | None,
) -> tuple[np.ndarray, np.ndarray]:
    """``V`` (times ``scale``) and the discounted return ``G`` over the whole episodes played from ``seed``
    until at least ``min_steps`` steps."""
    env = make_vec_env(ENV_ID, n_envs=1, seed=seed, wrapper_class=wrap)
    generator = th.Generator().manual_seed(seed)  # its own: training's random stream stays as without probes
    values: list[float] = []
    returns: list[float] = []
    obs = env.reset()
    episode_values: list[float] = []
    episode_rewards: list[float] = []
    while len(values) < min_steps:
        with th.no_grad():
            output = model.policy.evaluate(th.as_tensor(obs, device=model.device))
            probs = th.softmax(output.logits, dim=-1)
            episode_values.append(float((probs * output.q_values).sum()) * scale)
            action = int(th.multinomial(probs.cpu(), 1, generator=generator))
        obs, reward, done, _ = env.step(np.array([action]))
        episode_rewards.append(float(reward[0]))
        if done[0]:
            values += episode_values
            returns += discounted_returns(episode_rewards, gamma)
            episode_values, episode_rewards = [], []
    env.close()
    return np.array(values), np.array(returns)


class Prober(BaseCallback):
    """Probes the critic every ``every`` steps of a run over the preset's whole budget (so that the
    learning-rate schedule is the preset's) and stops it after ``steps``."""

    def __init__(
        self,
        config: str,
        seed: int,
        gamma: float,
        steps: int,
        every: int,
        probe_steps: int,
        wrap: Callable[[gym.Env], gym.Env] | None,
    ) -> None:
        super().__init__()
        self.config, self.seed, self.gamma, self.wrap = config, seed, gamma, wrap
        self.steps, self.every, self.probe_steps = steps, every, probe_steps
        self.next_probe = every
        self.fits: list[CriticFit] = []

    def _on_step(self) -> bool:
        if self.num_timesteps >= self.next_probe:
            self.next_probe += self.every
            env = self.model.get_env()
            scale = float(np.sqrt(env.ret_rms.var + env.epsilon)) if isinstance(env, VecNormalize) else 1.0
            probe_seed = self.seed + 10_000 + self.num_timesteps
            v, g = probe(self.model, self.gamma, probe_seed, self.probe_steps, scale, self.wrap)
            fit = CriticFit(
                config=self.config,
                seed=self.seed,
                steps=self.num_timesteps,
                probe_steps=len(v),
                reward_scale=scale,
                value_mean=float(v.mean()),
                value_std=float(v.std()),
                return_mean=float(g.mean()),
                return_std=float(g.std()),
                explained_variance=explained_variance(y_pred=th.as_tensor(v), y_true=th.as_tensor(g)),
                correlation=float(np.corrcoef(v, g)[0, 1]),
            )
            print(fit, flush=True)
            self.fits.append(fit)
        return self.num_timesteps < self.steps


def run(
    config: str, overrides: dict[str, Any], seed: int, steps: int, every: int, probe_steps: int
) -> list[CriticFit]:
    preset = load_preset(ENV_ID)
    settings = {**preset.hyperparameters, **overrides}
    normalize = settings.pop("normalize", None)
    wrap = wrapper_class(preset.env_wrapper)
    env: VecEnv = make_vec_env(ENV_ID, n_envs=preset.n_envs, seed=seed, wrapper_class=wrap)
    gamma = float(settings.get("gamma", 0.99))
    if normalize is not None:
        env = VecNormalize(env, gamma=gamma, **normalize)
    model = ACER(preset.policy, env, seed=seed, **settings)
    prober = Prober(config, seed, gamma, steps, every, probe_steps, wrap)
    model.learn(preset.n_timesteps, callback=prober)
    env.close()
    return prober.fits


def build_parser() -> argparse.ArgumentParser:
    """This script's command line (tests/docs/test_code_blocks.py parses the documented ones with it)."""
    parser = script_parser(__doc__)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--every", type=int, default=25_000)
    parser.add_argument("--probe-steps", type=int, default=3_000)
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--out", type=Path, default=None)
    return parser


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    commit_at_start()  # stops here, before any run, where no commit can be recorded
    th.set_num_threads(1)
    results = []
    for config in args.configs:
        results += run(config, CONFIGS[config], args.seed, args.steps, args.every, args.probe_steps)
    if args.out is not None:
        write_results(
            args.out,
            script="critic_fit.py",
            args=sys.argv[1:] if argv is None else argv,
            machine=machine_description(threads=1),
            results=results,
        )


if __name__ == "__main__":
    main()

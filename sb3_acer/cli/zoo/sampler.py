"""ACER among rl-baselines3-zoo's algorithms: its name (``--algo acer``), its registration and the
Optuna sampler of its hyperparameters (``train -optimize``, ``--trial-id``)."""

from __future__ import annotations

from typing import Any

from sb3_acer.acer.acer import ACER
from sb3_acer.presets.zoo_format import zoo_learning_rate

__all__ = ["ALGO", "NET_ARCHS", "convert_acer_params", "register", "sample_acer_params"]

#: The name the zoo knows ACER by (``--algo acer``).
ALGO = "acer"
#: The network sizes the sampler chooses from (``net_arch`` of the feed-forward policies: shared layers).
NET_ARCHS: dict[str, list[int]] = {"tiny": [64], "small": [64, 64], "medium": [256, 256]}


def _acer_params(sampled: dict[str, Any]) -> dict[str, Any]:
    """ACER's constructor arguments for the parameters of an Optuna trial: the network's name becomes
    ``policy_kwargs``."""
    hyperparameters = dict(sampled)
    net_arch = hyperparameters.pop("net_arch", None)
    if net_arch is not None:
        hyperparameters["policy_kwargs"] = {"net_arch": list(NET_ARCHS[net_arch])}
    return hyperparameters


def convert_acer_params(sampled: dict[str, Any]) -> dict[str, Any]:
    """The zoo's hyperparameters for a stored trial's parameters (the zoo's ``HYPERPARAMS_CONVERTER``,
    which ``train --trial-id`` lays over the hyperparameter file): as :func:`sample_acer_params` gives them,
    with the learning rate and its schedule written as the zoo reads them (``lin_<rate>`` or a constant
    rate, :func:`~sb3_acer.presets.zoo_format.zoo_learning_rate`), so that the trial is replayed as it ran."""
    return zoo_learning_rate(_acer_params(sampled))


def sample_acer_params(trial: Any, n_actions: int, n_envs: int, additional_args: dict) -> dict[str, Any]:
    """Sample ACER's constructor arguments for one Optuna trial (the zoo's ``HYPERPARAMS_SAMPLER``
    signature).

    The learning rate and its schedule (``'linear'`` or ``'constant'``: the zoo's file format has no other,
    and ``--trial-id`` replays a trial through it), ``n_steps``, ``replay_ratio``, ``buffer_size`` (at least
    ACER's default ``replay_start``, so replay always starts), ``delta``, ``ent_coef``, ``q_coef``,
    ``correction_term`` and the network size (:data:`NET_ARCHS`).
    """
    sampled = {
        "learning_rate": trial.suggest_float("learning_rate", 1e-5, 1e-2, log=True),
        "lr_schedule": trial.suggest_categorical("lr_schedule", ["linear", "constant"]),
        "n_steps": trial.suggest_categorical("n_steps", [5, 10, 20, 32, 64]),
        "replay_ratio": trial.suggest_categorical("replay_ratio", [0, 1, 2, 4, 8]),
        "buffer_size": trial.suggest_categorical("buffer_size", [1000, 5000, 20000, 50000]),
        "delta": trial.suggest_float("delta", 0.1, 10.0, log=True),
        "ent_coef": trial.suggest_float("ent_coef", 1e-8, 0.1, log=True),
        "q_coef": trial.suggest_float("q_coef", 0.1, 1.0),
        "correction_term": trial.suggest_float("correction_term", 1.0, 20.0, log=True),
        "net_arch": trial.suggest_categorical("net_arch", sorted(NET_ARCHS)),
    }
    return _acer_params(sampled)


def register() -> None:
    """Make ACER one of the zoo's algorithms (``--algo acer``), with its Optuna sampler."""
    from rl_zoo3 import hyperparams_opt
    from rl_zoo3.utils import ALGOS

    ALGOS[ALGO] = ACER
    hyperparams_opt.HYPERPARAMS_SAMPLER[ALGO] = sample_acer_params
    hyperparams_opt.HYPERPARAMS_CONVERTER[ALGO] = convert_acer_params  # type: ignore[assignment]

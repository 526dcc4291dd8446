"""ACER in rl-baselines3-zoo: ``python -m sb3_acer.zoo train|enjoy|record_video [the zoo's flags]``.

The zoo's scripts run as they are (``pip install sb3-acer[zoo]``), with ACER registered under ``acer``
(:func:`register`): in ``rl_zoo3.ALGOS``, and with an Optuna sampler of ACER's hyperparameters
(:func:`sample_acer_params`) for ``train -optimize``. ``--algo`` defaults to ``acer``, and ``train`` reads
the package's presets (``acer.yml``, through :mod:`sb3_acer.presets.zoo`) unless ``-conf`` names another
file. For example::

    python -m sb3_acer.zoo train --env CartPole-v1 -f logs
    python -m sb3_acer.zoo train --env CartPole-v1 -optimize --n-trials 20 -n 50000
    python -m sb3_acer.zoo enjoy --env CartPole-v1 -f logs
    python -m sb3_acer.zoo record_video --env CartPole-v1 -f logs -n 1000

Other scripts of the zoo that start Python again (``record_training``) or upload (``push_to_hub``) are
not forwarded: in a new process ACER would not be registered.
"""

from __future__ import annotations

import importlib
import runpy
import sys
from collections.abc import Sequence
from typing import Any

from sb3_acer.acer import ACER
from sb3_acer.presets.zoo import MODULE as PRESETS_MODULE
from sb3_acer.presets.zoo import zoo_learning_rate

__all__ = [
    "ALGO",
    "NET_ARCHS",
    "SCRIPTS",
    "convert_acer_params",
    "main",
    "register",
    "sample_acer_params",
]

#: The name the zoo knows ACER by (``--algo acer``).
ALGO = "acer"
#: The zoo's scripts this module forwards to (``rl_zoo3.<script>``).
SCRIPTS = ("train", "enjoy", "record_video")
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
    rate, :func:`~sb3_acer.presets.zoo.zoo_learning_rate`), so that the trial is replayed as it ran."""
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


def _given(args: Sequence[str], *flags: str) -> bool:
    return any(arg in flags or arg.startswith(tuple(f"{flag}=" for flag in flags)) for arg in args)


def zoo_arguments(script: str, args: Sequence[str]) -> list[str]:
    """The zoo's command line for ``script``: ``args`` with ``--algo acer`` and, for ``train``, the package's
    presets as the hyperparameter file, unless ``args`` give their own."""
    result = list(args)
    if not _given(result, "--algo"):
        result = ["--algo", ALGO, *result]
    if script == "train" and not _given(result, "-conf", "--conf-file"):
        result = ["--conf-file", PRESETS_MODULE, *result]
    return result


def main(argv: Sequence[str] | None = None) -> None:
    """Run the zoo's ``script`` (the first argument) with ACER registered and the rest of ``argv``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in SCRIPTS:
        print(
            f"usage: python -m sb3_acer.zoo {{{','.join(SCRIPTS)}}} [rl-zoo3 arguments]\n"
            "(pip install 'sb3-acer[zoo]'; run a script with --help for its arguments)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    script, args = argv[0], zoo_arguments(argv[0], argv[1:])
    try:
        importlib.import_module("rl_zoo3")
    except ImportError as error:
        raise SystemExit(f"sb3_acer.zoo needs rl-zoo3 ({error}): pip install 'sb3-acer[zoo]'") from None
    register()
    saved_argv = sys.argv
    sys.argv = [f"rl_zoo3.{script}", *args]
    try:
        if script == "record_video":  # a script without a function: run it as the zoo's command does
            runpy.run_module("rl_zoo3.record_video", run_name="__main__")
        else:
            getattr(importlib.import_module(f"rl_zoo3.{script}"), script)()
    finally:
        sys.argv = saved_argv


if __name__ == "__main__":
    main()

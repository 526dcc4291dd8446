"""Tuned hyperparameter presets, in the rl-baselines3-zoo YAML format (``acer.yml``).

Each entry is keyed by environment id; ``n_envs``, ``n_timesteps``, ``policy`` and ``normalize`` describe the
run, every other key is an ``ACER`` constructor argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml
from torch import nn

__all__ = ["Preset", "available_presets", "load_preset", "resolve_activation"]

RUN_KEYS = ("n_envs", "n_timesteps", "policy", "normalize")


@dataclass(frozen=True)
class Preset:
    """A tuned configuration for one environment."""

    env_id: str
    n_envs: int
    n_timesteps: int
    policy: str
    normalize: bool
    hyperparameters: dict[str, Any] = field(default_factory=dict)


def _read() -> dict[str, dict[str, Any]]:
    text = resources.files(__package__).joinpath("acer.yml").read_text()
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError("acer.yml must map environment ids to settings")
    return data


def available_presets() -> list[str]:
    """Environment ids that have a preset."""
    return sorted(_read())


def load_preset(env_id: str) -> Preset:
    """The preset for ``env_id``.

    Raises:
        KeyError: no preset exists for ``env_id``.
    """
    data = _read()
    if env_id not in data:
        raise KeyError(f"no ACER preset for {env_id!r}; presets exist for {', '.join(sorted(data))}")
    entry = dict(data[env_id])
    return Preset(
        env_id=env_id,
        n_envs=int(entry.pop("n_envs", 1)),
        n_timesteps=int(float(entry.pop("n_timesteps", 1e6))),
        policy=str(entry.pop("policy", "MlpPolicy")),
        normalize=bool(entry.pop("normalize", False)),
        hyperparameters=entry,
    )


def resolve_activation(policy_kwargs: Any) -> Any:
    """Turn ``activation_fn="ReLU"`` (or ``"nn.ReLU"``) in ``policy_kwargs`` into the ``torch.nn`` class, as a
    YAML preset or a command line can only name it.

    Raises:
        ValueError: the name is not a ``torch.nn`` module class.
    """
    if not isinstance(policy_kwargs, dict) or not isinstance(policy_kwargs.get("activation_fn"), str):
        return policy_kwargs
    name = policy_kwargs["activation_fn"].removeprefix("torch.").removeprefix("nn.")
    activation = getattr(nn, name, None)
    if not (isinstance(activation, type) and issubclass(activation, nn.Module)):
        raise ValueError(
            f"policy_kwargs: activation_fn {policy_kwargs['activation_fn']!r} is not a torch.nn class"
        )
    return {**policy_kwargs, "activation_fn": activation}

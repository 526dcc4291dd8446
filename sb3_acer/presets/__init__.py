"""Tuned hyperparameter presets, in the rl-baselines3-zoo YAML format (``acer.yml``).

Each entry is keyed by environment id; ``n_envs``, ``n_timesteps``, ``policy`` and ``normalize`` describe the
run, every other key is an ``ACER`` constructor argument.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import yaml
from torch import nn, optim

__all__ = ["Preset", "available_presets", "load_preset", "resolve_policy_kwargs"]

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
    """The preset for ``env_id``, its ``policy_kwargs`` class names resolved (:func:`resolve_policy_kwargs`).

    Raises:
        KeyError: no preset exists for ``env_id``.
    """
    data = _read()
    if env_id not in data:
        raise KeyError(f"no ACER preset for {env_id!r}; presets exist for {', '.join(sorted(data))}")
    entry = dict(data[env_id])
    if "policy_kwargs" in entry:
        entry["policy_kwargs"] = resolve_policy_kwargs(entry["policy_kwargs"])
    return Preset(
        env_id=env_id,
        n_envs=int(entry.pop("n_envs", 1)),
        n_timesteps=int(float(entry.pop("n_timesteps", 1e6))),
        policy=str(entry.pop("policy", "MlpPolicy")),
        normalize=bool(entry.pop("normalize", False)),
        hyperparameters=entry,
    )


def resolve_policy_kwargs(policy_kwargs: Any) -> Any:
    """Turn class names in ``policy_kwargs``, as a YAML preset or a command line can only give them, into
    the classes: ``activation_fn="ReLU"`` (or ``"nn.ReLU"``) into a ``torch.nn`` class and
    ``optimizer_class="Adam"`` (or ``"optim.Adam"``) into a ``torch.optim`` class.

    Raises:
        ValueError: a name that is not such a class.
    """
    if not isinstance(policy_kwargs, dict):
        return policy_kwargs
    resolved = dict(policy_kwargs)
    for key, module, base in (("activation_fn", nn, nn.Module), ("optimizer_class", optim, optim.Optimizer)):
        name = resolved.get(key)
        if not isinstance(name, str):
            continue
        short = name.removeprefix("torch.").removeprefix(f"{module.__name__.rpartition('.')[2]}.")
        value = getattr(module, short, None)
        if not (isinstance(value, type) and issubclass(value, base)):
            raise ValueError(f"policy_kwargs: {key} {name!r} is not a {module.__name__} class")
        resolved[key] = value
    return resolved

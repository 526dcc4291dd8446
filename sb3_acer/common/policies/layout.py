"""The layout of ACER's policies, below the policy classes and their heads: the SB2-style ``net_arch``
parser, the MLP builder, the modules a policy holds (:class:`PolicyModules`, their names the state-dict
keys of the model files) and what one action family's head does (:class:`ActionHead`)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, ClassVar, NamedTuple, Protocol

import numpy as np
import torch as th
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, MlpExtractor
from torch import nn

from sb3_acer.common.distributions import ActionDistribution

__all__ = [
    "ActionHead",
    "Layers",
    "PolicyModules",
    "build_mlp",
    "init_with_defaults",
    "layer_sizes",
    "parse_net_arch",
]


class PolicyModules(Protocol):
    """The modules an ACER policy holds, as its heads build and read them (``ACERPolicy`` has them)."""

    recurrent: ClassVar[bool]
    dist: ActionDistribution
    activation_fn: type[nn.Module]
    features_extractor: BaseFeaturesExtractor
    shared_net: nn.Sequential
    action_net: nn.Linear
    mlp_extractor: MlpExtractor  # Discrete: the pi and Q towers
    q_net: nn.Linear
    pi_net: nn.Sequential  # the others: the actor's tower, V, A(x, a), the log-std
    value_tower: nn.Sequential
    value_net: nn.Linear
    advantage_tower: nn.Sequential
    advantage_net: nn.Linear
    log_std: th.Tensor

    def register_buffer(self, name: str, tensor: th.Tensor | None, persistent: bool = True) -> None: ...


class Layers(NamedTuple):
    """A parsed ``net_arch``: layers before the LSTM (recurrent policies), after it (shared by both
    heads), the policy tower and the critic's tower."""

    before: list[int]
    shared: list[int]
    pi: list[int]
    qf: list[int]


def layer_sizes(value: Any, where: str) -> list[int]:
    """``value`` as a list of layer sizes.

    Raises:
        ValueError: unless ``value`` is a list or tuple of positive integers (``where`` names it).
    """
    if not isinstance(value, list | tuple) or not all(
        isinstance(size, int | np.integer) and not isinstance(size, bool) and size > 0 for size in value
    ):
        raise ValueError(f"net_arch: {where} must be a list of positive layer sizes, got {value!r}")
    return [int(size) for size in value]


def parse_net_arch(net_arch: Any) -> tuple[list[int], list[int], list[int]]:
    """Split an SB2-style ``net_arch`` into (shared layers, policy tower, Q tower).

    ``[64, 64]`` -> shared ``[64, 64]``; ``dict(pi=[64], qf=[64])`` -> separate towers;
    ``[64, dict(pi=[32], qf=[32])]`` -> both. ``vf`` is accepted as SB2's name for ``qf``.

    Raises:
        ValueError: for any other form.
    """
    if isinstance(net_arch, dict):
        shared: list[Any] = []
        towers: dict[str, Any] | None = net_arch
    elif isinstance(net_arch, list | tuple):
        if net_arch and isinstance(net_arch[-1], dict):
            shared, towers = list(net_arch[:-1]), net_arch[-1]
        else:
            shared, towers = list(net_arch), None
    else:
        raise ValueError(f"net_arch must be a list or a dict, got {net_arch!r}")
    shared_layers = layer_sizes(shared, "the shared part")
    if towers is None:
        return shared_layers, [], []
    unknown = set(towers) - {"pi", "qf", "vf"}
    if unknown or ("qf" in towers and "vf" in towers):
        raise ValueError(f"net_arch dict keys must be 'pi' and 'qf' (or 'vf'), got {sorted(towers)}")
    pi_layers = layer_sizes(towers.get("pi", []), "pi")
    qf_layers = layer_sizes(towers.get("qf", towers.get("vf", [])), "qf")
    return shared_layers, pi_layers, qf_layers


def build_mlp(in_dim: int, sizes: list[int], activation_fn: type[nn.Module]) -> tuple[nn.Sequential, int]:
    """Linear layers of ``sizes`` units, each followed by ``activation_fn``, and the output width."""
    layers: list[nn.Module] = []
    for size in sizes:
        layers += [nn.Linear(in_dim, size), activation_fn()]
        in_dim = size
    return nn.Sequential(*layers), in_dim


def init_with_defaults(init: Callable[..., None], **defaults: Any) -> Callable[..., None]:
    """``init`` (a policy's ``__init__``) with other default values, for a policy class that differs from
    its base only in them: ``__init__ = init_with_defaults(Base.__init__, activation_fn=nn.ReLU)``.

    The returned function's signature shows the new defaults (``ACER`` reads them, e.g. the
    ``features_extractor_class`` a policy builds by default), and it takes the same arguments as ``init``.

    Raises:
        TypeError: if ``init`` has no parameter of a name in ``defaults``.
    """
    signature = inspect.signature(init)
    unknown = set(defaults) - set(signature.parameters)
    if unknown:
        raise TypeError(f"{init.__qualname__} has no parameters {sorted(unknown)}")
    signature = signature.replace(
        parameters=[
            parameter.replace(default=defaults.get(name, parameter.default))
            for name, parameter in signature.parameters.items()
        ]
    )

    def __init__(*args: Any, **kwargs: Any) -> None:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        init(*bound.args, **bound.kwargs)

    __init__.__signature__ = signature  # type: ignore[attr-defined]
    __init__.__doc__ = init.__doc__
    return __init__


class ActionHead(Protocol):
    """What one action family puts on top of the shared latent ``[N, L]`` of :class:`PolicyModules`.

    A head is stateless: :meth:`build` registers its modules on the policy (so the state-dict keys are the
    policy's own), and the other methods read them from there.
    """

    def build(
        self, policy: PolicyModules, latent_dim: int, pi_layers: list[int], qf_layers: list[int]
    ) -> None:
        """Build the towers and heads on ``latent_dim`` features."""

    def init_gains(self, policy: PolicyModules, trunk: list[nn.Module]) -> dict[nn.Module, float]:
        """Every module to initialise orthogonally with its gain, in the order of initialisation (the
        random draws follow it)."""

    def critic_modules(self, policy: PolicyModules) -> list[nn.Module]:
        """The modules only the critic uses (``q_lr_ratio`` gives their parameters their own step)."""

    def outputs(
        self, policy: PolicyModules, latent: th.Tensor, critic_latent: th.Tensor
    ) -> tuple[th.Tensor, ...]:
        """What the update reads of ``[N, L]`` latents of the actor and of the critic (the same tensor unless
        ``share_features_extractor=False``): ``PolicyOutput`` or ``SDNOutput``."""

    def statistics(self, policy: PolicyModules, latent: th.Tensor) -> th.Tensor:
        """``[N, S]`` flat statistics of ``pi(.|x)`` (the critic is not evaluated)."""

    def actions(self, policy: PolicyModules, latent: th.Tensor, deterministic: bool) -> th.Tensor:
        """The actions of ``predict`` (the most probable ones if ``deterministic``)."""

    def behaviour(self, policy: PolicyModules, stats: th.Tensor) -> th.Tensor:
        """The actions the rollout draws from ``[E, S]`` statistics, as the replay memory stores them."""

    def sb3_forward(
        self, policy: PolicyModules, latent: th.Tensor, critic_latent: th.Tensor, deterministic: bool
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        """SB3's ``(actions, values [N, 1], log_prob [N])``."""

    def probability(
        self, policy: PolicyModules, stats: th.Tensor, actions: np.ndarray | None, logp: bool
    ) -> np.ndarray:
        """SB2's ``action_probability`` of ``[n, S]`` statistics, with the batch axis."""

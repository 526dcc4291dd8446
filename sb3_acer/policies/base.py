"""What the feed-forward and the recurrent ACER policies share: the ``net_arch`` parser, the ``pi`` and ``Q``
heads with their initialisation, action selection, and the parameters only the critic uses."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

import numpy as np
import torch as th
from gymnasium import spaces
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor, MlpExtractor
from torch import nn

from sb3_acer.common.distributions import Categorical

__all__ = [
    "BaseACERPolicy",
    "PolicyOutput",
    "build_mlp",
    "init_with_defaults",
    "layer_sizes",
    "parse_net_arch",
    "q_only_parameters",
    "select_actions",
]


class PolicyOutput(NamedTuple):
    """What the network computes for a batch of observations.

    Attributes:
        logits: ``[N, A]`` unnormalised log-probabilities of the policy.
        q_values: ``[N, A]`` action values ``Q(x, .)``.
    """

    logits: th.Tensor
    q_values: th.Tensor


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


def select_actions(logits: th.Tensor, deterministic: bool) -> th.Tensor:
    """The most probable action of each row of ``logits`` (``[N, A]``), or one sampled from the softmax."""
    if deterministic:
        return logits.argmax(dim=-1)
    return th.distributions.Categorical(logits=logits).sample()


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


class BaseACERPolicy(BasePolicy):
    """``BasePolicy`` with what both ACER policies build: a ``Discrete`` action space, the ``pi`` and ``Q``
    heads (``mlp_extractor``, ``action_net``, ``q_net``) and their orthogonal initialisation.

    The ``device`` is remembered instead of found by walking ``parameters()`` on every call (ACER asks for
    it several times per update, thousands of times a second on small networks); moving the module
    (``to``, ``cuda``, ``cpu``, ... all go through ``_apply``) forgets it.

    Args:
        observation_space: observation space.
        action_space: a ``Discrete`` action space.
        activation_fn: activation of the hidden layers.
        ortho_init: orthogonal initialisation of the weights.
        features_extractor_class: SB3 feature extractor.
        features_extractor_kwargs: keyword arguments of the feature extractor.
        normalize_images: divide image observations by 255.

    Raises:
        ValueError: for an action space that is not ``Discrete``.
    """

    _cached_device: th.device | None = None
    net_arch: Any
    mlp_extractor: MlpExtractor
    action_net: nn.Linear
    q_net: nn.Linear

    def __init__(
        self,
        observation_space: spaces.Space,
        action_space: spaces.Space,
        activation_fn: type[nn.Module],
        ortho_init: bool,
        features_extractor_class: type[BaseFeaturesExtractor],
        features_extractor_kwargs: dict[str, Any] | None,
        normalize_images: bool,
    ) -> None:
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(f"ACER policies need a Discrete action space, got {action_space}")
        super().__init__(
            observation_space,
            action_space,
            features_extractor_class=features_extractor_class,
            features_extractor_kwargs=features_extractor_kwargs,
            normalize_images=normalize_images,
        )
        self.activation_fn = activation_fn
        self.ortho_init = ortho_init
        self.n_actions = int(action_space.n)
        #: The action distribution (flat statistics: the probabilities), as SDN policies carry theirs.
        self.dist = Categorical(action_space)

    def build_features_extractor(self) -> None:
        """Build ``features_extractor`` (and set ``features_dim``)."""
        self.features_extractor = self.make_features_extractor()
        self.features_dim = self.features_extractor.features_dim

    def build_heads(self, latent_dim: int, pi_layers: list[int], qf_layers: list[int]) -> None:
        """Build the ``pi`` and ``Q`` towers (``mlp_extractor``) on ``latent_dim`` features and the two
        linear heads ``action_net`` (logits) and ``q_net`` (action values) on them."""
        self.mlp_extractor = MlpExtractor(
            latent_dim, net_arch=dict(pi=pi_layers, vf=qf_layers), activation_fn=self.activation_fn
        )
        self.action_net = nn.Linear(self.mlp_extractor.latent_dim_pi, self.n_actions)
        self.q_net = nn.Linear(self.mlp_extractor.latent_dim_vf, self.n_actions)

    def init_weights_with_gains(self, gains: dict[nn.Module, float]) -> None:
        """Orthogonal initialisation of every module of ``gains`` with its gain (SB3's ``init_weights``)."""
        for module, gain in gains.items():
            module.apply(partial(self.init_weights, gain=gain))

    def _get_constructor_parameters(self) -> dict[str, Any]:
        """What both ACER policies are built from (SB3's ``policy.save`` / ``Policy.load`` rebuild them
        from it): the network's shape and features extractor besides ``BaseModel``'s spaces."""
        data = super()._get_constructor_parameters()
        data.update(
            net_arch=self.net_arch,
            activation_fn=self.activation_fn,
            ortho_init=self.ortho_init,
            features_extractor_class=self.features_extractor_class,
            features_extractor_kwargs=self.features_extractor_kwargs,
        )
        return data

    @property
    def device(self) -> th.device:
        if self._cached_device is None:
            self._cached_device = super().device
        return self._cached_device

    def _apply(self, fn: Any, recurse: bool = True) -> Any:
        self._cached_device = None
        return super()._apply(fn, recurse)


def q_only_parameters(policy: BaseACERPolicy) -> list[nn.Parameter]:
    """The parameters that only the critic uses: the ``qf`` tower and the ``Q`` head.

    Everything else (features extractor, shared layers, LSTM, ``pi`` tower, policy head) serves the policy,
    alone or with the critic. ``ACER(q_lr_ratio=...)`` gives these parameters their own step size.
    """
    critic_parameters = getattr(policy, "critic_parameters", None)
    if critic_parameters is not None:  # the stochastic-dueling policies (sb3_acer.policies.sdn)
        return list(critic_parameters())
    return [*policy.mlp_extractor.value_net.parameters(), *policy.q_net.parameters()]

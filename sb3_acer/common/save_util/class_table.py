"""The classes a model file may name, by every path a model file has named them under.

A model file stores a class (a custom policy class; in ``policy_kwargs`` an activation function, a features
extractor or an optimizer) as the path ``"module:qualname"``. Loading resolves a path only through
:data:`CLASS_TABLE` and the classes the caller passes in ``custom_objects`` (:func:`given_classes`): no module
is ever imported to look a name up, so a file cannot run code by naming a module. The table is built from
objects already imported, and holds:

- sb3-acer's policies, under :mod:`sb3_acer.common.policies` (and the module that defines each) and under
  every path of sb3-acer 0.1 (``sb3_acer.policies`` and its modules; the stochastic-dueling classes there,
  ``SDNMlpPolicy`` and the like, are now the policies of the same name without ``SDN``), its features
  extractor ``MinAtarCNN`` (also under ``sb3_acer.torch_layers``) and its optimizer ``FastRMSpropTFLike``
  (under ``sb3_acer.common.optim`` and under ``sb3_acer.optim``, its module in sb3-acer 0.1);
- Stable-Baselines3's features extractors (``FlattenExtractor``, ``NatureCNN``, ``CombinedExtractor``) and
  its ``RMSpropTFLike``; none of SB3's policies, which ACER does not take;
- torch's activation functions (the modules of ``torch.nn.modules.activation``) and ``nn.Identity``;
- torch's optimizers that can train ACER's networks (``torch.optim``'s, less those
  :func:`~sb3_acer.common.checks.settings.optimizer_problem` refuses: ``LBFGS``, ``SparseAdam``,
  ``Muon``), under their module and under ``torch.optim``.

The table is keyed by path strings, not by each class's ``__module__`` alone: sb3-acer's paths are written
out here, so a file saved before a module moves keeps loading after it (the class is looked up by its public
name). Add a path here when a class moves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch as th
from stable_baselines3.common import torch_layers as sb3_layers
from stable_baselines3.common.sb2_compat import rmsprop_tf_like
from torch import nn
from torch.nn.modules import activation

from sb3_acer.common import optim as acer_optim
from sb3_acer.common import policies as acer_policies
from sb3_acer.common.checks.settings import optimizer_problem
from sb3_acer.common.policies import torch_layers as acer_layers

__all__ = ["CLASS_TABLE", "class_path", "given_classes"]

_FEED_FORWARD = ("ACERPolicy", "MlpPolicy", "CnnPolicy", "MultiInputPolicy")
_RECURRENT = (
    "RecurrentACERPolicy",
    "MlpLstmPolicy",
    "MlpLnLstmPolicy",
    "CnnLstmPolicy",
    "CnnLnLstmPolicy",
    "MultiInputLstmPolicy",
)

#: sb3-acer 0.1's stochastic-dueling classes: each is the policy of the same name without ``SDN``.
_SDN_NAMES: dict[str, str] = {f"SDN{name}": name for name in _FEED_FORWARD[1:] + _RECURRENT[1:]}
_SDN_NAMES.update(SDNPolicy="ACERPolicy", RecurrentSDNPolicy="RecurrentACERPolicy")
_SDN = tuple(name for name in _SDN_NAMES if "Lstm" not in name and not name.startswith("Recurrent"))
_SDN_RECURRENT = tuple(name for name in _SDN_NAMES if name not in _SDN)

#: sb3-acer's classes: ``(module path, public namespace, names)``. A model file may name each class as
#: ``"<module path>:<name>"``; the class is the public namespace's attribute of that name.
_ACER_PATHS: tuple[tuple[str, Any, tuple[str, ...]], ...] = (
    ("sb3_acer.common.policies", acer_policies, _FEED_FORWARD + _RECURRENT),
    ("sb3_acer.common.policies.base", acer_policies, _FEED_FORWARD),
    ("sb3_acer.common.policies.lstm", acer_policies, _RECURRENT),
    ("sb3_acer.common.policies.torch_layers", acer_layers, ("MinAtarCNN",)),
    ("sb3_acer.policies", acer_policies, _FEED_FORWARD + _RECURRENT + _SDN + _SDN_RECURRENT),
    ("sb3_acer.policies.feed_forward", acer_policies, _FEED_FORWARD),
    ("sb3_acer.policies.recurrent", acer_policies, _RECURRENT),
    ("sb3_acer.policies.sdn", acer_policies, _SDN),
    ("sb3_acer.policies.sdn_recurrent", acer_policies, _SDN_RECURRENT),
    ("sb3_acer.torch_layers", acer_layers, ("MinAtarCNN",)),
    ("sb3_acer.optim", acer_optim, ("FastRMSpropTFLike",)),
    ("sb3_acer.common.optim", acer_optim, ("FastRMSpropTFLike",)),
    (
        "stable_baselines3.common.torch_layers",
        sb3_layers,
        ("FlattenExtractor", "NatureCNN", "CombinedExtractor"),
    ),
    ("stable_baselines3.common.sb2_compat.rmsprop_tf_like", rmsprop_tf_like, ("RMSpropTFLike",)),
)


def class_path(cls: type) -> str:
    """The path a model file names ``cls`` by: ``"module:qualname"``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def _activations() -> dict[str, type]:
    classes = [
        obj
        for obj in vars(activation).values()
        if isinstance(obj, type) and issubclass(obj, nn.Module) and obj.__module__ == activation.__name__
    ]
    return {class_path(cls): cls for cls in [*classes, nn.Identity]}


def _optimizers() -> dict[str, type]:
    table: dict[str, type] = {}
    for name in th.optim.__all__:
        cls = getattr(th.optim, name)
        usable = (
            isinstance(cls, type) and issubclass(cls, th.optim.Optimizer) and cls is not th.optim.Optimizer
        )
        if usable and optimizer_problem(cls) is None:
            table[class_path(cls)] = table[f"torch.optim:{name}"] = cls
    return table


def _table() -> dict[str, type]:
    table = {
        f"{path}:{name}": getattr(namespace, _SDN_NAMES.get(name, name))
        for path, namespace, names in _ACER_PATHS
        for name in names
    }
    return {**table, **_activations(), **_optimizers()}


#: Every class a model file may name without ``custom_objects``, by path.
CLASS_TABLE: Mapping[str, type] = _table()


def given_classes(custom_objects: Mapping[str, Any]) -> dict[str, type]:
    """The ``torch.nn.Module`` and ``torch.optim.Optimizer`` subclasses among the values of ``load``'s
    ``custom_objects``, by the path a model file names each by."""
    return {
        class_path(value): value
        for value in custom_objects.values()
        if isinstance(value, type) and issubclass(value, nn.Module | th.optim.Optimizer)
    }

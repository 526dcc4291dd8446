"""ACER's policy names (as sb3-contrib's ``trpo/policies.py``).

The names users pass are SB3's and sb3-contrib's (:data:`POLICY_ALIASES`): ``MlpPolicy``, ``CnnPolicy``,
``MultiInputPolicy`` and the ``...LstmPolicy`` / ``...LnLstmPolicy`` variants. Each builds the one policy
family of :mod:`sb3_acer.common.policies`, whose head follows the env's action space (a softmax and ``Q``
for ``Discrete`` actions, an actor and the stochastic dueling critic for ``Box``, ``MultiDiscrete`` and
``MultiBinary`` ones). The names of sb3-acer 0.1's stochastic-dueling classes (:data:`SDN_POLICY_ALIASES`,
``SDNMlpPolicy`` and the like) are still taken, by code and model files that name them, but not listed:
each is the policy of the same name without ``SDN``.
"""

from __future__ import annotations

import inspect
from types import SimpleNamespace
from typing import Any

from gymnasium import spaces

from sb3_acer.common.policies import (
    ACERPolicy,
    CnnLnLstmPolicy,
    CnnLstmPolicy,
    CnnPolicy,
    MlpLnLstmPolicy,
    MlpLstmPolicy,
    MlpPolicy,
    MultiInputLstmPolicy,
    MultiInputPolicy,
    RecurrentACERPolicy,
)
from sb3_acer.common.policies.base import keywords_not_taken

__all__ = [
    "POLICY_ALIASES",
    "POLICY_BASES",
    "SDN_POLICY_ALIASES",
    "CnnLnLstmPolicy",
    "CnnLstmPolicy",
    "CnnPolicy",
    "MlpLnLstmPolicy",
    "MlpLstmPolicy",
    "MlpPolicy",
    "MultiInputLstmPolicy",
    "MultiInputPolicy",
    "RecurrentACERPolicy",
    "policy_classes_for_kwargs",
    "replay_action_settings",
]

#: The policy names ACER lists (``train -h``, ``ACER.policy_aliases``), as SB3 and sb3-contrib spell them.
POLICY_ALIASES: dict[str, type] = {
    cls.__name__: cls
    for cls in (
        MlpPolicy,
        CnnPolicy,
        MultiInputPolicy,
        MlpLstmPolicy,
        MlpLnLstmPolicy,
        CnnLstmPolicy,
        CnnLnLstmPolicy,
        MultiInputLstmPolicy,
    )
}

#: The classes a policy class given to ACER must derive from.
POLICY_BASES = (ACERPolicy,)

#: sb3-acer 0.1's names of the stochastic-dueling policies: taken (old code, model files) but not listed.
SDN_POLICY_ALIASES: dict[str, type] = {f"SDN{name}": cls for name, cls in POLICY_ALIASES.items()}


def policy_classes_for_kwargs(policy_class: type, action_space: spaces.Space | None) -> tuple[Any, ...]:
    """What ``policy_kwargs`` are checked against (their signatures): ``policy_class``, less the keywords
    the head of ``action_space`` does not take (``log_std_init`` and ``fixed_std`` for ``Discrete``)."""
    not_taken = keywords_not_taken(action_space)
    if not not_taken:
        return (policy_class,)
    signature = inspect.signature(policy_class.__init__)  # type: ignore[misc]
    kept = [parameter for name, parameter in signature.parameters.items() if name not in not_taken]

    def __init__(*args: Any, **kwargs: Any) -> None:  # only its signature is read
        del args, kwargs

    __init__.__signature__ = signature.replace(parameters=kept)  # type: ignore[attr-defined]
    return (SimpleNamespace(__init__=__init__),)


def replay_action_settings(policy: ACERPolicy, action_space: spaces.Space) -> dict[str, Any]:
    """The replay memory's action settings: ``n_actions`` (the size of the behaviour statistics), and for
    the flat actions of the non-``Discrete`` spaces ``action_size`` and ``action_dtype``."""
    del action_space
    return dict(n_actions=policy.dist.stats_size, **policy.dist.stored_action_layout())

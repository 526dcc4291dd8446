"""ACER's policy names and the action space -> policy dispatch.

The names users pass are SB3's and sb3-contrib's (:data:`POLICY_ALIASES`): ``MlpPolicy``, ``CnnPolicy``,
``MultiInputPolicy`` and the ``...LstmPolicy`` / ``...LnLstmPolicy`` variants. Each builds the network for
the env's action space: a softmax and ``Q`` head for ``Discrete`` actions, the stochastic-dueling policy of
:mod:`sb3_acer.policies.sdn` for ``Box``, ``MultiDiscrete`` and ``MultiBinary`` ones
(:func:`policy_class_for`). Those store flat actions and behaviour statistics in the replay memory
(:func:`replay_action_settings`) and are updated by :func:`sb3_acer.common.update.compute_gradients` with
:class:`~sb3_acer.common.update.SDNTerms`. The stochastic-dueling classes' own names
(:data:`SDN_POLICY_ALIASES`) are still taken, by code and model files that name them, but not listed.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces

from sb3_acer.common.checks.settings import UnsupportedSpaceError, check_actions
from sb3_acer.common.distributions import Categorical
from sb3_acer.common.observations import ObservationArrays
from sb3_acer.policies import (
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
from sb3_acer.policies.sdn import SDNCnnPolicy, SDNMlpPolicy, SDNMultiInputPolicy, SDNPolicy
from sb3_acer.policies.sdn_recurrent import (
    RecurrentSDNPolicy,
    SDNCnnLnLstmPolicy,
    SDNCnnLstmPolicy,
    SDNMlpLnLstmPolicy,
    SDNMlpLstmPolicy,
    SDNMultiInputLstmPolicy,
)

__all__ = [
    "POLICY_ALIASES",
    "POLICY_BASES",
    "SDN_POLICY_ALIASES",
    "SDN_SUBSTITUTES",
    "action_probability",
    "categorical_action_probability",
    "policy_class_for",
    "policy_classes_for_kwargs",
    "replay_action_settings",
    "sdn_action_probability",
    "takes_sdn_policy",
]

#: The stochastic-dueling policy each named policy builds for Box, MultiDiscrete and MultiBinary actions.
SDN_SUBSTITUTES: dict[type, type] = {
    MlpPolicy: SDNMlpPolicy,
    CnnPolicy: SDNCnnPolicy,
    MultiInputPolicy: SDNMultiInputPolicy,
    MlpLstmPolicy: SDNMlpLstmPolicy,
    MlpLnLstmPolicy: SDNMlpLnLstmPolicy,
    CnnLstmPolicy: SDNCnnLstmPolicy,
    CnnLnLstmPolicy: SDNCnnLnLstmPolicy,
    MultiInputLstmPolicy: SDNMultiInputLstmPolicy,
}


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
POLICY_BASES = (ACERPolicy, RecurrentACERPolicy, SDNPolicy)

#: The stochastic-dueling classes by their own names: taken (old code, model files) but not listed.
SDN_POLICY_ALIASES: dict[str, type] = {cls.__name__: cls for cls in SDN_SUBSTITUTES.values()}


def takes_sdn_policy(action_space: spaces.Space) -> bool:
    """Whether ``action_space`` takes a stochastic-dueling policy (Box, MultiDiscrete, MultiBinary)."""
    return isinstance(action_space, spaces.Box | spaces.MultiDiscrete | spaces.MultiBinary)


def policy_class_for(policy_class: type, action_space: spaces.Space) -> type:
    """The policy class ACER builds for ``action_space``: each named policy becomes its stochastic-dueling
    counterpart (:data:`SDN_SUBSTITUTES`: ``MlpPolicy`` -> ``SDNMlpPolicy``, ``MlpLstmPolicy`` ->
    ``SDNMlpLstmPolicy``, ...) for the non-``Discrete`` spaces.

    Raises:
        UnsupportedSpaceError: for another discrete-only policy class on such a space, or an ``SDNPolicy``
            on a ``Discrete`` one.
    """
    if not takes_sdn_policy(action_space):
        if issubclass(policy_class, SDNPolicy):
            raise UnsupportedSpaceError(
                f"{policy_class.__name__} takes Box, MultiDiscrete or MultiBinary actions, got {action_space}"
            )
        return policy_class
    if issubclass(policy_class, SDNPolicy):
        return policy_class
    if policy_class in SDN_SUBSTITUTES:
        return SDN_SUBSTITUTES[policy_class]
    raise UnsupportedSpaceError(
        f"{policy_class.__name__} cannot act in {action_space}: it takes Discrete actions only; use one of "
        f"{', '.join(cls.__name__ for cls in SDN_SUBSTITUTES)} or an SDNPolicy subclass"
    )


def policy_classes_for_kwargs(policy_class: type, action_space: spaces.Space | None) -> tuple[type, ...]:
    """The classes whose keywords ``policy_kwargs`` may use: the class built for ``action_space``, or with no
    space known yet (no env), ``policy_class`` and the policy it builds for non-``Discrete`` actions.

    Raises:
        UnsupportedSpaceError: as :func:`policy_class_for`.
    """
    if action_space is not None:
        return (policy_class_for(policy_class, action_space),)
    substitute = SDN_SUBSTITUTES.get(policy_class)
    return (policy_class,) if substitute is None else (policy_class, substitute)


def replay_action_settings(policy: Any, action_space: spaces.Space) -> dict[str, Any]:
    """The replay memory's action settings: ``n_actions`` (the size of the behaviour statistics), and for
    the flat actions of the non-``Discrete`` spaces ``action_size`` and ``action_dtype``."""
    dist = policy.dist
    if isinstance(dist, Categorical):
        return dict(n_actions=dist.stats_size)
    return dict(n_actions=dist.stats_size, action_size=dist.action_size, action_dtype=dist.action_dtype)


def action_probability(
    policy: Any,
    observation: ObservationArrays,
    actions: np.ndarray | None,
    logp: bool,
    state: tuple[np.ndarray, ...] | None = None,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """SB2's ``action_probability`` (see ``ACER.action_probability``) for the policy's action space."""
    if isinstance(policy.dist, Categorical):
        return categorical_action_probability(policy, observation, actions, logp, state, mask)
    return sdn_action_probability(policy, observation, actions, logp, state, mask)


def categorical_action_probability(
    policy: ACERPolicy | RecurrentACERPolicy,
    observation: ObservationArrays,
    actions: np.ndarray | None,
    logp: bool,
    state: tuple[np.ndarray, ...] | None = None,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """SB2's ``action_probability`` for ``Discrete`` actions: ``[n, A]`` probabilities, or with ``actions``
    those of the actions ``[n, 1]`` (log-probabilities with ``logp``); a single observation drops the batch
    axis. A recurrent policy takes the ``state`` returned by ``predict`` and the episode-start flags ``mask``.
    """
    if isinstance(policy, RecurrentACERPolicy):
        inputs, vectorized, lstm_state, starts = policy.prepare_inputs(observation, state, mask)
        with th.no_grad():
            probs = policy.action_probs(inputs, lstm_state, starts)[0].cpu().numpy()
    else:
        obs_tensor, vectorized = policy.obs_to_tensor(observation)
        with th.no_grad():
            probs = policy.action_probs(obs_tensor).cpu().numpy()
    if actions is None:
        result = np.log(probs) if logp else probs
        return result if vectorized else result[0]
    actions_array = check_actions(actions, n_observations=probs.shape[0], n_actions=probs.shape[1])
    chosen = probs[np.arange(len(actions_array)), actions_array].reshape(-1, 1)
    if logp:
        chosen = np.log(chosen)
    return chosen if vectorized else chosen.reshape(1)


def sdn_action_probability(
    policy: SDNPolicy,
    observation: ObservationArrays,
    actions: np.ndarray | None,
    logp: bool,
    state: tuple[np.ndarray, ...] | None = None,
    mask: np.ndarray | None = None,
) -> np.ndarray:
    """SB2's ``action_probability`` for an ``SDNPolicy``.

    Without ``actions``: the flat statistics of ``pi(.|x)`` (``[n, S]``: the mean then the log-std for
    ``Box``, each factor's probabilities for the factorised spaces). With ``actions`` (one per observation,
    in the action space's shape; ``Box`` actions unclipped): their density or probability
    ``pi(a|x)`` (``log pi(a|x)`` with ``logp``), ``[n, 1]``. A single observation drops the batch axis.
    A recurrent policy takes the ``state`` returned by ``predict`` and the episode-start flags ``mask``.
    """
    with th.no_grad():
        if isinstance(policy, RecurrentSDNPolicy):
            obs_tensor, vectorized, lstm_state, starts = policy.prepare_inputs(observation, state, mask)
            stats = policy.step_statistics(obs_tensor, lstm_state, starts)[0]
        else:
            obs_tensor, vectorized = policy.obs_to_tensor(observation)
            stats = policy.statistics(obs_tensor)
    if actions is None:
        result = stats.cpu().numpy()
        return result if vectorized else result[0]
    flat = np.asarray(actions).reshape(stats.shape[0], policy.dist.action_size)
    action_tensor = th.as_tensor(flat.astype(policy.dist.action_dtype), device=stats.device)
    with th.no_grad():
        log_prob = policy.dist.log_prob(stats.unsqueeze(0), action_tensor.unsqueeze(0))[0]
    chosen = (log_prob if logp else log_prob.exp()).cpu().numpy().reshape(-1, 1)
    return chosen if vectorized else chosen.reshape(1)

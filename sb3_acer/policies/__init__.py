"""ACER actor-critic policies: a softmax policy head and a Q-value head over a shared feature extractor.

- :mod:`sb3_acer.policies.base`: what all of them share (the ``net_arch`` parser, the heads and their
  initialisation, :func:`q_only_parameters`);
- :mod:`sb3_acer.policies.feed_forward`: :class:`ACERPolicy`, ``MlpPolicy``, ``CnnPolicy`` and
  ``MultiInputPolicy`` (``Dict`` observations);
- :mod:`sb3_acer.policies.recurrent`: :class:`RecurrentACERPolicy` and the LSTM policies
  (``MlpLstmPolicy``, ``MlpLnLstmPolicy``, ``CnnLstmPolicy``, ``CnnLnLstmPolicy``,
  ``MultiInputLstmPolicy``);
- :mod:`sb3_acer.policies.sdn`: :class:`SDNPolicy`, ``SDNMlpPolicy``, ``SDNCnnPolicy`` and
  ``SDNMultiInputPolicy``, the actor and
  stochastic dueling critic of ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions (``MlpPolicy`` and
  ``CnnPolicy`` build them for those spaces);
- :mod:`sb3_acer.policies.sdn_recurrent`: :class:`RecurrentSDNPolicy` and ``SDNMlpLstmPolicy``,
  ``SDNMlpLnLstmPolicy``, ``SDNCnnLstmPolicy``, ``SDNCnnLnLstmPolicy``, ``SDNMultiInputLstmPolicy``, which
  the LSTM policies build for those spaces.

Model files name the policy classes by their path in this package (``sb3_acer.policies:MlpPolicy``).
"""

from sb3_acer.policies.base import BaseACERPolicy, PolicyOutput, parse_net_arch, q_only_parameters
from sb3_acer.policies.feed_forward import ACERPolicy, CnnPolicy, MlpPolicy, MultiInputPolicy
from sb3_acer.policies.recurrent import (
    CnnLnLstmPolicy,
    CnnLstmPolicy,
    LayerNormLSTM,
    LSTMMemory,
    LSTMState,
    MlpLnLstmPolicy,
    MlpLstmPolicy,
    MultiInputLstmPolicy,
    RecurrentACERPolicy,
    RecurrentOutput,
    parse_recurrent_net_arch,
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
    "ACERPolicy",
    "BaseACERPolicy",
    "CnnLnLstmPolicy",
    "CnnLstmPolicy",
    "CnnPolicy",
    "LSTMMemory",
    "LSTMState",
    "LayerNormLSTM",
    "MlpLnLstmPolicy",
    "MlpLstmPolicy",
    "MlpPolicy",
    "MultiInputLstmPolicy",
    "MultiInputPolicy",
    "PolicyOutput",
    "RecurrentACERPolicy",
    "RecurrentOutput",
    "RecurrentSDNPolicy",
    "SDNCnnLnLstmPolicy",
    "SDNCnnLstmPolicy",
    "SDNCnnPolicy",
    "SDNMlpLnLstmPolicy",
    "SDNMlpLstmPolicy",
    "SDNMlpPolicy",
    "SDNMultiInputLstmPolicy",
    "SDNMultiInputPolicy",
    "SDNPolicy",
    "parse_net_arch",
    "parse_recurrent_net_arch",
    "q_only_parameters",
]

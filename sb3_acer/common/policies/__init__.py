"""ACER's one policy family (re-exports).

- :mod:`.base`: :class:`ACERPolicy`, features -> shared layers -> the head of the action space, and
  ``MlpPolicy``, ``CnnPolicy``, ``MultiInputPolicy``;
- :mod:`.layout`: the ``net_arch`` parser and the protocols of a policy's modules and of a head;
- :mod:`.lstm`: :class:`RecurrentACERPolicy`, the same with an LSTM after the features, and the
  ``...LstmPolicy`` / ``...LnLstmPolicy`` classes;
- :mod:`.categorical`: the head of ``Discrete`` actions (softmax ``pi`` and ``Q``);
- :mod:`.sdn`: the head of ``Box``, ``MultiDiscrete`` and ``MultiBinary`` actions (an actor and the
  stochastic dueling critic);
- :mod:`.torch_layers`: :class:`MinAtarCNN`, a features extractor for MinAtar's small images.

The names users pass to ``ACER`` are in :mod:`sb3_acer.acer.policies`.
"""

from sb3_acer.common.policies.base import ACERPolicy, CnnPolicy, MlpPolicy, MultiInputPolicy
from sb3_acer.common.policies.categorical import CategoricalHead, PolicyOutput
from sb3_acer.common.policies.layout import ActionHead, PolicyModules, parse_net_arch
from sb3_acer.common.policies.lstm import (
    CnnLnLstmPolicy,
    CnnLstmPolicy,
    LayerNormLSTM,
    LSTMState,
    MlpLnLstmPolicy,
    MlpLstmPolicy,
    MultiInputLstmPolicy,
    RecurrentACERPolicy,
    parse_recurrent_net_arch,
)
from sb3_acer.common.policies.sdn import DuelingHead, SDNOutput
from sb3_acer.common.policies.torch_layers import MinAtarCNN

__all__ = [
    "ACERPolicy",
    "ActionHead",
    "CategoricalHead",
    "CnnLnLstmPolicy",
    "CnnLstmPolicy",
    "CnnPolicy",
    "DuelingHead",
    "LSTMState",
    "LayerNormLSTM",
    "MinAtarCNN",
    "MlpLnLstmPolicy",
    "MlpLstmPolicy",
    "MlpPolicy",
    "MultiInputLstmPolicy",
    "MultiInputPolicy",
    "PolicyModules",
    "PolicyOutput",
    "RecurrentACERPolicy",
    "SDNOutput",
    "parse_net_arch",
    "parse_recurrent_net_arch",
]

"""One ACER update for every action space: :func:`compute_gradients`.

Design. The steps every action family shares are written once, in :mod:`.pipeline`: the forward passes over
the segment (feed-forward, or recurrent from the segment's stored LSTM state), the trust-region projection
and back-propagation, the diagnostics, the total loss and the :class:`UpdateStats` record. They work on the
flat statistics ``phi`` of ``pi(.|x)`` (probabilities for ``Discrete``) through the policy's
:class:`~sb3_acer.common.distributions.ActionDistribution` (``entropy``, ``kl``, ``kl_gradient``,
``project``), :class:`~sb3_acer.common.distributions.Categorical` included.

What differs between the families is the critic and the policy term (paper eqs. 4-12 against 13-16): an
:class:`~.records.ACERTerms` provides the networks' raw outputs (:meth:`~.records.ACERTerms.evaluate`), the
critic record (importance weights, ``Q`` or the dueling ``Q~``, Retrace targets, the critic loss), the
per-sample policy gradient with respect to ``phi`` (entropy bonus included) and the policy loss:

- :class:`~.categorical.CategoricalTerms`: ``Discrete``, exact expectations over the ``A`` actions;
- :class:`~.sdn.SDNTerms`: ``Box``, ``MultiDiscrete``, ``MultiBinary``, the stochastic dueling network.

:func:`~.pipeline.terms_for` picks one from the distribution; the algorithm class never looks at the
policy's family. The pure maths stay in :mod:`sb3_acer.common.functional`; the records and the steps'
helpers not re-exported here are in the submodules.
"""

from sb3_acer.common.update import pipeline
from sb3_acer.common.update.categorical import CategoricalTerms
from sb3_acer.common.update.pipeline import *  # noqa: F403 - the shared steps, by pipeline.__all__
from sb3_acer.common.update.records import ACERTerms, AnyPolicy, NetworkOutputs, UpdateConfig, UpdateStats
from sb3_acer.common.update.sdn import SDNDraws, SDNTerms, draw_samples

__all__ = [
    *pipeline.__all__,
    "ACERTerms",
    "AnyPolicy",
    "CategoricalTerms",
    "NetworkOutputs",
    "SDNDraws",
    "SDNTerms",
    "UpdateConfig",
    "UpdateStats",
    "draw_samples",
]

"""Actor-learner ACER on Ray: actors on many cores and machines collect segments, one learner trains.

``model.learn(total_timesteps, actors=RayActors(...))`` runs
:meth:`~sb3_acer.distributed.learner.RayActors.learn` instead of the synchronous loop; everything else
(the model, ``train``, the files) is the same. Ray is an optional dependency (``pip install
"sb3-acer[ray]"``): this package imports without it, and asking for actors without it raises
:class:`~sb3_acer.distributed.ray_support.RayNotInstalledError`.
"""

from sb3_acer.distributed.actors import ActorEnvError
from sb3_acer.distributed.learner import RayActors
from sb3_acer.distributed.ray_support import RAY_INSTALL, RayNotInstalledError, require_ray

__all__ = ["RAY_INSTALL", "ActorEnvError", "RayActors", "RayNotInstalledError", "require_ray"]

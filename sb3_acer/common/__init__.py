"""What ACER is built from, one module or package per concern: the pure maths
(:mod:`~sb3_acer.common.functional`), the action distributions (:mod:`~sb3_acer.common.distributions`), the
update (:mod:`~sb3_acer.common.update`), the learn loop (:mod:`~sb3_acer.common.segment_algorithm`), the
rollout (:mod:`~sb3_acer.common.rollout`), the records that cross module boundaries
(:mod:`~sb3_acer.common.type_aliases`), the replay memory (:mod:`~sb3_acer.common.buffers`), the model and
replay files (:mod:`~sb3_acer.common.save_util`), the checks of settings and inputs
(:mod:`~sb3_acer.common.checks`), observations, the optimizer, learning-rate schedules and callbacks."""

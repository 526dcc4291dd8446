"""The checks of what a user hands ACER: its settings (:mod:`~sb3_acer.common.checks.settings`) and the
observations given to ``predict`` (:mod:`~sb3_acer.common.checks.observations`)."""

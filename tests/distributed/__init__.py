"""Tests of actor-learner training on Ray (`sb3_acer/distributed/`)."""

"""Tests of the model, replay and random-state files (`sb3_acer/common/save_util/`)."""

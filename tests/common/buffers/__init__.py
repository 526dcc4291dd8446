"""Tests of the replay memory (`sb3_acer/common/buffers/`)."""

"""Tests of what the algorithm is built from (`sb3_acer/common/`)."""

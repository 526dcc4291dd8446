"""Tests of the environments (`sb3_acer/envs/`)."""

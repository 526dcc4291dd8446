"""Tests of the algorithm class `ACER` (`sb3_acer/acer/`)."""

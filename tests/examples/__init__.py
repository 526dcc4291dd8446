"""Tests of the examples (`sb3_acer/examples/`)."""

"""Tests of the ACER maths (`sb3_acer/common/functional/`)."""

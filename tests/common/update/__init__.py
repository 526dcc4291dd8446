"""Tests of the gradient step (`sb3_acer/common/update/`)."""

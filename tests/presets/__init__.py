"""Tests of the presets (`sb3_acer/presets/`)."""

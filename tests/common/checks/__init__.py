"""Tests of the checks of settings and inputs (`sb3_acer/common/checks/`)."""

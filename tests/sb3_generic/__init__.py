"""Stable-Baselines3's algorithm-generic tests, adapted to run against ACER (see each module's docstring)."""

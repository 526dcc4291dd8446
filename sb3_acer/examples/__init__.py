"""Runnable examples (``python -m sb3_acer.examples.cartpole``)."""

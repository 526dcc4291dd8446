"""Environments: ale-py's vectorised Atari sampler, a subprocess env that survives crashing and hanging
workers, and the frame-stack detection the replay memory's layout depends on."""

from sb3_acer.envs.frame_stack import frame_stack_size

__all__ = ["frame_stack_size"]

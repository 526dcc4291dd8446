"""The replay memory: whole segments of ``n_steps`` transitions per environment, sampled uniformly.

Two storage layouts share one interface: :class:`SegmentReplayBuffer` keeps every observation whole;
:class:`FrameStackReplayBuffer` keeps each frame of a frame-stacked image observation once (Atari).
:func:`make_replay_buffer` picks the layout. Nothing here imports environment code or torch.
"""

from sb3_acer.replay.frame_buffer import FrameStackReplayBuffer, ReplayBuffer, make_replay_buffer
from sb3_acer.replay.segment_buffer import SegmentReplayBuffer, SlotReplay, available_memory_bytes

__all__ = [
    "FrameStackReplayBuffer",
    "ReplayBuffer",
    "SegmentReplayBuffer",
    "SlotReplay",
    "available_memory_bytes",
    "make_replay_buffer",
]

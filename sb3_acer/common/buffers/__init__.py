"""The replay memory: whole segments of ``n_steps`` transitions per environment, sampled uniformly.

One base, :class:`SlotReplay` (slot bookkeeping, sampling, batch assembly, the state dict), and two
storage layouts: :class:`SegmentReplayBuffer` keeps every observation whole; :class:`FrameStackReplayBuffer`
keeps each frame of a frame-stacked image observation once (Atari). :func:`make_replay_buffer` picks the
layout. Nothing here imports environment code or torch.
"""

from sb3_acer.common.buffers.base import SlotReplay, available_memory_bytes
from sb3_acer.common.buffers.factory import BUFFER_CLASSES, ReplayBuffer, make_replay_buffer
from sb3_acer.common.buffers.frame_buffer import FrameStackReplayBuffer
from sb3_acer.common.buffers.segment_buffer import SegmentReplayBuffer

__all__ = [
    "BUFFER_CLASSES",
    "FrameStackReplayBuffer",
    "ReplayBuffer",
    "SegmentReplayBuffer",
    "SlotReplay",
    "available_memory_bytes",
    "make_replay_buffer",
]

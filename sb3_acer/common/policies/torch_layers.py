"""Feature extractors for ACER's policies (and SB3's) beyond those SB3 ships: :class:`MinAtarCNN`, the
small convolutional network of the MinAtar paper for 10x10 images, which SB3's ``NatureCNN`` cannot take
(its 8x8 stride-4, 4x4 stride-2 and 3x3 convolutions need at least 36x36 pixels)."""

from __future__ import annotations

import torch as th
from gymnasium import spaces
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

__all__ = ["MinAtarCNN"]


class MinAtarCNN(BaseFeaturesExtractor):
    """The network of the MinAtar paper (Young & Tian 2019) for small channel-first images: one 3x3
    convolution with ``n_filters`` channels, stride 1 and no padding, ReLU, then a linear layer of
    ``features_dim`` units, ReLU. On MinAtar's ``[C, 10, 10]`` observations that is 16 feature maps of 8x8
    and 128 features, ``C * 144 + 16 + 1024 * 128 + 128`` parameters.

    It reads the observation's first axis as the channels and does not scale the values: give it
    ``[C, H, W]`` floats in [0, 1], such as :class:`~sb3_acer.envs.minatar.MinAtarObservation` makes of
    MinAtar's boolean frames. The policy's heads then sit directly on its features when ``net_arch=[]``
    (as in the paper; without it ACER's and SB3's policies add their default hidden layers for
    non-``NatureCNN`` extractors)::

        ACER("CnnPolicy", env, policy_kwargs=dict(features_extractor_class=MinAtarCNN, net_arch=[]))
        PPO("CnnPolicy", env, policy_kwargs=dict(features_extractor_class=MinAtarCNN, net_arch=[]))
        DQN("CnnPolicy", env, policy_kwargs=dict(features_extractor_class=MinAtarCNN, net_arch=[]))

    A model saved with it names this class in its file, which loads as it is: the class is in the table a
    model file's classes resolve through (:mod:`sb3_acer.common.save_util.class_table`).

    Args:
        observation_space: a ``Box`` of channel-first images ``[C, H, W]`` with ``H`` and ``W`` at least
            ``kernel_size``.
        features_dim: the number of features (units of the linear layer).
        n_filters: the number of channels of the convolution.
        kernel_size: the side of the convolution's square kernel.

    Raises:
        ValueError: the space is not a three-dimensional ``Box``, or its images are smaller than the kernel.
    """

    def __init__(
        self,
        observation_space: spaces.Space,
        features_dim: int = 128,
        n_filters: int = 16,
        kernel_size: int = 3,
    ) -> None:
        shape = getattr(observation_space, "shape", None)
        if not isinstance(observation_space, spaces.Box) or shape is None or len(shape) != 3:
            raise ValueError(f"MinAtarCNN needs [C, H, W] Box observations, got {observation_space}")
        n_channels, height, width = shape
        if min(height, width) < kernel_size:
            raise ValueError(
                f"MinAtarCNN: images of {height}x{width} are smaller than its {kernel_size}x{kernel_size} "
                f"kernel; observations must be channel-first [C, H, W], got {observation_space}"
            )
        super().__init__(observation_space, features_dim)
        self.cnn = nn.Sequential(
            nn.Conv2d(n_channels, n_filters, kernel_size=kernel_size, stride=1), nn.ReLU(), nn.Flatten()
        )
        n_flatten = n_filters * (height - kernel_size + 1) * (width - kernel_size + 1)
        self.linear = nn.Sequential(nn.Linear(n_flatten, features_dim), nn.ReLU())

    def forward(self, observations: th.Tensor) -> th.Tensor:
        """``[N, features_dim]`` features of ``[N, C, H, W]`` observations."""
        return self.linear(self.cnn(observations))

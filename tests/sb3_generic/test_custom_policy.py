"""Network and optimizer settings, adapted from stable-baselines3 tests/test_custom_policy.py (MIT,
Copyright (c) 2019 Antonin Raffin): the cases of the on-policy algorithms, with ACER as the only algorithm.

Left out: SAC's and TD3's critics, DQN's policy, and SB3's ``create_mlp``.
"""

import pytest
import torch as th
from stable_baselines3.common.sb2_compat.rmsprop_tf_like import RMSpropTFLike

from sb3_acer import ACER

from .common import SMALL, deliberate

#: SB3 warns about the form ``[dict(...)]``, its old one; for ACER it is SB2's, which it keeps.
SB2_NET_ARCH = deliberate(
    "ACER keeps SB2's net_arch form [shared layers..., dict(pi=[...], qf=[...])] (vf is "
    "accepted for qf), so it does not warn about it as SB3 does about its own old form"
)


@pytest.mark.parametrize(
    "net_arch",
    [
        [],
        [4],
        [4, 4],
        dict(vf=[16], pi=[8]),
        dict(vf=[8, 4], pi=[8]),
        dict(vf=[8], pi=[8, 4]),
        dict(pi=[8]),
        # Old format, emits a warning
        pytest.param([dict(vf=[8])], marks=SB2_NET_ARCH),
        pytest.param([dict(vf=[8], pi=[4])], marks=SB2_NET_ARCH),
    ],
)
@pytest.mark.parametrize("model_class", [ACER])
def test_flexible_mlp(model_class, net_arch):
    kwargs = dict(policy_kwargs=dict(net_arch=net_arch), **SMALL)
    if isinstance(net_arch, list) and len(net_arch) > 0 and isinstance(net_arch[0], dict):
        with pytest.warns(UserWarning):
            _ = model_class("MlpPolicy", "CartPole-v1", **kwargs).learn(128)
    else:
        _ = model_class("MlpPolicy", "CartPole-v1", **kwargs).learn(128)


@pytest.mark.parametrize("model_class", [ACER])
@pytest.mark.parametrize("optimizer_kwargs", [None, dict(weight_decay=0.0)])
def test_custom_optimizer(model_class, optimizer_kwargs):
    # Use different environment for DQN (ACER: as A2C, continuous actions)
    env_id = "Pendulum-v1"

    kwargs = dict(SMALL)

    policy_kwargs = dict(optimizer_class=th.optim.AdamW, optimizer_kwargs=optimizer_kwargs, net_arch=[16])
    _ = model_class("MlpPolicy", env_id, policy_kwargs=policy_kwargs, **kwargs).learn(256)


def test_tf_like_rmsprop_optimizer():
    policy_kwargs = dict(optimizer_class=RMSpropTFLike, net_arch=[16])
    _ = ACER("MlpPolicy", "Pendulum-v1", policy_kwargs=policy_kwargs).learn(256)

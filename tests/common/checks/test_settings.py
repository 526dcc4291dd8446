"""Validation of hyperparameters and arguments: one table of bad constructor arguments with their exact error
messages (each refused before anything global changes), the boundaries that are accepted, and the arguments
of ``load`` and ``learn``."""

from __future__ import annotations

import os
import pathlib
import random
import re
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from stable_baselines3.common.policies import ActorCriticPolicy
from torch import nn

from sb3_acer import ACER
from sb3_acer.common.buffers import SegmentReplayBuffer

POLICY_NAMES = (
    "['CnnLnLstmPolicy', 'CnnLstmPolicy', 'CnnPolicy', 'MlpLnLstmPolicy', 'MlpLstmPolicy', 'MlpPolicy', "
    "'MultiInputLstmPolicy', 'MultiInputPolicy']"
)
LR_SCHEDULES = "['constant', 'double_linear_con', 'double_middle_drop', 'linear', 'middle_drop']"
MLP_KWARGS = (
    "['activation_fn', 'features_extractor_class', 'features_extractor_kwargs', 'net_arch', "
    "'normalize_images', 'optimizer_class', 'optimizer_kwargs', 'ortho_init', 'share_features_extractor']"
)
LEARNING_RATE = (
    "learning_rate must be a positive finite number or a schedule (callable of progress remaining)"
)
LSTM_KWARGS = (
    "['activation_fn', 'features_extractor_class', 'features_extractor_kwargs', 'layer_norm', 'n_lstm', "
    "'net_arch', 'normalize_images', 'optimizer_class', 'optimizer_kwargs', 'ortho_init']"
)
ADAM = th.optim.Adam
# (policy, constructor arguments, the error's whole message). A message ending in "..." is the start of the
# message: the rest is torch's, and changes with its version.
BAD_HYPERPARAMETERS: list[tuple[Any, dict[str, Any], str]] = [
    # the algorithm's settings
    ("MlpPolicy", dict(n_steps=0), "n_steps must be positive, got 0"),
    ("MlpPolicy", dict(n_steps=-3), "n_steps must be positive, got -3"),
    ("MlpPolicy", dict(n_steps=2.5), "n_steps must be an integer, got 2.5"),
    ("MlpPolicy", dict(n_steps=True), "n_steps must be an integer, got True"),
    (
        "MlpPolicy",
        dict(n_steps=20, buffer_size=19),
        "buffer_size must be at least n_steps (20) to hold one segment, got 19",
    ),
    (
        "MlpPolicy",
        dict(buffer_size=100, replay_start=101),
        "replay_start must not exceed buffer_size (100) or replay never starts, got 101",
    ),
    ("MlpPolicy", dict(replay_ratio=-1), "replay_ratio must be non-negative, got -1"),
    ("MlpPolicy", dict(replay_ratio=float("inf")), "replay_ratio must be a finite number, got inf"),
    ("MlpPolicy", dict(correction_term=0.0), "correction_term must be positive, got 0.0"),
    ("MlpPolicy", dict(correction_term=-1.0), "correction_term must be positive, got -1.0"),
    ("MlpPolicy", dict(correction_term=float("nan")), "correction_term must be positive, got nan"),
    ("MlpPolicy", dict(delta=0.0), "delta must be positive, got 0.0"),
    ("MlpPolicy", dict(delta=-1.0), "delta must be positive, got -1.0"),
    ("MlpPolicy", dict(alpha=1.0), "alpha must be in [0, 1), got 1.0"),
    ("MlpPolicy", dict(alpha=-0.1), "alpha must be in [0, 1), got -0.1"),
    ("MlpPolicy", dict(alpha=float("nan")), "alpha must be in [0, 1), got nan"),
    ("MlpPolicy", dict(gamma=1.01), "gamma must be in [0, 1], got 1.01"),
    ("MlpPolicy", dict(gamma=-0.5), "gamma must be in [0, 1], got -0.5"),
    ("MlpPolicy", dict(gamma=float("nan")), "gamma must be a finite number, got nan"),
    ("MlpPolicy", dict(lr_schedule="cosine"), f"unknown lr_schedule 'cosine'; choose one of {LR_SCHEDULES}"),
    ("MlpPolicy", dict(lr_schedule=None), f"unknown lr_schedule None; choose one of {LR_SCHEDULES}"),
    (
        "MlpPolicy",
        dict(lr_schedule=["linear"]),
        f"unknown lr_schedule ['linear']; choose one of {LR_SCHEDULES}",
    ),
    (
        "MlpPolicy",
        dict(learning_rate=0.0),
        f"{LEARNING_RATE}, got 0.0",
    ),
    (
        "MlpPolicy",
        dict(learning_rate=float("inf")),
        f"{LEARNING_RATE}, got inf",
    ),
    (
        "MlpPolicy",
        dict(max_grad_norm=0.0),
        "max_grad_norm must be a positive number or None (no clipping), got 0.0",
    ),
    ("MlpPolicy", dict(rprop_alpha=0), "rprop_alpha must be in (0, 1], got 0"),
    ("MlpPolicy", dict(rprop_alpha=1.0001), "rprop_alpha must be in (0, 1], got 1.0001"),
    ("MlpPolicy", dict(num_procs=0), "num_procs must be a positive integer at most 1024, or None, got 0"),
    ("MlpPolicy", dict(trust_region="False"), "trust_region must be True or False, got 'False'"),
    (
        "MlpPolicy",
        dict(handle_timeout_termination=0),
        "handle_timeout_termination must be True or False, got 0",
    ),
    ("MlpPolicy", dict(retrace_lambda=1.5), "retrace_lambda must be a number in [0, 1], got 1.5"),
    ("MlpPolicy", dict(retrace_lambda=-0.1), "retrace_lambda must be a number in [0, 1], got -0.1"),
    ("MlpPolicy", dict(retrace_lambda="0.9"), "retrace_lambda must be a number in [0, 1], got '0.9'"),
    ("MlpPolicy", dict(q_lr_ratio=0.0), "q_lr_ratio must be a positive number, got 0.0"),
    ("MlpPolicy", dict(q_lr_ratio=-2), "q_lr_ratio must be a positive number, got -2"),
    ("MlpPolicy", dict(q_lr_ratio=float("inf")), "q_lr_ratio must be a positive number, got inf"),
    ("MlpPolicy", dict(q_lr_ratio="3"), "q_lr_ratio must be a positive number, got '3'"),
    ("MlpPolicy", dict(seed=-1), "seed must be an integer in [0, 2**32 - 1], got -1"),
    ("MlpPolicy", dict(seed=2**40), "seed must be an integer in [0, 2**32 - 1], got 1099511627776"),
    ("MlpPolicy", dict(seed="abc"), "seed must be an integer in [0, 2**32 - 1], got 'abc'"),
    ("MlpPolicy", dict(seed=1.5), "seed must be an integer in [0, 2**32 - 1], got 1.5"),
    ("MlpPolicy", dict(device="tpu"), "device 'tpu' is not a torch device: ..."),
    ("MlpPolicy", dict(verbose="x"), "verbose must be a non-negative integer, got 'x'"),
    ("MlpPolicy", dict(verbose=-1), "verbose must be a non-negative integer, got -1"),
    (
        "MlpPolicy",
        dict(tensorboard_log=3),
        "tensorboard_log must be a folder path (str or os.PathLike) or None, got 3",
    ),
    # numbers too large for a float, and memory no machine has (the message ends with this machine's)
    ("MlpPolicy", dict(gamma=10**400), f"gamma must be a finite number, got {10**400}"),
    ("MlpPolicy", dict(delta=10**400), f"delta must be a number, got {10**400}"),
    (
        "MlpPolicy",
        dict(stats_window_size=10**30),
        f"stats_window_size must be a positive integer at most 2**63 - 1, got {10**30}",
    ),
    (
        "MlpPolicy",
        dict(buffer_size=10**20),
        "buffer_size=100000000000000000000 (the replay memory) needs 3,985,000,000,000,000,000,000 bytes "
        "(3.98e+12 GB), more than this machine's memory (...",
    ),
    (
        "MlpPolicy",
        dict(n_steps=10**12, replay_ratio=0),
        "n_steps=1000000000000 x n_envs=1 (one segment) needs 39,000,000,000,017 bytes (3.9e+04 GB), more "
        "than this machine's memory (...",
    ),
    # the policy
    ("LstmPolicy", {}, f"unknown policy 'LstmPolicy'; choose one of {POLICY_NAMES} or a class"),
    (
        3,
        {},
        f"policy must be an ACERPolicy subclass or one of {POLICY_NAMES}",
    ),
    (
        ActorCriticPolicy,
        {},
        f"policy must be an ACERPolicy subclass or one of {POLICY_NAMES}",
    ),
    ("MlpPolicy", dict(policy_kwargs="net_arch"), "policy_kwargs must be a dict, got str"),
    (
        "MlpPolicy",
        dict(policy_kwargs=dict(bad=1)),
        f"Unknown keywords for policy: ['bad']; accepted: {MLP_KWARGS}",
    ),
    (
        "MlpLstmPolicy",
        dict(policy_kwargs=dict(layers=[64])),
        f"Unknown keywords for policy: ['layers']; accepted: {LSTM_KWARGS}",
    ),
    ("MlpLstmPolicy", dict(policy_kwargs=dict(n_lstm=0)), "n_lstm must be a positive integer, got 0"),
    # net_arch
    (
        "MlpPolicy",
        dict(policy_kwargs=dict(net_arch=[8, dict(pi=[8]), 8])),
        "net_arch: the shared part must be a list of positive layer sizes, got [8, {'pi': [8]}, 8]",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs=dict(net_arch=dict(pi=[8], critic=[8]))),
        "net_arch dict keys must be 'pi' and 'qf' (or 'vf'), got ['critic', 'pi']",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs=dict(net_arch=[0])),
        "net_arch: the shared part must be a list of positive layer sizes, got [0]",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs=dict(net_arch="64x64")),
        "net_arch must be a list or a dict, got '64x64'",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs=dict(net_arch="64,64")),
        "net_arch must be a list or a dict, got '64,64'",
    ),
    (
        "MlpLstmPolicy",
        dict(policy_kwargs=dict(net_arch=[64, 64])),
        "net_arch of a recurrent policy must contain 'lstm' exactly once, got [64, 64]",
    ),
    (
        "MlpLstmPolicy",
        dict(policy_kwargs=dict(net_arch=["lstm", 8, "lstm"])),
        "net_arch of a recurrent policy must contain 'lstm' exactly once, got ['lstm', 8, 'lstm']",
    ),
    (
        "MlpLstmPolicy",
        dict(policy_kwargs=dict(net_arch=[dict(pi=[8]), "lstm"])),
        "net_arch: the part before 'lstm' must be a list of positive layer sizes, got [{'pi': [8]}]",
    ),
    (
        "MlpLstmPolicy",
        dict(policy_kwargs=dict(net_arch=["lstm", dict(pi=[8]), 8])),
        "net_arch: the shared part must be a list of positive layer sizes, got [{'pi': [8]}, 8]",
    ),
    (
        "MlpLstmPolicy",
        dict(policy_kwargs=dict(net_arch=["lstm", dict(critic=[8])])),
        "net_arch dict keys must be 'pi' and 'qf' (or 'vf'), got ['critic']",
    ),
    (
        "MlpLstmPolicy",
        dict(policy_kwargs=dict(net_arch="lstm")),
        "net_arch of a recurrent policy must be a list containing 'lstm', got 'lstm'",
    ),
    # the optimizer
    (
        "MlpPolicy",
        dict(policy_kwargs={"optimizer_class": nn.ReLU}),
        "policy_kwargs: optimizer_class must be a torch.optim.Optimizer subclass, got "
        "<class 'torch.nn.modules.activation.ReLU'>",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs={"optimizer_class": th.optim.LBFGS}),
        "policy_kwargs: optimizer_class LBFGS cannot train ACER: its step needs a closure that evaluates the "
        "loss again, and ACER steps on gradients it computed",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs={"optimizer_class": th.optim.SparseAdam}),
        "policy_kwargs: optimizer_class SparseAdam cannot train ACER: it takes only sparse gradients, and "
        "ACER's networks have dense ones",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs={"optimizer_class": "Adam"}),
        "policy_kwargs: optimizer_class must be a torch.optim.Optimizer subclass, got 'Adam'",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs={"optimizer_class": ADAM, "optimizer_kwargs": {"lr": 1.0}}),
        "policy_kwargs: optimizer_kwargs must not set 'lr'; the step size is learning_rate "
        "(with lr_schedule)",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs={"optimizer_class": ADAM, "optimizer_kwargs": {"betaz": (0.9, 0.9)}}),
        "policy_kwargs: unknown optimizer_kwargs ['betaz'] for Adam; accepted: ['amsgrad', 'betas', ...",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs={"optimizer_class": ADAM, "optimizer_kwargs": [0.9]}),
        "policy_kwargs: optimizer_kwargs must be a dict, got list",
    ),
    (
        "MlpPolicy",
        dict(policy_kwargs={"optimizer_kwargs": {"eps": 1e-3}}),
        "policy_kwargs: optimizer_kwargs needs an optimizer_class; the default RMSProp takes rprop_alpha and "
        "rprop_epsilon",
    ),
]


def _global_state() -> tuple[Any, ...]:
    return (
        np.random.get_state()[1].copy(),  # type: ignore[index]
        random.getstate(),
        th.get_rng_state(),
        th.get_num_threads(),
    )


def _assert_unchanged(before: tuple[Any, ...]) -> None:
    numpy_state, python_state, torch_state, threads = before
    np.testing.assert_array_equal(np.random.get_state()[1], numpy_state)  # type: ignore[index]
    assert random.getstate() == python_state
    assert th.equal(th.get_rng_state(), torch_state)
    assert th.get_num_threads() == threads


# -------------------------------------------------------------------------------------------- hyperparameters


@pytest.mark.parametrize(
    ("policy", "kwargs", "message"),
    [pytest.param(*row, id=f"{getattr(row[0], '__name__', row[0])}-{row[1]}") for row in BAD_HYPERPARAMETERS],
)
def test_bad_hyperparameters_are_refused_naming_them_before_anything_global_changes(
    policy: Any, kwargs: dict[str, Any], message: str
) -> None:
    # With a seed and num_procs beside the bad setting (unless it is one of them): the error names the
    # setting, whether it is found by the checks or while the policy is built, and neither the global
    # generators (seed) nor torch's thread count (num_procs) were changed.
    before = _global_state()
    settings = {"seed": 123, "num_procs": before[3] + 1, **kwargs}
    with pytest.raises(ValueError) as raised:
        ACER(policy, "CartPole-v1", **settings)
    if message.endswith("..."):
        assert str(raised.value).startswith(message[:-3])
    else:
        assert str(raised.value) == message
    _assert_unchanged(before)


def test_boundary_hyperparameters_are_accepted() -> None:
    # The ends of the documented ranges are valid; a small buffer is fine without replay.
    ACER("MlpPolicy", "CartPole-v1", gamma=1.0, alpha=0.0, _init_setup_model=False)
    ACER("MlpPolicy", "CartPole-v1", gamma=0.0, _init_setup_model=False)
    ACER("MlpPolicy", "CartPole-v1", retrace_lambda=0.0, _init_setup_model=False)
    ACER("MlpPolicy", "CartPole-v1", retrace_lambda=1, _init_setup_model=False)
    assert ACER("MlpPolicy", "CartPole-v1", rprop_alpha=1.0).rprop_alpha == 1.0  # rprop_alpha is in (0, 1]
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=20, buffer_size=1, replay_ratio=0)
    assert model.replay_buffer is None


def test_a_replay_memory_larger_than_the_machine_is_refused_before_it_is_allocated() -> None:
    # Twice the machine's memory: NumPy would allocate it lazily, and the process be killed once it filled up.
    total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    one_segment = SegmentReplayBuffer.estimate_nbytes(1, 5, 1, (4,), np.dtype(np.float32), 2)
    buffer_size = 5 * (2 * total // one_segment + 1)
    with pytest.raises(
        ValueError, match=rf"^buffer_size={buffer_size} \(the replay memory\) needs [0-9,]+ bytes"
    ):
        ACER("MlpPolicy", "CartPole-v1", n_steps=5, buffer_size=buffer_size)


def test_every_hyperparameter_has_its_rules_in_the_one_table() -> None:
    """A hyperparameter is added in one place for its rules: the table covers every constructor setting (all
    of which a model file saves), and the shared rules read the same in the other callers (a model file's
    counters, RayActors, presets)."""
    import inspect

    from sb3_acer.common.checks import HYPERPARAMETERS, POSITIVE_INTEGER, UNIT_NUMBER, check
    from sb3_acer.common.checks.settings import check_count

    not_hyperparameters = {"self", "policy", "env", "policy_kwargs", "_init_setup_model", "device"}
    assert set(HYPERPARAMETERS) == set(inspect.signature(ACER.__init__).parameters) - not_hyperparameters
    with pytest.raises(ValueError) as error:
        check(1.5, "progress_remaining", UNIT_NUMBER)
    assert str(error.value) == "progress_remaining must be a number in [0, 1], got 1.5"
    with pytest.raises(ValueError) as error:
        check(True, "n_envs", POSITIVE_INTEGER)
    assert str(error.value) == "n_envs must be a positive integer, got True"
    with pytest.raises(ValueError) as error:
        check_count(-5, "num_timesteps")
    assert str(error.value) == "num_timesteps must be an integer in [0, 2**63 - 1], got -5"


def test_verbose_true_and_a_path_tensorboard_log_are_accepted(tmp_path: pathlib.Path) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, verbose=True, tensorboard_log=tmp_path)
    model.learn(10)
    assert (tmp_path / "ACER_1").is_dir()


# ---------------------------------------------------------------------------------------------- load, learn


def test_load_with_invalid_hyperparameter_raises(tmp_path: Any) -> None:
    ACER("MlpPolicy", "CartPole-v1", replay_ratio=0).save(tmp_path / "model")
    with pytest.raises(ValueError, match="delta must be positive"):
        ACER.load(tmp_path / "model.zip", delta=0.0)
    with pytest.raises(ValueError, match="unknown hyperparameter 'n_step'"):
        ACER.load(tmp_path / "model.zip", n_step=5)


def test_learn_rejects_bad_total_timesteps(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings)
    with pytest.raises(ValueError, match="total_timesteps"):
        model.learn(-1)


def test_learn_checks_its_arguments_before_stepping(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings)
    with pytest.raises(TypeError, match=r"callback must be an SB3 BaseCallback, a list of them, a callable"):
        model.learn(20, callback=5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"seed must be an integer in \[0, 2\*\*32 - 1\], got -1"):
        model.learn(20, seed=-1)
    assert model.num_timesteps == 0 and model._last_obs is None  # the env was never stepped nor reset
    # Whole numbers written as floats (learn(1e4), as SB3 and the zoo's n_timesteps allow) are accepted.
    assert model.learn(1e1).num_timesteps == 10  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"total_timesteps must be a non-negative integer, got 10\.5"):
        model.learn(10.5)  # type: ignore[arg-type]


def test_learn_checks_log_interval_and_tb_log_name_before_stepping(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", "CartPole-v1", **small_settings)
    for kwargs, message in (
        ({"log_interval": "x"}, "log_interval must be a non-negative integer or None, got 'x'"),
        ({"log_interval": -1}, "log_interval must be a non-negative integer or None, got -1"),
        ({"tb_log_name": 3}, "tb_log_name must be a string, got 3"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            model.learn(20, **kwargs)
    assert model.num_timesteps == 0 and model._last_obs is None
    assert model.learn(10, log_interval=None).num_timesteps == 10


def test_predict_on_a_reset_tuple_says_to_pass_the_observation_alone() -> None:
    env = gym.make("CartPole-v1")
    model = ACER("MlpPolicy", env, n_steps=5, replay_ratio=0)
    reset = env.reset(seed=0)  # (observation, info): Gymnasium's API, not a VecEnv's
    with pytest.raises(
        ValueError, match=r"^observation is a tuple \(observation, info\), as Gymnasium's env"
    ):
        model.predict(reset)
    with pytest.raises(ValueError, match=r"mixing Gym API"):  # SB3's hint, which SB3's own test matches
        model.predict(reset)
    assert model.predict(reset[0])[0] in (0, 1)
    env.close()

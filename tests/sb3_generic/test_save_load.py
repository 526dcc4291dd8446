"""Saving and loading, adapted from stable-baselines3 tests/test_save_load.py (MIT, Copyright (c) 2019
Antonin Raffin): the algorithm-generic cases, with ACER as the only algorithm.

ACER takes every action space A2C takes, so it gets A2C's environments: ``IdentityEnvBox(-10, 10)`` where
SB3 gives DQN ``IdentityEnv(10)``, and continuous-action images. Left out:
the cases of other algorithms' own parts (DQN's q_net and target network, SAC's entropy coefficient, PPO's
clip range, the memory-efficient buffers of DQN/SAC/TD3) and of SB3's pickle helpers (``open_path``,
``load_from_pkl``), which ACER's files do not use. Where ACER's documented API differs, the line says
``ACER:`` and why.
"""

import os
import pathlib
import tempfile
from collections import OrderedDict
from copy import deepcopy

import numpy as np
import pytest
import torch as th
from stable_baselines3.common.envs import FakeImageEnv, IdentityEnvBox
from stable_baselines3.common.utils import LinearSchedule, get_device
from stable_baselines3.common.vec_env import DummyVecEnv

from sb3_acer import ACER

from .common import SMALL, deliberate

MODEL_LIST = [ACER]


def select_env(model_class):
    """ACER, as A2C: continuous actions (SB3 gives DQN alone the discrete ``IdentityEnv(10)``)."""
    return IdentityEnvBox(-10, 10)


# torch.compile imports modules that warn about their own deprecated parts (this suite's warnings are errors).
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
@pytest.mark.parametrize("model_class", MODEL_LIST)
def test_save_load(tmp_path, model_class):
    """
    Test if 'save' and 'load' saves and loads model correctly
    and if 'get_parameters' and 'set_parameters' and work correctly.

    ''warning does not test function of optimizer parameter load

    :param model_class: (BaseAlgorithm) A RL model
    """

    env = DummyVecEnv([lambda: select_env(model_class)])

    kwargs = {"learning_rate": 1e-3, **SMALL}

    # create model
    model = model_class("MlpPolicy", env, policy_kwargs=dict(net_arch=[16]), verbose=1, **kwargs)
    model.learn(total_timesteps=128)

    env.reset()
    observations = np.concatenate([env.step([env.action_space.sample()])[0] for _ in range(10)], axis=0)

    # Get parameters of different objects
    # deepcopy to avoid referencing to tensors we are about to modify
    original_params = deepcopy(model.get_parameters())

    # Test different error cases of set_parameters.
    # Test that invalid object names throw errors
    invalid_object_params = deepcopy(original_params)
    invalid_object_params["I_should_not_be_a_valid_object"] = "and_I_am_an_invalid_tensor"
    with pytest.raises(ValueError):
        model.set_parameters(invalid_object_params, exact_match=True)
    with pytest.raises(ValueError):
        model.set_parameters(invalid_object_params, exact_match=False)

    # Test that exact_match catches when something was missed.
    missing_object_params = {k: v for k, v in list(original_params.items())[:-1]}
    with pytest.raises(ValueError):
        model.set_parameters(missing_object_params, exact_match=True)

    # Test that exact_match catches when something inside state-dict
    # is missing but we have exact_match.
    missing_state_dict_tensor_params = {}
    for object_name in original_params:
        object_params = {}
        missing_state_dict_tensor_params[object_name] = object_params
        # Skip last item in state-dict
        for k, v in list(original_params[object_name].items())[:-1]:
            object_params[k] = v
    with pytest.raises(RuntimeError):
        # PyTorch load_state_dict throws RuntimeError if strict but
        # invalid state-dict.
        model.set_parameters(missing_state_dict_tensor_params, exact_match=True)

    # Test that parameters do indeed change.
    random_params = {}
    for object_name, params in original_params.items():
        # Do not randomize optimizer parameters (custom layout)
        if "optim" in object_name:
            random_params[object_name] = params
        else:
            # Again, skip the last item in state-dict
            random_params[object_name] = OrderedDict(
                (param_name, th.rand_like(param)) for param_name, param in list(params.items())[:-1]
            )

    # Update model parameters with the new random values
    model.set_parameters(random_params, exact_match=False)

    new_params = model.get_parameters()
    # Check that all params except the final item in each state-dict are different.
    for object_name in original_params:
        # Skip optimizers (no valid comparison with just th.allclose)
        if "optim" in object_name:
            continue
        # state-dicts use ordered dictionaries, so key order
        # is guaranteed.
        last_key = list(original_params[object_name].keys())[-1]
        for k in original_params[object_name]:
            if k == last_key:
                # Should be same as before
                assert th.allclose(original_params[object_name][k], new_params[object_name][k]), (
                    "Parameter changed despite not included in the loaded parameters."
                )
            else:
                # Should be different
                assert not th.allclose(original_params[object_name][k], new_params[object_name][k]), (
                    "Parameters did not change as expected."
                )

    params = new_params

    # get selected actions
    selected_actions, _ = model.predict(observations, deterministic=True)

    # Check
    model.save(tmp_path / "test_save.zip")
    del model

    # Check if the model loads as expected for every possible choice of device:
    for device in ["auto", "cpu", "cuda"]:
        model = model_class.load(str(tmp_path / "test_save.zip"), env=env, device=device)

        # check if the model was loaded to the correct device
        assert model.device.type == get_device(device).type
        assert model.policy.device.type == get_device(device).type

        # check if params are still the same after load
        new_params = model.get_parameters()

        # Check that all params are the same as before save load procedure now
        for object_name in new_params:
            # Skip optimizers (no valid comparison with just th.allclose)
            if "optim" in object_name:
                continue
            for key in params[object_name]:
                assert new_params[object_name][key].device.type == get_device(device).type
                assert th.allclose(
                    params[object_name][key].to("cpu"), new_params[object_name][key].to("cpu")
                ), "Model parameters not the same after save and load."

        # check if model still selects the same actions
        new_selected_actions, _ = model.predict(observations, deterministic=True)
        assert np.allclose(selected_actions, new_selected_actions, 1e-4)

        # check if learn still works
        model.learn(total_timesteps=128)

        del model

    # Check that loading after compiling works, see GH#2137
    model = model_class.load(tmp_path / "test_save.zip")
    model.policy = th.compile(model.policy)
    model.save(tmp_path / "test_save.zip")
    model_class.load(tmp_path / "test_save.zip")

    # clear file from os
    os.remove(tmp_path / "test_save.zip")


@pytest.mark.parametrize("model_class", MODEL_LIST)
def test_set_env(tmp_path, model_class):
    """
    Test if set_env function does work correct

    :param model_class: (BaseAlgorithm) A RL model
    """

    env = DummyVecEnv([lambda: select_env(model_class)])
    env2 = DummyVecEnv([lambda: select_env(model_class)])
    env3 = select_env(model_class)
    env4 = DummyVecEnv([lambda: select_env(model_class) for _ in range(2)])

    kwargs = dict(SMALL)

    # create model
    model = model_class("MlpPolicy", env, policy_kwargs=dict(net_arch=[16]), **kwargs)
    # learn
    model.learn(total_timesteps=64)

    # change env
    model.set_env(env2, force_reset=True)
    # Check that last obs was discarded
    assert model._last_obs is None
    # learn again
    model.learn(total_timesteps=64, reset_num_timesteps=True)
    assert model.num_timesteps == 64

    # change env test wrapping
    model.set_env(env3)
    # learn again
    model.learn(total_timesteps=64)

    # num_env must be the same
    # ACER: set_env takes another number of envs (its replay memory then starts afresh), as SB3's load does
    # (below); checked at the end of this test, after which the model has that number of envs.

    # Keep the same env, disable reset
    model.set_env(model.get_env(), force_reset=False)
    assert model._last_obs is not None
    # learn again
    model.learn(total_timesteps=64, reset_num_timesteps=False)
    assert model.num_timesteps == 2 * 64

    current_env = model.get_env()
    model.save(tmp_path / "test_save.zip")
    del model
    # Check that we can keep the number of timesteps after loading
    # Here the env kept its state so we don't have to reset
    model = model_class.load(tmp_path / "test_save.zip", env=current_env, force_reset=False)
    # ACER: the file holds no observation (only data that describes the model), so the first learn after
    # loading resets the env: force_reset is accepted and has no effect.
    assert model._last_obs is None
    model.learn(total_timesteps=64, reset_num_timesteps=False)
    assert model.num_timesteps == 3 * 64

    del model
    # We are changing the env, the env must reset but we should keep the number of timesteps
    model = model_class.load(tmp_path / "test_save.zip", env=env3, force_reset=True)
    assert model._last_obs is None
    model.learn(total_timesteps=64, reset_num_timesteps=False)
    assert model.num_timesteps == 3 * 64

    del model
    # Load the model with a different number of environments
    model = model_class.load(tmp_path / "test_save.zip", env=env4)
    model.learn(total_timesteps=64)

    # ACER: set_env with a different number of environments (SB3 raises AssertionError).
    model.set_env(env2)
    assert model.n_envs == 1
    model.learn(total_timesteps=64)

    # Clear saved file
    os.remove(tmp_path / "test_save.zip")


@pytest.mark.parametrize("model_class", MODEL_LIST)
def test_exclude_include_saved_params(tmp_path, model_class):
    """
    Test if exclude and include parameters of save() work

    :param model_class: (BaseAlgorithm) A RL model
    """
    env = DummyVecEnv([lambda: select_env(model_class)])

    # create model, set verbose as 2, which is not standard
    model = model_class("MlpPolicy", env, policy_kwargs=dict(net_arch=[16]), verbose=2)

    # Check if exclude works
    model.save(tmp_path / "test_save", exclude=["verbose"])
    del model
    model = model_class.load(str(tmp_path / "test_save.zip"))
    # check if verbose was not saved
    assert model.verbose != 2

    # set verbose as something different then standard settings
    model.verbose = 2
    # Check if include works
    model.save(tmp_path / "test_save", exclude=["verbose"], include=["verbose"])
    del model
    # Load with custom objects
    custom_objects = dict(learning_rate=2e-5, dummy=1.0)
    model = model_class.load(
        str(tmp_path / "test_save.zip"),
        custom_objects=custom_objects,
        print_system_info=True,
    )
    assert model.verbose == 2
    # Check that the custom object was taken into account
    assert model.learning_rate == custom_objects["learning_rate"]
    # Check that only parameters that are here already are replaced
    assert not hasattr(model, "dummy")

    # clear file from os
    os.remove(tmp_path / "test_save.zip")


@deliberate(
    "set_env accepts another number of environments (the replay memory, laid out per environment, "
    "starts afresh), as SB3's own load(..., env=) does; SB3's set_env raises AssertionError",
    raises=pytest.fail.Exception,
)
@pytest.mark.parametrize("model_class", MODEL_LIST)
def test_set_env_other_n_envs_sb3(model_class):
    """SB3's lines of ``test_set_env`` for another number of environments, kept as SB3 writes them."""
    env = DummyVecEnv([lambda: select_env(model_class)])
    env4 = DummyVecEnv([lambda: select_env(model_class) for _ in range(2)])
    model = model_class("MlpPolicy", env, policy_kwargs=dict(net_arch=[16]), **SMALL)
    # num_env must be the same
    with pytest.raises(AssertionError):
        model.set_env(env4)


@deliberate(
    "a model file holds no observation (it describes the model, not a running environment), so "
    "load(..., force_reset=False) has none to continue from and the first learn resets the env",
    raises=AssertionError,
)
@pytest.mark.parametrize("model_class", MODEL_LIST)
def test_load_force_reset_false_sb3(tmp_path, model_class):
    """SB3's lines of ``test_set_env`` for ``load(..., force_reset=False)``, kept as SB3 writes them."""
    env = DummyVecEnv([lambda: select_env(model_class)])
    model = model_class("MlpPolicy", env, policy_kwargs=dict(net_arch=[16]), **SMALL)
    model.learn(total_timesteps=64)
    model.save(tmp_path / "test_save.zip")
    model = model_class.load(tmp_path / "test_save.zip", env=model.get_env(), force_reset=False)
    assert model._last_obs is not None


@pytest.mark.parametrize("model_class", MODEL_LIST)
def test_save_load_env_cnn(tmp_path, model_class):
    """
    Test loading with an env that requires a ``CnnPolicy``.
    This is to test wrapping and observation space check.
    """
    env = FakeImageEnv(screen_height=40, screen_width=40, n_channels=2, discrete=False)
    kwargs = dict(policy_kwargs=dict(net_arch=[32]), **SMALL)

    model = model_class("CnnPolicy", env, **kwargs).learn(100)
    model.save(tmp_path / "test_save")
    # Test loading with env and continuing training
    # ACER: policy_kwargs at load must equal the saved ones (they are), the others are hyperparameters.
    model = model_class.load(str(tmp_path / "test_save.zip"), env=env, **kwargs).learn(100)
    # clear file from os
    os.remove(tmp_path / "test_save.zip")


@pytest.mark.parametrize("model_class", MODEL_LIST)
def test_save_load_replay_buffer(tmp_path, model_class):
    path = pathlib.Path(tmp_path / "logs/replay_buffer.pkl")
    path.parent.mkdir(exist_ok=True, parents=True)  # to not raise a warning
    # ACER: buffer_size and replay_start count steps per env (SB3's learning_starts: steps), a segment is
    # n_steps long.
    model = model_class(
        "MlpPolicy",
        select_env(model_class),
        buffer_size=1000,
        policy_kwargs=dict(net_arch=[64]),
        replay_start=100,
        n_steps=10,
    )
    model.learn(150)
    old_replay_buffer = deepcopy(model.replay_buffer)
    model.save_replay_buffer(path)
    model.replay_buffer = None
    # ACER: the replay memory holds NumPy arrays only (the update moves each sampled segment to the
    # model's device), so it has no device of its own to follow the model's.
    model.load_replay_buffer(path)

    assert np.allclose(old_replay_buffer.observations, model.replay_buffer.observations)
    assert np.allclose(old_replay_buffer.actions, model.replay_buffer.actions)
    assert np.allclose(old_replay_buffer.rewards, model.replay_buffer.rewards)
    # ACER: episode ends are stored as terminated and truncated (SB3: dones and timeouts).
    assert np.allclose(old_replay_buffer.terminated, model.replay_buffer.terminated)
    assert np.allclose(old_replay_buffer.truncated, model.replay_buffer.truncated)
    # ACER: the memory is filled with whole segments by learn (there is no extend), and keeps what a
    # segment needs besides: the behaviour policy's probabilities and the episode starts.
    assert np.allclose(old_replay_buffer.mu_probs, model.replay_buffer.mu_probs)
    assert np.array_equal(old_replay_buffer.episode_starts, model.replay_buffer.episode_starts)
    model.learn(50)


@deliberate(
    "ACER's replay memory holds whole segments with the behaviour policy's probabilities (terminated and "
    "truncated, no dones/timeouts, no extend, no device), NumPy only, saved without pickles",
    raises=AttributeError,
)
@pytest.mark.parametrize("model_class", MODEL_LIST)
def test_save_load_replay_buffer_sb3_api(tmp_path, model_class):
    """SB3's lines of ``test_save_load_replay_buffer`` for SB3's buffer API, kept as SB3 writes them."""
    path = pathlib.Path(tmp_path / "logs/replay_buffer.pkl")
    path.parent.mkdir(exist_ok=True, parents=True)
    model = model_class("MlpPolicy", select_env(model_class), policy_kwargs=dict(net_arch=[16]), **SMALL)
    model.learn(32)
    old_replay_buffer = deepcopy(model.replay_buffer)
    model.save_replay_buffer(path)
    model.load_replay_buffer(path)
    assert model.replay_buffer.device.type == model.device.type
    assert np.allclose(old_replay_buffer.dones, model.replay_buffer.dones)
    assert np.allclose(old_replay_buffer.timeouts, model.replay_buffer.timeouts)


@pytest.mark.parametrize("model_class", MODEL_LIST)
@pytest.mark.parametrize("policy_str", ["MlpPolicy", "CnnPolicy"])
def test_save_load_policy(tmp_path, model_class, policy_str):
    """
    Test saving and loading policy only.

    ACER: without SB3's ``use_sde`` parameter, which is for continuous actions (SB3 skips it for the
    algorithms without gSDE).

    :param model_class: (BaseAlgorithm) A RL model
    :param policy_str: (str) Name of the policy.
    """
    kwargs = dict(policy_kwargs=dict(net_arch=[16]), learning_rate=1e-3, **SMALL)

    if policy_str == "MlpPolicy":
        env = select_env(model_class)
    else:
        # Avoid memory error when using replay buffer
        # Reduce the size of the features
        kwargs = dict(
            buffer_size=250,
            replay_start=100,
            policy_kwargs=dict(features_extractor_kwargs=dict(features_dim=16)),
            n_steps=8,
        )
        # ACER, as A2C: continuous actions (SB3: discrete for DQN only).
        env = FakeImageEnv(screen_height=40, screen_width=40, n_channels=2, discrete=False)

    env = DummyVecEnv([lambda: env])

    # create model
    model = model_class(policy_str, env, verbose=1, **kwargs)
    model.learn(total_timesteps=128)

    env.reset()
    observations = np.concatenate([env.step([env.action_space.sample()])[0] for _ in range(10)], axis=0)

    policy = model.policy
    policy_class = policy.__class__

    # Get dictionary of current parameters
    params = deepcopy(policy.state_dict())

    # Modify all parameters to be random values
    random_params = {param_name: th.rand_like(param) for param_name, param in params.items()}

    # Update model parameters with the new random values
    policy.load_state_dict(random_params)

    new_params = policy.state_dict()
    # Check that all params are different now
    for k in params:
        assert not th.allclose(params[k], new_params[k]), "Parameters did not change as expected."

    params = new_params

    # get selected actions
    selected_actions, _ = policy.predict(observations, deterministic=True)

    # Save and load policy
    policy.save(tmp_path / "policy.pkl")

    del policy

    policy = policy_class.load(tmp_path / "policy.pkl")

    # check if params are still the same after load
    new_params = policy.state_dict()

    # Check that all params are the same as before save load procedure now
    for key in params:
        assert th.allclose(params[key], new_params[key]), (
            "Policy parameters not the same after save and load."
        )

    # check if model still selects the same actions
    new_selected_actions, _ = policy.predict(observations, deterministic=True)
    assert np.allclose(selected_actions, new_selected_actions, 1e-4)

    # clear file from os
    os.remove(tmp_path / "policy.pkl")


# Turn warnings into errors
@pytest.mark.filterwarnings("error")
def test_no_resource_warning(tmp_path):
    # Check behavior of save/load
    # see https://github.com/DLR-RM/stable-baselines3/issues/1751

    # check that files are properly closed
    # Create an ACER agent and save it
    ACER("MlpPolicy", "CartPole-v1", device="cpu").save(tmp_path / "acer_cartpole")
    ACER.load(tmp_path / "acer_cartpole", device="cpu")

    ACER("MlpPolicy", "CartPole-v1", device="cpu").save(str(tmp_path / "acer_cartpole"))
    ACER.load(str(tmp_path / "acer_cartpole"), device="cpu")

    # Do the same but in memory, should not close the file
    with tempfile.TemporaryFile() as fp:
        ACER("MlpPolicy", "CartPole-v1", device="cpu").save(fp)
        ACER.load(fp, device="cpu")
        assert not fp.closed

    # Same but with replay buffer
    # ACER: replay_start (default 1000 steps) must not exceed buffer_size.
    model = ACER("MlpPolicy", "CartPole-v1", buffer_size=200, replay_start=100)
    model.save_replay_buffer(tmp_path / "replay")
    model.load_replay_buffer(tmp_path / "replay")

    model.save_replay_buffer(str(tmp_path / "replay"))
    model.load_replay_buffer(str(tmp_path / "replay"))

    with tempfile.TemporaryFile() as fp:
        model.save_replay_buffer(fp)
        fp.seek(0)
        model.load_replay_buffer(fp)
        assert not fp.closed


@deliberate(
    "a model file holds data only, no pickled code, so a lambda learning rate is saved as its current "
    "value, with a UserWarning naming the schedules a file holds as data (SB2's names, SB3's "
    "ConstantSchedule and LinearSchedule(start, 0.0, 1.0), the zoo's lin_<rate>: "
    "test_cast_named_lr_schedule); pass the callable again to ACER.load",
    raises=UserWarning,
)
def test_cast_lr_schedule(tmp_path):
    # See GH#1900
    model = ACER("MlpPolicy", "CartPole-v1", learning_rate=lambda t: t * np.sin(1.0))
    # Note: for recent version of numpy, np.float64 is a subclass of float
    # so we need to use type here
    # assert isinstance(model.lr_schedule(1.0), float)
    assert type(model.lr_schedule(1.0)) is float
    assert np.allclose(model.lr_schedule(0.5), 0.5 * np.sin(1.0))
    model.save(tmp_path / "acer.zip")
    model = ACER.load(tmp_path / "acer.zip")
    assert type(model.lr_schedule(1.0)) is float
    assert np.allclose(model.lr_schedule(0.5), 0.5 * np.sin(1.0))


def test_cast_named_lr_schedule(tmp_path):
    """``test_cast_lr_schedule`` with a schedule a file holds as data (SB3's ``LinearSchedule`` to 0): it
    loads as the same curve, ACER's named ``'linear'``."""
    model = ACER("MlpPolicy", "CartPole-v1", learning_rate=LinearSchedule(np.sin(1.0), 0.0, 1.0))
    assert type(model.lr_schedule(1.0)) is float
    assert np.allclose(model.lr_schedule(0.5), 0.5 * np.sin(1.0))
    model.save(tmp_path / "acer.zip")
    model = ACER.load(tmp_path / "acer.zip")
    assert (model.learning_rate, model.lr_schedule_name) == (np.sin(1.0), "linear")
    assert type(model.lr_schedule(1.0)) is float
    assert np.allclose(model.lr_schedule(0.5), 0.5 * np.sin(1.0))


def test_save_load_net_arch_none(tmp_path):
    """
    Test that the model is loaded correctly when net_arch is manually set to None.
    See GH#1928
    """
    ACER("MlpPolicy", "CartPole-v1", policy_kwargs=dict(net_arch=None)).save(tmp_path / "acer.zip")
    model = ACER.load(tmp_path / "acer.zip")
    # None has been replaced by the default net arch
    assert model.policy.net_arch is not None
    os.remove(tmp_path / "acer.zip")


@deliberate(
    "a model file holds data only, no pickled code, so a lambda learning rate comes back as the constant "
    "it had when saved, not as the lambda, with a UserWarning at save naming the schedules a file holds as "
    "data (test_cast_named_lr_schedule)",
    raises=UserWarning,
)
@pytest.mark.parametrize("model_class", MODEL_LIST)
def test_save_load_backward_compatible(tmp_path, model_class):
    """
    Test that lambdas are working when saving/loading models.
    See GH#2115 (ACER: without PPO's clip_range)
    """

    env = DummyVecEnv([lambda: select_env(model_class)])

    model = model_class("MlpPolicy", env, learning_rate=lambda _: 0.001, **SMALL)
    model.learn(total_timesteps=100)

    model.save(tmp_path / "test_schedule_safe.zip")

    model = model_class.load(tmp_path / "test_schedule_safe.zip", env=env)

    assert model.learning_rate(0) == 0.001
    assert model.learning_rate.__name__ == "<lambda>"

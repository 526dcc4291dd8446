"""Exporting ACER's policy as SB3's docs do ("Exporting models", issue 45):
``policy(obs, deterministic=True)`` returns SB3's ``(actions, values, log_prob)``, so the ONNX recipe (run
with onnxruntime) and the TorchScript one work as written and give ``predict(deterministic=True)``'s
actions exactly."""

from __future__ import annotations

import pathlib

import gymnasium as gym
import numpy as np
import pytest
import torch as th

from sb3_acer import ACER


class OnnxableSB3Policy(th.nn.Module):
    """SB3's export wrapper, as its docs write it."""

    def __init__(self, policy: th.nn.Module) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, observation: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        return self.policy(observation, deterministic=True)


@pytest.fixture(scope="module")
def model() -> ACER:
    model = ACER("MlpPolicy", "CartPole-v1", n_steps=5, replay_start=50, buffer_size=500, seed=0)
    return model.learn(300)


@pytest.fixture(scope="module")
def observations(model: ACER) -> np.ndarray:
    """CartPole observations the trained model meets, and wider ones."""
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=1)
    seen = []
    for _ in range(100):
        seen.append(obs)
        action, _ = model.predict(obs)
        obs, _, terminated, truncated, _ = env.step(int(action))
        if terminated or truncated:
            obs, _ = env.reset()
    wide = np.random.default_rng(0).normal(scale=2.0, size=(100, 4))
    return np.concatenate([np.array(seen), wide]).astype(np.float32)


def test_forward_returns_sb3_actions_values_and_log_probs(model: ACER, observations: np.ndarray) -> None:
    policy = model.policy
    obs = th.as_tensor(observations)
    with th.no_grad():
        actions, values, log_prob = policy(obs, deterministic=True)
        logits, q_values = policy.logits_and_q_values(obs)
    assert actions.shape == (len(obs),) and values.shape == (len(obs), 1) and log_prob.shape == (len(obs),)
    np.testing.assert_array_equal(actions.numpy(), model.predict(observations, deterministic=True)[0])
    probs = th.softmax(logits, dim=-1)
    th.testing.assert_close(values[:, 0], (probs * q_values).sum(-1))  # V(x) = sum_a pi(a|x) Q(x, a)
    th.testing.assert_close(log_prob, probs.gather(-1, actions[:, None])[:, 0].log())
    # Sampled actions are actions of the space, with their log-probabilities.
    with th.no_grad():
        sampled, _, sampled_log_prob = policy(obs)
    assert set(sampled.tolist()) <= {0, 1}
    th.testing.assert_close(sampled_log_prob, probs.gather(-1, sampled[:, None])[:, 0].log())


def test_logits_and_q_values_is_what_predict_reads(model: ACER, observations: np.ndarray) -> None:
    with th.no_grad():
        logits, _ = model.policy.logits_and_q_values(th.as_tensor(observations))
        th.testing.assert_close(logits, model.policy.policy_logits(th.as_tensor(observations)))


@pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")  # torch.export's own, torch 2.13
def test_onnx_export_matches_predict(model: ACER, observations: np.ndarray, tmp_path: pathlib.Path) -> None:
    pytest.importorskip("onnxscript")  # torch's ONNX exporter
    ort = pytest.importorskip("onnxruntime")
    path = tmp_path / "acer.onnx"
    dummy_input = th.randn(1, *model.observation_space.shape)
    th.onnx.export(
        OnnxableSB3Policy(model.policy).eval(),
        dummy_input,
        str(path),
        opset_version=17,
        input_names=["input"],
    )
    session = ort.InferenceSession(str(path))
    exported = [session.run(None, {"input": obs[None]}) for obs in observations]
    actions = np.concatenate([output[0] for output in exported])
    np.testing.assert_array_equal(actions, model.predict(observations, deterministic=True)[0])
    with th.no_grad():
        _, values, log_prob = model.policy(th.as_tensor(observations), deterministic=True)
    np.testing.assert_allclose(np.concatenate([out[1] for out in exported]), values.numpy(), atol=1e-5)
    np.testing.assert_allclose(np.concatenate([out[2] for out in exported]), log_prob.numpy(), atol=1e-5)


@pytest.mark.filterwarnings("ignore:.*torch.jit.*:DeprecationWarning")  # deprecated in torch 2.13, works
def test_torchscript_trace_matches_predict(
    model: ACER, observations: np.ndarray, tmp_path: pathlib.Path
) -> None:
    dummy_input = th.randn(1, *model.observation_space.shape)
    traced = th.jit.trace(OnnxableSB3Policy(model.policy).eval(), dummy_input)
    th.jit.save(th.jit.freeze(traced), str(tmp_path / "acer.pt"))
    loaded = th.jit.load(str(tmp_path / "acer.pt"))
    with th.no_grad():
        actions = loaded(th.as_tensor(observations))[0]
    np.testing.assert_array_equal(actions.numpy(), model.predict(observations, deterministic=True)[0])

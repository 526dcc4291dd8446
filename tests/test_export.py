"""Exporting ACER's policy: :func:`sb3_acer.export.export_onnx` and ``sb3-acer export`` write an ONNX graph
that onnxruntime runs to ``predict(obs, deterministic=True)``'s actions, for every feed-forward policy family
(exactly; within 1e-5 for ``Box`` actions, clipped to the bounds), and refuse what they cannot export in
one line. ``policy(obs, deterministic=True)`` still returns SB3's ``(actions, values, log_prob)``, so SB3's
own recipes (the TorchScript trace here) work too."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from sb3_acer import ACER
from sb3_acer.export import DEFAULT_OPSET, export_onnx
from tests.helpers.cli_helpers import assert_one_line_error, run


class OnnxableSB3Policy(th.nn.Module):
    """SB3's export wrapper, as its docs write it."""

    def __init__(self, policy: th.nn.Module) -> None:
        super().__init__()
        self.policy = policy

    def forward(self, observation: th.Tensor) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        return self.policy(observation, deterministic=True)


class SpacesEnv(gym.Env):
    """Any observation and action spaces; random observations, no reward (the tests only build models)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, observation_space: spaces.Space, action_space: spaces.Space) -> None:
        self.observation_space, self.action_space = observation_space, action_space

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[Any, dict]:
        super().reset(seed=seed)
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict]:
        return self.observation_space.sample(), 0.0, False, False, {}


BOX_ACTIONS = spaces.Box(np.array([-1.0, 0.0], np.float32), np.array([1.0, 2.0], np.float32))
VECTOR = spaces.Box(-1.0, 1.0, (3,), dtype=np.float32)
IMAGE = spaces.Box(0, 255, (1, 36, 36), dtype=np.uint8)

#: One model of each family: (policy, observation space, action space).
FAMILIES: dict[str, tuple[str, spaces.Space, spaces.Space]] = {
    "discrete": ("MlpPolicy", VECTOR, spaces.Discrete(4)),
    "box": ("MlpPolicy", VECTOR, BOX_ACTIONS),
    "multidiscrete_actions": ("MlpPolicy", VECTOR, spaces.MultiDiscrete([3, 4])),
    "multibinary_actions": ("MlpPolicy", VECTOR, spaces.MultiBinary(4)),
    "discrete_observations": ("MlpPolicy", spaces.Discrete(5), spaces.Discrete(3)),
    "multidiscrete_observations": ("MlpPolicy", spaces.MultiDiscrete([3, 4]), spaces.Discrete(3)),
    "multibinary_observations": ("MlpPolicy", spaces.MultiBinary(6), spaces.Discrete(3)),
    "cnn": ("CnnPolicy", IMAGE, spaces.Discrete(3)),
    "cnn_box": ("CnnPolicy", IMAGE, BOX_ACTIONS),
    "dict": (
        "MultiInputPolicy",
        spaces.Dict({"image": IMAGE, "vector": VECTOR, "cell": spaces.Discrete(4)}),
        spaces.MultiDiscrete([2, 3]),
    ),
}


def family_model(name: str) -> ACER:
    """An untrained model of family ``name`` whose policy head is scaled up, so that its actions vary
    between observations (no near-ties) and its ``Box`` means leave the bounds."""
    policy, observation_space, action_space = FAMILIES[name]
    model = ACER(
        policy,
        SpacesEnv(observation_space, action_space),
        seed=0,
        n_steps=5,
        buffer_size=100,
        replay_start=50,
    )
    with th.no_grad():
        model.policy.action_net.weight.mul_(300.0)
    return model


def batch(space: spaces.Space, n: int, seed: int) -> np.ndarray:
    """``n`` observations of ``space``; for a float ``Box``, half of them far outside its bounds."""
    space.seed(seed)
    observations = np.stack([space.sample() for _ in range(n)])
    if isinstance(space, spaces.Box) and space.dtype == np.float32:
        observations[::2] *= 5.0
    return observations


def observations_of(model: ACER, n: int = 64) -> dict[str, np.ndarray]:
    """A batch of observations as the graph takes them: one array per input."""
    space = model.observation_space
    if isinstance(space, spaces.Dict):
        return {key: batch(subspace, n, seed) for seed, (key, subspace) in enumerate(space.spaces.items())}
    return {"observation": batch(space, n, 0)}


def predicted(model: ACER, feed: dict[str, np.ndarray]) -> np.ndarray:
    observation = feed if isinstance(model.observation_space, spaces.Dict) else feed["observation"]
    return model.predict(observation, deterministic=True)[0]


@pytest.mark.parametrize("family", list(FAMILIES))
def test_onnx_graph_gives_predicts_actions(family: str, tmp_path: pathlib.Path) -> None:
    model = family_model(family)
    path = export_onnx(model, tmp_path / "model.onnx")
    assert path == tmp_path / "model.onnx"
    onnx.checker.check_model(onnx.load(str(path)), full_check=True)
    session = ort.InferenceSession(str(path))
    feed = observations_of(model)
    actions = session.run(None, feed)[0]
    expected = predicted(model, feed)
    assert actions.dtype == expected.dtype and actions.shape == expected.shape
    if isinstance(model.action_space, spaces.Box):
        np.testing.assert_allclose(actions, expected, rtol=0, atol=1e-5)
    else:
        np.testing.assert_array_equal(actions, expected)
        assert len(np.unique(expected.reshape(len(expected), -1), axis=0)) > 1  # actions that vary
    one = {name: values[:1] for name, values in feed.items()}  # the batch dimension is free
    np.testing.assert_allclose(session.run(None, one)[0], expected[:1], rtol=0, atol=1e-5)


@pytest.mark.parametrize("family", ["box", "cnn_box"])
def test_box_actions_are_clipped_to_the_bounds_as_predict_clips_them(
    family: str, tmp_path: pathlib.Path
) -> None:
    model = family_model(family)
    feed = observations_of(model)
    session = ort.InferenceSession(str(export_onnx(model, tmp_path / "model.onnx")))
    actions = session.run(None, feed)[0]
    with th.no_grad():  # the policy's means, unclipped: SB3's recipe gave these
        means = model.policy(th.as_tensor(feed["observation"]), deterministic=True)[0].numpy()
    low, high = BOX_ACTIONS.low, BOX_ACTIONS.high
    below, above = means < low - 1e-4, means > high + 1e-4
    assert (below | above).any(axis=0).all()  # every dimension leaves its bounds
    np.testing.assert_allclose(actions, np.clip(means, low, high), rtol=0, atol=1e-5)
    assert (actions[below] == np.broadcast_to(low, actions.shape)[below]).all()  # exactly the bound
    assert (actions[above] == np.broadcast_to(high, actions.shape)[above]).all()


def test_the_default_opset_is_18_and_another_can_be_chosen(tmp_path: pathlib.Path) -> None:
    model = family_model("multidiscrete_observations")
    opsets = {}
    for opset in (None, 20):
        path = export_onnx(model, tmp_path / f"{opset}.onnx", opset=opset)
        (version,) = [entry.version for entry in onnx.load(str(path)).opset_import if entry.domain == ""]
        opsets[opset] = version
        feed = observations_of(model)
        actions = ort.InferenceSession(str(path)).run(None, feed)[0]
        np.testing.assert_array_equal(actions, predicted(model, feed))
    assert opsets == {None: DEFAULT_OPSET, 20: 20} and DEFAULT_OPSET == 18


def test_a_dict_key_named_action_leaves_the_output_action_(tmp_path: pathlib.Path) -> None:
    observation_space = spaces.Dict({"action": spaces.Discrete(3), "action_": VECTOR})
    model = ACER(
        "MultiInputPolicy", SpacesEnv(observation_space, BOX_ACTIONS), buffer_size=100, replay_start=50
    )
    session = ort.InferenceSession(str(export_onnx(model, tmp_path / "model.onnx")))
    assert [value.name for value in session.get_inputs()] == ["action", "action_"]
    assert [value.name for value in session.get_outputs()] == ["action__"]
    feed = observations_of(model)
    np.testing.assert_allclose(session.run(None, feed)[0], predicted(model, feed), rtol=0, atol=1e-5)


def test_export_keeps_the_policys_training_mode_and_replaces_a_file(tmp_path: pathlib.Path) -> None:
    model = family_model("discrete")
    path = tmp_path / "sub" / "model.onnx"  # a missing folder is made, as model.save makes it
    model.policy.set_training_mode(True)
    export_onnx(model, path)
    assert model.policy.training
    first = path.read_bytes()
    model.policy.set_training_mode(False)
    with th.no_grad():
        model.policy.action_net.bias.add_(1.0)
    export_onnx(model, str(path))
    assert not model.policy.training and path.read_bytes() != first
    assert sorted(p.name for p in path.parent.iterdir()) == ["model.onnx"]  # no temporary file left


def refusals() -> dict[str, tuple[Callable[[], ACER], dict[str, Any], type[Exception], str]]:
    """What ``export_onnx`` refuses: (model maker, keyword arguments, exception, message)."""
    lstm = lambda: ACER("MlpLstmPolicy", "CartPole-v1", n_steps=5, buffer_size=100, replay_start=50, seed=0)  # noqa: E731
    mlp = lambda: family_model("discrete")  # noqa: E731
    bad_opset = r"opset must be a whole number from 18 to \d+ \(the newest the installed onnx knows\), got "
    return {
        "recurrent": (
            lstm,
            {},
            ValueError,
            r"^MlpLstmPolicy is recurrent: its LSTM state lives outside the network, and ONNX export "
            r"supports only the feed-forward policies \(MlpPolicy, CnnPolicy, MultiInputPolicy\)$",
        ),
        "opset 17": (mlp, {"opset": 17}, ValueError, bad_opset + "17; opset 17 and below are refused"),
        "opset True": (mlp, {"opset": True}, ValueError, bad_opset + "True$"),
        "opset 1000": (mlp, {"opset": 1000}, ValueError, bad_opset + "1000$"),
        "opset '18'": (mlp, {"opset": "18"}, ValueError, bad_opset + "'18'$"),
    }


@pytest.mark.parametrize("case", list(refusals()))
def test_what_cannot_be_exported_is_refused_and_nothing_is_written(case: str, tmp_path: pathlib.Path) -> None:
    make, kwargs, error, message = refusals()[case]
    model = make()
    path = tmp_path / "model.onnx"
    path.write_bytes(b"earlier")
    with pytest.raises(error, match=message):
        export_onnx(model, path, **kwargs)
    assert path.read_bytes() == b"earlier" and sorted(tmp_path.iterdir()) == [path]


def test_export_needs_an_acer_model(tmp_path: pathlib.Path) -> None:
    with pytest.raises(TypeError, match=r"^export_onnx needs an ACER model, got MlpPolicy$"):
        export_onnx(family_model("discrete").policy, tmp_path / "model.onnx")
    assert not (tmp_path / "model.onnx").exists()


def test_without_onnxscript_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    model = family_model("discrete")
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # import onnxscript raises ImportError
    with pytest.raises(
        ImportError,
        match=r"^ONNX export needs onnx and onnxscript \(onnxscript is missing\): "
        r"pip install 'sb3-acer\[export\]'$",
    ):
        export_onnx(model, tmp_path / "model.onnx")
    assert not (tmp_path / "model.onnx").exists()


# ----------------------------------------------------------------------------------------- the command


def test_export_help_has_examples(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "export", "-h")
    assert code == 0 and "--opset N" in out
    assert "sb3-acer export logs/CartPole-v1_0/model.zip cartpole.onnx" in out.split("examples:")[1]
    code, out, _ = run(capsys, "-h")
    assert code == 0 and "export" in out.split("examples:")[0]


def test_export_command_writes_the_graph(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    model = family_model("dict")
    model.save(tmp_path / "model.zip")
    out = tmp_path / "model.onnx"
    code, stdout, err = run(capsys, "export", str(tmp_path / "model"), str(out))  # .zip may be left out
    assert (code, err) == (0, "")
    assert stdout == f"wrote {out}: ONNX opset 18, inputs cell, image, vector, output action\n"
    feed = observations_of(model)
    np.testing.assert_array_equal(ort.InferenceSession(str(out)).run(None, feed)[0], predicted(model, feed))
    code, stdout, _ = run(capsys, "export", str(tmp_path), str(out), "--opset", "19")  # a run folder
    assert code == 0 and stdout.startswith(f"wrote {out}: ONNX opset 19,")


def test_export_command_notes_the_normalisation_a_model_needs(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    env = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    ACER("MlpPolicy", env, n_steps=5, buffer_size=100, replay_start=50, seed=0).save(tmp_path / "model.zip")
    code, stdout, _ = run(capsys, "export", str(tmp_path / "model.zip"), str(tmp_path / "model.onnx"))
    assert code == 0
    assert stdout.splitlines()[1] == (
        "note: the model was trained with VecNormalize: normalise the observations with its statistics "
        f"({tmp_path / 'model.vecnormalize.npz'}) before feeding the graph"
    )


def test_export_command_errors_are_one_line_and_write_nothing(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    ACER("MlpLstmPolicy", "CartPole-v1", n_steps=5, buffer_size=100, replay_start=50, seed=0).save(
        tmp_path / "lstm.zip"
    )
    family_model("discrete").save(tmp_path / "mlp.zip")
    (tmp_path / "random.zip").write_bytes(np.random.default_rng(0).bytes(300))
    (tmp_path / "folder").mkdir()
    out = str(tmp_path / "out.onnx")
    cases = [
        (["missing.zip", out], 2, f"no model file {str(tmp_path / 'missing.zip')!r}"),
        (["random.zip", out], 1, f"cannot load {tmp_path / 'random.zip'}: "),
        (
            ["lstm.zip", out],
            1,
            f"cannot export {tmp_path / 'lstm.zip'}: MlpLstmPolicy is recurrent: its LSTM",
        ),
        (["mlp.zip", out, "--opset", "17"], 2, "--opset: opset must be a whole number from 18 to "),
        (["mlp.zip", out, "--opset", "x"], 2, "argument --opset: invalid int value: 'x'"),
        (["mlp.zip", str(tmp_path / "folder")], 2, f"OUT {tmp_path / 'folder'} is a folder, not a file"),
        (["mlp.zip", str(tmp_path / "mlp.zip")], 2, f"OUT {tmp_path / 'mlp.zip'} is MODEL itself"),
    ]
    before = sorted(tmp_path.rglob("*"))
    for args, exit_code, message in cases:
        model, *rest = args
        code, _, err = run(capsys, "export", str(tmp_path / model), *rest)
        assert_one_line_error(code, err, exit_code, message)
    assert sorted(tmp_path.rglob("*")) == before


def test_export_command_without_onnxscript(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path
) -> None:
    monkeypatch.setitem(sys.modules, "onnxscript", None)
    code, _, err = run(capsys, "export", str(tmp_path / "missing.zip"), str(tmp_path / "out.onnx"))
    assert_one_line_error(code, err, 1, "ONNX export needs onnxscript: pip install 'sb3-acer[export]'")


# ------------------------------------------------------------------------- SB3's recipes, on the policy


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


def test_trained_cartpole_graph_gives_predicts_actions(
    model: ACER, observations: np.ndarray, tmp_path: pathlib.Path
) -> None:
    session = ort.InferenceSession(str(export_onnx(model, tmp_path / "acer.onnx")))
    actions = session.run(None, {"observation": observations})[0]
    np.testing.assert_array_equal(actions, model.predict(observations, deterministic=True)[0])


def test_forward_returns_sb3_actions_values_and_log_probs(model: ACER, observations: np.ndarray) -> None:
    policy = model.policy
    obs = th.as_tensor(observations)
    with th.no_grad():
        actions, values, log_prob = policy(obs, deterministic=True)
        logits, q_values = policy.evaluate(obs)
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


def test_evaluate_is_what_predict_reads(model: ACER, observations: np.ndarray) -> None:
    with th.no_grad():
        logits, _ = model.policy.evaluate(th.as_tensor(observations))
        th.testing.assert_close(th.softmax(logits, -1), model.policy.statistics(th.as_tensor(observations)))


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

"""Recurrent policies: architecture, state handling inside and across segments, exact on-policy importance
weights, predict / evaluate / save-load with a state, and (slow) that the memory is actually used."""

from __future__ import annotations

import pathlib
from collections.abc import Mapping
from typing import Any, NamedTuple

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from gymnasium.wrappers import TimeLimit
from stable_baselines3.common.callbacks import EvalCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.evaluation import evaluate_policy
from stable_baselines3.common.monitor import Monitor
from stable_baselines3.common.torch_layers import NatureCNN
from stable_baselines3.common.vec_env import DummyVecEnv
from torch import nn

from benchmarks.recurrent_cartpole import NoVelocityObservation
from sb3_acer import (
    ACER,
    CnnLnLstmPolicy,
    CnnLstmPolicy,
    MlpLnLstmPolicy,
    MlpLstmPolicy,
    MlpPolicy,
    RecurrentACERPolicy,
)
from sb3_acer.common.buffers.segment_buffer import SegmentReplayBuffer
from sb3_acer.common.functional import categorical as F
from sb3_acer.common.policies import LayerNormLSTM, LSTMState, PolicyOutput, parse_recurrent_net_arch
from sb3_acer.common.type_aliases import Segment
from sb3_acer.common.update import CategoricalTerms, network_outputs, recurrent_rows
from tests.helpers.acer_envs import ObservationSpaceEnv, collect

TINY_LSTM: dict[str, Any] = dict(n_lstm=16, net_arch=[16, "lstm"])
BOX = spaces.Box(-1.0, 1.0, shape=(3,), dtype=np.float32)
IMAGE = spaces.Box(0, 255, shape=(1, 36, 36), dtype=np.uint8)


class SequenceOutput(NamedTuple):
    """``evaluate_sequence``'s outputs in the time-major layout ``[T, B, A]``."""

    logits: th.Tensor
    q_values: th.Tensor
    state: LSTMState
    kept_state: LSTMState | None


def forward_sequence(
    policy: RecurrentACERPolicy,
    obs: th.Tensor,
    starts: th.Tensor,
    state: LSTMState,
    keep_states_at: np.ndarray | None = None,
) -> SequenceOutput:
    (logits, q_values), final, kept = policy.evaluate_sequence(obs, starts, state, keep_states_at)
    shape = (*starts.shape, -1)
    return SequenceOutput(logits.view(shape), q_values.view(shape), final, kept)


def one_step(
    policy: RecurrentACERPolicy, obs: th.Tensor, state: LSTMState, starts: th.Tensor
) -> tuple[PolicyOutput, LSTMState]:
    output = forward_sequence(policy, obs.unsqueeze(0), starts.reshape(1, -1), state)
    return PolicyOutput(output.logits[0], output.q_values[0]), output.state


def cartpole_envs(n_envs: int, seed: int = 0, **make_kwargs: Any) -> DummyVecEnv:
    return make_vec_env("CartPole-v1", n_envs=n_envs, seed=seed, env_kwargs=make_kwargs or None)


def random_policy(layer_norm: bool, seed: int = 0, **kwargs: Any) -> RecurrentACERPolicy:
    th.manual_seed(seed)
    policy = RecurrentACERPolicy(BOX, spaces.Discrete(4), n_lstm=8, layer_norm=layer_norm, **kwargs)
    # Non-zero biases everywhere, so that a missing reset (or a wrong state) changes the outputs.
    with th.no_grad():
        for name, parameter in policy.named_parameters():
            if "bias" in name:
                parameter.normal_()
    return policy


def random_state(n: int, size: int = 8, seed: int = 1) -> tuple[th.Tensor, th.Tensor]:
    generator = th.Generator().manual_seed(seed)
    return th.randn(1, n, size, generator=generator), th.randn(1, n, size, generator=generator)


# ---------------------------------------------------------------------------------------------- architecture


@pytest.mark.parametrize(
    ("name", "cls", "layer_norm"),
    [("MlpLstmPolicy", MlpLstmPolicy, False), ("MlpLnLstmPolicy", MlpLnLstmPolicy, True)],
)
def test_mlp_lstm_policies_by_name_and_class(
    name: str, cls: type, layer_norm: bool, small_settings: Mapping[str, Any]
) -> None:
    by_name = ACER(name, "CartPole-v1", **small_settings)
    by_class = ACER(cls, "CartPole-v1", **small_settings)
    for model in (by_name, by_class):
        assert model.policy_class is cls and type(model.policy) is cls
    policy = by_name.policy
    assert isinstance(policy, RecurrentACERPolicy)
    # SB2: flatten -> 64 -> 64 (tanh) -> LSTM(256) -> heads on the LSTM output.
    assert [m.out_features for m in policy.pre_lstm if isinstance(m, nn.Linear)] == [64, 64]
    assert all(isinstance(m, nn.Tanh) for m in policy.pre_lstm[1::2])
    assert policy.n_lstm == 256
    assert isinstance(policy.lstm, LayerNormLSTM if layer_norm else nn.LSTM)
    assert policy.action_net.in_features == policy.q_net.in_features == 256
    assert len(policy.shared_net) == 0
    assert by_name.replay_buffer is not None and by_name.replay_buffer.state_size == 256


@pytest.mark.parametrize(("cls", "layer_norm"), [(CnnLstmPolicy, False), (CnnLnLstmPolicy, True)])
def test_cnn_lstm_policies_build_on_nature_cnn_and_train_on_images(cls: type, layer_norm: bool) -> None:
    name = cls.__name__
    assert ACER.policy_aliases[name] is cls
    policy = cls(IMAGE, spaces.Discrete(3))
    assert isinstance(policy.features_extractor, NatureCNN)
    assert policy.features_dim == 512 and len(policy.pre_lstm) == 0
    assert isinstance(policy.lstm, LayerNormLSTM if layer_norm else nn.LSTM)
    assert policy.n_lstm == 256 and policy.action_net.in_features == 256
    # And it trains on images (channel-last, as an env returns them).
    env = ObservationSpaceEnv(spaces.Box(0, 255, shape=(36, 36, 1), dtype=np.uint8), n_actions=3)
    model = ACER(name, env, n_steps=3, buffer_size=9, replay_start=3, seed=0, policy_kwargs=dict(n_lstm=16))
    model.learn(12)
    assert model._n_replay_updates > 0 and model.n_skipped_updates == 0
    action, state = model.predict(env.reset(seed=0)[0])
    assert action.shape == () and state[0].shape == (1, 1, 16)


def test_recurrent_policies_start_with_sb2_initialisation() -> None:
    policy = MlpLstmPolicy(BOX, spaces.Discrete(4))
    # Heads of SB2's recurrent policies: orthogonal with gain 1 (rows orthonormal), zero bias.
    for head in (policy.action_net, policy.q_net):
        weight = head.weight.detach().double()
        th.testing.assert_close(weight @ weight.T, th.eye(4, dtype=th.float64), rtol=0, atol=1e-5)
        assert not head.bias.any()
    lstm = policy.lstm
    assert isinstance(lstm, nn.LSTM)
    weight_hh = lstm.weight_hh_l0.detach().double()  # [4n, n]: orthonormal columns
    th.testing.assert_close(weight_hh.T @ weight_hh, th.eye(256, dtype=th.float64), rtol=0, atol=1e-4)
    assert not lstm.bias_ih_l0.any() and not lstm.bias_hh_l0.any()
    ln_policy = MlpLnLstmPolicy(BOX, spaces.Discrete(4))
    assert isinstance(ln_policy.lstm, LayerNormLSTM)
    assert th.equal(ln_policy.lstm.ln_c.weight, th.ones(256)) and not ln_policy.lstm.ln_c.bias.any()


#: SB2's custom LSTM policies (tests/test_lstm_policy.py) as policy_kwargs.
SB2_CUSTOM = [
    (dict(n_lstm=128, net_arch=[8, "lstm", 8], layer_norm=False), [8], [8], [], []),
    (dict(n_lstm=64, net_arch=["lstm", 8], layer_norm=True), [], [8], [], []),
    (dict(n_lstm=64, net_arch=[8, "lstm"], layer_norm=False), [8], [], [], []),
    (
        dict(n_lstm=64, net_arch=[8, "lstm", dict(vf=[5, 10], pi=[10])], layer_norm=True),
        [8],
        [],
        [10],
        [5, 10],
    ),
]


@pytest.mark.parametrize(("kwargs", "before", "after", "pi", "qf"), SB2_CUSTOM)
def test_sb2_custom_lstm_policies(
    tmp_path: pathlib.Path,
    kwargs: dict,
    before: list,
    after: list,
    pi: list,
    qf: list,
    small_settings: Mapping[str, Any],
) -> None:
    """SB2's test_lstm_policy: build, learn, predict 100 steps on the training env, save, load."""
    model = ACER("MlpLstmPolicy", "CartPole-v1", policy_kwargs=kwargs, **small_settings).learn(100)
    policy = model.policy
    assert isinstance(policy, RecurrentACERPolicy)
    sizes = lambda seq: [m.out_features for m in seq if isinstance(m, nn.Linear)]  # noqa: E731
    assert sizes(policy.pre_lstm) == before and sizes(policy.shared_net) == after
    assert sizes(policy.mlp_extractor.policy_net) == pi and sizes(policy.mlp_extractor.value_net) == qf
    assert policy.n_lstm == kwargs["n_lstm"]
    assert isinstance(policy.lstm, LayerNormLSTM if kwargs["layer_norm"] else nn.LSTM)
    env = model.get_env()
    assert env is not None
    obs, state, starts = env.reset(), None, np.ones(1, dtype=bool)
    for _ in range(100):
        action, state = model.predict(obs, state=state, episode_start=starts)
        obs, _, starts, _ = env.step(action)
    model.save(tmp_path / "lstm.zip")
    loaded = ACER.load(tmp_path / "lstm.zip")
    assert loaded.policy_kwargs == kwargs and str(loaded.policy) == str(policy)


class CustomLSTMPolicy(MlpLstmPolicy):
    """A user's subclass fixing its architecture, as SB2's custom LSTM policy classes do."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.update(n_lstm=32, net_arch=[8, "lstm", dict(pi=[10], qf=[5, 10])], layer_norm=True)
        super().__init__(*args, **kwargs)


def test_custom_lstm_policy_class(tmp_path: pathlib.Path, small_settings: Mapping[str, Any]) -> None:
    model = ACER(CustomLSTMPolicy, "CartPole-v1", **small_settings).learn(50)
    model.save(tmp_path / "custom.zip")
    loaded = ACER.load(tmp_path / "custom.zip", policy=CustomLSTMPolicy)
    assert type(loaded.policy) is CustomLSTMPolicy and loaded.policy.n_lstm == 32


def test_parse_recurrent_net_arch() -> None:
    assert parse_recurrent_net_arch([64, 64, "lstm"]) == ([64, 64], [], [], [])
    assert parse_recurrent_net_arch([8, "lstm", 4, dict(pi=[3], vf=[2])]) == ([8], [4], [3], [2])


# ---------------------------------------------------------------------------------------------- sequences


@pytest.mark.parametrize("layer_norm", [False, True])
def test_episode_start_at_step_k_equals_running_the_pieces_separately(layer_norm: bool) -> None:
    policy = random_policy(layer_norm)
    n_steps, n_seq = 9, 3
    obs = th.randn(n_steps, n_seq, 3, generator=th.Generator().manual_seed(0))
    starts = th.zeros(n_steps, n_seq, dtype=th.bool)
    k = {0: 4, 1: 7}  # sequence 2 has no episode start
    for seq, step in k.items():
        starts[step, seq] = True
    state = random_state(n_seq)
    with th.no_grad():
        full = forward_sequence(policy, obs, starts, state)
        for seq in range(n_seq):
            own_state = (state[0][:, seq : seq + 1], state[1][:, seq : seq + 1])
            cut = k.get(seq, n_steps)
            first = forward_sequence(policy, obs[:cut, seq : seq + 1], starts[:cut, seq : seq + 1], own_state)
            pieces_logits, pieces_q = [first.logits], [first.q_values]
            if cut < n_steps:
                # The second piece on its own: from zeros, and from any state when it is marked a start.
                zeros = policy.initial_state(1)
                second = forward_sequence(
                    policy, obs[cut:, seq : seq + 1], th.zeros(n_steps - cut, 1, dtype=th.bool), zeros
                )
                marked = forward_sequence(
                    policy, obs[cut:, seq : seq + 1], starts[cut:, seq : seq + 1], random_state(1, seed=seq)
                )
                th.testing.assert_close(marked.logits, second.logits, rtol=0, atol=1e-6)
                pieces_logits.append(second.logits)
                pieces_q.append(second.q_values)
                th.testing.assert_close(full.state[0][:, seq], second.state[0][:, 0], rtol=0, atol=1e-6)
            th.testing.assert_close(full.logits[:, seq], th.cat(pieces_logits)[:, 0], rtol=0, atol=1e-6)
            th.testing.assert_close(full.q_values[:, seq], th.cat(pieces_q)[:, 0], rtol=0, atol=1e-6)
        # The state matters: without the reset the outputs after the start differ.
        no_reset = forward_sequence(policy, obs, th.zeros_like(starts), state)
        assert (no_reset.logits[4, 0] - full.logits[4, 0]).abs().max() > 1e-3
        assert (no_reset.logits[:4, 0] - full.logits[:4, 0]).abs().max() < 1e-6


@pytest.mark.parametrize("layer_norm", [False, True])
def test_sequence_equals_one_step_at_a_time(layer_norm: bool) -> None:
    """What the update computes (a whole sequence) is what the rollout computed (step by step)."""
    policy = random_policy(layer_norm)
    n_steps, n_seq = 8, 4
    generator = th.Generator().manual_seed(0)
    obs = th.randn(n_steps, n_seq, 3, generator=generator)
    starts = th.rand(n_steps, n_seq, generator=generator) < 0.2
    state = random_state(n_seq)
    with th.no_grad():
        full = forward_sequence(policy, obs, starts, state)
        step_state = state
        for t in range(n_steps):
            output, step_state = one_step(policy, obs[t], step_state, starts[t])
            th.testing.assert_close(output.logits, full.logits[t], rtol=0, atol=1e-6)
            th.testing.assert_close(output.q_values, full.q_values[t], rtol=0, atol=1e-6)
    th.testing.assert_close(step_state[0], full.state[0], rtol=0, atol=1e-6)
    th.testing.assert_close(step_state[1], full.state[1], rtol=0, atol=1e-6)


@pytest.mark.parametrize("layer_norm", [False, True])
def test_kept_states_are_the_states_after_those_steps(layer_norm: bool) -> None:
    policy = random_policy(layer_norm)
    n_steps, n_seq = 6, 3
    obs = th.randn(n_steps, n_seq, 3, generator=th.Generator().manual_seed(0))
    starts = th.zeros(n_steps, n_seq, dtype=th.bool)
    starts[3, 1] = True
    state = random_state(n_seq)
    keep = np.array([[2, 1], [0, 2], [5, 0], [3, 1]])
    with th.no_grad():
        output = forward_sequence(policy, obs, starts, state, keep_states_at=keep)
        assert output.kept_state is not None
        for row, (t, seq) in enumerate(keep):
            alone = forward_sequence(
                policy,
                obs[: t + 1, seq : seq + 1],
                starts[: t + 1, seq : seq + 1],
                (state[0][:, seq : seq + 1], state[1][:, seq : seq + 1]),
            )
            for kept, expected in zip(output.kept_state, alone.state, strict=True):
                th.testing.assert_close(kept[:, row], expected[:, 0], rtol=0, atol=1e-6)
        # Asking for kept states does not change the outputs.
        th.testing.assert_close(output.logits, forward_sequence(policy, obs, starts, state).logits)
    with pytest.raises(ValueError, match="keep_states_at rows"):
        forward_sequence(policy, obs, starts, state, keep_states_at=np.array([[6, 0]]))


def test_forward_sequence_shape_errors() -> None:
    policy = random_policy(False)
    obs, starts = th.zeros(4, 2, 3), th.zeros(4, 2, dtype=th.bool)
    with pytest.raises(ValueError, match=r"state must be \(h, c\) each of shape \(1, 2, 8\)"):
        forward_sequence(policy, obs, starts, policy.initial_state(3))
    with pytest.raises(ValueError, match=r"obs must be \[T=4, B=2"):
        forward_sequence(policy, th.zeros(4, 3, 3), starts, policy.initial_state(2))


# ---------------------------------------------------------------------------------------------- training


def behaviour_gap(model: ACER, segment: Segment, zero_state: bool = False) -> float:
    """``max |pi / mu - 1|`` over the actions taken, with ``pi`` computed as the update computes it."""
    assert isinstance(model.policy, RecurrentACERPolicy) and isinstance(model.policy_avg, RecurrentACERPolicy)
    assert segment.initial_state is not None
    if zero_state:
        initial = tuple(np.zeros_like(part) for part in segment.initial_state)
        segment = Segment(**{**segment.__dict__, "initial_state": initial})
    with th.no_grad():
        pi = network_outputs(model.policy, model.policy_avg, segment).stats
    weights = F.importance_weights(
        pi_probs=pi, mu_probs=th.as_tensor(segment.mu_probs), actions=th.as_tensor(segment.actions), eps=0.0
    )
    return float((weights.rho_i - 1).abs().max())


@pytest.mark.parametrize("policy", ["MlpLstmPolicy", "MlpLnLstmPolicy"])
def test_on_policy_importance_weights_are_exactly_one(policy: str) -> None:
    # Short episodes (random CartPole; time limits of 5, 7, 9 and 11 steps) start and end inside segments.
    env = DummyVecEnv(
        [
            lambda limit=limit: Monitor(gym.make("CartPole-v1", max_episode_steps=limit))
            for limit in (5, 7, 9, 11)
        ]
    )
    model = ACER(policy, env, n_steps=10, replay_ratio=0, seed=0, policy_kwargs=TINY_LSTM)
    model.learn(200)  # move away from the initial weights
    for _ in range(4):
        segment = collect(model)
        assert segment.initial_state is not None
        assert np.abs(segment.initial_state[0]).max() > 0  # memory carried over from the previous segment
        assert segment.episode_starts[1:].any() and len(segment.final_index) > 0
        assert not segment.episode_starts[0].all()
        # Up to float rounding (a sequence vs one step at a time), pi is mu: rho == 1.
        assert behaviour_gap(model, segment) < 2e-6
        # SB2 / baselines start every segment from zeros: the weights are wrong from the first step.
        assert behaviour_gap(model, segment, zero_state=True) > 1e-4
        model.train(segment)


def test_logged_on_policy_rho_is_one(tmp_path: pathlib.Path) -> None:
    from stable_baselines3.common.logger import configure

    logger = configure(str(tmp_path), ["csv"])
    model = ACER(
        "MlpLstmPolicy",
        cartpole_envs(2),
        n_steps=10,
        replay_start=20,
        buffer_size=100,
        learning_rate=5e-3,  # the policy must move between a segment's collection and its replay
        seed=0,
        policy_kwargs=TINY_LSTM,
    )
    model.set_logger(logger)
    model.learn(400, log_interval=1)
    logger.close()
    import csv

    with open(tmp_path / "progress.csv") as handle:
        rows = list(csv.DictReader(handle))
    on_policy = np.array([float(row["train/on_policy_rho_mean"]) for row in rows])
    # rho = pi / (mu + 1e-6): 1 up to that epsilon.
    np.testing.assert_allclose(on_policy, 1.0, atol=1e-5)
    replayed = np.array([float(row["train/rho_mean"]) for row in rows[5:]])
    assert np.abs(replayed - 1.0).max() > 1e-3
    assert model.n_skipped_updates == 0


def test_truncation_bootstrap_uses_the_state_reached_in_that_episode() -> None:
    model = ACER(
        "MlpLnLstmPolicy",
        cartpole_envs(3, max_episode_steps=4),
        n_steps=6,
        replay_ratio=0,
        seed=0,
        policy_kwargs=TINY_LSTM,
    )
    segment = collect(model)
    assert len(segment.final_index) > 0
    policy = model.policy
    assert isinstance(policy, RecurrentACERPolicy) and isinstance(model.policy_avg, RecurrentACERPolicy)
    assert segment.initial_state is not None
    with th.no_grad():
        outputs, _ = recurrent_rows(CategoricalTerms(), policy, model.policy_avg, segment)
        rows = (segment.n_steps + 1) * segment.n_envs
        for row, (t, env) in enumerate(segment.final_index):
            # Step env's own observations through the policy up to t, then look at the final observation.
            state = tuple(th.as_tensor(part[env : env + 1]).unsqueeze(0) for part in segment.initial_state)
            for step in range(t + 1):
                _, state = one_step(
                    policy,
                    th.as_tensor(segment.observations[step, env : env + 1]),
                    state,  # type: ignore[arg-type]
                    th.as_tensor(segment.episode_starts[step, env : env + 1]),
                )
            output, _ = one_step(
                policy,
                th.as_tensor(segment.final_observations[row : row + 1]),
                state,
                th.zeros(1, dtype=th.bool),  # type: ignore[arg-type]
            )
            th.testing.assert_close(
                outputs.stats[rows + row], th.softmax(output.logits[0], -1), rtol=0, atol=1e-5
            )
            th.testing.assert_close(outputs.extra[rows + row], output.q_values[0], rtol=0, atol=1e-5)


def test_replay_buffer_stores_the_initial_state() -> None:
    model = ACER(
        "MlpLstmPolicy",
        cartpole_envs(2),
        n_steps=5,
        buffer_size=50,
        replay_start=10,
        seed=0,
        policy_kwargs=TINY_LSTM,
    )
    model.learn(30)
    buffer = model.replay_buffer
    assert buffer is not None and buffer.state_size == 16 and len(buffer) == 3
    segment = buffer.get(np.array([2, 1]))
    assert segment.initial_state is not None
    np.testing.assert_array_equal(segment.initial_state[0][0], buffer.initial_h[2, 0])
    np.testing.assert_array_equal(segment.initial_state[1][1], buffer.initial_c[1, 1])
    # The first segment starts from zeros, the next ones from the state the rollout carried over.
    assert not buffer.initial_h[0].any() and not buffer.initial_c[0].any()
    assert np.abs(buffer.initial_h[1:3]).min() > 0 and np.abs(buffer.initial_c[1:3]).min() > 0


def test_segment_replay_buffer_with_state_round_trip_and_errors() -> None:
    rng = np.random.default_rng(0)
    n_steps, n_envs, size = 3, 2, 4

    def segment(state: bool) -> Segment:
        return Segment(
            observations=rng.normal(size=(n_steps + 1, n_envs, 2)).astype(np.float32),
            actions=np.zeros((n_steps, n_envs), dtype=np.int64),
            rewards=np.zeros((n_steps, n_envs), dtype=np.float32),
            mu_probs=np.full((n_steps, n_envs, 2), 0.5, dtype=np.float32),
            terminated=np.zeros((n_steps, n_envs), dtype=bool),
            truncated=np.zeros((n_steps, n_envs), dtype=bool),
            episode_starts=np.zeros((n_steps + 1, n_envs), dtype=bool),
            final_index=np.zeros((0, 2), dtype=np.int64),
            final_observations=np.zeros((0, 2), dtype=np.float32),
            initial_state=(
                (
                    rng.normal(size=(n_envs, size)).astype(np.float32),
                    rng.normal(size=(n_envs, size)).astype(np.float32),
                )
                if state
                else None
            ),
        )

    buffer = SegmentReplayBuffer(9, n_steps, n_envs, (2,), np.dtype(np.float32), 2, seed=0, state_size=size)
    assert buffer.nbytes == SegmentReplayBuffer.estimate_nbytes(3, n_steps, n_envs, (2,), np.float32, 2, size)
    first, second = segment(True), segment(True)
    buffer.put(first)
    buffer.put(second)
    mixed = buffer.get(np.array([1, 0]))
    assert mixed.initial_state is not None and first.initial_state is not None
    assert second.initial_state is not None
    np.testing.assert_array_equal(mixed.initial_state[0][0], second.initial_state[0][0])
    np.testing.assert_array_equal(mixed.initial_state[1][1], first.initial_state[1][1])
    # Stored and returned as copies.
    first.initial_state[0][...] = 7.0
    mixed.initial_state[1][...] = 7.0
    assert not (buffer.get(np.array([0, 0])).initial_state[0] == 7.0).any()  # type: ignore[index]
    assert not (buffer.get(np.array([1, 0])).initial_state[1] == 7.0).any()  # type: ignore[index]
    with pytest.raises(ValueError, match="needs its initial_state"):
        buffer.put(segment(False))
    with pytest.raises(ValueError, match=r"initial_state must be \(h, c\), each \[E=2, 4\]"):
        bad = segment(False)
        buffer.put(Segment(**{**bad.__dict__, "initial_state": (np.zeros((2, 5)), np.zeros((2, 5)))}))
    plain = SegmentReplayBuffer(9, n_steps, n_envs, (2,), np.dtype(np.float32), 2)
    with pytest.raises(ValueError, match="state_size=0"):
        plain.put(segment(True))
    plain.put(segment(False))
    assert plain.get(np.array([0, 0])).initial_state is None
    with pytest.raises(ValueError, match=r"initial_state must be \(h, c\), each \[E=2, n_lstm\]"):
        Segment(**{**segment(False).__dict__, "initial_state": (np.zeros((3, 4)), np.zeros((3, 4)))})


# ---------------------------------------------------------------------------------------------- inference


@pytest.fixture(scope="module")
def trained_on_four_envs(small_settings: Mapping[str, Any]) -> ACER:
    model = ACER("MlpLstmPolicy", cartpole_envs(4), policy_kwargs=dict(n_lstm=32), **small_settings)
    return model.learn(200)


def test_predict_single_env_after_training_on_four(trained_on_four_envs: ACER) -> None:
    model = trained_on_four_envs
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    batch_obs = np.stack([obs, -obs, obs * 0.5, obs])
    state, batch_state = None, None
    start, batch_start = True, np.ones(4, dtype=bool)
    for _ in range(30):
        action, state = model.predict(obs, state=state, episode_start=np.array([start]), deterministic=True)
        assert action.shape == () and state[0].shape == (1, 1, 32) and state[1].shape == (1, 1, 32)
        batch_obs[0] = obs
        batch_action, batch_state = model.predict(
            batch_obs, state=batch_state, episode_start=batch_start, deterministic=True
        )
        assert batch_action.shape == (4,) and batch_state[0].shape == (1, 4, 32)
        # Row 0 of the batch is the same sequence: same action and state as the single-env predictions.
        assert int(batch_action[0]) == int(action)
        np.testing.assert_allclose(batch_state[0][:, 0], state[0][:, 0], atol=1e-6)
        obs, _, terminated, truncated, _ = env.step(int(action))
        start = terminated or truncated
        batch_start = np.array([start, False, False, False])
        if start:
            obs, _ = env.reset()
    # The state carries information: the same observation gives other probabilities with another state.
    zero = model.action_probability(obs[None])
    carried = model.action_probability(obs[None], state=state, mask=np.zeros(1))
    assert np.abs(zero - carried).max() > 1e-4


def test_predict_refuses_states_and_episode_starts_of_the_wrong_shape(trained_on_four_envs: ACER) -> None:
    model = trained_on_four_envs
    obs = np.zeros((2, 4), dtype=np.float32)
    with pytest.raises(ValueError, match=r"state arrays must have shape \(1, 2, 32\)"):
        model.predict(obs, state=(np.zeros((1, 3, 32)), np.zeros((1, 3, 32))))
    with pytest.raises(ValueError, match=r"state must be the \(h, c\) pair"):
        model.predict(obs, state=(np.zeros((1, 2, 32)),))
    with pytest.raises(ValueError, match="one flag per observation"):
        model.predict(obs, episode_start=np.zeros(3))
    # (n, n_lstm) arrays are accepted too.
    model.predict(obs, state=(np.zeros((2, 32)), np.zeros((2, 32))))


def test_action_probability_takes_state_and_mask(trained_on_four_envs: ACER) -> None:
    model = trained_on_four_envs
    obs = np.random.default_rng(0).normal(size=(3, 4)).astype(np.float32)
    _, state = model.predict(obs)
    _, state = model.predict(obs, state=state)
    zero = model.action_probability(obs)
    with_state = model.action_probability(obs, state=state, mask=np.zeros(3))
    assert zero.shape == with_state.shape == (3, 2)
    np.testing.assert_allclose(with_state.sum(axis=1), 1.0, rtol=1e-6)
    assert np.abs(zero - with_state).max() > 1e-4
    # mask = 1: the state is reset, as if it were zeros.
    np.testing.assert_allclose(model.action_probability(obs, state=state, mask=np.ones(3)), zero, atol=1e-7)
    mixed = model.action_probability(obs, state=state, mask=np.array([1.0, 0.0, 1.0]))
    np.testing.assert_allclose(mixed[[0, 2]], zero[[0, 2]], atol=1e-7)
    np.testing.assert_allclose(mixed[1], with_state[1], atol=1e-7)
    chosen = model.action_probability(obs, state=state, mask=np.zeros(3), actions=np.array([1, 0, 1]))
    np.testing.assert_allclose(chosen[:, 0], with_state[[0, 1, 2], [1, 0, 1]], rtol=1e-6)
    single = model.action_probability(obs[0], state=(state[0][:, :1], state[1][:, :1]), mask=np.zeros(1))
    np.testing.assert_allclose(single, with_state[0], atol=1e-6)
    assert model.predict(obs, state=state, episode_start=np.zeros(3), deterministic=True)[0].tolist() == list(
        with_state.argmax(axis=1)
    )


def test_evaluate_policy_single_and_multi_env(trained_on_four_envs: ACER) -> None:
    model = trained_on_four_envs
    for n_envs in (1, 3):
        env = make_vec_env("CartPole-v1", n_envs=n_envs, seed=5)
        rewards, lengths = evaluate_policy(
            model, env, n_eval_episodes=4, deterministic=True, return_episode_rewards=True
        )
        assert len(rewards) == 4 and all(length > 0 for length in lengths)  # type: ignore[arg-type]


def test_eval_callback_evaluates_and_saves_the_best_recurrent_model(
    tmp_path: pathlib.Path, small_settings: Mapping[str, Any]
) -> None:
    eval_env = Monitor(gym.make("CartPole-v1"))
    callback = EvalCallback(
        eval_env, eval_freq=20, n_eval_episodes=2, log_path=str(tmp_path), best_model_save_path=str(tmp_path)
    )
    model = ACER("MlpLnLstmPolicy", cartpole_envs(2), policy_kwargs=TINY_LSTM, **small_settings)
    model.learn(100, callback=callback)
    assert callback.best_mean_reward > 0
    results = np.load(tmp_path / "evaluations.npz")
    assert results["results"].shape == (2, 2)  # eval_freq counts vector steps (2 envs)
    best = ACER.load(tmp_path / "best_model.zip")
    assert isinstance(best.policy, MlpLnLstmPolicy)


def test_save_load_gives_identical_predictions_with_the_same_state(
    trained_on_four_envs: ACER, tmp_path: pathlib.Path
) -> None:
    model = trained_on_four_envs
    model.save(tmp_path / "recurrent.zip")
    loaded = ACER.load(tmp_path / "recurrent.zip", env=cartpole_envs(2))
    assert type(loaded.policy) is MlpLstmPolicy and loaded.policy_kwargs == dict(n_lstm=32)
    obs = np.random.default_rng(1).normal(size=(20, 2, 4)).astype(np.float32)
    starts = np.zeros((20, 2), dtype=bool)
    starts[0] = starts[7, 1] = True
    state_a = state_b = None
    for t in range(20):
        probs_a = model.action_probability(obs[t], state=state_a, mask=starts[t])
        probs_b = loaded.action_probability(obs[t], state=state_b, mask=starts[t])
        np.testing.assert_array_equal(probs_a, probs_b)
        action_a, state_a = model.predict(obs[t], state=state_a, episode_start=starts[t], deterministic=True)
        action_b, state_b = loaded.predict(obs[t], state=state_b, episode_start=starts[t], deterministic=True)
        np.testing.assert_array_equal(action_a, action_b)
        for a, b in zip(state_a, state_b, strict=True):
            np.testing.assert_array_equal(a, b)
    # The loaded model trains on another number of envs (fresh memory and replay buffer).
    loaded.learn(20)
    assert loaded.replay_buffer is not None and loaded.replay_buffer.n_envs == 2
    assert loaded._last_lstm_state is not None and loaded._last_lstm_state[0].shape == (1, 2, 32)


def test_set_env_with_another_number_of_envs_resets_the_carried_state(
    small_settings: Mapping[str, Any],
) -> None:
    model = ACER("MlpLstmPolicy", cartpole_envs(2), policy_kwargs=TINY_LSTM, **small_settings).learn(20)
    assert model._last_lstm_state is not None and model._last_lstm_state[0].shape == (1, 2, 16)
    model.set_env(cartpole_envs(3))
    assert model._last_lstm_state is None
    model.learn(30)
    assert model._last_lstm_state is not None and model._last_lstm_state[0].shape == (1, 3, 16)
    assert model.replay_buffer is not None and model.replay_buffer.initial_h.shape[1:] == (3, 16)


def test_feed_forward_segments_carry_no_state(small_settings: Mapping[str, Any]) -> None:
    model = ACER("MlpPolicy", cartpole_envs(2), **small_settings).learn(20)
    assert model._last_lstm_state is None
    assert model.replay_buffer is not None and model.replay_buffer.state_size == 0
    assert model.replay_buffer.sample().initial_state is None
    assert isinstance(model.policy, MlpPolicy)


# ---------------------------------------------------------------------------------------------- memory


@pytest.mark.slow
def test_lstm_solves_cartpole_without_velocities() -> None:
    """One seed of benchmarks/recurrent_cartpole.py: the LSTM policy needs its memory to balance the pole
    (the feed-forward policy with the same settings stays far below; see the benchmark)."""
    from benchmarks.recurrent_cartpole import (
        HYPERPARAMETERS,
        N_ENVS,
        N_TIMESTEPS,
        RECURRENT_POLICY_KWARGS,
        make_eval_env,
        make_training_env,
    )

    env = make_training_env(N_ENVS, seed=0)
    model = ACER("MlpLstmPolicy", env, seed=0, policy_kwargs=RECURRENT_POLICY_KWARGS, **HYPERPARAMETERS)
    model.learn(N_TIMESTEPS)
    mean, _ = evaluate_policy(model, make_eval_env(env, seed=10_000), n_eval_episodes=10, deterministic=True)
    assert mean >= 300  # out of 500


def test_no_velocity_wrapper_keeps_position_and_angle() -> None:
    env = NoVelocityObservation(TimeLimit(gym.make("CartPole-v1").unwrapped, 10))
    full = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=3)
    full_obs, _ = full.reset(seed=3)
    assert env.observation_space.shape == (2,)
    np.testing.assert_array_equal(obs, full_obs[[0, 2]])


def test_predict_mask_alias_resets_recurrent_state() -> None:
    """SB2's ``mask=`` in ``predict`` marks episode starts: the LSTM state is reset as for a fresh predict."""
    model = ACER("MlpLstmPolicy", "CartPole-v1", seed=0)
    obs = np.ones((1, 4), dtype=np.float32)
    _, state = model.predict(obs)
    assert state is not None
    _, carried = model.predict(obs, state=state)
    _, masked = model.predict(obs, state=state, mask=np.array([True]))
    _, fresh = model.predict(obs)
    assert masked is not None and fresh is not None and carried is not None
    np.testing.assert_allclose(masked[0], fresh[0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(masked[1], fresh[1], rtol=1e-6, atol=1e-7)
    assert not np.allclose(carried[0], fresh[0])


def test_forward_sequence_keeps_state_after_second_to_last_step() -> None:
    """``keep_states_at=[[T-2, 0]]`` returns the state after step T-2, i.e. that of running T-1 steps."""
    model = ACER("MlpLstmPolicy", "CartPole-v1", seed=0)
    policy = model.policy
    n_steps = 4
    generator = th.Generator().manual_seed(0)
    obs = th.randn(n_steps, 1, 4, generator=generator)
    starts = th.zeros(n_steps, 1, dtype=th.bool)
    state = policy.initial_state(1)
    with th.no_grad():
        out = forward_sequence(policy, obs, starts, state, keep_states_at=np.array([[n_steps - 2, 0]]))
        ref = forward_sequence(policy, obs[: n_steps - 1], starts[: n_steps - 1], state)
        full = forward_sequence(policy, obs, starts, state)
    assert out.kept_state is not None
    for kept, expected in zip(out.kept_state, ref.state, strict=True):
        assert tuple(kept.shape) == (1, 1, policy.n_lstm)
        th.testing.assert_close(kept, expected)
    th.testing.assert_close(out.logits, full.logits)
    th.testing.assert_close(out.state[0], full.state[0])


def test_a_state_dict_of_0_1_naming_the_layers_after_the_lstm_post_lstm_loads() -> None:
    """sb3-acer 0.1's Discrete LSTM policies called the layers after the LSTM ``post_lstm``."""
    saved = random_policy(False, net_arch=["lstm", 5]).state_dict()
    old = {key.replace("shared_net.", "post_lstm."): value for key, value in saved.items()}
    assert "post_lstm.0.weight" in old
    policy = random_policy(False, seed=1, net_arch=["lstm", 5])
    policy.load_state_dict(old)
    loaded = policy.state_dict()
    assert list(loaded) == list(saved) and all(th.equal(loaded[key], saved[key]) for key in saved)

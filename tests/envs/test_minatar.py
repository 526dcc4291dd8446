"""MinAtar support: the Gymnasium ids, the channel-first float view of the boolean frames, the paper's small
CNN as a features extractor, and ACER learning on a game with it."""

from __future__ import annotations

import sys
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch as th
from gymnasium import spaces
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_vec_env

from sb3_acer import ACER
from sb3_acer.common.policies import MinAtarCNN
from sb3_acer.envs.minatar import (
    MINATAR_GAMES,
    MinAtarObservation,
    is_minatar_id,
    make_minatar_env,
    minatar_id,
    register_minatar_envs,
)

pytest.importorskip("minatar")

# The channels and the minimal action set of each game (minatar 1.0).
GAMES = {
    "Asterix": (4, 5),
    "Breakout": (4, 3),
    "Freeway": (7, 3),
    "Seaquest": (10, 6),
    "SpaceInvaders": (6, 4),
}
MINATAR_POLICY_KWARGS = dict(features_extractor_class=MinAtarCNN, net_arch=[])


@pytest.fixture
def unregistered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Gymnasium's registry without MinAtar's ids for the test (restored after it)."""
    for env_id in [env_id for env_id in gym.registry if is_minatar_id(env_id)]:
        monkeypatch.delitem(gym.registry, env_id)


@pytest.mark.usefixtures("unregistered")
def test_registration_is_idempotent() -> None:
    assert "MinAtar/Breakout-v1" not in gym.registry
    register_minatar_envs()
    register_minatar_envs()  # again: no "overriding environment" warning (an error in this suite)
    for game in MINATAR_GAMES:
        for version in (0, 1):
            assert minatar_id(game, version) in gym.registry
    env = gym.make("MinAtar/Breakout-v1")
    assert env.observation_space.shape == (10, 10, 4)
    env.close()


def test_ids() -> None:
    assert minatar_id("SpaceInvaders") == "MinAtar/SpaceInvaders-v1"
    assert is_minatar_id("MinAtar/Breakout-v1")
    assert not is_minatar_id("BreakoutNoFrameskip-v4")
    assert not is_minatar_id("ALE/Breakout-v5")


@pytest.mark.parametrize("game", MINATAR_GAMES)
def test_every_game_gives_the_float_view(game: str) -> None:
    channels, n_actions = GAMES[game]
    env = make_minatar_env(minatar_id(game))
    assert env.observation_space == spaces.Box(0.0, 1.0, shape=(channels, 10, 10), dtype=np.float32)
    assert env.action_space == spaces.Discrete(n_actions)
    obs, _ = env.reset(seed=3)
    frame = env.unwrapped.game.state()  # type: ignore[attr-defined]
    assert frame.dtype == np.bool_ and frame.shape == (10, 10, channels)
    np.testing.assert_array_equal(obs, np.moveaxis(frame, -1, 0).astype(np.float32))
    assert obs.dtype == np.float32 and obs.flags.c_contiguous and env.observation_space.contains(obs)
    obs, *_ = env.step(0)
    np.testing.assert_array_equal(obs, np.moveaxis(env.unwrapped.game.state(), -1, 0))  # type: ignore[attr-defined]
    env.close()


class FixedFrame(gym.Env[np.ndarray, int]):
    """An env whose every observation is one known boolean ``[10, 10, 3]`` frame."""

    observation_space = spaces.Box(0.0, 1.0, shape=(10, 10, 3), dtype=bool)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.frame = np.zeros((10, 10, 3), dtype=bool)
        self.frame[0, 0, 0] = self.frame[2, 5, 1] = self.frame[9, 1, 2] = self.frame[9, 9, 2] = True

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> Any:
        return self.frame.copy(), {}

    def step(self, action: int) -> Any:
        return self.frame.copy(), 0.0, False, False, {}


def test_wrapper_values_are_exact() -> None:
    env = MinAtarObservation(FixedFrame())
    assert env.observation_space == spaces.Box(0.0, 1.0, shape=(3, 10, 10), dtype=np.float32)
    obs, _ = env.reset()
    expected = np.zeros((3, 10, 10), dtype=np.float32)
    expected[0, 0, 0] = expected[1, 2, 5] = expected[2, 9, 1] = expected[2, 9, 9] = 1.0
    np.testing.assert_array_equal(obs, expected)
    assert obs.dtype == np.float32
    with pytest.raises(ValueError, match=r"needs \[H, W, C\] Box observations"):
        MinAtarObservation(gym.make("CartPole-v1"))


def test_extractor_shape_and_parameters() -> None:
    space = spaces.Box(0.0, 1.0, shape=(4, 10, 10), dtype=np.float32)
    extractor = MinAtarCNN(space)
    assert extractor.features_dim == 128
    # conv 3x3, 4 -> 16 channels (+ bias), then 16 x 8 x 8 = 1024 -> 128 (+ bias): the paper's network.
    assert sum(p.numel() for p in extractor.parameters()) == 4 * 16 * 9 + 16 + 1024 * 128 + 128
    features = extractor(th.rand(5, 4, 10, 10))
    assert features.shape == (5, 128) and bool((features >= 0).all())
    assert MinAtarCNN(space, features_dim=64, n_filters=8)(th.rand(2, 4, 10, 10)).shape == (2, 64)
    with pytest.raises(ValueError, match="smaller than its 3x3 kernel"):
        MinAtarCNN(spaces.Box(0.0, 1.0, shape=(10, 10, 2), dtype=np.float32))
    with pytest.raises(ValueError, match=r"needs \[C, H, W\] Box observations"):
        MinAtarCNN(spaces.Box(0.0, 1.0, shape=(400,), dtype=np.float32))


def test_acer_learns_on_breakout_and_reloads(tmp_path: Any) -> None:
    env = make_vec_env(make_minatar_env, n_envs=2, seed=0, env_kwargs=dict(env_id="MinAtar/Breakout-v1"))
    model = ACER("CnnPolicy", env, n_steps=10, replay_start=50, policy_kwargs=MINATAR_POLICY_KWARGS, seed=0)
    assert isinstance(model.policy.features_extractor, MinAtarCNN)
    model.learn(300)
    assert model.num_timesteps == 300
    obs = env.reset()
    actions, _ = model.predict(obs, deterministic=True)
    assert actions.shape == (2,) and all(0 <= a < 3 for a in actions)
    model.save(tmp_path / "model.zip")
    loaded = ACER.load(tmp_path / "model.zip")
    assert isinstance(loaded.policy.features_extractor, MinAtarCNN)
    np.testing.assert_array_equal(loaded.predict(obs, deterministic=True)[0], actions)
    env.close()


def test_sb3_cnn_policy_takes_the_extractor() -> None:
    env = make_vec_env(make_minatar_env, n_envs=1, env_kwargs=dict(env_id="MinAtar/SpaceInvaders-v1"))
    model = PPO("CnnPolicy", env, n_steps=16, batch_size=16, policy_kwargs=MINATAR_POLICY_KWARGS, seed=0)
    assert isinstance(model.policy.features_extractor, MinAtarCNN)
    action, _ = model.predict(env.reset())
    assert 0 <= int(action[0]) < 4
    env.close()


@pytest.mark.usefixtures("unregistered")
def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "minatar", None)  # an import of it now fails
    monkeypatch.setitem(sys.modules, "minatar.gym", None)
    with pytest.raises(ImportError, match=r'the minatar package: pip install "sb3-acer\[minatar\]"') as info:
        make_minatar_env("MinAtar/Breakout-v1")
    assert "\n" not in str(info.value) and info.value.name == "minatar"


def test_benchmark_gives_every_algorithm_the_same_network() -> None:
    from benchmarks.minatar_games import ALGOS, make_model

    sizes = {}
    for algo in ALGOS:
        model, env = make_model(algo, "Breakout", seed=0, overrides={})
        extractor = (
            model.policy.q_net.features_extractor if algo == "DQN" else model.policy.features_extractor
        )
        assert isinstance(extractor, MinAtarCNN), algo
        sizes[algo] = sum(p.numel() for p in model.policy.parameters() if p.requires_grad)
        env.close()
    # the extractor's 131,792 parameters, then linear heads on its 128 features (3 actions): ACER's policy and
    # Q heads, PPO's and A2C's policy and value heads, DQN's Q head (and its target network's copy).
    extractor = 4 * 16 * 9 + 16 + 1024 * 128 + 128
    assert sizes == {
        "ACER": extractor + 2 * (128 * 3 + 3),
        "PPO": extractor + 128 * 3 + 3 + 128 + 1,
        "A2C": extractor + 128 * 3 + 3 + 128 + 1,
        "DQN": 2 * (extractor + 128 * 3 + 3),
    }


def test_benchmark_run_dir_keeps_each_run_and_refuses_other_settings(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import benchmarks.minatar_games as bench

    calls = []

    def fake_run_one(*job: Any) -> Any:
        calls.append(job[:3])
        return bench.RunResult(job[0], "MinAtar/Breakout-v1", job[2], 10, 1, 0.5, 1.0, 0.0, 9.0, 1.0, {})

    monkeypatch.setattr(bench, "run_one", fake_run_one)
    job = ("ACER", "Breakout", 3, 10, 2, {}, 0)
    first = bench.run_job(job, tmp_path)
    assert (tmp_path / "Breakout_ACER_3.json").exists() and calls == [("ACER", "Breakout", 3)]
    assert bench.run_job(job, tmp_path) == first and len(calls) == 1  # taken from the file, not run again
    with pytest.raises(SystemExit, match=r"Breakout_ACER_3\.json: kept for other settings"):
        bench.run_job(("ACER", "Breakout", 3, 20, 2, {}, 0), tmp_path)


@pytest.mark.parametrize("game", MINATAR_GAMES)
def test_the_preset_is_what_the_benchmark_measured(game: str) -> None:
    # A user who trains a game with its preset gets the settings of the reported runs.
    from benchmarks.minatar_games import ACER_PRESETS, acer_kwargs
    from sb3_acer.presets import load_preset

    preset = load_preset(minatar_id(game))
    n_envs, policy, measured = acer_kwargs(ACER_PRESETS[game])
    assert (preset.n_envs, preset.policy) == (n_envs, policy)
    assert preset.hyperparameters == measured


# ------------------------------------------------------------------ the command line


def test_train_and_enjoy_a_minatar_game_by_id(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A MinAtar game without a preset gets MinAtar's settings (Asterix has a preset: it is hidden here, so
    that the test holds once every game has one)."""
    import sb3_acer.cli.train.settings as settings
    from tests.helpers.cli_helpers import run

    def no_preset(env_id: str, **kwargs: Any) -> Any:
        raise KeyError(env_id)

    monkeypatch.setattr(settings, "load_preset", no_preset)
    logs = tmp_path / "logs"
    code, out, err = run(
        capsys, "train", "MinAtar/Asterix-v1", "--timesteps", "200", "--n-envs", "2", "--no-progress-bar",
        "--log-folder", str(logs),
    )  # fmt: skip
    assert code == 0, err
    assert "No preset for MinAtar/Asterix-v1: using ACER's defaults with MinAtar's settings" in out
    model = ACER.load(logs / "MinAtar-Asterix-v1_0" / "model.zip")
    assert model.observation_space == spaces.Box(0.0, 1.0, (4, 10, 10), np.float32)
    assert isinstance(model.policy.features_extractor, MinAtarCNN)
    assert model.lr_schedule_name == "constant" and model.replay_ratio == 4  # ACER's default
    code, out, err = run(capsys, "enjoy", str(logs / "MinAtar-Asterix-v1_0" / "model.zip"), "--episodes", "1")
    assert code == 0, err
    assert "MinAtar/Asterix-v1: mean return over 1 episode " in out


def test_a_minatar_game_with_a_preset_uses_it(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.helpers.cli_helpers import run

    code, out, err = run(
        capsys, "train", "MinAtar/Breakout-v1", "--timesteps", "40", "--n-envs", "1", "--no-progress-bar",
        "--log-folder", str(tmp_path),
    )  # fmt: skip
    assert code == 0, err
    assert "Using the tuned preset for MinAtar/Breakout-v1" in out
    model = ACER.load(tmp_path / "MinAtar-Breakout-v1_0" / "model.zip")
    assert (model.replay_ratio, model.lr_schedule_name) == (8, "constant")
    assert isinstance(model.policy.features_extractor, MinAtarCNN)


def test_a_cnn_policy_on_the_float_grid_needs_an_extractor(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers.cli_helpers import assert_one_line_error, run

    common = ["--timesteps", "40", "--n-envs", "1", "--no-progress-bar", "--log-folder", str(tmp_path)]
    code, _, err = run(capsys, "train", "MinAtar/Breakout-v1", *common, "--hyperparams", "policy_kwargs={}")
    assert_one_line_error(code, err, 2, "CnnPolicy needs image observations")
    mlp = ["--policy", "MlpPolicy", "--hyperparams", "policy_kwargs=dict(net_arch=[16])"]
    code, _, err = run(capsys, "train", "MinAtar/Breakout-v1", *common, *mlp)
    assert code == 0, err


@pytest.mark.usefixtures("unregistered")
def test_a_minatar_id_without_the_package_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.helpers.cli_helpers import assert_one_line_error, run

    monkeypatch.setitem(sys.modules, "minatar", None)
    monkeypatch.setitem(sys.modules, "minatar.gym", None)
    code, _, err = run(capsys, "train", "MinAtar/Breakout-v1", "--timesteps", "40")
    assert_one_line_error(
        code, err, 1, 'the MinAtar games need the minatar package: pip install "sb3-acer[minatar]"'
    )

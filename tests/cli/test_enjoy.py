"""``sb3-acer enjoy``: playing a saved model in the env, wrappers and normalisation it was trained with,
videos, and its one-line errors."""

from __future__ import annotations

import io
import json
import pathlib
import pickle
import sys
import types
import zipfile
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from stable_baselines3.common.running_mean_std import RunningMeanStd
from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

from sb3_acer import ACER
from sb3_acer.cli import normalization
from sb3_acer.cli.normalization import load_normalization, save_normalization
from tests.helpers.cli_helpers import (
    assert_one_line_error,
    run,
    train,
)
from tests.helpers.file_bombs import ALLOWED_MB, BOMB_BYTES, peak_increases, rewrite_padded
from tests.helpers.hostile import MarkerPayload


def test_missing_model_file(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    code, _, err = run(capsys, "enjoy", str(tmp_path / "nothing.zip"))
    assert_one_line_error(code, err, 2, "no model file")


def test_enjoy_prints_the_returns_of_n_episodes(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path)[0] == 0
    run_dir = tmp_path / "CartPole-v1_0"
    code, out, err = run(capsys, "enjoy", str(run_dir), "--episodes", "3", "--deterministic", "--seed", "5")
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("episode ")]
    assert len(lines) == 3
    returns = [float(line.split("return ")[1].split(",")[0]) for line in lines]
    lengths = [int(line.split("length ")[1]) for line in lines]
    assert returns == [float(length) for length in lengths]  # CartPole pays 1 per step
    assert f"mean return over 3 episodes {np.mean(returns):.2f} +/- {np.std(returns):.2f}" in out
    # Same seed, deterministic actions: the same episodes.
    again = run(
        capsys, "enjoy", str(run_dir / "model.zip"), "--episodes", "3", "--deterministic", "--seed", "5"
    )
    assert again[1] == out


def test_enjoy_refuses_an_env_that_does_not_fit(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    code, _, err = run(capsys, "enjoy", str(model_path))
    assert_one_line_error(code, err, 2, "pass --env ENV_ID")
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "Acrobot-v1")
    assert_one_line_error(code, err, 2, "the model does not fit Acrobot-v1")


def test_a_crafted_model_file_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    """Whatever a crafted model file makes ``ACER.load`` raise, ``enjoy`` says so in one line."""
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    with zipfile.ZipFile(model_path) as archive:
        members = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(members["data"])
    data["policy_kwargs"]["features_extractor_kwargs"] = {"no_such_argument": 1}
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(model_path, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    code, out, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1")
    assert_one_line_error(code, err, 1, f"cannot load {model_path}: ")
    assert "no_such_argument" in err and out == ""


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b" " * (1 << 20) + b"{}", "it is larger than 1048576 bytes, which no run description is"),
        (b"[" * 100_000, "it is nested too deeply to be a run description"),
    ],
)
def test_a_run_description_too_large_or_deep_is_one_line(
    content: bytes, reason: str, capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    (tmp_path / "model.zip").write_bytes(b"not read")
    (tmp_path / "model.json").write_bytes(content)
    code, _, err = run(capsys, "enjoy", str(tmp_path / "model.zip"))
    assert_one_line_error(
        code, err, 1, f"cannot read {tmp_path / 'model.json'}: {reason}; repair or remove it"
    )


class _RenderEnv(gym.Env):
    """Episodes of 4 steps, rendered as a small grey frame."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(self, render_mode: str | None = None) -> None:
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32)
        self.action_space = spaces.Discrete(2)
        self._t = 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self._t = 0
        return np.zeros(2, dtype=np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self._t += 1
        return np.full(2, self._t / 4, dtype=np.float32), 1.0, self._t >= 4, False, {}

    def render(self) -> np.ndarray:
        return np.full((8, 8, 3), 100 + self._t, dtype=np.uint8)


@pytest.fixture
def render_env_id() -> Any:
    env_id = "Sb3AcerTestRender-v0"
    gym.register(env_id, entry_point=_RenderEnv)
    yield env_id
    del gym.registry[env_id]


def test_enjoy_video_needs_moviepy(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "moviepy", None)  # import moviepy raises ImportError
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--video-folder", "v")
    assert code == 1
    assert err == "error: video recording needs moviepy: pip install moviepy\n"


def test_enjoy_render_without_pygame_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pygame", None)  # import pygame raises ImportError
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    code, out, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--render")
    assert_one_line_error(code, err, 1, "cannot show CartPole-v1: pygame is not installed")
    assert "pip install" in err and "episode" not in out


@pytest.fixture
def fake_moviepy(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """moviepy's ImageSequenceClip, recording the name and the number of frames of each video written."""
    written: list[tuple[str, int]] = []

    class ImageSequenceClip:  # stands in for moviepy's: records what would be encoded
        def __init__(self, frames: list[np.ndarray], fps: float) -> None:
            self.frames = frames

        def write_videofile(self, path: str, logger: Any = None) -> None:
            written.append((pathlib.Path(path).name, len(self.frames)))
            pathlib.Path(path).write_bytes(b"video")

    fake = {name: types.ModuleType(name) for name in ("moviepy", "moviepy.video", "moviepy.video.io")}
    clip_module = types.ModuleType("moviepy.video.io.ImageSequenceClip")
    clip_module.ImageSequenceClip = ImageSequenceClip  # type: ignore[attr-defined]
    fake["moviepy.video.io.ImageSequenceClip"] = clip_module
    for name, module in fake.items():
        monkeypatch.setitem(sys.modules, name, module)
    return written


def test_enjoy_that_fails_before_playing_leaves_no_video_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, fake_moviepy: list[tuple[str, int]]
) -> None:
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    videos = tmp_path / "new" / "videos"
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "Acrobot-v1", "--video-folder", str(videos))
    assert_one_line_error(code, err, 2, "the model does not fit Acrobot-v1")
    assert not (tmp_path / "new").exists() and fake_moviepy == []


def test_enjoy_video_without_pygame_is_one_line_and_leaves_no_folder(
    capsys: pytest.CaptureFixture[str],
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    fake_moviepy: list[tuple[str, int]],
) -> None:
    monkeypatch.setitem(sys.modules, "pygame", None)  # import pygame raises ImportError
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    videos = tmp_path / "new" / "videos"
    code, _, err = run(
        capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--video-folder", str(videos)
    )
    assert_one_line_error(code, err, 1, "cannot record CartPole-v1: pygame is not installed")
    assert not (tmp_path / "new").exists() and fake_moviepy == []


def test_enjoy_records_one_video_per_episode(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, render_env_id: str, fake_moviepy: list[Any]
) -> None:
    written = fake_moviepy

    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", render_env_id, n_steps=5).save(model_path)
    videos = tmp_path / "videos"
    code, out, err = run(
        capsys,
        "enjoy",
        str(model_path),
        "--env",
        render_env_id,
        "--episodes",
        "2",
        "--video-folder",
        str(videos),
    )
    assert code == 0, err
    assert out.count("return 4.00, length 4") == 2
    # Two whole episodes of 5 frames (reset + 4 steps); not the episode begun by the final auto-reset.
    assert written == [(f"{render_env_id}-episode-0.mp4", 5), (f"{render_env_id}-episode-1.mp4", 5)]


def test_enjoy_carries_the_lstm_state_of_a_recurrent_model(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_path = tmp_path / "model.zip"
    ACER("MlpLstmPolicy", "CartPole-v1", n_steps=5, policy_kwargs=dict(n_lstm=8)).save(model_path)
    seen: list[tuple[bool, np.ndarray]] = []
    original = ACER.predict

    def spy(self: ACER, observation: Any, state: Any = None, episode_start: Any = None, **kwargs: Any) -> Any:
        seen.append((state is not None, np.asarray(episode_start).copy()))
        return original(self, observation, state=state, episode_start=episode_start, **kwargs)

    monkeypatch.setattr(ACER, "predict", spy)
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--episodes", "1")
    assert code == 0, err
    assert len(seen) > 2
    assert not seen[0][0] and seen[0][1].all()  # first step: no state yet, episode start
    # Every later step gets the state returned by the previous one.
    assert all(has_state for has_state, _ in seen[1:])
    assert not seen[1][1].any()


def test_enjoy_follows_the_run_description_over_stray_statistics(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path / "a", "--timesteps", "100", "--hyperparams", "normalize=True")[0] == 0
    assert train(capsys, tmp_path / "b", "--timesteps", "100")[0] == 0
    model = tmp_path / "b" / "CartPole-v1_0" / "model.zip"
    plain = run(capsys, "enjoy", str(model), "--episodes", "2", "--deterministic")
    stray = tmp_path / "a" / "CartPole-v1_0" / "model.vecnormalize.npz"
    (model.parent / stray.name).write_bytes(stray.read_bytes())  # model.json says normalize: false
    assert run(capsys, "enjoy", str(model), "--episodes", "2", "--deterministic") == plain


def test_enjoy_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path) -> None:
    model_path = tmp_path / "model.zip"
    ACER("MlpPolicy", "CartPole-v1", n_steps=5).save(model_path)
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--device", "bogus")
    assert_one_line_error(code, err, 2, "argument --device: unusable torch device 'bogus'")
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--seed", "-1")
    assert_one_line_error(code, err, 2, "argument --seed: expected a seed in [0, 2**32 - 1]")
    # A space whose repr spans lines still gives one line.
    gym.register("WideBox-v0", entry_point=_WideBoxEnv)
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "WideBox-v0")
    assert_one_line_error(code, err, 2, "the model does not fit WideBox-v0")
    for text, reason in (("{bad", "Expecting property name"), ("[1]", "not a run description")):
        (tmp_path / "model.json").write_text(text)
        code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1")
        assert_one_line_error(code, err, 1, f"cannot read {tmp_path / 'model.json'}: {reason}")


class _WideBoxEnv(gym.Env):
    observation_space = spaces.Box(-np.arange(1.0, 31.0), np.arange(1.0, 31.0), dtype=np.float64)
    action_space = spaces.Discrete(2)


def test_enjoy_plays_a_model_normalised_without_clipping(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    hyperparams = "normalize=dict(clip_obs=1e999, clip_reward=1e999)"  # infinite bounds: no clipping
    assert train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", hyperparams)[0] == 0
    code, out, err = run(capsys, "enjoy", str(tmp_path / "CartPole-v1_0" / "model.zip"), "--episodes", "1")
    assert code == 0, err
    assert "mean return over 1 episode" in out


def test_enjoy_reports_damaged_files_beside_the_model_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", "normalize=True")[0] == 0
    model = tmp_path / "CartPole-v1_0" / "model.zip"
    description = model.with_suffix(".json")
    good = description.read_text()
    for value in ("5", '["CartPole-v1"]'):
        description.write_text(f'{{"env_id": {value}}}')
        code, _, err = run(capsys, "enjoy", str(model))
        assert_one_line_error(code, err, 1, f"cannot read {description}: 'env_id' must be a str, got")
    description.write_text(good)
    statistics = model.with_suffix(".vecnormalize.npz")
    np.savez(
        tmp_path / "wrong.npz",
        obs_mean=np.zeros(7),
        obs_var=np.ones(7),
        obs_count=1.0,
        norm_obs=True,
        clip_obs=10.0,
        clip_reward=10.0,
        gamma=0.99,
        epsilon=1e-8,
        ret_mean=0.0,
        ret_var=1.0,
        ret_count=1.0,
    )
    good_statistics = statistics.read_bytes()
    with np.load(statistics) as saved:
        fields = {name: saved[name] for name in saved.files}
    damaged = []
    for name, value, reason in (
        ("clip_obs", np.array([10.0, 10.0]), "clip_obs is not a number: float64[2]"),
        ("obs_var", np.full(4, np.nan), "observation statistics hold NaN, inf or a negative variance"),
        ("obs_var", -np.ones(4), "observation statistics hold NaN, inf or a negative variance"),
        ("epsilon", np.float64(0.0), "epsilon = 0.0 is out of range"),
    ):
        buffer = io.BytesIO()
        np.savez(buffer, **{**fields, name: value})
        damaged.append((buffer.getvalue(), reason))
    flipped = bytearray(good_statistics)
    with zipfile.ZipFile(io.BytesIO(good_statistics)) as archive:
        first = archive.infolist()[0]
    name_length, extra_length = np.frombuffer(good_statistics, "<u2", 2, first.header_offset + 26)
    flipped[first.header_offset + 30 + name_length + extra_length + first.file_size - 1] ^= 0xFF  # CRC fails
    for content, reason in (
        (b"garbage", "cannot read"),
        (
            (tmp_path / "wrong.npz").read_bytes(),
            "observation statistics of shape (7,), for observations of shape (4,)",
        ),
        (good_statistics[: len(good_statistics) // 2], "damaged (truncated or corrupt)"),
        (bytes(flipped), "damaged (truncated or corrupt)"),
        *damaged,
    ):
        statistics.write_bytes(content)
        code, _, err = run(capsys, "enjoy", str(model))
        assert_one_line_error(code, err, 1, f"cannot read {statistics}: ")
        assert reason in err
    with zipfile.ZipFile(model) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    data = json.loads(entries["data"])
    data["policy_class"] = "CnnPolicy"  # a file that contradicts itself: images expected, CartPole's vector
    entries["data"] = json.dumps(data).encode()
    contradicting = tmp_path / "contradicting.zip"
    with zipfile.ZipFile(contradicting, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    code, _, err = run(capsys, "enjoy", str(contradicting), "--env", "CartPole-v1")
    assert_one_line_error(code, err, 1, f"cannot load {contradicting}: load: the policy cannot be built")
    for device in ("meta", "xpu"):
        code, _, err = run(capsys, "enjoy", str(model), "--device", device)
        assert_one_line_error(code, err, 2, f"argument --device: unusable torch device '{device}'")


def test_enjoy_names_a_missing_statistics_field_and_refuses_sb3_pickled_statistics(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    """Before: a missing field said only ``'norm_obs'``, and SB3's ``vecnormalize.pkl`` got numpy's advice to
    load it unsafely with ``allow_pickle``."""
    assert train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", "normalize=True")[0] == 0
    model = tmp_path / "CartPole-v1_0" / "model.zip"
    statistics = model.with_suffix(".vecnormalize.npz")
    with np.load(statistics) as saved:
        fields = {name: saved[name] for name in saved.files}
    for missing, reason in (
        ("norm_obs", "the statistics file lacks the field 'norm_obs'"),
        ("obs_var", "the statistics file lacks the field 'obs_var' (norm_obs is set)"),
    ):
        np.savez(statistics, **{name: value for name, value in fields.items() if name != missing})
        code, _, err = run(capsys, "enjoy", str(model))
        assert_one_line_error(code, err, 1, f"cannot read {statistics}: {reason}")
    sb3_statistics = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    sb3_statistics.save(str(statistics))  # SB3's own file: a pickle
    marker = tmp_path / "pwned"
    for content in (statistics.read_bytes(), pickle.dumps(MarkerPayload(marker))):
        statistics.write_bytes(content)
        code, _, err = run(capsys, "enjoy", str(model))
        assert_one_line_error(
            code,
            err,
            1,
            f"cannot read {statistics}: this is a pickle, as Stable-Baselines3's pickled VecNormalize "
            "statistics (vecnormalize.pkl) are; sb3-acer does not unpickle files unless told to, as that "
            f"could run code: if you trust it, convert it once with 'sb3-acer convert-stats {statistics} "
            "OUT.npz' (then play with --norm-stats OUT.npz), or pass --trust-pickle\n",
        )
        assert not marker.exists()


def test_statistics_that_expand_1000_fold_are_refused_in_bounded_memory(tmp_path: pathlib.Path) -> None:
    """A 100 KB statistics file whose ``obs_mean`` declares 100 MB (before: allocated whole, then refused for
    its shape) or that holds an extra 100 MB entry is refused, or its extra entry left unread, within a few
    MB: each field may hold what CartPole's observation space implies."""
    env = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]))
    honest = tmp_path / "honest.npz"
    save_normalization(env, honest)
    env.close()
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (BOMB_BYTES // 8,)}
    )
    setup = f"""
        import gymnasium as gym
        from stable_baselines3.common.vec_env import DummyVecEnv
        from sb3_acer.cli.normalization import load_normalization
        env = DummyVecEnv([lambda: gym.make("CartPole-v1")])
        load_normalization(env, {str(honest)!r})
    """
    cases = (
        (
            "obs_mean.npy",
            header.getvalue(),
            "StatisticsFileError: the field 'obs_mean' is larger than it can be for the model's "
            f"observations: header announces {BOMB_BYTES} bytes (<f8[{BOMB_BYTES // 8}]), more than the "
            "1024 it may hold",
        ),
        ("unknown.npy", b"", "loaded"),
    )
    bombs = [tmp_path / f"bomb{case}.npz" for case in range(len(cases))]
    for bomb, (entry, head, _) in zip(bombs, cases, strict=True):
        rewrite_padded(honest, bomb, entry, head)
    results = peak_increases(setup, [f"load_normalization(env, {str(bomb)!r})" for bomb in bombs])
    for (entry, _, expected), (increase, outcome) in zip(cases, results, strict=True):
        assert outcome == expected
        assert increase < ALLOWED_MB, f"loading the {entry} bomb took {increase:.0f} MB more"


def test_enjoy_checks_its_video_folder_and_the_env_before_playing(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert (
        train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", "env_wrapper=TimeFeatureWrapper")[0]
        == 0
    )
    run_dir = str(tmp_path / "CartPole-v1_0")
    (tmp_path / "afile").write_text("mine")
    code, _, err = run(capsys, "enjoy", run_dir, "--video-folder", str(tmp_path / "afile"))
    assert_one_line_error(code, err, 2, f"--video-folder {tmp_path / 'afile'} is a file, not a folder")
    (tmp_path / "videos").mkdir()
    (tmp_path / "videos" / "CartPole-v1-episode-0.mp4").write_text("an earlier video")
    code, _, err = run(capsys, "enjoy", run_dir, "--video-folder", str(tmp_path / "videos"))
    assert_one_line_error(code, err, 2, f"--video-folder {tmp_path / 'videos'} already holds videos")
    code, _, err = run(capsys, "enjoy", run_dir, "--env", "FrozenLake-v1")
    assert_one_line_error(
        code, err, 2, "cannot make FrozenLake-v1 for the model: env_wrapper TimeFeatureWrapper"
    )
    (tmp_path / "CartPole-v1_0" / "model.json").write_text('{"normalize": false}')
    code, _, err = run(capsys, "enjoy", run_dir)
    assert_one_line_error(
        code, err, 2, f"pass --env ENV_ID ({tmp_path / 'CartPole-v1_0' / 'model.json'} names no"
    )


def test_enjoy_of_a_normalised_model_on_another_env_says_it_does_not_fit(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", "normalize=True")[0] == 0
    code, _, err = run(capsys, "enjoy", str(tmp_path / "CartPole-v1_0"), "--env", "Acrobot-v1")
    assert_one_line_error(code, err, 2, "the model does not fit Acrobot-v1")


def test_ctrl_c_in_enjoy_prints_the_episodes_played(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert train(capsys, tmp_path, "--timesteps", "100")[0] == 0
    predict = ACER.predict
    calls = []

    def interrupted_later(self: ACER, *args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 200:
            raise KeyboardInterrupt
        return predict(self, *args, **kwargs)

    monkeypatch.setattr(ACER, "predict", interrupted_later)
    code, out, err = run(capsys, "enjoy", str(tmp_path / "CartPole-v1_0"), "--episodes", "1000")
    assert code == 130 and err == "interrupted\n"
    assert "CartPole-v1: mean return over" in out and out.count("episode ") >= 2


def test_a_normalised_model_without_its_statistics_is_refused_until_norm_stats_names_them(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path, "--timesteps", "100", "--hyperparams", "normalize=True")[0] == 0
    run_dir = tmp_path / "CartPole-v1_0"
    # The model alone, copied elsewhere: no model.json, no statistics beside it.
    alone = tmp_path / "elsewhere" / "model.zip"
    alone.parent.mkdir()
    alone.write_bytes((run_dir / "model.zip").read_bytes())
    assert ACER.load(alone).trained_with_vec_normalize
    code, out, err = run(capsys, "enjoy", str(alone), "--env", "CartPole-v1", "--episodes", "1")
    assert_one_line_error(code, err, 1, "the model was trained with VecNormalize but")
    assert "pass --norm-stats PATH" in err and "episode" not in out
    stats = str(run_dir / "model.vecnormalize.npz")
    code, out, err = run(
        capsys, "enjoy", str(alone), "--env", "CartPole-v1", "--norm-stats", stats, "--episodes", "1"
    )
    assert code == 0, err
    assert "mean return over 1 episode " in out
    code, _, err = run(
        capsys, "enjoy", str(alone), "--env", "CartPole-v1", "--norm-stats", str(tmp_path / "no.npz")
    )
    assert_one_line_error(
        code, err, 1, f"the model was trained with VecNormalize but {tmp_path / 'no.npz'} is missing"
    )


def test_a_model_trained_without_normalisation_plays_without_statistics(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    assert train(capsys, tmp_path, "--timesteps", "100")[0] == 0
    model_path = tmp_path / "CartPole-v1_0" / "model.zip"
    (tmp_path / "CartPole-v1_0" / "model.json").unlink()
    assert not ACER.load(model_path).trained_with_vec_normalize
    code, _, err = run(capsys, "enjoy", str(model_path), "--env", "CartPole-v1", "--episodes", "1")
    assert code == 0, err


def _sb3_normalised_model(folder: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path, VecNormalize]:
    """A model trained from Python under ``VecNormalize`` (clipping at 4), saved with SB3's pickled
    statistics as ``CheckpointCallback(save_vecnormalize=True)`` writes them: the model, the pickle, the
    statistics."""
    env = VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")]), clip_obs=4.0, gamma=0.95)
    model = ACER("MlpPolicy", env, n_steps=5, buffer_size=100, replay_start=20, seed=0)
    model.learn(60)
    model.save(folder / "model.zip")
    env.save(str(folder / "vecnormalize.pkl"))
    return folder / "model.zip", folder / "vecnormalize.pkl", env


def _same_statistics(loaded: VecNormalize, saved: VecNormalize) -> None:
    assert isinstance(loaded.obs_rms, RunningMeanStd) and isinstance(saved.obs_rms, RunningMeanStd)
    assert np.array_equal(loaded.obs_rms.mean, saved.obs_rms.mean)
    assert np.array_equal(loaded.obs_rms.var, saved.obs_rms.var)
    assert loaded.obs_rms.count == saved.obs_rms.count
    settings = ("norm_obs", "clip_obs", "clip_reward", "gamma", "epsilon")
    assert [getattr(loaded, name) for name in settings] == [getattr(saved, name) for name in settings]
    assert (loaded.clip_obs, loaded.gamma, loaded.training, loaded.norm_reward) == (4.0, 0.95, False, False)
    obs = np.array([[0.3, -2.0, 0.1, 40.0]], dtype=np.float32)  # the last element is clipped
    assert np.array_equal(loaded.normalize_obs(obs), saved.normalize_obs(obs))


def test_sb3_pickled_statistics_play_when_trusted_or_converted_alike(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    """Before: a model trained under ``VecNormalize`` from Python or the zoo could not be played by the CLI
    (its statistics are SB3's pickle, refused with numpy's ``allow_pickle`` message). Without the flag: one
    line naming both ways; with ``--trust-pickle`` it plays; converted once, it plays without the flag, the
    same episodes, from exactly the same statistics."""
    model, pickled, saved = _sb3_normalised_model(tmp_path)
    play = ("enjoy", str(model), "--env", "CartPole-v1", "--episodes", "2", "--deterministic")
    code, out, err = run(capsys, *play)
    assert_one_line_error(code, err, 1, "the model was trained with VecNormalize but")
    assert "with --trust-pickle, or converted once with 'sb3-acer convert-stats')" in err
    code, out, err = run(capsys, *play, "--norm-stats", str(pickled))
    assert_one_line_error(code, err, 1, f"cannot read {pickled}: this is a pickle")
    assert f"'sb3-acer convert-stats {pickled} OUT.npz'" in err and "or pass --trust-pickle" in err
    assert "episode" not in out
    code, trusted, err = run(capsys, *play, "--norm-stats", str(pickled), "--trust-pickle")
    assert code == 0, err
    assert "mean return over 2 episodes" in trusted
    converted = tmp_path / "stats.npz"
    code, out, err = run(capsys, "convert-stats", str(pickled), str(converted))
    assert (code, err) == (0, "")
    assert out == f"wrote {converted}: play with 'sb3-acer enjoy MODEL --norm-stats {converted}'\n"
    code, out, err = run(capsys, *play, "--norm-stats", str(converted))
    assert (code, out) == (0, trusted), err
    venv = DummyVecEnv([lambda: gym.make("CartPole-v1")])
    _same_statistics(load_normalization(venv, converted), saved)
    _same_statistics(load_normalization(venv, pickled, trust_pickle=True), saved)


def test_convert_stats_refuses_what_is_not_pickled_statistics_before_writing(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sb3-acer convert-stats`` writes nothing but the statistics of a ``VecNormalize`` pickle: each other
    input is one line, OUT untouched; a pickle larger than statistics can be is refused unread (its payload
    never runs)."""
    _, pickled, _ = _sb3_normalised_model(tmp_path)
    out_file = tmp_path / "out.npz"
    code, _, err = run(capsys, "convert-stats", str(tmp_path / "none.pkl"), str(out_file))
    assert_one_line_error(code, err, 2, f"no statistics file '{tmp_path / 'none.pkl'}'")
    code, _, err = run(capsys, "convert-stats", str(pickled), str(pickled))
    assert_one_line_error(code, err, 2, f"OUT {pickled} is IN itself: name another file")
    npz = tmp_path / "already.npz"
    save_normalization(VecNormalize(DummyVecEnv([lambda: gym.make("CartPole-v1")])), npz)
    other = tmp_path / "other.pkl"
    other.write_bytes(pickle.dumps({"obs_rms": 1}))
    damaged = tmp_path / "damaged.pkl"
    damaged.write_bytes(pickled.read_bytes()[:200])
    for source, reason in (
        (npz, "not a pickle, as Stable-Baselines3's VecNormalize statistics (vecnormalize.pkl) are; an .npz"),
        (other, "it holds a pickled dict, not VecNormalize statistics (VecNormalize.save())"),
        (damaged, "cannot be unpickled as VecNormalize statistics: "),
    ):
        code, _, err = run(capsys, "convert-stats", str(source), str(out_file))
        assert_one_line_error(code, err, 1, f"cannot convert {source}: {reason}")
    marker = tmp_path / "pwned"
    bomb = tmp_path / "large.pkl"
    bomb.write_bytes(pickle.dumps([MarkerPayload(marker), b"x" * 2000]))
    monkeypatch.setattr(normalization, "MAX_PICKLE_BYTES", 1000)
    code, _, err = run(capsys, "convert-stats", str(bomb), str(out_file))
    assert_one_line_error(
        code,
        err,
        1,
        f"cannot convert {bomb}: {bomb.stat().st_size} bytes, more than pickled VecNormalize statistics hold "
        "(at most 1000)",
    )
    assert not marker.exists() and not out_file.exists()
    monkeypatch.setattr(normalization, "MAX_PICKLE_BYTES", 256 * 2**20)
    payload = tmp_path / "payload.pkl"
    payload.write_bytes(pickle.dumps(MarkerPayload(marker)))  # small, so its size does not refuse it
    code, _, err = run(capsys, "convert-stats", str(payload), str(out_file))
    assert_one_line_error(
        code,
        err,
        1,
        f"cannot convert {payload}: cannot be unpickled as VecNormalize statistics: UnpicklingError: "
        "it names builtins.getattr, which VecNormalize statistics never hold (refused, nothing run)",
    )
    assert not marker.exists() and not out_file.exists()

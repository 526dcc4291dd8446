"""Actor-learner training on Ray (sb3_acer.distributed), on the local Ray cluster the folder shares
(``conftest.py``): training with actors, the logged keys, the lag bound, save/load, and the faults (an actor
killed, also while it starts, an env that hangs, the learner killed and restarted from its checkpoint, an env
that raises); a local cluster that a killed learner started (its own), an address where nothing answers; and
the one-line message without Ray."""

from __future__ import annotations

import functools
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
from typing import Any

import gymnasium as gym
import numpy as np
import psutil
import pytest
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.logger import KVWriter, Logger
from stable_baselines3.common.vec_env import VecNormalize

from sb3_acer import ACER
from sb3_acer.distributed import ActorEnvError, RayActors, RayNotInstalledError, require_ray
from sb3_acer.distributed.actors import actor_seed

SETTINGS: dict[str, Any] = dict(n_steps=5, buffer_size=500, replay_start=20, seed=0)


def cartpole_model(**kwargs: Any) -> ACER:
    return ACER("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), **{**SETTINGS, **kwargs})


def actors(**kwargs: Any) -> RayActors:
    # Half a CPU each, so that restarted actors and a second learner's find room on the 2-CPU cluster.
    return RayActors("CartPole-v1", **{"n_actors": 2, "num_cpus_per_actor": 0.5, **kwargs})


class Records(KVWriter):
    """Keeps every dump of the logger."""

    def __init__(self) -> None:
        self.dumps: list[dict[str, Any]] = []

    def write(self, key_values: dict[str, Any], key_excluded: dict[str, Any], step: int = 0) -> None:
        self.dumps.append(dict(key_values))


def test_actors_train_and_log(ray_cluster: Any) -> None:
    model = cartpole_model()
    records = Records()
    model.set_logger(Logger(None, [records]))
    settings = actors()
    model.learn(600, actors=settings, log_interval=10)
    assert model.num_timesteps >= 600
    assert model.replay_buffer is not None and len(model.replay_buffer) > 0
    assert model._n_replay_updates > 0  # the replayed updates of train() ran
    last = records.dumps[-1]
    for key in ("actors/policy_lag", "actors/segments_per_s", "actors/restarts", "actors/lost_segments"):
        assert key in last, key
    assert 0 <= last["actors/learner_idle"] <= 1
    assert last["actors/restarts"] == 0 and last["actors/lost_segments"] == 0
    assert settings.stats["actors/segments"] >= 600 // 10
    assert settings.handles == []  # the actors are stopped at the end of learn


def test_policy_lag_is_bounded(ray_cluster: Any) -> None:
    model = cartpole_model()
    records = Records()
    model.set_logger(Logger(None, [records]))
    # No env given: the actors make theirs from the spec of the model's env.
    settings = RayActors(n_actors=2, num_cpus_per_actor=0.5, max_policy_lag=0)
    model.learn(300, actors=settings, log_interval=1)
    lags = [dump["actors/policy_lag"] for dump in records.dumps]
    assert lags and max(lags) == 0
    # Two actors ask with the same weights: one of each pair is learned by the newer policy and dropped.
    assert settings.stats["actors/stale_segments"] > 0


def test_model_trained_with_actors_saves_and_loads(ray_cluster: Any, tmp_path: pathlib.Path) -> None:
    model = cartpole_model()
    model.learn(300, actors=actors())
    model.save(tmp_path / "model", include=["replay_buffer"])
    loaded = ACER.load(tmp_path / "model.zip", env=make_vec_env("CartPole-v1", n_envs=2, seed=1))
    obs = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    np.testing.assert_allclose(loaded.action_probability(obs), model.action_probability(obs), rtol=1e-6)
    assert np.array_equal(
        loaded.predict(obs, deterministic=True)[0], model.predict(obs, deterministic=True)[0]
    )
    assert loaded.num_timesteps == model.num_timesteps
    assert loaded.replay_buffer is not None and len(loaded.replay_buffer) == len(model.replay_buffer)  # type: ignore[arg-type]
    loaded.learn(100, reset_num_timesteps=False)  # and trains on in the synchronous loop


class KillActor(BaseCallback):
    """Kills actor 0's process (kill -9) after the ``after``-th segment."""

    def __init__(self, settings: RayActors, after: int) -> None:
        super().__init__()
        self.settings, self.after, self.segments = settings, after, 0
        self.replay_at_kill: int | None = None

    def _on_step(self) -> bool:
        return True

    def _on_rollout_end(self) -> None:
        self.segments += 1
        if self.segments == self.after:
            import ray

            pid = ray.get(self.settings.handles[0].pid.remote())
            os.kill(pid, signal.SIGKILL)
            assert self.model.replay_buffer is not None
            self.replay_at_kill = len(self.model.replay_buffer)


def test_killed_actor_is_restarted(ray_cluster: Any) -> None:
    model = cartpole_model()
    settings = actors()
    killer = KillActor(settings, after=8)
    model.learn(800, actors=settings, callback=killer)
    assert model.num_timesteps >= 800
    assert settings.stats["actors/restarts"] >= 1
    assert settings.stats["actors/lost_segments"] >= 1
    # Nothing stored before the kill was lost: the memory went on filling (its capacity is 100 segments).
    assert killer.replay_at_kill is not None and len(model.replay_buffer) > killer.replay_at_kill  # type: ignore[arg-type]


def dies_on_its_first_start(n_envs: int, seed: int | None) -> Any:
    """CartPole, but the first process of actor 0 kills itself (kill -9) while it makes its envs."""
    if seed == actor_seed(SETTINGS["seed"], 0, 0):
        os.kill(os.getpid(), signal.SIGKILL)
    return make_vec_env("CartPole-v1", n_envs=n_envs, seed=seed)


def test_actor_killed_while_it_starts_is_replaced(ray_cluster: Any) -> None:
    model = cartpole_model()
    settings = RayActors(dies_on_its_first_start, n_actors=2, num_cpus_per_actor=0.5)
    model.learn(200, actors=settings)
    assert model.num_timesteps >= 200
    assert settings.stats["actors/restarts"] == 1
    assert settings.stats["actors/lost_segments"] == 0  # it had not been asked for a segment yet
    assert settings.handles == []


class SeedInInfo(gym.Wrapper):
    """Puts the seed of its actor in every step's info; with ``hang_at``, sleeps for an hour in that step
    after writing its process id to ``pid_file``."""

    def __init__(self, env: gym.Env, seed: int, hang_at: int | None = None, pid_file: str = "") -> None:
        super().__init__(env)
        self.seed, self.hang_at, self.pid_file, self.steps = seed, hang_at, pid_file, 0

    def step(self, action: Any) -> Any:
        self.steps += 1
        if self.steps == self.hang_at:
            pathlib.Path(self.pid_file).write_text(str(os.getpid()))
            time.sleep(3600)
        observation, reward, terminated, truncated, info = self.env.step(action)
        return observation, reward, terminated, truncated, {**info, "seed": self.seed}


class HangingCartPole:
    """CartPole whose envs hang in their 12th step (the third segment) in the first process of actor 0."""

    __name__ = "HangingCartPole"

    def __init__(self, pid_file: pathlib.Path) -> None:
        self.pid_file = str(pid_file)

    def __call__(self, n_envs: int, seed: int | None) -> Any:
        assert seed is not None
        hang_at = 12 if seed == actor_seed(SETTINGS["seed"], 0, 0) else None
        kwargs = dict(seed=seed, hang_at=hang_at, pid_file=self.pid_file)
        return make_vec_env("CartPole-v1", n_envs, seed=seed, wrapper_class=SeedInInfo, wrapper_kwargs=kwargs)


class UntilSeedSeen(BaseCallback):
    """Stops training at the first step whose info holds ``seed``."""

    def __init__(self, seed: int | None) -> None:
        super().__init__()
        self.seed = seed

    def _on_step(self) -> bool:
        return all(info.get("seed") != self.seed for info in self.locals["infos"])


def gone_within(processes: list[psutil.Process], seconds: float) -> list[psutil.Process]:
    """Waits up to ``seconds`` for ``processes`` to end (zombies count as ended); returns those left."""
    deadline = time.monotonic() + seconds
    while True:
        left = []
        for process in processes:
            try:
                if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                    left.append(process)
            except psutil.NoSuchProcess:
                pass
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def command(process: psutil.Process) -> str:
    """The process's command line (as far as it can still be read)."""
    try:
        return " ".join(process.cmdline()).strip()
    except psutil.Error:
        return f"process {process.pid}, ended"


@pytest.mark.timeout(300)
def test_hung_env_is_reported_naming_actor_and_env_then_replaced(
    ray_cluster: Any, tmp_path: pathlib.Path
) -> None:
    pid_file = tmp_path / "hung.pid"
    model = cartpole_model()
    settings = RayActors(HangingCartPole(pid_file), n_actors=2, num_cpus_per_actor=0.5, actor_timeout=2)
    replacement = actor_seed(SETTINGS["seed"], 0, 1)  # actor 0 in its second process
    with pytest.warns(RuntimeWarning) as warned:
        model.learn(10**6, actors=settings, callback=UntilSeedSeen(replacement))  # until it sends a step
    assert [str(warning.message) for warning in warned if warning.category is RuntimeWarning] == [
        "actor 0 (env HangingCartPole) did not answer within 2 s (actor_timeout); is its env hung? It is "
        "stopped and replaced"
    ]
    assert settings.stats["actors/restarts"] == 1 and settings.stats["actors/lost_segments"] == 1
    assert model.num_timesteps < 10**6  # the replacement sent steps
    try:
        hung = [psutil.Process(int(pid_file.read_text()))]
    except psutil.NoSuchProcess:
        hung = []  # ended already
    assert gone_within(hung, 30) == []  # the hung actor's process is killed


@pytest.mark.parametrize("form", ["host:port", "ray://host:port", "RAY_ADDRESS"])
def test_an_address_where_nothing_answers_is_refused_before_ray_starts(
    form: str, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    ray = pytest.importorskip("ray")
    port = closed_port
    calls: list[Any] = []
    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # as in a process where Ray is not started
    monkeypatch.setattr(ray, "init", lambda *args, **kwargs: calls.append(args))
    address: str | None = {
        "host:port": f"127.0.0.1:{port}",
        "ray://host:port": f"ray://127.0.0.1:{port}",
    }.get(form)
    if address is None:
        monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    named, advice = (
        (address, "leave out the address")
        if address
        else (f"RAY_ADDRESS=127.0.0.1:{port}", "unset RAY_ADDRESS")
    )
    model = cartpole_model()
    with pytest.raises(ConnectionError) as error:
        model.learn(100, actors=RayActors("CartPole-v1", address=address))
    assert str(error.value) == (
        f"no Ray cluster answers at {named} (connection refused); start one there with `ray start --head`, "
        f"or {advice} to start a local one"
    )
    assert calls == [] and model.num_timesteps == 0  # ray.init never ran, nothing was trained


class FailingEnv(gym.Env):
    """CartPole-like spaces; raises in ``step`` after ``fail_after`` steps."""

    observation_space = gym.spaces.Box(-1.0, 1.0, (4,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, fail_after: int = 12) -> None:
        self.fail_after, self.steps = fail_after, 0

    def reset(self, *, seed: int | None = None, options: dict | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        return np.zeros(4, np.float32), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.steps += 1
        if self.steps > self.fail_after:
            raise RuntimeError("the simulator crashed")
        return np.zeros(4, np.float32), 1.0, False, False, {}


def test_env_error_names_actor_and_env(ray_cluster: Any) -> None:
    model = ACER("MlpPolicy", make_vec_env(FailingEnv, n_envs=2), **SETTINGS)
    settings = RayActors(functools.partial(make_vec_env, FailingEnv), n_actors=2, num_cpus_per_actor=0.5)
    with pytest.raises(ActorEnvError) as error:
        model.learn(1000, actors=settings)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(("actor 0 (env FailingEnv)", "actor 1 (env FailingEnv)")), message
    assert "RuntimeError: the simulator crashed" in message
    assert settings.handles == []


def test_more_actors_than_cpus_is_refused(ray_cluster: Any) -> None:
    with pytest.raises(ValueError, match="5 actors of 1 CPU need 5 CPUs but the Ray cluster has 2"):
        cartpole_model().learn(100, actors=RayActors("CartPole-v1", n_actors=5))


def broken_factory(n_envs: int, seed: int | None) -> Any:
    raise OSError("no display")


def test_env_that_cannot_be_made_names_actor_and_env(ray_cluster: Any) -> None:
    settings = RayActors(broken_factory, n_actors=1, num_cpus_per_actor=0.5)
    with pytest.raises(ActorEnvError, match=r"^actor 0 \(env broken_factory\): OSError: no display$"):
        cartpole_model().learn(100, actors=settings)
    assert settings.handles == []


def dict_image_envs(n_envs: int, seed: int | None) -> Any:
    """SB3's dict env with a channel-last image key (the actor transposes it as SB3 did the model's)."""
    from stable_baselines3.common.envs import SimpleMultiObsEnv

    return make_vec_env(lambda: SimpleMultiObsEnv(random_start=False), n_envs=n_envs, seed=seed)


def test_box_actions_and_dict_observations_with_actors(ray_cluster: Any) -> None:
    box = ACER("MlpPolicy", make_vec_env("Pendulum-v1", n_envs=2, seed=0), **SETTINGS)
    box.learn(200, actors=RayActors("Pendulum-v1", n_actors=1, num_cpus_per_actor=0.5))
    assert box.num_timesteps >= 200 and box.replay_buffer is not None and len(box.replay_buffer) > 0
    multi = ACER("MultiInputPolicy", dict_image_envs(2, 0), **SETTINGS)
    multi.learn(200, actors=RayActors(dict_image_envs, n_actors=1, num_cpus_per_actor=0.5))
    assert multi.num_timesteps >= 200 and multi.replay_buffer is not None and len(multi.replay_buffer) > 0


def test_recurrent_policy_with_actors(ray_cluster: Any) -> None:
    # The actors carry their LSTM state across segments and send each segment's start state with it.
    model = ACER(
        "MlpLstmPolicy",
        make_vec_env("CartPole-v1", n_envs=2, seed=0),
        policy_kwargs=dict(n_lstm=8),
        **SETTINGS,
    )
    model.learn(300, actors=actors())
    assert model.replay_buffer is not None and model.replay_buffer.state_size == 8
    assert np.any(model.replay_buffer.initial_h[: len(model.replay_buffer)] != 0)
    assert model._n_replay_updates > 0


LEARNER = """
import sys, ray
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from sb3_acer import ACER
from sb3_acer.distributed import RayActors

class Checkpoint(BaseCallback):
    def _on_step(self):
        return True
    def _on_rollout_end(self):
        if self.n_calls % 20 == 0:
            self.model.save(sys.argv[2], include=["replay_buffer"])
            print("saved", self.model.num_timesteps, flush=True)

ray.init(address=sys.argv[1])
model = ACER("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=5, buffer_size=500,
             replay_start=20, seed=0)
model.learn(10**7, actors=RayActors("CartPole-v1", n_actors=2, num_cpus_per_actor=0.5), callback=Checkpoint())
"""


def test_learner_restarted_from_checkpoint_reconnects(ray_cluster: Any, tmp_path: pathlib.Path) -> None:
    script = tmp_path / "learner.py"
    script.write_text(textwrap.dedent(LEARNER))
    checkpoint = tmp_path / "checkpoint.zip"
    address = ray_cluster.get_runtime_context().gcs_address
    learner = subprocess.Popen(
        [sys.executable, str(script), address, str(checkpoint)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    try:
        saves = 0
        assert learner.stdout is not None
        deadline = time.monotonic() + 120
        while saves < 2 and time.monotonic() < deadline:  # the second save: the first file is whole
            line = learner.stdout.readline()
            if not line:
                break
            saves += line.startswith("saved")
        assert saves == 2, "the learner saved no checkpoint"
        learner.send_signal(signal.SIGKILL)  # kill -9 the learner mid-run
        learner.wait(30)
    finally:
        if learner.poll() is None:
            learner.kill()
            learner.wait(30)
        assert learner.stdout is not None
        learner.stdout.close()
    resumed = ACER.load(checkpoint, env=make_vec_env("CartPole-v1", n_envs=2, seed=0))
    at_checkpoint = resumed.num_timesteps
    assert resumed.replay_buffer is not None and len(resumed.replay_buffer) > 0
    stored = len(resumed.replay_buffer)
    settings = actors()
    resumed.learn(200, actors=settings, reset_num_timesteps=False)
    assert resumed.num_timesteps >= at_checkpoint + 200
    assert len(resumed.replay_buffer) > stored
    assert settings.stats["actors/segments"] >= 20


OWN_CLUSTER_LEARNER = """
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from sb3_acer import ACER
from sb3_acer.distributed import RayActors

class Announce(BaseCallback):
    def _on_step(self):
        return True
    def _on_rollout_end(self):
        if self.n_calls == 20:
            print("training", flush=True)

if __name__ == "__main__":
    model = ACER("MlpPolicy", make_vec_env("CartPole-v1", n_envs=2, seed=0), n_steps=5, buffer_size=500,
                 replay_start=20, seed=0)
    # No address: learn starts a local cluster of its own.
    actors = RayActors("CartPole-v1", n_actors=1, ray_init_kwargs=dict(num_cpus=1, log_to_driver=False))
    model.learn(10**7, actors=actors, callback=Announce())
"""


def watchdogs_of(learner: int) -> list[psutil.Process]:
    """The watchdogs of the local cluster that process ``learner`` started (not its children)."""
    found = []
    for process in psutil.process_iter():
        arguments = command(process).split()
        if len(arguments) > 4 and arguments[2].endswith("watchdog.py") and arguments[3] == str(learner):
            found.append(process)
    return found


@pytest.mark.timeout(300)
def test_killed_learner_leaves_no_process_of_the_cluster_it_started(tmp_path: pathlib.Path) -> None:
    script = tmp_path / "learner.py"
    script.write_text(textwrap.dedent(OWN_CLUSTER_LEARNER))
    environment = {key: value for key, value in os.environ.items() if key != "RAY_ADDRESS"}
    learner = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**environment, "OMP_NUM_THREADS": "1"},
    )
    cluster: list[psutil.Process] = []
    left: list[str] = []
    try:
        assert learner.stdout is not None
        assert learner.stdout.readline() == "training\n"
        cluster = psutil.Process(learner.pid).children(recursive=True) + watchdogs_of(learner.pid)
        commands = " ".join(command(process) for process in cluster)
        # The agents the raylet starts are what outlived a killed learner before the watchdog.
        for name in ("gcs_server", "raylet", "ray::DashboardAgent", "ray::RuntimeEnvAgent", "watchdog.py"):
            assert name in commands, name
        learner.send_signal(signal.SIGKILL)
        learner.wait(30)
        left = [command(process) for process in gone_within(cluster, 60)]
    finally:
        if learner.poll() is None:
            learner.kill()
            learner.wait(30)
        assert learner.stdout is not None
        learner.stdout.close()
        for process in gone_within(cluster, 0):  # whatever the test leaves, it does not leave it running
            process.kill()
    assert left == []


def test_settings_that_do_not_fit_the_model() -> None:
    model = cartpole_model()
    with pytest.raises(ValueError, match="envs_per_actor=4 but the model has n_envs=2"):
        RayActors("CartPole-v1", envs_per_actor=4).env_factory(model)
    normalized = ACER("MlpPolicy", VecNormalize(make_vec_env("CartPole-v1", n_envs=2)), **SETTINGS)
    with pytest.raises(ValueError, match="VecNormalize is not supported"):
        RayActors("CartPole-v1").env_factory(normalized)
    with pytest.raises(ValueError, match="n_actors must be a positive integer"):
        RayActors("CartPole-v1", n_actors=0)
    # A flag is no count, and a CPU share must be a number (a string raised TypeError from a comparison).
    for name, value, rule in (
        ("envs_per_actor", True, "must be a positive integer"),
        ("max_restarts", -1, "must be a non-negative integer"),
        ("num_cpus_per_actor", "1", "must be >= 0"),
        ("num_cpus_per_actor", -0.5, "must be >= 0"),
        ("address", 6379, "must be a string or None"),
    ):
        with pytest.raises(ValueError) as refused:
            RayActors("CartPole-v1", **{name: value})
        assert str(refused.value) == f"RayActors: {name} {rule}, got {value!r}"
    for name, value in (("actor_timeout", 0), ("start_timeout", float("inf")), ("actor_timeout", True)):
        with pytest.raises(ValueError, match=f"^RayActors: {name} must be a positive number of seconds, got"):
            RayActors("CartPole-v1", **{name: value})
    for address in ("headnode", "headnode:", "ray://headnode", "headnode:70000"):
        with pytest.raises(ValueError) as error:
            RayActors("CartPole-v1", address=address)
        assert str(error.value) == (
            f"RayActors: Ray address {address!r} is not HOST:PORT or ray://HOST:PORT (or auto, to find a "
            "running cluster)"
        )
    assert RayActors().env_factory(model).name == "CartPole-v1"


def test_without_ray_one_line_with_the_install_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    with pytest.raises(RayNotInstalledError) as error:
        require_ray()
    message = str(error.value)
    assert message == 'training with actors needs Ray, which is not installed: pip install "sb3-acer[ray]"'
    model = cartpole_model()
    with pytest.raises(RayNotInstalledError, match="sb3-acer"):
        model.learn(100, actors=RayActors("CartPole-v1"))
    model.learn(100)  # everything else works


@pytest.mark.slow
def test_cartpole_learns_with_two_actors(ray_cluster: Any) -> None:
    # The CartPole preset (4 envs per actor, 10 steps, replay ratio 6), on 2 actors.
    model = ACER(
        "MlpPolicy",
        make_vec_env("CartPole-v1", n_envs=4, seed=0),
        n_steps=10,
        ent_coef=0.0,
        learning_rate=4e-3,
        replay_ratio=6,
        replay_start=100,
        buffer_size=500,
        seed=0,
    )
    model.learn(60_000, actors=actors())
    returns = [episode["r"] for episode in model.ep_info_buffer]  # type: ignore[union-attr]
    assert np.mean(returns) >= 300, np.mean(returns)

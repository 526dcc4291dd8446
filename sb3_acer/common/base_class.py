"""SB3's ``BaseAlgorithm`` whose files hold data only: the algorithm gathers and restores its own state.

:class:`DataFileAlgorithm` is the file side of :class:`~sb3_acer.common.segment_algorithm.SegmentAlgorithm`
(and so of ACER), in SB3's shape: ``save`` writes what :meth:`~DataFileAlgorithm._get_save_data` gathers
(settings, spaces, counters, random generators' states) and the state dicts the algorithm names in
``_get_torch_save_params``; ``load`` reads a file in steps (the file, the saved settings, the caller's
overrides, the model built from them, the environment, the tensors, the counters, the replay memory and
random generators), each through a method of the model. What a file means, apart from any algorithm, is
:mod:`sb3_acer.common.save_util.model_io`'s. Nothing in a file is executed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any, ClassVar, TypeVar

import torch as th
from stable_baselines3.common.base_class import BaseAlgorithm, maybe_make_env
from stable_baselines3.common.policies import BasePolicy
from stable_baselines3.common.type_aliases import GymEnv
from stable_baselines3.common.utils import check_for_correct_spaces
from stable_baselines3.common.vec_env import VecEnv, unwrap_vec_normalize

from sb3_acer.common.buffers import ReplayBuffer
from sb3_acer.common.save_util import model_io
from sb3_acer.common.save_util.class_table import given_classes
from sb3_acer.common.save_util.model_file import ModelFileError, encode_json_value, space_to_json
from sb3_acer.common.save_util.replay_file import load_buffer, save_buffer
from sb3_acer.common.save_util.rng_state import global_rng_states

__all__ = ["NEVER_SAVED", "DataFileAlgorithm"]

SelfDataFileAlgorithm = TypeVar("SelfDataFileAlgorithm", bound="DataFileAlgorithm")

#: What SB3's ``save`` leaves out of every file, and the env's last state: no model file holds them, so
#: ``save(exclude=...)`` accepts these names as SB3's does, and they change nothing.
NEVER_SAVED = frozenset(
    {"policy", "device", "env", "rollout_buffer", "_vec_normalize_env", "_episode_storage", "_logger"}
    | {"_custom_logger", "_last_obs", "_last_episode_starts", "_last_original_obs"}
)


@contextlib.contextmanager
def saved_settings_refused(path: model_io.PathOrFile, overridden: bool) -> Iterator[None]:
    """Settings the file holds that the constructor refuses (``ValueError``, ``TypeError``) are a
    :class:`ModelFileError` naming the file; with values the caller ``overridden``, which may be the cause,
    the error is raised as it is."""
    try:
        yield
    except (ValueError, TypeError) as error:
        if overridden:
            raise
        raise ModelFileError(f"{path}: the saved settings are invalid: {error}") from error


class DataFileAlgorithm(BaseAlgorithm):
    """SB3's ``BaseAlgorithm`` saved as data (JSON and tensors, no pickles), its state its own.

    Subclasses name their algorithm in :attr:`saved_algorithm`, their saved state dicts in
    ``_get_torch_save_params``, their constructor arguments in
    :attr:`saved_hyperparameters` and their counters in :attr:`saved_counters`, and may extend
    :meth:`_get_hyperparameters`, :meth:`_get_rng_states`, :meth:`_load_optimizer_state` and
    :meth:`_restore_rng`; a model with a replay memory implements :meth:`_install_replay_buffer`.
    """

    #: The algorithm a model file names (a file of another is refused on load).
    saved_algorithm: ClassVar[str]
    #: Constructor arguments saved in the model file, in the documented order.
    saved_hyperparameters: ClassVar[tuple[str, ...]] = ()
    #: The counters of a model file: (key in the file, attribute, value when the file has none).
    saved_counters: ClassVar[tuple[tuple[str, str, int], ...]] = (
        ("num_timesteps", "num_timesteps", 0),
        ("total_timesteps", "_total_timesteps", 0),
        ("n_updates", "_n_updates", 0),
    )
    #: Every policy name a file may hold, with its class.
    taken_policy_aliases: ClassVar[dict[str, type[BasePolicy]]] = {}
    replay_buffer: ReplayBuffer | None
    #: Mean number of replayed updates per on-policy update (0: the model does not replay).
    replay_ratio: float
    #: Whether the file this model was loaded from says it was trained on a ``VecNormalize`` env.
    _loaded_with_vec_normalize = False

    @property
    def trained_with_vec_normalize(self) -> bool:
        """Whether the model learns (or, loaded from a file, learned) on observations normalised by SB3's
        ``VecNormalize``: then it must be run with the same statistics. Saved in the model file (files of
        sb3-acer 0.1 do not say it: ``False``)."""
        return self._vec_normalize_env is not None or self._loaded_with_vec_normalize

    def _matching_env(self, env: GymEnv | str, mismatch: str) -> VecEnv:
        """``env`` (made from its id if need be) wrapped as SB3 wraps it, once its spaces are found to be
        the model's; ``mismatch`` begins the ``ValueError``'s message if they are not."""
        vec_env = self._wrap_env(maybe_make_env(env, self.verbose), self.verbose)
        try:
            check_for_correct_spaces(vec_env, self.observation_space, self.action_space)
        except ValueError as error:
            raise ValueError(f"{mismatch}: {error}") from error
        return vec_env

    # ------------------------------------------------------------------ gathering the state

    def _excluded_save_params(self) -> list[str]:
        """What no model file holds (SB3's default exclusions and the env's last state)."""
        return sorted(NEVER_SAVED)

    def _saved_modules(self) -> dict[str, Any]:
        """The modules and optimizers whose state dicts the file holds, by name (``<name>.pth``)."""
        names, _ = self._get_torch_save_params()
        return {name: getattr(self, name) for name in names}

    def _get_hyperparameters(self) -> dict[str, Any]:
        """The values of :attr:`saved_hyperparameters`, as saved."""
        return {name: getattr(self, name) for name in self.saved_hyperparameters}

    def _get_rng_states(self) -> dict[str, Any]:
        """The states of the model's own random generators, besides the global ones (by name)."""
        return {}

    def _policy_class_name(self) -> str:
        for alias, cls in self.taken_policy_aliases.items():
            if cls is self.policy_class:
                return alias
        return f"{self.policy_class.__module__}:{self.policy_class.__qualname__}"

    def _get_save_data(self) -> dict[str, Any]:
        """The JSON data of the model's file (its ``data`` entry): format, versions, settings, spaces,
        counters and the random generators' states."""
        counters = {key: int(getattr(self, attribute)) for key, attribute, _ in self.saved_counters}
        return {
            **model_io.data_header(self.saved_algorithm),
            "policy_class": self._policy_class_name(),
            "policy_kwargs": encode_json_value(self.policy_kwargs, "policy_kwargs"),
            "hyperparameters": encode_json_value(self._get_hyperparameters(), "hyperparameters"),
            "observation_space": space_to_json(self.observation_space),
            "action_space": space_to_json(self.action_space),
            "n_envs": int(self.n_envs),
            "num_timesteps": counters.pop("num_timesteps"),
            "total_timesteps": counters.pop("total_timesteps"),
            "progress_remaining": float(self._current_progress_remaining),
            **counters,
            "trained_with_vec_normalize": bool(self.trained_with_vec_normalize),
            "rng_states": {**global_rng_states(), **self._get_rng_states()},
        }

    def save(
        self,
        path: model_io.PathOrFile,
        exclude: Iterable[str] | None = None,
        include: Iterable[str] | None = None,
    ) -> None:
        """Save the model as data (JSON + tensors): hyperparameters, spaces, the policy, the average policy
        network, the optimizer state, the step counters, the schedule position and the random generators'
        states. ``.zip`` is appended to a path without suffix; a path is written atomically.

        Args:
            path: where to save (path or file-like).
            exclude: hyperparameters to leave out of the file (they load with their defaults, as SB3's
                excluded attributes do). What no model file holds (SB3's default exclusions such as
                ``env`` and ``policy``, and the last observation: ``base_class.NEVER_SAVED``) may be named
                and changes nothing; another name raises ``ValueError``.
            include: ``["replay_buffer"]`` also stores the replay memory, which makes the file a complete
                checkpoint (see :meth:`save_replay_buffer`); a hyperparameter named here is saved even if
                ``exclude`` names it; other names are ignored.
        """
        included = set(include or ())
        excluded = set(exclude or ()) - included
        model_io.check_exclusions(excluded, self.saved_hyperparameters, self._excluded_save_params())
        data = self._get_save_data()
        data["hyperparameters"] = {
            name: value for name, value in data["hyperparameters"].items() if name not in excluded
        }
        buffer = self.replay_buffer if "replay_buffer" in included else None
        model_io.write_model(path, data, self.get_parameters(), buffer)

    # ------------------------------------------------------------------ parameters

    def get_parameters(self) -> dict[str, dict]:
        """Copies of the state dicts of ``policy``, ``policy_avg`` and ``optimizer``.

        They are copies (as SB2's arrays were), so that training afterwards does not change them and
        ``set_parameters`` can restore them.
        """
        return model_io.state_dict_copies(self._saved_modules())

    def set_parameters(  # type: ignore[override]
        self,
        load_path_or_dict: model_io.PathOrFile | dict[str, dict],
        exact_match: bool = True,
        device: th.device | str = "auto",
    ) -> None:
        """Load parameters from a model file or from a ``get_parameters()``-style dict.

        Everything is checked before anything is loaded: with ``exact_match=True`` every module's full
        state must be present (a missing or unexpected key raises ``RuntimeError``); with
        ``exact_match=False`` the given tensors are loaded and the rest is left as it is. Unknown module
        names and tensors of the wrong shape always raise, and leave the model unchanged.
        """
        del device
        modules = self._saved_modules()
        if isinstance(load_path_or_dict, dict):
            params = load_path_or_dict
        else:
            params = model_io.read_parameters(load_path_or_dict, self.device, self._tensor_limits())
        model_io.check_parameters(modules, self.policy, params, exact_match)
        model_io.load_parameters(modules, params, exact_match, self._load_optimizer_state)

    def _load_optimizer_state(self, name: str, state: dict[str, Any]) -> None:
        """Load the checked ``state`` into the optimizer saved as ``name``."""
        getattr(self, name).load_state_dict(state)

    def _tensor_limits(self) -> dict[str, int]:
        return model_io.tensor_limits(self._saved_modules(), self.policy)

    # ------------------------------------------------------------------ restoring the state

    @classmethod
    def load(
        cls: type[SelfDataFileAlgorithm],
        path: model_io.PathOrFile,
        env: GymEnv | str | None = None,
        device: th.device | str = "auto",
        custom_objects: dict[str, Any] | None = None,
        print_system_info: bool = False,
        force_reset: bool = True,
        **kwargs: Any,
    ) -> SelfDataFileAlgorithm:
        """Load a model saved with :meth:`save` (nothing in the file is executed).

        Args:
            path: model file (path or file-like).
            env: environment (or env id) to continue training on (``None``: prediction only). Its spaces
                must match.
            device: device to load onto.
            custom_objects: values replacing saved entries, e.g. ``{"policy_class": MyPolicy}`` or
                ``{"learning_rate": 1e-4}`` (``policy`` is accepted for ``policy_class``); a class among
                the values (``{"features_extractor_class": MyExtractor}``) resolves the path the file names
                it by, which a class outside sb3-acer's table needs (no module is imported on load).
            print_system_info: print the versions the file was saved with.
            force_reset: accepted for SB3 compatibility; the environment's state is not saved, so the
                first ``learn`` after loading always resets it.
            kwargs: hyperparameters to change (``policy_kwargs`` must equal the saved ones); SB2's
                ``policy=...`` is accepted too.

        The random generators (Python's, NumPy's and torch's global ones, and the replay sampling) are
        restored to their saved states, so that training continues the same random streams; with a
        ``seed`` given (``load(path, seed=1)``) they are seeded from it instead, as a new model's are.
        A file saved with ``include=["replay_buffer"]`` restores the replay memory too; it must fit the
        model (same number of envs, ``n_steps`` and ``buffer_size``); ``custom_objects={"replay_buffer":
        None}`` starts with an empty memory instead. ``custom_objects={"policy_kwargs": ...}`` replaces the
        saved ``policy_kwargs`` without reading them (for classes this process cannot import). A file that
        fails to load changes nothing global (random generators, torch's thread count).
        """
        del force_reset
        with model_io.global_state_restored_on_error():
            custom_objects = dict(custom_objects or {})
            # The classes the caller passes resolve the paths the file names them by (no module is imported).
            classes = given_classes(custom_objects)
            # custom_objects={"replay_buffer": None}: leave out the replay memory the file may hold.
            keep_buffer = custom_objects.pop("replay_buffer", True) is not None
            # custom_objects={"policy_kwargs": ...} replaces the saved ones unread (as in SB3): their classes
            # may live in a script this process cannot import; the saved tensors must still fit the network.
            replaced_policy_kwargs = custom_objects.pop("policy_kwargs", None)
            names = cls.saved_hyperparameters
            saved = model_io.read_saved_model(
                path,
                keep_buffer,
                replaced_policy_kwargs,
                print_system_info,
                classes,
                names,
                cls.saved_algorithm,
            )
            saved = model_io.with_given_spaces(saved, custom_objects)
            policy_class, policy_given, overrides = model_io.load_arguments(
                path, saved, custom_objects, kwargs, classes, cls.taken_policy_aliases, names
            )
            with saved_settings_refused(path, bool(overrides)):
                model = cls(  # type: ignore[call-arg]
                    policy=policy_class,
                    env=None,
                    device=device,
                    policy_kwargs=saved.policy_kwargs or None,
                    _init_setup_model=False,
                    **saved.hyperparameters,
                )
            model._set_saved_spaces(path, saved)
            if env is not None:
                model._attach_env(env)
            policy_given = policy_given or replaced_policy_kwargs is not None
            model._build_networks(path, policy_given, policy_given or bool(overrides))
            model._restore_counters(path, saved.data)
            model._restore_replay_buffer(saved.replay_buffer)
            model._restore_rng(path, saved, overrides.get("seed"))
            return model

    def _set_saved_spaces(self, path: model_io.PathOrFile, saved: model_io.SavedModel) -> None:
        """Give the model built from the saved settings the saved spaces and number of envs."""
        self.observation_space = saved.observation_space
        self.action_space = saved.action_space
        self.n_envs = model_io.saved_n_envs(path, saved.data)

    def _attach_env(self, env: GymEnv | str) -> None:
        """Give the loaded model the environment ``env``, whose spaces must be the saved ones."""
        vec_env = self._matching_env(env, "load: the environment's spaces differ from the saved model's")
        self.env = vec_env
        self.n_envs = vec_env.num_envs
        self._vec_normalize_env = unwrap_vec_normalize(vec_env)

    def _build_networks(self, path: model_io.PathOrFile, policy_given: bool, settings_given: bool) -> None:
        """Build the networks, optimizer and replay memory and load the saved tensors into them (each
        tensor entry read only up to the size of the state dict it fills)."""
        with model_io.networks_built_from_file(path, self.observation_space, policy_given, settings_given):
            self._setup_model()
        tensors = model_io.read_tensors(path, self._tensor_limits())
        try:
            self.set_parameters(tensors, exact_match=True)
        except (RuntimeError, ValueError) as error:
            raise ModelFileError(f"{path}: the saved tensors do not fit the model: {error}") from error

    def _restore_counters(self, path: model_io.PathOrFile, data: dict[str, Any]) -> None:
        """Set the counters, the progress remaining and the ``VecNormalize`` flag saved in ``data``."""
        counters = model_io.read_counters(path, data, self.saved_counters)
        for attribute, value in counters.values.items():
            setattr(self, attribute, value)
        self._current_progress_remaining = counters.progress_remaining
        self._loaded_with_vec_normalize = counters.trained_with_vec_normalize

    def _restore_replay_buffer(self, buffer: Any) -> None:
        """Install the replay memory a file holds (``None``: it holds none, or the caller left it out), if
        the model replays."""
        if buffer is None or self.replay_ratio <= 0:
            return
        try:
            self._install_replay_buffer(buffer)
        except ValueError as error:
            raise ValueError(
                f"load: {error}; pass custom_objects={{'replay_buffer': None}} to start with an "
                "empty replay memory"
            ) from error

    def _install_replay_buffer(self, buffer: Any) -> None:
        """Install ``buffer`` as the replay memory if it fits the model (else ``ValueError``)."""
        raise NotImplementedError

    def _restore_rng(self, path: model_io.PathOrFile, saved: model_io.SavedModel, seed: int | None) -> None:
        """Seed the generators from ``seed``, or restore the saved ones."""
        if seed is not None:
            # A seed given to load starts fresh streams from it rather than continuing the saved ones.
            self.set_random_seed(seed)
        elif saved.rng_states is not None:
            model_io.restore_global_rng_states(path, saved.rng_states)

    # ------------------------------------------------------------------ the replay memory

    def save_replay_buffer(self, path: model_io.PathOrFile) -> None:
        """Save the replay memory as data (SB3's name): its arrays, write position and the per-env sampling
        generators. ``.pkl`` is appended to a path without suffix as SB3 does, but the file is a zip of JSON
        and ``.npy`` arrays, never a pickle; a path is written atomically.

        Raises:
            ValueError: if the model has no replay memory (``replay_ratio=0``, or no environment yet).
        """
        if self.replay_buffer is None:
            raise ValueError("this model has no replay buffer to save (replay_ratio=0 or no environment)")
        save_buffer(self.replay_buffer, path)

    def load_replay_buffer(self, path: model_io.PathOrFile, truncate_last_traj: bool = True) -> None:
        """Load a replay memory saved by :meth:`save_replay_buffer` (or a checkpoint saved with
        ``save(path, include=["replay_buffer"])``), without unpickling anything. The buffer must fit this
        model: same ``n_steps``, number of envs, observation shape and dtype, actions and capacity;
        otherwise ``ValueError`` is raised and the model's own memory is kept.

        Args:
            path: replay buffer file (path or file-like).
            truncate_last_traj: accepted for SB3 compatibility; ACER stores whole segments, so there is
                no partial trajectory to truncate.
        """
        del truncate_last_traj
        if self.replay_ratio <= 0:
            raise ValueError("this model does not replay (replay_ratio=0): it has no use for a replay buffer")
        self._install_replay_buffer(load_buffer(path))

"""The checks of a received zoo log folder before a forwarded script reads it (:func:`check_log_folder`):
the zoo's own options parsed as the zoo parses them, then each file the script would read."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import pathlib
from collections.abc import Callable, Sequence
from typing import NoReturn

from sb3_acer.cli.errors import one_line
from sb3_acer.cli.zoo.sampler import ALGO
from sb3_acer.cli.zoo.yaml_files import (
    TRUST_FLAG,
    TRUSTED_PACKAGES,
    LogFolderError,
    Rules,
    check_config,
    check_no_pickle,
    read_yaml,
)

__all__ = ["HUB_FOLDER", "check_log_folder", "named_packages", "zoo_options"]

#: The zoo's download folder: ``enjoy`` fetches a model missing there from the Hugging Face Hub.
HUB_FOLDER = "rl-trained-agents"


class _Unparsed(Exception):
    """The zoo's own parser will refuse this command line too (before it reads a file)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise _Unparsed(message)


def _parser(script: str) -> argparse.ArgumentParser:
    """A parser of the zoo's options (of ``script``) that locate the files it reads, with the zoo's names,
    types and defaults (a subset of the zoo's options parses a command line as the zoo's parser does)."""
    parser = _Parser(add_help=False)
    parser.add_argument("--algo", default=ALGO)
    parser.add_argument("--env", default="CartPole-v1")
    if script in ("train", "enjoy"):  # a flag of one letter: "-Pi x.zip" is "-P -i x.zip"
        parser.add_argument("-P", "--progress", action="store_true")
    if script == "enjoy":
        parser.add_argument("--gym-packages", nargs="+", default=[])
    if script in ("push_to_hub", "load_from_hub"):  # the Hub's flags ("-name" is not "-n ame")
        hub = script == "push_to_hub"
        parser.add_argument("-orga", "--organization", required=hub, default=None if hub else "sb3")
        parser.add_argument("-name", "--repo-name")
    if script == "push_to_hub":
        parser.add_argument("-n", "--n-timesteps", type=int, default=1000)
        parser.add_argument("-m", "--commit-message")
        parser.add_argument("--no-render", action="store_true")
    if script == "train":
        parser.add_argument("-i", "--trained-agent", default="")
    elif script == "load_from_hub":
        parser.add_argument("-f", "--folder", required=True)
    else:
        parser.add_argument("-f", "--folder", default=HUB_FOLDER, required=script == "push_to_hub")
        parser.add_argument("--exp-id", type=int, default=0)
        parser.add_argument("--load-best", action="store_true")
        parser.add_argument("--load-checkpoint", type=int)
        parser.add_argument("--load-last-checkpoint", action="store_true")
    return parser


def _is_help(arg: str) -> bool:
    return arg == "-h" or (len(arg) > 2 and "--help".startswith(arg))


def named_packages(env_id: str, gym_packages: Sequence[str]) -> frozenset[str]:
    """:data:`TRUSTED_PACKAGES` and the packages the command line names: ``--gym-packages``, the module of a
    ``module:EnvId`` id, and the package that registered the env (looked up, nothing imported)."""
    import gymnasium

    modules = [*gym_packages, env_id.rpartition(":")[0]]
    spec = gymnasium.registry.get(env_id.rpartition(":")[2])
    if spec is not None and isinstance(spec.entry_point, str):
        modules.append(spec.entry_point.partition(":")[0])
    return TRUSTED_PACKAGES | {module.partition(".")[0] for module in modules if module}


def check_log_folder(script: str, args: Sequence[str]) -> None:
    """Check what the zoo's ``script`` would read from a log folder given ``args`` (its command line, with
    ``--algo``), before it runs. ``enjoy``, ``record_video`` and ``push_to_hub`` read the run folder's
    ``config.yml`` and ``args.yml`` (with PyYAML's unsafe loader, ``eval`` of a ``normalize`` string, and
    imports of the classes they name), its ``vecnormalize.pkl`` (a pickle) and the model file;
    ``train --trained-agent`` reads the model, ``vecnormalize.pkl`` beside it and ACER's replay file (no
    pickle). ``load_from_hub`` reads no folder: its downloads are checked as they arrive
    (:func:`hub_download`). Nothing is read by other commands.

    Raises:
        LogFolderError: a file that would run code or import a module the command line does not name, a
            pickled file, another algorithm's model (pickled by Stable-Baselines3), or a run folder that
            is missing (``enjoy`` would fetch it from the Hugging Face Hub unchecked).
    """
    if any(_is_help(arg) for arg in args):
        return  # the zoo prints its help and reads nothing
    try:
        options = _parser(script).parse_known_args(list(args))[0]
    except _Unparsed:
        return  # the zoo's parser refuses it before reading anything
    from huggingface_sb3 import EnvironmentName

    _FOLDER_CHECKS[script](script, options, EnvironmentName(options.env))


def _check_trained_agent(script: str, options: argparse.Namespace, env_name: str) -> None:
    """``train --trained-agent MODEL``: the model and ``<folder of MODEL>/<env>/vecnormalize.pkl``."""
    if options.trained_agent:
        folder = os.path.dirname(options.trained_agent)
        rules = Rules(folder or ".", TRUSTED_PACKAGES, package_flag=False)
        _check_algo(options.algo, options.trained_agent, rules)
        check_no_pickle(os.path.join(folder, env_name, "vecnormalize.pkl"), rules)


def _check_algo(algo: str, where: str, rules: Rules) -> None:
    """Only ACER's model files are data: other algorithms' are SB3 zips whose ``data`` holds pickles."""
    if algo != ALGO:
        raise LogFolderError(
            f"--algo {algo}: refusing to load {algo} model files ({where}): they hold pickles "
            f"(Stable-Baselines3's format), which can run any code; {rules.trust()}"
        )


def _run_path(script: str, options: argparse.Namespace, env_name: str) -> str:
    """The run folder the zoo's ``script`` reads, found as it finds it (``rl_zoo3.utils.get_model_path``).

    Raises:
        LogFolderError: no model there (``enjoy`` would download one from the Hugging Face Hub into a
            :data:`HUB_FOLDER` folder, unchecked).
    """
    from rl_zoo3.utils import get_model_path

    try:
        with contextlib.redirect_stdout(io.StringIO()):  # the run it picks: the zoo prints it again
            _, _, run = get_model_path(
                options.exp_id,
                options.folder,
                options.algo,
                env_name,
                options.load_best,
                options.load_checkpoint,
                options.load_last_checkpoint,
            )
    except (AssertionError, ValueError) as error:
        hub = script == "enjoy" and HUB_FOLDER in options.folder
        download = (
            f"; enjoy would download it from the Hugging Face Hub, unchecked: pass {TRUST_FLAG} to allow it"
        )
        raise LogFolderError(f"{one_line(error)}{download if hub else ''}") from None
    return run


def _check_run_folder(script: str, options: argparse.Namespace, env_name: str) -> None:
    """``enjoy`` and ``record_video``: the run folder's model, ``<env>/config.yml``, ``<env>/args.yml`` and
    ``<env>/vecnormalize.pkl``."""
    gym_packages = getattr(options, "gym_packages", [])
    packages = named_packages(options.env, gym_packages)
    _check_algo(options.algo, options.folder, Rules(options.folder, packages, package_flag=False))
    run = _run_path(script, options, env_name)
    rules = Rules(run, packages, package_flag=script == "enjoy")
    stats = pathlib.Path(run, env_name)
    if not stats.is_dir():
        return  # the zoo reads no settings and no statistics
    for name in ("config.yml", "args.yml"):
        path = stats / name
        if path.is_file():
            data = read_yaml(path, rules)
            if name == "config.yml":
                check_config(path, data, rules)
            elif not isinstance(data, dict):
                raise LogFolderError(f"{path} must map arguments to values, not hold {type(data).__name__}")
    check_no_pickle(str(stats / "vecnormalize.pkl"), rules)


def _check_download(script: str, options: argparse.Namespace, env_name: str) -> None:
    """``load_from_hub``: only ACER's model files are data (each downloaded file is checked as it arrives,
    :func:`hub_download`)."""
    repo = f"{options.organization}/{options.repo_name or f'{options.algo}-{env_name}'}"
    _check_algo(options.algo, repo, Rules(repo, TRUSTED_PACKAGES, package_flag=False))


#: What each forwarded script reads from a log folder, checked (a new script needs an entry).
_FOLDER_CHECKS: dict[str, Callable[[str, argparse.Namespace, str], None]] = {
    "train": _check_trained_agent,
    "enjoy": _check_run_folder,
    "record_video": _check_run_folder,
    "push_to_hub": _check_run_folder,
    "load_from_hub": _check_download,
}


# ------------------------------------------------------------------------------------- Hugging Face Hub


def zoo_options(script: str, args: Sequence[str]) -> argparse.Namespace | None:
    """``args`` as the zoo's ``script`` reads them (None: its parser will refuse them, reading nothing)."""
    try:
        return _parser(script).parse_known_args(list(args))[0]
    except _Unparsed:
        return None

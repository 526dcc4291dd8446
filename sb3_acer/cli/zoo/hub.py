"""What ``push_to_hub`` and ``load_from_hub`` of the zoo need of today's Hugging Face packages: the card's
metadata and ACER's card, imageio-ffmpeg's ``ffmpeg`` for the replay video, and every downloaded file
checked before the zoo writes the folder (:func:`hub_download`)."""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import pathlib
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from typing import Any
from unittest import mock

from sb3_acer.cli.errors import one_line
from sb3_acer.cli.zoo.log_folder import named_packages, zoo_options
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

__all__ = [
    "HUB_STATISTICS",
    "HUB_TAGS",
    "MAX_METRICS_BYTES",
    "bundled_ffmpeg",
    "download_bridge",
    "generate_metadata",
    "hub_download",
    "model_card",
    "push_bridge",
]

HUB_TAGS = ("deep-reinforcement-learning", "reinforcement-learning", "stable-baselines3", "sb3-acer", "acer")
#: The largest ``train_eval_metrics.zip`` a download may extract (the zoo's holds monitor files and
#: ``evaluations.npz``: megabytes).
MAX_METRICS_BYTES = 1 << 30
#: The file ``load_from_hub`` takes for "no statistics" when the Hub does not have it.
HUB_STATISTICS = "vec_normalize.pkl"


def generate_metadata(model_name: str, env_id: str, mean_reward: float, std_reward: float) -> dict[str, Any]:
    """The model card's metadata (tags and evaluation), as ``rl_zoo3.push_to_hub`` imports it from
    ``huggingface_sb3.push_to_hub``, which no longer has it (``sb3-team-hf-integration`` 3.x): made with
    ``huggingface_hub``'s ``metadata_eval_result``, tagged :data:`HUB_TAGS` and the environment."""
    from huggingface_hub.repocard import metadata_eval_result

    evaluation = metadata_eval_result(
        model_pretty_name=model_name,
        task_pretty_name="reinforcement-learning",
        task_id="reinforcement-learning",
        metrics_pretty_name="mean_reward",
        metrics_id="mean_reward",
        metrics_value=f"{mean_reward:.2f} +/- {std_reward:.2f}",
        dataset_pretty_name=env_id,
        dataset_id=env_id,
    )
    return {"library_name": "stable-baselines3", "tags": [env_id, *HUB_TAGS], **evaluation}


def model_card(
    env_id: str,
    organization: str,
    repo_name: str | None = None,
    *,
    normalized: bool = False,
    hyperparameters: str = "",
) -> str:
    """The model card (``README.md``, without its metadata) of ACER trained on ``env_id`` in the zoo and
    pushed to ``organization/repo_name`` (by default the zoo's ``acer-<env>``): commands of
    ``python -m sb3_acer.zoo`` and ``sb3-acer``, and Python with ``ACER.load``, which work as written
    (rl_zoo3's own scripts have no ``acer``, and Stable-Baselines3's ``load`` does not read ACER's file).
    ``normalized``: the repository holds ``VecNormalize`` statistics (a pickle), which play only with
    ``--trust-log-folder``; ``hyperparameters``: a Markdown section appended as it is."""
    from huggingface_sb3 import EnvironmentName, ModelName

    env_name = EnvironmentName(env_id)
    default_name = ModelName(ALGO, env_name)
    repo_id = f"{organization}/{repo_name or default_name}"
    name = f" -name {repo_name}" if repo_name and repo_name != default_name else ""
    trust = f" {TRUST_FLAG}" if normalized else ""
    run = f"logs/{ALGO}/{env_name}_1"
    if normalized:
        play = (
            f"The model plays with `VecNormalize` statistics, `{HUB_STATISTICS}`: a pickle, which can run "
            f"any code when it is read. `{TRUST_FLAG}` downloads and reads it: give it only if you trust "
            f"{organization}. (`sb3-acer enjoy` reads its own statistics, not this pickle.)\n\n"
        )
        enjoy_cli = ""
    else:
        play = ""
        enjoy_cli = (
            "# or with sb3-acer's command line (the first download into logs/ is run 1)\n"
            f"sb3-acer enjoy {run}/{env_name}.zip --env {env_id}\n"
        )
    return f"""
# **ACER** Agent playing **{env_id}**

This is a trained model of an **ACER** agent (Actor-Critic with Experience Replay) playing **{env_id}**,
trained with [sb3-acer](https://pypi.org/project/sb3-acer/), ACER for
[Stable-Baselines3](https://github.com/DLR-RM/stable-baselines3), in the
[RL Zoo](https://github.com/DLR-RM/rl-baselines3-zoo).

ACER is not one of Stable-Baselines3's algorithms: load the model with sb3-acer's `ACER.load`
(`PPO.load` and the other algorithms of `stable_baselines3` cannot read it), and use the zoo through
`python -m sb3_acer.zoo` (`python -m rl_zoo3...` has no `--algo acer`).

## Usage (with sb3-acer and the RL Zoo)

{play}```bash
pip install "sb3-acer[zoo,hub]"
# Download the model and save it into the logs/ folder
python -m sb3_acer.zoo load_from_hub --algo {ALGO} --env {env_id} -orga {organization}{name} -f logs/{trust}
python -m sb3_acer.zoo enjoy --algo {ALGO} --env {env_id} -f logs/{trust}
{enjoy_cli}```

## Usage (from Python)

```python
from huggingface_hub import hf_hub_download

from sb3_acer import ACER

model = ACER.load(hf_hub_download(repo_id="{repo_id}", filename="{default_name}.zip"))
```

## Training (with the RL Zoo)

```bash
python -m sb3_acer.zoo train --algo {ALGO} --env {env_id} -f logs/
# Upload the model and generate video (when possible)
python -m sb3_acer.zoo push_to_hub --algo {ALGO} --env {env_id} -f logs/ -orga {organization}{name}
```

{hyperparameters}"""


def _card_writer(options: argparse.Namespace, metadata_save: Callable[..., None]) -> Callable[..., None]:
    """``metadata_save`` as ``rl_zoo3.push_to_hub`` calls it right after it wrote its own card (with
    rl_zoo3's commands, which have no ``acer``): writes :func:`model_card` there instead, keeping the zoo's
    hyperparameters section, then the metadata."""

    def save(path: str | os.PathLike[str], metadata: dict[str, Any]) -> None:
        readme = pathlib.Path(path)
        zoo_card = readme.read_text(encoding="utf-8") if readme.is_file() else ""
        start = zoo_card.find("## Hyperparameters")
        card = model_card(
            options.env,
            options.organization,
            options.repo_name,
            normalized=(readme.parent / HUB_STATISTICS).is_file(),
            hyperparameters=zoo_card[start:] if start >= 0 else "",
        )
        readme.write_text(card, encoding="utf-8")
        metadata_save(readme, metadata)

    return save


@contextlib.contextmanager
def bundled_ffmpeg() -> Iterator[str]:
    """Inside the block, the program ``ffmpeg`` is imageio-ffmpeg's binary (a dependency of moviepy, which
    ``sb3-acer[hub]`` installs): ``huggingface_sb3`` converts the replay video by running ``ffmpeg``,
    which a pip install does not bring. Yields the binary's path.

    Raises:
        ImportError: imageio-ffmpeg is not installed.
    """
    try:
        import imageio_ffmpeg
    except ImportError:
        raise ImportError(
            "the replay video needs imageio-ffmpeg's ffmpeg: pip install 'sb3-acer[hub]'"
        ) from None
    binary = imageio_ffmpeg.get_ffmpeg_exe()
    with tempfile.TemporaryDirectory(prefix="sb3_acer_ffmpeg_") as folder:
        os.symlink(binary, os.path.join(folder, "ffmpeg"))
        path = f"{folder}{os.pathsep}{os.environ.get('PATH', '')}"
        with mock.patch.dict(os.environ, {"PATH": path}):
            yield binary


@contextlib.contextmanager
def push_bridge(args: Sequence[str], trusted: bool) -> Iterator[None]:
    """What ``rl_zoo3.push_to_hub`` needs of today's packages while it runs: :func:`generate_metadata`, the
    ACER card (:func:`_card_writer`) and, for the replay video, :func:`bundled_ffmpeg`."""
    import huggingface_hub.repocard

    options = zoo_options("push_to_hub", args)
    with contextlib.ExitStack() as stack:
        # the module (the package's attribute of that name is its function push_to_hub)
        hf_sb3 = importlib.import_module("huggingface_sb3.push_to_hub")
        stack.enter_context(mock.patch.object(hf_sb3, "generate_metadata", generate_metadata, create=True))
        if options is not None:
            writer = _card_writer(options, huggingface_hub.repocard.metadata_save)
            stack.enter_context(mock.patch.object(huggingface_hub.repocard, "metadata_save", writer))
            if not options.no_render:
                try:
                    stack.enter_context(bundled_ffmpeg())
                except ImportError as error:
                    raise SystemExit(
                        f"sb3_acer.zoo push_to_hub: error: {error}; or pass --no-render to push without one"
                    ) from None
        yield


def hub_download(
    repo_id: str, filename: str, *, trusted: bool = False, packages: frozenset[str] = TRUSTED_PACKAGES
) -> str:
    """Download ``filename`` of the Hub's ``repo_id`` (``huggingface_hub.hf_hub_download``) and return its
    path: ``huggingface_sb3.load_from_hub`` as ``rl_zoo3.load_from_hub`` calls it, but checked. Unless
    ``trusted``, each file is checked as :func:`check_log_folder` checks a run folder, before the zoo
    writes the folder: ``config.yml``, ``args.yml`` and ``env_kwargs.yml`` are read as data (classes of
    ``packages`` only), ``vec_normalize.pkl`` (a pickle) is refused, and ``train_eval_metrics.zip`` must
    hold at most :data:`MAX_METRICS_BYTES` in files without folders (the zoo extracts it into the run
    folder, where a ``CartPole-v1/config.yml`` would replace the checked one). ACER's model file is data.
    ``huggingface_sb3``'s own guard (``TRUST_REMOTE_CODE``), for Stable-Baselines3's pickled models, is not
    needed.

    Raises:
        LogFolderError: a refused file, or a file missing from the repository.
        requests.exceptions.HTTPError: no ``vec_normalize.pkl`` (what the zoo takes for no statistics).
    """
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        path = hf_hub_download(repo_id=repo_id, filename=filename, library_name="sb3-acer")
    except EntryNotFoundError:
        if filename == HUB_STATISTICS:
            from requests.exceptions import HTTPError  # what rl_zoo3.load_from_hub catches

            raise HTTPError(f"{repo_id} has no {filename}") from None
        raise LogFolderError(
            f"{repo_id} has no {filename}: not a repository of the zoo's push_to_hub"
        ) from None
    if not trusted:
        check = _DOWNLOAD_CHECKS.get(filename)
        if check is not None:
            check(pathlib.Path(path), Rules(repo_id, packages, package_flag=False))
    return path


def _check_downloaded_yaml(path: pathlib.Path, rules: Rules) -> None:
    data = read_yaml(path, rules)
    if path.name == "config.yml":
        check_config(path, data, rules)
    elif not isinstance(data, dict) and not (path.name == "env_kwargs.yml" and data is None):
        raise LogFolderError(f"{path} must map arguments to values, not hold {type(data).__name__}")


def _check_downloaded_statistics(path: pathlib.Path, rules: Rules) -> None:
    check_no_pickle(str(path), rules)


def _check_metrics(path: pathlib.Path, rules: Rules) -> None:
    """``train_eval_metrics.zip``, which the zoo extracts into the run folder: plain files (no folders), at
    most :data:`MAX_METRICS_BYTES` extracted."""
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
    except (OSError, zipfile.BadZipFile) as error:
        raise LogFolderError(f"{path} is not a zip archive: {one_line(error)}") from None
    for member in members:
        if "/" in member.filename or "\\" in member.filename or member.filename in ("", ".", ".."):
            raise LogFolderError(
                f"{path}: refusing {member.filename!r}: the zoo writes plain file names there, and "
                f"extracting this one would write into the run's folders (over its checked settings); "
                f"{rules.trust()}"
            )
    size = sum(member.file_size for member in members)
    if size > MAX_METRICS_BYTES:
        raise LogFolderError(
            f"{path} would extract {size} bytes, more than the zoo's metrics hold (at most "
            f"{MAX_METRICS_BYTES}); {rules.trust()}"
        )


#: How :func:`hub_download` checks each file ``rl_zoo3.load_from_hub`` downloads (the model: data).
_DOWNLOAD_CHECKS: dict[str, Callable[[pathlib.Path, Rules], None]] = {
    "config.yml": _check_downloaded_yaml,
    "args.yml": _check_downloaded_yaml,
    "env_kwargs.yml": _check_downloaded_yaml,
    HUB_STATISTICS: _check_downloaded_statistics,
    "train_eval_metrics.zip": _check_metrics,
}


@contextlib.contextmanager
def download_bridge(args: Sequence[str], trusted: bool) -> Iterator[None]:
    """``rl_zoo3.load_from_hub`` downloads with :func:`hub_download` (checked unless ``trusted``)."""
    import huggingface_sb3

    options = zoo_options("load_from_hub", args)
    packages = TRUSTED_PACKAGES if options is None else named_packages(options.env, [])
    download = functools.partial(hub_download, trusted=trusted, packages=packages)
    with mock.patch.object(huggingface_sb3, "load_from_hub", download):
        yield

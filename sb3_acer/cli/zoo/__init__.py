"""ACER in rl-baselines3-zoo: ``python -m sb3_acer.zoo train|enjoy|record_video [the zoo's flags]``.

The zoo's scripts run as they are (``pip install sb3-acer[zoo]``), with ACER registered under ``acer``
(:func:`register`): in ``rl_zoo3.ALGOS``, and with an Optuna sampler of ACER's hyperparameters
(:func:`sample_acer_params`) for ``train -optimize``. ``--algo`` defaults to ``acer``, and ``train`` reads
the package's presets (``acer.yml``, through :mod:`sb3_acer.presets.zoo_format`) unless ``-conf`` names
another file. For example::

    python -m sb3_acer.zoo train --env CartPole-v1 -f logs
    python -m sb3_acer.zoo train --env CartPole-v1 -optimize --n-trials 20 -n 50000
    python -m sb3_acer.zoo enjoy --env CartPole-v1 -f logs
    python -m sb3_acer.zoo record_video --env CartPole-v1 -f logs -n 1000

``push_to_hub`` and ``load_from_hub`` share a run through the Hugging Face Hub (``pip install
'sb3-acer[zoo,hub]'``; :mod:`sb3_acer.zoo` bridges what the zoo's scripts need of today's packages, see
:func:`generate_metadata`, :func:`bundled_ffmpeg` and :func:`hub_download`)::

    python -m sb3_acer.zoo push_to_hub --env CartPole-v1 -f logs -orga your-name
    python -m sb3_acer.zoo load_from_hub --env CartPole-v1 -f downloads -orga your-name

The card ``push_to_hub`` writes (:func:`model_card`) gives commands of this entry and ``sb3-acer``, which
work as written. ``record_training`` starts Python again, where ACER would not be registered: it is not
forwarded.

A log folder is data, and may come from someone else: before forwarding a command that reads one (``enjoy``,
``record_video``, ``train --trained-agent``), :func:`check_log_folder` checks the files the zoo would read
from it and refuses, in one line, what would run code or import a module the user did not name (YAML tags
that PyYAML's unsafe loader runs, a ``normalize`` string the zoo would ``eval``, wrapper or callback classes
of other packages, pickled ``vecnormalize.pkl`` statistics, another algorithm's pickled model file). With
``--trust-log-folder`` (taken by this entry, not forwarded) the folder is trusted and read as the zoo reads
it. ``push_to_hub`` reads the run folder as ``enjoy`` does, and is checked the same way; ``load_from_hub``
checks each file it downloads before the zoo writes the folder (:func:`hub_download`), so a downloaded
folder holds only what ``enjoy`` plays without the flag, unless the flag was given to ``load_from_hub``.
"""

from sb3_acer.cli.zoo.entry import SCRIPTS, main
from sb3_acer.cli.zoo.hub import (
    HUB_TAGS,
    MAX_METRICS_BYTES,
    bundled_ffmpeg,
    generate_metadata,
    hub_download,
    model_card,
)
from sb3_acer.cli.zoo.log_folder import check_log_folder
from sb3_acer.cli.zoo.sampler import ALGO, NET_ARCHS, convert_acer_params, register, sample_acer_params
from sb3_acer.cli.zoo.yaml_files import (
    MAX_YAML_BYTES,
    TRUST_FLAG,
    TRUSTED_PACKAGES,
    LogFolderError,
    read_log_yaml,
)

__all__ = [
    "ALGO",
    "HUB_TAGS",
    "MAX_METRICS_BYTES",
    "MAX_YAML_BYTES",
    "NET_ARCHS",
    "SCRIPTS",
    "TRUSTED_PACKAGES",
    "TRUST_FLAG",
    "LogFolderError",
    "bundled_ffmpeg",
    "check_log_folder",
    "convert_acer_params",
    "generate_metadata",
    "hub_download",
    "main",
    "model_card",
    "read_log_yaml",
    "register",
    "sample_acer_params",
]

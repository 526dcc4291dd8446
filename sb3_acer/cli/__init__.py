"""The ``sb3-acer`` command (also ``python -m sb3_acer``): train, enjoy, plot, export and convert-stats.

- ``sb3-acer train ENV_ID`` trains ACER with the tuned preset for ``ENV_ID`` when one exists
  (``sb3_acer/presets/acer.yml``), otherwise with ACER's defaults. Every setting can be overridden. The run
  folder ``<log-folder>/<env>_<seed>/`` receives the ``Monitor`` logs (``<rank>.monitor.csv``), the model
  (``model.zip``), a description of the run (``model.json``), the observation statistics of
  ``VecNormalize`` when the run normalises (``model.vecnormalize.npz``, plain arrays, no pickle), the
  evaluations of ``--eval-freq`` (``evaluations.npz``) and the best evaluated model (``best_model.zip``,
  with its ``best_model.json`` and statistics).
- ``sb3-acer enjoy MODEL`` runs a saved model for a few episodes and prints the returns; it reads the
  environment id, its wrappers and the normalisation statistics written next to the model by ``train``.
- ``sb3-acer plot RUN_DIR...`` draws episode return against environment steps from the ``Monitor`` logs,
  the mean and standard deviation over the seeds of each experiment, to a PNG.
- ``sb3-acer export MODEL OUT`` writes a saved model's policy as an ONNX graph (:mod:`~sb3_acer.cli.export`).
- ``sb3-acer convert-stats IN OUT`` writes Stable-Baselines3's pickled ``VecNormalize`` statistics
  (``vecnormalize.pkl``, from a file the user trusts) as the ``.npz`` that ``enjoy --norm-stats`` reads
  (:mod:`~sb3_acer.cli.convert_stats`).

:func:`main` takes the arguments and returns the exit code: 0 on success, 2 for a usage error (unknown
environment id, bad ``key=value``, unknown hyperparameter, invalid value), 1 for other failures (a missing
optional dependency, a damaged model file: ``ModelFileError`` and its ``ReplayBufferFileError``, wherever
they arise), 130 when interrupted. Errors are printed as one line ``error: ...`` on stderr.

A command that fails changes no file: ``train`` checks its paths, seed and settings (building the model
once on a single env without logs) before it writes anything, and replaces an earlier run, or a file at
``--save-path``, only with ``--overwrite``, which then removes all of that run's files. A run locks its
folder while it writes there (``fcntl``; not on Windows): a second ``train`` into it stops with one line.

The package: :mod:`~sb3_acer.cli.train` (options, settings, checks and the run),
:mod:`~sb3_acer.cli.enjoy`, :mod:`~sb3_acer.cli.plot`, :mod:`~sb3_acer.cli.run_atari`
(``python -m sb3_acer.run_atari``), :mod:`~sb3_acer.cli.zoo` (``python -m sb3_acer.zoo``);
:mod:`~sb3_acer.cli.run_folder` is the run-folder policy of ``train`` and ``run_atari``, and
:mod:`~sb3_acer.cli.arguments`, :mod:`~sb3_acer.cli.environments`, :mod:`~sb3_acer.cli.imports` (what a
command imports: the modules the user names, never one that only a file names),
:mod:`~sb3_acer.cli.normalization` and :mod:`~sb3_acer.cli.errors` what they share.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import sb3_acer
from sb3_acer.cli import convert_stats, enjoy, export, plot, train
from sb3_acer.cli.arguments import Parser
from sb3_acer.cli.errors import PROG, CLIError, UsageError, one_line
from sb3_acer.common.save_util.model_file import ModelFileError

__all__ = ["build_parser", "main"]

MAIN_EXAMPLES = f"""\
examples:
  {PROG} train CartPole-v1                      # tuned preset, logs and model in logs/CartPole-v1_0/
  {PROG} enjoy logs/CartPole-v1_0/model.zip     # watch it for 5 episodes
  {PROG} plot logs/ --out curves.png            # learning curves of every run in logs/

Run '{PROG} COMMAND -h' for the options of a command."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``sb3-acer`` command."""
    formatter = argparse.RawDescriptionHelpFormatter
    parser = Parser(
        prog=PROG,
        description="ACER (Actor-Critic with Experience Replay) on Stable-Baselines3: train, enjoy, plot, "
        "export.",
        epilog=MAIN_EXAMPLES,
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {sb3_acer.__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=Parser)
    for command in (train, enjoy, plot, export, convert_stats):
        command.add_parser(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``sb3-acer`` command with ``argv`` (default ``sys.argv[1:]``) and return its exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            args = parser.parse_args(argv)
        except UsageError as error:
            if "required: ENV_ID" in str(error) and "--hyperparams" in argv:
                raise UsageError(
                    "ENV_ID is missing: --hyperparams takes every word after it, so give ENV_ID before "
                    "--hyperparams (or end the list with --)"
                ) from None
            raise
        return int(args.func(args))
    except SystemExit as exit_:  # -h and --version
        return exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    except CLIError as error:
        print(f"error: {one_line(error)}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:  # outside training, which saves the model itself
        print("interrupted", file=sys.stderr)
        return 130
    except (OSError, ModelFileError) as error:  # what the system refused, a damaged file: on one line
        print(f"error: {one_line(error)}", file=sys.stderr)
        return 1

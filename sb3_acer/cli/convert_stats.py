"""``sb3-acer convert-stats IN OUT``: write Stable-Baselines3's pickled ``VecNormalize`` statistics
(``VecNormalize.save()``, ``CheckpointCallback(save_vecnormalize=True)``, the zoo's ``vecnormalize.pkl``) as
the plain arrays that ``train`` writes and ``enjoy --norm-stats`` reads
(:func:`~sb3_acer.cli.normalization.convert_sb3_normalization`).

IN is unpickled, which can run code: the command is for a file the user trusts, once, so that ``enjoy``
never needs ``--trust-pickle`` for it. Everything is checked before OUT is written (OUT is a file that can
be written and not IN itself, IN holds finite ``VecNormalize`` statistics); OUT is replaced if it exists,
atomically.
"""

from __future__ import annotations

import argparse
import pathlib
from typing import Any

from sb3_acer.cli.errors import PROG, CLIError, UsageError, one_line
from sb3_acer.cli.normalization import StatisticsFileError, convert_sb3_normalization
from sb3_acer.cli.run_folder import check_can_create

__all__ = ["add_parser", "cmd_convert_stats"]

CONVERT_EXAMPLES = f"""\
examples:
  {PROG} convert-stats logs/ppo/CartPole-v1_1/CartPole-v1/vecnormalize.pkl stats.npz
  {PROG} enjoy model.zip --env CartPole-v1 --norm-stats stats.npz

IN is unpickled, which can run any code: convert only a file you trust. OUT holds plain arrays (no pickle),
as MODEL.vecnormalize.npz written by '{PROG} train'."""


def add_parser(commands: Any) -> None:
    """Add the ``convert-stats`` command to ``commands`` (the subparsers of the ``sb3-acer`` parser)."""
    convert = commands.add_parser(
        "convert-stats",
        help="convert SB3's pickled VecNormalize statistics (vecnormalize.pkl) to sb3-acer's .npz",
        description="Write the VecNormalize statistics Stable-Baselines3 pickled to IN (VecNormalize.save(), "
        "vecnormalize.pkl) to OUT as plain arrays, which 'enjoy --norm-stats' reads without --trust-pickle.",
        epilog=CONVERT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    convert.add_argument("source", metavar="IN", help="pickled statistics (unpickled: only a file you trust)")
    convert.add_argument(
        "target", metavar="OUT", help="statistics file to write (.npz), replaced if it exists"
    )
    convert.set_defaults(func=cmd_convert_stats)


def cmd_convert_stats(args: argparse.Namespace) -> int:
    source, target = pathlib.Path(args.source), pathlib.Path(args.target)
    if not source.is_file():
        raise UsageError(f"no statistics file {str(source)!r}")
    check_can_create(target, "OUT", folder=False)
    if target.exists() and target.resolve() == source.resolve():
        raise UsageError(f"OUT {target} is IN itself: name another file")
    try:
        convert_sb3_normalization(source, target)
    except StatisticsFileError as error:
        raise CLIError(f"cannot convert {source}: {one_line(error)}") from None
    print(f"wrote {target}: play with '{PROG} enjoy MODEL --norm-stats {target}'")
    return 0

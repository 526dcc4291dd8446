"""``sb3-acer train ENV_ID``: :mod:`~sb3_acer.cli.train.options` (the options and their help),
:mod:`~sb3_acer.cli.train.settings` (the preset and the flags combined), :mod:`~sb3_acer.cli.train.start`
(everything checked before anything is written) and :mod:`~sb3_acer.cli.train.run` (the run in its locked
folder)."""

from sb3_acer.cli.train.options import add_parser

__all__ = ["add_parser"]

"""``python -m sb3_acer.zoo``: ACER in rl-baselines3-zoo, kept at its documented path; the command is
:mod:`sb3_acer.cli.zoo`, whose names this module hands on."""

from sb3_acer.cli import zoo as _zoo
from sb3_acer.cli.zoo import *  # noqa: F403

__all__ = _zoo.__all__

if __name__ == "__main__":
    _zoo.main()

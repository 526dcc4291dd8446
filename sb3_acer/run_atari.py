"""``python -m sb3_acer.run_atari``: SB2's ``acer/run_atari.py`` command, kept at its documented path; the
script is :mod:`sb3_acer.cli.run_atari`, started through the Ctrl-C guard of :mod:`sb3_acer.entry`."""

from sb3_acer.entry import launch

if __name__ == "__main__":
    raise SystemExit(launch("sb3_acer.cli.run_atari"))

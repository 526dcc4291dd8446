"""Tests of the command line (`sb3_acer/cli/`, the zoo and Hub commands)."""

"""``python -m sb3_acer``: the ``sb3-acer`` command (see :mod:`sb3_acer.cli` and :mod:`sb3_acer.entry`)."""

from sb3_acer.entry import main

if __name__ == "__main__":
    raise SystemExit(main())

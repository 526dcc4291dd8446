"""``python -m sb3_acer.zoo SCRIPT``: the zoo's script run in this process with ACER registered, the
package's presets, the log folder checked first, and the bridges a script needs."""

from __future__ import annotations

import contextlib
import importlib
import runpy
import sys
from collections.abc import Callable, Sequence

from sb3_acer.cli.errors import one_line
from sb3_acer.cli.zoo.hub import download_bridge, push_bridge
from sb3_acer.cli.zoo.log_folder import check_log_folder
from sb3_acer.cli.zoo.sampler import ALGO, register
from sb3_acer.cli.zoo.yaml_files import TRUST_FLAG
from sb3_acer.common.save_util.model_file import ModelFileError
from sb3_acer.presets.zoo_format import MODULE as PRESETS_MODULE

__all__ = ["SCRIPTS", "main", "zoo_arguments"]

#: The zoo's scripts this module forwards to (``rl_zoo3.<script>``).
SCRIPTS = ("train", "enjoy", "record_video", "push_to_hub", "load_from_hub")


def _given(args: Sequence[str], *flags: str) -> bool:
    return any(arg in flags or arg.startswith(tuple(f"{flag}=" for flag in flags)) for arg in args)


def zoo_arguments(script: str, args: Sequence[str]) -> list[str]:
    """The zoo's command line for ``script``: ``args`` with ``--algo acer`` and, for ``train``, the package's
    presets as the hyperparameter file, unless ``args`` give their own."""
    result = list(args)
    if not _given(result, "--algo"):
        result = ["--algo", ALGO, *result]
    if script == "train" and not _given(result, "-conf", "--conf-file"):
        result = ["--conf-file", PRESETS_MODULE, *result]
    return result


#: What a forwarded script needs while it runs (``args``, trusted), beyond ACER's registration.
_BRIDGES: dict[str, Callable[[Sequence[str], bool], contextlib.AbstractContextManager[None]]] = {
    "push_to_hub": push_bridge,
    "load_from_hub": download_bridge,
}
#: The zoo's scripts that work in their ``if __name__ == "__main__":`` block (run as the zoo's command).
_MAIN_BLOCK_SCRIPTS = frozenset({"record_video", "push_to_hub", "load_from_hub"})


def _run_main_block(module: str) -> None:
    """Run ``module`` as ``python -m module`` does, in this process: a fresh copy, even where another
    script imported the module already (``enjoy`` imports ``load_from_hub``'s function)."""
    imported = sys.modules.pop(module, None)
    try:
        runpy.run_module(module, run_name="__main__")
    finally:
        if imported is not None:
            sys.modules[module] = imported


def _run(script: str, args: Sequence[str], trusted: bool = False) -> None:
    """Run the zoo's ``script`` in this process with ``args`` as its command line (and its bridge,
    :data:`_BRIDGES`)."""
    saved_argv = sys.argv
    sys.argv = [f"rl_zoo3.{script}", *args]
    try:
        with _BRIDGES.get(script, lambda args, trusted: contextlib.nullcontext())(args, trusted):
            if script in _MAIN_BLOCK_SCRIPTS:  # a script without a function: run it as the zoo's command does
                _run_main_block(f"rl_zoo3.{script}")
            else:
                getattr(importlib.import_module(f"rl_zoo3.{script}"), script)()
    finally:
        sys.argv = saved_argv


def main(argv: Sequence[str] | None = None) -> None:
    """Run the zoo's ``script`` (the first argument) with ACER registered and the rest of ``argv``, after
    :func:`check_log_folder` (unless ``argv`` holds :data:`TRUST_FLAG`). A file error (a
    :class:`~sb3_acer.common.save_util.model_file.ModelFileError`, :class:`LogFolderError` included) exits
    with one line on stderr."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in SCRIPTS:
        print(
            f"usage: python -m sb3_acer.zoo {{{','.join(SCRIPTS)}}} [{TRUST_FLAG}] [rl-zoo3 arguments]\n"
            "(pip install 'sb3-acer[zoo]'; run a script with --help for its arguments)",
            file=sys.stderr,
        )
        raise SystemExit(2)
    script, trusted = argv[0], TRUST_FLAG in argv[1:]
    args = zoo_arguments(script, [arg for arg in argv[1:] if arg != TRUST_FLAG])
    try:
        importlib.import_module("rl_zoo3")
    except ImportError as error:
        raise SystemExit(f"sb3_acer.zoo needs rl-zoo3 ({error}): pip install 'sb3-acer[zoo]'") from None
    register()
    try:
        if not trusted:
            check_log_folder(script, args)
        _run(script, args, trusted)
    except ModelFileError as error:
        raise SystemExit(f"sb3_acer.zoo {script}: error: {one_line(error)}") from None

"""Hostile files that expand about 1000-fold (written in chunks, never held in memory), and the peak memory
that loading one takes, measured in a fresh process.

The peak is the process's ``VmHWM`` (Linux): ``getrusage``'s ``ru_maxrss`` would not do, as a child starts
with the peak of the process that forked it (the test process's, hundreds of MB).
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Sequence

#: How much a bomb expands to: far above what loading any of the test files takes.
BOMB_BYTES = 100 << 20
#: What loading a bomb may add to the peak memory of loading an honest file first (a few MB of slack).
ALLOWED_MB = 16


def rewrite_padded(
    source: pathlib.Path,
    target: pathlib.Path,
    entry: str,
    head: bytes = b"",
    tail: bytes = b"",
    padding: bytes = b"\0",
    size: int = BOMB_BYTES,
) -> None:
    """Copy the zip ``source`` to ``target`` (deflated) with ``entry`` (replaced, or added) holding ``head``,
    ``size`` bytes of ``padding`` and ``tail``: about ``size / 1000`` bytes in the file."""
    with zipfile.ZipFile(source) as archive:
        entries = {name: archive.read(name) for name in archive.namelist() if name != entry}
    chunk = padding * ((1 << 20) // len(padding))
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
        with archive.open(entry, "w") as handle:
            handle.write(head)
            for start in range(0, size, len(chunk)):
                handle.write(chunk[: size - start])
            handle.write(tail)


def peak_increases(setup: str, loads: Sequence[str]) -> list[tuple[float, str]]:
    """Run ``setup`` (imports, and loading an honest file), then each of ``loads``, in one fresh Python.

    Returns:
        For each load, how many MB it raised the process's peak memory above the peak before it, and its
        outcome: ``"loaded"`` or ``"<exception type>: <message>"``.
    """
    lines = [
        "import json",
        "def peak():",
        "    with open('/proc/self/status') as status:",
        "        return next(int(line.split()[1]) for line in status if line.startswith('VmHWM:'))",
        textwrap.dedent(setup),
    ]
    for load in loads:
        lines += [
            "before = peak()",
            "try:",
            textwrap.indent(textwrap.dedent(load), "    "),
            "    outcome = 'loaded'",
            "except Exception as error:",
            "    outcome = f'{type(error).__name__}: {error}'",
            "print(json.dumps({'mb': (peak() - before) / 1024, 'outcome': outcome}))",
        ]
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(lines)], capture_output=True, text=True, check=True, timeout=300
    )
    results = [json.loads(line) for line in done.stdout.strip().splitlines()[-len(loads) :]]
    return [(result["mb"], result["outcome"]) for result in results]


def declare_size(path: pathlib.Path, entry: str, size: int) -> None:
    """Make the zip at ``path`` declare that ``entry`` decompresses to ``size`` bytes (in its local header
    and the central directory), whatever it holds: what a hostile file can write."""
    content = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        infos, central = archive.infolist(), archive.start_dir
    for info in infos:
        if info.filename == entry:
            content[info.header_offset + 22 : info.header_offset + 26] = size.to_bytes(4, "little")
            content[central + 24 : central + 28] = size.to_bytes(4, "little")
        central += 46 + len(info.filename.encode()) + len(info.extra) + len(info.comment)
    path.write_bytes(bytes(content))

"""Every ```python block of README.md and docs/*.md runs, each as its own test.

Each block runs as a script (``python block.py``) in an empty temporary folder, so files it writes stay
there and ``SubprocVecEnv`` workers can import it. The blocks must be quick (short ``learn`` calls).

A block whose first line is ``# doctest: skip-run`` is only compiled, not run: use it sparingly, for a
block that cannot run quickly anywhere (it is reported as skipped).
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP_MARKER = "# doctest: skip-run"
#: A fenced block: optional indentation (blocks inside lists), ``` and the info string, the body, ```.
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ \t]*$", re.M | re.S
)
TIMEOUT_S = 300


class Block:
    """One ```python block: where it is and its source."""

    def __init__(self, path: pathlib.Path, line: int, source: str) -> None:
        self.path, self.line, self.source = path, line, source

    @property
    def name(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def python_blocks(path: pathlib.Path) -> list[Block]:
    """The ```python (or ```py) blocks of a Markdown file, dedented, with the line of their fence."""
    text = path.read_text()
    blocks = []
    for match in FENCE.finditer(text):
        if match["info"].strip().split(" ")[0] not in ("python", "py"):
            continue
        line = text.count("\n", 0, match.start()) + 1
        blocks.append(Block(path, line, textwrap.dedent(match["body"])))
    return blocks


ALL_BLOCKS = [block for path in DOCUMENTS for block in python_blocks(path)]


def test_the_blocks_are_found() -> None:
    names = [block.name for block in ALL_BLOCKS]
    assert any(name.startswith("README.md:") for name in names)
    assert sum(name.startswith("docs/migrating-from-sb2.md:") for name in names) >= 6


def test_fence_parsing(tmp_path: pathlib.Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "text\n```bash\nmake run\n```\n\n```python\nx = 1\n```\n- item\n\n  ```py\n  y = 2\n  ```\n"
        "```pycon\n>>> z\n```\n"
    )
    blocks = python_blocks(doc)
    assert [(block.line, block.source) for block in blocks] == [(6, "x = 1\n"), (11, "y = 2\n")]


def test_migration_guide_calls_coming_only_what_is_missing() -> None:
    from sb3_acer import ACER

    text = (ROOT / "docs" / "migrating-from-sb2.md").read_text()
    coming = [line for line in text.splitlines() if "coming" in line]
    if "MlpLstmPolicy" in ACER.policy_aliases:
        assert not coming, (
            "recurrent policies are implemented: update docs/migrating-from-sb2.md, which still says "
            f"'coming' in: {coming}"
        )
    else:
        assert any("recurrent" in line.lower() for line in coming)


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[block.name for block in ALL_BLOCKS])
def test_block_runs(block: Block, tmp_path: pathlib.Path) -> None:
    compile(block.source, block.name, "exec")
    if block.source.lstrip().startswith(SKIP_MARKER):
        pytest.skip(f"{block.name} is marked {SKIP_MARKER!r}")
    script = tmp_path / "block.py"
    script.write_text(block.source)
    # One thread per process: the tiny networks are several times slower with threads competing for
    # the shared cores.
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    try:
        result = subprocess.run(
            [sys.executable, script.name],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block.name} ran longer than {TIMEOUT_S} s; make it quicker")
    assert result.returncode == 0, (
        f"{block.name} failed (exit code {result.returncode}):\n{result.stderr[-4000:]}"
    )

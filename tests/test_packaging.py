"""What a user gets from ``pip install``: the core dependencies cover the default commands, the wheel ships
the package with its presets and licence, and the sdist carries what its own tests and docs need."""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = pathlib.Path(__file__).resolve().parents[1]
#: What a checkout holds beside the project's own files (.gitignore's entries, and git's folder).
NOT_SOURCE = (".git", ".venv", "*.egg-info", "build", "dist", "__pycache__", "*_cache", "runs", "logs", "sb2")


def _requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        name = requirement.split(";")[0].split("[")[0]
        for mark in "<>=!~ ":
            name = name.split(mark)[0]
        names.add(name.strip().lower())
    return names


def test_the_progress_bar_that_train_shows_by_default_needs_only_core_dependencies() -> None:
    # `sb3-acer train`, `run_atari` and `make run` show a progress bar unless told not to, so a plain
    # `pip install sb3-acer` must bring what SB3's progress bar imports.
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert {"tqdm", "rich"} <= _requirement_names(project["dependencies"])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[pathlib.Path, pathlib.Path]:
    """The sdist and the wheel, built without network from a copy of the project (a git checkout or an
    unpacked sdist) without its virtualenv, caches and earlier builds."""
    source = tmp_path_factory.mktemp("build") / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(*NOT_SOURCE))
    out = tmp_path_factory.mktemp("dist")
    build = (
        "import sys; from setuptools import build_meta as b; out = sys.argv[1]; "  # setuptools rewrites argv
        "b.build_sdist(out); b.build_wheel(out)"
    )
    subprocess.run([sys.executable, "-c", build, str(out)], cwd=source, check=True, capture_output=True)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def test_the_wheel_ships_the_package_presets_types_and_licence(
    built: tuple[pathlib.Path, pathlib.Path],
) -> None:
    names = zipfile.ZipFile(built[1]).namelist()
    for shipped in ("sb3_acer/cli/__init__.py", "sb3_acer/presets/acer.yml", "sb3_acer/py.typed"):
        assert shipped in names
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names), names
    assert not [name for name in names if name.split("/")[0] in ("tests", "benchmarks", "docs")]


def test_the_sdist_carries_what_its_tests_and_docs_need(built: tuple[pathlib.Path, pathlib.Path]) -> None:
    with tarfile.open(built[0]) as sdist:
        names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    tests = {path.relative_to(ROOT).as_posix() for path in (ROOT / "tests").rglob("*.py")}
    docs = {path.relative_to(ROOT).as_posix() for path in (ROOT / "docs").glob("*.md")}
    needed = tests | docs | {"LICENSE", "Makefile", "README.md", "benchmarks/common.py"}
    assert needed <= names, sorted(needed - names)
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]

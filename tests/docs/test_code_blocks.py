"""Every ```python block of README.md and docs/**/*.md runs, each as its own test; every command of their
other blocks (```bash) runs or is checked (see "shell blocks" below).

Each block runs as a script in an empty temporary folder, so files it writes stay there: in this process
(``runpy``, which spares each block the seconds of importing torch again), or, for a block that starts
worker processes (``SubprocVecEnv``, an ``if __name__ == "__main__":`` guard), as ``python block.py``,
which its workers can import. The blocks must be quick (short ``learn`` calls).

A block whose first line is ``# doctest: skip-run`` is only compiled, not run: use it sparingly, for a
block that cannot run quickly anywhere (it is reported as skipped).
"""

from __future__ import annotations

import importlib
import inspect
import os
import pathlib
import re
import runpy
import shlex
import subprocess
import sys
import textwrap
import warnings
from importlib import metadata

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
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


#: What makes a block run in a process of its own: it starts workers that import it.
OWN_PROCESS = ("Subproc", "__main__")


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=[block.name for block in ALL_BLOCKS])
def test_block_runs(block: Block, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compile(block.source, block.name, "exec")
    if block.source.lstrip().startswith(SKIP_MARKER):
        pytest.skip(f"{block.name} is marked {SKIP_MARKER!r}")
    script = tmp_path / "block.py"
    script.write_text(block.source)
    if not any(marker in block.source for marker in OWN_PROCESS):
        monkeypatch.chdir(tmp_path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a script shows them to its user; here they are no errors
            runpy.run_path(str(script), run_name="__docs_block__")
        return
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


# ---------------------------------------------------------------------------------------- shell blocks
# Every command of the other fenced blocks (```bash) is checked too. The `sb3-acer`, run_atari and
# `python -m sb3_acer.zoo` (rl-zoo3) examples run in-process, in order, in a temporary folder that also holds
# `benchmarks/` (linked) and an empty `docs/`, with their training budgets cut (CUTS, ZOO_CUTS), and the
# Hugging Face Hub a local folder (conftest's `offline_hub`); with
# `--device cuda` on a machine without CUDA they are only parsed. The benchmark scripts' commands run for
# minutes to hours (their results are docs/results.md's), so they are parsed with each script's own
# `build_parser()`, and the presets' `--set` keys and `--envs` are checked against the settings that exist.
# `make` targets and the `pip install` extras (of pyproject.toml) must exist, and the torch pin must be the
# Makefile's. A command of no known kind fails the test.

#: Appended to a command before it runs: the budget cuts (the last occurrence of an option wins).
CUTS = {
    "train": ["--timesteps", "400"],
    "run_atari": ["--num-timesteps", "80", "--n-envs", "2", "--buffer-size", "40", "--replay-start", "20"],
}
#: The same for `python -m sb3_acer.zoo SCRIPT` (rl-zoo3's flags), and for its `train -optimize`.
ZOO_CUTS = {
    "train": ["-n", "400", "--eval-freq", "-1"],
    "optimize": ["--n-trials", "2", "-n", "300", "--n-evaluations", "1", "--eval-episodes", "1"],
    "enjoy": ["--no-render", "-n", "100"],
    "record_video": ["-n", "20"],
    "push_to_hub": ["--no-render"],
}
#: Command prefixes left alone: they build SB2's Python 3.7 environment from the network (docs/results.md).
NOT_RUN = [["python3.7", "-m", "venv", "sb2"], ["sb2/bin/pip", "install"]]


def shell_commands(path: pathlib.Path) -> list[tuple[int, list[str]]]:
    """The commands of a Markdown file's non-Python fenced blocks: (line of the fence, argv) each."""
    text = path.read_text()
    commands = []
    for match in FENCE.finditer(text):
        if match["info"].strip().split(" ")[0] in ("python", "py"):
            continue
        line = text.count("\n", 0, match.start()) + 1
        body = textwrap.dedent(match["body"]).replace("\\\n", " ")
        for source in body.splitlines():
            tokens = shlex.split(source, comments=True)
            while tokens:
                end = tokens.index("&&") if "&&" in tokens else len(tokens)
                commands.append((line, tokens[:end]))
                tokens = tokens[end + 1 :]
    return commands


def _makefile() -> str:
    return (ROOT / "Makefile").read_text()


def _extras() -> list[str]:
    """The optional-dependency groups of this tree's pyproject.toml (the installed metadata may be older)."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        return metadata.metadata("sb3-acer").get_all("Provides-Extra") or []
    with open(ROOT / "pyproject.toml", "rb") as file:
        return list(tomllib.load(file)["project"]["optional-dependencies"])


def _check_pip(args: list[str]) -> None:
    assert args[0] == "install", args
    extras = _extras()
    torch_pin = re.search(r"^TORCH_VERSION := (\S+)$", _makefile(), re.M)
    assert torch_pin, "the Makefile pins no TORCH_VERSION"
    for arg in args[1:]:
        extra = re.fullmatch(r"\.\[(\w+)\]", arg)
        if extra:
            assert extra[1] in extras, f"sb3-acer has no extra {extra[1]!r}"
        elif arg.startswith("torch=="):
            assert arg == f"torch=={torch_pin[1]}", f"{arg} is not the Makefile's torch {torch_pin[1]}"
        else:
            assert arg in ("-e", "."), f"unexpected pip argument {arg!r}"


def _check_benchmark(name: str, args: list[str]) -> None:
    """``python -m benchmarks.NAME ARGS``: a script of benchmarks/ whose own parser takes ARGS."""
    assert re.fullmatch(r"benchmarks\.\w+", name) and (ROOT / f"{name.replace('.', '/')}.py").is_file(), name
    module = importlib.import_module(name)
    namespace = module.build_parser().parse_args(args)
    if name == "benchmarks.presets":
        from sb3_acer import ACER
        from sb3_acer.presets import RUN_KEYS, available_presets

        assert set(namespace.envs) <= set(available_presets()), namespace.envs
        known = set(RUN_KEYS) | set(inspect.signature(ACER.__init__).parameters)
        unknown = set(module.parse_overrides(namespace.set)) - known
        assert not unknown, f"--set names no setting: {sorted(unknown)}"


def _run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from sb3_acer.cli import build_parser, main

    if "--ray-address" in args:  # joins a Ray cluster (docs/guide/distributed.md): parsed only
        build_parser().parse_args(args)
        return
    if args and args[0] == "train":
        args = args + CUTS["train"]
    capsys.readouterr()  # the error below is this command's only
    code = main(args)
    assert code == 0, f"exit code {code}: {capsys.readouterr().err[-2000:]}"
    if "--out" in args:
        out = pathlib.Path(args[args.index("--out") + 1])
        assert out.is_file() and out.stat().st_size > 1000, f"{out} is missing or empty"


def _run_atari(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    from sb3_acer.cli.run_atari import build_parser, main

    if "-h" in args or "--help" in args:
        with pytest.raises(SystemExit) as exit_:
            main(args)
        assert exit_.value.code == 0 and "--num-timesteps" in capsys.readouterr().out
    elif "--ray-address" in args:  # joins a Ray cluster: parsed only
        build_parser().parse_args(args)
    elif build_parser().parse_args(args).device.startswith("cuda") and not torch.cuda.is_available():
        return  # parsed: the run needs a GPU
    else:
        assert main(args + CUTS["run_atari"]).is_file()


def _run_zoo(args: list[str]) -> None:
    from sb3_acer.zoo import main

    kind = "optimize" if args[:1] == ["train"] and "-optimize" in args else args[0] if args else ""
    main(args + ZOO_CUTS.get(kind, []))


def check_command(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Run or check one documented command (see the comment above CUTS); fails on an unknown kind."""
    if argv[:2] == ["nice", "-n"]:
        argv = argv[3:]
    program, args = argv[0], argv[1:]
    if any(argv[: len(prefix)] == prefix for prefix in NOT_RUN):
        return
    if program == "make":
        for target in args:
            assert re.search(rf"^{re.escape(target)}:", _makefile(), re.M), f"no make target {target!r}"
    elif program == "pip":
        _check_pip(args)
    elif program == "ray":  # a Ray cluster's commands (docs/guide/distributed.md): not run
        assert args[:1] in (["start"], ["stop"], ["status"]), f"unexpected ray command {args}"
    elif program == "bash":
        assert (ROOT / args[0]).is_file(), args[0]
        subprocess.run(["bash", "-n", str(ROOT / args[0])], check=True)
    elif program == "sb3-acer" or (program == "python" and args[:2] == ["-m", "sb3_acer"]):
        _run_cli(args if program == "sb3-acer" else args[2:], capsys)
    elif program == "python" and args[:2] == ["-m", "sb3_acer.zoo"]:
        _run_zoo(args[2:])
    elif program == "python" and args[:2] == ["-m", "sb3_acer.run_atari"]:
        _run_atari(args[2:], capsys)
    elif program.split("/")[-1].startswith("python") and args[:1] == ["-m"] and len(args) > 1:
        _check_benchmark(args[1], args[2:])
    else:
        pytest.fail(f"a documented command of no known kind: {shlex.join(argv)}")


SHELL_DOCUMENTS = [path for path in DOCUMENTS if shell_commands(path)]


def test_shell_commands_are_found() -> None:
    readme = [shlex.join(argv) for _, argv in shell_commands(ROOT / "README.md")]
    assert "make run" in readme and "make test" in readme
    assert any(command.startswith("sb3-acer plot ") for command in readme)
    assert any(argv[:1] == ["nice"] for _, argv in shell_commands(ROOT / "docs" / "results.md"))


def test_shell_command_parsing(tmp_path: pathlib.Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "```bash\na --x 1 \\\n    --y 'two words'   # comment\nb && c d\n```\n```python\nnot = 'shell'\n```\n"
    )
    assert shell_commands(doc) == [
        (1, ["a", "--x", "1", "--y", "two words"]),
        (1, ["b"]),
        (1, ["c", "d"]),
    ]


def test_unknown_commands_fail(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(pytest.fail.Exception, match="no known kind: curl example"):
        check_command(["curl", "example"], capsys)
    with pytest.raises(pytest.fail.Exception, match=r"no known kind: python3\.7 -c 1"):
        check_command(["python3.7", "-c", "1"], capsys)
    with pytest.raises(AssertionError, match=r"benchmarks\.nope"):  # no such script in benchmarks/
        check_command(["python", "-m", "benchmarks.nope"], capsys)
    with pytest.raises(pytest.fail.Exception, match=r"no known kind: python benchmarks/presets\.py"):
        check_command(["python", "benchmarks/presets.py"], capsys)  # the scripts run as modules
    with pytest.raises(SystemExit):  # argparse rejects an option the script does not have
        check_command(
            ["python", "-m", "benchmarks.presets", "--envs", "CartPole-v1", "--no-such-flag"], capsys
        )
    with pytest.raises(AssertionError, match=r"exit code 2: error: no model file 'missing\.zip'"):
        check_command(["sb3-acer", "enjoy", "missing.zip"], capsys)
    with pytest.raises(AssertionError, match="no extra 'nope'"):
        check_command(["pip", "install", "-e", ".[nope]"], capsys)
    with pytest.raises(AssertionError, match=r"--set names no setting: \['lerning_rate'\]"):
        check_command(
            ["python", "-m", "benchmarks.presets", "--envs", "CartPole-v1", "--set", "lerning_rate=1"], capsys
        )


@pytest.mark.parametrize("path", SHELL_DOCUMENTS, ids=[str(p.relative_to(ROOT)) for p in SHELL_DOCUMENTS])
def test_shell_commands_run_or_parse(
    path: pathlib.Path,
    tmp_path: pathlib.Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    offline_hub: pathlib.Path,  # push_to_hub and load_from_hub (docs/guide/hub.md) use a local folder
) -> None:
    (tmp_path / "benchmarks").symlink_to(ROOT / "benchmarks")
    (tmp_path / "docs").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    for line, argv in shell_commands(path):
        try:
            check_command(argv, capsys)
        except (AssertionError, SystemExit, subprocess.CalledProcessError) as error:
            pytest.fail(f"{path.relative_to(ROOT)}:{line}: {shlex.join(argv)}: {error!r}")


# ------------------------------------------------------------------------------------- references to code
#: A dotted name in the sb3_acer package (``sb3_acer.common.functional.categorical.retrace_targets``), and a
#: file path in it.
DOTTED = re.compile(r"\bsb3_acer(?:\.[A-Za-z_]\w*)+")
PATH = re.compile(r"\bsb3_acer/[\w/]+\.\w+")


def resolve(dotted: str) -> object:
    """The object ``dotted`` names: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:split]))
        except ModuleNotFoundError:
            continue
        for name in parts[split:]:
            obj = getattr(obj, name)
        return obj
    raise ModuleNotFoundError(dotted)


def test_resolve() -> None:
    from sb3_acer.common.functional import categorical as functional

    assert resolve("sb3_acer.common.functional.categorical.retrace_targets") is functional.retrace_targets
    with pytest.raises(AttributeError):
        resolve("sb3_acer.common.functional.categorical.no_such_function")
    with pytest.raises(AttributeError):
        resolve("sb3_acer.no_such_module")


@pytest.mark.parametrize("path", DOCUMENTS, ids=[str(p.relative_to(ROOT)) for p in DOCUMENTS])
def test_code_references_resolve(path: pathlib.Path) -> None:
    """Every ``sb3_acer.x.y`` named in the docs imports, and every ``sb3_acer/...`` file exists, so a
    moved or renamed module cannot leave a stale reference behind."""
    text = path.read_text()
    stale = []
    for dotted in sorted(set(DOTTED.findall(text))):
        try:
            resolve(dotted)
        except (ImportError, AttributeError) as error:
            stale.append(f"{dotted}: {error!r}")
    stale += [
        f"{file}: no such file" for file in sorted(set(PATH.findall(text))) if not (ROOT / file).exists()
    ]
    assert not stale, f"{path.relative_to(ROOT)} names code that does not exist:\n" + "\n".join(stale)


def test_readme_links_exist() -> None:
    """The README is read on GitHub, outside the site build that checks the pages' links."""
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text())
    local = [target for target in targets if "://" not in target]
    assert "docs/results.md" in local
    assert [target for target in local if not (ROOT / target).exists()] == []


# ----------------------------------------------------------------------------------- roles in docstrings
_ROLES_SPEC = importlib.util.spec_from_file_location(
    "docs_hook_roles", ROOT / "docs" / "hooks" / "sphinx_roles.py"
)
assert _ROLES_SPEC is not None and _ROLES_SPEC.loader is not None
sphinx_roles = importlib.util.module_from_spec(_ROLES_SPEC)
_ROLES_SPEC.loader.exec_module(sphinx_roles)


def test_sphinx_roles_become_optional_links() -> None:
    """The API pages render the docstrings' Sphinx roles as code linked to the entry they name, resolved
    from where the docstring is, and plain code where no name can be found."""
    import griffe

    modules = {
        "__init__.py": "from pkg.records import Stats\n",
        "records.py": "class Stats:\n    def total(self):\n        pass\n",
        "steps.py": "from pkg.records import Stats\n\ndef step():\n    pass\n",
    }
    with griffe.temporary_visited_package("pkg", modules) as package:
        step = package["steps"]["step"]
        stats = package["records"]["Stats"]
        render = sphinx_roles.render_roles

        def link(path: str, shown: str) -> str:
            return f'<autoref identifier="{path}" optional><code>{shown}</code></autoref>'

        assert render(":class:`Stats`, :func:`~pkg.steps.step`", step) == (
            f"{link('pkg.records.Stats', 'Stats')}, {link('pkg.steps.step', 'step')}"
        )
        assert render(":meth:`total` and :meth:`Stats.total`", stats) == (
            f"{link('pkg.records.Stats.total', 'total')} and {link('pkg.records.Stats.total', 'Stats.total')}"
        )
        assert render(":mod:`.records` and :class:`~.records.Stats`", package) == (
            f"{link('pkg.records', 'records')} and {link('pkg.records.Stats', 'Stats')}"
        )
        assert render(":mod:`.records`", step) == link("pkg.records", "records")
        assert render(":data:`UNKNOWN` and :func:`missing()`", step) == "`UNKNOWN` and `missing`"
        assert render("as follows::\n\n    x = 1\n::\n", None) == "as follows:\n\n    x = 1\n::\n"

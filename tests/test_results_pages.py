"""The results in the docs are the records' numbers: every table ``benchmarks/report.py`` writes is up to
date, the results page states no number of its own, and each of its tables comes with its command.

The site itself (``mkdocs build --strict``) is built by ``make test``; here only its page list is checked.
"""

from __future__ import annotations

import json
import pathlib
import re

import pytest
import yaml

from benchmarks import report

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS_PAGE = ROOT / "docs" / "results.md"
PAGES = report.pages()
#: A number in prose: digits not glued to a name (``CartPole-v1``, ``H200``, ``x86``).
NUMBER = re.compile(r"(?<![\w.])[-+\u2212]?\d+(?:,\d{3})*(?:\.\d+)?(?!\w)")
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK_TARGET = re.compile(r"\]\([^)]*\)")


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_tables_equal_what_the_records_give(page: pathlib.Path) -> None:
    text = page.read_text()
    assert report.render(text) == text, (
        f"{page.relative_to(ROOT)} has tables that differ from the records: run python -m benchmarks.report"
    )


def test_the_marked_tables_are_found() -> None:
    results = {m["name"] for m in report.MARKED.finditer(RESULTS_PAGE.read_text())}
    assert set(report.TABLES) - results == {"headline"}
    readme = {m["name"] for m in report.MARKED.finditer((ROOT / "README.md").read_text())}
    assert {"headline", "lunarlander-sentence"} <= readme


def test_render_rewrites_and_rejects_unknown_tables() -> None:
    stale = "a\n<!-- table: soak -->\n| old |\n<!-- /table -->\nb\n"
    rendered = report.render(stale)
    assert "| old |" not in rendered and "62,423" in rendered and rendered.endswith("<!-- /table -->\nb\n")
    with pytest.raises(KeyError):
        report.render("<!-- table: nope -->\n<!-- /table -->\n")


def test_lunarlander_is_reported_as_measured() -> None:
    sentence = report.lunarlander_sentence()
    for fact in ("179.4 ± 21.9 over 43 seeds", "185.21", "51.5 ± 53.3 over 8 seeds"):
        assert fact in sentence
    assert report.lunarlander().count("\n") == 3  # header, rule and one row


def prose(text: str) -> str:
    """``text`` without its generated tables, code blocks, inline code and link targets."""
    text = report.MARKED.sub("", text)
    for pattern in (FENCE, INLINE_CODE, LINK_TARGET):
        text = pattern.sub("", text)
    return text


def test_the_results_page_states_no_number_of_its_own() -> None:
    numbers = NUMBER.findall(prose(RESULTS_PAGE.read_text()))
    assert not numbers, f"numbers typed by hand on docs/results.md (put them in a generated table): {numbers}"


def test_prose_numbers_are_found() -> None:
    assert NUMBER.findall(prose("CartPole-v1 on an H200 scored 1,234.5 and -3 `9` [x](a1.md)")) == [
        "1,234.5",
        "-3",
    ]


def test_every_results_table_has_its_command() -> None:
    sections = re.split(r"^##+ ", RESULTS_PAGE.read_text(), flags=re.M)[1:]
    for section in sections:
        tables = [m["name"] for m in report.MARKED.finditer(section) if m["name"] != "lunarlander-sentence"]
        if tables:
            assert "```bash" in section, f"the section {section.splitlines()[0]!r} gives no command"


def test_every_page_is_in_the_site_navigation() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.BaseLoader)

    def files(nav: object) -> list[str]:
        if isinstance(nav, str):
            return [nav]
        if isinstance(nav, dict):
            return [f for value in nav.values() for f in files(value)]
        return [f for item in nav for f in files(item)] if isinstance(nav, list) else []

    in_nav = set(files(config["nav"]))
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages == in_nav


def test_every_record_names_its_commit() -> None:
    """Each record of ``benchmarks/results`` (not ``anchors.json``, the published figures) names the commit
    its runs were made from: in its ``meta``, at its top, or in each kept run."""
    from benchmarks.provenance import COMMIT_FORMAT

    records = sorted(report.RESULTS.rglob("*.json"))
    assert len(records) > 200
    missing = []
    for path in records:
        if path.name == "anchors.json":
            continue
        record = json.loads(path.read_text())
        commit = record.get("meta", record).get("commit")
        if not (isinstance(commit, str) and COMMIT_FORMAT.match(commit)):
            missing.append(f"{path.relative_to(ROOT)}: {commit!r}")
    assert not missing, "records without their commit:\n" + "\n".join(missing)


def index_rows() -> dict[str, str]:
    """The entries of ``benchmarks/results/README.md``'s tables and their kind (``tuning`` under tuning/)."""
    rows = {}
    for line in (report.RESULTS / "README.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| `"):
            continue
        kind = cells[1] if len(cells) == 3 else "tuning"
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name.rstrip("/")] = kind
    return rows


def test_the_results_index_lists_every_record_and_what_reads_it() -> None:
    rows = index_rows()
    entries = {p.name for p in report.RESULTS.iterdir() if p.name not in ("README.md", "tuning")}
    entries |= {f"tuning/{p.name}" for p in (report.RESULTS / "tuning").iterdir()}
    assert set(rows) == entries, "benchmarks/results/README.md and the folder differ"
    assert {name for name, kind in rows.items() if name.startswith("tuning/")} == {
        name for name, kind in rows.items() if kind == "tuning"
    }
    source = pathlib.Path(report.__file__).read_text()
    reported = {name for name, kind in rows.items() if kind == "reported"}
    assert {name for name in reported if f'"{name}"' not in source} == set(), (
        "reported, yet report.py reads it not"
    )
    assert {name for name in entries if name.endswith(".json") and f'"{name}"' in source} <= reported, (
        "report.py reads a record the index does not call reported"
    )

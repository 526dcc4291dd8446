"""MkDocs hook: publish the changelog, the benchmark scripts and their records with the site.

The project has no public repository URL to link to, so the files the docs cite are part of the site:
``CHANGELOG.md`` as the page ``changelog.md``, and the benchmark scripts, their README and every record
under ``source/benchmarks/`` (a folder of records gets a page listing its files). A link in a page is
written as it works in the repository (``docs/results.md`` links ``../benchmarks/results/mujoco_1m.json``,
``CHANGELOG.md`` links ``docs/tuning.md``); this hook points it at where that file is on the site. MkDocs
then checks every link, so with ``--strict`` a link to a record that does not exist fails the build.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files, InclusionLevel

ROOT = Path(__file__).resolve().parents[2]
#: Repository paths (globs) published as they are, under ``source/``.
PUBLISHED = ("benchmarks/*.py", "benchmarks/*.sh", "benchmarks/README.md", "benchmarks/results/**/*")
#: Repository files published as pages of their own: repository path -> page.
PAGES = {"CHANGELOG.md": "changelog.md"}
#: Published files are linked from the pages, not listed in the navigation.
NOT_IN_NAV = InclusionLevel.NOT_IN_NAV
#: A Markdown link's target: ``](target)`` or ``](target#anchor)``.
LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?P<anchor>#[^)\s]*)?\)")


def site_path(path: str) -> str | None:
    """Where the repository file or folder ``path`` is on the site (``docs/x.md`` is ``x.md``, a folder of
    records its listing page); ``None`` for a path the site does not publish."""
    if path in PAGES:
        return PAGES[path]
    if path.startswith("docs/"):
        return path.removeprefix("docs/")
    if not path.startswith("benchmarks/"):
        return None
    if (ROOT / path).is_dir():
        listing = "README.md" if (ROOT / path / "README.md").is_file() else "index.md"
        return f"source/{path}/{listing}"
    return f"source/{path}"


def repo_path(page: str) -> str:
    """The repository file a site page is written from."""
    for repo, site in PAGES.items():
        if site == page:
            return repo
    return page.removeprefix("source/") if page.startswith("source/") else f"docs/{page}"


def relink(markdown: str, page: str) -> str:
    """``markdown`` of ``page`` with each relative link that names a repository file pointed at that file
    on the site. A link to anything else is left for MkDocs to check."""
    here = posixpath.dirname(repo_path(page))

    def point(match: re.Match[str]) -> str:
        target = match["target"]
        if "://" in target or target.startswith(("/", "mailto:")):
            return match[0]
        on_site = site_path(posixpath.normpath(posixpath.join(here, target)))
        if on_site is None:
            return match[0]
        relative = posixpath.relpath(on_site, posixpath.dirname(page) or ".")
        return f"]({relative}{match['anchor'] or ''})"

    return LINK.sub(point, markdown)


def listing(folder: Path) -> str:
    """A page that links each file and folder of a published folder of records."""
    lines = [f"# `{folder.relative_to(ROOT).as_posix()}/`", ""]
    for entry in sorted(folder.iterdir()):
        name = f"{entry.name}/" if entry.is_dir() else entry.name
        lines.append(f"- [`{name}`]({entry.name})")
    return "\n".join(lines) + "\n"


def on_files(files: Files, config: Any) -> Files:
    """Add the changelog page, the published repository files and a listing page per folder of records."""
    for repo, page in PAGES.items():
        files.append(File.generated(config, page, abs_src_path=str(ROOT / repo)))
    for pattern in PUBLISHED:
        for path in sorted(ROOT.glob(pattern)):
            uri = f"source/{path.relative_to(ROOT).as_posix()}"
            if path.is_file() and "__pycache__" not in path.parts:
                files.append(File.generated(config, uri, abs_src_path=str(path), inclusion=NOT_IN_NAV))
            elif path.is_dir() and not (path / "README.md").is_file():
                files.append(
                    File.generated(config, f"{uri}/index.md", content=listing(path), inclusion=NOT_IN_NAV)
                )
    return files


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Point the page's links to repository files at their copies on the site."""
    return relink(markdown, page.file.src_uri)

"""The results in the docs are the records' numbers: every table ``benchmarks/report.py`` writes is up to
date, the results page states no number of its own, and each of its tables comes with its command.

The site itself (``mkdocs build --strict``) is built by ``make test``; here its page list is checked, and
that every record or script a published page links or names exists (``docs/hooks/sources.py`` publishes
them with the site).
"""

from __future__ import annotations

import importlib.util
import json
import pathlib
import re

import pytest
import yaml

from benchmarks import peers, records, report, summary

ROOT = pathlib.Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("docs_hook_sources", ROOT / "docs" / "hooks" / "sources.py")
assert _SPEC is not None and _SPEC.loader is not None
sources = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(sources)

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
    assert set(report.TABLES) - results == {"headline", "headline-sentence"}
    assert {"summary", "summary-figure", "summary-checks", "minatar-wallclock", "mujoco-wallclock"} <= results
    readme = {m["name"] for m in report.MARKED.finditer((ROOT / "README.md").read_text())}
    assert {"headline", "lunarlander-sentence", "headline-sentence"} <= readme
    home = {m["name"] for m in report.MARKED.finditer((ROOT / "docs" / "index.md").read_text())}
    assert home == {"headline-sentence"}


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
    assert pages | set(sources.PAGES.values()) == in_nav  # and the pages the hook makes


def test_every_record_names_its_commit() -> None:
    """Each record of ``benchmarks/results`` (not ``anchors.json``, the published figures) names the commit
    its runs were made from: in its ``meta``, at its top, or in each kept run."""
    from benchmarks.provenance import COMMIT_FORMAT

    files = sorted(records.RESULTS.rglob("*.json"))
    assert len(files) > 200
    missing = []
    for path in files:
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
    for line in (records.RESULTS / "README.md").read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| `"):
            continue
        kind = cells[1] if len(cells) == 3 else "tuning"
        for name in re.findall(r"`([^`]+)`", cells[0]):
            rows[name.rstrip("/")] = kind
    return rows


def test_the_results_index_lists_every_record_and_what_reads_it() -> None:
    rows = index_rows()
    entries = {p.name for p in records.RESULTS.iterdir() if p.name not in ("README.md", "tuning")}
    entries |= {f"tuning/{p.name}" for p in (records.RESULTS / "tuning").iterdir()}
    assert set(rows) == entries, "benchmarks/results/README.md and the folder differ"
    assert {name for name, kind in rows.items() if name.startswith("tuning/")} == {
        name for name, kind in rows.items() if kind == "tuning"
    }
    source = "".join(pathlib.Path(m.__file__).read_text() for m in (report, records, summary, peers))
    reported = {name for name, kind in rows.items() if kind == "reported"}
    assert {name for name in reported if f'"{name}"' not in source} == set(), (
        "reported, yet report.py and its modules read it not"
    )
    assert {name for name in entries if name.endswith(".json") and f'"{name}"' in source} <= reported, (
        "report.py or its modules read a record the index does not call reported"
    )


def test_the_hook_points_repository_links_at_the_published_files() -> None:
    text = (
        "[a](../benchmarks/results/mujoco_1m.json) [b](../benchmarks/results/tuning/mujoco_tuning_1m/) "
        "[c](results.md#mujoco) [d](https://example.org/x.json) [e](../benchmarks/results/README.md)"
    )
    assert sources.relink(text, "tuning.md") == (
        "[a](source/benchmarks/results/mujoco_1m.json) "
        "[b](source/benchmarks/results/tuning/mujoco_tuning_1m/index.md) "
        "[c](results.md#mujoco) [d](https://example.org/x.json) [e](source/benchmarks/results/README.md)"
    )
    assert sources.relink("[t](docs/tuning.md#mujoco) [r](benchmarks/results/soak.json)", "changelog.md") == (
        "[t](tuning.md#mujoco) [r](source/benchmarks/results/soak.json)"
    )
    readme = "[r](../docs/results.md) [i](results/README.md) [s](presets.py)"
    assert sources.relink(readme, "source/benchmarks/README.md") == (
        "[r](../../results.md) [i](results/README.md) [s](presets.py)"
    )
    assert sources.site_path("sb3_acer/acer/acer.py") is None  # not published: the link is left to MkDocs


#: The repository's Markdown files that the site publishes, each with the page it becomes.
PUBLISHED_PAGES = {
    **{p: str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")},
    ROOT / "CHANGELOG.md": "changelog.md",
    ROOT / "benchmarks" / "README.md": "source/benchmarks/README.md",
    records.RESULTS / "README.md": "source/benchmarks/results/README.md",
}


@pytest.mark.parametrize(
    "path", list(PUBLISHED_PAGES), ids=[str(p.relative_to(ROOT)) for p in PUBLISHED_PAGES]
)
def test_every_linked_record_and_script_exists(path: pathlib.Path) -> None:
    """Each link of a published page to a repository file names one that exists (the strict site build
    checks the same on the built site); a renamed or moved record cannot leave a dead link behind."""
    page = PUBLISHED_PAGES[path]
    here = path.parent
    dead = []
    for target in re.findall(r"\]\(([^)#\s]+)", path.read_text()):
        if "://" in target or target.startswith(("/", "mailto:")):
            continue
        resolved = (here / target).resolve()
        made_by_the_hook = {ROOT / "docs" / made for made in sources.PAGES.values()}
        if ROOT in resolved.parents and not resolved.exists() and resolved not in made_by_the_hook:
            dead.append(target)
    assert not dead, f"{page}: links to files that do not exist: {dead}"


@pytest.mark.parametrize("page", ["results.md", "tuning.md"])
def test_every_benchmark_path_named_on_the_page_exists(page: str) -> None:
    """The paths of scripts and records a reader sees (in prose and inline code) exist."""
    text = FENCE.sub("", (ROOT / "docs" / page).read_text())
    named = set(re.findall(r"\bbenchmarks/[\w./-]*\w/?", text))
    assert named, page
    assert sorted(name for name in named if not (ROOT / name).exists()) == []


def test_the_summary_compares_each_family_with_its_best_peer() -> None:
    rows = {row.env: row for row in summary.comparisons()}
    assert (rows["CartPole-v1"].peer, rows["CartPole-v1"].acer, rows["CartPole-v1"].peer_value) == (
        "PPO",
        19044.0,
        30760.0,
    )
    assert (rows["Acrobot-v1"].peer, rows["Acrobot-v1"].acer_leads) == ("A2C", True)  # fewer steps lead
    assert (rows["Pendulum-v1"].peer, rows["Pendulum-v1"].acer_leads) == ("SAC", False)
    assert (rows["LunarLander-v3"].peer, rows["LunarLander-v3"].peer_value) == ("SB2 zoo's agent", 185.21)
    assert not rows["Walker2d-v5"].acer_leads and rows["Ant-v5"].acer_leads
    assert {row.family for row in rows.values()} == {
        "Classic control",
        "Box2D",
        "Continuous control",
        "MuJoCo",
        "MinAtar",
        "Atari",
    }
    table = report.summary()
    assert "| MuJoCo | Walker2d-v5 | deterministic evaluation, 1M steps | 2,234.1 | PPO | 3,255.2 |" in table
    assert "| Classic control | CartPole-v1 | median steps to 475 | **19,044** | PPO | 30,760 |" in table
    assert summary.best({"a": 3.0, "b": 1.0}, lower_is_better=True) == ("b", 1.0)
    assert "on 5 of 5 MinAtar games" in report.headline_sentence()
    assert "PPO on 4 of 5 MuJoCo tasks" in report.headline_sentence()
    assert "commit `d49f258`" in report.summary_figure()


def test_published_figures_stand_beside_our_runs_of_the_same_peer() -> None:
    table = report.mujoco()
    assert "| Hopper-v5 | PPO | 3 | 1010.3 ± 20.8 | 2410.4 ± 10.0 | 999.4 ± 9.5 | 1.00 |" in table
    assert "| Ant-v5 | PPO | 3 | 326.1 ± 151.9 | 1327.2 ± 451.6 | 285.9 ± 89.6 | 1.00 |" in table
    assert "| Ant-v5 | TD3 (not run here) | — | — | 5813.3 ± 589.8 | — | — |" in table
    assert "| InvertedPendulum-v5 | PPO | 3 | 625.7 ± 442.0 | — |" in table  # the zoo publishes none
    # one sentence per task where our PPO falls short of the published agent, with the agent's settings
    lines = peers.shortfalls(records.mujoco_groups(), records.zoo_mujoco(), "final_eval_mean")
    assert [line.split("**")[1] for line in lines] == ["Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5"]
    assert "TimeFeatureWrapper" in lines[2] and "the zoo's 1327.2 ± 451.6 on -v3" in lines[3]
    assert "no published figure" in report.minatar_published()


def test_shortfalls_name_only_the_peers_below_their_figure() -> None:
    zoo = {
        "version": "-v3",
        "scores": {"T": {"PPO": [10.0, 1.0], "SAC": [99.0, 1.0]}},
        "ppo_config": {"T": "cfg"},
        "why_ours_differs": {"T": "why"},
    }
    run = {"final_eval_mean": 9.0}
    (line,) = peers.shortfalls({"T": {"ACER": [run], "PPO": [run]}}, zoo, "final_eval_mean")
    assert line == (
        "- **T**: our PPO 9.0 ± 0.0 over 1 seeds, the zoo's 10.0 ± 1.0 on -v3. Published agent: cfg. "
        "The gap: why.\n"
    )  # SAC was not run: no sentence
    assert peers.shortfalls({"T": {"PPO": [{"final_eval_mean": 10.0}]}}, zoo, "final_eval_mean") == []


def _run(algo: str, seed: int, seconds: list[float], returns: list[float], train: float) -> dict[str, object]:
    return dict(
        algo=algo,
        seed=seed,
        train_seconds=train,
        final_train_return=returns[-1],
        curve_seconds=seconds,
        curve_returns=returns,
        curve_steps=[100 * (i + 1) for i in range(len(seconds))],
    )


def test_equal_wall_clock_reads_each_curve_at_the_fastest_runs_seconds() -> None:
    fast = _run("A2C", 0, [10.0, 20.0], [1.0, 3.0], train=20.0)
    slow = _run("ACER", 0, [10.0, 30.0, 50.0], [0.0, 4.0, 9.0], train=50.0)
    timed = peers.equal_time({"ACER": [slow], "A2C": [fast]})
    assert timed.fastest == "A2C" and timed.seconds == {0: 20.0}
    assert timed.returns == {"ACER": {0: 2.0}, "A2C": {0: 3.0}}  # ACER halfway between 0 and 4
    assert timed.steps["ACER"] == {0: 150.0}
    assert peers.curve_at(slow, 5.0, "returns") is None  # before its first episode ended
    assert peers.count_leads(timed.returns["ACER"], timed.returns["A2C"]) == (0, 0, 1)


def test_seed_counts_pair_the_seeds_and_count_ties_apart() -> None:
    count = peers.count_leads({1: 5.0, 2: 3.0, 3: 2.0, 4: 1.0}, {1: 4.0, 2: 3.0, 3: 2.5, 5: 0.0})
    assert count == (1, 1, 3) and str(count) == "1 of 3, level on 1"
    assert str(peers.SeedCount(2, 0, 3)) == "2 of 3"
    assert peers.count_leads({1: None}, {1: 0.0}) == (0, 0, 1)


def test_the_seed_lines_and_the_wall_clock_rows_count_from_the_records() -> None:
    assert "ACER's final return led PPO's on 14 of 15; A2C's on 15 of 15; DQN's on 15 of 15" in (
        report.minatar_seeds()
    )
    assert "led PPO's on 11 of 15, level on 1." in report.mujoco_seeds()
    assert (
        "| Walker2d-v5 | PPO | 1 of 3 | 10: 2288.2 / 4276.8; 11: 2669.2 / 2373.8; 12: 1745.0 / 3115.1 |"
        in (report.mujoco_seeds())
    )
    wallclock = report.minatar_wallclock()
    assert (
        "| MinAtar/Breakout-v1 | **A2C** | 135 | 5.0 ± 0.2 | 990k | 4.9 ± 0.0 | 3 of 3 | yes |" in wallclock
    )
    assert (
        "| MinAtar/Freeway-v1 | PPO | 167 | 30.4 ± 1.9 | 632k | 32.5 ± 4.2 | 0 of 3 | no: its runs 7091701"
        in (wallclock)
    )
    assert "leads every peer's on 2 of 5 games (MinAtar/SpaceInvaders-v1, MinAtar/Breakout-v1)" in wallclock
    assert "on 3 of 5 tasks (Hopper-v5, HalfCheetah-v5, Ant-v5)" in report.mujoco_wallclock()
    assert (
        "its runs made at commits `0b2c749`, `671fe7c`, `7091701`, `a017c1a`, drawn by"
        in report.minatar_figures()
    )
    assert report.mujoco_figures().startswith("![InvertedPendulum-v5](images/mujoco_invertedpendulum.png)\n")
    assert summary.checks_sentence().startswith(
        "Our PPO runs score below the zoo's published PPO agent on 4 of the 4 MuJoCo tasks it publishes"
    )


def tuning_seeds() -> set[int]:
    """Every seed a tuning record or the tuning page names (``"seed": N``, ``--seeds A B``, ``seeds A-B``,
    ``seed N``)."""
    seeds: set[int] = set()
    for path in (records.RESULTS / "tuning").rglob("*.json"):
        text = path.read_text()
        seeds |= {int(n) for n in re.findall(r'"seed": (\d+)', text)}
        for listed in re.findall(r"--seeds((?: \d+)+)", text):
            seeds |= {int(n) for n in listed.split()}
    page = (ROOT / "docs" / "tuning.md").read_text()
    for first, last in re.findall(r"\bseeds? (\d+)(?:-(\d+))?", page):
        seeds |= set(range(int(first), int(last or first) + 1))
    return seeds


def test_the_report_seeds_are_apart_from_every_tuning_seed() -> None:
    from benchmarks import report_runs

    seeds = report_runs.report_seeds()
    assert len(seeds) == len(set(seeds)) == 5
    tuned = tuning_seeds()
    assert {0, 1, 10, 11, 12} <= tuned  # the scan finds the seeds the tuning runs used
    assert set(seeds) & tuned == set()


def test_the_report_runs_are_made_one_at_a_time_on_the_report_seeds_only() -> None:
    from benchmarks import report_runs

    args = report_runs.build_parser().parse_args(["mujoco", "--envs", "Ant-v5", "--timesteps", "3000"])
    script, argv = report_runs.script_argv(args)
    assert script == "mujoco_v5"
    assert argv == [
        *["--envs", "Ant-v5", "--algos", "ACER", "PPO", "PPO-TimeFeature", "--seeds", "500", "501", "502"],
        *["503", "504", "--timesteps", "3000", "--eval-every", "50000", "--jobs", "1"],
        *[
            "--run-dir",
            "benchmarks/results/mujoco_report_runs",
            "--out",
            "benchmarks/results/mujoco_report.json",
        ],
    ]
    args = report_runs.build_parser().parse_args(["minatar", "--seeds", "501", "--eval-episodes", "2"])
    assert report_runs.script_argv(args)[1][:7] == [
        "--algos",
        "ACER",
        "PPO",
        "--seeds",
        "501",
        "--timesteps",
        "1000000",
    ]
    with pytest.raises(SystemExit, match=r"--seeds \[10\]: not report seeds; the report seeds are \[500,"):
        report_runs.script_argv(report_runs.build_parser().parse_args(["minatar", "--seeds", "10", "501"]))

"""What a skeptic asks of the MinAtar and MuJoCo comparisons, answered from the records: each peer's
published figure beside our run of it, every algorithm's return at equal wall-clock, on how many seeds ACER
led, and whether the runs compared were made side by side.

Pure functions of the runs of a record, grouped by env and then by algorithm (``records.groups``), of the
record's ``meta`` and of ``anchors.json``'s published figures; ``benchmarks/report.py`` reads the records
and writes what these functions build into the docs.

Equal wall-clock: on each seed, the algorithm whose run took the fewest training seconds sets the time, and
every algorithm's training return (the mean of its last hundred episodes) is read off its curve at that
time, linearly interpolated between the curve's points (the records hold about a hundred per run, each with
the training wall-clock there). The runs of one seed were made one after the other, so they share the
machine's load more nearly than runs of other seeds do.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from benchmarks.common import markdown_table, mean_std
from benchmarks.records import steps as step_count

Runs = list[dict[str, Any]]
#: The runs of a record by env id, then by algorithm.
Grouped = dict[str, dict[str, Runs]]


# ------------------------------------------------------------------------------------ published figures


def published_cell(figure: Sequence[float] | None) -> str:
    """A published ``(mean, std)`` as ``mean ± std``, or ``—`` where none is published."""
    return "—" if figure is None else f"{figure[0]:.1f} ± {figure[1]:.1f}"


def shortfalls(grouped: Grouped, zoo: dict[str, Any], key: str) -> list[str]:
    """One sentence per task where our run of a peer scores below that peer's published agent, with the
    published agent's settings and what the records say of the gap (``zoo``: ``anchors.json``'s
    ``sb3_zoo_mujoco``)."""
    lines = []
    for env_id, by_algo in grouped.items():
        for algo, figure in zoo["scores"].get(env_id, {}).items():
            if algo not in by_algo:
                continue
            ours = statistics.fmean(run[key] for run in by_algo[algo])
            if ours < figure[0]:
                lines.append(
                    f"- **{env_id}**: our {algo} {mean_std([run[key] for run in by_algo[algo]])} over "
                    f"{len(by_algo[algo])} seeds, the zoo's {published_cell(figure)} on {zoo['version']}. "
                    f"Published agent: {zoo['ppo_config'][env_id]}. "
                    f"The gap: {zoo['why_ours_differs'][env_id]}.\n"
                )
    return lines


# ---------------------------------------------------------------------------------- seeds and sessions


def by_seed(runs: Runs) -> dict[int, dict[str, Any]]:
    return {run["seed"]: run for run in runs}


def common_seeds(by_algo: dict[str, Runs]) -> list[int]:
    """The seeds every algorithm of ``by_algo`` ran."""
    seeds = [set(by_seed(runs)) for runs in by_algo.values()]
    return sorted(set.intersection(*seeds))


class SeedCount(NamedTuple):
    """On how many paired seeds ACER's value was above the peer's, level with it, of how many."""

    led: int
    level: int
    seeds: int

    def __str__(self) -> str:
        level = f", level on {self.level}" if self.level else ""
        return f"{self.led} of {self.seeds}{level}"


def count_leads(acer: dict[int, float | None], peer: dict[int, float | None]) -> SeedCount:
    """Seed by seed, ACER's value against the peer's (a missing value, ``None``, leads nowhere)."""
    pairs = [(acer[seed], peer[seed]) for seed in sorted(acer) if seed in peer]
    led = sum(a is not None and (b is None or a > b) for a, b in pairs)
    level = sum(a is not None and a == b for a, b in pairs)
    return SeedCount(led, level, len(pairs))


def seed_table(grouped: Grouped, key: str, digits: int = 1) -> str:
    """Per env and peer: on how many seeds ACER's ``key`` led, with every seed's value of both."""
    rows = []
    for env_id, by_algo in grouped.items():
        acer = {seed: run[key] for seed, run in by_seed(by_algo["ACER"]).items()}
        for algo, runs in by_algo.items():
            if algo == "ACER":
                continue
            peer = {seed: run[key] for seed, run in by_seed(runs).items()}
            seeds = sorted(set(acer) & set(peer))
            values = [f"{seed}: {acer[seed]:.{digits}f} / {peer[seed]:.{digits}f}" for seed in seeds]
            rows.append([env_id, algo, str(count_leads(acer, peer)), "; ".join(values)])
    header = ["env", "peer", "seeds ACER led", "seed: ACER / peer"]
    return markdown_table(header, rows, "llrl")


def family_seed_counts(grouped: Grouped, key: str) -> dict[str, SeedCount]:
    """Per peer, over the family's envs and seeds: on how many ACER's ``key`` led the peer's."""
    totals: dict[str, SeedCount] = {}
    for by_algo in grouped.values():
        acer = {seed: run[key] for seed, run in by_seed(by_algo["ACER"]).items()}
        for algo, runs in by_algo.items():
            if algo != "ACER":
                count = count_leads(acer, {seed: run[key] for seed, run in by_seed(runs).items()})
                total = totals.get(algo, SeedCount(0, 0, 0))
                totals[algo] = SeedCount(*(a + b for a, b in zip(total, count, strict=True)))
    return totals


def family_seed_line(family: str, grouped: Grouped, key: str, measure: str) -> str:
    """One sentence: over the family's envs and seeds, on how many ACER's ``key`` led each peer's."""
    parts = [f"{algo}'s on {count}" for algo, count in family_seed_counts(grouped, key).items()]
    return f"{family}: over every env and seed (seeds paired), ACER's {measure} led {'; '.join(parts)}.\n"


def run_name(env_id: str, algo: str, seed: int) -> str:
    """A kept run's file name (``--run-dir``): MinAtar's by game, MuJoCo's by env id."""
    game = env_id.removeprefix("MinAtar/").removesuffix("-v1") if env_id.startswith("MinAtar/") else env_id
    return f"{game}_{algo}_{seed}.json"


def session(meta: dict[str, Any], env_id: str, runs: Runs) -> tuple[set[str], list[str]]:
    """The commits the kept runs were made from and their finishing times (from ``meta["kept_runs"]``)."""
    kept = [meta["kept_runs"][run_name(env_id, run["algo"], run["seed"])] for run in runs]
    return {run["commit"] for run in kept}, sorted(run["finished"] for run in kept)


def made_beside(meta: dict[str, Any], env_id: str, mine: Runs, acer: Runs) -> str:
    """``yes`` where ``mine`` and ACER's runs of ``env_id`` come from one commit and finished interleaved
    (each algorithm's first run finished before the other's last), else when each was made."""
    commits, finished = session(meta, env_id, mine)
    acer_commits, acer_finished = session(meta, env_id, acer)
    if commits == acer_commits and finished[0] < acer_finished[-1] and acer_finished[0] < finished[-1]:
        return "yes"
    return f"no: its runs {when(commits, finished)}, ACER's {when(acer_commits, acer_finished)}"


def when(commits: set[str], finished: list[str]) -> str:
    """``commit (first day to last day)`` of a set of kept runs."""
    days = sorted({time[:10] for time in finished})
    span = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    return f"{', '.join(sorted(commits))} ({span})"


# ------------------------------------------------------------------------------------ equal wall-clock


def curve_at(run: dict[str, Any], seconds: float, curve: str) -> float | None:
    """``run``'s ``curve_<curve>`` at ``seconds`` of training wall-clock, interpolated between the curve's
    points; ``None`` before its first point (no training episode had ended yet)."""
    times = run["curve_seconds"]
    if not times or seconds < times[0]:
        return None
    return float(np.interp(seconds, times, run[f"curve_{curve}"]))


class EqualTime(NamedTuple):
    """Every algorithm's training return per seed at the seconds the fastest run of that seed took."""

    seconds: dict[int, float]
    returns: dict[str, dict[int, float | None]]
    steps: dict[str, dict[int, float | None]]
    fastest: str


def equal_time(by_algo: dict[str, Runs]) -> EqualTime:
    seeds = common_seeds(by_algo)
    runs = {algo: by_seed(mine) for algo, mine in by_algo.items()}
    seconds = {seed: min(runs[algo][seed]["train_seconds"] for algo in runs) for seed in seeds}
    returns = {
        algo: {seed: curve_at(mine[seed], seconds[seed], "returns") for seed in seeds}
        for algo, mine in runs.items()
    }
    steps = {
        algo: {seed: curve_at(mine[seed], seconds[seed], "steps") for seed in seeds}
        for algo, mine in runs.items()
    }
    median = {algo: statistics.median(run["train_seconds"] for run in mine) for algo, mine in by_algo.items()}
    return EqualTime(seconds, returns, steps, min(median, key=lambda algo: median[algo]))


def summarise(values: dict[int, float | None], digits: int = 1) -> str:
    """Mean ± std of the seeds' values, ``—`` if a seed has none."""
    known = [value for value in values.values() if value is not None]
    return mean_std(known, digits) if len(known) == len(values) and known else "—"


def wallclock_table(grouped: Grouped, meta: dict[str, Any]) -> str:
    """One row per env and algorithm: its training return at the fastest run's seconds, the env steps it
    had taken by then, its return at its whole budget, the seeds ACER led on at that time, and whether its
    runs were made beside ACER's."""
    rows = []
    for env_id, by_algo in grouped.items():
        timed = equal_time(by_algo)
        seconds = statistics.median(timed.seconds.values())
        for algo, runs in by_algo.items():
            steps = [value for value in timed.steps[algo].values() if value is not None]
            rows.append(
                [
                    env_id,
                    f"**{algo}**" if algo == timed.fastest else algo,
                    f"{seconds:,.0f}",
                    summarise(timed.returns[algo]),
                    step_count(statistics.fmean(steps)) if steps else "—",
                    mean_std([run["final_train_return"] for run in runs]),
                    "—" if algo == "ACER" else str(count_leads(timed.returns["ACER"], timed.returns[algo])),
                    "—" if algo == "ACER" else made_beside(meta, env_id, runs, by_algo["ACER"]),
                ]
            )
    header = [
        "env",
        "algorithm (bold: fastest)",
        "seconds (median)",
        "return then",
        "env steps by then",
        "return at its budget",
        "seeds ACER led then",
        "made beside ACER's runs",
    ]
    return markdown_table(header, rows, "llrrrrrl")


def wallclock_leads(grouped: Grouped) -> list[str]:
    """The envs where ACER's mean training return at equal wall-clock leads every peer's."""
    leads = []
    for env_id, by_algo in grouped.items():
        means = {
            algo: statistics.fmean(v for v in values.values() if v is not None)
            for algo, values in equal_time(by_algo).returns.items()
        }
        acer = means.pop("ACER")
        if all(acer > mean for mean in means.values()):
            leads.append(env_id)
    return leads


def wallclock_line(family: str, grouped: Grouped, unit: str) -> str:
    """One sentence: on how many of the family's envs ACER's mean return at equal wall-clock leads every
    peer's."""
    leads = wallclock_leads(grouped)
    where = f" ({', '.join(leads)})" if leads else ""
    return (
        f"{family}: at the seconds the fastest algorithm took for its budget, ACER's training return leads "
        f"every peer's on {len(leads)} of {len(grouped)} {unit}{where}.\n"
    )

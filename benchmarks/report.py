"""Write the results tables of the docs from the records in ``benchmarks/results/*.json``.

Each table sits in a Markdown page between ``<!-- table: NAME -->`` and ``<!-- /table -->``; this script
replaces what is between the two markers with the table ``TABLES[NAME]`` builds from the JSON records, so
no number on a results table is typed by hand. ``tests/docs/test_results_pages.py`` checks that every page
equals what this script writes.

Usage::

    python -m benchmarks.report            # rewrite the tables in README.md and docs/**/*.md
    python -m benchmarks.report --check    # exit 1 if a page differs from what would be written
    python -m benchmarks.report --plots    # also draw docs/images/lunarlander.png (needs matplotlib)
"""

from __future__ import annotations

import argparse
import ast
import json
import pathlib
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from benchmarks.common import markdown_table as table
from benchmarks.common import mean_std as pm

ROOT = pathlib.Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
#: ``<!-- table: NAME -->``, the generated text, ``<!-- /table -->``.
MARKED = re.compile(r"(<!-- table: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)
CLASSIC = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0")
SB2_FILES = {
    "CartPole-v1": "sb2_reference_cartpole.json",
    "Acrobot-v1": "sb2_reference_acrobot.json",
    "MountainCar-v0": "sb2_reference_mountaincar.json",
    "LunarLander-v3": "sb2_reference_lunarlander.json",
}
#: The SB2 zoo's env id for ours (its LunarLander was v2).
ZOO_ID = {"LunarLander-v3": "LunarLander-v2"}


def load(name: str) -> Any:
    """One record of ``benchmarks/results``."""
    return json.loads((RESULTS / name).read_text())


def steps(n: float) -> str:
    """A step count as ``40k`` or ``1M``."""
    return f"{n / 1e6:.3g}M" if n >= 1e6 else f"{n / 1e3:.3g}k"


def by_env(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        grouped.setdefault(record["env_id"], []).append(record)
    return grouped


def column(records: list[dict[str, Any]], key: str) -> list[float]:
    return [record[key] for record in records]


def zoo_score(env_id: str) -> str:
    mean, std = load("anchors.json")["sb2_zoo_acer"]["scores"][ZOO_ID.get(env_id, env_id)]
    if mean is None:
        return "—"
    return f"{mean:g}" if std is None else f"{mean:g} ± {std:g}"


def sb2_own(env_id: str) -> str:
    runs = load(SB2_FILES[env_id])["results"]
    return f"{pm(column(runs, 'eval_stochastic_mean'))} ({len(runs)} seeds)"


def preset_rows(records: list[dict[str, Any]]) -> list[list[object]]:
    rows: list[list[object]] = []
    for env_id, runs in by_env(records).items():
        rows.append(
            [
                env_id,
                steps(runs[0]["n_timesteps"]),
                len(runs),
                f"**{pm(column(runs, 'eval_stochastic_mean'))}**",
                pm(column(runs, "eval_deterministic_mean")),
                zoo_score(env_id),
                sb2_own(env_id),
            ]
        )
    return rows


PRESET_HEADER = [
    "env",
    "steps",
    "seeds",
    "sb3-acer, sampled actions",
    "sb3-acer, greedy",
    "SB2 zoo's agent",
    "SB2's own ACER, zoo settings",
]


def preset_table(record: str) -> str:
    """The presets of a ``presets.py`` record beside the two anchors."""
    return table(PRESET_HEADER, preset_rows(load(record)["results"]), "lrrrrrr")


def classic_control() -> str:
    return preset_table("presets_classic_control.json")


def mountaincar_fresh_seeds() -> str:
    """The MountainCar preset on seeds fixed before the run (it was tuned on one of the classic-control
    table's seeds)."""
    return preset_table("presets_mountaincar_fresh_seeds.json")


def lunarlander() -> str:
    return preset_table("presets_lunarlander.json")


def headline() -> str:
    """The README's table: every preset beside the two anchors."""
    rows = []
    for name in ("presets_classic_control.json", "presets_lunarlander.json"):
        for env_id, runs in by_env(load(name)["results"]).items():
            score = pm(column(runs, "eval_stochastic_mean"))
            rows.append(
                [
                    env_id,
                    steps(runs[0]["n_timesteps"]),
                    f"**{score}** ({len(runs)} seeds)",
                    zoo_score(env_id),
                    sb2_own(env_id),
                ]
            )
    header = ["env", "steps", "sb3-acer preset", "SB2 zoo's agent", "SB2's own ACER, zoo settings"]
    return table(header, rows, "lrrrr")


def lunarlander_sentence() -> str:
    runs = load("presets_lunarlander.json")["results"]
    sb2 = load(SB2_FILES["LunarLander-v3"])["results"]
    return (
        f"The preset scores {pm(column(runs, 'eval_stochastic_mean'))} over {len(runs)} seeds, below the "
        f"SB2 zoo's one trained agent at {zoo_score('LunarLander-v3')}; SB2's own ACER with the zoo's "
        f"settings scores {pm(column(sb2, 'eval_stochastic_mean'))} over {len(sb2)} seeds.\n"
    )


def middle(values: Sequence[float | None]) -> float | None:
    """The median (the upper one of an even count), an unsolved seed (``None``) counting as never reaching
    the threshold: ``None`` if that is the median."""
    return sorted(values, key=lambda v: float("inf") if v is None else v)[len(values) // 2]


def median_or_never(values: Sequence[float | None]) -> str:
    """The median of :func:`middle`, as a step count or ``never``."""
    median = middle(values)
    return "never" if median is None else f"{median:,.0f}"


def thresholds() -> dict[str, float]:
    """``THRESHOLDS`` of ``benchmarks/classic_control.py``, read without importing it (it needs torch)."""
    tree = ast.parse((ROOT / "benchmarks" / "classic_control.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "THRESHOLDS" for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError("benchmarks/classic_control.py defines no THRESHOLDS")


ALGORITHMS = ("ACER", "PPO", "A2C", "SAC")


def threshold_rows(
    records: list[dict[str, Any]], middle_columns: Callable[[list[dict[str, Any]], dict[str, Any]], list[str]]
) -> list[list[object]]:
    """One row per environment and algorithm of a ``classic_control.py`` record: env, threshold, algorithm,
    seeds solved, median steps to the threshold, then ``middle_columns(runs, runs_by_algorithm)``, then the
    final evaluation."""
    rows: list[list[object]] = []
    for env_id, runs in by_env(records).items():
        by_algo = {algo: [run for run in runs if run["algo"] == algo] for algo in ALGORITHMS}
        by_algo = {algo: mine for algo, mine in by_algo.items() if mine}
        for algo, mine in by_algo.items():
            reached = column(mine, "steps_to_threshold")
            rows.append(
                [
                    env_id,
                    f"{thresholds()[env_id]:g}",
                    "**ACER**" if algo == "ACER" else algo,
                    f"{sum(v is not None for v in reached)}/{len(mine)}",
                    median_or_never(reached),
                    *middle_columns(mine, by_algo),
                    pm(column(mine, "final_eval_mean")),
                ]
            )
    return rows


def against_a2c_ppo() -> str:
    rows = []
    for name in ("classic_control_cartpole.json", "classic_control_acrobot.json"):
        rows += threshold_rows(load(name)["results"], lambda mine, _: [steps(mine[0]["n_timesteps"])])
    header = ["env", "threshold", "algorithm", "seeds solved", "median steps to it", "budget", "final eval"]
    return table(header, rows, "lrlrrrr")


def _seconds_and_ratio(mine: list[dict[str, Any]], by_algo: dict[str, Any]) -> list[str]:
    """The median seconds to the threshold and its ratio to PPO's in the same run."""
    seconds = middle(column(mine, "seconds_to_threshold"))
    ppo_seconds = middle(column(by_algo["PPO"], "seconds_to_threshold"))
    if seconds is None:
        return ["never", "—"]
    return [f"{seconds:.1f}", "—" if ppo_seconds is None else f"{seconds / ppo_seconds:.2f}"]


def fresh_seeds() -> str:
    """The classic-control presets on seeds they were not tuned on, with PPO and A2C in the same run."""
    rows = []
    for name in ("classic_control_cartpole_fresh_seeds.json", "classic_control_acrobot_fresh_seeds.json"):
        rows += threshold_rows(load(name)["results"], _seconds_and_ratio)
    header = ["env", "threshold", "algorithm", "seeds solved", "median steps to it", "median seconds"]
    return table([*header, "seconds / PPO's", "final eval"], rows, "lrlrrrrr")


def pendulum() -> str:
    """Pendulum-v1's preset on seeds it was not tuned on, beside the zoo's PPO, A2C and SAC in one run."""
    rows = threshold_rows(
        load("classic_control_pendulum.json")["results"],
        lambda mine, by_algo: [steps(mine[0]["n_timesteps"]), *_seconds_and_ratio(mine, by_algo)],
    )
    header = [
        "env",
        "threshold",
        "algorithm",
        "seeds solved",
        "median steps to it",
        "budget",
        "median seconds",
    ]
    return table([*header, "seconds / PPO's", "final eval"], rows, "lrlrrrrrr")


def recurrent() -> str:
    rows = []
    for name in ("recurrent_cartpole.json", "recurrent_cartpole_control.json"):
        records = load(name)["results"]
        for policy in dict.fromkeys(column(records, "policy")):
            runs = [run for run in records if run["policy"] == policy]
            observed = "x, x_dot, theta, theta_dot" if runs[0]["velocities"] else "x, theta"
            rows.append([observed, policy, len(runs), pm(column(runs, "final_eval_mean"))])
    return table(["observation", "policy", "seeds", "final eval"], rows, "llrr")


def atari_anchors() -> str:
    anchors = load("anchors.json")
    rows = []
    for env_id, paper in anchors["ppo_paper_acer"]["scores"].items():
        baselines = anchors["baselines_bench_acer"]["scores"][env_id]
        rows.append(
            [
                env_id.removesuffix("NoFrameskip-v4"),
                f"{paper:g}",
                zoo_score(env_id),
                "—" if baselines is None else f"{baselines:g}",
            ]
        )
    header = ["game", "PPO paper, ACER (40M frames)", "SB2 zoo ACER", "openai/baselines ACER"]
    return table(header, rows, "lrrr")


def pong() -> str:
    record = load("pong_h200.json")
    rows = [
        [
            " to ".join(steps(int(end)) if int(end) else "0" for end in row["steps"].split("-")),
            row["games"],
            f"{row['mean_score']:g}",
            f"{row['best_score']:g}",
        ]
        for row in record["training_scores_per_100k_steps"]
    ]
    evaluations = record["evaluations"]
    rows += [
        [f"evaluation at {steps(step)}", len(scores), f"{mean:g}", f"{max(scores):g}"]
        for step, scores, mean in zip(
            evaluations["timesteps"], evaluations["scores"], evaluations["mean"], strict=True
        )
    ]
    return table(["agent steps", "games", "mean score", "best"], rows, "lrrr")


def throughput() -> str:
    rows = []
    for name, where in (
        ("atari_throughput_h200.json", "H200 GPU"),
        ("atari_throughput_cpu.json", "2-core CPU"),
    ):
        record = load(name)
        game = record["env"].removesuffix("NoFrameskip-v4")
        for sampler in ("ale-vector", "wrappers"):
            run = record["training"][sampler]
            rows.append(
                [f"{game}, {where}", sampler, f"{run['steps_per_s']:,.0f}", f"{run['frames_per_s']:,.0f}"]
            )
    return table(["game, machine", "sampler", "agent steps/s", "frames/s"], rows, "llrr")


def against_sb2_speed() -> str:
    rows = []
    pairs = (
        ("CartPole-v1, zoo settings", "sb2_speed_cartpole_sb2.json", "sb2_speed_cartpole_sb3acer.json"),
        ("LunarLander, zoo settings", "sb2_speed_lunarlander_sb2.json", "sb2_speed_lunarlander_sb3acer.json"),
        ("Pong, run_atari settings", "sb2_atari_speed_sb2.json", "sb2_atari_speed_sb3acer_ale_vector.json"),
    )
    for what, sb2_name, ours_name in pairs:
        sb2, ours = load(sb2_name), load(ours_name)
        sb2_rate = statistics.fmean(column(sb2["results"], "steps_per_second")) if "results" in sb2 else None
        ours_rate = (
            statistics.fmean(column(ours["results"], "steps_per_second")) if "results" in ours else None
        )
        sb2_rate = sb2_rate or sb2["steps_per_second"]
        ours_rate = ours_rate or ours["steps_per_second"]
        rows.append([what, f"{sb2_rate:,.0f}", f"{ours_rate:,.0f}", f"**{ours_rate / sb2_rate:.2f}**"])
    return table(["env steps/s, same CPU", "SB2 2.10.2", "sb3-acer", "sb3-acer / SB2"], rows, "lrrr")


def replay_memory() -> str:
    rows = []
    for name, library in (
        ("sb2_atari_memory_sb2.json", "SB2 2.10.2"),
        ("sb2_atari_memory_sb3acer.json", "sb3-acer"),
    ):
        record = load(name)
        growth = record["resident_mb_after_learn"] - record["resident_mb_before_learn"]
        rows.append([library, f"{record['timesteps']:,}", f"**{growth:,.0f}**"])
    return table(["Pong, replay memory full", "agent steps", "process growth, MiB"], rows, "lrr")


def soak() -> str:
    record = load("soak.json")
    summary = record["summary"]
    rows = [
        [
            f"{record['timesteps']:,}",
            f"{record['updates']:,}",
            f"{summary['rss_at_full_mb']:g}",
            f"{summary['rss_end_mb']:g}",
            f"**{summary['growth_after_full_mb']:g}**",
            record["skipped_updates"],
        ]
    ]
    header = ["CartPole steps", "updates", "RSS when full, MB", "RSS at end, MB", "growth, MB", "skipped"]
    return table(header, rows, "rrrrrr")


def fallback_defaults() -> str:
    """The command line's fallback (no preset) against the constructor's defaults and A2C's defaults."""
    records = load("fallback_defaults.json")["results"]
    rows = []
    for env_id, runs in by_env(records).items():
        configs = {
            config: [run for run in runs if run["config"] == config]
            for config in dict.fromkeys(column(runs, "config"))
        }
        a2c_speed = statistics.median(column(configs["A2C"], "steps_per_second"))
        for config, mine in configs.items():
            label = {
                "A2C": "A2C, SB3's defaults",
                "ACER-constructor": "ACER, the constructor's (SB2's) defaults",
                "ACER-fallback": "**ACER, `sb3-acer train`'s fallback**",
            }[config]
            speed = statistics.median(column(mine, "steps_per_second"))
            rows.append(
                [
                    env_id,
                    label,
                    len(mine),
                    pm(column(mine, "final_train_return")),
                    pm(column(mine, "final_eval_mean")),
                    f"{speed / a2c_speed:.2f}",
                ]
            )
    header = ["env", "settings", "seeds", "final return", "greedy evaluation", "env steps/s / A2C's"]
    return table(header, rows, "llrrrr")


MINATAR_ALGORITHMS = ("ACER", "PPO", "A2C", "DQN")


MUJOCO_ALGORITHMS = ("ACER", "PPO")


def groups(
    records: list[dict[str, Any]], algorithms: Sequence[str]
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The runs of ``records`` by env id, then by algorithm (in ``algorithms``' order)."""
    grouped: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for env_id, runs in by_env(records).items():
        grouped[env_id] = {
            algo: [run for run in runs if run["algo"] == algo]
            for algo in algorithms
            if any(run["algo"] == algo for run in runs)
        }
    return grouped


def minatar_groups() -> dict[str, dict[str, list[dict[str, Any]]]]:
    """The 1M-step MinAtar runs by env id, then by algorithm (in MINATAR_ALGORITHMS' order)."""
    return groups(load("minatar_1m.json")["results"], MINATAR_ALGORITHMS)


def mujoco() -> str:
    """ACER and PPO on MuJoCo at 1M steps (the deterministic evaluation, the final training return, steps/s
    as a ratio to PPO's), and the zoo's SAC and TD3 figures."""
    record = load("mujoco_1m.json")
    zoo = record["meta"]["zoo_off_policy"]
    rows = []
    for env_id, by_algo in groups(record["results"], MUJOCO_ALGORITHMS).items():
        ppo_speed = (
            statistics.median(column(by_algo["PPO"], "steps_per_second")) if "PPO" in by_algo else None
        )
        for algo, runs in by_algo.items():
            speed = statistics.median(column(runs, "steps_per_second"))
            ratio = "—" if ppo_speed is None else f"{speed / ppo_speed:.2f}"
            evaluation = pm(column(runs, "final_eval_mean"))
            rows.append([env_id, algo, len(runs), evaluation, pm(column(runs, "final_train_return")), ratio])
        for algo, figure in zoo["figures"][env_id].items():
            if figure is not None:
                rows.append([env_id, f"{algo} (zoo, -v3)", 1, f"{figure[0]:.1f} ± {figure[1]:.1f}", "—", "—"])
    header = ["env", "algorithm", "seeds", "deterministic evaluation", "final return", "env steps/s / PPO's"]
    return table(header, rows, "llrrrr")


def minatar() -> str:
    """ACER, PPO, A2C and DQN on MinAtar at 1M steps: the final return, a greedy evaluation and steps/s."""
    rows = []
    for env_id, by_algo in minatar_groups().items():
        acer_speed = statistics.median(column(by_algo["ACER"], "steps_per_second"))
        for algo, runs in by_algo.items():
            speed = statistics.median(column(runs, "steps_per_second"))
            rows.append(
                [
                    env_id,
                    algo,
                    len(runs),
                    pm(column(runs, "final_train_return")),
                    pm(column(runs, "final_eval_mean")),
                    f"{speed / acer_speed:.2f}",
                ]
            )
    header = ["env", "algorithm", "seeds", "final return", "greedy evaluation", "env steps/s / ACER's"]
    return table(header, rows, "llrrrr")


# ---------------------------------------------------------------------------------------------- summary


class Comparison(NamedTuple):
    """One row of the summary: ACER's figure on one env beside the best of the peers measured with it."""

    family: str
    env: str
    measure: str
    acer: float
    peer: str
    peer_value: float
    lower_is_better: bool = False
    digits: int = 1

    @property
    def acer_leads(self) -> bool:
        return self.acer < self.peer_value if self.lower_is_better else self.acer > self.peer_value


def best(candidates: dict[str, float], lower_is_better: bool = False) -> tuple[str, float]:
    """The peer with the best figure (the first of equals)."""
    pick = min if lower_is_better else max
    name = pick(candidates, key=lambda peer: candidates[peer])
    return name, candidates[name]


def mean_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.fmean(column(runs, key))


def threshold_comparisons(name: str) -> list[Comparison]:
    """Median steps to the threshold on a ``classic_control.py`` record (a seed that never reaches it
    counts as the budget)."""
    rows = []
    for env_id, runs in by_env(load(name)["results"]).items():
        medians = {}
        for algo in ALGORITHMS:
            mine = [run for run in runs if run["algo"] == algo]
            if mine:
                reached = middle(column(mine, "steps_to_threshold"))
                medians[algo] = float(mine[0]["n_timesteps"] if reached is None else reached)
        acer = medians.pop("ACER")
        peer, value = best(medians, lower_is_better=True)
        measure = f"median steps to {thresholds()[env_id]:g}"
        rows.append(Comparison("Classic control", env_id, measure, acer, peer, value, True, 0))
    return rows


def anchor_comparison(family: str, record: str) -> list[Comparison]:
    """A ``presets.py`` record's sampled-action evaluation beside the SB2 zoo's agent and SB2's own ACER."""
    rows = []
    for env_id, runs in by_env(load(record)["results"]).items():
        peers = {"SB2's own ACER": mean_of(load(SB2_FILES[env_id])["results"], "eval_stochastic_mean")}
        zoo = load("anchors.json")["sb2_zoo_acer"]["scores"][ZOO_ID.get(env_id, env_id)][0]
        if zoo is not None:
            peers["SB2 zoo's agent"] = zoo
        peer, value = best(peers)
        acer = mean_of(runs, "eval_stochastic_mean")
        rows.append(Comparison(family, env_id, "evaluation, sampled actions", acer, peer, value))
    return rows


def peer_comparisons(
    family: str, grouped: dict[str, dict[str, list[dict[str, Any]]]], key: str, measure: str
) -> list[Comparison]:
    """ACER's mean ``key`` on each env of ``grouped`` beside the best of the other algorithms' means."""
    rows = []
    for env_id, by_algo in grouped.items():
        means = {algo: mean_of(runs, key) for algo, runs in by_algo.items()}
        acer = means.pop("ACER")
        rows.append(Comparison(family, env_id, measure, acer, *best(means)))
    return rows


def atari_comparison() -> Comparison:
    """Pong's env steps/s with each library's ``run_atari`` set-up, sb3-acer against SB2's ACER."""
    sb2 = load("sb2_atari_speed_sb2.json")["steps_per_second"]
    ours = load("sb2_atari_speed_sb3acer_ale_vector.json")["steps_per_second"]
    return Comparison("Atari", "Pong", "env steps/s, same CPU", ours, "SB2's own ACER", sb2, digits=0)


def comparisons() -> list[Comparison]:
    """Every family of environments against its best peer, as the summary shows them."""
    pendulum = groups(load("classic_control_pendulum.json")["results"], ALGORITHMS)
    return [
        *threshold_comparisons("classic_control_cartpole_fresh_seeds.json"),
        *threshold_comparisons("classic_control_acrobot_fresh_seeds.json"),
        *anchor_comparison("Classic control", "presets_mountaincar_fresh_seeds.json"),
        *anchor_comparison("Box2D", "presets_lunarlander.json"),
        *peer_comparisons("Continuous control", pendulum, "final_eval_mean", "greedy evaluation"),
        *peer_comparisons(
            "MuJoCo",
            groups(load("mujoco_1m.json")["results"], MUJOCO_ALGORITHMS),
            "final_eval_mean",
            "deterministic evaluation, 1M steps",
        ),
        *peer_comparisons("MinAtar", minatar_groups(), "final_train_return", "final return, 1M steps"),
        atari_comparison(),
    ]


def summary() -> str:
    """The results page's opening table: each env's figure for ACER beside the best peer's."""
    rows = []
    for row in comparisons():
        acer, peer = (f"{value:,.{row.digits}f}" for value in (row.acer, row.peer_value))
        rows.append(
            [row.family, row.env, row.measure, f"**{acer}**" if row.acer_leads else acer, row.peer, peer]
        )
    header = ["family", "env", "measure", "sb3-acer", "best peer", "its figure"]
    return table(header, rows, "lllrlr")


def headline_sentence() -> str:
    """The home page's and README's one-sentence result, counted from the summary's rows."""
    rows = comparisons()

    def leads(family: str) -> str:
        mine = [row for row in rows if row.family == family]
        return f"{sum(row.acer_leads for row in mine)} of {len(mine)}"

    cartpole = next(row for row in rows if row.env == "CartPole-v1")
    return (
        f"At a million env steps ACER's final return leads the best of SB3's PPO, A2C and DQN on "
        f"{leads('MinAtar')} MinAtar games, and its evaluation leads SB3's PPO on {leads('MuJoCo')} MuJoCo "
        f"tasks; on CartPole-v1 it reaches a return of 475 in {cartpole.acer:,.0f} steps (median), "
        f"{cartpole.peer} in {cartpole.peer_value:,.0f}.\n"
    )


def summary_figure() -> str:
    """The summary's figure, with its record, the command that made it and the commit."""
    meta = load("minatar_1m.json")["meta"]
    return (
        "![MinAtar SpaceInvaders: ACER, PPO, A2C and DQN](images/minatar_spaceinvaders.png)"
        '{ width="400" }\n\n'
        "MinAtar SpaceInvaders, mean training return over the seeds (shaded: ± std): record "
        "[`minatar_1m.json`](../benchmarks/results/minatar_1m.json), commit "
        f"`{meta['commit']}`, drawn by `python -m benchmarks.report --plots`; its command is in "
        "[MinAtar](#minatar-learning-from-pixels-on-a-cpu).\n"
    )


TABLES: dict[str, Callable[[], str]] = {
    "classic-control": classic_control,
    "mountaincar-fresh-seeds": mountaincar_fresh_seeds,
    "lunarlander": lunarlander,
    "lunarlander-sentence": lunarlander_sentence,
    "headline": headline,
    "summary": summary,
    "summary-figure": summary_figure,
    "headline-sentence": headline_sentence,
    "against-a2c-ppo": against_a2c_ppo,
    "fresh-seeds": fresh_seeds,
    "pendulum": pendulum,
    "recurrent": recurrent,
    "atari-anchors": atari_anchors,
    "pong": pong,
    "throughput": throughput,
    "against-sb2-speed": against_sb2_speed,
    "replay-memory": replay_memory,
    "soak": soak,
    "minatar": minatar,
    "mujoco": mujoco,
    "fallback-defaults": fallback_defaults,
}


def pages() -> list[pathlib.Path]:
    """The Markdown files that may hold tables."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def render(text: str) -> str:
    """``text`` with every marked table rewritten from the records; an unknown name raises KeyError."""
    return MARKED.sub(lambda m: m[1] + TABLES[m["name"]]() + m[4], text)


def plot_lunarlander(out: pathlib.Path) -> None:
    """The learning curves (mean ± std over seeds) of the preset and of SB2's own ACER."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, label in (
        ("presets_lunarlander.json", "sb3-acer preset (v3)"),
        (SB2_FILES["LunarLander-v3"], "SB2's ACER, zoo settings (v2)"),
    ):
        runs = load(name)["results"]
        x = np.array([step for step, _ in runs[0]["learning_curve"]])
        y = np.array([[ret for _, ret in run["learning_curve"]] for run in runs])
        ax.plot(x, y.mean(0), label=f"{label}, {len(runs)} seeds")
        ax.fill_between(x, y.mean(0) - y.std(0), y.mean(0) + y.std(0), alpha=0.2)
    zoo = load("anchors.json")["sb2_zoo_acer"]["scores"]["LunarLander-v2"][0]
    ax.axhline(zoo, ls="--", c="gray", label="SB2 zoo's one agent (v2)")
    ax.set(xlabel="environment steps", ylabel="training return (mean of each tenth)", title="LunarLander")
    ax.legend(loc="lower right")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)


def plot_minatar(folder: pathlib.Path) -> None:
    """One image per MinAtar game (``minatar_<game>.png``)."""
    for env_id, by_algo in minatar_groups().items():
        game = env_id.removeprefix("MinAtar/").removesuffix("-v1")
        plot_curves(by_algo, game, folder / f"minatar_{game.lower()}.png")


def plot_mujoco(folder: pathlib.Path) -> None:
    """One image per MuJoCo task (``mujoco_<task>.png``)."""
    for env_id, by_algo in groups(load("mujoco_1m.json")["results"], MUJOCO_ALGORITHMS).items():
        task = env_id.removesuffix("-v5")
        plot_curves(by_algo, env_id, folder / f"mujoco_{task.lower()}.png", legend="lower right")


def plot_curves(
    by_algo: dict[str, list[dict[str, Any]]], title: str, out: pathlib.Path, legend: str = "upper left"
) -> None:
    """Each algorithm's mean training return (± std over seeds) against env steps, the seeds' curves
    interpolated on a common grid."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    out.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for algo, runs in by_algo.items():
        grid = np.linspace(0, min(run["n_timesteps"] for run in runs), 101)
        y = np.array([np.interp(grid, run["curve_steps"], run["curve_returns"]) for run in runs])
        ax.plot(grid, y.mean(0), label=f"{algo} ({len(runs)} seeds)")
        ax.fill_between(grid, y.mean(0) - y.std(0), y.mean(0) + y.std(0), alpha=0.2)
    ax.set(xlabel="environment steps", ylabel="return, last 100 training episodes", title=title)
    ax.legend(loc=legend)
    fig.tight_layout()
    fig.savefig(out, dpi=80)
    plt.close(fig)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page is stale")
    parser.add_argument(
        "--plots",
        action="store_true",
        help="also draw docs/images/lunarlander.png, minatar_*.png and mujoco_*.png",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    stale = []
    for page in pages():
        text = page.read_text()
        new = render(text)
        if new != text:
            stale.append(page.relative_to(ROOT))
            if not args.check:
                page.write_text(new)
    if args.plots:
        plot_lunarlander(ROOT / "docs" / "images" / "lunarlander.png")
        plot_minatar(ROOT / "docs" / "images")
        plot_mujoco(ROOT / "docs" / "images")
    if args.check and stale:
        print(
            f"stale tables in: {', '.join(map(str, stale))} (run python -m benchmarks.report)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

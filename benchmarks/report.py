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
import pathlib
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks import peers
from benchmarks.common import markdown_table as table
from benchmarks.common import mean_std as pm
from benchmarks.peers import published_cell
from benchmarks.records import (
    ALGORITHMS,
    ROOT,
    SB2_FILES,
    ZOO_ID,
    by_env,
    column,
    load,
    middle,
    minatar_groups,
    mujoco_groups,
    steps,
    thresholds,
    zoo_mujoco,
)
from benchmarks.summary import checks_sentence, headline_sentence, summary, summary_figure

#: ``<!-- table: NAME -->``, the generated text, ``<!-- /table -->``.
MARKED = re.compile(r"(<!-- table: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /table -->)", re.S)
CLASSIC = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0")


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


def median_or_never(values: Sequence[float | None]) -> str:
    """The median of :func:`middle`, as a step count or ``never``."""
    median = middle(values)
    return "never" if median is None else f"{median:,.0f}"


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


def mujoco() -> str:
    """ACER and PPO on MuJoCo at 1M steps (the deterministic evaluation beside the zoo's published agent of
    the same algorithm, the final training return, steps/s as a ratio to PPO's), and the zoo's SAC and TD3
    agents, which were not run here."""
    zoo = zoo_mujoco()
    rows = []
    for env_id, by_algo in mujoco_groups().items():
        published = zoo["scores"].get(env_id, {})
        ppo_speed = (
            statistics.median(column(by_algo["PPO"], "steps_per_second")) if "PPO" in by_algo else None
        )
        for algo, runs in by_algo.items():
            speed = statistics.median(column(runs, "steps_per_second"))
            ratio = "—" if ppo_speed is None else f"{speed / ppo_speed:.2f}"
            evaluation = pm(column(runs, "final_eval_mean"))
            mine = [len(runs), evaluation, published_cell(published.get(algo))]
            rows.append([env_id, algo, *mine, pm(column(runs, "final_train_return")), ratio])
        for algo, figure in published.items():
            if algo not in by_algo:
                rows.append([env_id, f"{algo} (not run here)", "—", "—", published_cell(figure), "—", "—"])
    header = [
        "env",
        "algorithm",
        "seeds",
        "deterministic evaluation",
        f"zoo's published agent ({zoo['version']})",
        "final return",
        "env steps/s / PPO's",
    ]
    return table(header, rows, "llrrrrr")


def mujoco_published() -> str:
    """Where our run of a peer scores below its published agent, and why as far as the records tell."""
    zoo = zoo_mujoco()
    lines = peers.shortfalls(mujoco_groups(), zoo, "final_eval_mean")
    return f"{zoo['note']} Source: {zoo['source']}.\n\n" + "".join(lines)


def minatar_published() -> str:
    """Why the MinAtar table has no published figure beside its peers."""
    published = load("anchors.json")["minatar_published"]
    return f"{published['note']} Source: {published['source']}.\n"


def mujoco_wallclock() -> str:
    meta = load("mujoco_1m.json")["meta"]
    grouped = mujoco_groups()
    return peers.wallclock_table(grouped, meta) + "\n" + peers.wallclock_line("MuJoCo", grouped, "tasks")


def minatar_wallclock() -> str:
    meta = load("minatar_1m.json")["meta"]
    grouped = minatar_groups()
    return peers.wallclock_table(grouped, meta) + "\n" + peers.wallclock_line("MinAtar", grouped, "games")


def figures(record: str, images: dict[str, str]) -> str:
    """The images (``alt text: file under docs/images``) of a record's curves, with the record, the commits
    its runs were made from and the command that draws them."""
    commits = sorted({run["commit"] for run in load(record)["meta"]["kept_runs"].values()})
    lines = "".join(f"![{alt}](images/{image})\n" for alt, image in images.items())
    return (
        f"{lines}\nMean training return over the seeds (shaded: ± std) against env steps (left) and training "
        f"seconds (right): record [`{record}`](../benchmarks/results/{record}), its runs made at commits "
        f"{', '.join(f'`{commit}`' for commit in commits)}, drawn by `python -m benchmarks.report --plots`.\n"
    )


def minatar_figures() -> str:
    games = ("SpaceInvaders", "Breakout", "Asterix", "Freeway", "Seaquest")
    return figures("minatar_1m.json", {game: f"minatar_{game.lower()}.png" for game in games})


def mujoco_figures() -> str:
    tasks = ("InvertedPendulum", "Hopper", "HalfCheetah", "Walker2d", "Ant")
    return figures("mujoco_1m.json", {f"{task}-v5": f"mujoco_{task.lower()}.png" for task in tasks})


def mujoco_seeds() -> str:
    grouped = mujoco_groups()
    line = peers.family_seed_line("MuJoCo", grouped, "final_eval_mean", "deterministic evaluation")
    return peers.seed_table(grouped, "final_eval_mean") + "\n" + line


def minatar_seeds() -> str:
    grouped = minatar_groups()
    line = peers.family_seed_line("MinAtar", grouped, "final_train_return", "final return")
    return peers.seed_table(grouped, "final_train_return", digits=2) + "\n" + line


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


TABLES: dict[str, Callable[[], str]] = {
    "classic-control": classic_control,
    "mountaincar-fresh-seeds": mountaincar_fresh_seeds,
    "lunarlander": lunarlander,
    "lunarlander-sentence": lunarlander_sentence,
    "headline": headline,
    "summary": summary,
    "summary-figure": summary_figure,
    "summary-checks": checks_sentence,
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
    "mujoco-published": mujoco_published,
    "minatar-published": minatar_published,
    "mujoco-wallclock": mujoco_wallclock,
    "minatar-wallclock": minatar_wallclock,
    "mujoco-seeds": mujoco_seeds,
    "mujoco-figures": mujoco_figures,
    "minatar-figures": minatar_figures,
    "minatar-seeds": minatar_seeds,
    "fallback-defaults": fallback_defaults,
}


def pages() -> list[pathlib.Path]:
    """The Markdown files that may hold tables."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def render(text: str) -> str:
    """``text`` with every marked table rewritten from the records; an unknown name raises KeyError."""
    return MARKED.sub(lambda m: m[1] + TABLES[m["name"]]() + m[4], text)


def draw_plots(folder: pathlib.Path) -> None:
    """The figures of the results page: LunarLander's curves, and one image per MinAtar game and MuJoCo
    task (``minatar_<game>.png``, ``mujoco_<task>.png``), each against steps and against seconds."""
    from benchmarks import plots

    curves = [
        ("sb3-acer preset (v3)", load("presets_lunarlander.json")["results"]),
        ("SB2's ACER, zoo settings (v2)", load(SB2_FILES["LunarLander-v3"])["results"]),
    ]
    zoo = load("anchors.json")["sb2_zoo_acer"]["scores"]["LunarLander-v2"][0]
    plots.lunarlander(curves, zoo, folder / "lunarlander.png")
    for env_id, by_algo in minatar_groups().items():
        game = env_id.removeprefix("MinAtar/").removesuffix("-v1")
        plots.curves(by_algo, game, folder / f"minatar_{game.lower()}.png")
    for env_id, by_algo in mujoco_groups().items():
        task = env_id.removesuffix("-v5")
        plots.curves(by_algo, env_id, folder / f"mujoco_{task.lower()}.png", legend="lower right")


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
        draw_plots(ROOT / "docs" / "images")
    if args.check and stale:
        print(
            f"stale tables in: {', '.join(map(str, stale))} (run python -m benchmarks.report)",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

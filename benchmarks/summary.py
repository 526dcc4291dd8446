"""The results page's summary and the one-sentence headline of the README and the home page: each family of
environments, ACER's figure beside the best peer measured with it, from the records."""

from __future__ import annotations

from typing import Any, NamedTuple

from benchmarks import peers
from benchmarks.common import markdown_table as table
from benchmarks.records import (
    ALGORITHMS,
    SB2_FILES,
    ZOO_ID,
    by_env,
    column,
    groups,
    load,
    mean_of,
    middle,
    minatar_groups,
    mujoco_groups,
    thresholds,
    zoo_mujoco,
)


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
            mujoco_groups(),
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
        '{ width="700" }\n\n'
        "MinAtar SpaceInvaders, mean training return over the seeds (shaded: ± std) against env steps and "
        "against training seconds: record "
        "[`minatar_1m.json`](../benchmarks/results/minatar_1m.json), commit "
        f"`{meta['commit']}`, drawn by `python -m benchmarks.report --plots`; its command is in "
        "[MinAtar](#minatar-learning-from-pixels-on-a-cpu).\n"
    )


def checks_sentence() -> str:
    """What the summary's peers are worth, counted from the sections' tables: our PPO against the zoo's
    published PPO agents, the equal-wall-clock rows and the seeds ACER led on."""
    zoo = zoo_mujoco()["scores"]
    mujoco, minatar = mujoco_groups(), minatar_groups()
    published = {env: figures["PPO"][0] for env, figures in zoo.items() if env in mujoco}
    short = [
        env for env, figure in published.items() if mean_of(mujoco[env]["PPO"], "final_eval_mean") < figure
    ]
    seeds = {
        "MinAtar": peers.family_seed_counts(minatar, "final_train_return")["PPO"],
        "MuJoCo": peers.family_seed_counts(mujoco, "final_eval_mean")["PPO"],
    }
    return (
        f"Our PPO runs score below the zoo's published PPO agent on {len(short)} of the {len(published)} "
        f"MuJoCo tasks it publishes ({', '.join(short)}). At the seconds the fastest algorithm took for its "
        f"budget, ACER's training return leads every peer's on {len(peers.wallclock_leads(minatar))} of "
        f"{len(minatar)} MinAtar games and {len(peers.wallclock_leads(mujoco))} of {len(mujoco)} MuJoCo "
        f"tasks. Seed by seed (each env's seeds paired), ACER led PPO on {seeds['MinAtar']} in MinAtar and "
        f"on {seeds['MuJoCo']} in MuJoCo.\n"
    )

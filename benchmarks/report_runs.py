"""The five-seed report runs of MinAtar and MuJoCo: ACER against PPO on the report seeds fixed in
``benchmarks/report_seeds.json``, with PPO as the zoo's published agents were configured beside PPO's tuned
entries where they differ (``PPO-TimeFeature`` on Walker2d and Ant).

One family per call, every run in this one process, one after the other (``--jobs 1``): per task or game,
seed by seed, ACER then PPO (then PPO-TimeFeature), so that the runs compared share the machine's load as
nearly as runs made one at a time can. Each run records its training wall-clock at each of the about a
hundred points of its learning curve (training return) and at each deterministic evaluation during training
(``--eval-every``, five episodes each, their own time left out of the clock), for the results page's
equal-wall-clock rows. The runs
go to ``--run-dir`` (one file each; a stopped benchmark goes on where it stopped) and the record to
``--out``. This script only chooses what ``mujoco_v5.py`` and ``minatar_games.py`` run; their records name
those scripts' commands.

Usage::

    python -m benchmarks.report_runs mujoco    # 60 runs of 1M steps
    python -m benchmarks.report_runs minatar   # 50 runs of 1M steps
    python -m benchmarks.report_runs mujoco --envs Ant-v5 --seeds 500 --timesteps 3000 \\
        --run-dir /tmp/smoke --out /tmp/smoke.json   # a smoke test of the whole chain
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

from benchmarks.common import script_parser

ROOT = pathlib.Path(__file__).resolve().parent
#: The report seeds, fixed before any run on them.
SEEDS_FILE = ROOT / "report_seeds.json"
#: Per family: the script that runs it, its option naming the tasks or games, and the algorithms.
FAMILIES = {
    "mujoco": ("mujoco_v5", "--envs", ["ACER", "PPO", "PPO-TimeFeature"]),
    "minatar": ("minatar_games", "--games", ["ACER", "PPO"]),
}


#: Env steps between the deterministic evaluations during training (twenty in a run of 1M steps).
EVAL_EVERY = 50_000


def report_seeds() -> list[int]:
    """The seeds of ``report_seeds.json``."""
    return list(json.loads(SEEDS_FILE.read_text())["seeds"])


def build_parser() -> argparse.ArgumentParser:
    parser = script_parser(__doc__)
    parser.add_argument("family", choices=sorted(FAMILIES))
    parser.add_argument("--envs", nargs="+", default=None, help="tasks or games (default: all five)")
    parser.add_argument("--seeds", nargs="+", type=int, default=None, help="a subset of the report seeds")
    parser.add_argument("--timesteps", type=int, default=1_000_000, help="env steps of every run")
    parser.add_argument("--eval-episodes", type=int, default=None, help="the script's default if not given")
    parser.add_argument(
        "--eval-every", type=int, default=EVAL_EVERY, help="env steps between evaluations during training"
    )
    parser.add_argument("--run-dir", type=pathlib.Path, default=None)
    parser.add_argument("--out", type=pathlib.Path, default=None)
    parser.add_argument("--dry-run", action="store_true", help="print the command, run nothing")
    return parser


def script_argv(args: argparse.Namespace) -> tuple[str, list[str]]:
    """The script and the arguments that make the report runs of ``args.family``.

    Raises:
        SystemExit: a ``--seeds`` value that is no report seed.
    """
    seeds = report_seeds()
    chosen = args.seeds or seeds
    other = sorted(set(chosen) - set(seeds))
    if other:
        raise SystemExit(
            f"--seeds {other}: not report seeds; the report seeds are {seeds} ({SEEDS_FILE.name})"
        )
    script, option, algos = FAMILIES[args.family]
    results = pathlib.Path("benchmarks") / "results"
    run_dir = args.run_dir or results / f"{args.family}_report_runs"
    out = args.out or results / f"{args.family}_report.json"
    argv = ["--algos", *algos, "--seeds", *map(str, chosen), "--timesteps", str(args.timesteps)]
    argv += ["--eval-every", str(args.eval_every)]
    if args.envs:
        argv = [option, *args.envs, *argv]
    if args.eval_episodes is not None:
        argv += ["--eval-episodes", str(args.eval_episodes)]
    return script, [*argv, "--jobs", "1", "--run-dir", str(run_dir), "--out", str(out)]


def main(argv: list[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    script, script_args = script_argv(args)
    print(f"python -m benchmarks.{script} {' '.join(script_args)}", flush=True)
    if args.dry_run:
        return
    if script == "mujoco_v5":
        from benchmarks import mujoco_v5 as module
    else:
        from benchmarks import minatar_games as module  # type: ignore[no-redef]
    module.main(script_args)


if __name__ == "__main__":
    main(sys.argv[1:])

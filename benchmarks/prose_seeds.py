"""The demo over several seeds: FirstP, MaxP and PARADE-Attn trained by the recipe on the shipped prose.

    python benchmarks/prose_seeds.py                       # seeds 0, 1 and 2: three demo runs
    python benchmarks/prose_seeds.py --seeds 1,2           # more seeds beside a run already made (read back)
    python benchmarks/prose_seeds.py --quick               # a smoke run: the demo's --quick sizes

Each seed is ``pyterrier_longdoc.demo.run(seed=s)`` (README's first command with ``--seed s``) in its
own folder under ``--output``; a seed whose ``results.json`` is there already is read, not run again,
so seeds can be run in several processes and summarised together. The seed drives the recipe (the
passage stage, PARADE-Attn's new head, the order of training); the collection and the test queries
are the same in every seed.

Writes ``prose-seeds.json`` and ``.md`` into ``--results`` (with machine, date, commit and time
taken): per system and query group, the RR averaged over seeds per query with its 95% interval over
the queries and the seeds' range, the zero-shot starts' too; each trained model against FirstP and
against its zero-shot start (the paired difference of the seed-averaged per-query RR, with its 95%
interval); the query controls'
verdict per seed; each run's conclusions; and the CPU seconds of each stage per seed.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import pandas as pd  # noqa: E402 - after the environment above

TRAINED = ("FirstP", "MaxP", "ParadeAttn")
GROUPS = ("near", "far")


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--output", default="prose-seeds-output", help="one demo folder per seed")
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--quick", action="store_true", help="the demo's --quick sizes: a smoke run")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    from pyterrier_longdoc import demo

    args = parse(argv)
    started = time.time()
    seeds = [int(s) for s in args.seeds.split(",")]
    runs = {}
    for seed in seeds:
        folder = Path(args.output) / f"seed-{seed}"
        record = folder / "results.json"
        if record.exists() and json.loads(record.read_text()).get("quick") == args.quick:
            print(f"seed {seed}: read from {record}", flush=True)
        else:
            demo.run(folder, quick=args.quick, seed=seed, check=False)
        runs[seed] = json.loads(record.read_text())
    summary = summarise(runs)
    text = markdown(summary)
    stem = Path(args.results) / ("prose-seeds-quick" if args.quick else "prose-seeds")
    stem.parent.mkdir(parents=True, exist_ok=True)
    from _common import commit, machine, utc_now

    header = {"machine": machine(), "date": utc_now(),
              "commit": commit(), "wall_minutes": round((time.time() - started) / 60, 1), "seeds": seeds}
    stem.with_suffix(".json").write_text(json.dumps({**header, **summary}, indent=1))
    stem.with_suffix(".md").write_text(f"Machine: {header['machine']}; {header['date']}; commit {header['commit']}; "
                                       f"{header['wall_minutes']} min wall (runs read back not counted); seeds "
                                       f"{seeds}\n\n{text}")
    print(text)
    return 0


def per_query(runs: dict, group: str) -> pd.DataFrame:
    """qid by system: each query's RR averaged over the seeds (the papers' way, before any test)."""
    frames = [pd.DataFrame(run["per_query_rr"][group]) for run in runs.values()]
    return pd.concat(frames).groupby(level=0).mean()


def summarise(runs: dict) -> dict:
    from pyterrier_longdoc.evaluation import mean_interval

    rows, differences = [], []
    for group in GROUPS:
        values = per_query(runs, group)
        for system in values.columns:
            mean, low, high = mean_interval(values[system])
            by_seed = [pd.Series(run["per_query_rr"][group][system]).mean() for run in runs.values()]
            rows.append({"group": group, "system": system, "queries": len(values), "RR": mean, "low": low,
                         "high": high, "seed min": min(by_seed), "seed max": max(by_seed)})
        for name in TRAINED:
            for against in ("FirstP", f"zero-shot {name}") if name != "FirstP" else ("zero-shot FirstP",):
                mean, low, high = mean_interval(values[name] - values[against])
                differences.append({"group": group, "system": name, "against": against, "difference": mean,
                                    "low": low, "high": high})
    return {"rr": rows, "differences": differences, "controls": controls_by_seed(runs),
            "conclusions": {seed: run["conclusions"] for seed, run in runs.items()},
            "cpu_seconds": {seed: stage_seconds(run) for seed, run in runs.items()}}


def controls_by_seed(runs: dict) -> list[dict]:
    """Per model, group and seed: RR with the real query, another query's text, the constant query
    and a random order, and the library's verdict (``reads_the_query``)."""
    from pyterrier_longdoc.evaluation import reads_the_query

    rows = []
    for seed, run in runs.items():
        for name, records in run["controls"].items():
            table = pd.DataFrame(records)
            for group, part in table.groupby("group", sort=False):
                rr = part.set_index("ranking")["RR"]
                rows.append({"seed": seed, "system": name, "group": group, **rr.to_dict(),
                             "reads the query": reads_the_query(part)})
    return rows


def stage_seconds(run: dict) -> dict:
    stages = {name: round(report.get("cpu_seconds", float("nan"))) for name, report in run["stages"].items()}
    return {**stages, "whole demo": run["cpu_seconds"], "whole demo, wall": run["seconds"]}


def markdown(summary: dict) -> str:
    rr = pd.DataFrame(summary["rr"]).round(3)
    differences = pd.DataFrame(summary["differences"]).round(3)
    controls = pd.DataFrame(summary["controls"]).round(3)
    conclusions = pd.DataFrame(summary["conclusions"]).replace({True: "yes", False: "no"}).rename(columns=lambda s: f"seed {s}")
    seconds = pd.DataFrame(summary["cpu_seconds"]).rename(columns=lambda s: f"seed {s}")
    return "\n\n".join([
        "RR per system and group: each query's RR averaged over the seeds, the mean with its 95% interval over the "
        "queries, and the range of the seeds' means:\n\n" + rr.to_markdown(index=False),
        "Paired differences of the seed-averaged per-query RR (95% interval): each trained model against FirstP "
        "and against its zero-shot start:\n\n" + differences.to_markdown(index=False),
        "Query controls per seed (RR with the real query, another query's text, the constant query, a random "
        "order; the library's reads_the_query):\n\n" + controls.to_markdown(index=False),
        "The demo's conclusions per seed:\n\n" + conclusions.to_markdown(),
        "CPU seconds per stage and seed:\n\n" + seconds.to_markdown(),
    ]) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())

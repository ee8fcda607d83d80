"""Does the recipe transfer? Its defaults and the demo's cheaper settings on dictionaries no setting was chosen on.

    python benchmarks/transfer.py --plan                 # the full run's units and an estimate of its CPU time
    python benchmarks/transfer.py                        # devil and jargon, both settings, 3 seeds (hours of CPU)
    python benchmarks/transfer.py --collections devil --settings demo --seeds 1   # a part of it
    python benchmarks/transfer.py --quick                # tiny random BERT, seconds: a smoke run

Collections: FarRelevant documents built from Debian's dict-devil (Ambrose Bierce's The Devil's Dictionary)
and dict-jargon (the Jargon File) by ``benchmarks/effectiveness.py``'s builder (``dictionary_data``: 100
training queries, 50 near and 50 far test queries, the rest of the dictionary's known-term queries, up to 400,
for the passage stage's triples: 148 queries and 296 triples on The Devil's Dictionary, 91 and 182 on the Jargon
File, small dictionaries, where effectiveness.py's had 400 and 800). No setting of the library was chosen on either:
the project's choices were made on GCIDE, FOLDOC and the shipped WordNet prose; the library reads the Jargon File
but no benchmark, test or result used it.

Settings, each the one-call recipe ``train_long_document_ranker`` per model (FirstP, MaxP, PARADE-Attn), its
passage stage trained by the first model of a seed and shared by the other two, its seed the run's seed:
- ``defaults``: what a user gets: the packaged MiniLM (six layers), no option, the models' default windows;
- ``demo``: ``pyterrier_longdoc.demo``'s cheaper settings: ``BACKBONE_LAYERS`` of the MiniLM, ``PASSAGE_STAGE``,
  the windows of ``demo.MODELS``.
Every choice is the recipe's, made on the validation queries its ``fit`` holds out (``valid_fraction`` of the
training queries, drawn by the seed): the model kept, and its fusion with BM25 (``model.fusion``: the candidates
carry BM25's ``score``). No test query chooses anything.

Reported per collection, setting, model and seed (``transfer-<collection>-<setting>.json`` and ``.md`` in
``--results``, with machine, date, commit and CPU seconds per stage): the zero-shot start (the model over the
passage stage's cross-encoder, untrained), the model alone, the model fused with BM25 at the chosen weight, BM25
alone over the same candidates, a random order (its expected RR), the query controls (``query_controls``:
another query's text, a constant query; of the fused runs too, the model's control runs fused alike) and what
training changed (the recipe's report, ``trained``). Per split: the seed-averaged per-query
RR with its 95% interval; paired t-tests of each model against BM25 (alone and fused) and against its zero-shot
start, Holm over the collection and setting's family; the verdicts "at least the zero-shot start", "fused at least
BM25" (no significant loss after Holm) and "reads the query" (``reads_the_query`` at every seed). FirstP's far
answers lie beyond what it reads, so on far queries its "reads the query" and "at least the zero-shot start" are
reported, not judged: there a FirstP that reads the query better ranks the relevant document lower, below the
candidates whose first tokens hold the query's words (below a random order).
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import numpy as np  # noqa: E402 - after the environment above
import pandas as pd  # noqa: E402

import effectiveness as eff  # noqa: E402 - the collections, RR, controls and results files
from _common import utc_now  # noqa: E402

COLLECTIONS = ("devil", "jargon")
SETTINGS = ("defaults", "demo")
MODELS = eff.MODELS
ALPHA = 0.05
# --quick: the stages shrunk to seconds (every setting alike); the demo's backbone is a one-layer tiny BERT
QUICK_STAGES = dict(passage=dict(steps=4, lr=1e-3, batch_size=4), document=dict(epochs=1, head_lr=1e-3))
VERDICTS = ("at least the zero-shot start", "fused at least BM25", "reads the query")


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", default=",".join(COLLECTIONS), help="comma-separated: devil, jargon")
    parser.add_argument("--settings", default=",".join(SETTINGS), help="comma-separated: defaults, demo")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--output", default="transfer-output", help="scratch folder: models, indexes")
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    parser.add_argument("--quick", action="store_true", help="tiny random BERT, tiny sizes: a smoke run")
    parser.add_argument("--plan", action="store_true", help="print the run's units and CPU estimate; train nothing")
    parser.add_argument("--dtype", default=None, choices=["fp32", "bf16"],
                        help="default: bf16 on CPUs with native bf16, else fp32")
    parser.add_argument("--dictionary", action="append", default=[], metavar="NAME=PATH",
                        help="a dictd .dict.dz file for a collection (default: Debian's /usr/share/dictd/NAME.dict.dz)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # the loading bars of every model built would bury the report
    collections, settings = _listed(args.collections, COLLECTIONS), _listed(args.settings, SETTINGS)
    seeds = list(range(args.seeds))
    if args.plan:
        print(plan(collections, settings, seeds, args.quick, Path(args.output)))
        return 0
    paths = dict(item.split("=", 1) for item in args.dictionary)
    eff.check_prerequisites(collections, paths, None)
    from pyterrier_longdoc.engine.runtime import native_bf16_cpu

    output, results = Path(args.output), Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    sizes = dict(eff.QUICK if args.quick else eff.FULL)
    base = eff._tiny_backbone(output) if args.quick else eff._minilm()
    dtype = args.dtype or ("bf16" if native_bf16_cpu() else "fp32")
    started = time.time()
    for name in collections:
        built, cpu = time.time(), time.process_time()
        data = eff.dictionary_data(name, paths.get(name), sizes, base, output / name)
        collection_cpu = time.process_time() - cpu
        print(f"\n## {data['description']}", flush=True)
        for setting in settings:
            result = run_setting(name, setting, data, base, dtype, seeds, args.quick, output / name / setting)
            result["cpu_seconds"]["collection built"] = [round(collection_cpu, 1)]
            eff.write_result(results / f"transfer-{name}-{setting}", result, (time.time() - built) / 60, dtype, seeds,
                             report_markdown(result))
            print("\n" + report_markdown(result), flush=True)
    print(f"\nMachine: {eff.machine()}; the whole benchmark took {(time.time() - started) / 60:.1f} min "
          f"({time.process_time() / 60:.1f} CPU minutes).")
    return 0


def _listed(text: str, known: tuple[str, ...]) -> list[str]:
    chosen = [item.strip() for item in text.split(",") if item.strip()]
    unknown = [item for item in chosen if item not in known]
    if unknown or not chosen:
        raise SystemExit(f"unknown {unknown or text!r}: use some of {', '.join(known)}")
    return chosen


# ---------------------------------------------------------------------------------------------
# the settings and the recipe


def setting_options(setting: str, base: str, quick: bool, output: Path) -> dict:
    """The recipe's arguments of a setting: its backbone, passage options, document stage and the models'
    windows (None and ``{}``: the recipe's and the models' defaults)."""
    from pyterrier_longdoc import demo
    from pyterrier_longdoc.training.recipe import RECIPE_DOCUMENT_STAGE

    if setting == "defaults":
        options = {"backbone": base, "passage_options": None, "windows": {}}
    elif quick:  # the demo's shape on the tiny BERT: fewer layers, its windows
        from _common import write_tiny_bert

        options = {"backbone": write_tiny_bert(output.parent / "tiny-bert-1-layer", layers=1),
                   "passage_options": {}, "windows": dict(window=200, stride=200)}
    else:
        options = {"backbone": demo.packaged_minilm(layers=demo.BACKBONE_LAYERS, directory=output / "backbone"),
                   "passage_options": dict(demo.PASSAGE_STAGE), "windows": dict(demo.WINDOWS)}
    options["document"] = {**RECIPE_DOCUMENT_STAGE, **QUICK_STAGES["document"]} if quick else None
    if quick:
        options["passage_options"] = {**(options["passage_options"] or {}), **QUICK_STAGES["passage"]}
    return options


def run_setting(collection: str, setting: str, data: dict, base: str, dtype: str, seeds: list[int], quick: bool,
                output: Path) -> dict:
    """Every model and seed of one setting on one collection: the runs, the tests and the verdicts. Each model
    and seed's unit is kept in its folder (``unit.json``) and read back by a later run of the same collection,
    setting and precision, so a run stopped part way resumes where it stopped."""
    import json
    import re

    options = setting_options(setting, base, quick, output)
    stamp = {"collection": re.sub(r" \(built in \d+ s\)", "", data["description"]), "options": _described(options),
             "dtype": dtype}
    scores = baselines(data["tests"])
    records = {"controls": {}, "validation": {}, "fusion": {}, "trained": {}, "cpu_seconds": {}}
    made: dict[str, dict | None] = {}  # where and when each unit was computed (a resumed run reads some back)
    for seed in seeds:
        warm_start = None
        for name in MODELS:
            kept = output / f"seed{seed}" / name / "unit.json"
            unit = json.loads(kept.read_text()) if kept.is_file() else None
            if unit is None or unit["stamp"] != json.loads(json.dumps(stamp)):
                began = time.time()
                unit = {"stamp": stamp, **run_model(name, seed, warm_start, data, options, dtype, output / f"seed{seed}")}
                unit["made"] = {"commit": eff._common_commit(), "date": utc_now(), "wall_seconds": round(time.time() - began)}
                kept.write_text(json.dumps(eff._jsonable(unit)))
            else:
                print(f"{name} seed {seed}: read from {kept}", flush=True)
            made[f"{name} seed {seed}"] = unit.get("made")
            warm_start = unit["passage stage"]
            for system, by_split in unit["scores"].items():
                _record(scores, system, seed, by_split)
            for key in records:
                for part, value in unit[key].items():
                    if key == "cpu_seconds":
                        records[key].setdefault(part, []).append(value)
                    else:
                        records[key].setdefault(part, {})[seed] = value
    result = eff.summarise(scores, {}, f"{collection}, setting {setting}: {data['description']}")
    result.pop("minutes")
    tests = paired_tests(scores)
    result.update({"setting": setting, "options": _described(options), "tests": tests, "units": made,
                   "verdicts": verdicts(tests, records["controls"]),
                   **{key: eff._jsonable(value) for key, value in records.items() if key != "cpu_seconds"},
                   "cpu_seconds": {stage: [round(x, 1) for x in values] for stage, values in
                                   records["cpu_seconds"].items()}})
    return result


def run_model(name: str, seed: int, warm_start: str | None, data: dict, options: dict, dtype: str,
              output: Path) -> dict:
    """One model and seed: the recipe (its passage stage where ``warm_start`` is None), then its zero-shot
    start, itself, its fusion with BM25 and the controls of both scored. Returns the unit: its per-query RR by
    system, and by record (controls, validation, fusion, trained, CPU seconds) its values by part."""
    import torch

    import pyterrier_longdoc as pl
    from pyterrier_longdoc.training import TrainingArguments, train_long_document_ranker

    cls, train = getattr(pl, name), data["train"]
    model_options = {"dtype": dtype, **({} if name == "FirstP" else options["windows"])}
    torch.manual_seed(seed)
    model, report = train_long_document_ranker(
        cls, warm_start or options["backbone"], train["topics"], train["qrels"], train["candidates"],
        passages=data["warmup_triples"] if warm_start is None else False, output_dir=output / name,
        passage_options=options["passage_options"], seed=seed, dtype=dtype,
        args=TrainingArguments(**options["document"], seed=seed) if options["document"] else None,
        model_options=model_options)
    warm_start = warm_start or str(output / name / "passage-stage")
    cpu = {f"fit {name}": report["document stage"]["cpu_seconds"]}
    if "passage stage" in report:
        cpu["passage stage"] = report["passage stage"]["cpu_seconds"]
    if model.fusion is None:
        raise SystemExit(f"{name} seed {seed}: the recipe chose no fusion weight ({report['fusion']})")
    started = time.process_time()
    zero_shot = split_rr(cls(warm_start, **model_options)(_all(data["tests"])), data["tests"])
    alone, fused, controls, fused_controls = scored(model, data["tests"])
    cpu[f"scoring {name}"] = time.process_time() - started
    print(f"{name} seed {seed}: " + "  ".join(
        f"{split} RR zero-shot {_mean(zero_shot[split])} alone {_mean(alone[split])} fused {_mean(fused[split])}"
        for split in data["tests"]) + f"  (fusion weight {model.fusion.weight:g})", flush=True)
    return {"passage stage": warm_start,
            "scores": {f"zero-shot {name}": zero_shot, name: alone, f"fused {name}": fused},
            "controls": {name: controls, f"fused {name}": fused_controls},
            "validation": {name: report["document stage"]}, "fusion": {name: model.fusion.to_dict()},
            "trained": {name: report["document stage"]["trained"]}, "cpu_seconds": cpu}


def _record(scores: dict, system: str, seed: int, by_split: dict) -> None:
    for split, by_query in by_split.items():
        scores.setdefault(system, {}).setdefault(split, {})[seed] = by_query


def _all(tests: dict[str, pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(list(tests.values()), ignore_index=True)


def _mean(by_query: dict) -> str:
    return f"{np.mean(list(by_query.values())):.3f}"


def split_rr(run: pd.DataFrame, tests: dict[str, pd.DataFrame]) -> dict[str, dict[str, float]]:
    """Per split, the per-query RR of ``run`` over that split's queries, as ``pt.Experiment`` (and
    ``query_controls``) measure it: tied scores in trec_eval's order, not the candidates' (which list the
    relevant document first, and would favour a system that ties it with others)."""
    from pyterrier.measures import RR

    from pyterrier_longdoc.evaluation import per_query_values

    out = {}
    for split, candidates in tests.items():
        topics = candidates[["qid", "query"]].drop_duplicates("qid")
        qrels = candidates.loc[candidates["label"] > 0, ["qid", "docno", "label"]]
        values = per_query_values({"run": run[run["qid"].isin(set(topics["qid"]))]}, topics, qrels, RR)["run"]
        out[split] = {str(qid): float(value) for qid, value in values.items()}
    return out


def baselines(tests: dict[str, pd.DataFrame]) -> dict:
    """Per-query RR of a random order (expected) and of BM25 (the candidates' ``score``)."""
    return {"random order": {split: {0: eff.random_rr(c)} for split, c in tests.items()},
            "BM25": {split: {0: by_query} for split, by_query in split_rr(_all(tests), tests).items()}}


def scored(model, tests: dict[str, pd.DataFrame]) -> tuple[dict, dict, list[dict], list[dict]]:
    """The model's per-query RR alone and fused with BM25 (the candidates' ``score``, at the model's saved
    fusion) per split, and the query controls of both (one group per split, the fused ones from the model's
    control runs fused alike) as records; the real queries' run scored once."""
    from pyterrier_longdoc.evaluation import control_runs, query_controls
    from pyterrier_longdoc.fusion import fuse_runs

    candidates = _all(tests)
    qrels = candidates.loc[candidates["label"] > 0, ["qid", "docno", "label"]]
    groups = {split: c["qid"].unique() for split, c in tests.items()}
    runs = control_runs(model, candidates)
    fused = {ranking: fuse_runs(candidates, run, model.fusion.weight, model.fusion.normalisation)
             for ranking, run in runs.items()}
    return (split_rr(runs["real query"], tests), split_rr(fused["real query"], tests),
            query_controls(model, candidates, qrels, groups=groups, runs=runs).to_dict("records"),
            query_controls(None, candidates, qrels, groups=groups, runs=fused).to_dict("records"))


def _described(options: dict) -> dict:
    return {key: value for key, value in options.items() if key in ("backbone", "passage_options", "windows")}


# ---------------------------------------------------------------------------------------------
# tests and verdicts


def paired_tests(scores: dict) -> list[dict]:
    """Per model and split: the model alone against its zero-shot start and against BM25, fused against
    BM25 (paired t-tests on the seed-averaged per-query RR), Holm over all of them."""
    from scipy import stats

    from pyterrier_longdoc.evaluation import correct_pvalues

    def per_query(system: str, split: str) -> pd.Series:
        return pd.DataFrame(scores[system][split]).mean(axis=1)

    rows = []
    for name in MODELS:
        for split in scores[name]:
            for system, against in ((name, f"zero-shot {name}"), (name, "BM25"), (f"fused {name}", "BM25")):
                difference = per_query(system, split) - per_query(against, split).reindex(per_query(system, split).index)
                p = 1.0 if np.allclose(difference, 0) else float(stats.ttest_1samp(difference, 0.0).pvalue)
                rows.append({"model": name, "split": split, "system": system, "against": against,
                             "difference": float(difference.mean()), "ci95": eff._half_width(difference),
                             "p-value": p})
    corrected = correct_pvalues([row["p-value"] for row in rows], "holm")[1]
    return [{**row, "p-value (Holm)": float(p)} for row, p in zip(rows, corrected)]


def verdicts(tests: list[dict], controls: dict) -> dict[str, dict[str, dict[str, bool | None]]]:
    """``{model: {verdict: {split: True / False / None (reported only, or no controls)}}}``: no significant
    loss (Holm) against the zero-shot start, fused against BM25; the controls' ``reads_the_query`` at every seed.
    FirstP on far queries is reported only, for its first and last verdicts (the module's doc says why)."""
    lost = {(t["system"], t["against"], t["split"]): t["difference"] < 0 and t["p-value (Holm)"] < ALPHA
            for t in tests}
    reads = eff.controls_verdicts(controls)
    out = {}
    for name in MODELS:
        splits = sorted({t["split"] for t in tests if t["model"] == name})
        blind = {s: (name, s) == ("FirstP", "far") for s in splits}  # the answer beyond what it reads
        out[name] = {
            VERDICTS[0]: {s: None if blind[s] else not lost[(name, f"zero-shot {name}", s)] for s in splits},
            VERDICTS[1]: {s: not lost[(f"fused {name}", "BM25", s)] for s in splits},
            VERDICTS[2]: {s: None if blind[s] else _all_seeds(reads.get(name, {}).get(s)) for s in splits}}
    return out


def _all_seeds(values: list[bool] | None) -> bool | None:
    return None if values is None else all(values)


def report_markdown(result: dict) -> str:
    marks = {True: "yes", False: "NO", None: "(reported)"}
    lines = [result["description"], "", eff.markdown(result), "", "Paired t-tests on the seed-averaged per-query RR "
             "(Holm over the table):", "", "| system | against | split | difference (95% CI) | p (Holm) |",
             "|---|---|---|---|---|"]
    lines += [f"| {t['system']} | {t['against']} | {t['split']} | {t['difference']:+.3f} ± {t['ci95']:.3f} | "
              f"{t['p-value (Holm)']:.4f} |" for t in result["tests"]]
    lines += ["", "| model | " + " | ".join(VERDICTS) + " |", "|---|---|---|---|"]
    lines += [f"| {name} | " + " | ".join(", ".join(f"{s} {marks[v]}" for s, v in by_verdict[verdict].items())
                                         for verdict in VERDICTS) + " |"
              for name, by_verdict in result["verdicts"].items()]
    lines += ["", "Fusion weight (the model's share, chosen on validation) and parts training changed, per seed:", ""]
    for name in MODELS:
        weights = ", ".join(f"{f['weight']:g}" for f in result["fusion"][name].values())
        trained = "; ".join(result["trained"][name].values())
        lines.append(f"- {name}: weights {weights}; trained: {trained}")
    cpu = "; ".join(f"{stage} {', '.join(f'{x:.0f}' for x in values)}" for stage, values in result["cpu_seconds"].items())
    units = "; ".join(f"{unit} at commit {m['commit']}, {m['date']}, {m['wall_seconds']} s wall" if m else
                      f"{unit}: not recorded" for unit, m in result.get("units", {}).items())
    return ("\n".join(lines) + f"\n\n{eff.controls_markdown(result)}\nCPU seconds: {cpu}\n\n"
            f"Units (each model and seed; a resumed run reads the finished ones back, so the header's wall time and "
            f"commit are the last run's): {units}\n")


# ---------------------------------------------------------------------------------------------
# --plan


def plan(collections: list[str], settings: list[str], seeds: list[int], quick: bool, output: Path) -> str:
    """The run's units and an estimate of its CPU time: the passage stage and the fits at the CPU seconds the
    committed effectiveness records hold for the recipe over the six-layer MiniLM (the demo's setting scaled by
    its layers and passage steps), the scoring at this machine's measured seconds per document."""
    from pyterrier_longdoc import demo
    from pyterrier_longdoc.training.recipe import RECIPE_PASSAGE_STAGE

    recorded = recorded_cpu_seconds()
    per_document = measured_scoring_seconds(output, quick)
    sizes = eff.QUICK if quick else eff.FULL
    documents = 2 * sizes["test_queries"] * (1 + sizes["retrieved"] + sizes["random"])
    # per model and seed: the zero-shot start, the model, two controls (the fusion's validation is small)
    scorings = 4 * documents
    scale = {"defaults": (1.0, 1.0),
             "demo": (demo.BACKBONE_LAYERS / 6, demo.BACKBONE_LAYERS / 6 * demo.PASSAGE_STAGE["steps"]
                      / RECIPE_PASSAGE_STAGE["steps"])}
    lines = [f"Units: {len(collections)} collections x {len(settings)} settings x {len(seeds)} seeds: "
             f"{len(collections) * len(settings) * len(seeds)} passage stages, "
             f"{len(collections) * len(settings) * len(seeds) * len(MODELS)} fits, each model then scoring "
             f"{scorings} documents (zero-shot, trained, two controls)"]
    total = 0.0
    for setting in settings:
        layers, steps = scale[setting]
        passage = recorded["passage stage"] * steps
        fits = sum(recorded[f"fit {name}"] for name in MODELS) * layers
        scoring = sum(per_document[setting][name] for name in MODELS) * scorings
        each = passage + fits + scoring
        total += each * len(collections) * len(seeds)
        lines.append(f"- {setting}, per collection and seed: passage stage {passage:.0f} + fits {fits:.0f} + scoring "
                     f"{scoring:.0f} = {each:.0f} CPU seconds")
    lines.append(f"Estimated CPU time of the run: {total / 3600:.1f} CPU hours (on 2 cores, about "
                 f"{total / 2 / 3600:.1f} h wall); passage stage and fits from {recorded['source']}, scoring measured "
                 "here")
    return "\n".join(lines)


def recorded_cpu_seconds() -> dict:
    """The median CPU seconds of the recipe's passage stage and of each model's fit in the committed
    effectiveness results (the six-layer MiniLM, 100 training queries)."""
    import json

    files = sorted((ROOT / "benchmarks" / "results").glob("effectiveness-*.json"))
    minutes = {}
    for path in files:
        for stage, values in json.loads(path.read_text()).get("minutes", {}).items():
            minutes.setdefault(stage.removesuffix(", CPU"), []).extend(values)
    out = {stage: 60 * float(np.median(values)) for stage, values in minutes.items()}
    missing = [s for s in ("passage stage", *(f"fit {n}" for n in MODELS)) if s not in out]
    if missing:
        raise SystemExit(f"--plan: no committed effectiveness record holds {missing}")
    return {**out, "source": f"{len([f for f in files if 'minutes' in json.loads(f.read_text())])} effectiveness "
                             "records"}


def measured_scoring_seconds(output: Path, quick: bool) -> dict[str, dict[str, float]]:
    """CPU seconds per document scored, per setting and model, measured on eight documents of the full run's length."""
    import pyterrier_longdoc as pl

    sizes, rows = eff.QUICK if quick else eff.FULL, 8
    text = " ".join(["word"] * sizes["max_doc_tokens"])
    frame = pd.DataFrame({"qid": "q", "query": "what is a word", "docno": [f"d{i}" for i in range(rows)],
                          "text": text})
    out = {}
    for setting in SETTINGS:
        options = setting_options(setting, eff._tiny_backbone(output) if quick else eff._minilm(), quick,
                                  output / "plan" / setting)
        for name in MODELS:
            model = getattr(pl, name)(options["backbone"], **({} if name == "FirstP" else options["windows"]))
            model(frame.head(1))  # the first call's one-off costs are not a document's
            started = time.process_time()
            model(frame)
            out.setdefault(setting, {})[name] = (time.process_time() - started) / rows
    return out


if __name__ == "__main__":
    sys.exit(main())

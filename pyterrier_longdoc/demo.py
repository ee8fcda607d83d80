"""The main job: PARADE, MaxP and FirstP trained on real prose that ships with the package, offline.

The collection (``data.prose``) is WordNet's glosses turned into the positional-bias paper's
FarRelevant setting: per query ``"what is <term>"`` one document of other dictionary entries, in
which the term's own entry is the one relevant passage, inside the first 512 tokens (near) or
beyond them (far). Other entries mention the term too, so BM25's top documents are hard negatives.

The demo runs the library's one-call recipe (``training.train_long_document_ranker``): a passage
stage from the packaged MiniLM (all-MiniLM-L6-v2, a sentence-embedding model with no ranking head)
on windows of the training documents, shared by the three models, then document-level training of
FirstP, MaxP and PARADE-Attn with ``fit``, which evaluates the start and each epoch on held-out
training queries and keeps the best. Each model re-ranks BM25's candidates of the test queries;
the demo prints the ``pt.Experiment`` tables per group (paired t-tests against FirstP, Holm over
every test the demo draws, 95% intervals), each model's query controls (the same candidates with
another query's text and with a constant query) beside its zero-shot start, and its conclusions,
checked: it fails when one does not hold. It saves the trained models, ``results.json``, a plot,
and the test candidates with their qrels.
"""
from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyterrier as pt
import torch
from ir_measures import RR, nDCG  # pyterrier.measures' own
from scipy import stats

from .engine.runtime import Runtime, native_bf16_cpu
from .data.prose import prose_collection
from .evaluation import (control_runs, correct_pvalues, mean_interval, per_query_values, query_controls,
                         reads_the_query)
from .fusion import fuse_runs
from .models import FirstP, LongDocReranker, MaxP, ParadeAttn
from .packaged import packaged_minilm

# 80 training queries (half near, half far; the recipe holds 20% out for validation), 50 near and 50
# far test queries, and 400 more queries whose documents give the passage stage its triples (800; from
# the 80 training queries alone, 156 triples left it ranking test queries near a random order);
# documents of up to 720 tokens; BM25's top 5 documents re-ranked
COLLECTION: dict[str, Any] = dict(train_queries=80, test_queries=50, passage_queries=400, max_doc_tokens=720)
QUICK_COLLECTION: dict[str, Any] = dict(train_queries=8, test_queries=4, passage_queries=8, max_doc_tokens=720)
CANDIDATES = 5
# the packaged MiniLM's first four layers: three models trained and scored with their controls within
# 1,500 CPU seconds on 2 cores (the six layers cost half as much again); its first two or three layers
# learned little in the passage stage's 100 steps (a loss of 0.94 and 0.84 from 1.0, where four
# layers reached 0.16), on the training queries
BACKBONE_LAYERS = 4
WINDOWS = dict(window=240, stride=240)  # three disjoint windows of the 720-token documents
# each model class and its settings
MODELS: dict[str, tuple[type[LongDocReranker], dict[str, Any]]] = {
    "FirstP": (FirstP, {}), "MaxP": (MaxP, WINDOWS), "ParadeAttn": (ParadeAttn, WINDOWS)}
# what each model can read: FirstP's input ends before the far answers
GROUPS_READ = {"FirstP": ("near",), "MaxP": ("near", "far"), "ParadeAttn": ("near", "far")}
FUSED = " + BM25"  # a model fused with the first stage (its weight chosen on validation) is named "<model> + BM25"
# The passage stage over four layers sits near a loss of 1.0 (the margin: no preference yet) for 60-80
# steps before it learns: within the recipe's 100 steps it ended at 0.23 in one run and 0.70 in another
# of seed 0 (the triples differing by one query's candidates), the latter ranking with the real query as
# with a constant one. 200 steps leave it room, at 165 CPU seconds more.
PASSAGE_STAGE = dict(steps=200)
QUICK_STAGES = dict(passage=dict(steps=4, triples_per_step=4), document=dict(epochs=1))
CEILING = 0.95  # at or above it a group leaves no room for the tests to show a difference
ALPHA = 0.05


def bm25_over(collection, index_dir: str | Path, num_results: int = 1000):
    """BM25 over ``collection.documents``: PISA's, indexed into ``index_dir`` (overwritten), where
    PyTerrier-PISA is installed (Linux x86_64); elsewhere the library's pure-Python BM25
    (``data.bm25.BM25``, PISA's formula and stemmer), in memory."""
    from .data.bm25 import bm25_retriever

    return bm25_retriever(collection.documents, index_dir, num_results=num_results)


class RandomFill(pt.Transformer):
    """``retriever``'s top ``k`` for each query, topped up to ``k`` with random documents of
    ``docnos`` (seeded by the qid) scored below its last: BM25 finds few documents for a one-term
    query (a median of 3 of the prose's 580), a list of 3 leaves a re-ranker little to do, and a
    query BM25 finds nothing for would drop out of the evaluation of every re-ranker. Topics in,
    results out (``qid, query, docno, score, rank``)."""

    def __init__(self, retriever: pt.Transformer, docnos, k: int = CANDIDATES, seed: int = 0):
        self.retriever, self.k, self.seed = retriever, k, seed
        self.docnos = np.asarray(list(docnos), dtype=object)

    def transform(self, topics: pd.DataFrame) -> pd.DataFrame:
        pt.validate.query_frame(topics, ["query"])
        found = (self.retriever % self.k).transform(topics)
        by_query = dict(tuple(found.groupby("qid", sort=False)))
        rows = []
        for qid, query in zip(topics["qid"], topics["query"]):
            hits = by_query.get(qid, found.iloc[:0])
            pool = self.docnos[~np.isin(self.docnos, hits["docno"].to_numpy())]
            rng = np.random.default_rng([self.seed, *map(ord, str(qid))])
            drawn = rng.choice(pool, size=min(max(0, self.k - len(hits)), len(pool)), replace=False)
            lowest = float(hits["score"].min()) if len(hits) else 0.0
            rows += [hits[["qid", "docno", "score"]].assign(query=query),
                     pd.DataFrame({"qid": qid, "query": query, "docno": drawn,
                                   "score": lowest - 1.0 - np.arange(len(drawn), dtype=float)})]
        columns = ["qid", "query", "docno", "score"]
        return pt.model.add_ranks(pd.concat(rows, ignore_index=True)[columns] if rows else pd.DataFrame(columns=columns))


def run(output: str | Path = "demo-output", *, quick: bool = False, backbone: str | None = None,
        candidates: int = CANDIDATES, dtype: str = "fp32", seed: int = 0, check: bool | None = None) -> dict:
    """Runs the demo; returns ``results.json``'s content (the tables by group, the controls, the
    conclusions, the stages' times).

    dtype: the models' precision: fp32 by default on every CPU, the precision of the recorded run
        (``"bf16"``, or ``"auto"``: bf16 where the device computes it natively; the conclusions are
        checked alike).
    seed: the recipe's seed (the passage stage, PARADE-Attn's new head, the training order).
    check: verify the conclusions (see ``conclusions``) and exit with an error naming those that do
        not hold; default on, except with ``quick``.
    """
    started, cpu_started = time.time(), time.process_time()  # this run's, also when a process runs several
    dtype = Runtime(dtype=dtype).dtype_name()  # checked first, then what it comes to here
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    backbone = backbone or packaged_minilm(layers=BACKBONE_LAYERS, directory=output / "backbone")
    collection = prose_collection(**(QUICK_COLLECTION if quick else COLLECTION), tokenizer=backbone)
    print(f"Collection (WordNet glosses, shipped with the package): {collection!r}", flush=True)
    bm25 = bm25_over(collection, output / "bm25-index")
    first_stage = RandomFill(bm25, collection.documents["docno"], candidates, seed) >> collection.text
    train, test = collection.split("train"), collection.split("test")
    test_candidates = first_stage(test.topics[["qid", "query"]])
    groups = {"near": test.near().topics["qid"], "far": test.far().topics["qid"]}
    stages, models = train_models(backbone, train, collection.split("passage"), first_stage, output / "models", quick,
                                  dtype, seed)
    print_training(stages)
    runs = {"BM25": (bm25 % candidates)(test.topics[["qid", "query"]])}  # BM25 alone, not topped up
    zero_shot, controls = {}, {}
    for name, model in models.items():
        print(f"\nScoring the test queries with {name}, its controls and its zero-shot start", flush=True)
        read = {group: groups[group] for group in GROUPS_READ[name]}
        runs[name], controls[name], runs[name + FUSED], controls[name + FUSED] = scored_with_controls(
            model, test_candidates, test.qrels, read)
        if stages[name]["best_step"] == 0:  # fit kept its start: the same weights, the same run
            zero_shot[name] = runs[name]
            continue
        cls, settings = MODELS[name]
        start = cls(stages["passage stage"]["folder"], dtype=dtype, verbose=True, **settings)
        zero_shot[name] = start(test_candidates)
    tables, family, per_query = experiment_tables(runs, zero_shot, test, groups)
    controls, tests = corrected_controls(controls, family)
    random_rr = {group: expected_random_rr(test_candidates, test.topics.loc[test.topics["qid"].isin(qids), "qid"],
                                           test.qrels) for group, qids in groups.items()}
    findings = conclusions(tables, random_rr, controls, tests)
    print_report(tables, random_rr, controls, tests, findings, dtype)
    figure = results_plot(tables, random_rr, controls, output / "results.png")
    save_test_candidates(test_candidates, test, groups, output)
    seconds, cpu_seconds = time.time() - started, time.process_time() - cpu_started
    results = results_record(tables, random_rr, controls, tests, findings, stages, dtype, quick, len(test.topics),
                             seconds, cpu_seconds, seed)
    results["per_query_rr"] = {group: {name: values.round(6).to_dict() for name, values in frame.items()}
                               for group, frame in per_query.items()}
    (output / "results.json").write_text(json.dumps(results, indent=1))
    print(f"\nTrained models in {output / 'models'} (from_pretrained or pt.Artifact.load); results in "
          f"{output / 'results.json'}, plotted in {figure}; test candidates in {output / 'test-candidates.tsv'} with "
          f"{output / 'test-qrels.tsv'}. Finished in {seconds:.0f} s ({cpu_seconds:.0f} CPU seconds over "
          f"{torch.get_num_threads()} threads)")
    if (not quick if check is None else check) and not all(findings.values()):
        failed = "; ".join(f for f, holds in findings.items() if not holds)
        raise SystemExit(f"the demo's conclusions do not hold in this run ({dtype}): {failed}")
    return results


def saved_models(output: str | Path = "demo-output") -> Path | None:
    """The ``models`` folder of a full (not ``quick``) run saved in ``output``, holding every model of
    ``MODELS``; None where there is none (no run, a quick run, a model missing)."""
    output = Path(output)
    results = output / "results.json"
    if not results.exists() or json.loads(results.read_text()).get("quick", True):
        return None
    return output / "models" if all((output / "models" / name / "config.json").exists() for name in MODELS) else None


def train_models(backbone: str, train, passage, first_stage, directory: Path, quick: bool, dtype: str, seed: int):
    """The recipe for each model: the passage stage once (with FirstP's call, on triples from the
    documents of the ``passage`` queries), then each model's document stage from it, on ``train``.
    Returns the stages' report and the trained models by name."""
    from .training import TrainingArguments
    from .training.recipe import RECIPE_DOCUMENT_STAGE, document_passage_triples, train_long_document_ranker

    passage_options = QUICK_STAGES["passage"] if quick else PASSAGE_STAGE
    args = TrainingArguments(**{**RECIPE_DOCUMENT_STAGE, **(QUICK_STAGES["document"] if quick else {})}, seed=seed)
    triples = document_passage_triples(passage.topics[["qid", "query"]], passage.qrels, first_stage,
                                       text=passage.text, seed=seed)  # a relevant document BM25 missed, too
    stages: dict[str, dict] = {}
    models: dict[str, LongDocReranker] = {}
    warm_start = backbone
    for name, (cls, settings) in MODELS.items():
        print(f"\nTraining {name}" + (" (the passage stage first, shared by the three models)" if not models else ""),
              flush=True)
        torch.manual_seed(seed)
        model, report = train_long_document_ranker(
            cls, warm_start, train.topics[["qid", "query"]], train.qrels, first_stage, text=train.text,
            passages=triples if not models else False, output_dir=directory / name, passage_options=passage_options,
            args=args, seed=seed, dtype=dtype, model_options={**settings, "verbose": True}, fusion=True)
        if not models:
            warm_start = str(directory / name / "passage-stage")
            stages["passage stage"] = {**report["passage stage"], "folder": warm_start}
        stages[name] = {**report["document stage"], "fusion": model.fusion.weight}
        models[name] = model
    return stages, models


def scored_with_controls(model, candidates: pd.DataFrame, qrels: pd.DataFrame, groups: dict):
    """``model``'s run on ``candidates`` and its query controls (``evaluation.query_controls``) in
    ``groups``, the groups where it can read the answer (FirstP's far candidates are not scored
    again: no query can help a model that never reads the answer), the real query's run scored once;
    then the same for the model fused with the first stage (``candidates``' score) at the weight chosen
    on validation: its run, and its controls from the model's control runs fused alike (no scoring)."""
    real = model(candidates)
    read = candidates[candidates["qid"].isin({qid for qids in groups.values() for qid in qids})]
    runs = control_runs(model, read, run=real)

    def fused(run: pd.DataFrame) -> pd.DataFrame:
        return fuse_runs(candidates, run, model.fusion.weight, model.fusion.normalisation)

    fused_controls = query_controls(None, read, qrels, groups=groups, runs={k: fused(v) for k, v in runs.items()})
    return real, query_controls(model, read, qrels, groups=groups, runs=runs), fused(real), fused_controls


def experiment_tables(runs: dict, zero_shot: dict, test, groups: dict) -> tuple[dict, pd.DataFrame, dict]:
    """Per group, ``pt.Experiment`` with paired t-tests against FirstP, its RR's 95% interval and the
    zero-shot start's RR; the tests drawn (``group, name, test, p-value``: each system against
    FirstP, BM25 against each trained model, each trained model against its zero-shot start where it
    can read the answer), for Holm over the demo's family; and the per-query RR by group (a frame of
    qid by system, the zero-shot starts as ``zero-shot NAME``)."""
    tables, family, per_query = {}, [], {}
    for group, qids in groups.items():
        topics = test.topics[test.topics["qid"].isin(set(qids))][["qid", "query"]]
        qrels = test.qrels[test.qrels["qid"].isin(set(qids))]
        systems = [frame[frame["qid"].isin(set(qids))] for frame in runs.values()]
        table = pt.Experiment(systems, topics, qrels, [nDCG @ 10, RR], names=list(runs),
                              baseline=list(runs).index("FirstP"), round=3)
        values = pt.Experiment(systems, topics, qrels, [RR], names=list(runs), perquery=True)
        per_query[group] = values.pivot(index="qid", columns="name", values="value")
        starts = per_query_values({name: frame[frame["qid"].isin(set(qids))] for name, frame in zero_shot.items()},
                                  topics, qrels, RR) if zero_shot else pd.DataFrame()
        start = starts.mean()
        intervals = [mean_interval(per_query[group][name])[1:] for name in table["name"]]
        table["RR 95% low"], table["RR 95% high"] = [round(i[0], 3) for i in intervals], [round(i[1], 3) for i in intervals]
        table["zero-shot RR"] = [round(float(start[n]), 3) if n in start else None for n in table["name"]]
        tables[group] = table
        for name in table["name"]:
            if name != "FirstP" and not name.endswith(FUSED):
                family.append((group, name, "against FirstP", float(table.set_index("name").loc[name, "RR p-value"])))
        for name in [n for n in zero_shot] + [n + FUSED for n in zero_shot]:  # BM25 against every trained model
            p = float(stats.ttest_rel(per_query[group]["BM25"], per_query[group][name]).pvalue)  # and its fusion
            family.append((group, name, "against BM25", p))
        for name in (n for n in zero_shot if group in GROUPS_READ[n]):
            trained, before = per_query[group][name], starts[name].reindex(per_query[group].index)
            p = 1.0 if np.allclose(trained, before) else float(stats.ttest_rel(trained, before).pvalue)
            family.append((group, name, "against its zero-shot start", p))
        per_query[group] = per_query[group].join(starts.add_prefix("zero-shot "))
    return tables, pd.DataFrame(family, columns=["group", "name", "test", "p-value"]), per_query


def corrected_controls(controls: dict, family: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """The controls' p-values and the experiment's corrected together by Holm (one family: every
    test the demo draws): the controls with their ``p-value corrected`` replaced, and the
    experiment's tests with a ``p-value (Holm)`` column."""
    rows = [(name, i, p) for name, table in controls.items() for i, p in table["p-value"].items() if pd.notna(p)]
    p_values = np.array([p for _, _, p in rows] + list(family["p-value"]), dtype=float)
    corrected = correct_pvalues(np.nan_to_num(p_values, nan=1.0), "holm")[1]
    controls = {name: table.copy() for name, table in controls.items()}
    for (name, i, _), value in zip(rows, corrected):
        controls[name].loc[i, "p-value corrected"] = value
    return controls, family.assign(**{"p-value (Holm)": corrected[len(rows):]})


def conclusions(tables: dict, random_rr: dict, controls: dict, tests: pd.DataFrame) -> dict[str, bool]:
    """The demo's findings, each True when this run shows it (``tests``: the experiment's tests
    with their Holm-corrected p-values, as ``corrected_controls`` gives them)."""
    def value(group: str, name: str, column: str = "RR") -> float:
        table = tables[group].set_index("name")
        return float(table.loc[name, column]) if name in table.index and table.loc[name, column] is not None \
            else float("nan")

    def corrected(group: str, name: str, test: str = "against FirstP") -> float:
        row = tests[(tests["group"] == group) & (tests["name"] == name) & (tests["test"] == test)]
        return float(row["p-value (Holm)"].iloc[0]) if len(row) else float("nan")

    def reads(name: str) -> bool:
        table = controls[name]
        return reads_the_query(table[table["group"].isin(GROUPS_READ[name])])

    trained = [name for name in MODELS if name in controls]
    fused = [name + FUSED for name in ("ParadeAttn", "MaxP") if name + FUSED in controls]
    return {
        "every trained model reads the query where it can read the answer: with another query's text or a constant "
        "query it ranks at most 0.1 above a random order, and below the real query (paired t-test, Holm, p < 0.05)":
            all(reads(name) for name in trained),
        "far answers: ParadeAttn and MaxP rank them above FirstP (paired t-test, Holm, p < 0.05)":
            all(value("far", n) > value("far", "FirstP") and corrected("far", n) < ALPHA for n in ("ParadeAttn", "MaxP")),
        "near answers: FirstP is not significantly below MaxP and ParadeAttn (paired t-test, Holm)":
            all(not (value("near", n) > value("near", "FirstP") and corrected("near", n) < ALPHA)
                for n in ("ParadeAttn", "MaxP")),
        "no trained model is below its zero-shot start where it can read the answer (paired t-test, Holm)":
            all(not (value(g, n) < value(g, n, "zero-shot RR") and corrected(g, n, "against its zero-shot start") < ALPHA)
                for n in trained for g in GROUPS_READ[n]),
        f"no ceiling: every model compared is below RR {CEILING} in both groups, so the tests have room":
            all(value(g, n) < CEILING for g in ("near", "far") for n in trained),
        "fused with BM25 (the weight chosen on validation), ParadeAttn and MaxP are not below BM25 in either group "
        "(paired t-test, Holm)":
            len(fused) == 2 and all(not (value(g, n) < value(g, "BM25") and corrected(g, n, "against BM25") < ALPHA)
                                    for n in fused for g in ("near", "far")),
    }


def expected_random_rr(first_stage_run: pd.DataFrame, qids, qrels: pd.DataFrame) -> float:
    """The mean RR of a random order of each query's candidates: ``H(n) / n`` with one relevant
    document among n (0 when the first stage missed it)."""
    relevant = set(zip(qrels.loc[qrels["label"] > 0, "qid"], qrels.loc[qrels["label"] > 0, "docno"]))
    values = []
    for qid in qids:
        docnos = first_stage_run.loc[first_stage_run["qid"] == qid, "docno"]
        n = len(docnos)
        hit = any((qid, d) in relevant for d in docnos)
        values.append(sum(1 / k for k in range(1, n + 1)) / n if hit and n else 0.0)
    return float(sum(values) / len(values)) if values else float("nan")


def print_training(stages: dict) -> None:
    """What each stage did, and where training did not beat the start (the start is then kept)."""
    passage = stages["passage stage"]
    print(f"\nPassage stage: {passage['triples']} triples, {passage['steps']} steps, loss {passage['loss_first']:.3f} -> "
          f"{passage['loss_last']:.3f}, {passage['cpu_seconds']:.0f} CPU seconds")
    for name in MODELS:
        report = stages[name]
        kept = ("fit did not beat its start on validation: the start is kept" if report["best_step"] == 0 else
                f"the model of step {report['best_step']} is kept")
        print(f"{name}: validation {report['metric']} {report['start']:.3f} at the start, best {report['best']:.3f}, "
              f"last {report['last']:.3f} (random orders {report['random']:.3f}); {kept}; "
              f"{report['cpu_seconds']:.0f} CPU seconds")


def print_report(tables: dict, random_rr: dict, controls: dict, tests: pd.DataFrame, findings: dict,
                 dtype: str) -> None:
    for group, table in tables.items():
        print(f"\nTest queries, answer {group.upper()} ({'inside' if group == 'near' else 'beyond'} the first 512 "
              f"tokens), {len(table)} systems; a random order of the candidates: "
              f"RR {random_rr[group]:.3f}. Paired t-tests against FirstP (pt.Experiment), RR's 95% interval, the "
              "zero-shot start's RR:")
        print(table.to_string(index=False))
    print("\nEvery test the demo draws, Holm-corrected as one family (with the controls' tests below):")
    print(tests.round(4).to_string(index=False))
    print("\nAgainst BM25 (paired t-test, Holm over the demo's family): each model alone and fused with BM25")
    print(against_bm25(tables, tests).to_string(index=False))
    for name, table in controls.items():
        print(f"\nQuery controls, {name}: the same candidates with another query's text and with a constant query "
              "(paired t-tests of the real query against each, Holm over the demo's tests)")
        print(table.round(4).to_string(index=False))
    print(f"\nConclusions ({dtype}):")
    for finding, holds in findings.items():
        print(f"- {'yes' if holds else 'NO '}  {finding}")


def against_bm25(tables: dict, tests: pd.DataFrame) -> pd.DataFrame:
    """Each trained model and its fusion against BM25, per group: both RRs, the Holm-corrected p-value and
    the verdict (``above``, ``below`` or ``level``: no significant difference)."""
    rows = []
    for _, test in tests[(tests["test"] == "against BM25") & tests["group"].isin(list(tables))].iterrows():
        table = tables[test["group"]].set_index("name")
        if not {test["name"], "BM25"} <= set(table.index):
            continue
        rr, bm25, p = float(table.loc[test["name"], "RR"]), float(table.loc["BM25", "RR"]), test["p-value (Holm)"]
        verdict = "level" if not p < ALPHA else "above" if rr > bm25 else "below"
        rows.append((test["group"], test["name"], rr, bm25, round(float(p), 4), verdict))
    return pd.DataFrame(rows, columns=["group", "name", "RR", "BM25 RR", "p-value (Holm)", "against BM25"])


def save_test_candidates(candidates: pd.DataFrame, test, groups: dict, output: Path) -> None:
    """The test candidates the models re-ranked (``qid, query, docno, text, group``) and their
    qrels (``qid, docno, label``), as tab-separated files: re-score them with any model."""
    group_of = {qid: group for group, qids in groups.items() for qid in qids}
    frame = candidates[["qid", "query", "docno", "text"]].assign(group=candidates["qid"].map(group_of))
    frame.to_csv(output / "test-candidates.tsv", sep="\t", index=False)
    test.qrels[["qid", "docno", "label"]].to_csv(output / "test-qrels.tsv", sep="\t", index=False)


def results_record(tables, random_rr, controls, tests, findings, stages, dtype, quick, n_test, seconds, cpu_seconds,
                   seed) -> dict:
    def records(table: pd.DataFrame) -> list[dict]:
        # not DataFrame.to_json: it writes 10 decimal places, so a p-value of 5e-14 became 0.0
        return table.astype(object).where(table.notna(), None).to_dict(orient="records")

    return {
        "dtype": dtype, "seed": seed, "seconds": round(seconds), "cpu_seconds": round(cpu_seconds), "quick": quick,
        "test_queries": n_test, "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
        "native_bf16": native_bf16_cpu(), "random_rr": random_rr, "conclusions": findings,
        "stages": {name: {k: v for k, v in report.items() if isinstance(v, (int, float, str, bool))}
                   for name, report in stages.items()},
        "tables": {group: records(table) for group, table in tables.items()},
        "tests": records(tests), "controls": {name: records(table) for name, table in controls.items()},
        "against_bm25": records(against_bm25(tables, tests)),
    }


def results_plot(tables: dict, random_rr: dict, controls: dict, path: Path) -> Path:
    """RR of each trained model per group with its 95% interval, with the real query and with each
    control, beside BM25's and a random order's: the demo's result in one picture."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    names = [n for n in MODELS if n in controls]
    fig = Figure(figsize=(9.0, 4.2))
    FigureCanvasAgg(fig)
    for k, group in enumerate(("near", "far")):
        ax = fig.add_subplot(1, 2, k + 1)
        x = np.arange(len(names))
        table = tables[group].set_index("name")
        errors = np.array([[table.loc[n, "RR"] - table.loc[n, "RR 95% low"], table.loc[n, "RR 95% high"] - table.loc[n, "RR"]]
                           for n in names]).clip(min=0).T
        ax.bar(x - 0.27, [table.loc[n, "RR"] for n in names], 0.27, yerr=errors, capsize=3, label="real query")
        for i, ranking in enumerate(("another query's text", "constant query"), start=1):
            values = [float(controls[n].loc[(controls[n]["group"] == group) & (controls[n]["ranking"] == ranking),
                                            "RR"].iloc[0]) if group in GROUPS_READ[n] else np.nan for n in names]
            ax.bar(x + (i - 1) * 0.27, values, 0.27, label=ranking)
        ax.axhline(random_rr[group], color="black", linestyle="--", label="random order")
        ax.axhline(float(table.loc["BM25", "RR"]), color="gray", linestyle=":", label="BM25")
        ax.set_xticks(x, names)
        ax.set_ylim(0, 1)
        ax.set_title("answer near the start" if group == "near" else "answer beyond token 512")
        ax.set_ylabel("RR (95% interval)" if k == 0 else "")
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8)
    fig.suptitle("FirstP, MaxP and PARADE-Attn trained on WordNet prose: the real query against the controls")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    return path

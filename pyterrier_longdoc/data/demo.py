"""The main job: the whole story offline, on the generated collection.

PISA BM25 retrieves; the packaged MiniLM is first trained as a passage cross-encoder on windows
of the training queries' documents (the papers' passage stage), then FirstP, MaxP and PARADE-Attn
start from it and are fine-tuned end to end on the training queries' documents with model
selection on held-out training queries (the library's recipe), re-rank the test queries' BM25
candidates, and a ``pt.Experiment`` table with significance tests against FirstP is
printed for the near and the far queries. The demo checks its own qualitative conclusions and
writes everything to ``results.json``.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

import pandas as pd
import pyterrier as pt
import torch
from pyterrier.measures import RR, nDCG

from ..models import FirstP, MaxP, ParadeAttn
from ..packaged import packaged_minilm  # noqa: F401 - its home in version 0.2
from .._runtime import Runtime, native_bf16_cpu
from .synthetic import make_collection
from ..training import TrainingArguments
from ..training.recipe import RECIPE_DOCUMENT_STAGE, RECIPE_PASSAGE_STAGE, document_passage_triples

MODELS = (FirstP, MaxP, ParadeAttn)
# The library's recipe (``train_long_document_ranker``, measured on real prose by
# benchmarks/effectiveness.py), its passage stage run once and shared by the three models:
# 1. the passage stage learns from the training queries' document qrels: the best-matching window
#    (BM25) of each relevant document against windows of BM25's negatives. (The earlier stage,
#    40 steps on the generated answers against cuts of other documents, had learned that cuts were
#    sometimes shorter than answers; with every cut as long as its answer it learned nothing.)
# 2. the document stage holds out 20% of the training queries, evaluates the start and each epoch's
#    model, and keeps the best one: training never leaves a model below its start on them.
TRAINING = TrainingArguments(**RECIPE_DOCUMENT_STAGE, seed=42)
# Sized for 15 minutes on 2 CPU cores: 32 training and 100 test queries (50 near, 50 far), four
# documents each (the answer and three hard negatives) of 590-640 words (670-730 tokens) whose far
# answers start after word 530; MaxP and PARADE read disjoint 240-token windows (the papers'
# overlapping 150-token windows cost twice as much).
COLLECTION = dict(n_queries=132, test_fraction=0.7576, docs_per_query=4, doc_words=(590, 640), far_start=530)
QUICK_COLLECTION = dict(n_queries=16, test_fraction=0.5, docs_per_query=4, doc_words=(590, 640), far_start=530)
WINDOWS = dict(window=240, stride=240)


def bm25_over(collection, index_dir: str | Path):
    """BM25 over ``collection.docs``: PISA's, indexed into ``index_dir`` (overwritten), where
    PyTerrier-PISA is installed (Linux x86_64); elsewhere the library's pure-Python BM25
    (``data.bm25.BM25``, PISA's formula and stemmer), in memory."""
    from .bm25 import bm25_retriever

    # PISA's C++ code logs every step of indexing and compressing
    return bm25_retriever(collection.docs, index_dir, indexing=_native_output_silenced())


@contextlib.contextmanager
def _native_output_silenced():
    """Sends what native code writes to file descriptors 1 and 2 to /dev/null (Jupyter, too,
    forwards the descriptors to the notebook)."""
    sys.stdout.flush(), sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1), os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        os.close(saved[0]), os.close(saved[1])


def _setup(output: str | Path, quick: bool, backbone: str | None, dtype: str):
    """The output folder, the backbone, the dtype and the collection the demos share."""
    dtype = Runtime(dtype=dtype).dtype_name()  # checked first, then what it comes to here ("auto": bf16 or fp32)
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    collection = make_collection(**(QUICK_COLLECTION if quick else COLLECTION))
    print(f"Collection: {collection!r}")
    return output, backbone or packaged_minilm(), dtype, collection


def passage_stage(backbone: str, train, first_stage, directory: Path, dtype: str, seed: int = 42,
                  quick: bool = False) -> str:
    """The warm start: ``backbone`` fine-tuned as a passage cross-encoder on passage triples from
    the training queries' document qrels and ``first_stage``'s candidates
    (``training.recipe.document_passage_triples``); returns its CrossEncoder folder."""
    from ..training.passage import train_passage_ranker

    triples = document_passage_triples(train.topics, train.qrels, first_stage, seed=seed)
    options = {**RECIPE_PASSAGE_STAGE, "steps": 4} if quick else RECIPE_PASSAGE_STAGE
    return train_passage_ranker(backbone, triples, directory, **options, seed=seed, dtype=dtype)


def run(output: str | Path = "demo-output", *, quick: bool = False, backbone: str | None = None,
        candidates: int = 4, dtype: str = "fp32", check: bool | None = None) -> dict[str, pd.DataFrame]:
    """Runs the demo and returns the experiment tables by query group ("near", "far", "all").

    dtype: a model's ``dtype``, the precision of training and scoring: fp32 by default on every
        CPU, the precision of the run ``benchmarks/results/demo.json`` records (``"bf16"``, or
        ``"auto"``: bf16 where the device computes it natively; the conclusions are checked alike).
    check: verify the demo's qualitative conclusions (see ``conclusions``) and exit with an error
        naming those that do not hold; default on, except with ``quick``.

    Writes ``results.json`` into ``output``: the tables, the expected RR of a random order, the
    conclusions, the dtype, the machine and the time taken.
    """
    started = time.time()
    output, backbone, dtype, collection = _setup(output, quick, backbone, dtype)
    train, test = collection.split("train"), collection.split("test")
    bm25 = bm25_over(collection, output / "pisa-index")
    first_stage = bm25 % candidates >> collection.get_text()
    plot = _positional_bias_plot(collection, output / "positional-bias.png", backbone)
    print(f"Positional-bias plot of the collection: {plot}")
    print(f"Precision: {dtype}")

    warm_start = passage_stage(backbone, train, first_stage, output / "passage-ranker", dtype, quick=quick)
    print(f"Passage stage (the warm start): {warm_start}, {time.time() - started:.0f} s so far")
    runs = {"BM25": bm25(test.topics[["qid", "query"]])}
    candidate_lists = (bm25 % candidates)(test.topics[["qid", "query"]])  # what the models re-rank
    for cls in MODELS:
        torch.manual_seed(TRAINING.seed)  # a fresh head is drawn at construction
        model = cls(warm_start, dtype=dtype, verbose=True, **({} if cls is FirstP else WINDOWS))
        model.fit(train.topics, train.qrels, first_stage, args=TRAINING)
        model.save_pretrained(output / cls.name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the cropping report: FirstP crops by design
            runs[cls.__name__] = (first_stage >> model)(test.topics[["qid", "query"]])
    tables, random_rr = {}, {}
    for group, subset in (("near", test.near()), ("far", test.far()), ("all", test)):
        tables[group] = experiment(runs, subset)
        random_rr[group] = expected_random_rr(candidate_lists, subset)
        print(f"\nTest queries, relevant passage {group.upper()} ({len(subset.topics)} queries), "
              f"significance against FirstP (paired t-test); a random order of the candidates: RR "
              f"{random_rr[group]:.3f}")
        print(tables[group].to_string(index=False))
    findings = conclusions(tables, random_rr)
    seconds = time.time() - started
    cpu_seconds = time.process_time()  # all threads: on a shared machine, CPU seconds / cores is the idle wall time
    print(f"\nConclusions ({dtype}):")
    for finding, holds in findings.items():
        print(f"- {'yes' if holds else 'NO '}  {finding}")
    _write_results(output / "results.json", tables, random_rr, findings, dtype, seconds, quick, len(test.topics),
                   cpu_seconds)
    print(f"\nModels saved under {output}; results in {output / 'results.json'}; finished in {seconds:.0f} s "
          f"({cpu_seconds:.0f} CPU seconds over {torch.get_num_threads()} threads)")
    if (not quick if check is None else check) and not all(findings.values()):
        failed = "; ".join(f for f, holds in findings.items() if not holds)
        raise SystemExit(f"the demo's conclusions do not hold in this run ({dtype}): {failed}")
    return tables


def conclusions(tables: dict[str, pd.DataFrame], random_rr: dict[str, float]) -> dict[str, bool]:
    """The qualitative findings the README states, each True when this run shows it."""
    def value(group: str, name: str, column: str = "RR") -> float:
        table = tables[group].set_index("name")
        return float(table.loc[name, column]) if name in table.index else float("nan")

    # both gains on far queries are large (p < 1e-10 in the recorded run; benchmarks/results/demo.json)
    findings = {f"far queries: {name} ranks the answer higher than FirstP (paired t-test, p < 0.05)":
                value("far", name) > value("far", "FirstP") and value("far", name, "RR p-value") < 0.05
                for name in ("ParadeAttn", "MaxP")}
    findings["far queries: FirstP, blind beyond token 512, stays within 0.15 of a random order"] = (
        abs(value("far", "FirstP") - random_rr["far"]) <= 0.15)
    findings["near queries: FirstP, which reads the answer, is at least 0.2 above a random order"] = (
        value("near", "FirstP") >= random_rr["near"] + 0.2)
    return findings


def expected_random_rr(first_stage_run: pd.DataFrame, subset) -> float:
    """The mean RR of a random order of each query's candidates: ``H(n) / n`` with one relevant
    document among n (0 when the first stage missed it)."""
    relevant = set(zip(subset.qrels.loc[subset.qrels["label"] > 0, "qid"],
                       subset.qrels.loc[subset.qrels["label"] > 0, "docno"]))
    values = []
    for qid in subset.topics["qid"]:
        docnos = first_stage_run.loc[first_stage_run["qid"] == qid, "docno"]
        n = len(docnos)
        hit = any((qid, d) in relevant for d in docnos)
        values.append(sum(1 / k for k in range(1, n + 1)) / n if hit and n else 0.0)
    return float(sum(values) / len(values)) if values else float("nan")


def _write_results(path: Path, tables, random_rr, findings, dtype, seconds, quick, n_test, cpu_seconds) -> None:
    import json
    import platform

    def records(table: pd.DataFrame) -> list[dict]:
        # not DataFrame.to_json: it writes 10 decimal places, so a p-value of 5e-14 became 0.0
        return table.astype(object).where(table.notna(), None).to_dict(orient="records")

    path.write_text(json.dumps({
        "dtype": dtype, "seconds": round(seconds), "cpu_seconds": round(cpu_seconds), "quick": quick,
        "test_queries": n_test,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}",
        "native_bf16": native_bf16_cpu(), "random_rr": random_rr, "conclusions": findings,
        "tables": {group: records(table) for group, table in tables.items()},
    }, indent=1))


def experiment(runs: dict[str, pd.DataFrame], subset) -> pd.DataFrame:
    qids = set(subset.topics["qid"])
    systems = [frame[frame["qid"].isin(qids)] for frame in runs.values()]
    return pt.Experiment(systems, subset.topics[["qid", "query"]], subset.qrels, [nDCG @ 10, RR],
                         names=list(runs), baseline=list(runs).index("FirstP"), round=3)


def _positional_bias_plot(collection, path: Path, tokenizer: str) -> Path:
    from ..diagnostics import plot_positional_bias, positional_bias

    table = positional_bias(collection.positions, collection.documents, tokenizer=tokenizer, chunk_size=512)
    return plot_positional_bias(table, path, title="Where the answer passage starts (generated collection)")


def run_seeds(output: str | Path = "demo-output", *, seeds: int = 3, quick: bool = False,
              backbone: str | None = None, candidates: int = 4, dtype: str = "fp32") -> pd.DataFrame:
    """FirstP against MaxP over several seeds (``pyterrier-longdoc demo --seeds 3``): one model
    per seed, per-query metrics averaged over seeds, paired t-tests against FirstP, and the
    relative gains over FirstP as in the papers' tables."""
    from ..evaluation import multi_seed_experiment

    output, backbone, dtype, collection = _setup(output, quick, backbone, dtype)
    train, test = collection.split("train"), collection.split("test")
    first_stage = bm25_over(collection, output / "pisa-index") % candidates >> collection.get_text()
    warm_starts = {}

    def trained(cls):
        def for_seed(seed: int):
            if seed not in warm_starts:  # one passage stage per seed, shared by the models
                warm_starts[seed] = passage_stage(backbone, train, first_stage, output / f"passage-ranker-seed{seed}",
                                                  dtype, seed, quick)
            torch.manual_seed(seed)  # the new head's weights are drawn when the model is built, before fit
            model = cls(warm_starts[seed], dtype=dtype, **({} if cls is FirstP else WINDOWS))
            model.fit(train.topics, train.qrels, first_stage, args=TRAINING.replace(seed=seed))
            return first_stage >> model
        return for_seed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table = multi_seed_experiment({"FirstP": trained(FirstP), "MaxP": trained(MaxP)},
                                      test.topics[["qid", "query"]], test.qrels, [nDCG @ 10, RR],
                                      seeds=list(range(seeds)), baseline="FirstP", precision=3)
    print(f"\n{seeds} seeds, test queries ({len(test.topics)}), per-query metrics averaged over seeds, "
          "paired t-test against FirstP:")
    print(table.to_string(index=False))
    return table

"""The main job: the whole story offline, on the generated collection.

Every document of a query holds answer-shaped passages (answers about other entities and other
attributes), so only a model that reads the query can tell the relevant one. PISA BM25 retrieves;
the packaged MiniLM as a bi-encoder (all-MiniLM-L6-v2, a real sentence-embedding model, zero-shot)
re-ranks as FirstP (the document's first 256 tokens) and as MaxP (every 240-token window): the
papers' comparison, on queries whose answer sits near the start and queries whose answer lies
beyond token 512. ``pt.Experiment`` tables with paired t-tests against FirstP, the query controls
(``evaluation.query_controls``: the same candidates scored with another query's text and with a
constant query), the demo's conclusions (checked: it fails when one does not hold) and a plot.

Why a bi-encoder, not the library's trained cross-encoders: at CPU scale (a few hundred passage
steps of MiniLM) the cross-encoder's passage stage learns what an answer looks like, not which
query it answers: on this collection its FirstP and MaxP rank near a random order, and document
training keeps them there (benchmarks/results/tutorial-warm-start-answer-shaped-2026-11-27.md).
The bi-encoder reads the query with no training at all.
"""
from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import pandas as pd
import pyterrier as pt
import torch
from pyterrier.measures import RR, nDCG

from .evaluation import query_controls, reads_the_query
from .models import BiEncoderFirstP, BiEncoderMaxP
from .packaged import packaged_minilm
from ._runtime import Runtime, native_bf16_cpu
from .data.synthetic import make_collection

# Sized for minutes on 2 CPU cores: 100 test queries (50 near, 50 far; 32 more for training in
# `--seeds`), five documents each (the answer and four negatives, each holding answer-shaped
# passages) of 590-640 words. Near answers end within token 240, inside the bi-encoder's 256-token
# input; far answers start after word 530, beyond token 512.
COLLECTION = dict(n_queries=132, test_fraction=0.7576, docs_per_query=5, doc_words=(590, 640), near_limit=240,
                  far_start=530, negative_kinds=("other_entity", "other_attribute"), decoys=1)
QUICK_COLLECTION = {**COLLECTION, "n_queries": 16, "test_fraction": 0.5}
MODELS = {"FirstP": (BiEncoderFirstP, {}), "MaxP": (BiEncoderMaxP, dict(window=240, stride=240))}
# what each model can read: FirstP's input ends before the far answers
GROUPS_READ = {"FirstP": ("near",), "MaxP": ("near", "far")}
CEILING = 0.95  # above it a group leaves no room for the tests to show a difference


def bm25_over(collection, index_dir: str | Path):
    """BM25 over ``collection.docs``: PISA's, indexed into ``index_dir`` (overwritten), where
    PyTerrier-PISA is installed (Linux x86_64); elsewhere the library's pure-Python BM25
    (``data.bm25.BM25``, PISA's formula and stemmer), in memory."""
    from .data.bm25 import bm25_retriever

    return bm25_retriever(collection.docs, index_dir)


def _setup(output: str | Path, quick: bool, backbone: str | None, dtype: str):
    """The output folder, the backbone, the dtype and the collection the demos share."""
    dtype = Runtime(dtype=dtype).dtype_name()  # checked first, then what it comes to here ("auto": bf16 or fp32)
    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    collection = make_collection(**(QUICK_COLLECTION if quick else COLLECTION))
    print(f"Collection: {collection!r}")
    return output, backbone or packaged_minilm(), dtype, collection


def run(output: str | Path = "demo-output", *, quick: bool = False, backbone: str | None = None,
        candidates: int = 5, dtype: str = "fp32", check: bool | None = None) -> dict[str, pd.DataFrame]:
    """Runs the demo and returns the experiment tables by query group ("near", "far", "all").

    dtype: the models' precision: fp32 by default on every CPU, the precision of the run
        ``benchmarks/results/demo.json`` records (``"bf16"``, or ``"auto"``: bf16 where the device
        computes it natively; the conclusions are checked alike).
    check: verify the demo's conclusions (see ``conclusions``) and exit with an error naming those
        that do not hold; default on, except with ``quick``.

    Writes ``results.json`` (the tables, the controls, the expected RR of a random order, the
    conclusions, the dtype, the machine and the time taken) and ``results.png`` into ``output``.
    """
    started = time.time()
    output, backbone, dtype, collection = _setup(output, quick, backbone, dtype)
    test = collection.split("test")
    bm25 = bm25_over(collection, output / "pisa-index")
    plot = _positional_bias_plot(collection, output / "positional-bias.png", backbone)
    print(f"Positional-bias plot of the collection: {plot}\nPrecision: {dtype}")
    topics = test.topics[["qid", "query"]]
    candidate_lists = (bm25 % candidates >> collection.get_text())(topics)  # what the models re-rank
    groups = {"near": test.near(), "far": test.far()}
    runs, controls = {"BM25": bm25(topics)}, {}
    for name, (cls, settings) in MODELS.items():
        model = cls(backbone, dtype=dtype, verbose=True, **settings)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the cropping report: FirstP crops by design
            runs[name] = model(candidate_lists)
            controls[name] = query_controls(model, candidate_lists, test.qrels,
                                            groups={g: subset.topics["qid"] for g, subset in groups.items()})
    tables = {group: experiment(runs, subset) for group, subset in (*groups.items(), ("all", test))}
    random_rr = {group: expected_random_rr(candidate_lists, subset)
                 for group, subset in (*groups.items(), ("all", test))}
    _print_tables(tables, random_rr, groups, controls)
    findings = conclusions(tables, random_rr, controls)
    seconds, cpu_seconds = time.time() - started, time.process_time()
    figure = _results_plot(tables, random_rr, controls, output / "results.png")
    print(f"\nConclusions ({dtype}):")
    for finding, holds in findings.items():
        print(f"- {'yes' if holds else 'NO '}  {finding}")
    _write_results(output / "results.json", tables, random_rr, findings, dtype, seconds, quick, len(test.topics),
                   cpu_seconds, controls)
    print(f"\nResults in {output / 'results.json'}, plotted in {figure}; finished in {seconds:.0f} s "
          f"({cpu_seconds:.0f} CPU seconds over {torch.get_num_threads()} threads)")
    if (not quick if check is None else check) and not all(findings.values()):
        failed = "; ".join(f for f, holds in findings.items() if not holds)
        raise SystemExit(f"the demo's conclusions do not hold in this run ({dtype}): {failed}")
    return tables


def _print_tables(tables, random_rr, groups, controls) -> None:
    for group in ("near", "far", "all"):
        size = len(groups[group].topics) if group in groups else sum(len(g.topics) for g in groups.values())
        print(f"\nTest queries, relevant passage {group.upper()} ({size} queries), significance against FirstP "
              f"(paired t-test); a random order of the candidates: RR {random_rr[group]:.3f}")
        print(tables[group].to_string(index=False))
    for name, table in controls.items():
        print(f"\nQuery controls, {name}: the same candidates scored with another query's text and with a constant "
              f"query (paired t-tests of the real query against each, Holm-corrected)")
        print(table.round(4).to_string(index=False))


def conclusions(tables: dict[str, pd.DataFrame], random_rr: dict[str, float],
                controls: dict[str, pd.DataFrame]) -> dict[str, bool]:
    """The demo's findings, each True when this run shows it."""
    def value(group: str, name: str, column: str = "RR") -> float:
        table = tables[group].set_index("name")
        return float(table.loc[name, column]) if name in table.index else float("nan")

    def reads(name: str) -> bool:
        table = controls[name]
        return reads_the_query(table[table["group"].isin(GROUPS_READ[name])])

    near_gap, near_p = abs(value("near", "MaxP") - value("near", "FirstP")), value("near", "MaxP", "RR p-value")
    return {
        "the models read the query: with another query's text or a constant query each ranks at most 0.1 above "
        "a random order, and below the real query (paired t-test, Holm, p < 0.05), where it can read the answer":
            all(reads(name) for name in controls),
        "far queries: MaxP ranks the answer higher than FirstP (paired t-test, p < 0.05)":
            value("far", "MaxP") > value("far", "FirstP") and value("far", "MaxP", "RR p-value") < 0.05,
        "far queries: FirstP, blind beyond its first 256 tokens, stays within 0.1 of a random order":
            abs(value("far", "FirstP") - random_rr["far"]) <= 0.1,
        "near queries: FirstP is level with MaxP (within 0.05, or no significant difference)":
            near_gap <= 0.05 or not near_p < 0.05,
        "near queries: FirstP, which reads the answer, is at least 0.2 above a random order":
            value("near", "FirstP") >= random_rr["near"] + 0.2,
        f"no ceiling: every model below RR {CEILING} in both groups, so the tests have room":
            all(value(group, name) < CEILING for group in ("near", "far") for name in MODELS),
    }


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


def _write_results(path: Path, tables, random_rr, findings, dtype, seconds, quick, n_test, cpu_seconds,
                   controls=None) -> None:
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
        "controls": {name: records(table) for name, table in (controls or {}).items()},
    }, indent=1))


def _results_plot(tables, random_rr, controls, path: Path) -> Path:
    """RR of each model per query group with the real query and with each control, beside BM25's
    and a random order's: the demo's result in one picture."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8.0, 4.0))
    FigureCanvasAgg(fig)
    for k, group in enumerate(("near", "far")):
        ax = fig.add_subplot(1, 2, k + 1)
        rankings = ("real query", "another query's text", "constant query")
        x = np.arange(len(controls))
        for i, ranking in enumerate(rankings):
            values = [float(t.loc[(t["group"] == group) & (t["ranking"] == ranking), "RR"].iloc[0])
                      for t in controls.values()]
            ax.bar(x + (i - 1) * 0.27, values, 0.27, label=ranking)
        bm25 = float(tables[group].set_index("name").loc["BM25", "RR"])
        ax.axhline(random_rr[group], color="black", linestyle="--", label="random order")
        ax.axhline(bm25, color="gray", linestyle=":", label="BM25")
        ax.set_xticks(x, list(controls))
        ax.set_ylim(0, 1)
        ax.set_title("answer near the start" if group == "near" else "answer beyond token 512")
        ax.set_ylabel("RR" if k == 0 else "")
    handles, labels = fig.axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8)
    fig.suptitle("Bi-encoder FirstP and MaxP: the real query against the controls")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=110)
    return path


def experiment(runs: dict[str, pd.DataFrame], subset) -> pd.DataFrame:
    qids = set(subset.topics["qid"])
    systems = [frame[frame["qid"].isin(qids)] for frame in runs.values()]
    return pt.Experiment(systems, subset.topics[["qid", "query"]], subset.qrels, [nDCG @ 10, RR],
                         names=list(runs), baseline=list(runs).index("FirstP"), round=3)


def _positional_bias_plot(collection, path: Path, tokenizer: str) -> Path:
    from .diagnostics import plot_positional_bias, positional_bias

    table = positional_bias(collection.positions, collection.documents, tokenizer=tokenizer, chunk_size=512)
    return plot_positional_bias(table, path, title="Where the answer passage starts (generated collection)")


def run_seeds(output: str | Path = "demo-output", *, seeds: int = 3, quick: bool = False,
              backbone: str | None = None, candidates: int = 5, dtype: str = "fp32") -> pd.DataFrame:
    """FirstP against MaxP over several seeds (``pyterrier-longdoc demo --seeds 3``): per seed, both
    bi-encoders fine-tuned with ``fit`` on the training queries (validation-based selection keeps the
    start when training does not help), per-query metrics averaged over seeds, paired t-tests against
    FirstP, and the relative gains over FirstP as in the papers' tables."""
    from .evaluation import multi_seed_experiment
    from .training import TrainingArguments
    from .training.recipe import RECIPE_DOCUMENT_STAGE

    output, backbone, dtype, collection = _setup(output, quick, backbone, dtype)
    train, test = collection.split("train"), collection.split("test")
    first_stage = bm25_over(collection, output / "pisa-index") % candidates >> collection.get_text()

    def trained(name: str):
        cls, settings = MODELS[name]

        def for_seed(seed: int):
            model = cls(backbone, dtype=dtype, **settings)
            args = TrainingArguments(**{**RECIPE_DOCUMENT_STAGE, "epochs": 1 if quick else 2}, seed=seed)
            model.fit(train.topics, train.qrels, first_stage, args=args)
            return first_stage >> model
        return for_seed

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table = multi_seed_experiment({name: trained(name) for name in MODELS}, test.topics[["qid", "query"]],
                                      test.qrels, [nDCG @ 10, RR], seeds=list(range(seeds)), baseline="FirstP",
                                      precision=3)
    print(f"\n{seeds} seeds, test queries ({len(test.topics)}), per-query metrics averaged over seeds, "
          "paired t-test against FirstP:")
    print(table.to_string(index=False))
    return table

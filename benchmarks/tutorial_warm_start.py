"""The tutorials' warm start and variants of it, side by side: cost, ranking, and whether it reads the query.

Notebooks 1 and 3 start from one passage-trained cross-encoder (``tutorials/_warm_start.py``:
the first ``LAYERS`` layers of the packaged MiniLM, ``PASSAGE_STAGE`` on the training queries'
answers against cuts of their negatives). Their test command has a 15-minute budget on 2 cores,
and the model's size sets most of it; notebooks also need rankers that leave RR's ceiling. This
script trains the warm start and variants of it (fewer layers, more passage steps, harder
negatives, the whole MiniLM) and measures each on the tutorials' 100 test queries (50 near, 50
far), one torch thread:

* the passage stage's seconds, and the seconds FirstP and MaxP (200-token windows, as in the
  notebooks) take to score the test queries' 4 BM25 candidates;
* RR per group: the random order of the candidates, BM25, FirstP and MaxP zero-shot;
* whether it reads the query: each test query's answer passage scored with its own query and with
  the next query's; the share scored higher with its own (0.5: the query makes no difference);
* what notebook 3's document training (MaxP, two epochs, validation on 10 training queries, the
  best model kept) changes: MaxP's RR per group before and after, and the fit's seconds.

    python benchmarks/tutorial_warm_start.py                         # every variant (about 30 CPU minutes)
    python benchmarks/tutorial_warm_start.py --variants tutorials    # the notebooks' own warm start only
    python benchmarks/tutorial_warm_start.py --quick                 # a smoke run: a tiny collection, no file

Writes ``tutorial-warm-start-<date>.md`` and ``.json`` into ``--results``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tutorials"))

from _common import finish_run, measured, run_header, set_threads, silence_loading, table  # noqa: E402

HARDER = ("scattered", "other_attribute", "other_entity")
ANSWER_SHAPED = ("other_entity", "other_attribute")
# name -> (layers, passage-stage overrides, collection overrides); None: the tutorials' own setting
VARIANTS = {
    "tutorials": (None, {}, {}),
    "one layer": (1, {}, {}),
    "120 passage steps": (None, {"steps": 120}, {}),
    "harder negatives, 120 steps": (None, {"steps": 120}, {"negative_kinds": HARDER}),
    "whole MiniLM (6 layers)": (6, {}, {}),
    # the demo's collection: every document holds answer-shaped passages, so only the query tells
    "answer-shaped everywhere, 160 steps": (None, {"steps": 160}, {"negative_kinds": ANSWER_SHAPED, "decoys": 1}),
}
WINDOWS = dict(window=200, stride=200)  # the notebooks' MaxP
# notebook 3's document training
FIT = dict(epochs=2, top_k=4, lr=3e-5, head_lr=5e-4, queries_per_step=8, warmup=0.1, seed=42, valid_metric="RR@10")
QUICK_COLLECTION = dict(n_queries=16, test_fraction=0.5)


def reads_the_query(model, collection) -> float:
    """The share of test answers that ``model`` scores higher with their own query than with the next query's."""
    import numpy as np

    texts = collection.documents.set_index("docno")["text"]
    answers = collection.positions.merge(collection.topics[["qid", "query"]], on="qid")
    passages = [texts[d][s:e] for d, s, e in zip(answers["docno"], answers["char_start"], answers["char_end"])]
    queries = answers["query"].tolist()
    own = np.asarray(model.predict(list(zip(queries, passages))))
    other = np.asarray(model.predict(list(zip(queries[1:] + queries[:1], passages))))
    return float((own > other).mean())


def rr_by_group(runs: dict, test) -> dict:
    import pyterrier as pt
    from pyterrier.measures import RR

    from pyterrier_longdoc.demo import expected_random_rr

    values = {}
    for group, subset in (("near", test.near()), ("far", test.far())):
        values[f"random {group}"] = expected_random_rr(runs["BM25"], subset.topics["qid"], subset.qrels)
        table_ = pt.Experiment(list(runs.values()), subset.topics, subset.qrels, [RR], names=list(runs))
        values.update({f"{name} {group}": float(value) for name, value in zip(table_["name"], table_["RR"])})
    return values


def measure(name: str, work: Path, quick: bool) -> dict:
    """Trains variant ``name``'s warm start and measures it (see the module docstring)."""
    import _warm_start

    from pyterrier_longdoc import FirstP, MaxP
    from pyterrier_longdoc.demo import bm25_over, packaged_minilm

    layers, passage, overrides = VARIANTS[name]
    layers = layers or _warm_start.LAYERS
    collection = _warm_start.collection(**{**(QUICK_COLLECTION if quick else {}), **overrides})
    train, test = collection.split("train"), collection.split("test")
    passage = {**passage, "steps": 2} if quick else passage
    passage_steps = {**_warm_start.PASSAGE_STAGE, **passage}["steps"]
    backbone = packaged_minilm(layers=layers, directory=work / "backbone")
    warm_start, passage_stats = measured(lambda: _warm_start.passage_stage(backbone, train, work / "warm-start", "fp32",
                                                                           **passage))
    bm25 = bm25_over(collection, work / "index")
    candidates = bm25 % 4 >> collection.text
    runs, seconds = {"BM25": (bm25 % 4)(test.topics)}, {}
    for model_name, model in (("FirstP", FirstP(warm_start)), ("MaxP", MaxP(warm_start, **WINDOWS))):
        runs[model_name], stats = measured(lambda model=model: (candidates >> model)(test.topics))
        seconds[f"{model_name} scoring s"] = stats.wall
    valid = train.topics.groupby("position").head(1 if quick else 5)
    model = MaxP(warm_start, **WINDOWS)
    _, fit = measured(lambda: model.fit(train.topics.drop(valid.index), collection.qrels, candidates,
                                        **{**FIT, "epochs": 1} if quick else FIT, valid_topics=valid,
                                        valid_qrels=collection.qrels, valid_candidates=candidates))
    runs["MaxP after fit"] = (candidates >> model)(test.topics)
    return {"variant": name, "layers": layers, "passage steps": passage_steps, "passage stage s": passage_stats.wall,
            "negative kinds": list(overrides.get("negative_kinds", ["scattered"])),
            **seconds, **rr_by_group(runs, test), "fit s": fit.wall,
            "own query ahead": reads_the_query(FirstP(warm_start), test)}


def report(rows: list[dict]) -> str:
    groups = ("near", "far")
    return table(
        ["variant", "passage s", "FirstP / MaxP scoring s", *(f"RR {g}: random / BM25 / FirstP / MaxP" for g in groups),
         "own query ahead", "MaxP after fit (near / far)", "fit s"],
        [[r["variant"], round(r["passage stage s"]), f"{r['FirstP scoring s']:.0f} / {r['MaxP scoring s']:.0f}",
          *(" / ".join(f"{r[f'{name} {g}']:.3f}" for name in ("random", "BM25", "FirstP", "MaxP")) for g in groups),
          f"{r['own query ahead']:.2f}", f"{r['MaxP after fit near']:.3f} / {r['MaxP after fit far']:.3f}",
          round(r["fit s"])] for r in rows],
        title="The tutorials' warm start and variants, on the tutorials' test queries (one torch thread)")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--quick", action="store_true", help="16 queries, 2 passage steps, one epoch; no results file")
    parser.add_argument("--results", default=str(ROOT / "benchmarks" / "results"))
    args = parser.parse_args(argv)
    started = time.time()
    threads = set_threads(1)
    silence_loading()
    rows = []
    for name in args.variants:
        with tempfile.TemporaryDirectory() as folder:
            rows.append(measure(name, Path(folder), args.quick))
        print(f"{name}: done after {time.time() - started:.0f} s", flush=True)
    header, text, took = run_header(threads), report(rows), f"took {time.time() - started:.0f} s"
    return finish_run(None if args.quick else args.results, "tutorial-warm-start", ".md", header, text, rows, took)


if __name__ == "__main__":
    sys.exit(main())

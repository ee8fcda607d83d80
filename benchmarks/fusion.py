"""Fusion with the first stage: one interpolation weight against a learned combination (pt.ltr).

    python benchmarks/fusion.py                      # after README's first command: the demo's models and collection
    python benchmarks/fusion.py --demo-output OUT    # another demo run's folder

The demo's MaxP and PARADE-Attn (README's first command) re-rank BM25's candidates of the shipped
WordNet prose. Both combinations read the same two features, each normalised per query (min-max):
BM25's score and the model's.

- interpolation: ``pyterrier_longdoc.fusion``: one weight, chosen from 0, 0.1, ..., 1 by RR@10
  (ties to the model);
- learned: PyTerrier's learning to rank, ``pt.apply.doc_features`` over the two scores (the ``**``
  feature union of the first stage's and the model's scores) into ``pt.ltr.apply_learned_model`` with
  scikit-learn's logistic regression.

Both are fitted on the recipe's validation queries only (the 20% of the training queries that
``fit`` held out, drawn by the demo's seed): first compared there by 4-fold cross-validation over
those queries (fit on three folds, measure on the fourth), which decides what the library keeps;
then, fitted on all of them, measured on the 100 test queries (50 near, 50 far) with paired t-tests
(interpolation against learned, each against BM25), Holm over the family. Writes
``benchmarks/results/fusion-<date>.json`` and ``.md`` with the machine, commit and CPU seconds.
"""
from __future__ import annotations

import argparse
import json
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd

from _common import commit, machine

FOLDS = 4


def features(frame: pd.DataFrame, model_run: pd.DataFrame):
    """The candidates with ``first`` and ``model``: BM25's and the model's scores, min-max normalised per query."""
    from pyterrier_longdoc.fusion import normalised

    merged = frame.merge(model_run[["qid", "docno", "score"]].rename(columns={"score": "model_raw"}),
                         on=["qid", "docno"])
    return merged.assign(first=normalised(merged["score"], merged["qid"]),
                         model=normalised(merged["model_raw"], merged["qid"]))


def interpolation(train: pd.DataFrame, qrels: pd.DataFrame):
    """The weight chosen on ``train``; a function scoring a frame with it."""
    from pyterrier_longdoc.fusion import choose_weight

    chosen = choose_weight(train, train[["qid", "docno", "model_raw"]].rename(columns={"model_raw": "score"}), qrels)
    return chosen.weight, lambda frame: frame.assign(score=chosen.weight * frame["model"]
                                                     + (1 - chosen.weight) * frame["first"])


def learned(train: pd.DataFrame, qrels: pd.DataFrame):
    """pt.ltr over the two features, fitted on ``train``; a function scoring a frame with it."""
    import pyterrier as pt
    from sklearn.linear_model import LogisticRegression

    class Logistic(LogisticRegression):  # pt.ltr ranks by predict: the decision function, not the class label
        def fit(self, X, y, **options):
            self.single_class = len(set(y)) < 2  # a fold of the tiny --quick run: no relevant document to learn from
            return self if self.single_class else super().fit(X, y, **options)

        def predict(self, X):
            return np.zeros(len(X)) if self.single_class else self.decision_function(X)

    two = pt.apply.doc_features(lambda row: np.array([row["first"], row["model"]]))
    pipeline = two >> pt.ltr.apply_learned_model(Logistic(), form="regression")
    pipeline.fit(train, qrels.astype({"qid": str, "docno": str}))
    return None, lambda frame: pipeline(frame)


def rr_per_query(run: pd.DataFrame, qrels: pd.DataFrame) -> pd.Series:
    import ir_measures

    measure = ir_measures.parse_measure("RR@10")
    values = ir_measures.iter_calc([measure], qrels.rename(columns={"qid": "query_id", "docno": "doc_id",
                                                                    "label": "relevance"}).astype({"query_id": str}),
                                   run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id",
                                                                                               "score"]])
    return pd.Series({m.query_id: m.value for m in values})


def cross_validated(valid: pd.DataFrame, qrels: pd.DataFrame, method) -> float:
    """Mean RR@10 over the validation queries, each scored by ``method`` fitted on the other folds."""
    qids = np.array(sorted(valid["qid"].unique()))
    folds = np.array_split(np.random.default_rng(0).permutation(qids), min(FOLDS, len(qids)))
    values = []
    for fold in folds:
        train, held = valid[~valid["qid"].isin(fold)], valid[valid["qid"].isin(fold)]
        values.append(rr_per_query(method(train, qrels)[1](held), qrels).reindex(fold, fill_value=0.0))
    return float(pd.concat(values).mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--demo-output", default="demo-output")
    parser.add_argument("--results", default=str(Path(__file__).parent / "results"))
    options = parser.parse_args()
    started, cpu = time.time(), time.process_time()
    from pyterrier_longdoc.demo import CANDIDATES, COLLECTION, MODELS, QUICK_COLLECTION, RandomFill, bm25_over
    from pyterrier_longdoc.data.prose import prose_collection
    from pyterrier_longdoc.evaluation import correct_pvalues
    from pyterrier_longdoc.training.recipe import RECIPE_DOCUMENT_STAGE
    from pyterrier_longdoc.training.sampling import split_validation
    from scipy import stats

    output = Path(options.demo_output)
    demo = json.loads((output / "results.json").read_text())
    seed = demo["seed"]
    collection = prose_collection(**(QUICK_COLLECTION if demo["quick"] else COLLECTION), tokenizer=str(output / "backbone"))
    bm25 = bm25_over(collection, output / "fusion-bm25-index")
    first_stage = RandomFill(bm25, collection.documents["docno"], CANDIDATES, seed) >> collection.text
    train, test = collection.split("train"), collection.split("test")
    valid_topics = split_validation(train.topics, train.qrels, RECIPE_DOCUMENT_STAGE["valid_fraction"], seed)[1]
    valid_frame, test_frame = first_stage(valid_topics[["qid", "query"]]), first_stage(test.topics[["qid", "query"]])
    qrels = pd.concat([train.qrels, test.qrels]).astype({"qid": str, "docno": str})
    groups = {"near": set(test.near().topics["qid"]), "far": set(test.far().topics["qid"])}
    rows, tests, chosen = [], [], {}
    bm25_rr = rr_per_query(test_frame, qrels)
    for name in ("MaxP", "ParadeAttn"):
        model = MODELS[name][0].from_pretrained(str(output / "models" / name))
        valid, test_features = features(valid_frame, model(valid_frame)), features(test_frame, model(test_frame))
        per_method = {}
        for method_name, method in (("interpolation", interpolation), ("learned (pt.ltr)", learned)):
            cv = cross_validated(valid, qrels, method)
            weight, score = method(valid, qrels)
            per_method[method_name] = rr_per_query(score(test_features), qrels).reindex(bm25_rr.index, fill_value=0.0)
            chosen[(name, method_name)] = weight
            for group, qids in groups.items():
                values = per_method[method_name][per_method[method_name].index.isin(qids)]
                rows.append((name, method_name, group, cv, float(values.mean()),
                             float(bm25_rr[bm25_rr.index.isin(qids)].mean())))
        for group, qids in groups.items():
            inter, ltr = (per_method[m][per_method[m].index.isin(qids)] for m in ("interpolation", "learned (pt.ltr)"))
            bm = bm25_rr[bm25_rr.index.isin(qids)]
            tests += [(name, group, "learned - interpolation", float(ltr.mean() - inter.mean()),
                       float(stats.ttest_rel(ltr, inter).pvalue) if not np.allclose(ltr, inter) else 1.0),
                      (name, group, "interpolation - BM25", float(inter.mean() - bm.mean()),
                       float(stats.ttest_rel(inter, bm).pvalue) if not np.allclose(inter, bm) else 1.0)]
    table = pd.DataFrame(rows, columns=["model", "combination", "group", "validation RR@10 (4-fold)",
                                        "test RR@10", "BM25 test RR@10"])
    family = pd.DataFrame(tests, columns=["model", "group", "difference", "mean", "p-value"])
    family["p-value (Holm)"] = correct_pvalues(family["p-value"].to_numpy(), "holm")[1]
    keep = {name: ("learned (pt.ltr)" if table[(table["model"] == name) & (table["combination"] == "learned (pt.ltr)")]
                   ["validation RR@10 (4-fold)"].iloc[0] > table[(table["model"] == name) & (table["combination"] ==
                   "interpolation")]["validation RR@10 (4-fold)"].iloc[0] else "interpolation")
            for name in ("MaxP", "ParadeAttn")}
    seconds, cpu_seconds = time.time() - started, time.process_time() - cpu
    when = datetime.now(timezone.utc)
    record = {"what": __doc__.split("\n\n")[0], "machine": machine(), "commit": commit(),
              "date": when.isoformat(timespec="minutes"), "seconds": round(seconds), "cpu_seconds": round(cpu_seconds),
              "validation_queries": int(valid_topics["qid"].nunique()), "test_queries": len(test.topics),
              "weights": {f"{m}: {c}": w for (m, c), w in chosen.items() if w is not None},
              "table": table.to_dict(orient="records"), "tests": family.to_dict(orient="records"),
              "kept (better by 4-fold validation RR@10; interpolation on a tie)": keep}
    stem = Path(options.results) / f"fusion-{when:%Y-%m-%d}"
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))
    text = (f"# Fusion with the first stage: interpolation against pt.ltr\n\n{record['what']}; demo output "
            f"`{output}` (seed {seed}). {record['machine']}; commit {record['commit']}; {record['date']}; "
            f"{record['seconds']} s, {record['cpu_seconds']} CPU seconds. {record['validation_queries']} validation "
            f"queries, {record['test_queries']} test queries.\n\nWeights chosen on validation: {record['weights']}\n\n"
            f"{table.round(4).to_markdown(index=False)}\n\nPaired t-tests on the test queries, Holm over these "
            f"{len(family)}:\n\n{family.round(4).to_markdown(index=False)}\n\nKept: {keep}\n")
    stem.with_suffix(".md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

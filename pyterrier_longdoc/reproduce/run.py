"""Running a row end to end: per seed, training on MS MARCO documents (the row's recipe: from the
backbone, or after the library's passage stage where asked), fine-tuning where a column asks for
it (Robust04's folds, FarRelevant), the test runs and their metric (a pooled column over its
years' queries, LongEmbed over its generated tasks); then a results file with the published and
measured values side by side, per seed and averaged, and the GPU-hours it took."""
from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..models import model_class
from ..training import TrainingArguments, train_long_document_ranker
from ..training.fit_loop import run_metric
from .registry import Column, Row
from .sources import Sources

__all__ = ["run_row", "write_results"]


def run_row(row: Row, output_dir: str | Path, sources: Sources, *, backbone: str | None = None,
            warm_start: str | None = None, passage_steps: int | None = None,
            model_options: dict | None = None, log: Callable[[str], None] = print) -> dict:
    """Runs ``row`` into ``output_dir`` and writes ``results.json`` and ``results.md`` there.

    ``backbone`` replaces the row's encoder (a local copy); ``warm_start`` is a trained passage
    cross-encoder to start from; ``passage_steps`` the passage stage's steps where the recipe has
    one (``warm_start="passage stage"``); ``model_options`` are runtime options (``device``,
    ``dtype``, ``batch_size``)."""
    output_dir = Path(output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    recipe, measured, seconds = row.recipe, {cell.column.name: {} for cell in row.cells}, {}
    for seed in recipe.seeds:
        started = time.time()
        folder = output_dir / f"seed-{seed}"
        model = _train_on_msmarco(row, sources, folder, seed, backbone, warm_start, passage_steps, model_options or {})
        saved = folder / "msmarco-model"
        if any(c.training != "msmarco" for c in row.columns):  # the fine-tunings start from a copy
            model.save_pretrained(saved)
        for column in row.columns:
            value = _measure(row, column, model, saved, sources, folder, seed, model_options or {})
            measured[column.name][seed] = value
            log(f"{row.name} seed {seed} {column.name} {column.metric}: {value:.4f}")
        seconds[seed] = time.time() - started
    results = _results(row, measured, seconds, sources, backbone)
    write_results(results, output_dir)
    return results


def _train_on_msmarco(row: Row, sources: Sources, folder: Path, seed: int, backbone, warm_start, passage_steps,
                      model_options: dict):
    recipe, options = row.recipe, {**row.model_settings, **model_options}
    if recipe.warm_start == "zero-shot":
        return model_class(row.model)(backbone or row.backbone, **options)
    train = sources.collection(recipe.train_collection, recipe.train_irds_id, max_queries=recipe.train_queries)
    candidates = sources.candidates(train, recipe.train_irds_id, recipe.train_depth)
    args = TrainingArguments(**recipe.fit_options(seed, top_k=recipe.train_depth))
    if recipe.warm_start != "passage stage" or warm_start:
        # the papers: the document stage from the backbone, its heads discarded (or from a given
        # passage cross-encoder)
        model = model_class(row.model)(warm_start or backbone or row.backbone, seed=seed, **options)
        model.fit(train.topics, train.qrels, candidates=candidates, args=args, text=train.text)
        return model
    passage_options = {"steps": passage_steps or recipe.passage_steps}
    model, _ = train_long_document_ranker(model_class(row.model), backbone or row.backbone, train.topics, train.qrels,
                                          candidates, text=train.text, output_dir=folder / "training", args=args,
                                          passage_options=passage_options, model_options=options, seed=seed)
    return model


def _measure(row: Row, column: Column, model, saved: Path, sources: Sources, folder: Path, seed: int,
             model_options: dict) -> float:
    if column.collection == "farrelevant":
        return _far_relevant(row, column, model, saved, sources, seed, model_options)
    if column.collection.startswith("longembed-"):
        return _longembed(column, model, sources)
    if column.training == "folds":
        return _folds(row, column, saved, sources, seed, model_options)
    if column.parts:  # the papers pool the years' queries: a query-weighted mean of the years' values
        values = [_test_run(column, model, sources, collection, irds_id) for collection, irds_id in column.parts]
        return sum(v * n for v, n in values) / sum(n for _, n in values)
    return _test_run(column, model, sources, column.collection, column.irds_ids[0])[0]


def _test_run(column: Column, model, sources: Sources, collection: str, irds_id: str) -> tuple[float, int]:
    """The metric over one test collection, and how many queries it averages."""
    test = sources.collection(collection, irds_id, max_queries=column.test_queries)
    candidates = sources.candidates(test, column.name, column.first_stage.depth)
    return run_metric(model(test.text(candidates)), test.topics, test.qrels, column.metric), len(test.topics)


def _longembed(column: Column, model, sources: Sources) -> float:
    """LongEmbed's task, generated offline: every query ranks the documents of its length."""
    from ..data.longembed import make_longembed_task
    from .columns import LONGEMBED_QUERIES_PER_LENGTH

    per_length = min(x for x in (LONGEMBED_QUERIES_PER_LENGTH, sources.max_queries) if x)
    task = make_longembed_task(column.collection.removeprefix("longembed-"), queries_per_length=per_length)
    return run_metric(model(task.candidates()), task.topics, task.qrels, column.metric)


def _fine_tuned(row: Row, saved: Path, seed: int, model_options: dict):
    """A fresh copy of the MS MARCO model of this seed, to fine-tune."""
    return model_class(row.model).from_pretrained(str(saved), **model_options)


def _folds(row: Row, column: Column, saved: Path, sources: Sources, seed: int, model_options: dict) -> float:
    """Fine-tunes the MS MARCO model on each fold's training topics (validating on its valid
    fold, keeping the best), runs its test fold, and scores the merged runs."""
    runs, topics, qrels = [], [], []
    for fold in range(1, len(column.folds) + 1):
        data = sources.collection(column.collection, column.irds_ids[0], fold, column.folds)
        train, valid = data.split("train"), data.split("valid")
        model = _fine_tuned(row, saved, seed, model_options)
        depth = column.first_stage.depth
        args = row.recipe.fit_options(seed, epochs=row.recipe.fold_epochs, top_k=depth, valid_metric=column.metric)
        model.fit(train.topics, train.qrels, valid.topics, valid.qrels, text=data.text,
                  candidates=sources.candidates(train, column.name, depth),
                  valid_candidates=sources.candidates(valid, column.name, depth), args=TrainingArguments(**args))
        runs.append(model(data.text(sources.candidates(data, column.name, depth))))
        topics.append(data.topics)
        qrels.append(data.qrels)
    return run_metric(pd.concat(runs), pd.concat(topics), pd.concat(qrels), column.metric)


def _far_relevant(row: Row, column: Column, model, saved: Path, sources: Sources, seed: int,
                  model_options: dict) -> float:
    test = sources.far_relevant(column, "test", column.test_queries, seed=0)
    if column.training == "farrelevant":
        train = sources.far_relevant(column, "train", row.recipe.fine_tune_queries, seed=0)
        model = _fine_tuned(row, saved, seed, model_options)
        args = row.recipe.fit_options(seed, epochs=row.recipe.fine_tune_epochs, top_k=column.first_stage.depth)
        # hard negatives first: BM25's, then random ones (the builder's order within each is random)
        candidates = train.candidates.sort_values("source", key=lambda s: s == "random", kind="stable")
        candidates = candidates.assign(rank=candidates.groupby("qid").cumcount())
        model.fit(train.topics, train.qrels, candidates=candidates, args=TrainingArguments(**args))
    return run_metric(model(test.candidates), test.topics, test.qrels, column.metric)


def _gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _results(row: Row, measured: dict, seconds: dict, sources: Sources, backbone: str | None = None) -> dict:
    gpus = _gpus()
    columns = []
    for cell in row.cells:
        values = measured[cell.column.name]
        columns.append({"column": cell.column.name, "metric": cell.column.metric, "published": cell.published,
                        "sig": cell.sig, "source": cell.source, "note": cell.note,
                        "measured": {str(s): v for s, v in values.items()},
                        "mean": sum(values.values()) / len(values) if values else math.nan})
    return {"paper": row.paper.key, "citation": row.paper.citation, "table": row.table, "row": row.name,
            "label": row.label, "model": row.model, "backbone": backbone or row.backbone,
            "registry_backbone": row.backbone, "seeds": list(seconds),
            "columns": columns, "wall_hours": sum(seconds.values()) / 3600, "gpus": gpus,
            "gpu_hours": sum(seconds.values()) / 3600 * gpus,
            "comparable": sources.max_queries is None and not sources.datasets,
            "max_queries": sources.max_queries, "datasets": dict(sources.datasets)}


def write_results(results: dict, output_dir: Path) -> None:
    """``results.json``, and ``results.md``: one line per column, published beside measured."""
    (output_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    seeds = results["seeds"]
    lines = [f"# {results['label']}: {results['citation']}, table {results['table']}", "",
             "| column | metric | published | " + " | ".join(f"seed {s}" for s in seeds) + " | mean |",
             "|---" * (len(seeds) + 4) + "|"]
    for c in results["columns"]:
        published = "none" if c["published"] is None else f"{c['published']:.3f}" + (
            f"^{c['sig']}" if c.get("sig") else "")
        values = " | ".join(f"{c['measured'][str(s)]:.4f}" for s in seeds)
        lines.append(f"| {c['column']} | {c['metric']} | {published} | {values} | {c['mean']:.4f} |")
    lines += ["", f"GPU-hours: {results['gpu_hours']:.2f} ({results['gpus']} GPUs, {results['wall_hours']:.2f} hours "
              "of wall time)"]
    if not results["comparable"]:
        lines.append("Not comparable with the published values: a smaller run (max_queries) or stand-in datasets.")
    (output_dir / "results.md").write_text("\n".join(lines) + "\n")

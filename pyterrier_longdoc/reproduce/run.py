"""Running a row end to end: per seed, training on MS MARCO documents (the row's recipe: from the
backbone, or after the library's passage stage where asked), fine-tuning where a column asks for
it (Robust04's folds, FarRelevant), the test runs and their metric (a pooled column over its
years' queries, LongEmbed over its generated tasks); then a results file with the published and
measured values side by side, per seed and averaged, and the GPU-hours it took."""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from ..models import LongDocReranker, model_class
from ..training import SegmentShuffle, TrainingArguments, train_long_document_ranker
from ..training.fit_loop import run_metric
from .registry import Column, Row
from .results import results_record, run_options, write_results
from .sources import Sources

__all__ = ["run_row"]


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
    measured: dict[str, dict] = {cell.column.name: {} for cell in row.cells}
    recipe, seconds = row.recipe, {}
    # the row's precision (MOSAIC: fp32) unless the caller sets one
    model_options = {**({"dtype": recipe.dtype} if recipe.dtype else {}), **(model_options or {})}
    for seed in recipe.seeds:
        started = time.time()
        folder = output_dir / f"seed-{seed}"
        model = _train_on_msmarco(row, sources, folder, seed, backbone, warm_start, passage_steps, model_options)
        saved = folder / "msmarco-model"
        if any(c.training != "msmarco" for c in row.columns):  # the fine-tunings start from a copy
            model.save_pretrained(saved)
        for column in row.columns:
            value = _measure(row, column, model, saved, sources, seed, model_options, backbone or row.backbone)
            measured[column.name][seed] = value
            log(f"{row.name} seed {seed} {column.name} {column.metric}: {value:.4f}")
        seconds[seed] = time.time() - started
    options = run_options(row, sources, backbone, warm_start, passage_steps, model_options)
    results = results_record(row, measured, seconds, options, _gpus())
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
    text = train.text
    if recipe.shuffled_segment_words:  # de-biased MS MARCO: the documents' segments shuffled
        text = text >> SegmentShuffle(recipe.shuffled_segment_words, seed=seed)
    if recipe.warm_start != "passage stage" or warm_start:
        # the papers: the document stage from the backbone, its heads discarded (or from a given
        # passage cross-encoder)
        model = model_class(row.model)(warm_start or backbone or row.backbone, seed=seed, **options)
        model.fit(train.topics, train.qrels, candidates=candidates, args=args, text=text)
        return model
    passage_options = {"steps": passage_steps or recipe.passage_steps}
    model, _ = train_long_document_ranker(model_class(row.model), backbone or row.backbone, train.topics, train.qrels,
                                          candidates, text=text, output_dir=folder / "training", args=args,
                                          passage_options=passage_options, model_options=options, seed=seed)
    return model


def _measure(row: Row, column: Column, model, saved: Path, sources: Sources, seed: int, model_options: dict,
             tokenizer: str) -> float:
    if column.collection == "farrelevant":
        return _far_relevant(row, column, model, saved, sources, seed, model_options, tokenizer)
    if column.collection.startswith("longembed-"):
        return _longembed(column, model, sources, tokenizer)
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


def _longembed(column: Column, model, sources: Sources, tokenizer: str) -> float:
    """LongEmbed's task, generated offline in the backbone's tokens: every query ranks the
    documents of its length."""
    from ..data.longembed import LENGTHS, make_longembed_task
    from .columns import LONGEMBED_QUERIES_PER_LENGTH

    per_length = min(x for x in (LONGEMBED_QUERIES_PER_LENGTH, sources.max_queries) if x)
    task = make_longembed_task(column.collection.removeprefix("longembed-"), queries_per_length=per_length,
                               tokenizer=tokenizer)
    # the paper extrapolates its chunk-and-aggregate models to read LongEmbed's documents whole
    cropped_at = model.get_parameter("max_doc_tokens")
    model.set_parameter("max_doc_tokens", max(LENGTHS))
    try:
        return run_metric(model(task.candidates()), task.topics, task.qrels, column.metric)
    finally:
        model.set_parameter("max_doc_tokens", cropped_at)


def _fine_tuned(row: Row, saved: Path, seed: int, model_options: dict):
    """A fresh copy of the MS MARCO model of this seed, to fine-tune."""
    model: type[LongDocReranker] = model_class(row.model)
    return model.from_pretrained(str(saved), **model_options)


def _folds(row: Row, column: Column, saved: Path, sources: Sources, seed: int, model_options: dict) -> float:
    """Fine-tunes the MS MARCO model for each test fold and scores the merged runs of the five
    test folds. The papers train on the other four folds with no validation (the last epoch's
    model); ``fold_validation`` trains on three and keeps the best epoch on the fourth."""
    runs, topics, qrels = [], [], []
    depth = column.first_stage.depth
    for fold in range(1, len(column.folds) + 1):
        data = sources.collection(column.collection, column.irds_ids[0], fold, column.folds)
        train, valid = data.split("train"), data.split("valid")
        model = _fine_tuned(row, saved, seed, model_options)
        train_candidates, valid_candidates = (sources.candidates(s, column.name, depth) for s in (train, valid))
        # the authors repeat a fold's data 100 times within one epoch (FlexNeuART's epoch_repeat_qty):
        # 100 short epochs here, with no decay between them
        args = TrainingArguments(**row.recipe.fit_options(seed, epochs=row.recipe.fold_epochs, top_k=depth,
                                                          epoch_lr_decay=1.0))
        if row.recipe.fold_validation:
            model.fit(train.topics, train.qrels, valid.topics, valid.qrels, text=data.text, candidates=train_candidates,
                      valid_candidates=valid_candidates, args=args.replace(valid_metric=column.metric))
        else:
            model.fit(pd.concat([train.topics, valid.topics], ignore_index=True),
                      pd.concat([train.qrels, valid.qrels], ignore_index=True), text=data.text,
                      candidates=pd.concat([train_candidates, valid_candidates], ignore_index=True), args=args)
        runs.append(model(data.text(sources.candidates(data, column.name, depth))))
        topics.append(data.topics)
        qrels.append(data.qrels)
    return run_metric(pd.concat(runs), pd.concat(topics), pd.concat(qrels), column.metric)


def _far_relevant(row: Row, column: Column, model, saved: Path, sources: Sources, seed: int, model_options: dict,
                  tokenizer: str) -> float:
    """FarRelevant's positions counted in the backbone's tokens."""
    test = sources.far_relevant(column, "test", column.test_queries, seed=0, tokenizer=tokenizer)
    if column.training == "farrelevant":
        train = sources.far_relevant(column, "train", row.recipe.fine_tune_queries, seed=0, tokenizer=tokenizer)
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

"""What a row will download, how much disk and roughly how many GPU-hours it needs, before it starts.

The costs are rough: corpus sizes as ir_datasets downloads and stores them (with a PISA index),
and GPU time from a count of 512-token sequences at an assumed rate on one A100-class GPU with
mixed precision (``TRAIN_RATE`` training, ``INFER_RATE`` scoring sequences a second). A window
model reads a 1431-token document as several sequences (``SEQUENCES``); an LLM costs ``LLM_FACTOR``
times a base encoder."""
from __future__ import annotations

import math

from .registry import Row

__all__ = ["plan", "gpu_hours"]

# corpus: (download GB, disk GB with ir_datasets' docstore and a PISA index, queries of the training set)
CORPORA = {
    "msmarco-document": (8.0, 30.0, "MS MARCO documents v1, 3.2M documents"),
    "msmarco-document-v2": (33.0, 90.0, "MS MARCO documents v2, 12M documents"),
    "msmarco-passage": (1.0, 4.0, "MS MARCO passages, 8.8M passages"),
    "disks45": (0.6, 3.0, "TREC disks 4 and 5 (licensed: provide them to ir_datasets yourself)"),
}
TEST_QUERIES = {"msmarco-document/dev": 5193, "msmarco-document/trec-dl-2019/judged": 43,
                "msmarco-document/trec-dl-2020/judged": 45, "msmarco-document-v2/trec-dl-2021/judged": 57,
                "disks45/nocr/trec-robust-2004": 250}
TRAIN_QUERIES = 367_013  # msmarco-document/train
TRAIN_RATE, INFER_RATE, LLM_FACTOR = 100.0, 500.0, 10.0
SEQUENCES = {"firstp": 1, "avgp": 3, "longp": 3, "cedr_knrm": 3, "cedr_pacrr": 3, "cedr_drmm": 3, "neural_model1": 3}
WINDOWED = 6  # 150-token windows over 1431 tokens (MaxP, PARADE)


def _sequences(row: Row) -> float:
    model = row.model.removeprefix("llm_")
    return SEQUENCES.get(model, WINDOWED) * (LLM_FACTOR if row.model.startswith("llm_") else 1)


def gpu_hours(row: Row) -> dict[str, float]:
    """Rough GPU-hours of one seed, by stage, and of all seeds (``total``)."""
    recipe, per_doc = row.recipe, _sequences(row)
    train_queries = recipe.train_queries or TRAIN_QUERIES
    depth = max(c.first_stage.depth for c in row.columns)
    train = train_queries * recipe.epochs * (1 + recipe.negatives) * per_doc / TRAIN_RATE
    passage = recipe.passage_steps * 8 * 2 * 0.3 / TRAIN_RATE if recipe.warm_start != "none" else 0.0  # ~150-token passages
    test = fine_tune = 0.0
    for column in row.columns:
        queries = column.test_queries or TEST_QUERIES.get(column.irds_ids[0], 1000)
        test += queries * column.first_stage.depth * per_doc / INFER_RATE
        if column.training == "folds":  # five fine-tunings on three folds' topics, validation on one
            fine_tune += 5 * (queries * 0.6 * 2 * per_doc / TRAIN_RATE + queries * 0.2 * depth * per_doc / INFER_RATE)
        elif column.training == "farrelevant":
            fine_tune += recipe.fine_tune_queries * recipe.fine_tune_epochs * 2 * per_doc / TRAIN_RATE
    stages = {k: v / 3600 for k, v in dict(passage=passage, train=train, fine_tune=fine_tune, test=test).items()}
    stages["total"] = sum(stages.values()) * len(recipe.seeds)
    return stages


def _corpora(row: Row) -> list[str]:
    ids = [row.recipe.train_irds_id] + [i for c in row.columns for i in c.irds_ids]
    return list(dict.fromkeys(i.split("/")[0] for i in ids))


def plan(row: Row) -> str:
    """The plan of ``row`` as text: what it runs, downloads, stores and costs."""
    recipe, hours = row.recipe, gpu_hours(row)
    corpora = _corpora(row)
    lines = [f"{row.paper.key} table {row.table} row {row.name}: {row.label} ({row.paper.citation})",
             f"  command: {row.command}",
             f"  model: {row.model} from {row.backbone}" + (f", {row.model_settings}" if row.settings else ""),
             f"  warm start: {recipe.warm_start}" + (f", {recipe.passage_steps} steps" if recipe.warm_start != "none" else ""),
             f"  training: {recipe.train_collection}, {recipe.train_queries or 'all'} queries, {recipe.epochs} epoch(s), "
             f"{recipe.negatives} hard negative(s), lr {recipe.lr:g} (head {recipe.head_lr:g}), "
             f"{recipe.queries_per_step} queries a step, warm-up {recipe.warmup:.0%}, seeds {list(recipe.seeds)}",
             f"  ({recipe.notes})",
             "  columns:"]
    for cell in row.cells:
        c = cell.column
        published = "not found" if cell.published is None else f"{cell.published:.4f}"
        folds = f", fine-tuned on each of {len(c.folds)} folds" if c.training == "folds" else (
            f", fine-tuned on {recipe.fine_tune_queries} queries" if c.training == "farrelevant" else "")
        lines.append(f"    {c.name}: {c.irds_ids[0]}, {c.metric}, {c.first_stage.paper}{folds}; published {published}"
                     f"{'' if cell.published is not None else f' ({cell.source})'}")
    lines.append("  downloads (ir_datasets, on first use):")
    lines += [f"    {name}: {CORPORA[name][2]}, about {CORPORA[name][0]:g} GB" for name in corpora]
    disk = sum(CORPORA[name][1] for name in corpora)
    lines.append(f"  disk: about {math.ceil(disk)} GB (documents, ir_datasets' docstore, PISA indexes), "
                 f"plus models of {len(recipe.seeds)} seeds")
    lines.append(f"  GPU-hours (rough, one A100-class GPU): about {hours['total']:.0f} for {len(recipe.seeds)} seeds "
                 f"(a seed: passage stage {hours['passage']:.1f}, training {hours['train']:.1f}, "
                 f"fine-tuning {hours['fine_tune']:.1f}, test runs {hours['test']:.1f})")
    return "\n".join(lines)

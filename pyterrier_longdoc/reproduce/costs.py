"""What a row will download, how much disk and roughly how many GPU-hours it needs, before it starts.

The costs are rough: corpus sizes as ir_datasets downloads and stores them (with a PISA index),
and GPU time from a count of 512-token sequences at an assumed rate on one A100-class GPU with
mixed precision (``TRAIN_RATE`` training, ``INFER_RATE`` scoring sequences a second). A window
model reads a 1431-token document as several sequences (``SEQUENCES``); an LLM costs ``LLM_FACTOR``
times a base encoder. What the papers say of costs: Longformer is the slowest model, about 1.5x
PARADE Attn (Boytsov et al. 2022), and fine-tuning on Robust04's folds (100 short epochs) costs
about as much as one MS MARCO epoch (the positional-bias paper)."""
from __future__ import annotations

import math

from .published import PAPER_NAMES, SIGNIFICANCE
from .schema import Column, Row

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
TRAIN_QUERIES = 352_000  # MS MARCO documents' training queries as the paper counts them
TRAIN_RATE, INFER_RATE, LLM_FACTOR = 100.0, 500.0, 10.0
WINDOWED = 6  # 150-token windows over 1431 tokens (MaxP, PARADE)
# LongP: Longformer costs about 1.5x PARADE Attn (Boytsov et al. 2022)
SEQUENCES = {"firstp": 1, "avgp": 3, "longp": WINDOWED * 1.5, "cedr_knrm": 3, "cedr_pacrr": 3, "cedr_drmm": 3,
             "neural_model1": 3, "biencoder_firstp": 1, "biencoder_longp": 3}


def _sequences(row: Row) -> float:
    model = row.model.removeprefix("llm_")
    return SEQUENCES.get(model, WINDOWED) * (LLM_FACTOR if row.model.startswith("llm_") else 1)


def _test_queries(column: Column) -> int:
    if column.test_queries:
        return column.test_queries
    return sum(TEST_QUERIES.get(i, 1000) for i in column.irds_ids[:len(column.parts) or 1])


def gpu_hours(row: Row) -> dict[str, float]:
    """Rough GPU-hours of one seed, by stage, and of all seeds (``total``)."""
    recipe, per_doc = row.recipe, _sequences(row)
    train_queries = recipe.train_queries or TRAIN_QUERIES
    trained = recipe.warm_start != "zero-shot"
    epoch = train_queries * (1 + recipe.negatives) * per_doc / TRAIN_RATE
    train = epoch * recipe.epochs if trained else 0.0
    passage = recipe.passage_steps * 8 * 2 * 0.3 / TRAIN_RATE if recipe.warm_start == "passage stage" else 0.0
    test = fine_tune = 0.0
    for column in row.columns:
        queries = _test_queries(column)
        test += queries * column.first_stage.depth * per_doc / INFER_RATE
        if column.training == "folds":  # 100 short epochs on each fold: about one MS MARCO epoch, plus validation
            fine_tune += epoch + 5 * queries * 0.2 * column.first_stage.depth * per_doc / INFER_RATE
        elif column.training == "farrelevant":
            fine_tune += recipe.fine_tune_queries * recipe.fine_tune_epochs * 2 * per_doc / TRAIN_RATE
    stages = {k: v / 3600 for k, v in dict(passage=passage, train=train, fine_tune=fine_tune, test=test).items()}
    stages["total"] = sum(stages.values()) * len(recipe.seeds)
    return stages


def _corpora(row: Row) -> list[str]:
    trained = row.recipe.warm_start != "zero-shot"
    ids = [row.recipe.train_irds_id] * trained + [i for c in row.columns for i in c.irds_ids]
    return list(dict.fromkeys(i.split("/")[0] for i in ids))


def _training(row: Row) -> str:
    recipe = row.recipe
    if recipe.warm_start == "zero-shot":
        return "  training: none (zero-shot)"
    start = ("from the backbone, heads discarded" if recipe.warm_start == "none" else
             f"after the library's passage stage ({recipe.passage_steps} steps; not the papers')")
    return (f"  training: {recipe.train_collection} {start}, {recipe.train_queries or 'all judged'} queries, "
            f"{recipe.epochs} epoch(s), {recipe.negatives} hard negative(s) from the top {recipe.train_depth}, "
            f"lr {recipe.lr:g} (head {recipe.head_lr:g}), {recipe.queries_per_step} queries a step, "
            f"warm-up {recipe.warmup:.0%}, seeds {list(recipe.seeds)}")


def _column_line(row: Row, cell) -> str:
    c, recipe = cell.column, row.recipe
    tuned = (f", fine-tuned on each of {len(c.folds)} folds for {recipe.fold_epochs} short epochs"
             if c.training == "folds" else
             f", fine-tuned on {recipe.fine_tune_queries} queries" if c.training == "farrelevant" else "")
    stage = "every document of its length" if c.first_stage.kind == "all" else \
        f"{c.first_stage.kind} top {c.first_stage.depth}"
    line = (f"    {c.name}: {c.test_source}, {c.metric}, {stage}{tuned}; "
            f"published {cell.published_text}")
    return line + (f"\n      the paper: {c.first_stage.paper}; here: {c.note}" if c.note else "")


def plan(row: Row) -> str:
    """The plan of ``row`` as text: the published values, what it runs, downloads, stores and costs."""
    recipe, hours = row.recipe, gpu_hours(row)
    corpora = _corpora(row)
    lines = [f"{row.paper.key} table {row.table} row {row.name}: {row.label} ({row.paper.citation})",
             f"  command: {row.command}",
             f"  model: {row.model} from {row.backbone}" + (f", {row.model_settings}" if row.settings else ""),
             _training(row)]
    lines += [f"  differs from the paper: {note}" for note in row.notes]
    lines.append(f"  published: {PAPER_NAMES[row.paper.key]}, Table {row.table}, row '{row.label}' "
                 f"({SIGNIFICANCE[row.paper.key, row.table]})")
    lines.append("  columns:")
    lines += [_column_line(row, cell) for cell in row.cells]
    lines.append("  downloads (ir_datasets, on first use):")
    lines += [f"    {name}: {CORPORA[name][2]}, about {CORPORA[name][0]:g} GB" for name in corpora]
    disk = sum(CORPORA[name][1] for name in corpora)
    lines.append(f"  disk: about {math.ceil(disk)} GB (documents, ir_datasets' docstore, PISA indexes), "
                 f"plus models of {len(recipe.seeds)} seeds")
    lines.append(f"  GPU-hours (rough, one A100-class GPU): about {hours['total']:.0f} for {len(recipe.seeds)} seeds "
                 f"(a seed: passage stage {hours['passage']:.1f}, training {hours['train']:.1f}, "
                 f"fine-tuning {hours['fine_tune']:.1f}, test runs {hours['test']:.1f})")
    return "\n".join(lines)

"""What a row will download, how much disk and roughly how many GPU-hours it needs, before it starts.

Corpus sizes are as ir_datasets downloads and stores them (with a PISA index). GPU-hours are on
the papers' GPUs, calibrated to what the papers report:

- one MS MARCO epoch "took from 6 hours for BERT FirstP to 24 hours for Longformer" (Boytsov et
  al. 2022, section 3): a model's epoch is interpolated between the two in the 512-token
  sequences it reads per document (``SEQUENCES``: FirstP 1, a 150-token window model 6,
  Longformer 1.5x PARADE Attn, which the same paper reports as the slowest to the fastest);
- Robust04's 100 short epochs per fold, with their evaluation, take "comparable to" one MS MARCO
  epoch (the positional-bias paper, appendix A): one epoch's time per Robust04 column;
- scoring is a forward pass only: three times a training step's documents an hour (an
  assumption: a backward pass costs about two forward passes);
- TinyLLAMA's work needed "about 400" A6000-hours, of 6,400 GPU-hours for the positional-bias
  paper's main experiments (6,000 on A10 or RTX 3090 GPUs): ``LLM_FACTOR`` is set so that its
  two rows (MS MARCO, Robust04 and FarRelevant fine-tuning, three seeds) sum to that
  (``tests/applications/test_reproduce.py`` checks it).
"""
from __future__ import annotations

import math

from ..data.longembed import LENGTHS
from .published import PAPER_NAMES, SIGNIFICANCE
from .schema import Column, Row

__all__ = ["GPUS", "epoch_hours", "gpu_hours", "plan", "rows_table"]

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
FIRSTP_EPOCH_HOURS, LONGFORMER_EPOCH_HOURS = 6.0, 24.0  # Boytsov et al. 2022, section 3
SCORING_SPEED_UP = 3.0  # documents scored an hour against documents trained on an hour
LLM_FACTOR = 1.27  # calibrated: TinyLLAMA's rows sum to about 400 A6000-hours (the positional-bias paper)
TINYLLAMA_HOURS = 400.0
GPUS = ("A10 or RTX 3090 GPUs (A6000 for TinyLLAMA), calibrated to the papers: 6 to 24 hours an MS MARCO epoch "
        "(Boytsov et al. 2022), about 400 A6000-hours for TinyLLAMA (positional-bias paper)")
WINDOWED = 6  # 150-token windows over 1431 tokens (MaxP, PARADE)
LONGEMBED_MEAN_TOKENS = sum(LENGTHS) / len(LENGTHS)
# LongP: Longformer costs about 1.5x PARADE Attn (Boytsov et al. 2022)
SEQUENCES = {"firstp": 1, "avgp": 3, "longp": WINDOWED * 1.5, "cedr_knrm": 3, "cedr_pacrr": 3, "cedr_drmm": 3,
             "neural_model1": 3, "biencoder_firstp": 1, "biencoder_longp": 3}


def epoch_hours(row: Row) -> float:
    """One MS MARCO epoch of the row's model: between FirstP's 6 and Longformer's 24 hours by its
    sequences per document (an LLM: ``LLM_FACTOR`` times its encoder-sized cost)."""
    model = row.model.removeprefix("llm_")
    sequences = SEQUENCES.get(model, WINDOWED)
    if not model.endswith("firstp"):  # a model that reads further (de-biased: 8109 tokens) reads more sequences
        sequences *= row.model_settings.get("max_doc_tokens", 1431) / 1431
    hours = FIRSTP_EPOCH_HOURS + (LONGFORMER_EPOCH_HOURS - FIRSTP_EPOCH_HOURS) * (sequences - 1) / (
        SEQUENCES["longp"] - 1)
    return hours * (LLM_FACTOR if row.model.startswith("llm_") else 1)


def _test_queries(column: Column) -> int:
    if column.test_queries:
        return column.test_queries
    return sum(TEST_QUERIES.get(i, 1000) for i in column.irds_ids[:len(column.parts) or 1])


def gpu_hours(row: Row) -> dict[str, float]:
    """Rough GPU-hours of one seed, by stage, and of all seeds (``total``), on the papers' GPUs."""
    recipe, epoch = row.recipe, epoch_hours(row)
    per_document = epoch / (TRAIN_QUERIES * 2)  # an epoch trains on a positive and a negative per query
    train_queries = recipe.train_queries or TRAIN_QUERIES
    trained = recipe.warm_start != "zero-shot"
    train = epoch * train_queries / TRAIN_QUERIES * recipe.epochs if trained else 0.0
    # passage pairs cost at most a FirstP pair
    passage = FIRSTP_EPOCH_HOURS * recipe.passage_steps * 8 / TRAIN_QUERIES if recipe.warm_start == "passage stage" else 0.0
    test = fine_tune = 0.0
    for column in row.columns:
        if column.training == "folds":  # fine-tuning and testing on the five folds: about one MS MARCO epoch
            fine_tune += epoch
            continue
        # LongEmbed's documents are read whole: 8,160 tokens on average over its lengths
        longer = LONGEMBED_MEAN_TOKENS / row.model_settings.get("max_doc_tokens", 1431) \
            if column.collection.startswith("longembed-") and not row.model.endswith("firstp") else 1
        test += _test_queries(column) * column.first_stage.depth * per_document * longer / SCORING_SPEED_UP
        if column.training == "farrelevant":
            fine_tune += recipe.fine_tune_queries * recipe.fine_tune_epochs * 2 * per_document
    stages = dict(passage=passage, train=train, fine_tune=fine_tune, test=test)
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
    documents = (f"de-biased (segments of about {recipe.shuffled_segment_words} words shuffled), "
                 if recipe.shuffled_segment_words else "")
    return (f"  training: {recipe.train_collection} {start}, {documents}{recipe.train_queries or 'all judged'} "
            f"queries, {recipe.epochs} epoch(s), {recipe.negatives} hard negative(s) from the library's BM25 top "
            f"{recipe.train_depth} (PyTerrier-PISA over the plain documents; the papers': their first stage's), "
            f"lr {recipe.lr:g} (head {recipe.head_lr:g}, both times {recipe.epoch_lr_decay:g} after each epoch), "
            f"{recipe.queries_per_step} queries a step, "
            f"warm-up {recipe.warmup:.0%}, {recipe.dtype or 'mixed precision on CUDA'}, seeds {list(recipe.seeds)}")


def _column_line(row: Row, cell) -> str:
    c, recipe = cell.column, row.recipe
    split = ("three training folds and a validation fold (the library's split)" if recipe.fold_validation else
             "the other four folds, no validation (the papers' split)")
    tuned = (f", fine-tuned for each of {len(c.folds)} test folds on {split} for {recipe.fold_epochs} short epochs"
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
    lines.append(f"  GPU-hours (rough, on {GPUS}): about {hours['total']:.0f} for {len(recipe.seeds)} seeds "
                 f"(a seed: passage stage {hours['passage']:.1f}, training {hours['train']:.1f}, "
                 f"fine-tuning {hours['fine_tune']:.1f}, test runs {hours['test']:.1f})")
    return "\n".join(lines)


def rows_table(rows: list[Row]) -> str:
    """The rows of one table as the guide lists them: name, the paper's name, model, published
    values in column order ("none": unreadable) and GPU-hours of all seeds."""
    lines = ["Columns: " + ", ".join(c.name for c in rows[0].columns) + ".", "",
             "| row (`--row`) | the paper's name | model (backbone) | published | GPU-hours, all seeds (rough) |",
             "|---|---|---|---|---|"]
    for row in rows:
        published = ", ".join("none" if c.published is None else c.published_text for c in row.cells)
        lines.append(f"| `{row.name}` | {row.label} | `{row.model}` ({row.backbone}) | {published} | "
                     f"{gpu_hours(row)['total']:.0f} |")
    return "\n".join(lines)

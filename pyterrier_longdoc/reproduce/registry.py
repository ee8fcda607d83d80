"""The papers' table rows: for each, the collections with their ir_datasets ids and folds, the
first stage and its depth, the model and its settings, the training recipe and the published
values with their significance marks and source.

Where a number comes from: the papers' text (Boytsov et al. 2022, section 3 and the footnotes of
its Table 4; the positional-bias paper's appendix A) and the authors' FlexNeuART configuration
files (``model_conf/main/*.json`` of github.com/searchivarius/long_doc_rank_model_analysis and
``..._v2``): training from the backbone with its prediction heads discarded, one epoch (two to
three for the randomly initialised PARADE Transformer), three seeds, encoder rate 1e-5, the rest
1e-4, 20% warm-up, the rates times 0.95 after each epoch, the pairwise margin loss, weight decay
1e-7, 16 queries per batch, queries padded to 32 tokens, documents of 1431 tokens (greedy splits:
three chunks of 477), hard negatives from the first stage's top 100 (MS MARCO, FarRelevant) or
top 1000 (Robust04, where the MS MARCO model is fine-tuned on the data repeated 100 times in one
epoch: 100 short epochs here, with no decay between them). The published values are
``published.csv`` (see ``published.py``); a cell the papers' text does not let us read stays
``None`` with the reason. Where the library departs from a paper, the row's ``notes`` say how
(and docs/guide/reproduce.md lists every difference).
"""
from __future__ import annotations

from dataclasses import replace

from .columns import (
    DL_2019, DL_2020, DL_2021, DL_POOLED, FAR_FINE_TUNED, FAR_ZERO_SHOT, LONGEMBED_NEEDLE, LONGEMBED_PASSKEY,
    MSMARCO_DEV, ROBUST04_DESC, ROBUST04_DESC_ZERO_SHOT, ROBUST04_TITLE, ROBUST04_TITLE_ZERO_SHOT)
from .published import published_cell
from .rows import MODELS_2022, MODELS_2024, TABLES
from .schema import NOT_FOUND, PAPERS, Cell, Column, FirstStage, Paper, Recipe, Row

__all__ = ["Cell", "Column", "FirstStage", "NOT_FOUND", "PAPERS", "Paper", "ROWS", "Recipe", "Row", "find_rows",
           "with_recipe"]


def _cell(paper: Paper, table: int, label: str, column: Column) -> Cell:
    printed = published_cell(paper.key, table, label, column.name)
    if printed is None:
        return Cell(column)
    return Cell(column, printed.value, printed.sig, printed.source, printed.note)


def _rows(paper: Paper, table: int, models: dict, columns, labels) -> tuple[Row, ...]:
    rows = []
    for name, label in labels:
        spec = models[name]
        zero_shot = spec.recipe.warm_start == "zero-shot"
        row_columns = tuple(_zero_shot(c) for c in columns if c.training != "farrelevant") if zero_shot else columns
        rows.append(Row(paper, table, name, label, spec.model, spec.backbone,
                        tuple(_cell(paper, table, label, c) for c in row_columns), spec.settings, spec.recipe,
                        spec.notes))
    return tuple(rows)


def _zero_shot(column: Column) -> Column:
    """A zero-shot row (E5-4K) is not fine-tuned on Robust04's folds either."""
    return {"robust04-title": ROBUST04_TITLE_ZERO_SHOT, "robust04-desc": ROBUST04_DESC_ZERO_SHOT}.get(column.name, column)


_COLUMNS = {
    ("boytsov2022", 4): (MSMARCO_DEV, DL_2019, DL_2020, DL_2021, DL_POOLED, ROBUST04_TITLE, ROBUST04_DESC),
    ("positional-bias", 1): (MSMARCO_DEV, DL_POOLED, ROBUST04_TITLE, ROBUST04_DESC),
    ("positional-bias", 2): (MSMARCO_DEV, DL_POOLED, FAR_ZERO_SHOT, FAR_FINE_TUNED, LONGEMBED_NEEDLE, LONGEMBED_PASSKEY),
    ("positional-bias", 4): (FAR_ZERO_SHOT, FAR_FINE_TUNED),
    ("positional-bias", 5): (DL_2019, DL_2020, DL_2021),
}
ROWS: tuple[Row, ...] = tuple(
    row for (key, table), labels in TABLES.items()
    for row in _rows(PAPERS[key], table, MODELS_2022 if key == "boytsov2022" else MODELS_2024, _COLUMNS[key, table],
                     labels))


def find_rows(paper: str, table: int | None = None, row: str | None = None) -> list[Row]:
    """The rows of ``paper`` (a key of ``PAPERS``), of one ``table`` and one ``row`` name if given;
    a ``ValueError`` names what exists when nothing matches."""
    if paper not in PAPERS:
        raise ValueError(f"unknown paper {paper!r}; papers: {', '.join(PAPERS)}")
    rows = [r for r in ROWS if r.paper.key == paper]
    tables = sorted({r.table for r in rows})
    if table is not None:
        if table not in tables:
            raise ValueError(f"{paper} has no table {table} here; tables: {', '.join(map(str, tables))}")
        rows = [r for r in rows if r.table == table]
    if row is not None:
        names = [r.name for r in rows]
        rows = [r for r in rows if r.name == row]
        if not rows:
            raise ValueError(f"{paper}{f' table {table}' if table else ''} has no row {row!r}; "
                             f"rows: {', '.join(dict.fromkeys(names))}")
    return rows


def with_recipe(row: Row, **changes) -> Row:
    """``row`` with recipe fields changed (a smaller run, other seeds)."""
    return replace(row, recipe=replace(row.recipe, **changes))

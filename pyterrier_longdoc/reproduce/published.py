"""The papers' published values, as printed: ``published.csv`` beside this module.

One line per table cell of Boytsov et al. 2022 ("Understanding Performance of Long-Document
Ranking Models ...", arXiv:2207.01262v1) Table 4 and of the positional-bias paper ("Positional
Bias in Long-Document Ranking ...", arXiv:2207.01262v4) Tables 1, 2 (both halves), 4, 5, 7 and 8: the paper, the
table, the row and column as the paper names them, the metric, the cell as printed, its value
(empty where the cell cannot be read, the reason in ``note``), the significance marks and the
relative gain as printed. Every cell was read from the papers' text and checked against its
line; the notes say where the text extraction is ambiguous.
"""
from __future__ import annotations

import csv
import functools
from dataclasses import dataclass
from pathlib import Path

__all__ = ["COLUMN_NAMES", "PAPER_NAMES", "SIGNIFICANCE", "PublishedCell", "published_cell", "published_cells"]

CSV_FILE = Path(__file__).with_name("published.csv")
FIELDS = ("paper", "table", "row", "column", "metric", "printed", "value", "sig", "rel_gain", "note")
PAPER_NAMES = {"boytsov2022": "Boytsov et al. 2022", "positional-bias": "Boytsov et al., positional bias"}
# the papers' column headers -> the registry's column names
COLUMN_NAMES = {
    "MS MARCO dev": "msmarco-dev", "TREC DL 2019": "trec-dl-2019", "TREC DL 2020": "trec-dl-2020",
    "TREC DL 2021": "trec-dl-2021", "TREC DL 2019-2021": "trec-dl-2019-2021", "Robust04 title": "robust04-title",
    "Robust04 description": "robust04-desc", "FarRelevant zero-shot": "farrelevant-zero-shot",
    "FarRelevant fine-tuned": "farrelevant-fine-tuned", "LongEmbed Needle": "longembed-needle",
    "LongEmbed Passkey": "longembed-passkey", "Avg. gain over FirstP": "avg-gain-over-firstp"}
# what a table's significance marks mean, from its caption (the marks of the positional-bias
# paper's Tables 4, 5 and 8 were read from the printed cells)
SIGNIFICANCE = {
    ("boytsov2022", 4): "a, b, c: significantly different (p<0.05) from FirstP (BERT), PARADE Attn and PARADE Attn "
                        "(ELECTRA); d: LongP from FirstP of Longformer",
    ("positional-bias", 1): "a: significantly different from the row's FirstP baseline (p<0.01 on MS MARCO dev, "
                            "p<0.05 otherwise)",
    ("positional-bias", 2): "a: a model trained on the de-biased MS MARCO significantly different from the same model "
                            "trained on the original (p<0.05 on TREC DL, p<0.01 otherwise); the original rows have "
                            "no marks",
    ("positional-bias", 4): "a: significantly different from the row's MaxP baseline (LongP: MaxP (BERT)); "
                            "b: from LongP (Longformer) (p<0.01)",
    ("positional-bias", 5): "a: significantly different from the row's FirstP baseline (p<0.01 on MS MARCO dev, "
                            "p<0.05 otherwise)",
}


@dataclass(frozen=True)
class PublishedCell:
    paper: str  # a key of registry.PAPERS
    table: int
    row: str  # as the paper names it
    column: str  # as the paper's header names it
    metric: str
    printed: str  # as printed ('' for an empty cell)
    value: float | None  # None: not readable or not evaluated, ``note`` says why
    sig: str  # significance marks, e.g. "abc"
    rel_gain: str  # as printed, e.g. "+1.9%"
    note: str

    @property
    def registry_column(self) -> str:
        return COLUMN_NAMES[self.column]

    @property
    def source(self) -> str:
        return f"{PAPER_NAMES[self.paper]}, Table {self.table}, row '{self.row}', column '{self.column}' ({self.metric})"


def _value(line: dict) -> float | None:
    if not line["value"]:
        return None
    if line["value"].endswith("%"):  # the average relative gain column
        return float(line["value"].rstrip("%")) / 100
    return float(line["value"])


@functools.cache
def published_cells(path: Path = CSV_FILE) -> tuple[PublishedCell, ...]:
    """Every cell of the table; a ``ValueError`` names a malformed line."""
    cells = []
    with open(path, newline="") as f:
        for number, line in enumerate(csv.DictReader(f), start=2):
            try:
                if tuple(line) != FIELDS:
                    raise ValueError(f"columns {tuple(line)}, expected {FIELDS}")
                if line["column"] not in COLUMN_NAMES:
                    raise ValueError(f"unknown column {line['column']!r}")
                cells.append(PublishedCell(
                    line["paper"], int(line["table"]), line["row"], line["column"], line["metric"], line["printed"],
                    _value(line), line["sig"], line["rel_gain"], line["note"]))
            except ValueError as error:
                raise ValueError(f"{path}, line {number}: {error}") from None
    return tuple(cells)


@functools.cache
def _index() -> dict[tuple[str, int, str, str], PublishedCell]:
    return {(c.paper, c.table, c.row, c.registry_column): c for c in published_cells()}


def published_cell(paper: str, table: int, row: str, column: str) -> PublishedCell | None:
    """The cell of ``row`` (the paper's name) and registry ``column`` of a paper's table, if printed."""
    return _index().get((paper, table, row, column))

"""The registry's record types: a paper, a table row, its columns, cells and training recipe."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Cell", "Column", "FirstStage", "NOT_FOUND", "PAPERS", "Paper", "Recipe", "Row"]

NOT_FOUND = "the paper prints no cell for this row and column"


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    citation: str
    url: str


@dataclass(frozen=True)
class FirstStage:
    """Where the candidates come from: ``bm25`` (PyTerrier-PISA over the collection's documents),
    ``builder`` (the FarRelevant builder's own candidates) or ``all`` (every generated document
    of the query's length, LongEmbed); ``depth`` per query; ``paper``: what the paper used."""

    kind: str = "bm25"
    depth: int = 100
    paper: str = "BM25 top 100"


@dataclass(frozen=True)
class Column:
    """One column of a table: a test collection and its metric.

    ``collection`` is a :func:`~pyterrier_longdoc.data.load_collection` name, ``"farrelevant"`` or
    ``"longembed-needle"``/``"longembed-passkey"`` (generated offline); ``irds_ids`` are every
    ir_datasets id it reads (the first is the test set); ``parts``: the (collection, ir_datasets
    id) of each year a pooled column averages over its queries; ``folds`` the ir_datasets ids of
    Robust04's five folds; ``training`` says which model it evaluates: ``msmarco`` (the model
    trained on MS MARCO documents, zero-shot here), ``folds`` (that model fine-tuned on each
    fold's training topics, the test folds' runs merged) or ``farrelevant`` (fine-tuned on
    FarRelevant's training queries)."""

    name: str
    collection: str
    irds_ids: tuple[str, ...]
    metric: str
    training: str = "msmarco"
    folds: tuple[str, ...] = ()
    first_stage: FirstStage = FirstStage()
    test_queries: int | None = None  # None: all of the collection's judged topics
    parts: tuple[tuple[str, str], ...] = ()
    note: str = ""  # where the library's data depart from the paper's

    @property
    def test_source(self) -> str:
        if self.parts:
            return " + ".join(self.irds_ids)
        return self.irds_ids[0] if self.irds_ids else f"{self.collection} (generated offline)"


@dataclass(frozen=True)
class Recipe:
    """Training, as the papers and the authors' configuration files give it (see the module doc)."""

    # "none": the document stage from the backbone, its heads discarded (the papers); "passage
    # stage": the library's passage stage first (an option, not the papers'); "zero-shot": no training
    warm_start: str = "none"
    train_collection: str = "msmarco-document/train"
    train_irds_id: str = "msmarco-document/train"
    train_queries: int | None = None  # None: all judged ones (the paper: 352K)
    train_depth: int = 100  # MS MARCO's hard negatives: BM25's top 100
    negatives: int = 1  # the pairwise margin loss: one positive against one hard negative
    epochs: int = 1
    lr: float = 1e-5
    head_lr: float = 1e-4
    warmup: float = 0.2
    queries_per_step: int = 16
    weight_decay: float = 1e-7
    epoch_lr_decay: float = 0.95  # the authors' configurations: the rates times 0.95 after each epoch
    seeds: tuple[int, ...] = (0, 1, 2)
    passage_steps: int = 20_000  # the passage stage's steps, batches of 8 (warm_start="passage stage")
    fold_epochs: int = 100  # Robust04: 100 short epochs on each fold's training topics
    # Robust04: False, each test fold's model trains on the other four folds with no validation
    # (the papers); True, on three of them, keeping the best epoch on the fourth (the library's split)
    fold_validation: bool = False
    # de-biased MS MARCO (Hofstätter et al. 2021a): each training document cut at random word
    # boundaries into segments of about this many words, shuffled; None: the original documents
    shuffled_segment_words: int | None = None
    dtype: str | None = None  # None: the library's (mixed precision on CUDA, as the papers); "fp32": MOSAIC
    fine_tune_queries: int = 50_000  # FarRelevant fine-tuning
    fine_tune_epochs: int = 1

    def fit_options(self, seed: int, **overrides) -> dict[str, Any]:
        """``TrainingArguments`` of this recipe, with ``overrides`` (a fine-tuning's epochs, the depth)."""
        return {**dict(epochs=self.epochs, lr=self.lr, head_lr=self.head_lr, warmup=self.warmup,
                       negatives=self.negatives, queries_per_step=self.queries_per_step,
                       weight_decay=self.weight_decay, epoch_lr_decay=self.epoch_lr_decay, seed=seed), **overrides}


@dataclass(frozen=True)
class Cell:
    """A column of a row with the paper's value: ``published`` (None: not readable or not
    evaluated, ``note`` says why), its significance marks ``sig`` and its ``source`` (paper,
    table, row and column as the paper names them)."""

    column: Column
    published: float | None = None
    sig: str = ""
    source: str = NOT_FOUND
    note: str = ""

    @property
    def published_text(self) -> str:
        if self.published is None:
            return f"none ({self.note or self.source})"
        return f"{self.published:.3f}" + (f"^{self.sig}" if self.sig else "")


@dataclass(frozen=True)
class Row:
    paper: Paper
    table: int
    name: str  # the CLI's --row
    label: str  # as the paper's table names it
    model: str  # a registered model name (``pyterrier-longdoc models``)
    backbone: str
    cells: tuple[Cell, ...]
    settings: tuple[tuple[str, Any], ...] = ()
    recipe: Recipe = field(default_factory=Recipe)
    notes: tuple[str, ...] = ()  # where the library departs from the paper

    @property
    def model_settings(self) -> dict[str, Any]:
        return dict(self.settings)

    @property
    def columns(self) -> tuple[Column, ...]:
        return tuple(cell.column for cell in self.cells)

    @property
    def command(self) -> str:
        return f"pyterrier-longdoc reproduce {self.paper.key} --table {self.table} --row {self.name}"


BOYTSOV_2022 = Paper(
    "boytsov2022", "Understanding Performance of Long-Document Ranking Models through Comprehensive Evaluation "
    "and Leaderboarding", "Boytsov, Lin, Gao, Zhao, Huang and Nyberg, arXiv:2207.01262v1, 2022",
    "https://arxiv.org/abs/2207.01262v1")
POSITIONAL_BIAS = Paper(
    "positional-bias", "Positional Bias in Long-Document Ranking: Impact, Assessment, and Mitigation",
    "Boytsov, Akinpelu, Katyal, Lin, Gao, Zhao, Huang and Nyberg, arXiv:2207.01262v4, 2024-2025",
    "https://arxiv.org/abs/2207.01262")
PAPERS = {p.key: p for p in (BOYTSOV_2022, POSITIONAL_BIAS)}


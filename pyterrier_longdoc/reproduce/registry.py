"""The papers' table rows: for each, the collections with their ir_datasets ids and folds, the
first stage and its depth, the model and its settings, the training recipe and the published value.

Where a number comes from: the recipe is the authors' FlexNeuART configuration files
(``model_conf/main/*.json`` of github.com/searchivarius/long_doc_rank_model_analysis and
``..._v2``): encoder rate 1e-5, the rest 1e-4, 20% warm-up, the pairwise margin loss, weight
decay 1e-7, 16 queries per batch, queries of 32 tokens and documents of 1431 (FirstP: 477). The
FarRelevant protocol is their ``hist_scripts/msmarco_synthetic_longdoc`` scripts: fine-tuning
from the MS MARCO model of the same seed for one epoch on 50,000 training queries, evaluation by
RR over BM25's top 100 for 1,000 dev queries. The rows are the authors' model list
(``model_conf/README.md``) that the library has a class for. The published values were not in
the stored copies of the papers that this registry was written from (their tables were not
readable there), so every ``published`` is ``None`` with that note: fill one in only from the
paper, with its table.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["Cell", "Column", "FirstStage", "NOT_FOUND", "PAPERS", "Paper", "ROWS", "Recipe", "Row", "find_rows", "with_recipe"]

NOT_FOUND = "value not found in the stored sources"


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    citation: str
    url: str


@dataclass(frozen=True)
class FirstStage:
    """Where the candidates come from: ``bm25`` (PyTerrier-PISA over the collection's documents)
    or ``builder`` (the FarRelevant builder's own candidates); ``depth`` per query."""

    kind: str = "bm25"
    depth: int = 100
    paper: str = "BM25 top 100"


@dataclass(frozen=True)
class Column:
    """One column of a table: a test collection and its metric.

    ``collection`` is a :func:`~pyterrier_longdoc.data.load_collection` name or ``"farrelevant"``;
    ``irds_ids`` are every ir_datasets id it reads (the first is the test set); ``folds`` the
    ir_datasets ids of Robust04's five folds; ``training`` says which model it evaluates:
    ``msmarco`` (the model trained on MS MARCO documents, zero-shot here), ``folds`` (that model
    fine-tuned on each fold's training topics, the test folds' runs merged) or ``farrelevant``
    (fine-tuned on FarRelevant's training queries)."""

    name: str
    collection: str
    irds_ids: tuple[str, ...]
    metric: str
    training: str = "msmarco"
    folds: tuple[str, ...] = ()
    first_stage: FirstStage = FirstStage()
    test_queries: int | None = None  # None: all of the collection's judged topics


@dataclass(frozen=True)
class Recipe:
    """Training, as the authors' configuration files give it (see the module doc)."""

    # "passage stage": the library's passage stage on the training documents' qrels, then the
    # document stage; "none": the document stage from the backbone (an LLM, trained with LoRA)
    warm_start: str = "passage stage"
    train_collection: str = "msmarco-document/train"
    train_irds_id: str = "msmarco-document/train"
    train_queries: int | None = None  # None: all
    negatives: int = 1  # the pairwise margin loss: one positive against one hard negative
    epochs: int = 1
    lr: float = 1e-5
    head_lr: float = 1e-4
    warmup: float = 0.2
    queries_per_step: int = 16
    weight_decay: float = 1e-7
    seeds: tuple[int, ...] = (0, 1, 2)
    passage_steps: int = 20_000  # the warm start's steps, batches of 8 (the library's passage stage)
    fine_tune_queries: int = 50_000  # FarRelevant fine-tuning
    fine_tune_epochs: int = 1
    notes: str = ("the warm start, the number of MS MARCO training queries and epochs and the seeds are not in "
                  "the stored sources: the library's passage stage (20,000 steps), all training queries, one "
                  "epoch, seeds 0-2")

    def fit_options(self, seed: int, **overrides) -> dict[str, Any]:
        """``TrainingArguments`` of this recipe, with ``overrides`` (a fine-tuning's epochs, the depth)."""
        return {**dict(epochs=self.epochs, lr=self.lr, head_lr=self.head_lr, warmup=self.warmup,
                       negatives=self.negatives, queries_per_step=self.queries_per_step,
                       weight_decay=self.weight_decay, seed=seed), **overrides}


@dataclass(frozen=True)
class Cell:
    column: Column
    published: float | None = None
    source: str = NOT_FOUND


@dataclass(frozen=True)
class Row:
    paper: Paper
    table: int
    name: str  # the CLI's --row
    label: str  # as the paper names it
    model: str  # a registered model name (``pyterrier-longdoc models``)
    backbone: str
    cells: tuple[Cell, ...]
    settings: tuple[tuple[str, Any], ...] = ()
    recipe: Recipe = field(default_factory=Recipe)

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

_ROBUST04 = "disks45/nocr/trec-robust-2004"
_FOLDS = tuple(f"{_ROBUST04}/fold{k}" for k in range(1, 6))
MSMARCO_DEV = Column("msmarco-dev", "msmarco-document/dev", ("msmarco-document/dev",), "RR@100")
DL_2019 = Column("trec-dl-2019", "msmarco-document/trec-dl-2019", ("msmarco-document/trec-dl-2019/judged",), "nDCG@10")
DL_2020 = Column("trec-dl-2020", "msmarco-document/trec-dl-2020", ("msmarco-document/trec-dl-2020/judged",), "nDCG@10")
DL_2021 = Column("trec-dl-2021", "msmarco-document-v2/trec-dl-2021", ("msmarco-document-v2/trec-dl-2021/judged",),
                 "nDCG@10")
ROBUST04_TITLE = Column("robust04-title", "robust04-title", (_ROBUST04,), "nDCG@20", "folds", _FOLDS)
ROBUST04_DESC = Column("robust04-desc", "robust04-desc", (_ROBUST04,), "nDCG@20", "folds", _FOLDS)
# FarRelevant from MS MARCO passages by the library's builder: training queries from the judged
# training queries, 1,000 test queries from the judged dev queries (the authors' dev_official_sample1K)
_FAR = ("msmarco-passage/dev/judged", "msmarco-passage/train/judged")
_FAR_STAGE = FirstStage("builder", 100, "BM25 top 100 over the FarRelevant documents")
FAR_ZERO_SHOT = Column("farrelevant-zero-shot", "farrelevant", _FAR, "RR", "msmarco", first_stage=_FAR_STAGE,
                       test_queries=1000)
FAR_FINE_TUNED = Column("farrelevant-fine-tuned", "farrelevant", _FAR, "RR", "farrelevant", first_stage=_FAR_STAGE,
                        test_queries=1000)

_BERT = "bert-base-uncased"
_ELECTRA = "google/electra-base-discriminator"
# (row name, paper's label, model, backbone, settings); FirstP reads 477 document tokens, the
# others 1431 (the configurations' max_doc_len), queries 32 tokens (the library's default)
_MODELS_2022 = (
    ("firstp", "FirstP (BERT)", "firstp", _BERT, ()),
    ("firstp-electra", "FirstP (ELECTRA)", "firstp", _ELECTRA, ()),
    ("avgp", "AvgP", "avgp", _BERT, ()),
    ("maxp", "MaxP", "maxp", _BERT, ()),
    ("sump", "SumP", "sump", _BERT, ()),
    ("cedr-drmm", "CEDR-DRMM", "cedr_drmm", _BERT, (("max_doc_tokens", 1431),)),
    ("cedr-knrm", "CEDR-KNRM", "cedr_knrm", _BERT, (("max_doc_tokens", 1431),)),
    ("cedr-pacrr", "CEDR-PACRR", "cedr_pacrr", _BERT, (("max_doc_tokens", 1431),)),
    ("neural-model1", "Neural Model1", "neural_model1", _BERT, ()),
    ("parade-attn", "PARADE Attn", "parade_attn", _BERT, ()),
    ("parade-attn-electra", "PARADE Attn (ELECTRA)", "parade_attn", _ELECTRA, ()),
    ("parade-avg", "PARADE Avg", "parade_avg", _BERT, ()),
    ("parade-max", "PARADE Max", "parade_max", _BERT, ()),
    ("parade-transf-rand", "PARADE Transf-RAND-L2", "parade_transformer", _BERT, ()),
    ("parade-transf-pretr", "PARADE Transf-PRETR-L6", "parade_transformer_pretr", _BERT, ()),
    ("parade-transf-pretr-q", "PARADE Transf-PRETR-Q-L6", "parade_transformer_q", _BERT, ()),
    ("bigbird", "Big-BIRD", "longp", "google/bigbird-roberta-base", (("max_doc_tokens", 1431),)),
    ("longformer", "Longformer", "longp", "allenai/longformer-base-4096", (("max_doc_tokens", 1431),)),
)
# the positional-bias paper's repository adds these (``..._v2/model_conf/main``)
_MODELS_2024 = tuple(m for m in _MODELS_2022 if m[0] != "parade-transf-pretr-q") + (
    ("parade-transf-pretr-lateir", "PARADE-Transf-Pretr-LATEIR-L6", "parade_transformer_q", _BERT, ()),
    ("jina-longp", "JINA (LongP)", "longp", "jinaai/jina-embeddings-v2-base-en",
     (("max_doc_tokens", 1431), ("pooling", "mean"), ("trust_remote_code", True))),
    ("tinyllama-longp", "TinyLlama (LongP)", "llm_longp", "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
     (("max_doc_tokens", 1431),)),
)


def _rows(paper: Paper, table: int, models, columns) -> tuple[Row, ...]:
    return tuple(Row(paper, table, name, label, model, backbone, tuple(Cell(c) for c in columns), settings,
                     Recipe(warm_start="none") if model.startswith("llm_") else Recipe())
                 for name, label, model, backbone, settings in models)


ROWS: tuple[Row, ...] = (
    _rows(BOYTSOV_2022, 4, _MODELS_2022, (MSMARCO_DEV, DL_2019, DL_2020, ROBUST04_TITLE, ROBUST04_DESC))
    + _rows(POSITIONAL_BIAS, 1, _MODELS_2024, (MSMARCO_DEV, DL_2019, DL_2020, DL_2021, ROBUST04_TITLE, ROBUST04_DESC))
    + _rows(POSITIONAL_BIAS, 4, _MODELS_2024, (FAR_ZERO_SHOT, FAR_FINE_TUNED))
)


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

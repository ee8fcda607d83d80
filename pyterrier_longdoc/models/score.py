"""FirstP, MaxP, SumP and the k-max average: every window scored by the chunk head, then combined.

Dai & Callan, "Deeper Text Understanding for IR with Contextual Neural Language Modeling",
SIGIR 2019. Started from a trained cross-encoder, a window's score is that cross-encoder's
score of the (query, window) pair, so these models rank zero-shot.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from typing_extensions import Unpack

from .._build import InMemory, build_model
from .._reranker import LongDocReranker, Source
from ..engine.settings import ModelOptions, ModelSettings, positive_int, setting
from ..aggregators.score import ScoreAggregator


@dataclass(frozen=True)
class FirstPSettings(ModelSettings):
    """FirstP's settings: the first chunk only, as long as the encoder input holds."""

    max_chunks: int | None = setting(1, "chunks per document at most: FirstP reads the first")


class FirstPOptions(ModelOptions, total=False):
    """FirstP's keywords (``FirstPSettings``' fields, the runtime options and how it loads)."""


@dataclass(frozen=True)
class MaxPSettings(ModelSettings):
    """The sliding windows of MaxP and SumP (Dai & Callan: 150 tokens every 100; 1431 tokens in all)."""

    window: int | None = setting(150, "tokens per window")
    stride: int | None = setting(100, "tokens between the starts of two windows")


class MaxPOptions(ModelOptions, total=False):
    """The keywords of MaxP and SumP (``MaxPSettings``)."""


@dataclass(frozen=True)
class KMaxAvgPSettings(MaxPSettings):
    """The k-max average's windows and its ``k``."""

    k: int = setting(3, "how many of the best windows' scores are averaged")

    def __post_init__(self):
        super().__post_init__()
        positive_int(self, "k")


class KMaxAvgPOptions(MaxPOptions, total=False):
    """The k-max average's keywords (``KMaxAvgPSettings``)."""

    k: int


class FirstP(LongDocReranker):
    """FirstP: the query with the start of the document (query + document <= 512 tokens)."""

    name = "firstp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "first"}
    Settings = FirstPSettings
    crops = True  # reading the start only is FirstP's definition: no cropping warning unless warn_cropping=True

    def __init__(self, model_name_or_path: Source, **options: Unpack[FirstPOptions]):
        self._load(model_name_or_path, options)

    def as_maxp(self, **settings) -> MaxP:
        """The inference view of a segment-trained FirstP (BeST): a MaxP with a copy of its weights, reading
        disjoint windows of the FirstP's size over ``max_doc_tokens`` tokens, filled as the training segments
        are (FirstP and MaxP score each window with the same head); ``settings`` over those."""
        return _maxp_reading(self, {"max_chunks": None, "disjoint_split": "fill", **settings})


class MaxP(LongDocReranker):
    """MaxP: the best-scoring sliding window decides (window 150, stride 100, 1431 tokens)."""

    name = "maxp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "max"}
    Settings = MaxPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[MaxPOptions]):
        self._load(model_name_or_path, options)

    def as_maxp(self, **settings) -> MaxP:
        """The model itself, or a MaxP with a copy of its weights and ``settings`` when they are given (as
        ``FirstP.as_maxp``: BeST's inference view)."""
        return self if not settings else _maxp_reading(self, settings)


class SumP(LongDocReranker):
    """SumP: the sum of the sliding windows' scores (window 150, stride 100, 1431 tokens)."""

    name = "sump"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "sum"}
    Settings = MaxPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[MaxPOptions]):
        self._load(model_name_or_path, options)


class KMaxAvgP(LongDocReranker):
    """k-max average: the mean of the ``k`` best windows' scores (k=3; window 150, stride 100)."""

    name = "kmax_avgp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "kmaxavg"}
    Settings = KMaxAvgPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[KMaxAvgPOptions]):
        self._load(model_name_or_path, options)


def _maxp_reading(model: FirstP | MaxP, settings: dict) -> MaxP:
    """A MaxP with a copy of ``model``'s encoder and window head, its settings with ``settings`` over them,
    built by the one building path (``build_model``, from the model in memory), on its runtime."""
    if model.name not in ("firstp", "maxp"):  # an LLM's or another subclass's settings are not MaxP's
        raise ValueError(f"as_maxp needs a FirstP or MaxP, got {type(model).__name__}")
    source = InMemory(model.model, model.settings, model.config.base_model)
    config, engine = build_model(MaxP, source, settings)
    return MaxP.from_model(engine, config, **{**dataclasses.asdict(model.runtime), "device": model.device})

"""FirstP, MaxP, SumP and the k-max average: every window scored by the chunk head, then combined.

Dai & Callan, "Deeper Text Understanding for IR with Contextual Neural Language Modeling",
SIGIR 2019. Started from a trained cross-encoder, a window's score is that cross-encoder's
score of the (query, window) pair, so these models rank zero-shot.
"""
from __future__ import annotations

from dataclasses import dataclass

from .._reranker import LongDocReranker
from ..engine.settings import ModelSettings, positive_int, setting
from ..aggregators.score import ScoreAggregator


@dataclass(frozen=True)
class FirstPSettings(ModelSettings):
    """FirstP's settings: the first chunk only, as long as the encoder input holds."""

    max_chunks: int | None = setting(1, "chunks per document at most: FirstP reads the first")


@dataclass(frozen=True)
class MaxPSettings(ModelSettings):
    """The sliding windows of MaxP and SumP (Dai & Callan: 150 tokens every 100; 1431 tokens in all)."""

    window: int | None = setting(150, "tokens per window")
    stride: int | None = setting(100, "tokens between the starts of two windows")


@dataclass(frozen=True)
class KMaxAvgPSettings(MaxPSettings):
    """The k-max average's windows and its ``k``."""

    k: int = setting(3, "how many of the best windows' scores are averaged")

    def __post_init__(self):
        super().__post_init__()
        positive_int(self, "k")


class FirstP(LongDocReranker):
    """FirstP: the query with the start of the document (query + document <= 512 tokens)."""

    name = "firstp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "first"}
    Settings = FirstPSettings
    crops = True  # reading the start only is FirstP's definition: no cropping warning unless warn_cropping=True


class MaxP(LongDocReranker):
    """MaxP: the best-scoring sliding window decides (window 150, stride 100, 1431 tokens)."""

    name = "maxp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "max"}
    Settings = MaxPSettings


class SumP(LongDocReranker):
    """SumP: the sum of the sliding windows' scores (window 150, stride 100, 1431 tokens)."""

    name = "sump"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "sum"}
    Settings = MaxPSettings


class KMaxAvgP(LongDocReranker):
    """k-max average: the mean of the ``k`` best windows' scores (k=3; window 150, stride 100)."""

    name = "kmax_avgp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "kmaxavg"}
    Settings = KMaxAvgPSettings

"""Score aggregation: a linear head on each chunk's [CLS], then first / max / sum over chunks.

Dai & Callan, "Deeper Text Understanding for IR with Contextual Neural Language Modeling",
SIGIR 2019 (FirstP, MaxP, SumP).
"""
from __future__ import annotations

import torch
from torch import nn

from .._reranker import LongDocReranker
from .base import Aggregator, masked_reduce


class ScoreAggregator(Aggregator):
    """``reduce(linear(cls_1), ..., linear(cls_m))`` over a document's chunks."""

    def __init__(self, hidden_size: int, reduce: str):
        super().__init__(hidden_size)
        self.reduce = reduce
        self.head = nn.Linear(hidden_size, 1)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return masked_reduce(self.head(features).squeeze(-1), mask, self.reduce)


class FirstP(LongDocReranker):
    """FirstP: the query with the start of the document (query + document <= 512 tokens)."""

    name = "firstp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "first"}
    defaults = {"window": None, "stride": None, "max_chunks": 1}


class MaxP(LongDocReranker):
    """MaxP: the best-scoring sliding window decides (window 150, stride 100, 1431 tokens)."""

    name = "maxp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "max"}
    defaults = {"window": 150, "stride": 100, "max_doc_tokens": 1431}


class SumP(LongDocReranker):
    """SumP: the sum of the sliding windows' scores (window 150, stride 100, 1431 tokens)."""

    name = "sump"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "sum"}
    defaults = {"window": 150, "stride": 100, "max_doc_tokens": 1431}

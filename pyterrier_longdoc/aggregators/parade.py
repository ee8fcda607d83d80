"""Representation aggregation: chunk [CLS] vectors are combined first, then scored.

Li, Yates, MacAvaney, He, Sun, "PARADE: Passage Representation Aggregation for Document
Reranking", ACM TOIS 2023 (PARADE Avg / Max / Sum / Attn), and AvgP of Boytsov et al.,
"Understanding Performance of Long-Document Ranking Models through Comprehensive Evaluation
and Leaderboarding" (mean [CLS] of up to three disjoint 477-token chunks).
"""
from __future__ import annotations

import torch
from torch import nn

from .._reranker import LongDocReranker
from .base import Aggregator, expand_mask, masked_reduce

PARADE_WINDOWS = {"window": 150, "stride": 75, "max_doc_tokens": 1431}


class PooledAggregator(Aggregator):
    """``linear(reduce(cls_1, ..., cls_m))`` with an element-wise mean, max or sum."""

    def __init__(self, hidden_size: int, reduce: str):
        super().__init__(hidden_size)
        self.reduce = reduce
        self.head = nn.Linear(hidden_size, 1)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(masked_reduce(features, mask, self.reduce)).squeeze(-1)


class AttentionAggregator(Aggregator):
    """PARADE-Attn: ``w = softmax_i(C . cls_i)``, score ``linear(sum_i w_i cls_i)``."""

    def __init__(self, hidden_size: int):
        super().__init__(hidden_size)
        self.query_vector = nn.Parameter(torch.empty(hidden_size).normal_(std=0.02))
        self.head = nn.Linear(hidden_size, 1)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        logits = (features @ self.query_vector).masked_fill(~mask, float("-inf"))
        weights = torch.softmax(logits, dim=1)
        pooled = (weights.unsqueeze(-1) * features * expand_mask(mask, features)).sum(dim=1)
        return self.head(pooled).squeeze(-1)


class AvgP(LongDocReranker):
    """AvgP: the mean [CLS] of up to three disjoint chunks of 477 tokens, then a linear head."""

    name = "avgp"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "mean"}
    defaults = {"window": None, "stride": None, "max_chunks": 3, "max_doc_tokens": 1431}


class ParadeAvg(LongDocReranker):
    """PARADE-Avg: the element-wise mean of the windows' [CLS] vectors, then a linear head."""

    name = "parade_avg"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "mean"}
    defaults = PARADE_WINDOWS


class ParadeMax(LongDocReranker):
    """PARADE-Max: the element-wise max of the windows' [CLS] vectors, then a linear head."""

    name = "parade_max"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "max"}
    defaults = PARADE_WINDOWS


class ParadeSum(LongDocReranker):
    """PARADE-Sum: the element-wise sum of the windows' [CLS] vectors, then a linear head."""

    name = "parade_sum"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "sum"}
    defaults = PARADE_WINDOWS


class ParadeAttn(LongDocReranker):
    """PARADE-Attn: an attention-weighted sum of the windows' [CLS] vectors, then a linear head."""

    name = "parade_attn"
    aggregator = AttentionAggregator
    defaults = PARADE_WINDOWS

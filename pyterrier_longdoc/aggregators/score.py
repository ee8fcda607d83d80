"""Score aggregation: each chunk scored by the chunk head, then first / max / sum / k-max average.

Dai & Callan, "Deeper Text Understanding for IR with Contextual Neural Language Modeling",
SIGIR 2019 (FirstP, MaxP, SumP); the mean of the k best passage scores as in Chen et al.
(TREC 2020) and Boytsov et al. (2022).
"""
from __future__ import annotations

import torch

from .base import Aggregator, masked_reduce, recorded
from .heads import Head

REDUCTIONS = ("first", "max", "sum", "kmaxavg")


class ScoreAggregator(Aggregator):
    """``reduce(head(cls_1), ..., head(cls_m))`` over a document's chunks."""

    chunk_head = True
    tunable = ("k",)  # how many window scores the mean takes: no weight depends on it
    window_weights_column = "window_scores"

    def __init__(self, hidden_size: int, reduce: str, k: int = 3, head: Head | None = None):
        super().__init__(hidden_size, head)
        if reduce not in REDUCTIONS:
            raise ValueError(f"reduce must be one of {REDUCTIONS}, got {reduce!r}")
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive integer, got {k!r}")
        self.reduce = reduce
        self.k = k

    def window_weights(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Each window's score by the chunk head (padding windows included: ``forward`` masks them)."""
        return self.head(features).squeeze(-1)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        scores = recorded(self.window_weights(features, mask), mask)
        if self.reduce != "kmaxavg":
            return masked_reduce(scores, mask, self.reduce)
        # the mean of the k best chunk scores (of all chunks when a document has fewer than k)
        best = scores.masked_fill(~mask, float("-inf")).topk(min(self.k, scores.shape[1]), dim=1).values
        kept = torch.isfinite(best)
        return best.where(kept, torch.zeros_like(best)).sum(1) / kept.sum(1).clamp(min=1)

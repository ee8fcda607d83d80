"""Bi-encoder scoring: the similarity of the query's embedding with each window's, then first or max.

Reimers & Gurevych, "Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks", EMNLP
2019 (query and text embedded apart, cosine similarity); Wang et al., "Text Embeddings by
Weakly-Supervised Contrastive Pre-training" (E5, 2022: ``query: `` / ``passage: `` prefixes).
"""
from __future__ import annotations

from typing import ClassVar

import torch
import torch.nn.functional as F

from .base import Aggregator, masked_reduce, recorded
from .heads import POOLINGS, pool

SIMILARITIES = ("cosine", "dot")


class BiEncoderAggregator(Aggregator):
    """``reduce(sim(q, w_1), ..., sim(q, w_m))``: ``features`` are the windows' embeddings
    ``[documents, chunks, H]`` and the query's ``[documents, H]``.

    ``pooling``: ``"mean"``, ``"cls"`` or ``"last"`` (the model's own); ``normalize``: scale every
    embedding to unit length first (a sentence-transformers Normalize module); ``similarity``:
    ``"cosine"`` or ``"dot"``.
    """

    zero_shot: ClassVar[bool] = True
    window_weights_column: ClassVar[str] = "window_scores"

    def __init__(self, hidden_size: int, reduce: str, pooling: str = "mean", normalize: bool = False,
                 similarity: str = "cosine"):
        super().__init__(hidden_size)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if similarity not in SIMILARITIES:
            raise ValueError(f"similarity must be one of {SIMILARITIES}, got {similarity!r}")
        if not isinstance(normalize, bool):
            raise ValueError(f"normalize must be True or False, got {normalize!r}")
        self.reduce, self.pooling, self.normalize, self.similarity = reduce, pooling, normalize, similarity

    def chunk_features(self, output, batch) -> torch.Tensor:
        vectors = pool(output, batch.attention_mask, self.pooling)
        return F.normalize(vectors.float(), dim=-1) if self.normalize else vectors

    def window_weights(self, features: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
        """Each window's similarity with the query (padding windows included: ``forward`` masks them)."""
        windows, query = features
        if self.similarity == "cosine":
            windows, query = F.normalize(windows, dim=-1), F.normalize(query, dim=-1)
        return (windows * query.unsqueeze(1)).sum(-1)

    def forward(self, features: tuple[torch.Tensor, torch.Tensor], mask: torch.Tensor) -> torch.Tensor:
        return masked_reduce(recorded(self.window_weights(features, mask), mask), mask, self.reduce)

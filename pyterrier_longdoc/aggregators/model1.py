"""Neural Model 1: IBM Model 1 over contextual token embeddings.

Boytsov & Kolter, "Exploring Classic and Neural Lexical Translation Models for Information
Retrieval: Interpretability, Effectiveness, and Efficiency Benefits", ECIR 2021 (BERT-Model1).
"""
from __future__ import annotations

import torch
from torch import nn

from .base import Aggregator, masked_reduce, select_tokens


class Model1Aggregator(Aggregator):
    """The neural parametrisation of IBM Model 1 (no [CLS]):

    Model 1 (Eq. 1-2 of the paper, after Berger & Lafferty)::

        log P(Q|D) = sum_{q in Q} log P(q|D),
        P(q|D) = (1 - lambda) * sum_{d in D} T(q|d) P(d|D) + lambda * P(q|C)

    with, for contextual embeddings, every document token its own term, ``P(d|D) = 1/|D|``,
    and no collection smoothing (``lambda = 0``), as in the neural Model 1. The translation
    probability is a neural function of the last-layer contextual vectors ``e_q``, ``e_d``::

        T(q|d) = sigmoid(P_q(e_q) . P_d(e_d) / sqrt(hidden))

    with ``P_q``, ``P_d`` learned linear projections; the sigmoid keeps T in (0, 1) without
    normalising over a vocabulary, which contextual embeddings do not have. The scaling by
    sqrt(hidden) is ours, so that the sigmoid does not saturate at initialisation.

    The document is read in disjoint chunks (``[CLS] q [SEP] chunk [SEP]``); each chunk keeps
    ``sum_d T(q|d)`` over its tokens and its token count, so the per-document sums over chunks
    give P(q|D) over all the document's tokens exactly. The query vectors are those of each
    chunk's own sequence. Padding tokens never enter a sum; padding query tokens are dropped.
    """

    def __init__(self, hidden_size: int):
        super().__init__(hidden_size)
        self.project_query = nn.Linear(hidden_size, hidden_size)
        self.project_doc = nn.Linear(hidden_size, hidden_size)

    def chunk_features(self, output, batch):
        query, query_mask = select_tokens(output.last_hidden_state, batch.query_mask)
        doc, doc_mask = select_tokens(output.last_hidden_state, batch.doc_mask)
        logits = self.project_query(query) @ self.project_doc(doc).transpose(1, 2) / self.hidden_size ** 0.5
        translation = torch.sigmoid(logits.float()) * doc_mask[:, None, :]  # T(q|d), [n, query, doc]
        return translation.sum(-1), doc_mask.sum(-1).float(), query_mask

    def forward(self, features, mask: torch.Tensor) -> torch.Tensor:
        translation, doc_tokens, query_mask = features
        p_query = masked_reduce(translation, mask, "sum") / masked_reduce(doc_tokens, mask, "sum").clamp(min=1)[:, None]
        return torch.where(query_mask[:, 0], torch.log(p_query + 1e-9), 0.0).sum(-1)

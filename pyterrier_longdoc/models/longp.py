"""LongP: the whole document through one long encoder, no chunking (see aggregators/longp.py
for the papers)."""
from __future__ import annotations

from .._reranker import LongDocReranker
from ..aggregators.longp import LongPAggregator


class LongP(LongDocReranker):
    """LongP: query and document in one sequence of a long encoder (Longformer, BigBird,
    ModernBERT, JinaBERT, ...), scored by the chunk head on [CLS] or mean pooling (a trained
    sequence-classification checkpoint keeps its own head).

    The input budget is the encoder's maximum (``max_length=None``: its position embeddings,
    e.g. 4096 tokens for Longformer and BigBird) and ``max_doc_tokens`` (4096); pass
    ``max_length`` to read less. Encoders with remote code (JinaBERT) need
    ``trust_remote_code=True``, which runs the model repository's own Python code.
    """

    name = "longp"
    aggregator = LongPAggregator
    defaults = {"window": None, "stride": None, "max_chunks": 1, "max_length": None, "max_doc_tokens": 4096,
                "pooling": None}

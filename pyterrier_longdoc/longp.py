"""LongP: the whole document through one long encoder, no chunking.

Boytsov et al., "Understanding Performance of Long-Document Ranking Models through
Comprehensive Evaluation and Leaderboarding" (LongP over Longformer and BigBird); Beltagy et
al., "Longformer: The Long-Document Transformer" (2020); Zaheer et al., "Big Bird:
Transformers for Longer Sequences" (NeurIPS 2020).
"""
from __future__ import annotations

import inspect

from ._reranker import LongDocReranker
from .aggregators.score import ScoreAggregator

POOLINGS = ("cls", "mean")


class LongPAggregator(ScoreAggregator):
    """A linear head on the [CLS] vector or on the mean of the token vectors of the one chunk.

    ``pooling=None`` takes the encoder's own ``classifier_pooling`` (ModernBERT) and else
    ``"cls"``. Encoders that take a ``global_attention_mask`` (Longformer) get global
    attention on [CLS] and the query tokens, as in the Longformer paper's QA setup.

    BigBird's block-sparse attention makes the last block global, so a document's score
    depends slightly on how much padding its batch adds; use ``batch_size=1`` to rule that out.
    """

    def __init__(self, hidden_size: int, pooling: str | None = None):
        super().__init__(hidden_size, reduce="first")
        if pooling is not None and pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS} or None, got {pooling!r}")
        self.pooling = pooling
        self.global_attention, self.attention_type = False, None  # set by attach

    def attach(self, encoder, tokenizer, chunking) -> None:
        if self.pooling is None:
            own = getattr(encoder.config, "classifier_pooling", None)
            self.pooling = own if own in POOLINGS else "cls"
        self.global_attention = "global_attention_mask" in inspect.signature(encoder.forward).parameters
        self.attention_type = getattr(encoder.config, "attention_type", None) if hasattr(
            encoder, "set_attention_type") else None

    def encoder_inputs(self, encoder, batch) -> dict:
        if self.attention_type is not None:
            # BigBird switches itself to full attention for good on a batch too short for block-sparse
            # attention: back to the configured type, so no score depends on what was scored before
            encoder.set_attention_type(self.attention_type)
        if not self.global_attention:
            return {}
        globally = batch.query_mask.clone()
        globally[:, 0] = True  # [CLS] (<s>)
        return {"global_attention_mask": globally.long()}

    def chunk_features(self, output, batch):
        states = output.last_hidden_state
        if self.pooling == "cls":
            return states[:, 0]
        mask = batch.attention_mask.unsqueeze(-1).to(states.dtype)
        return (states * mask).sum(1) / mask.sum(1).clamp(min=1)


class LongP(LongDocReranker):
    """LongP: query and document in one sequence of a long encoder (Longformer, BigBird,
    ModernBERT, JinaBERT, ...), scored by a linear head on [CLS] or mean pooling.

    The input budget is the encoder's maximum (``max_length=None``: its position embeddings,
    e.g. 4096 tokens for Longformer and BigBird) and ``max_doc_tokens`` (4096); pass
    ``max_length`` to read less. Encoders with remote code (JinaBERT) need
    ``trust_remote_code=True``, which runs the model repository's own Python code.
    """

    name = "longp"
    aggregator = LongPAggregator
    defaults = {"window": None, "stride": None, "max_chunks": 1, "max_length": None, "max_doc_tokens": 4096,
                "pooling": None}

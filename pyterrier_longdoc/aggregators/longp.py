"""LongP: the whole document through one long encoder, no chunking.

Boytsov et al., "Understanding Performance of Long-Document Ranking Models through
Comprehensive Evaluation and Leaderboarding" (LongP over Longformer and BigBird); Beltagy et
al., "Longformer: The Long-Document Transformer" (2020); Zaheer et al., "Big Bird:
Transformers for Longer Sequences" (NeurIPS 2020).
"""
from __future__ import annotations

import inspect

from .heads import POOLINGS, Head
from .score import ScoreAggregator


class LongPAggregator(ScoreAggregator):
    """The chunk head on the [CLS] vector or on the mean of the token vectors of the one chunk.

    ``pooling=None`` takes the encoder's own ``classifier_pooling`` (ModernBERT) and else the
    head's (``"last"`` for a decoder-only LM's score layer, else ``"cls"``). Encoders that take a
    ``global_attention_mask`` (Longformer) get global attention on [CLS] and the query tokens, as in
    the Longformer paper's QA setup.

    BigBird's block-sparse attention makes the last block global, so a document's score
    depends slightly on how much padding its batch adds; use ``batch_size=1`` to rule that out.
    """

    def __init__(self, hidden_size: int, pooling: str | None = None, head: Head | None = None):
        super().__init__(hidden_size, reduce="first", head=head)
        if pooling is not None and pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS} or None, got {pooling!r}")
        self.pooling = pooling
        self.global_attention, self.attention_type = False, None  # set by attach

    def attach(self, encoder, tokenizer, chunking) -> None:
        if self.pooling is None:
            own = getattr(encoder.config, "classifier_pooling", None)
            self.pooling = own if own in POOLINGS else self.head.pooling
        self.head.pooling = self.pooling
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

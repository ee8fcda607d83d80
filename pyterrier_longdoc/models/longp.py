"""LongP: the whole document through one long encoder, no chunking (see aggregators/longp.py
for the papers)."""
from __future__ import annotations

from dataclasses import dataclass

from typing_extensions import Unpack

from .._reranker import LongDocReranker, Source
from ..engine.settings import ModelOptions, ModelSettings, one_of, setting
from ..aggregators.heads import POOLINGS
from ..aggregators.longp import LongPAggregator


@dataclass(frozen=True)
class LongPSettings(ModelSettings):
    """The whole document in one sequence, as long as the encoder reads."""

    max_chunks: int | None = setting(1, "one chunk: the whole (cropped) document")
    max_length: int | None = setting(None, "tokens per sequence (None: the encoder's position embeddings, 4096 "
                                           "for Longformer and BigBird)")
    max_doc_tokens: int = setting(4096, "document tokens read at most")
    pooling: str | None = setting(None, f"the vector the head scores: one of {POOLINGS}; None: the encoder's own "
                                        "classifier_pooling (ModernBERT), else the head's")

    def __post_init__(self):
        super().__post_init__()
        one_of(self, "pooling", (None, *POOLINGS))


class LongPOptions(ModelOptions, total=False):
    """LongP's keywords (``LongPSettings``)."""

    pooling: str | None


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
    Settings = LongPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[LongPOptions]):
        self._load(model_name_or_path, options)

"""Neural Model 1: Boytsov & Kolter, "Exploring Classic and Neural Lexical Translation Models
for Information Retrieval", ECIR 2021. Started from a trained cross-encoder, the encoder is the
cross-encoder's; the Model 1 head is new and needs ``fit``."""
from __future__ import annotations

from .._reranker import LongDocReranker
from ..aggregators.model1 import Model1Aggregator


class NeuralModel1(LongDocReranker):
    """Neural Model 1 over BERT token embeddings of disjoint chunks (Boytsov & Kolter, ECIR 2021)."""

    name = "neural_model1"
    aggregator = Model1Aggregator
    defaults = {"window": None, "stride": None, "max_doc_tokens": 1431}

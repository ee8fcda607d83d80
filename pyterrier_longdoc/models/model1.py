"""Neural Model 1: Boytsov & Kolter, "Exploring Classic and Neural Lexical Translation Models
for Information Retrieval", ECIR 2021. Started from a trained cross-encoder, the encoder is the
cross-encoder's; the Model 1 head is new and needs ``fit``."""
from __future__ import annotations

from dataclasses import dataclass

from typing_extensions import Unpack

from .._reranker import LongDocReranker, Source
from ..engine.settings import ModelOptions, ModelSettings
from ..aggregators.model1 import Model1Aggregator


@dataclass(frozen=True)
class NeuralModel1Settings(ModelSettings):
    """Neural Model 1 reads disjoint chunks that fill the encoder input, 1431 document tokens in all."""


class NeuralModel1Options(ModelOptions, total=False):
    """Neural Model 1's keywords (``NeuralModel1Settings``)."""


class NeuralModel1(LongDocReranker):
    """Neural Model 1 over BERT token embeddings of disjoint chunks (Boytsov & Kolter, ECIR 2021)."""

    name = "neural_model1"
    aggregator = Model1Aggregator
    Settings = NeuralModel1Settings

    def __init__(self, model_name_or_path: Source, **options: Unpack[NeuralModel1Options]):
        self._load(model_name_or_path, options)

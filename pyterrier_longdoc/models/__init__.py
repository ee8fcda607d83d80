"""The public model classes, one module per family: an aggregator head, defaults, and the paper; and the
registry's public view, with every family imported (each class registers the short name it declares)."""
from .._registry import model_class, registered_models
from .._reranker import LongDocReranker
from .biencoder import BiEncoderFirstP, BiEncoderLongP, BiEncoderMaxP
from .cedr import CedrDrmm, CedrKnrm, CedrPacrr
from .llm import LLMFirstP, LLMKMaxAvgP, LLMLongP, LLMMaxP, LLMSumP
from .longp import LongP
from .model1 import NeuralModel1
from .parade import (AvgP, ParadeAttn, ParadeAvg, ParadeCNN, ParadeMax, ParadeSum, ParadeTransformer,
                     ParadeTransformerPretrained, ParadeTransformerQ)
from .score import FirstP, KMaxAvgP, MaxP, SumP

__all__ = ["FirstP", "MaxP", "SumP", "KMaxAvgP", "AvgP", "ParadeAvg", "ParadeMax", "ParadeSum", "ParadeAttn",
           "ParadeCNN", "ParadeTransformer", "ParadeTransformerPretrained", "ParadeTransformerQ",
           "CedrKnrm", "CedrPacrr", "CedrDrmm", "NeuralModel1", "LongP",
           "LLMFirstP", "LLMMaxP", "LLMSumP", "LLMKMaxAvgP", "LLMLongP",
           "BiEncoderFirstP", "BiEncoderMaxP", "BiEncoderLongP", "LongDocReranker", "model_class",
           "registered_models"]

"""Long-document neural re-ranking for PyTerrier."""
from ._reranker import LongDocReranker, UntrainedHeadWarning, model_class, registered_models
from ._version import __version__
from .collection import Collection
from .datasets import LongDocCollection, load_collection
from .evaluation import multi_seed_experiment
from .listwise import RankGPT
from .models import (AvgP, BiEncoderFirstP, BiEncoderLongP, BiEncoderMaxP, CedrDrmm, CedrKnrm, CedrPacrr, FirstP,
                     KMaxAvgP, LLMFirstP, LLMKMaxAvgP, LLMLongP, LLMMaxP, LLMSumP, LongP, MaxP, NeuralModel1,
                     ParadeAttn, ParadeAvg, ParadeCNN, ParadeMax, ParadeSum, ParadeTransformer,
                     ParadeTransformerPretrained, ParadeTransformerQ, SumP)
from .text import TextLoader
from .wrap import LongDoc

__all__ = [
    "__version__", "LongDocReranker", "UntrainedHeadWarning", "model_class", "registered_models",
    "FirstP", "MaxP", "SumP", "KMaxAvgP", "AvgP",
    "ParadeAvg", "ParadeMax", "ParadeSum", "ParadeAttn", "ParadeCNN",
    "ParadeTransformer", "ParadeTransformerPretrained", "ParadeTransformerQ",
    "CedrKnrm", "CedrPacrr", "CedrDrmm", "NeuralModel1", "LongP", "LongDoc",
    "LLMFirstP", "LLMMaxP", "LLMSumP", "LLMKMaxAvgP", "LLMLongP",
    "BiEncoderFirstP", "BiEncoderMaxP", "BiEncoderLongP", "RankGPT",
    "multi_seed_experiment", "load_collection", "LongDocCollection", "Collection", "TextLoader",
]

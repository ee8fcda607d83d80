"""Long-document neural re-ranking for PyTerrier."""
__version__ = "0.1.0"

from ._reranker import LongDocReranker, model_class, registered_models
from .aggregators.cedr import CedrDrmm, CedrKnrm, CedrPacrr
from .aggregators.model1 import NeuralModel1
from .aggregators.parade import (AvgP, ParadeAttn, ParadeAvg, ParadeCNN, ParadeMax, ParadeSum, ParadeTransformer,
                                 ParadeTransformerPretrained, ParadeTransformerQ)
from .aggregators.score import FirstP, MaxP, SumP
from .datasets import LongDocCollection, load_collection
from .evaluation import multi_seed_experiment
from .longp import LongP
from .wrap import LongDoc

__all__ = [
    "LongDocReranker", "model_class", "registered_models",
    "FirstP", "MaxP", "SumP", "AvgP",
    "ParadeAvg", "ParadeMax", "ParadeSum", "ParadeAttn", "ParadeCNN",
    "ParadeTransformer", "ParadeTransformerPretrained", "ParadeTransformerQ",
    "CedrKnrm", "CedrPacrr", "CedrDrmm", "NeuralModel1", "LongP", "LongDoc",
    "multi_seed_experiment", "load_collection", "LongDocCollection",
]

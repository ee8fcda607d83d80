"""Long-document neural re-ranking for PyTerrier."""
__version__ = "0.1.0"

from ._reranker import LongDocReranker, model_class, registered_models
from .aggregators.parade import AvgP, ParadeAttn, ParadeAvg, ParadeMax, ParadeSum
from .aggregators.score import FirstP, MaxP, SumP

__all__ = [
    "LongDocReranker", "model_class", "registered_models",
    "FirstP", "MaxP", "SumP", "AvgP", "ParadeAvg", "ParadeMax", "ParadeSum", "ParadeAttn",
]

"""Long-document neural re-ranking for PyTerrier."""
from ._version import __version__

__all__ = [
    "__version__", "LongDocReranker", "UntrainedHeadWarning", "model_class", "registered_models",
    "FirstP", "MaxP", "SumP", "KMaxAvgP", "AvgP",
    "ParadeAvg", "ParadeMax", "ParadeSum", "ParadeAttn", "ParadeCNN",
    "ParadeTransformer", "ParadeTransformerPretrained", "ParadeTransformerQ",
    "CedrKnrm", "CedrPacrr", "CedrDrmm", "NeuralModel1", "LongP", "LongDoc",
    "multi_seed_experiment", "load_collection", "LongDocCollection", "Collection", "TextLoader",
]


def __getattr__(name: str):
    # the public names load on first use (see _public.py), so `pyterrier-longdoc --help` starts fast
    if name in __all__:
        from . import _public

        globals().update({n: getattr(_public, n) for n in __all__ if n != "__version__"})
        return globals()[name]
    raise AttributeError(f"module 'pyterrier_longdoc' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

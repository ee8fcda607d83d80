"""Long-document neural re-ranking for PyTerrier."""
from typing import TYPE_CHECKING

from . import _kernel_caches  # noqa: F401 (caps oneDNN's kernel caches before torch first runs oneDNN)
from ._version import __version__

if TYPE_CHECKING:  # what __getattr__ loads on first use, for type checkers and IDEs
    from ._public import (AvgP, BiEncoderFirstP, BiEncoderLongP, BiEncoderMaxP, CedrDrmm, CedrKnrm, CedrPacrr,
                          Collection, CroppingWarning, FirstP, KMaxAvgP, LLMFirstP, LLMKMaxAvgP, LLMLongP, LLMMaxP,
                          LLMSumP, LongDoc,
                          LongDocCollection, LongDocDeprecationWarning, LongDocReranker, LongDocWarning, LongP,
                          MaxP, NeuralModel1, ParadeAttn, ParadeAvg, ParadeCNN, ParadeMax, ParadeSum, ParadeTransformer,
                          ParadeTransformerPretrained,
                          ParadeTransformerQ, RankGPT, SumP, TextLoader, UntrainedHeadWarning, load_collection,
                          mean_interval, model_class, multi_seed_experiment, per_query_values, queries_needed,
                          query_controls, reads_the_query, registered_models, grid_scan)

__all__ = [
    "__version__", "LongDocReranker", "UntrainedHeadWarning", "LongDocWarning", "LongDocDeprecationWarning",
    "CroppingWarning", "model_class", "registered_models",
    "FirstP", "MaxP", "SumP", "KMaxAvgP", "AvgP",
    "ParadeAvg", "ParadeMax", "ParadeSum", "ParadeAttn", "ParadeCNN",
    "ParadeTransformer", "ParadeTransformerPretrained", "ParadeTransformerQ",
    "CedrKnrm", "CedrPacrr", "CedrDrmm", "NeuralModel1", "LongP", "LongDoc",
    "LLMFirstP", "LLMMaxP", "LLMSumP", "LLMKMaxAvgP", "LLMLongP",
    "BiEncoderFirstP", "BiEncoderMaxP", "BiEncoderLongP", "RankGPT",
    "multi_seed_experiment", "per_query_values", "mean_interval", "queries_needed", "query_controls", "reads_the_query",
    "grid_scan",
    "load_collection", "LongDocCollection", "Collection", "TextLoader",
]


def __getattr__(name: str):
    # the public names load on first use (see _public.py), so `pyterrier-longdoc --help` starts fast
    import importlib

    if name in __all__:
        public = importlib.import_module("._public", __name__)
        globals().update({n: getattr(public, n) for n in __all__ if n != "__version__"})
        return globals()[name]
    try:  # a submodule, as `pyterrier_longdoc.training` after `import pyterrier_longdoc`
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

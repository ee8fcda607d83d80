"""Long-document neural re-ranking for PyTerrier."""
from typing import TYPE_CHECKING

from . import engine  # noqa: F401 (caps oneDNN's kernel caches before torch first runs oneDNN)
from ._version import __version__

if TYPE_CHECKING:  # what __getattr__ loads on first use, for type checkers and IDEs
    from ._reranker import LongDocReranker, UntrainedHeadWarning, model_class, registered_models
    from ._warn import CroppingWarning, LongDocDeprecationWarning, LongDocWarning
    from .data.collection import Collection
    from .data.datasets import LongDocCollection, load_collection
    from .data.documents import TextLoader
    from .evaluation import (mean_interval, multi_seed_experiment, per_query_values, queries_needed, grid_scan,
                             query_controls, reads_the_query)
    from .fusion import FirstStageFusion, Fusion
    from .listwise import RankGPT
    from .models import (AvgP, BiEncoderFirstP, BiEncoderLongP, BiEncoderMaxP, CedrDrmm, CedrKnrm, CedrPacrr, FirstP,
                         KMaxAvgP, LLMFirstP, LLMKMaxAvgP, LLMLongP, LLMMaxP, LLMSumP, LongP, MaxP, NeuralModel1,
                         ParadeAttn, ParadeAvg, ParadeCNN, ParadeMax, ParadeSum, ParadeTransformer,
                         ParadeTransformerPretrained, ParadeTransformerQ, SumP)
    from .wrap import LongDoc

# each public name's module, imported on first use: they load torch, transformers and PyTerrier, which the
# command line's --help and --version do not need
_HOMES = {
    "LongDocReranker": "._reranker",
    "UntrainedHeadWarning": "._reranker",
    "model_class": "._reranker",
    "registered_models": "._reranker",
    "CroppingWarning": "._warn",
    "LongDocDeprecationWarning": "._warn",
    "LongDocWarning": "._warn",
    "Collection": ".data.collection",
    "LongDocCollection": ".data.datasets",
    "load_collection": ".data.datasets",
    "TextLoader": ".data.documents",
    "mean_interval": ".evaluation",
    "multi_seed_experiment": ".evaluation",
    "per_query_values": ".evaluation",
    "queries_needed": ".evaluation",
    "grid_scan": ".evaluation",
    "query_controls": ".evaluation",
    "reads_the_query": ".evaluation",
    "FirstStageFusion": ".fusion",
    "Fusion": ".fusion",
    "RankGPT": ".listwise",
    "AvgP": ".models",
    "BiEncoderFirstP": ".models",
    "BiEncoderLongP": ".models",
    "BiEncoderMaxP": ".models",
    "CedrDrmm": ".models",
    "CedrKnrm": ".models",
    "CedrPacrr": ".models",
    "FirstP": ".models",
    "KMaxAvgP": ".models",
    "LLMFirstP": ".models",
    "LLMKMaxAvgP": ".models",
    "LLMLongP": ".models",
    "LLMMaxP": ".models",
    "LLMSumP": ".models",
    "LongP": ".models",
    "MaxP": ".models",
    "NeuralModel1": ".models",
    "ParadeAttn": ".models",
    "ParadeAvg": ".models",
    "ParadeCNN": ".models",
    "ParadeMax": ".models",
    "ParadeSum": ".models",
    "ParadeTransformer": ".models",
    "ParadeTransformerPretrained": ".models",
    "ParadeTransformerQ": ".models",
    "SumP": ".models",
    "LongDoc": ".wrap",
}
__all__ = ["__version__", *_HOMES]


def __getattr__(name: str):
    import importlib

    if name in _HOMES:
        globals()[name] = value = getattr(importlib.import_module(_HOMES[name], __name__), name)
        return value
    try:  # a submodule, as `pyterrier_longdoc.training` after `import pyterrier_longdoc`
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))

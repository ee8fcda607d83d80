"""The model registry: a declared table of each model class's short name (``"parade_attn"``) and
where the class is defined, resolved on first use.

Below the reranker, so that training, building and the command line find a model class by name
without importing it: a name's module is imported when the name is first asked for (as an entry
point is), and nothing depends on having imported ``models`` first. A new model class adds its row
here; a class outside the package that names itself (``name = "mine"``) is registered when it is
defined.
"""
from __future__ import annotations

import importlib

# short name -> "module:Class", in the order `pyterrier-longdoc models` lists them
MODELS: dict[str, str] = {
    "avgp": "pyterrier_longdoc.models.parade:AvgP",
    "biencoder_firstp": "pyterrier_longdoc.models.biencoder:BiEncoderFirstP",
    "biencoder_longp": "pyterrier_longdoc.models.biencoder:BiEncoderLongP",
    "biencoder_maxp": "pyterrier_longdoc.models.biencoder:BiEncoderMaxP",
    "cedr_drmm": "pyterrier_longdoc.models.cedr:CedrDrmm",
    "cedr_knrm": "pyterrier_longdoc.models.cedr:CedrKnrm",
    "cedr_pacrr": "pyterrier_longdoc.models.cedr:CedrPacrr",
    "firstp": "pyterrier_longdoc.models.score:FirstP",
    "kmax_avgp": "pyterrier_longdoc.models.score:KMaxAvgP",
    "llm_firstp": "pyterrier_longdoc.models.llm:LLMFirstP",
    "llm_kmax_avgp": "pyterrier_longdoc.models.llm:LLMKMaxAvgP",
    "llm_longp": "pyterrier_longdoc.models.llm:LLMLongP",
    "llm_maxp": "pyterrier_longdoc.models.llm:LLMMaxP",
    "llm_sump": "pyterrier_longdoc.models.llm:LLMSumP",
    "longp": "pyterrier_longdoc.models.longp:LongP",
    "maxp": "pyterrier_longdoc.models.score:MaxP",
    "neural_model1": "pyterrier_longdoc.models.model1:NeuralModel1",
    "parade_attn": "pyterrier_longdoc.models.parade:ParadeAttn",
    "parade_avg": "pyterrier_longdoc.models.parade:ParadeAvg",
    "parade_cnn": "pyterrier_longdoc.models.parade:ParadeCNN",
    "parade_max": "pyterrier_longdoc.models.parade:ParadeMax",
    "parade_sum": "pyterrier_longdoc.models.parade:ParadeSum",
    "parade_transformer": "pyterrier_longdoc.models.parade:ParadeTransformer",
    "parade_transformer_pretr": "pyterrier_longdoc.models.parade:ParadeTransformerPretrained",
    "parade_transformer_q": "pyterrier_longdoc.models.parade:ParadeTransformerQ",
    "sump": "pyterrier_longdoc.models.score:SumP",
}
_PACKAGE = __name__.rpartition(".")[0]
_DEFINED_ELSEWHERE: dict[str, type] = {}  # model classes of other packages, by the name they give themselves


def register(cls: type) -> None:
    """Called when a model class is defined: the package's own must be the table's row of their
    name; another package's class is registered under its name. A name taken by another class is
    an error."""
    name = cls.__dict__.get("name")
    if not name:
        return
    where = f"{cls.__module__}:{cls.__qualname__}"
    if cls.__module__.partition(".")[0] == _PACKAGE:
        if MODELS.get(name) != where:
            raise ValueError(f"model name {name!r} of {where} is not declared as such in {__name__}.MODELS "
                             f"(it says {MODELS.get(name)!r}): add its row there")
        return
    taken = MODELS.get(name) or _DEFINED_ELSEWHERE.get(name)
    if taken is not None and taken is not cls:
        raise ValueError(f"model name {name!r} is taken by {getattr(taken, '__qualname__', taken)}")
    _DEFINED_ELSEWHERE[name] = cls


def model_class(name: str) -> type:
    """The model class registered under a short name such as ``"parade_attn"`` (its module is
    imported now if it was not)."""
    if name in _DEFINED_ELSEWHERE:
        return _DEFINED_ELSEWHERE[name]
    try:
        module, _, qualname = MODELS[name].partition(":")
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {known_names()}") from None
    return getattr(importlib.import_module(module), qualname)


def registered_models() -> dict[str, type]:
    """Every model class by its short name, sorted by name (this imports every model family)."""
    return {name: model_class(name) for name in sorted({*MODELS, *_DEFINED_ELSEWHERE})}


def known_names() -> str:
    """The short names, for error messages (imports nothing)."""
    return ", ".join(sorted({*MODELS, *_DEFINED_ELSEWHERE}))

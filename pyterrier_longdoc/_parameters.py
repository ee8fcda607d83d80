"""PyTerrier's ``get_parameter``/``set_parameter`` on a model: its settings and the runtime options,
so that ``pt.GridSearch`` and ``pt.GridScan`` can tune ``window``, ``stride``, ``max_doc_tokens``,
``k``, ``dtype`` and the rest without rebuilding the model."""
from __future__ import annotations

import dataclasses
import difflib

from ._build import resolved_chunking
from .engine.chunking import CHUNKING_SETTINGS
from .engine.runtime import OPTIONS as RUNTIME_OPTIONS


# The model's settings (its class's ``Settings``, saved with the model) and runtime options, by name, as
# plain functions of a ``LongDocReranker`` (which binds the public ones as its methods).
#
# A change goes through the model's ``Settings`` at once, and the engine reads documents with the
# chunking the new settings make (``ModelSettings.chunking``). ``pt.GridSearch`` sets one parameter at a
# time, so ``window=20`` may come before the ``stride=10`` that goes with it: such a value waits for its
# partner in the reranker's ``_pending_settings`` and is checked with it when the model next reads a document.


def tunable_parameters(reranker) -> tuple[str, ...]:
    """The names ``set_parameter`` takes (``get_parameter`` also reads the other settings)."""
    names = [f.name for f in dataclasses.fields(reranker.Settings)]
    return tuple(name for name in names if _why_fixed(reranker, name) is None) + RUNTIME_OPTIONS


def get_parameter(reranker, name: str):
    """A setting of the model's ``Settings`` (``window``, ``stride``, ``k``, ...) or a runtime
    option (``batch_size``, ``dtype``, ``device``, ... every field of ``Runtime``), as it was set."""
    if name in RUNTIME_OPTIONS:
        return getattr(reranker.runtime, name)
    if name in {f.name for f in dataclasses.fields(reranker.Settings)}:
        return reranker._pending_settings.get(name, getattr(reranker.typed_settings, name))
    raise _unknown_parameter(reranker, name)


def set_parameter(reranker, name: str, value) -> None:
    """Change one parameter in place (as ``pt.GridSearch`` does); a setting is saved with the model
    by ``save_pretrained`` and shown by ``repr`` at once. The value goes through the checks of the
    model's ``Settings`` (``MaxPSettings``, ...); one that changes what the weights are (``layers``,
    ``lora``, CEDR's ``max_query_tokens``) is refused, saying what to do instead. A chunking value
    that only a setting still to come makes valid (``window=20`` before ``stride=10``) waits for it,
    checked on its own now and with the others when the model next reads a document: a frame then
    gets a warning naming the combination and a run that scores no document, so that a grid search
    finishes with a valid setting (the guide's "Tuning with pt.GridSearch"); ``predict``, ``fit``
    and ``save_pretrained`` raise the error."""
    if name in RUNTIME_OPTIONS:
        setattr(reranker, name, value)  # as model.<name> = value: checked by the runtime, as the constructor checks it
        return
    get_parameter(reranker, name)  # the error naming the parameters
    why = _why_fixed(reranker, name)
    if why is not None:
        raise ValueError(why)
    # the value on its own, through the class's own checks (window and stride are checked as a pair later)
    type(reranker).Settings(**{"window": None, "stride": None, name: value})
    if name not in CHUNKING_SETTINGS:  # a head setting the aggregator reads at each call (k)
        reranker._replace_settings(**{name: value})
        setattr(reranker.model.aggregator, name, value)
        return
    waiting = reranker._pending_settings
    waiting[name] = value
    try:
        _read_with_settings(reranker, waiting)
    except ValueError:
        return  # a combination that the next set_parameter may complete
    waiting.clear()


def _why_fixed(reranker, name: str) -> str | None:
    """Why ``set_parameter`` cannot change setting ``name`` in place, or None where it can."""
    model = type(reranker).__name__
    current = getattr(reranker.typed_settings, name)
    instead = (f"build one model per value instead, {model}(source, {name}=...), and train each if its weights "
               f"were trained")
    if name == "max_query_tokens" and hasattr(reranker.model.aggregator, "query_length"):
        return (f"{model}'s head was built for max_query_tokens={reranker.model.chunking.max_query_tokens}: its "
                f"weights depend on it, so it cannot change; {instead}")
    if name in CHUNKING_SETTINGS or name in type(reranker.model.aggregator).tunable:
        return None
    field = next(f for f in dataclasses.fields(reranker.Settings) if f.name == name)
    if field.metadata.get("derived"):
        return f"{model}'s {name} is derived while the model is built, not set"
    if name in reranker.backbone_settings:
        return (f"{model}'s {name}={current!r} changed the encoder when the model was built, so it cannot "
                f"change in place; {instead}")
    return (f"{model}'s {name}={current!r} shapes its head's weights (built, and maybe trained, for that "
            f"value), so it cannot change in place; {instead}")


def _unknown_parameter(reranker, name: str) -> ValueError:
    names = tunable_parameters(reranker)
    close = difflib.get_close_matches(name, names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return ValueError(f"{type(reranker).__name__} has no parameter {name!r}{hint}; its Settings are "
                      f"{type(reranker).Settings.__name__}'s; parameters: {', '.join(names)}")


def _read_with_settings(reranker, changes: dict) -> None:
    """New settings through the class's checks, and the engine reading with their chunking (the
    encoder resolving what is None); nothing changes if either fails."""
    settings = reranker.typed_settings.replace(**changes)
    model = reranker.model
    model.read_with(resolved_chunking(settings, model.encoder, model.tokenizer, model))
    reranker._replace_settings(**changes)


def parameter_problem(reranker) -> str | None:
    """Why the chunking values ``set_parameter`` took do not work together, or None (they are
    applied when they do)."""
    try:
        settle_parameters(reranker)
    except ValueError as error:
        return str(error)
    return None


def settle_parameters(reranker) -> None:
    """Applies the chunking values ``set_parameter`` took that waited for a partner; an error names
    a combination that does not work."""
    waiting = reranker._pending_settings
    if not waiting:
        return
    try:
        _read_with_settings(reranker, waiting)
    except ValueError as error:
        raise ValueError(f"{type(reranker).__name__}: the settings given to set_parameter "
                         f"({', '.join(f'{k}={v!r}' for k, v in waiting.items())}) do not work together: "
                         f"{error}") from None
    waiting.clear()

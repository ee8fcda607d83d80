"""PyTerrier's ``get_parameter``/``set_parameter`` on a model's settings: ``ModelParameters``, the reranker's
collaborator that owns its settings, so that ``pt.GridSearch`` and ``pt.GridScan`` can tune ``window``,
``stride``, ``max_doc_tokens``, ``k`` and the rest without rebuilding the model.

A change goes through the model's ``Settings`` at once, and the engine reads documents with the chunking
the new settings make (``ModelSettings.chunking``). ``pt.GridSearch`` sets one parameter at a time, so
``window=20`` may come before the ``stride=10`` that goes with it: such a value waits for its partner
(``pending``) and is checked with it when the model next reads a document.
"""
from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable
from typing import Any

from ._build import resolved_chunking
from .engine.chunking import CHUNKING_SETTINGS
from .engine.config import ModelConfig
from .engine.model import LongDocModel
from .engine.runtime import OPTIONS as RUNTIME_OPTIONS
from .engine.settings import ModelSettings


class ModelParameters:
    """A model's settings (an instance of its class's frozen ``Settings``, saved in ``config.json``) as
    PyTerrier parameters: read, changed through the class's checks, shown by ``repr``.

    ``owner``: the model class's name, for messages; ``given``: the settings given by hand (the
    constructor's keywords), which ``repr`` shows even where they equal the class default, since the
    model's source (a saved folder) may say otherwise."""

    def __init__(self, owner: str, settings: ModelSettings, model: LongDocModel, config: ModelConfig,
                 backbone_settings: tuple[str, ...], given: Iterable[str] = ()):
        self.owner, self.model, self.config, self.backbone_settings = owner, model, config, backbone_settings
        self.settings = settings
        self.pending: dict[str, Any] = {}  # chunking values waiting for a partner (window=20 before stride=10)
        self.given = set(given) & set(self.names())
        config.settings = settings.to_dict()

    def names(self) -> tuple[str, ...]:
        """Every setting's name (the fields of the class's ``Settings``)."""
        return tuple(f.name for f in dataclasses.fields(self.settings))

    def tunable(self) -> tuple[str, ...]:
        """The names ``set_parameter`` takes (``get_parameter`` also reads the other settings)."""
        return tuple(name for name in self.names() if self._why_fixed(name) is None) + RUNTIME_OPTIONS

    def get(self, name: str) -> Any:
        """A setting as it was set (a value waiting for its partner included)."""
        if name not in self.names():
            raise self.unknown(name)
        return self.pending.get(name, getattr(self.settings, name))

    def set(self, name: str, value: Any) -> None:
        """Change one setting in place, through the checks of the class's ``Settings``; one that changes
        what the weights are is refused, saying what to do instead; a chunking value that only a setting
        still to come makes valid waits for it (``pending``)."""
        self.get(name)  # the error naming the parameters
        why = self._why_fixed(name)
        if why is not None:
            raise ValueError(why)
        # the value on its own, through the class's own checks (window and stride are checked as a pair later)
        type(self.settings)(**{"window": None, "stride": None, name: value})
        self.given.add(name)
        if name not in CHUNKING_SETTINGS:  # a head setting the aggregator reads at each call (k)
            self.replace(**{name: value})
            setattr(self.model.aggregator, name, value)
            return
        self.pending[name] = value
        try:
            self._read_with(self.pending)
        except ValueError:
            return  # a combination that the next set may complete
        self.pending.clear()

    def replace(self, **changes: Any) -> None:
        """New settings through ``Settings``' checks; ``config.json`` and ``repr`` follow."""
        self.settings = self.settings.replace(**changes)
        self.config.settings = self.settings.to_dict()

    def problem(self) -> str | None:
        """Why the chunking values that wait for a partner do not work together, or None (they are
        applied when they do)."""
        try:
            self.settle()
        except ValueError as error:
            return str(error)
        return None

    def settle(self) -> None:
        """Applies the chunking values that waited for a partner; an error names a combination that does
        not work."""
        if not self.pending:
            return
        try:
            self._read_with(self.pending)
        except ValueError as error:
            raise ValueError(f"{self.owner}: the settings given to set_parameter "
                             f"({', '.join(f'{k}={v!r}' for k, v in self.pending.items())}) do not work together: "
                             f"{error}") from None
        self.pending.clear()

    def shown(self) -> dict[str, Any]:
        """The settings ``repr`` shows, as they are now: those that differ from the class defaults, and
        those given by hand (a saved folder's window 240 set back to 150 is ``window=150``, not nothing)."""
        defaults = type(self.settings)()
        current = {**self.settings.to_dict(), **self.pending}
        return {f.name: current[f.name] for f in dataclasses.fields(self.settings) if not f.metadata.get("derived")
                and (f.name in self.given or current[f.name] != getattr(defaults, f.name))}

    def unknown(self, name: str) -> AttributeError:
        """The error for a name that is not a parameter: the close one, and every one."""
        names = self.tunable()
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return UnknownParameterError(f"{self.owner} has no parameter {name!r}{hint}; its Settings are "
                                     f"{type(self.settings).__name__}'s; parameters: {', '.join(names)}")

    def _why_fixed(self, name: str) -> str | None:
        """Why setting ``name`` cannot change in place, or None where it can."""
        current = getattr(self.settings, name)
        instead = (f"build one model per value instead, {self.owner}(source, {name}=...), and train each if its "
                   f"weights were trained")
        aggregator = self.model.aggregator
        if name == "max_query_tokens" and hasattr(aggregator, "query_length"):
            return (f"{self.owner}'s head was built for max_query_tokens={self.model.chunking.max_query_tokens}: "
                    f"its weights depend on it, so it cannot change; {instead}")
        if name in CHUNKING_SETTINGS or name in type(aggregator).tunable:
            return None
        field = next(f for f in dataclasses.fields(self.settings) if f.name == name)
        if field.metadata.get("derived"):
            return f"{self.owner}'s {name} is derived while the model is built, not set"
        if name in self.backbone_settings:
            return (f"{self.owner}'s {name}={current!r} changed the encoder when the model was built, so it cannot "
                    f"change in place; {instead}")
        return (f"{self.owner}'s {name}={current!r} shapes its head's weights (built, and maybe trained, for that "
                f"value), so it cannot change in place; {instead}")

    def _read_with(self, changes: dict) -> None:
        """New settings through the class's checks, and the engine reading with their chunking (the
        encoder resolving what is None); nothing changes if either fails."""
        settings = self.settings.replace(**changes)
        model = self.model
        model.read_with(resolved_chunking(settings, model.encoder, model.tokenizer, model))
        self.replace(**changes)


class UnknownParameterError(ValueError, AttributeError):
    """A name that is not one of the model's parameters: a ValueError for ``get_parameter`` and
    ``set_parameter`` (as before), an AttributeError for ``model.windw = 3`` (as Python's own)."""

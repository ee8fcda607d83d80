"""PyTerrier's ``get_parameter``/``set_parameter`` on a model: the chunking settings and the
runtime options, so that ``pt.GridSearch`` and ``pt.GridScan`` can tune ``window``, ``stride``,
``max_doc_tokens`` and the rest without rebuilding the model."""
from __future__ import annotations

import dataclasses

from ._registry import CHUNKING_SETTINGS
from ._runtime import OPTIONS as RUNTIME_OPTIONS
from ._settings import ModelSettings


class Parameters:
    """Chunking settings (saved with the model) and runtime options, by name.

    A change goes through the model's ``Settings`` at once; ``pt.GridSearch`` sets one parameter at a
    time, so ``window=20`` may come before the ``stride=10`` that goes with it: such a value waits
    for its partner and is checked with it when the model next reads a document.
    """

    def tunable_parameters(self) -> tuple[str, ...]:
        """The names ``get_parameter`` and ``set_parameter`` take."""
        return CHUNKING_SETTINGS + RUNTIME_OPTIONS

    def _unsettled(self) -> dict:
        return self.__dict__.setdefault("_unsettled_chunking", {})

    def get_parameter(self, name: str):
        """A chunking setting (``window``, ``stride``, ``max_doc_tokens``, ...) or a runtime
        option (``batch_size``, ``dtype``, ``device``, ... every field of ``Runtime``), as it was set."""
        if name in CHUNKING_SETTINGS:
            return self._unsettled().get(name, getattr(self.typed_settings, name))
        if name in RUNTIME_OPTIONS:
            return getattr(self.runtime, name)
        raise ValueError(f"{type(self).__name__} has no parameter {name!r}; parameters: "
                         f"{', '.join(self.tunable_parameters())}")

    def set_parameter(self, name: str, value) -> None:
        """Change one parameter in place (as ``pt.GridSearch`` does); a chunking setting is saved
        with the model by ``save_pretrained`` and shown by ``repr`` at once. The new settings go
        through the checks of the model's ``Settings``; a value that only a setting still to come
        makes valid (``window=20`` before ``stride=10``) waits for it, checked on its own now and
        with the others when the model next reads a document: a frame then gets a warning naming
        the combination and a run that scores no document, so that a grid search finishes with a
        valid setting (the guide's "Tuning with pt.GridSearch"); ``predict``, ``fit`` and
        ``save_pretrained`` raise the error."""
        if name in RUNTIME_OPTIONS:
            setattr(self, name, value)  # as model.<name> = value: checked by the runtime, as the constructor checks it
            return
        if name not in CHUNKING_SETTINGS:
            self.get_parameter(name)  # the error naming the parameters
        if name == "max_query_tokens" and hasattr(self.model.aggregator, "query_length"):
            raise ValueError(f"{type(self).__name__}'s head was built for max_query_tokens="
                             f"{self.model.chunking.max_query_tokens}: its weights depend on it, so it cannot change")
        ModelSettings(**{name: value})  # the value on its own
        waiting = self._unsettled()
        waiting[name] = value
        try:
            self._replace_settings(**waiting)
        except ValueError:
            return  # a combination that the next set_parameter may complete
        waiting.clear()
        self._settings_changed = True

    def parameter_problem(self) -> str | None:
        """Why the chunking settings ``set_parameter`` changed do not work together, or None
        (they are applied when they do)."""
        try:
            self.settle_parameters()
        except ValueError as error:
            return str(error)
        return None

    def settle_parameters(self) -> None:
        """Applies the chunking settings ``set_parameter`` changed; an error names a combination
        that does not work."""
        changed = self._unsettled()
        if not changed and not self.__dict__.get("_settings_changed"):
            return
        try:
            if changed:
                self._replace_settings(**changed)
            current = self.typed_settings
            chunking = dataclasses.replace(self.model.chunking, **{
                k: getattr(current, k) for k in CHUNKING_SETTINGS
                if getattr(current, k) is not None or k not in ("max_length", "max_query_tokens")})
            chunking.doc_window(self.model.layout)  # the chunks must fit the encoder
        except ValueError as error:
            raise ValueError(f"{type(self).__name__}: the settings given to set_parameter "
                             f"({', '.join(f'{k}={v!r}' for k, v in changed.items())}) do not work together: "
                             f"{error}") from None
        self.model.chunking = chunking
        changed.clear()
        self._settings_changed = False

"""PyTerrier's ``get_parameter``/``set_parameter`` on a model: the chunking settings and the
runtime options, so that ``pt.GridSearch`` and ``pt.GridScan`` can tune ``window``, ``stride``,
``max_doc_tokens`` and the rest without rebuilding the model."""
from __future__ import annotations

import dataclasses

from ._chunking import Chunking

CHUNKING_SETTINGS = tuple(f.name for f in dataclasses.fields(Chunking))
RUNTIME_OPTIONS = ("batch_size", "text_field", "verbose", "warn_cropping")


class Parameters:
    """Chunking settings (saved with the model) and runtime options, by name."""

    def tunable_parameters(self) -> tuple[str, ...]:
        """The names ``get_parameter`` and ``set_parameter`` take."""
        return CHUNKING_SETTINGS + RUNTIME_OPTIONS

    def get_parameter(self, name: str):
        """A chunking setting (``window``, ``stride``, ``max_doc_tokens``, ...) or a runtime
        option (``batch_size``, ``text_field``, ``verbose``, ``warn_cropping``)."""
        if name in CHUNKING_SETTINGS:
            return getattr(self.model.chunking, name)
        if name in RUNTIME_OPTIONS:
            return getattr(self.runtime, name)
        raise ValueError(f"{type(self).__name__} has no parameter {name!r}; parameters: "
                         f"{', '.join(self.tunable_parameters())}")

    def set_parameter(self, name: str, value) -> None:
        """Change one parameter in place (as ``pt.GridSearch`` does); a chunking setting is
        checked as the constructor checks it, and saved with the model by ``save_pretrained``."""
        if name in RUNTIME_OPTIONS:
            dataclasses.replace(self.runtime, **{name: value})  # checked as the constructor checks it
            setattr(self.runtime, name, value)
            return
        if name not in CHUNKING_SETTINGS:
            self.get_parameter(name)  # the error naming the parameters
        if name == "max_query_tokens" and hasattr(self.model.aggregator, "query_length"):
            raise ValueError(f"{type(self).__name__}'s head was built for max_query_tokens="
                             f"{self.model.chunking.max_query_tokens}: its weights depend on it, so it cannot change")
        chunking = dataclasses.replace(self.model.chunking, **{name: value})
        chunking.doc_window(self.model.layout)  # fails if the chunks cannot fit the encoder
        self.model.chunking = chunking
        self.config.settings[name] = value

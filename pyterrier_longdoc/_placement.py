"""The reranker's runtime options, read live: device, precision and engine options come from
``model.runtime`` at every use, never copied, and the weights follow them at the next call."""
from __future__ import annotations

import dataclasses

import torch

from ._backbone import set_attention
from ._runtime import Runtime, hold_parameters

_RUNTIME_FIELDS = frozenset(f.name for f in dataclasses.fields(Runtime))


class RuntimeOptions:
    """A mixin of ``LongDocReranker``: ``runtime`` (a ``Runtime``), ``model`` (the engine),
    ``_replicas`` and ``_placed`` are the reranker's."""

    def place(self, device: str | torch.device | list) -> None:
        """Moves the model to ``device``, or shares inference batches among a list of devices (as
        the ``device`` argument of the constructor, and of ``predict``)."""
        Runtime(device=device).available_devices()  # checked before anything changes
        self.runtime.device = device
        self.place_weights()

    def __setattr__(self, name: str, value) -> None:
        # a runtime option without its property here (dtype, device, ...) would be an attribute nothing reads
        own = getattr(type(self), name, None)
        if name in _RUNTIME_FIELDS and not (isinstance(own, property) and own.fset is not None):
            raise AttributeError(f"{type(self).__name__} reads {name!r} from its runtime at every use: set "
                                 f"model.runtime.{name} = {value!r}")
        super().__setattr__(name, value)

    # read from the runtime at every use, never copied: model.runtime.dtype = "bf16" changes the next call
    devices = property(lambda self: self.runtime.available_devices(),
                       doc="the devices the model runs on (runtime.device)")
    device = property(lambda self: self.runtime.available_devices()[0],
                      doc="the first device: training's and the weights'")
    int8 = property(lambda self: self.runtime.int8, doc="whether inference quantizes the encoder to int8")
    autocast_dtype = property(lambda self: self.runtime.autocast_dtype(), doc="the autocast dtype (None: fp32)")

    # half-precision weights keep the embeddings and LayerNorms in fp32 (``hold_parameters``); the LLM
    # models turn it off: one large embedding table, nothing summed, RMSNorm computing in fp32 itself
    fp32_embeddings = True

    def place_weights(self) -> None:
        """The engine on the runtime's first device, its weights in the runtime's dtype: called before
        every use, so a change of ``runtime.device`` or ``runtime.dtype`` takes effect at the next call."""
        device = self.device
        placed = (device, self.runtime.weights_dtype(device))
        if self._placed != placed:
            self.model.to(device)
            hold_parameters(self.model, placed[1], fp32_embeddings=self.fp32_embeddings)
            self._replicas.clear()
            self._placed = placed

    # the runtime options, also as attributes of the model
    batch_size = property(lambda self: self.runtime.batch_size, lambda self, v: setattr(self.runtime, "batch_size", v))
    text_field = property(lambda self: self.runtime.text_field, lambda self, v: setattr(self.runtime, "text_field", v))
    verbose = property(lambda self: self.runtime.verbose, lambda self, v: setattr(self.runtime, "verbose", v))
    warn_cropping = property(lambda self: self.runtime.warn_cropping,
                             lambda self, v: setattr(self.runtime, "warn_cropping", v))
    max_batch_tokens = property(lambda self: self.runtime.max_batch_tokens,
                                lambda self, v: setattr(self.runtime, "max_batch_tokens", v))

    @property
    def attn_implementation(self) -> str:
        """transformers' attention kernel of the encoder (set it to change it: ``"eager"``, ``"sdpa"``,
        ``"flash_attention_2"``, ...)."""
        return self.model.encoder.config._attn_implementation

    @attn_implementation.setter
    def attn_implementation(self, value: str) -> None:
        self.runtime.attn_implementation = value
        set_attention(self.model.encoder, value)
        self._replicas.clear()

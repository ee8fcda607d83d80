"""The reranker's runtime options, read live: device, precision and engine options come from
``model.runtime`` at every use, never copied, and the weights follow them.

One rule for every option: ``model.<option> = value`` and ``model.runtime.<option> = value`` are the
same assignment (the runtime checks the value when it is set, and an error names the option), so
``model.dtype = "bf16"`` works as ``model.batch_size = 4`` does; ``set_parameter`` takes them too."""
from __future__ import annotations

import torch

from .engine.backbone import set_attention
from .engine.runtime import hold_parameters


def _option(name: str, doc: str) -> property:
    """A runtime option as an attribute of the model: read from and set on ``model.runtime``."""
    return property(lambda self: getattr(self.runtime, name),
                    lambda self, value: setattr(self.runtime, name, value), doc=doc)


class RuntimeOptions:
    """A mixin of ``LongDocReranker``: ``runtime`` (a ``Runtime``), ``model`` (the engine),
    ``_replicas`` and ``_placed`` are the reranker's."""

    def place(self, device: str | torch.device | list) -> None:
        """Moves the model to ``device``, or shares inference batches among a list of devices (as
        the ``device`` argument of the constructor, and of ``predict``)."""
        self._placed_with(device=device)

    def _placed_with(self, **options) -> None:
        """Sets runtime ``options`` (each checked by the runtime) and places the weights at once; a
        combination that cannot run (``dtype="int8"`` on a GPU) is an error and changes nothing."""
        previous = {name: getattr(self.runtime, name) for name in options}
        for name, value in options.items():
            setattr(self.runtime, name, value)
        try:
            self.place_weights()
        except ValueError:
            for name, value in previous.items():
                setattr(self.runtime, name, value)
            raise

    # read from the runtime at every use, never copied
    devices = property(lambda self: self.runtime.available_devices(),
                       doc="the devices the model runs on (runtime.device)")
    device = property(lambda self: self.runtime.available_devices()[0], lambda self, value: self.place(value),
                      doc="the first device: training's and the weights'. Set it (a device, or a list that shares "
                          "inference batches) to move the model there: a device this machine lacks is an error at once")
    dtype = property(lambda self: self.runtime.dtype, lambda self, value: self._placed_with(dtype=value),
                     doc="the precision: None, 'auto', 'bf16', 'fp16', 'fp32', 'int8' or a torch.dtype (see Runtime); "
                         "set it to change the next call's")
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

    batch_size = _option("batch_size", "(query, chunk) sequences per encoder call")
    text_field = _option("text_field", "the input column holding the document text")
    verbose = _option("verbose", "a progress bar, counted in documents")
    warn_cropping = _option("warn_cropping", "a CroppingWarning when documents are longer than the model reads")
    max_batch_tokens = _option("max_batch_tokens", "a cap on a batch's padded tokens (None: no cap)")
    batching = _option("batching", "the batch policy: 'length_sorted' or 'input_order'")
    partial_last_layer = _option("partial_last_layer", "the last layer computed where the head reads it only")
    onednn_linears = _option("onednn_linears", "oneDNN's linear kernels (None: where they beat MKL's on this CPU)")

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

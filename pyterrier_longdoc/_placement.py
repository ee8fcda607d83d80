"""Where a reranker's engine runs: its runtime options read live, and its weights placed by them.

Device, precision and engine options come from ``model.runtime`` at every use, never copied, and the
weights follow them. One rule for every option: ``model.<option> = value`` and
``model.runtime.<option> = value`` are the same assignment (the runtime checks the value when it is set,
and an error names the option), so ``model.dtype = "bf16"`` works as ``model.batch_size = 4`` does;
``set_parameter`` takes them too. ``Placement`` is the reranker's collaborator that holds where the
weights are and the inference copies made from them.
"""
from __future__ import annotations

from typing import Any


from .engine.backbone import set_attention
from .engine.model import LongDocModel
from .engine.replicas import Replicas
from .engine.runtime import Runtime, hold_parameters


# what each runtime option means, written once: the reranker's attribute and its constructor's Args say it
RUNTIME_OPTION_DOCS = {
    "batch_size": "(query, chunk) sequences per encoder call.",
    "text_field": "the column with the document text.",
    "device": '``"cuda"`` if available, else ``"mps"`` if available, else ``"cpu"``. A list of devices shares '
              "inference batches among copies of the model, one per device (training uses the first; train on "
              "several devices with ``torchrun``, see ``fit``). A device this machine lacks is an error at once.",
    "dtype": 'autocast dtype, ``"bf16"``, ``"fp16"`` or ``"fp32"``; ``None`` means bf16 (or fp16) on CUDA and fp32 '
             'elsewhere; ``"auto"`` as ``None``, and bf16 also on CPUs that compute it natively. On the CPU, bf16 '
             "kept the ranking of a passage-trained MiniLM in ``benchmarks/run.py`` (row 8); whether it is faster "
             'than fp32 depends on the CPU (native bf16 or not). ``"int8"``: dynamic int8 quantization of the '
             "encoder's linear layers, CPU inference only (training stays fp32); faster, but it changes the ranking. "
             "The measured numbers are in ``benchmarks/results/``.",
    "verbose": "a progress bar on stderr (counted in documents; in steps while ``fit`` trains): the default None "
               "shows it once a call has run a few seconds (``engine.progress.PROGRESS_DELAY``), True from the "
               "start, False never.",
    "warn_cropping": "warn when documents are longer than the model reads; ``None`` (default) warns for every model "
                     "but FirstP, whose definition is to read the start only.",
    "attn_implementation": 'transformers\' attention kernel (``"sdpa"``, ``"eager"``, ...); None: the library\'s '
                           "choice (SDPA where the architecture has it).",
    "max_batch_tokens": "a cap on a batch's tokens (sequences times their padded length) besides ``batch_size``; "
                        "None: no cap.",
    "batching": "the batch policy: ``'length_sorted'`` or ``'input_order'``.",
    "partial_last_layer": "the last layer computed where the head reads it only.",
    "onednn_linears": "oneDNN's linear kernels (None: where they beat MKL's on this CPU).",
}


def runtime_option(name: str) -> Any:
    """A runtime option as an attribute of the reranker: read from and set on its ``runtime`` (which checks it)."""
    return property(lambda self: getattr(self.runtime, name),
                    lambda self, value: setattr(self.runtime, name, value), doc=RUNTIME_OPTION_DOCS[name])


def placed_option(name: str) -> Any:
    """A runtime option whose change moves the weights at once (``dtype``): a value that cannot run
    there is an error when it is set, and leaves the old one."""
    return property(lambda self: getattr(self.runtime, name),
                    lambda self, value: self._placement.set(**{name: value}), doc=RUNTIME_OPTION_DOCS[name])


def device_option() -> Any:
    """The reranker's ``device``: the runtime's first device, present on this machine; setting it places the model."""
    return property(lambda self: self.runtime.available_devices()[0], lambda self, value: self.place(value),
                    doc="The first device: training's and the weights'. Set it (a device, or a list that shares "
                        "inference batches) to move the model there: a device this machine lacks is an error at once.")


def attention_option() -> Any:
    """The reranker's ``attn_implementation``: read from its encoder, set on its runtime and encoder."""
    return property(lambda self: self.model.encoder.config._attn_implementation,
                    lambda self, value: self._placement.set_attention(value),
                    doc="transformers' attention kernel of the encoder (set it to change it: ``\"eager\"``, "
                        "``\"sdpa\"``, ``\"flash_attention_2\"``, ...).")


def read_live(read, doc: str) -> Any:
    """A read-only attribute of the reranker computed from its runtime at every use, never copied."""
    return property(lambda self: read(self.runtime), doc=doc)


class Placement:
    """The weights of one engine (``LongDocModel``) on its runtime's first device in the runtime's
    dtype, placed before every use, and its inference copies (one per device, or int8), which a
    placement renews.

    ``fp32_embeddings``: half-precision weights keep the embeddings and LayerNorms in fp32
    (``hold_parameters``); the LLM models turn it off."""

    def __init__(self, runtime: Runtime, model: LongDocModel, *, fp32_embeddings: bool = True):
        self.runtime, self.model, self.fp32_embeddings = runtime, model, fp32_embeddings
        self.replicas = Replicas()
        self._placed: tuple | None = None

    def place_weights(self) -> None:
        """The engine on the runtime's first device, its weights in the runtime's dtype: called before
        every use, so a change of ``runtime.device`` or ``runtime.dtype`` takes effect at the next call."""
        device = self.runtime.available_devices()[0]
        placed = (device, self.runtime.weights_dtype(device))
        if self._placed != placed:
            self.model.to(device)
            hold_parameters(self.model, placed[1], fp32_embeddings=self.fp32_embeddings)
            self.replicas.clear()
            self._placed = placed

    def set(self, **options) -> None:
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

    def set_attention(self, implementation: str | None) -> None:
        """transformers' attention kernel of the encoder, for this call and the next."""
        self.runtime.attn_implementation = implementation
        set_attention(self.model.encoder, implementation)
        self.replicas.clear()

    def workers(self, autocast):
        """Copies of the model on each device (or quantized to int8), or None for the model itself."""
        return self.replicas.workers(self.model, self.runtime.available_devices(), self.runtime.int8, autocast)

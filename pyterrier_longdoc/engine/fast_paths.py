"""The encoder's fast paths at inference: its last layer computed only where a head reads it,
and its linear layers on oneDNN's kernels. Both give the plain path's scores within float rounding
(tested at 1e-5 in fp32); training takes the plain path.

**The last layer where it is read.** FirstP, MaxP, SumP, KMaxAvgP, AvgP and PARADE's pooled,
attention, CNN and Transformer heads keep one vector per chunk, the last layer's output at [CLS]
(a BERT sequence-classification head reads it too: its pooler takes the first position);
PARADE-Transformer-Q also reads the query tokens, which come right after [CLS]. In that layer the
keys and values of every position are still needed, since the positions read attend to them, but
the query projection, the attention output, the feed-forward network and the norms are needed at
those leading positions only: with MiniLM-L6 at ~200-token windows and [CLS] alone that is ~60% of
the last layer's FLOPs, ~10% of the encoder's. It applies to HuggingFace BERT-style layers (BERT,
RoBERTa, XLM-R, CamemBERT, ELECTRA: query, key and value projections, ``attention.output``,
``intermediate``, ``output``); every other encoder computes its whole last layer.

**oneDNN linear layers.** In fp32 on the CPU torch computes ``nn.Linear`` with MKL's GEMM, which
runs its AVX2 code on AMD CPUs, also those with AVX-512, where it runs at half the speed of
oneDNN's kernels (those that ship inside torch for torch.compile and bf16). Every ``nn.Linear`` of
the encoder then runs as oneDNN's linear, a BERT-style feed-forward layer's first matrix and its
exact GELU as one fused call. By default (``onednn_linears=None``) the kernel follows the CPU kind,
as measured (``benchmarks/run.py``, MaxP against the CrossEncoder on each kernel, rows 1a and 1c):
oneDNN on AMD CPUs with AVX-512 (Zen 5: 2.19x on oneDNN, 1.21x on MKL; Zen 4: 1.37x, 1.22x in
CPU seconds), MKL on AMD CPUs with AVX2 alone (1.11x on oneDNN, 1.24x on MKL) and on
Intel's (MKL runs its AVX-512 code there: with AMX 1.27x on MKL against 1.22x on oneDNN, MKL
ahead in 2 of 3 rounds; not measured in CPU seconds yet). A CPU whose vendor is unknown (no
``/proc/cpuinfo``) takes oneDNN where torch's CPU capability is AVX-512. For the encoders tested
(BERT-style, DeBERTa-v2, ModernBERT), in fp32 on the CPU without autocast or gradients, where
torch has oneDNN.

oneDNN, and ideep (torch's wrapper of it), each keep up to 1,024 compiled kernels, one per input
shape; batches of varying width fill them with tens of MB more the more documents are scored
(``benchmarks/run.py``, row 7f against 7c). Importing this package caps both caches at 16 kernels
(no measured cost in speed): ``ONEDNN_PRIMITIVE_CACHE_CAPACITY`` and ``LRU_CACHE_CAPACITY``, read
when oneDNN first runs in the process, so a value set before (in the environment, or by a oneDNN
call before the import) stays.
"""
from __future__ import annotations

import contextlib
import threading
import weakref
from typing import Any, cast

import torch
import torch.nn.functional as F
from torch import nn

from . import KERNEL_CACHE_SIZE, KERNEL_CACHES  # noqa: F401 (capped on import)

BERT_STYLE = ("bert", "roberta", "xlm-roberta", "camembert", "electra")


def supports_partial_last_layer(encoder: nn.Module) -> bool:
    """Whether ``encoder`` is a BERT-style HuggingFace encoder whose last layer can run at its
    leading positions only."""
    config = getattr(encoder, "config", None)
    if getattr(config, "model_type", None) not in BERT_STYLE or getattr(config, "is_decoder", False):
        return False
    if getattr(config, "position_embedding_type", "absolute") not in (None, "absolute"):
        return False  # relative position terms inside attention (older transformers) are not computed here
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList) or not len(layers):
        return False
    last = layers[-1]
    self_attention = getattr(getattr(last, "attention", None), "self", None)
    return (all(isinstance(getattr(self_attention, name, None), nn.Linear) for name in ("query", "key", "value"))
            and isinstance(getattr(self_attention, "attention_head_size", None), int)
            and all(isinstance(m, nn.Module) for m in (getattr(last.attention, "output", None),
                                                       getattr(last, "intermediate", None), getattr(last, "output", None)))
            and not hasattr(last, "crossattention"))


def onednn_linears_faster() -> bool:
    """Whether this CPU runs oneDNN's fp32 linear kernels faster than MKL's: where torch's CPU
    capability is AVX-512 and the CPU is not Intel's (whose AVX-512 MKL uses; see the module's
    notes for the measurements by CPU kind)."""
    return torch.backends.cpu.get_cpu_capability() == "AVX512" and cpu_vendor() != "GenuineIntel"


def cpu_vendor() -> str:
    """The CPU's vendor id (``"AuthenticAMD"``, ``"GenuineIntel"``, ...; Linux's /proc/cpuinfo),
    ``""`` where unknown."""
    try:
        with open("/proc/cpuinfo") as file:
            return next((line.split(":", 1)[1].strip() for line in file if line.startswith("vendor_id")), "")
    except OSError:
        return ""


# Encoders whose modules stay in place during a forward call (BigBird, for one, rebuilds its
# attention modules from the current ones when a sequence is short, which would keep stand-ins)
ONEDNN_TESTED = (*BERT_STYLE, "deberta-v2", "modernbert")


def supports_onednn_linears(encoder: nn.Module) -> bool:
    """Whether ``encoder`` is of a tested architecture with fp32 weights on the CPU, and torch has
    oneDNN's linear kernel."""
    weight = next(encoder.parameters(), None)
    return (getattr(getattr(encoder, "config", None), "model_type", None) in ONEDNN_TESTED
            and weight is not None and weight.device.type == "cpu" and weight.dtype == torch.float32
            and torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise"))


# Stand-ins are put in the encoder for one call: calls of one encoder from several threads
# (workers sharing a replica) take turns, so none sees another's stand-ins.
_LOCKS: weakref.WeakKeyDictionary[nn.Module, threading.Lock] = weakref.WeakKeyDictionary()
_LOCKS_LOCK = threading.Lock()


@contextlib.contextmanager
def fast_paths(encoder: nn.Module, attention_mask: torch.Tensor, positions: int | None, onednn: bool):
    """Within this block ``encoder`` computes its last layer only at the first ``positions``
    positions (unless None: it then returns ``[batch, positions, hidden]``, attending to the
    positions where ``attention_mask [batch, length]`` is 1), and runs its linear layers on oneDNN
    (with ``onednn``: only without autocast and gradients)."""
    if positions is None and not onednn:
        yield
        return
    with _LOCKS_LOCK:
        lock = _LOCKS.setdefault(encoder, threading.Lock())
    with lock:
        swapped: list[tuple[nn.Module, str, nn.Module]] = []  # (parent, name, original)
        try:
            if onednn:
                _swap_linears(encoder, swapped)
            if positions is not None:
                layers = cast(nn.ModuleList, encoder.get_submodule("encoder.layer"))  # a BERT-style encoder's
                swapped.append((layers, str(len(layers) - 1), layers[-1]))
                layers[-1] = _LeadingOnlyLayer(layers[-1], attention_mask, positions)
            yield
        finally:
            for parent, name, original in reversed(swapped):
                setattr(parent, name, original)


def _swap_linears(module: nn.Module, swapped: list) -> None:
    for name, child in list(module.named_children()):
        dense, activation = getattr(child, "dense", None), getattr(child, "intermediate_act_fn", None)
        if type(child) is nn.Linear:  # exactly: quantized and other subclasses keep their own forward
            stand_in = _OneDnnLinear(child)
        elif (type(child).__name__.endswith("Intermediate") and len(list(child.children())) == 2
              and type(dense) is nn.Linear and _is_exact_gelu(activation)):
            stand_in = _OneDnnLinear(dense, "gelu")  # a BERT-style feed-forward layer's first half: act(dense(x))
        else:
            _swap_linears(child, swapped)
            continue
        swapped.append((module, name, child))
        setattr(module, name, stand_in)


def _is_exact_gelu(activation) -> bool:
    if type(activation) is nn.GELU:
        return activation.approximate == "none"
    # transformers' GELUActivation for hidden_act="gelu": torch's exact GELU
    return type(activation).__name__ == "GELUActivation" and getattr(activation, "act", None) is F.gelu


class _OneDnnLinear(nn.Module):
    """``linear`` (and then an exact GELU, with ``activation="gelu"``) as one oneDNN call. It
    holds the layer, not as a submodule, so the encoder's state dict never changes."""

    linear: nn.Linear

    def __init__(self, linear: nn.Linear, activation: str = "none"):
        super().__init__()
        object.__setattr__(self, "linear", linear)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        algorithm = "none" if self.activation == "gelu" else ""  # "none": GELU's exact (erf) form
        return torch.ops.mkldnn._linear_pointwise(x, self.linear.weight, self.linear.bias, self.activation, [],
                                                  algorithm)


class _LeadingOnlyLayer(nn.Module):
    """Stands in for a BERT layer for one encoder call (it holds the layer, not as a submodule, so
    the encoder's state dict never changes)."""

    layer: Any  # a BERT-style layer (BERT, ELECTRA, RoBERTa, ...): its submodules read by name

    def __init__(self, layer: nn.Module, attention_mask: torch.Tensor, positions: int):
        super().__init__()
        object.__setattr__(self, "layer", layer)
        self.attention_mask = attention_mask
        self.positions = positions

    def forward(self, hidden_states: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        layer = self.layer
        attention = layer.attention
        projections = attention.self
        b, length, _ = hidden_states.shape
        size = projections.attention_head_size
        read = hidden_states[:, :self.positions]
        n = read.shape[1]
        k = projections.key(hidden_states)
        heads = k.shape[-1] // size
        k = k.view(b, length, heads, size).transpose(1, 2)
        q = projections.query(read).view(b, n, heads, size).transpose(1, 2)
        v = projections.value(hidden_states).view(b, length, heads, size).transpose(1, 2)
        mask = self.attention_mask[:, None, None, :].bool()
        scale = getattr(projections, "scaling", size ** -0.5)
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        x = attention.output(context.transpose(1, 2).reshape(b, n, heads * size), read)
        return layer.output(layer.intermediate(x), x)

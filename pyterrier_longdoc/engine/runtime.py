"""Where and how a model runs: the Runtime (device, dtype, batch size and the engine options, each
checked when set) and autocast dtypes (native bf16 detection). (The input frames are checked in ``frames``.)"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
from pathlib import Path
from typing import TypedDict

import torch

from . import BATCH_SIZE, BATCHINGS, DTYPES  # noqa: F401 - DTYPES: the vocabulary
from .._warn import warn

# autocast dtypes by name; with "auto" and "int8", the dtype vocabulary of every entry point (models,
# the passage stage, the demo, the command line)
AUTOCAST_DTYPES = {"fp32": None, "float32": None, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
                   "fp16": torch.float16, "float16": torch.float16}
# the options a model's constructor takes; the others are engine options (every one is also an attribute
# of the model and a PyTerrier parameter: OPTIONS)
CONSTRUCTOR_OPTIONS = ("batch_size", "text_field", "device", "dtype", "verbose", "warn_cropping", "attn_implementation",
                       "max_batch_tokens")
_OTHER_DEVICE = "use device='cpu', or leave device unset for the best device this machine has"


def unknown_dtype(value) -> ValueError:
    """The error for a dtype name no entry point knows."""
    return ValueError(f"unknown dtype {value!r}; use one of {sorted(AUTOCAST_DTYPES)}, 'auto', 'int8' or a "
                      "torch.dtype")


@dataclasses.dataclass
class Runtime:
    """Where and how a model runs; none of it is saved with the model. Every option is checked
    when it is set, in the constructor or later (``model.batch_size = 0`` raises at once, and so does
    ``model.device = "cuda"`` on a machine without a CUDA GPU), and the error names the option.

    ``dtype``: ``None`` (bf16, or fp16, on CUDA; fp32 elsewhere), ``"auto"`` (as ``None``, and
    bf16 on CPUs that compute it natively), ``"bf16"``, ``"fp16"``, ``"fp32"`` (or a
    ``torch.dtype``), or ``"int8"`` (dynamic int8 quantization of the encoder's linear layers,
    CPU inference only). On a GPU, bf16 and fp16 hold the weights in that dtype too (half the
    memory of fp32; ``fit`` keeps the weights it trains in fp32); elsewhere the weights are fp32 and
    autocast computes in the dtype. ``attn_implementation``: transformers' attention kernel
    (``"sdpa"``, ``"eager"``, ``"flash_attention_2"`` where flash-attn is installed, ...), None for
    the library's choice (SDPA where the architecture has it). ``max_batch_tokens``: a cap on the
    tokens of a batch (sequences times their padded length) besides ``batch_size``, so that
    batches of long sequences hold fewer of them; None: no cap. Engine options: ``batching`` (the
    batch policy), ``partial_last_layer`` and ``onednn_linears`` (the inference fast paths, where
    the encoder supports them; ``onednn_linears=None``, the default, takes oneDNN's linear kernels
    where this CPU runs them faster than MKL's, see ``fast_paths``).
    """

    batch_size: int = BATCH_SIZE
    text_field: str = "text"
    device: str | torch.device | list | None = None
    dtype: str | torch.dtype | None = None
    verbose: bool | None = None  # see engine.progress
    warn_cropping: bool | None = None  # None: the model's own default
    attn_implementation: str | None = None
    max_batch_tokens: int | None = None
    batching: str = "length_sorted"
    partial_last_layer: bool = True
    onednn_linears: bool | None = None  # None: where this CPU's oneDNN kernels beat MKL's (AVX-512)

    def __setattr__(self, name: str, value) -> None:
        check = getattr(self, f"_check_{name}", None)
        if check is not None:
            check(value)
        super().__setattr__(name, value)

    @staticmethod
    def _check_batch_size(value) -> None:
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"batch_size must be a positive integer, got {value!r}")

    @staticmethod
    def _check_max_batch_tokens(value) -> None:
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise ValueError(f"max_batch_tokens must be a positive integer or None (no cap), got {value!r}")

    @staticmethod
    def _check_attn_implementation(value) -> None:
        if value is not None and not isinstance(value, str):
            raise TypeError(f"attn_implementation must be a transformers attention name (e.g. 'sdpa', 'eager', "
                            f"'flash_attention_2') or None, got {value!r}")

    @staticmethod
    def _check_text_field(value) -> None:
        if not isinstance(value, str):
            raise TypeError(f"text_field must be a column name (str), got {value!r}")

    @staticmethod
    def _check_dtype(value) -> None:
        if value is None or isinstance(value, torch.dtype) or value in ("auto", "int8", *AUTOCAST_DTYPES):
            return
        raise unknown_dtype(value)

    @staticmethod
    def _check_device(value) -> None:
        # present on this machine, checked when set: `runtime.device = "cuda"` on a CPU-only machine fails
        # here, not at the next call
        if isinstance(value, (list, tuple)) and not value:
            raise ValueError("device is an empty list; give at least one device")
        for device in value if isinstance(value, (list, tuple)) else [value]:
            if device is not None:
                _check_present(torch.device(device))  # torch's own error for a name it does not know

    @staticmethod
    def _check_batching(value) -> None:
        if value not in BATCHINGS:
            raise ValueError(f"unknown batching {value!r}; use one of {', '.join(BATCHINGS)}")

    @staticmethod
    def _check_partial_last_layer(value) -> None:
        _check_flag("partial_last_layer", value)

    @staticmethod
    def _check_verbose(value) -> None:
        if value is not None and not isinstance(value, bool):
            raise TypeError(f"verbose must be True (a progress bar), False (none) or None (a bar once a call has "
                            f"run a few seconds), got {value!r}")

    @staticmethod
    def _check_onednn_linears(value) -> None:
        if value is not None:
            _check_flag("onednn_linears", value)

    def changed(self) -> dict:
        """The constructor options that differ from their defaults (for ``repr``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.name in CONSTRUCTOR_OPTIONS and getattr(self, f.name) != f.default}

    def devices(self) -> list[torch.device]:
        devices = self.device if isinstance(self.device, (list, tuple)) else [
            self.device if self.device is not None else default_device()]
        return [torch.device(d) for d in devices]

    def available_devices(self) -> list[torch.device]:
        """``devices()``, each one present on this machine (checked again: a runtime unpickled on
        another machine was checked where it was set)."""
        devices = self.devices()
        for device in devices:
            _check_present(device)
        return devices

    @property
    def int8(self) -> bool:
        return self.dtype == "int8"

    def autocast_dtype(self, device: torch.device | None = None) -> torch.dtype | None:
        """The autocast dtype on ``device`` (default: the first device), None for fp32 (and int8)."""
        if self.int8:
            if any(d.type != "cpu" for d in ([device] if device is not None else self.devices())):
                raise ValueError("dtype='int8' (dynamic quantization of the encoder's linear layers) runs on the "
                                 "CPU only")
            return None
        return resolve_dtype(self.dtype, device if device is not None else self.devices()[0])

    def weights_dtype(self, device: torch.device | None = None) -> torch.dtype:
        """The dtype the weights are held in on ``device`` (default: the first device): bf16 or
        fp16 where that is the autocast dtype on a GPU, fp32 elsewhere (CPU autocast keeps fp32
        weights: int8 quantizes from them, and fp32 is what oneDNN's fast path reads)."""
        device = device if device is not None else self.devices()[0]
        autocast = self.autocast_dtype(device)
        return autocast if autocast is not None and device.type == "cuda" else torch.float32

    def dtype_name(self, device: torch.device | None = None) -> str:
        """What ``dtype`` comes to on ``device`` (default: the first device): ``"bf16"``,
        ``"fp16"``, ``"fp32"`` or ``"int8"``."""
        if self.int8:
            return "int8"
        return {None: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}[self.autocast_dtype(device)]


class RuntimeOptions(TypedDict, total=False):
    """The runtime options a model's constructor takes (``CONSTRUCTOR_OPTIONS``), as keywords for type checkers
    (``Runtime``'s fields and types: a test keeps them equal)."""

    batch_size: int
    text_field: str
    device: str | torch.device | list | None
    dtype: str | torch.dtype | None
    verbose: bool | None
    warn_cropping: bool | None
    attn_implementation: str | None
    max_batch_tokens: int | None


OPTIONS = tuple(f.name for f in dataclasses.fields(Runtime))  # every runtime option, by name
HALF_PRECISION = (torch.bfloat16, torch.float16)
FP32_IN_HALF_PRECISION = (torch.nn.Embedding, torch.nn.LayerNorm)  # what fp32_embeddings keeps in fp32


def hold_parameters(model: torch.nn.Module, dtype: torch.dtype, *, trainable_only: bool = False,
                    fp32_embeddings: bool = False) -> None:
    """``model``'s floating-point parameters (with ``trainable_only``, those that require grad) in
    ``dtype``. Buffers keep theirs: a rotary embedding's frequencies lose positions in bf16.

    ``fp32_embeddings``: with a half-precision ``dtype``, the ``nn.Embedding`` tables and the
    ``nn.LayerNorm`` layers stay in fp32. A BERT-style encoder sums its word, position and type
    vectors before the first LayerNorm: in bf16 that sum keeps 8 bits of mantissa, and the
    rounding it adds to every token reaches the score (on a tiny random BERT 10 times the
    difference autocast over fp32 weights gives). In fp32 the residual stream stays fp32 between
    the layers' half-precision matrix products; the tables are a few percent of the weights."""
    kept = set()
    if fp32_embeddings and dtype in HALF_PRECISION:
        kept = {id(p) for module in model.modules() if isinstance(module, FP32_IN_HALF_PRECISION)
                for p in module.parameters(recurse=False)}
    for parameter in model.parameters():
        wanted = parameter.requires_grad or not trainable_only
        target = torch.float32 if id(parameter) in kept else dtype
        if wanted and parameter.is_floating_point() and parameter.dtype != target:
            parameter.data = parameter.data.to(target)


def _check_present(device: torch.device) -> None:
    """A clear error for a device this machine lacks, rather than torch's ``AssertionError: Torch
    not compiled with CUDA enabled`` when the model moves there."""
    if device.type == "cuda":
        gpus = torch.cuda.device_count()
        if (device.index or 0) >= gpus:
            found = f"only {gpus} CUDA GPU(s) are visible" if gpus else "no CUDA GPU is available"
            raise ValueError(f"device={str(device)!r}: {found} (torch {torch.__version__}, CUDA "
                             f"{torch.version.cuda or 'not compiled in'}); {_OTHER_DEVICE}")
    mps = getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
    if device.type == "mps" and not mps:
        raise ValueError(f"device={str(device)!r}: no Apple MPS device is available; {_OTHER_DEVICE}")


def _check_flag(name: str, value) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")


def default_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype | None:
    """The autocast dtype, or None for plain fp32."""
    if dtype in (None, "auto"):
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        if dtype == "auto" and device.type == "cpu" and native_bf16_cpu():
            return torch.bfloat16
        return None
    if isinstance(dtype, torch.dtype):
        dtype = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, dtype)
    if dtype not in AUTOCAST_DTYPES:
        raise unknown_dtype(dtype)
    resolved = AUTOCAST_DTYPES[dtype]
    if resolved == torch.bfloat16 and device.type == "cpu" and not native_bf16_cpu():
        warn("this CPU has no native bf16 (AMX or AVX512-BF16): bf16 autocast is emulated and several "
             "times slower than fp32 here; use dtype=None")
    return resolved


def native_bf16_cpu() -> bool:
    """Whether this CPU computes bf16 natively (Linux: its /proc/cpuinfo flags)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def release_freed_memory() -> None:
    """Hand the C allocator's freed pages back to the system (glibc's ``malloc_trim``), a no-op
    elsewhere. glibc keeps freed memory for reuse: without this, peak memory after the first group
    of documents still holds what that group's features left in the allocator."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=1)
def _malloc_trim():
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):  # not glibc (macOS, musl, Windows)
        return None

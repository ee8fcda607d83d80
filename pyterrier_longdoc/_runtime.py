"""Where and how a model runs: devices, autocast dtypes (native bf16 detection), the runtime
options every model takes. (The input frames are checked in ``_frames``.)"""
from __future__ import annotations

import ctypes
import dataclasses
import functools
import warnings
from pathlib import Path

import torch

from ._frames import column_texts, row_label  # noqa: F401 - their home until version 0.2


@dataclasses.dataclass
class Runtime:
    """The runtime options every model takes; none is saved with the model."""

    batch_size: int = 16
    text_field: str = "text"
    device: str | torch.device | list | None = None
    dtype: str | torch.dtype | None = None
    verbose: bool = False
    warn_cropping: bool | None = None  # None: the model's own default

    def __post_init__(self):
        if not isinstance(self.batch_size, int) or isinstance(self.batch_size, bool) or self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {self.batch_size!r}")
        if not isinstance(self.text_field, str):
            raise TypeError(f"text_field must be a column name (str), got {self.text_field!r}")

    def changed(self) -> dict:
        """The options that differ from their defaults (for ``repr``)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) != f.default}

    def devices(self) -> list[torch.device]:
        devices = self.device if isinstance(self.device, (list, tuple)) else [
            self.device if self.device is not None else default_device()]
        if not devices:
            raise ValueError("device is an empty list; give at least one device")
        return [torch.device(d) for d in devices]


def default_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


_DTYPES = {"fp32": None, "float32": None, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
           "fp16": torch.float16, "float16": torch.float16}


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype | None:
    """The autocast dtype, or None for plain fp32."""
    if dtype is None:
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return None
    if isinstance(dtype, torch.dtype):
        dtype = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, dtype)
    if dtype not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(_DTYPES)}, 'int8' or a torch.dtype")
    resolved = _DTYPES[dtype]
    if resolved == torch.bfloat16 and device.type == "cpu" and not native_bf16_cpu():
        warnings.warn("this CPU has no native bf16 (AMX or AVX512-BF16): bf16 autocast is emulated and several "
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

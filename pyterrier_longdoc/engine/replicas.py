"""Copies of a model for inference: one per device when a model runs on several, quantized to
int8 with ``dtype="int8"``; rebuilt whenever the model's weights have changed."""
from __future__ import annotations

import warnings
from collections.abc import Callable

import torch

from .._warn import warn

from .batching import ChunkBatch
from .model import LongDocModel


class Replicas:
    """The inference copies of one model, kept until its weights (or the devices) change."""

    def __init__(self):
        self.clear()

    def clear(self) -> None:
        """Forget the copies (e.g. after the model's layers changed, as merging LoRA adapters does)."""
        self._key: tuple | None = None
        self._copies: list[LongDocModel] = []

    def workers(self, model: LongDocModel, devices: list[torch.device], int8: bool,
                autocast: Callable) -> list[Callable[[ChunkBatch], torch.Tensor]] | None:
        """Encoders for inference, one per copy; None when the model itself does it (one
        device, no quantization). ``autocast`` gives the autocast context of a call."""
        if len(devices) == 1 and not int8:
            return None
        # a tensor's _version counts its in-place changes: optimizer steps and load_state_dict
        key = (tuple(devices), int8, tuple(p._version for p in model.parameters()))
        if self._key != key:
            self._copies = [_replica(model, device, int8) for device in devices]
            self._key = key

        def worker(replica):
            def encode(batch):  # grad mode and autocast are per thread: set them in the worker
                with torch.inference_mode(), autocast():
                    return replica.encode(batch.to(replica.device))
            return encode

        return [worker(replica) for replica in self._copies]


def _replica(model: LongDocModel, device: torch.device, int8: bool) -> LongDocModel:
    replica = model.replica(device)
    if int8:
        from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic

        # one scale per output row (per channel), not per matrix: closer to fp32's rankings (Kendall tau
        # 0.92 against 0.88 on a passage-trained MiniLM), at the same speed
        with warnings.catch_warnings():  # torch's own deprecation notice of quantized tensors
            warnings.simplefilter("ignore", UserWarning)
            replica.encoder = quantize_dynamic(replica.encoder, {torch.nn.Linear: per_channel_dynamic_qconfig},
                                               dtype=torch.qint8)
        warn("dtype='int8' re-orders rankings: its Kendall tau against fp32 on passage-trained cross-encoders was "
             "0.47-0.92 (benchmarks/run.py, row 8), where bf16 keeps 0.99 or more; dtype='auto' never picks it")
    return replica

"""The aggregator contract: chunk encoder outputs in, one score per document out."""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, ClassVar, Protocol

import torch
from torch import nn

from .heads import Head, LinearHead, pool

Features = torch.Tensor | tuple[torch.Tensor, ...]  # what chunk_features keeps of an encoder batch


class ChunkBatch(Protocol):
    """What a head reads of the engine's batch (``engine.batching.ChunkBatch``): the heads sit below the
    engine and import none of it."""

    attention_mask: torch.Tensor
    query_mask: torch.Tensor  # True on query tokens (special tokens excluded)
    doc_mask: torch.Tensor    # True on document tokens (special tokens excluded)


class Aggregator(nn.Module):
    """Scores a document from its chunks, in two steps:

    1. ``chunk_features(output, batch)`` runs per encoder batch and keeps what the
       aggregation needs of each chunk (by default the [CLS] vector of the last layer);
    2. ``forward(features, mask)`` gets those features regrouped per document,
       ``[documents, chunks, ...]``, with ``mask[d, c]`` False where document d has no chunk c,
       and returns ``[documents]`` scores. Masked chunks must never change a score.

    ``chunk_features`` may also return a tuple of tensors ``[n, ...]``; each is regrouped the
    same way (zero-padded where batches differ in size) and ``forward`` gets the tuple.
    """

    #: takes ``load_encoder``, the engine's loader of a pretrained encoder (PARADE's PRETR), when built
    loads_encoder: ClassVar[bool] = False
    #: ask the encoder for the hidden states of every layer (token-level models)
    output_hidden_states: ClassVar[bool] = False
    #: scores with a chunk head ``head`` (``[..., H] -> [..., 1]``): a trained cross-encoder's own
    #: sequence-classification head when the model starts from one, else a new head
    chunk_head: ClassVar[bool] = False
    #: settings the aggregator reads at each call, not in the shape of its weights: set_parameter changes them in place
    tunable: ClassVar[tuple[str, ...]] = ()
    #: scores with no trained parameters of its own (a bi-encoder's similarity): no new head to warn of
    zero_shot: ClassVar[bool] = False
    #: what ``window_weights`` gives per window, as the explanation's column (``"window_scores"``), or
    #: None where the aggregation mixes the windows so that no window has a weight of its own
    window_weights_column: ClassVar[str | None] = None
    #: new parameters that start where the aggregation is neutral, not at random (PARADE-Attn's attention
    #: vector at zero: equal weights), so that over a trained cross-encoder the model ranks before any training
    neutral_start: ClassVar[tuple[str, ...]] = ()

    head: Head  # where chunk_head

    def __init__(self, hidden_size: int, head: Head | None = None):
        super().__init__()
        self.hidden_size = hidden_size
        if self.chunk_head:
            self.head = head if head is not None else LinearHead(hidden_size)
        elif head is not None:
            raise TypeError(f"{type(self).__name__} has no chunk head")

    @classmethod
    def settings_defaults(cls) -> dict:
        """The head's settings and their defaults, from its constructor (the one place they are
        written); a model class adds its chunking and overrides what its paper fixes."""
        import inspect

        return {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
                if name not in ("self", "hidden_size", "head") and p.default is not inspect.Parameter.empty}

    def attach(self, encoder: nn.Module, tokenizer, chunking) -> None:
        """Called once with the backbone when the model is assembled, before saved weights are
        loaded: for parameters that depend on it (its layer count, an embedding, the query length)."""

    def saved_settings(self) -> dict:
        """Settings the aggregator derived while it was built, saved with the model so that
        loading needs nothing else (e.g. the config of a pretrained aggregator encoder)."""
        return {}

    def encoder_inputs(self, encoder: nn.Module, batch: ChunkBatch) -> dict:
        """Called before each encoder call: extra keyword arguments for it (e.g. Longformer's
        global attention)."""
        return {}

    def chunk_features(self, output, batch: ChunkBatch) -> Features:
        """By default the chunk's vector as its head pools it ([CLS] of the last layer, or ModernBERT's mean)."""
        return pool(output, batch.attention_mask, getattr(getattr(self, "head", None), "pooling", "cls"))

    @property
    def reads_leading_only(self) -> bool:
        """Whether ``chunk_features`` reads the last layer only at the sequence's first
        ``last_layer_positions(batch)`` positions (and nothing else of the encoder's output): the
        engine may then compute the last layer only there."""
        return (self.features_are_leading and not self.output_hidden_states
                and type(self).encoder_inputs is Aggregator.encoder_inputs)

    @property
    def features_are_leading(self) -> bool:
        """Whether ``chunk_features`` reads only leading positions of the last layer: the default's
        [CLS] vector, with a [CLS]-pooling head (an aggregator with its own ``chunk_features`` says
        so itself)."""
        return (type(self).chunk_features is Aggregator.chunk_features
                and getattr(getattr(self, "head", None), "pooling", "cls") == "cls")

    def last_layer_positions(self, batch: ChunkBatch) -> int:
        """How many leading positions of the last layer ``chunk_features`` reads in ``batch`` when
        ``reads_leading_only``: by default 1, [CLS]."""
        return 1

    # features: what this aggregator's chunk_features kept, regrouped per document (a tensor, or its own tuple)
    def forward(self, features: Any, mask: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def window_weights(self, features: Any, mask: torch.Tensor) -> torch.Tensor:
        """``[documents, chunks]``: how much each window counts in ``forward``'s score (where
        ``window_weights_column`` says what that is); ``forward`` computes its score from them."""
        raise NotImplementedError(f"{type(self).__name__} gives no window a weight of its own")


# where the aggregator calls of this thread (or task) put their documents' window weights while an
# explanation is gathered: a call in another thread, which has its own context, never sees it
_window_weights_sink: ContextVar[list | None] = ContextVar("window_weights_sink", default=None)


@contextlib.contextmanager
def recorded_window_weights() -> Iterator[list]:
    """Yields a list that every aggregator call made in this thread inside the block extends with
    its documents' window weights (``window_weights`` of the windows each document has, as numpy
    arrays), in the order scored; calls of other threads, at the same time, add nothing."""
    sink: list = []
    token = _window_weights_sink.set(sink)
    try:
        yield sink
    finally:
        _window_weights_sink.reset(token)


def recorded(weights: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``weights`` (``[documents, chunks]``, what ``forward`` scores from), kept for the explanation
    this thread is gathering, if any."""
    sink = _window_weights_sink.get()
    if sink is not None:
        sink.extend(row[windows].detach().float().cpu().numpy() for row, windows in zip(weights, mask))
    return weights


def expand_mask(mask: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``mask [docs, chunks]`` broadcast to ``like [docs, chunks, ...]``."""
    return mask.view(*mask.shape, *([1] * (like.dim() - mask.dim())))


def masked_reduce(values: torch.Tensor, mask: torch.Tensor, how: str) -> torch.Tensor:
    """Reduce ``values [docs, chunks, ...]`` over chunks, ignoring masked chunks."""
    m = expand_mask(mask, values)
    if how == "max":
        return values.masked_fill(~m, torch.finfo(values.dtype).min).max(dim=1).values
    if how == "first":
        return values[:, 0]
    total = (values * m).sum(dim=1)
    if how == "sum":
        return total
    if how == "mean":
        return total / m.sum(dim=1).clamp(min=1)
    raise ValueError(f"unknown reduction {how!r}; use max, sum, mean or first")


def select_tokens(states: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The positions where ``mask [n, T]`` is True, moved to the front: ``states [..., n, T, H]``
    becomes ``[..., n, M, H]`` with M the most selected in a row, and the new ``[n, M]`` mask."""
    width = int(mask.sum(1).max()) if mask.numel() else 0
    order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True)[:, :width]
    index = order.view(*([1] * (states.dim() - 3)), *order.shape, 1).expand(*states.shape[:-2], width, states.shape[-1])
    return states.gather(-2, index), mask.gather(1, order)

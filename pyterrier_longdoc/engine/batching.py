"""Length-sorted batches of (query, chunk) sequences, and the OOM back-off that runs them.

All chunk sequences of a set of documents are sorted by length and cut into batches, so a
batch pads only to the longest of similar lengths; results are scattered back by index.
"""
from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .chunking import Chunking, SpecialLayout
from . import BATCHINGS as BATCHING_POLICIES


@dataclass
class ChunkPlan:
    """Every chunk of every (query, document) pair, flattened: chunk k belongs to pair ``doc[k]``."""

    doc: np.ndarray       # pair index of each chunk
    position: np.ndarray  # chunk index within its document
    start: np.ndarray     # document token span of each chunk
    end: np.ndarray
    lengths: np.ndarray   # full sequence length, special tokens included
    n_chunks: np.ndarray  # chunks per pair

    @classmethod
    def build(cls, query_ids: Sequence[np.ndarray], doc_ids: Sequence[np.ndarray],
              chunking: Chunking, layout: SpecialLayout) -> ChunkPlan:
        doc, position, start, end, lengths = [], [], [], [], []
        n_chunks = np.zeros(len(doc_ids), dtype=np.int64)
        for i, (q, d) in enumerate(zip(query_ids, doc_ids)):
            spans = chunking.spans(len(d), layout)
            n_chunks[i] = len(spans)
            for k, (s, e) in enumerate(spans):
                doc.append(i)
                position.append(k)
                start.append(s)
                end.append(e)
                lengths.append(len(q) + e - s + layout.n_special)
        as_array = lambda x: np.asarray(x, dtype=np.int64)  # noqa: E731
        return cls(as_array(doc), as_array(position), as_array(start), as_array(end), as_array(lengths), n_chunks)

    def __len__(self) -> int:
        return len(self.doc)


@dataclass
class ChunkBatch:
    """One encoder batch. ``index`` says which chunks of the plan it holds."""

    index: np.ndarray
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    token_type_ids: torch.Tensor
    query_mask: torch.Tensor  # True on query tokens (special tokens excluded)
    doc_mask: torch.Tensor    # True on document tokens (special tokens excluded)

    def __len__(self) -> int:
        return len(self.index)

    def to(self, device) -> ChunkBatch:
        tensors = (self.input_ids, self.attention_mask, self.token_type_ids, self.query_mask, self.doc_mask)
        if torch.device(device).type == "cuda" and self.input_ids.device.type == "cpu":
            # from page-locked memory the copy does not block: the CPU builds the next batch while the
            # GPU still computes this one (a copy from pageable memory waits for the GPU to finish)
            return ChunkBatch(self.index, *(t.pin_memory().to(device, non_blocking=True) for t in tensors))
        return ChunkBatch(self.index, *(t.to(device) for t in tensors))

    def split(self) -> tuple[ChunkBatch, ChunkBatch]:
        half = len(self) // 2
        return self.select(slice(0, half)), self.select(slice(half, len(self)))

    def select(self, rows: slice) -> ChunkBatch:
        """The sequences ``rows`` of this batch, without the padding they do not need."""
        tensors = (self.input_ids, self.attention_mask, self.token_type_ids, self.query_mask, self.doc_mask)
        return ChunkBatch(self.index[rows], *(t[rows] for t in tensors)).trim()

    def trim(self) -> ChunkBatch:
        """Drop padding columns no sequence of this batch needs."""
        width = int(self.attention_mask.sum(1).max())
        return ChunkBatch(self.index, *(t[:, :width] for t in (self.input_ids, self.attention_mask,
                                                               self.token_type_ids, self.query_mask, self.doc_mask)))


def batch_bounds(lengths: np.ndarray, batch_size: int, max_tokens: int | None = None) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of consecutive batches of sequences of ``lengths``: at most ``batch_size``
    sequences and, with ``max_tokens``, at most that many tokens once padded to the batch's longest
    (always at least one sequence), so that a batch of 4,096-token sequences holds fewer of them."""
    start = 0
    while start < len(lengths):
        end = min(start + batch_size, len(lengths))
        if max_tokens is not None:
            padded = np.maximum.accumulate(lengths[start:end]) * np.arange(1, end - start + 1)
            end = start + max(1, int(np.searchsorted(padded, max_tokens, side="right")))
        yield start, end
        start = end


def length_sorted_batches(plan: ChunkPlan, query_ids: Sequence[np.ndarray], doc_ids: Sequence[np.ndarray],
                          layout: SpecialLayout, batch_size: int, pad_id: int,
                          max_tokens: int | None = None) -> Iterator[ChunkBatch]:
    """Batches of at most ``batch_size`` sequences (and ``max_tokens`` padded tokens), longest
    first (an OOM shows up at once)."""
    order = np.argsort(-plan.lengths, kind="stable")
    for start, end in batch_bounds(plan.lengths[order], batch_size, max_tokens):
        yield build_batch(plan, order[start:end], query_ids, doc_ids, layout, pad_id)


def input_order_batches(plan: ChunkPlan, query_ids: Sequence[np.ndarray], doc_ids: Sequence[np.ndarray],
                        layout: SpecialLayout, batch_size: int, pad_id: int,
                        max_tokens: int | None = None) -> Iterator[ChunkBatch]:
    """The same batches without the length sort: chunks in input (document) order, each batch
    padded to its own longest sequence. A baseline for benchmarks; never faster."""
    for start, end in batch_bounds(plan.lengths, batch_size, max_tokens):
        yield build_batch(plan, np.arange(start, end), query_ids, doc_ids, layout, pad_id)


#: batching policies of ``LongDocModel.batching``, by the names ``Runtime`` accepts
BATCHINGS: dict[str, Callable[..., Iterator[ChunkBatch]]] = dict(zip(BATCHING_POLICIES, (
    length_sorted_batches, input_order_batches)))


def build_batch(plan: ChunkPlan, index: np.ndarray, query_ids: Sequence[np.ndarray],
                doc_ids: Sequence[np.ndarray], layout: SpecialLayout, pad_id: int) -> ChunkBatch:
    """The padded tensors of the chunks ``index`` of ``plan``: ``prefix, query, middle, document
    span, suffix`` per row. Built with whole-array operations, not row by row: on a GPU the batches
    are built while the device waits (a batch of 256 sequences ~3.6x faster than a loop per row)."""
    docs = plan.doc[index]
    prefix, middle, suffix = (np.asarray(x, dtype=np.int64) for x in (layout.prefix, layout.middle, layout.suffix))
    pieces: list[np.ndarray] = []
    for k, i in zip(index, docs):
        pieces += (prefix, query_ids[i], middle, doc_ids[i][plan.start[k]:plan.end[k]], suffix)
    lengths = plan.lengths[index]
    column = np.arange(int(lengths.max()))
    attention = column < lengths[:, None]
    ids = np.full(attention.shape, pad_id, dtype=np.int64)
    ids[attention] = np.concatenate(pieces)  # row-major: each row's tokens fill its leading columns
    query_start = len(prefix)
    query_end = query_start + np.fromiter((len(query_ids[i]) for i in docs), np.int64, len(docs))
    doc_start = query_end + len(middle)  # the query part ends with the middle special tokens
    types = np.where(column < doc_start[:, None], layout.query_type, layout.doc_type) * attention
    query_mask = (column >= query_start) & (column < query_end[:, None])
    doc_mask = (column >= doc_start[:, None]) & (column < (doc_start + plan.end[index] - plan.start[index])[:, None])
    return ChunkBatch(index, torch.from_numpy(ids), torch.from_numpy(attention).long(), torch.from_numpy(types),
                      torch.from_numpy(query_mask), torch.from_numpy(doc_mask))


_OUT_OF_MEMORY = ("CUDA out of memory", "MPS backend out of memory",
                  "DefaultCPUAllocator: can't allocate memory")  # the last: a failed CPU allocation


def is_out_of_memory(error: BaseException) -> bool:
    if isinstance(error, torch.OutOfMemoryError):
        return True
    return isinstance(error, RuntimeError) and any(text in str(error) for text in _OUT_OF_MEMORY)


# The largest batch that fitted, per ``run`` callable (or ``key``: a model, for its own encoder), so
# a size learned on one batch holds for the batches after it; inference forgets it at each call.
_FITTED: weakref.WeakKeyDictionary[object, int] = weakref.WeakKeyDictionary()


def forget_fitted_batch_size(key: object) -> None:
    """Start again from the full batch size for ``key`` (what ``run_with_backoff`` learned)."""
    _FITTED.pop(key, None)


def run_with_backoff(batch: ChunkBatch, run: Callable[[ChunkBatch], torch.Tensor],
                     key: object = None) -> list[tuple[np.ndarray, torch.Tensor]]:
    """``run(batch)``; on an out-of-memory error (CUDA, MPS or a CPU allocation), halve the batch
    and retry, down to one sequence. The size that worked is kept for every later batch given
    with the same ``run`` (or the same ``key``, e.g. the model whose encoder ``run`` calls), so
    one OOM is not paid again on each of them.

    Returns (chunk indices, output) pieces. Only out-of-memory errors are caught.
    """
    key = run if key is None else key
    pieces, start = [], 0
    while start < len(batch):
        size = _FITTED.get(key, len(batch))  # read again each time: an OOM on a piece lowers it
        part = batch if start == 0 and size >= len(batch) else batch.select(slice(start, start + size))
        pieces += _run_halving(part, run, key)
        start += len(part)
    return pieces


def _run_halving(batch: ChunkBatch, run: Callable[[ChunkBatch], torch.Tensor],
                 key: object) -> list[tuple[np.ndarray, torch.Tensor]]:
    try:
        return [(batch.index, run(batch))]
    except Exception as error:  # noqa: BLE001 - re-raised below unless it is an OOM
        if not is_out_of_memory(error):
            raise
        if len(batch) == 1:
            raise RuntimeError(
                f"out of memory encoding a single sequence of {int(batch.attention_mask.sum())} tokens; "
                "use a smaller max_length/window, dtype='bf16', or a device with more memory") from error
    # retried outside the except block, so the failed attempt's traceback (and tensors) are freed
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    first, second = batch.split()
    try:
        _FITTED[key] = min(len(first), _FITTED.get(key, len(first)))
    except TypeError:  # a callable that takes no weak reference: halve every batch anew
        pass
    return run_with_backoff(first, run, key) + run_with_backoff(second, run, key)

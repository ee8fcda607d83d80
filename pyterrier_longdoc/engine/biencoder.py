"""BiEncoderModel: the engine for bi-encoders, which embed the query and each window apart.

A window is its own sequence (``[CLS] doc_prefix window [SEP]``) and the query too (``[CLS]
query_prefix query [SEP]``), each embedded once per call however many documents it is scored
with; the rest is the engine's (tokenized once, cut into windows, length-sorted batches, OOM
back-off, regrouped per document), and the aggregator compares the embeddings.
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import cast

import numpy as np
import torch

from .batching import ChunkBatch
from .chunking import CHUNKING_DEFAULTS, Chunking, SpecialLayout
from .model import LongDocModel, Scored, Tokens


# documents whose window embeddings inference keeps (the oldest dropped first): ~150 MB at width 384
WINDOWS_KEPT = 20_000


class BiEncoderModel(LongDocModel):
    """A LongDocModel whose sequences hold one text each: the query, or one window.

    The query is not in a window's sequence, so a window may fill ``max_length`` less its own
    special tokens and prefix (``window=None``). Queries are embedded by :meth:`encode_queries`,
    windows by :meth:`encode` (the same computation).
    """

    def __init__(self, encoder, tokenizer, aggregator, chunking: Chunking):
        self._windows_seen: OrderedDict[tuple[str, str], torch.Tensor] = OrderedDict()  # (precision, text) -> windows
        super().__init__(encoder, tokenizer, aggregator, chunking)

    def read_with(self, chunking: Chunking) -> None:
        queries = chunking.max_query_tokens
        assert queries is not None and chunking.max_length is not None  # resolved: integers in a model's Chunking
        # the windows' chunking: max_query_tokens of room that no query takes
        super().read_with(dataclasses.replace(chunking, max_length=chunking.max_length + queries))
        self.query_layout = SpecialLayout.single(self.tokenizer, chunking.query_prefix)
        # a query is the one window of its own sequence
        self.query_chunking = Chunking(window=queries, max_query_tokens=1, max_doc_tokens=queries, max_chunks=1,
                                       max_length=1 + queries + self.query_layout.n_special)
        self._windows_seen.clear()  # windows cut the old way

    @staticmethod
    def sequence_layout(tokenizer, chunking: Chunking, eos: bool) -> SpecialLayout:
        return SpecialLayout.single(tokenizer, chunking.doc_prefix)

    @staticmethod
    def longest_query(tokenizer, chunk_settings: dict) -> int:
        """A query as long as the model reads, as sentence-transformers truncates it: ``max_length``
        less its special tokens and prompt."""
        layout = SpecialLayout.single(tokenizer, chunk_settings.get("query_prefix", ""))
        return chunk_settings.get("max_length", CHUNKING_DEFAULTS["max_length"]) - layout.n_special

    def train(self, mode: bool = True):
        if mode:  # training changes the weights: every stored embedding goes stale
            self.weights_changed()
        return super().train(mode)

    def load_weights(self, path, sha256=None) -> None:
        self.weights_changed()
        super().load_weights(path, sha256)

    def weights_changed(self) -> None:
        self._windows_seen.clear()

    def _document_windows(self, texts: Sequence[str], doc_ids, *, batch_size: int, progress, workers):
        """Each document's window embeddings (``[documents, windows, dim]``) and window mask. A window's
        embedding does not depend on the query, so at inference a document seen in an earlier call (the
        same text, the same precision) is not encoded again: re-ranking one candidate set for several
        queries, or with query controls, encodes its documents once. Training encodes every call."""
        nothing = np.empty(0, dtype=np.int32)
        if self.training or torch.is_grad_enabled():
            return self.encode_chunks([nothing] * len(doc_ids), doc_ids, self.chunking, self.layout,
                                      batch_size=batch_size, progress=progress, workers=workers)
        precision = str(self.runtime.dtype)
        first_row: dict[str, int] = {}
        for row, text in enumerate(texts):
            if (precision, text) not in self._windows_seen:
                first_row.setdefault(text, row)
        if first_row:
            rows = list(first_row.values())
            new, new_mask = self.encode_chunks([nothing] * len(rows), [doc_ids[r] for r in rows], self.chunking,
                                               self.layout, batch_size=batch_size, progress=progress, workers=workers)
            for k, text in enumerate(first_row):
                self._windows_seen[(precision, text)] = new[k, new_mask[k]]
            while len(self._windows_seen) > WINDOWS_KEPT:
                self._windows_seen.popitem(last=False)
        if progress is not None:
            progress.update(len(texts) - len(first_row))
        stored = [self._windows_seen[(precision, text)] for text in texts]
        windows = torch.nn.utils.rnn.pad_sequence(stored, batch_first=True)
        counts = torch.tensor([len(vectors) for vectors in stored], device=windows.device)
        return windows, torch.arange(windows.shape[1], device=windows.device) < counts[:, None]

    def encode_queries(self, batch: ChunkBatch) -> torch.Tensor:
        """The embeddings of a batch of queries (each in the document slot of its sequence)."""
        return cast(torch.Tensor, LongDocModel.encode(self, batch))  # a bi-encoder's: one vector per sequence

    def _encode_queries_on_device(self, batch: ChunkBatch) -> torch.Tensor:
        return self.encode_queries(batch.to(self.device))

    def score(self, queries: Sequence[str], texts: Sequence[str], *, batch_size: int, progress=None,
              workers: Sequence[Callable[[ChunkBatch], torch.Tensor]] | None = None,
              tokens: Tokens | None = None) -> Scored:
        if tokens is None:
            with self._stage("tokenize"):
                tokens = self.tokenize(queries, texts)
        query_ids, doc_ids = tokens.query_ids, tokens.doc_ids
        distinct: dict[str, tuple[int, int]] = {}  # query -> (its index among the distinct ones, its first row)
        for row, query in enumerate(queries):
            distinct.setdefault(query, (len(distinct), row))
        which = torch.tensor([distinct[query][0] for query in queries], dtype=torch.long)
        unique = [query_ids[row] for _, row in distinct.values()]
        nothing = np.empty(0, dtype=np.int32)
        query_vectors, _ = self.encode_chunks(
            [nothing] * len(unique), unique, self.query_chunking, self.query_layout, batch_size=batch_size,
            progress=None, workers=workers or [self._encode_queries_on_device])
        windows, mask = self._document_windows(texts, doc_ids, batch_size=batch_size, progress=progress,
                                               workers=workers or [self._encode_on_device])
        with self._stage("aggregate"):
            scores = self.aggregator((windows, query_vectors[:, 0][which.to(windows.device)]), mask).float()
        return Scored(scores, int(tokens.query_cropped.sum()), int(tokens.doc_cropped.sum()))

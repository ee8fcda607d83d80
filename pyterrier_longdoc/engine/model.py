"""LongDocModel: encoder + chunking + aggregator, and its safetensors checkpoints.

The one differentiable scoring path (``LongDocModel.score``) serves inference and training.
"""
from __future__ import annotations

import contextlib
import copy
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from torch import nn

from .batching import BATCHINGS, ChunkBatch, ChunkPlan, run_with_backoff
from .chunking import Chunking, SpecialLayout
from .tokenization import Tokenization
from .config import ModelConfig
from .fast_paths import fast_paths, onednn_linears_faster, supports_onednn_linears, supports_partial_last_layer
from .runtime import Runtime
from .weights import load_folder_weights, write_folder
from ..aggregators.base import Aggregator, Features

if TYPE_CHECKING:
    from transformers import PreTrainedModel


@dataclass
class Tokens:
    """The ids a model reads of (query, document) pairs (``LongDocModel.tokenize``), and which were cropped."""

    query_ids: list[np.ndarray]
    query_cropped: np.ndarray
    doc_ids: list[np.ndarray]
    doc_cropped: np.ndarray


@dataclass
class Scored:
    """Scores of (query, document) pairs and what was cropped to get them."""

    scores: torch.Tensor
    cropped_queries: int
    cropped_docs: int


class ScoringObserver:
    """Callbacks of :meth:`LongDocModel.score`, for profiling (``benchmarks/``): set
    ``model.observer`` to an instance of a subclass. ``stage`` is called after each stage with
    its wall time: ``"tokenize"`` (queries, then documents), ``"plan"``, ``"batch"`` (building one
    batch, with it), ``"encode"`` (one encoder call, with its batch; in worker threads when there
    are several workers) and ``"aggregate"``."""

    def stage(self, name: str, seconds: float, batch: ChunkBatch | None = None) -> None:
        pass


class ObservedStages:
    """The hooks of a :class:`ScoringObserver` (``observer``) around the stages of scoring."""

    observer: ScoringObserver | None = None

    @contextlib.contextmanager
    def _stage(self, name: str, batch: ChunkBatch | None = None):
        observer = self.observer
        if observer is None:
            yield
            return
        start = time.perf_counter()
        try:
            yield
        finally:
            observer.stage(name, time.perf_counter() - start, batch)

    def _observed_batches(self, batches):
        iterator = iter(batches)
        while True:
            with self._stage("batch"):
                batch = next(iterator, None)
            if batch is None:
                return
            yield batch

    def _observed(self, worker: Callable[[ChunkBatch], torch.Tensor]) -> Callable[[ChunkBatch], torch.Tensor]:
        def encode(batch):
            with self._stage("encode", batch):
                return worker(batch)
        return encode if self.observer is not None else worker


class LongDocModel(ObservedStages, nn.Module):
    """A backbone encoder, the chunking it reads documents with, and an aggregator head.

    Engine options (not saved) are its ``runtime``'s (a :class:`Runtime`, the reranker's own
    once attached), also as attributes here: ``batching``, the batch policy (``"length_sorted"``,
    the default, or ``"input_order"``, a baseline); ``partial_last_layer``, compute the last
    encoder layer at inference only at the leading positions the aggregator reads ([CLS]; for
    PARADE-Transformer-Q also the query tokens), on by default where supported;
    ``onednn_linears``, run the encoder's linear layers on oneDNN in fp32 on the CPU at inference
    (True or False; None, the default: on CPUs with AVX-512, where oneDNN's kernels beat MKL's, for
    the encoders tested); see ``fast_paths``. ``observer``, a :class:`ScoringObserver`. ``code_files``:
    the custom code (``trust_remote_code``) its encoder was built with, saved with the model.
    """

    code_files: tuple = ()

    def __init__(self, encoder: PreTrainedModel, tokenizer, aggregator: Aggregator, chunking: Chunking):
        super().__init__()
        self.encoder = encoder
        self.aggregator = aggregator
        self.tokenizer = tokenizer
        aggregator.attach(encoder, tokenizer, chunking)
        if self.reads_last_token and hasattr(encoder.config, "use_cache"):
            encoder.config.use_cache = False  # scoring never generates: no key/value cache
        self.read_with(chunking)
        # encoders without token types (RoBERTa-style) get none, rather than ids they never saw
        self.uses_token_types = getattr(encoder.config, "type_vocab_size", 0) > 1
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        self.runtime = Runtime()
        self.supports_partial_last_layer = aggregator.reads_leading_only and supports_partial_last_layer(encoder)

    # the engine options live in the runtime, which checks them when they are set
    batching = property(lambda self: self.runtime.batching, lambda self, v: setattr(self.runtime, "batching", v))
    onednn_linears = property(lambda self: self.runtime.onednn_linears,
                              lambda self, v: setattr(self.runtime, "onednn_linears", v))

    @property
    def partial_last_layer(self) -> bool:
        """Whether inference computes the last layer at the leading positions only (on, and supported)."""
        return self.runtime.partial_last_layer and self.supports_partial_last_layer

    @partial_last_layer.setter
    def partial_last_layer(self, value: bool) -> None:
        self.runtime.partial_last_layer = value

    @property
    def reads_last_token(self) -> bool:
        """A head on the last token (decoder-only LMs), which reads it at an EOS appended unless told otherwise."""
        return getattr(getattr(self.aggregator, "head", None), "pooling", None) == "last"

    def read_with(self, chunking: Chunking) -> None:
        """Read documents with ``chunking`` (the model's settings, resolved against the encoder:
        ``ModelSettings.chunking``); the layout and the tokenizations follow its prefixes. Fails, leaving
        the model as it was, if its chunks cannot fit the encoder."""
        eos = self.reads_last_token if chunking.append_eos is None else chunking.append_eos
        layout = self.sequence_layout(self.tokenizer, chunking, eos=eos)
        chunking.doc_window(layout)  # fails early if the chunks cannot fit the encoder
        self.chunking, self.layout = chunking, layout
        self.tokenization = Tokenization.shared(self.tokenizer, prefix=chunking.doc_prefix)
        self.query_tokenization = Tokenization.shared(self.tokenizer, prefix=chunking.query_prefix)

    @staticmethod
    def longest_query(tokenizer, chunk_settings: dict) -> int:
        """``max_query_tokens=None``'s query length; a cross-encoder's query shares the sequence with
        the document, so it has none."""
        raise ValueError("max_query_tokens must be a positive integer (None is for bi-encoders, whose query is a "
                         "sequence of its own)")

    @staticmethod
    def sequence_layout(tokenizer, chunking: Chunking, eos: bool) -> SpecialLayout:
        """Where the special tokens and the prefixes go around a chunk's text."""
        return SpecialLayout.from_tokenizer(tokenizer, chunking.query_prefix, chunking.doc_prefix, eos=eos)

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def replica(self, device) -> LongDocModel:
        """A copy for inference on ``device``; it shares the tokenizer and its cache."""
        memo = {id(t): t for t in (self.tokenizer, self.tokenization, self.query_tokenization, self.runtime)}
        return copy.deepcopy(self, memo).to(device).eval()

    def encode(self, batch: ChunkBatch) -> Features:
        """Per-chunk features of one batch (the aggregator decides what it keeps)."""
        # oneDNN's kernel has no autocast rule and no gradient: fp32 inference only
        onednn = (self.runs_onednn_linears and not torch.is_grad_enabled()
                  and not torch.is_autocast_enabled("cpu"))
        with fast_paths(self.encoder, batch.attention_mask, self.last_layer_positions(batch), onednn):
            output = self.encoder(
                input_ids=batch.input_ids,
                attention_mask=batch.attention_mask,
                token_type_ids=batch.token_type_ids if self.uses_token_types else None,
                output_hidden_states=self.aggregator.output_hidden_states,
                **self.aggregator.encoder_inputs(self.encoder, batch),
            )
        return self.aggregator.chunk_features(output, batch)

    @property
    def runs_onednn_linears(self) -> bool:
        """Whether fp32 inference runs the encoder's linear layers on oneDNN (on, or left to this
        CPU's choice, and supported)."""
        wanted = onednn_linears_faster() if self.onednn_linears is None else self.onednn_linears
        return wanted and supports_onednn_linears(self.encoder)

    def last_layer_positions(self, batch: ChunkBatch) -> int | None:
        """How many leading positions the encoder's last layer computes for ``batch``; None: all."""
        # training keeps the full path: the same computation, but dropout draws stay as they were
        if not self.partial_last_layer or self.encoder.training:
            return None
        return self.aggregator.last_layer_positions(batch)

    def chunk_spans(self, text: str) -> list[tuple[int, int]]:
        """The (start, end) document-token spans encoded of ``text``, one per chunk."""
        (ids,), _ = self.tokenization([text], self.chunking.tokens_read(self.layout))
        return self.chunking.spans(len(ids), self.layout)

    def tokenize(self, queries: Sequence[str], texts: Sequence[str]) -> Tokens:
        """The ids this model reads of each query and document (cropped to what it reads); training
        reads each document once an epoch, so in training mode the cache is read, not filled."""
        query_ids, query_cropped = self.query_tokenization(queries, self.chunking.query_tokens_read(), not self.training)
        doc_ids, doc_cropped = self.tokenization(texts, self.chunking.tokens_read(self.layout), not self.training)
        return Tokens(query_ids, query_cropped, doc_ids, doc_cropped)

    def score(self, queries: Sequence[str], texts: Sequence[str], *, batch_size: int, progress=None,
              workers: Sequence[Callable[[ChunkBatch], torch.Tensor]] | None = None,
              tokens: Tokens | None = None) -> Scored:
        """Scores of ``(queries[i], texts[i])``; keeps gradients unless called under no_grad.

        ``workers`` encode batches instead of this model (e.g. replicas on other devices, each
        taking a CPU batch); with several, batches are shared among them in threads. ``tokens``:
        the pairs' ids from :meth:`tokenize`, when they were tokenized ahead (inference does, on
        another thread, while the encoder runs the group before).
        """
        if tokens is None:
            with self._stage("tokenize"):
                tokens = self.tokenize(queries, texts)
        features, mask = self.encode_chunks(tokens.query_ids, tokens.doc_ids, self.chunking, self.layout,
                                             batch_size=batch_size, progress=progress,
                                             workers=workers or [self._encode_on_device])
        with self._stage("aggregate"):
            scores = self.aggregator(features, mask).float()
        return Scored(scores, int(tokens.query_cropped.sum()), int(tokens.doc_cropped.sum()))

    def _encode_on_device(self, batch: ChunkBatch):
        return self.encode(batch.to(self.device))

    def encode_chunks(self, query_ids: Sequence[np.ndarray], doc_ids: Sequence[np.ndarray], chunking: Chunking,
                       layout: SpecialLayout, *, batch_size: int, progress,
                       workers: Sequence[Callable[[ChunkBatch], torch.Tensor]]):
        """The aggregator's chunk features of every (query, chunk) sequence, regrouped per
        document (``[documents, chunks, ...]``, or a tuple of such), and the chunk mask."""
        with self._stage("plan"):
            plan = ChunkPlan.build(query_ids, doc_ids, chunking, layout)
        batches = BATCHINGS[self.batching](plan, query_ids, doc_ids, layout, batch_size, self.pad_id,
                                           self.runtime.max_batch_tokens)
        if self.observer is not None:
            batches = self._observed_batches(batches)
        # progress counts documents: one is done when the last of its chunks is encoded
        remaining = plan.n_chunks.copy()

        def report(done) -> None:
            if progress is not None:
                docs = plan.doc[np.concatenate([index for index, _ in done])]
                np.subtract.at(remaining, docs, 1)
                progress.update(int((remaining[np.unique(docs)] == 0).sum()))

        runs = [self._observed(_owning(worker)) for worker in workers]
        # the batch size that fitted is learned per worker; this model's own encoder keeps it across
        # the groups of documents of one inference call
        keys = [self if getattr(worker, "__self__", None) is self else worker for worker in workers]

        pieces: list[tuple[np.ndarray, torch.Tensor]] = []
        if len(runs) == 1:
            for batch in batches:
                done = run_with_backoff(batch, runs[0], keys[0])
                pieces += done
                report(done)
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(runs)) as pool:
                futures = [pool.submit(run_with_backoff, batch, runs[k % len(runs)], keys[k % len(runs)])
                           for k, batch in enumerate(batches)]
                for future in futures:
                    done = future.result()
                    pieces += [(index, features.to(self.device)) for index, features in done]
                    report(done)
        return _per_document(pieces, plan, len(doc_ids))

    def save_pretrained(self, path: str | os.PathLike, config: ModelConfig) -> None:
        """Writes the model's folder (``weights.write_folder``): weights, tokenizer, ``config.json`` last."""
        write_folder(self, Path(path), config, self.code_files)

    def weights_changed(self) -> None:
        """Called after the weights were changed in place (model selection restoring the best model):
        an engine that keeps what it computed from them (the bi-encoder's window embeddings) forgets it."""

    def load_weights(self, path: Path, sha256: str | None = None) -> None:
        """Loads ``model.safetensors`` of ``path``; with ``sha256``, only if its checksum matches."""
        load_folder_weights(self, path, sha256)


def _owning(worker: Callable[[ChunkBatch], torch.Tensor]) -> Callable[[ChunkBatch], torch.Tensor]:
    """Features that own their memory: a view such as ``last_hidden_state[:, 0]`` would keep the
    whole batch's hidden states alive until the group of documents is aggregated."""
    def own(features):
        if isinstance(features, tuple):
            return tuple(own(f) for f in features)
        return features.clone() if features._base is not None else features

    return lambda batch: own(worker(batch))


def _concat_padded(parts: list[torch.Tensor]) -> torch.Tensor:
    """``torch.cat`` of ``[n_i, ...]`` tensors whose trailing sizes may differ: zero-padded to the largest."""
    shape = tuple(max(sizes) for sizes in zip(*(p.shape[1:] for p in parts)))
    if all(p.shape[1:] == shape for p in parts):
        return torch.cat(parts)
    out = parts[0].new_zeros((sum(len(p) for p in parts), *shape))
    start = 0
    for p in parts:
        out[(slice(start, start + len(p)), *(slice(0, size) for size in p.shape[1:]))] = p
        start += len(p)
    return out


def _per_document(pieces: list[tuple[np.ndarray, torch.Tensor]], plan: ChunkPlan, n_docs: int):
    """The encoded batches' features back in plan order and regrouped per document
    (``[documents, chunks, ...]``, padding chunks masked), and the chunk mask."""
    index = np.concatenate([i for i, _ in pieces])
    outputs = [f for _, f in pieces]
    single = isinstance(outputs[0], torch.Tensor)
    columns = [_concat_padded(list(c)) for c in ([outputs] if single else zip(*outputs))]
    device = columns[0].device
    order = torch.from_numpy(np.argsort(index, kind="stable")).to(device)

    # regroup per document: [documents, chunks, ...], padding chunks masked
    doc = torch.from_numpy(plan.doc).to(device)
    position = torch.from_numpy(plan.position).to(device)
    n_chunks = int(plan.n_chunks.max())
    grouped = []
    for features in columns:
        features = features[order]  # back in plan order
        if features.is_floating_point():
            features = features.float()
        empty = features.new_zeros((n_docs, n_chunks, *features.shape[1:]))
        grouped.append(empty.index_put((doc, position), features))
    mask = torch.zeros((n_docs, n_chunks), dtype=torch.bool, device=device)
    mask[doc, position] = True
    return (grouped[0] if single else tuple(grouped)), mask


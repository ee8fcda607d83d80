"""Scoring documents: ``Scoring``, the reranker's collaborator that gives a model's differentiable scores of
(query, text) pairs, and inference over them in groups of documents, with the checks and reports every call
gets."""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from ._parameters import ModelParameters
from ._placement import Placement
from .engine.batching import forget_fitted_batch_size
from .engine.model import LongDocModel, Scored
from .engine.progress import progress_bar
from .engine.runtime import Runtime, release_freed_memory
from ._warn import CroppingWarning, warn

# documents scored per call of the engine: bounds memory for frames of any size
_GROUP_SIZE = 2048
# the first group's size; each next one doubles, up to _GROUP_SIZE: the encoder starts after a
# small first group is tokenized, and later groups are tokenized while it runs. 64 documents fill a
# GPU batch of 256 windows from the start, and a frame of up to 64 is one group, one aggregator call
# (groups of 8, 16, 24 made 48 documents three calls: PARADE-Transformer at 1.2-1.3x MaxP's time on an H100)
_FIRST_GROUP = 64


def pipeline_groups(n: int) -> list[tuple[int, int]]:
    """The (start, end) rows of each group that inference scores in one engine call."""
    groups, start, size = [], 0, min(_FIRST_GROUP, _GROUP_SIZE)
    while start < n:
        groups.append((start, min(n, start + size)))
        start, size = start + size, min(2 * size, _GROUP_SIZE)
    return groups


class Scoring:
    """How a reranker scores: its engine (``model``) on its ``Placement``, with its ``runtime``'s batch size
    and progress bar, after the settings that wait for a partner are applied (``parameters``). ``owner``:
    the model class's name (progress bar, warnings); ``crops``: reading the start only is the model's
    definition (FirstP: no cropping report unless ``warn_cropping=True``)."""

    def __init__(self, owner: str, model: LongDocModel, runtime: Runtime, placement: Placement,
                 parameters: ModelParameters, *, crops: bool):
        self.owner, self.model, self.runtime, self.placement = owner, model, runtime, placement
        self.parameters, self.crops = parameters, crops

    def chunk_spans(self, text: str) -> list[tuple[int, int]]:
        """What the model reads of ``text``: the (start, end) spans of the chunks it encodes, in
        tokens of the text without special tokens (end exclusive), after every cap."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        self.parameters.settle()
        return self.model.chunk_spans(text)

    def autocast(self) -> contextlib.AbstractContextManager:
        """The autocast context of a call on the runtime's device and dtype (none for fp32)."""
        dtype = self.runtime.autocast_dtype()
        if dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.runtime.available_devices()[0].type, dtype=dtype)

    def score_batch(self, queries: list[str], texts: list[str], progress=None, workers=None, tokens=None) -> Scored:
        """Differentiable scores of ``(queries[i], texts[i])`` (a tensor on the model's device);
        ``tokens``: their ids, if tokenized ahead (``LongDocModel.tokenize``)."""
        self.parameters.settle()
        self.placement.place_weights()
        with self.autocast():
            return self.model.score(queries, texts, batch_size=self.runtime.batch_size, progress=progress,
                                    workers=workers, tokens=tokens)

    def score_texts(self, queries: list[str], texts: list[str], context: object) -> np.ndarray:
        """The scores of the pairs ``(queries[i], texts[i])`` for inference (eval mode, no
        gradients, in groups of documents), as a float64 array; an error names the model
        (``context``, by its repr) and the first pairs whose score is not finite."""
        scores = self.inference_scores(queries, texts)
        check_finite(context, scores, lambda i: f"pair {i} (query {queries[i][:50]!r})")
        return scores

    def inference_scores(self, queries: list[str], texts: list[str]) -> np.ndarray:
        """``score_texts`` without the finite-score check (``transform`` names rows instead of pairs)."""
        model = self.model
        model.eval()
        self.placement.place_weights()  # before the replicas copy the weights
        workers = self.placement.workers(self.autocast)
        forget_fitted_batch_size(model)  # a batch size learned on an out-of-memory error holds for one call
        scores: np.ndarray = np.empty(len(texts), dtype=np.float64)
        cropped_queries = cropped_docs = 0
        progress = progress_bar(self.runtime.verbose, total=len(texts), desc=self.owner, unit="doc",
                                disable=not texts)
        groups = pipeline_groups(len(texts))
        # one thread tokenizes the next group while the encoder runs this one: on a GPU the
        # tokenizer, not the encoder, would otherwise be what the device waits for
        with torch.inference_mode(), progress, ThreadPoolExecutor(1, thread_name_prefix="tokenize-ahead") as ahead:
            def tokenized(k: int):
                start, end = groups[k]
                return ahead.submit(model.tokenize, queries[start:end], texts[start:end])

            pending = tokenized(0) if groups else None
            for k, (start, end) in enumerate(groups):
                assert pending is not None  # submitted for every group
                with model._stage("tokenize"):  # the time the encoder waits for the tokenizer
                    tokens = pending.result()
                pending = tokenized(k + 1) if k + 1 < len(groups) else None
                scored = self.score_batch(queries[start:end], texts[start:end], progress, workers, tokens)
                scores[start:end] = scored.scores.cpu().numpy()
                cropped_queries += scored.cropped_queries
                cropped_docs += scored.cropped_docs
                del scored
                if end - start == _GROUP_SIZE and end < len(texts):
                    release_freed_memory()  # the next group reuses memory the system holds, not the allocator
        self._report_cropping(cropped_queries, cropped_docs, len(texts))
        return scores

    def _report_cropping(self, queries: int, docs: int, total: int) -> None:
        # say what was cut, once per call, rather than dropping it silently
        chunking, crops = self.model.chunking, self.crops
        warn_cropping = self.runtime.warn_cropping
        parts = []
        if docs and (warn_cropping if warn_cropping is not None else not crops):
            read = chunking.tokens_read(self.model.layout)
            # the setting that reads more: FirstP's start is its definition; a cap on the first chunks, max_chunks
            setting = None if crops else "max_chunks" if read < chunking.max_doc_tokens else "max_doc_tokens"
            more = f" ({setting}= reads more; warn_cropping=False leaves this report out)" if setting else ""
            parts.append(f"{docs} of {total} documents are longer than the {read} tokens it reads and were "
                         f"cropped{more}")
        if queries:
            parts.append(f"{queries} of {total} queries were cropped to max_query_tokens={chunking.max_query_tokens}")
        if parts:
            warn(f"{self.owner}: " + "; ".join(parts), CroppingWarning)


def check_finite(context: object, scores: np.ndarray, label: Callable[[int], str]) -> None:
    """A diverged model gives NaN or infinite scores: say so (``context``: the model, by its repr), rather
    than rank them."""
    bad = np.flatnonzero(~np.isfinite(scores))
    if len(bad):
        examples = ", ".join(label(int(i)) for i in bad[:3])
        raise ValueError(f"{context!r} gave {len(bad)} non-finite scores (NaN or inf) of {len(scores)}, e.g. "
                         f"{examples}: the model's weights have diverged or are corrupt")

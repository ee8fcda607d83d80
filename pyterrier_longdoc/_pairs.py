"""``predict`` and ``rank`` over plain (query, document) pairs, with the arguments, meaning and
return types of sentence-transformers' ``CrossEncoder.predict`` and ``CrossEncoder.rank``.

The one difference is the default activation: a model's scores are logits (what its head
gives), while ``CrossEncoder`` applies a sigmoid to one-label models unless told
``activation_fn=torch.nn.Identity()``; pass ``activation_fn=torch.nn.Sigmoid()`` here to get
CrossEncoder's numbers.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch

from ._placement import Placement
from ._scoring import Scoring
from .engine.frames import column_texts
from .engine.runtime import Runtime


def _pair_list(pairs) -> tuple[list, bool]:
    """``(pairs, was_one_pair)``, read as CrossEncoder reads its input: a list, tuple or 1-D array
    of strings is one pair; a list (or 2-D array, or other iterable) of them is a batch."""
    if isinstance(pairs, np.ndarray):
        pairs = pairs.tolist()
    if isinstance(pairs, (tuple, list)) and pairs and isinstance(pairs[0], str):
        if len(pairs) != 2 or not all(isinstance(x, str) for x in pairs):
            strings = f"{len(pairs)} string{'s' if len(pairs) != 1 else ''}"
            raise TypeError(f"predict takes (query, document) pairs of strings; got {_shown(pairs)}, which is "
                            f"{strings}, not a pair (a batch is a list of pairs)")
        return [pairs], True
    if isinstance(pairs, str):
        raise TypeError(f"predict takes (query, document) pairs of strings; got one string {_shown(pairs)}")
    pairs = list(pairs)
    bad = [i for i, p in enumerate(pairs) if not (isinstance(p, (tuple, list)) and len(p) == 2
                                                  and all(isinstance(x, str) for x in p))]
    if bad:
        raise TypeError(f"predict takes (query, document) pairs of strings; pair {bad[0]} is {_shown(pairs[bad[0]])}")
    return pairs, False


def _shown(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class CrossEncoderPairs:
    """sentence-transformers' ``CrossEncoder.predict`` and ``CrossEncoder.rank`` for a reranker, which holds
    one: its ``Scoring``, its ``Placement`` (``device=`` moves the model) and its ``Runtime`` (batch size and
    progress bar for one call); ``context``: the model, named by its repr in errors."""

    def __init__(self, scoring: Scoring, placement: Placement, runtime: Runtime, context: object):
        self.scoring, self.placement, self.runtime, self.context = scoring, placement, runtime, context

    @contextlib.contextmanager
    def _call_options(self, batch_size: int | None, show_progress_bar: bool | None, device=None, pool=None):
        """The runtime's batch size and progress bar, changed for one call; ``device`` moves the
        model there (as CrossEncoder does: later calls run there too)."""
        if pool is not None:
            raise ValueError("pool: a model shares batches among devices itself: give them as device=[...] "
                             "(start_multi_process_pool's pools are sentence-transformers' own)")
        if device is not None:
            self.placement.set(device=device)
        runtime = self.runtime
        saved = runtime.batch_size, runtime.verbose
        if batch_size is not None:
            runtime.batch_size = batch_size  # checked by the runtime
        if show_progress_bar is not None:
            runtime.verbose = bool(show_progress_bar)
        try:
            yield
        finally:
            runtime.batch_size, runtime.verbose = saved

    def predict(self, inputs, batch_size: int | None = None, show_progress_bar: bool | None = None,
                activation_fn: Callable[[torch.Tensor], torch.Tensor] | None = None, apply_softmax: bool = False,
                convert_to_numpy: bool = True, convert_to_tensor: bool = False, *, prompt_name: str | None = None,
                prompt: str | None = None, device=None, pool=None, chunk_size: int | None = None):
        """Scores of ``(query, document)`` pairs, as ``CrossEncoder.predict`` gives them.

        The scores are **logits**: the model's head, unchanged (``CrossEncoder`` applies a sigmoid
        to a one-label model by default; ``activation_fn=torch.nn.Sigmoid()`` gives its numbers).

        Args:
            inputs: a list of ``(query, document)`` tuples or lists of strings (or a 2-D array of
                them), or one pair (the argument's name in CrossEncoder.predict, sentence-transformers 6).
            batch_size: (query, chunk) sequences per encoder call; default the model's ``batch_size``.
            show_progress_bar: a progress bar for this call; default the model's ``verbose``.
            activation_fn: applied to the scores (a tensor), e.g. ``torch.nn.Sigmoid()``.
            apply_softmax: accepted as CrossEncoder takes it; it applies to several labels only,
                and a model gives one score per pair, so it changes nothing.
            convert_to_numpy: a float32 array; otherwise a list of 0-d tensors.
            convert_to_tensor: one float32 tensor (overrides ``convert_to_numpy``).
            prompt_name, prompt: as CrossEncoder: ``prompt`` goes before each query; the model has no
                named prompts, so a ``prompt_name`` is an error naming it.
            device: a device, or a list of devices that share the batches; the model moves there,
                as CrossEncoder's does. ``pool`` (sentence-transformers' process pools) is refused:
                give the devices instead. ``chunk_size`` is accepted and has no effect.

        Returns:
            One score per pair; for one pair (not in a list), that score alone (a float32 scalar).
        """
        pairs, one = _pair_list(inputs)
        prompt = _resolved_prompt(prompt, prompt_name)
        frame = pd.DataFrame(pairs, columns=["query", "text"], dtype=object)
        if prompt:
            frame["query"] = prompt + frame["query"]
        context = self.context
        with self._call_options(batch_size, show_progress_bar, device, pool):
            raw = self.scoring.score_texts(column_texts(frame, "query", context), column_texts(frame, "text", context),
                                           context) if pairs else np.empty(0)
        scores = torch.from_numpy(raw.astype(np.float32))
        if activation_fn is not None:
            scores = activation_fn(scores)
        # apply_softmax: CrossEncoder applies it to models with several labels only; here every
        # pair has one score, so it changes nothing
        result: torch.Tensor | np.ndarray | list
        if convert_to_tensor:
            result = scores
        elif convert_to_numpy:
            result = scores.numpy()
        else:
            result = list(scores)
        return result[0] if one else result

    def rank(self, query: str, documents: list[str], top_k: int | None = None, return_documents: bool = False,
             batch_size: int | None = None, show_progress_bar: bool | None = None,
             activation_fn: Callable[[torch.Tensor], torch.Tensor] | None = None, *, prompt_name: str | None = None,
             prompt: str | None = None, device=None, pool=None, chunk_size: int | None = None) -> list[dict]:
        """The documents ordered by score (logits, see :meth:`predict`), as ``CrossEncoder.rank``
        gives them: dicts with ``corpus_id`` (the position in ``documents``), ``score`` (a float)
        and, with ``return_documents``, ``text``; the ``top_k`` best only, when given; ties keep
        the documents' order. ``prompt_name``, ``prompt``, ``device``, ``pool`` and ``chunk_size``
        as for :meth:`predict`."""
        if not isinstance(query, str):
            raise TypeError(f"rank takes one query (a str), got {type(query).__name__}")
        scores = self.predict([(query, d) for d in documents], batch_size=batch_size,
                              show_progress_bar=show_progress_bar, activation_fn=activation_fn,
                              prompt_name=prompt_name, prompt=prompt, device=device, pool=pool,
                              chunk_size=chunk_size).tolist()
        results = [{"corpus_id": i, "score": score, **({"text": documents[i]} if return_documents else {})}
                   for i, score in enumerate(scores)]
        return sorted(results, key=lambda r: r["score"], reverse=True)[:top_k]


def _resolved_prompt(prompt: str | None, prompt_name: str | None) -> str | None:
    """CrossEncoder's rule: ``prompt`` wins; a ``prompt_name`` must be one of the model's prompts (it has none)."""
    if prompt is not None and not isinstance(prompt, str):
        raise TypeError(f"prompt must be a string, got {type(prompt).__name__}")
    if prompt is None and prompt_name is not None:
        raise ValueError(f"prompt_name {prompt_name!r}: the model has no named prompts (its query and document "
                         "prefixes are part of its settings); pass the text as prompt=...")
    return prompt

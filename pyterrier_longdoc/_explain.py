"""Where a window-based model looked: per document, every window's score (FirstP, MaxP, SumP, the
k-max average, LongP's one window, the bi-encoders' similarities) or attention weight (PARADE-Attn),
and the window that counts most, with its token span and text.

The explanation comes from ``transform``'s own scoring call: the aggregator records the
``window_weights`` its ``forward`` scores from for the explanation its thread is gathering, so the
scores are ``transform``'s and the windows the ones the model encoded, and other threads scoring
with the same model at the same time change nothing.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np
import pandas as pd

from .aggregators.base import recorded_window_weights
from .engine.frames import column_texts, input_frame
from .engine.model import LongDocModel


class Explained(Protocol):
    """What explaining a model reads of it: its engine, its text column, its settings applied, its transform."""

    model: LongDocModel

    @property
    def text_field(self) -> str: ...

    def settle_parameters(self) -> None: ...

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame: ...

# the input rows' order, through transform's sort by qid and rank
_ROW = "_explained_row"
COLUMNS = ("windows", "best_window", "best_start", "best_end", "best_text")


def explain(reranker: Explained, frame: pd.DataFrame) -> pd.DataFrame:
    """``reranker.transform(frame)`` with, per row, the windows the model read (``windows``: their
    (start, end) document-token spans, end exclusive, as ``chunk_spans`` gives them), every window's
    score (``window_scores``) or attention weight (``window_attention``), and the window that
    counts most: ``best_window`` (its index), ``best_start``, ``best_end`` and ``best_text`` (its
    tokens decoded, so lower-cased by an uncased tokenizer)."""
    aggregator = reranker.model.aggregator
    column = aggregator.window_weights_column
    if column is None:
        raise TypeError(f"{type(reranker).__name__}.explain: its aggregation ({type(aggregator).__name__}) mixes "
                        "the windows, so no window has a weight of its own; FirstP, MaxP, SumP, KMaxAvgP, LongP, "
                        "their LLM and bi-encoder forms and ParadeAttn explain their windows")
    input_frame(frame, ["qid", "query", "docno", reranker.text_field], reranker)
    reranker.settle_parameters()  # settings that do not work together: an error, not a placeholder run
    with recorded_window_weights() as weights:  # this thread's calls only: explain runs beside other threads' calls
        scored = reranker.transform(frame.assign(**{_ROW: np.arange(len(frame))}))
    if len(weights) != len(frame):  # one aggregated row per document of the frame, or the rows would not match
        raise RuntimeError(f"{type(reranker).__name__}.explain: {len(weights)} documents aggregated, {len(frame)} given")
    spans, texts = _windows(reranker, column_texts(frame, reranker.text_field, reranker), weights)
    order = scored.pop(_ROW).to_numpy()
    best = [int(np.argmax(w)) for w in weights]
    explained = pd.DataFrame({
        "windows": spans, column: [w.tolist() for w in weights], "best_window": best,
        "best_start": [s[b][0] for s, b in zip(spans, best)], "best_end": [s[b][1] for s, b in zip(spans, best)],
        "best_text": [t[b] for t, b in zip(texts, best)],
    }, index=range(len(frame)), columns=[COLUMNS[0], column, *COLUMNS[1:]])
    return pd.concat([scored, explained.iloc[order].reset_index(drop=True)], axis=1)


def _windows(reranker: Explained, texts: list[str], weights: list[np.ndarray]) -> tuple[list, list]:
    """Each document's window spans and texts, from the model's own tokenization and chunking."""
    model = reranker.model
    ids, _ = model.tokenization(texts, model.chunking.tokens_read(model.layout)) if texts else ([], None)
    spans = [model.chunking.spans(len(doc), model.layout) for doc in ids]
    if [len(s) for s in spans] != [len(w) for w in weights]:  # the engine's windows and these must be the same
        raise RuntimeError(f"{type(reranker).__name__}.explain: the windows scored differ from the chunk spans")
    decode = model.tokenizer.decode
    return spans, [[decode(doc[start:end].tolist()).strip() for start, end in s] for doc, s in zip(ids, spans)]

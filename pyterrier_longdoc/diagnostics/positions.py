"""Where do relevant passages sit in relevant documents? (positional bias)

Boytsov et al., "Understanding Performance of Long-Document Ranking Models through Comprehensive
Evaluation and Leaderboarding" (Figure 1, Table 6): in MS MARCO and TREC DL documents the first
relevant passage mostly starts within the first 512 tokens, which is why FirstP is a strong
baseline there and why long-document models look no better. This module tabulates the start and
end of the first relevant passage and the relevant document's length, bucketed in chunks of
``chunk_size`` tokens, and plots them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..data._tokens import char_to_token_span, resolve_tokenizer

_TOKEN_COLUMNS = ["token_start", "token_end", "doc_tokens"]
_SERIES = {"start": "first relevant passage: start", "end": "first relevant passage: end", "length": "relevant document length"}


def span_positions(
    spans: pd.DataFrame, documents: pd.DataFrame | None = None, *, tokenizer: Any = None, text_field: str = "text"
) -> pd.DataFrame:
    """``spans`` with token offsets: ``token_start, token_end`` (end exclusive) and ``doc_tokens``.

    Columns already present are kept (e.g. ``FarRelevantCollection.positions``); missing ones are
    computed from ``char_start, char_end`` and ``documents`` (``docno, text``), tokenizing each
    document once. Rows whose char offsets are missing (unmatched passages) are dropped.
    """
    if all(c in spans.columns for c in _TOKEN_COLUMNS):
        return spans.copy()
    if documents is None:
        raise ValueError(f"spans lack {_TOKEN_COLUMNS}; pass documents (docno, {text_field}) to compute them")
    has_tokens = "token_start" in spans.columns and "token_end" in spans.columns
    needed = ["docno"] + ([] if has_tokens else ["char_start", "char_end"])
    missing = [c for c in needed if c not in spans.columns]
    if missing:
        raise ValueError(f"spans need columns {needed}; missing {missing}")
    out = spans.dropna(subset=needed).copy()
    texts = dict(zip(documents["docno"].astype(str), documents[text_field]))
    unknown = set(out["docno"].astype(str)) - texts.keys()
    if unknown:
        raise ValueError(f"{len(unknown)} docnos of spans are not in documents, e.g. {sorted(unknown)[:3]}")
    tok = resolve_tokenizer(tokenizer)
    token_spans = {docno: tok.spans(texts[docno]) for docno in out["docno"].astype(str).unique()}
    docnos = out["docno"].astype(str)
    out["doc_tokens"] = [len(token_spans[d]) for d in docnos]
    if not has_tokens:
        converted = [
            char_to_token_span(token_spans[d], int(s), int(e)) for d, s, e in zip(docnos, out["char_start"], out["char_end"])
        ]
        out["token_start"] = [s for s, _ in converted]
        out["token_end"] = [e for _, e in converted]
    return out


def positional_bias(
    spans: pd.DataFrame,
    documents: pd.DataFrame | None = None,
    *,
    tokenizer: Any = None,
    chunk_size: int = 512,
    max_chunks: int | None = None,
    text_field: str = "text",
) -> pd.DataFrame:
    """Distribution of the first relevant passage's start / end and of relevant document lengths.

    Boytsov et al. (2022/2024), Figure 1 and Table 6. ``spans`` holds one row per relevant passage
    (``docno`` and, when given, ``qid``; offsets as in :func:`span_positions`). For each
    (query, document) pair the first passage (smallest start) is kept. Each quantity is bucketed
    by the chunk holding its token: the first token (start), the last token (end) and the
    document's last token (length), so a 512-token document is in chunk 0. ``max_chunks`` merges
    the tail into a last ``"N+"`` bucket.

    Returns one row per chunk: ``chunk, tokens, start_count, start_share, end_count, end_share,
    length_count, length_share`` (shares of the (query, document) pairs).
    """
    if chunk_size < 1 or (max_chunks is not None and max_chunks < 1):
        raise ValueError("chunk_size and max_chunks must be >= 1")
    positions = span_positions(spans, documents, tokenizer=tokenizer, text_field=text_field)
    if positions.empty:
        raise ValueError("no relevant span to analyse")
    keys = ["qid", "docno"] if "qid" in positions.columns else ["docno"]
    first = positions.sort_values(keys + ["token_start", "token_end"], kind="stable").groupby(keys, sort=False).head(1)
    start = first["token_start"].to_numpy(dtype=np.int64)
    last = np.maximum(first["token_end"].to_numpy(dtype=np.int64) - 1, start)  # empty span: its start
    doc_last = np.maximum(first["doc_tokens"].to_numpy(dtype=np.int64) - 1, 0)
    buckets = {name: values // chunk_size for name, values in (("start", start), ("end", last), ("length", doc_last))}
    n_chunks = int(max(b.max() for b in buckets.values())) + 1 if max_chunks is None else max_chunks

    table = pd.DataFrame({"chunk": np.arange(n_chunks), "tokens": _bucket_labels(n_chunks, chunk_size, max_chunks)})
    for name, bucket in buckets.items():
        counts = np.bincount(np.minimum(bucket, n_chunks - 1), minlength=n_chunks)
        table[f"{name}_count"] = counts
        table[f"{name}_share"] = counts / len(first)
    return table


def _bucket_labels(n_chunks: int, chunk_size: int, max_chunks: int | None) -> list[str]:
    labels = [f"{c * chunk_size}-{(c + 1) * chunk_size - 1}" for c in range(n_chunks)]
    if max_chunks is not None:
        labels[-1] = f"{(n_chunks - 1) * chunk_size}+"  # the merged tail
    return labels


def plot_positional_bias(
    table: pd.DataFrame, path: str | os.PathLike, *, title: str | None = None, dpi: int = 120
) -> Path:
    """Grouped bar chart of :func:`positional_bias` (Boytsov et al., Figure 1) saved as PNG.

    Uses a bare Agg canvas rather than pyplot, so no display is needed and the caller's
    matplotlib backend and global figure state are left alone.
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    missing = [f"{name}_share" for name in _SERIES if f"{name}_share" not in table.columns] + (
        [] if "tokens" in table.columns else ["tokens"]
    )
    if missing:
        raise ValueError(f"table is not a positional_bias table; missing {missing}")
    fig = Figure(figsize=(max(6.0, 1.2 * len(table)), 4.0))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    x = np.arange(len(table))
    width = 0.8 / len(_SERIES)
    for i, (name, label) in enumerate(_SERIES.items()):
        ax.bar(x + (i - (len(_SERIES) - 1) / 2) * width, table[f"{name}_share"], width, label=label)
    ax.set_xticks(x, table["tokens"], rotation=30, ha="right")
    ax.set_xlabel("token position / length")
    ax.set_ylabel("share of (query, relevant document) pairs")
    ax.set_title(title or "Positional bias of relevant passages")
    ax.legend()
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=dpi)
    return path


# Boytsov et al., ECIR 2024 online appendix, Table 2: "Distribution of start/end positions of relevant
# passages inside documents (chunks size is 477 BERT tokens)", in percent; the first relevant passage
# of each relevant document. Read from report/ECIR_2024__Understanding_performance_of_long_document_
# ranking_models_through_comprehensive_evaluation_and_leaderboarding__Appendix_.pdf in
# github.com/searchivarius/long_doc_rank_model_analysis_v2, commit aedc980 (2023-10-15).
_PUBLISHED_POSITIONS = (  # chunk, MS MARCO dev start, end, TREC DL 2019 (FIRA) start, end
    ("1", 85.9, 71.0, 83.8, 76.4),
    ("2", 9.1, 14.9, 9.9, 15.3),
    ("3", 2.6, 6.1, 2.3, 3.9),
    ("4", 1.2, 3.0, 2.2, 2.2),
    ("5", 0.6, 1.4, 0.7, 0.9),
    ("6", 0.6, 1.2, 0.4, 0.5),
    ("6+", 0.1, 2.5, 0.7, 0.7),
)
PUBLISHED_POSITIONS_SOURCE = (
    "Boytsov et al., 'Understanding Performance of Long-Document Ranking Models through Comprehensive "
    "Evaluation and Leaderboarding', ECIR 2024 online appendix, Table 2 (github.com/searchivarius/"
    "long_doc_rank_model_analysis_v2, report/, commit aedc980)")


def published_positions() -> pd.DataFrame:
    """Where the first relevant passage of a relevant document starts and ends in two real
    collections, as published: per chunk of 477 BERT tokens (what a 512-token input holds next to a
    32-token query), the share in percent on the MS MARCO v1 document dev set (passages located by
    approximate string matching) and on TREC DL 2019 (FIRA's crowd-sourced passage annotations).

    The columns are ``chunk`` (1 is what FirstP reads), ``tokens`` and one per (collection, start
    or end); ``attrs["source"]`` names the table. Columns sum to 100 up to the paper's rounding."""
    table = pd.DataFrame(_PUBLISHED_POSITIONS, columns=[
        "chunk", "MS MARCO dev: start %", "MS MARCO dev: end %", "TREC DL 2019 (FIRA): start %",
        "TREC DL 2019 (FIRA): end %"])
    table.insert(1, "tokens", [f"{477 * i}-{477 * (i + 1) - 1}" for i in range(6)] + [f"{477 * 6}+"])
    table.attrs["source"] = PUBLISHED_POSITIONS_SOURCE
    return table

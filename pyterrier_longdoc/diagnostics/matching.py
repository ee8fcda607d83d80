"""Locate judged passages inside documents that have no passage offsets.

Positional analyses (Boytsov et al., "Understanding Performance of Long-Document Ranking Models
through Comprehensive Evaluation and Leaderboarding", Figure 1 / Table 6) need where a relevant
passage sits in its document, but collections such as MS MARCO documents only ship passage-level
judgements whose text differs slightly from the document's (other crawl, whitespace, edits). So
matching is approximate and word-level: a diagonal vote finds the region of the document that
shares most words with the passage in order, then ``difflib.SequenceMatcher`` aligns the passage
with that region only. Both steps are linear-ish in the document length, so a 1,500-token document
costs about a millisecond instead of the quadratic full alignment.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from difflib import SequenceMatcher

import numpy as np
import pandas as pd

from ..engine.frames import require_frame

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class PassageMatch:
    """Where a passage was found: ``document[char_start:char_end]`` and the share of its words matched."""

    char_start: int
    char_end: int
    matched_fraction: float


@dataclass
class PassageMatches:
    """Result of :func:`match_passages`: the input rows with ``char_start, char_end,
    matched_fraction, matched`` (offsets ``<NA>`` when not matched) and the match rate."""

    matches: pd.DataFrame
    match_rate: float


def _words(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Lower-cased words and their char spans: matching ignores case, punctuation and spacing."""
    found = list(_WORD.finditer(text))
    return [m.group().lower() for m in found], [m.span() for m in found]


def _best_diagonal(doc: list[str], passage: list[str], band: int) -> int:
    """Doc word index where the passage most likely starts: the densest band of ``i - j``
    offsets over word pairs ``doc[i] == passage[j]`` (insertions shift the offset by a few)."""
    where = defaultdict(list)
    for j, word in enumerate(passage):
        where[word].append(j)
    offsets = [i - j for i, word in enumerate(doc) for j in where.get(word, ())]
    if not offsets:
        return -1
    shift = len(passage)  # offsets start at -(len(passage) - 1)
    votes = np.bincount(np.asarray(offsets) + shift)
    in_band = np.convolve(votes, np.ones(band, dtype=np.int64))[band - 1 :]  # votes in [d, d + band)
    return int(np.argmax(in_band)) - shift


def match_passage(document: str, passage: str, *, threshold: float = 0.7) -> PassageMatch | None:
    """Approximate location of ``passage`` in ``document``, or None below ``threshold``.

    ``matched_fraction`` is the share of the passage's words aligned (in order) with the document
    region; edges missing from the alignment are extended by the unmatched passage words, which
    assumes substitutions there, so offsets are approximate when the passage was edited at its ends.
    """
    doc_words, doc_spans = _words(document)
    words, _ = _words(passage)
    if not doc_words or not words:
        return None
    band = max(5, len(words) // 5)  # tolerated drift from insertions / deletions
    diagonal = _best_diagonal(doc_words, words, band)
    lo, hi = max(0, diagonal - band), min(len(doc_words), diagonal + len(words) + 2 * band)
    blocks = [b for b in SequenceMatcher(None, doc_words[lo:hi], words, autojunk=False).get_matching_blocks() if b.size]
    if not blocks:
        return None
    main = max(blocks, key=lambda b: b.size)
    # drop stray common words aligned far off the main diagonal
    blocks = [b for b in blocks if abs((b.a - b.b) - (main.a - main.b)) <= band]
    fraction = sum(b.size for b in blocks) / len(words)
    if fraction < threshold:
        return None
    first, last = blocks[0], blocks[-1]
    start = max(0, lo + first.a - first.b)
    end = min(len(doc_words), lo + last.a + last.size + (len(words) - last.b - last.size))
    return PassageMatch(doc_spans[start][0], doc_spans[end - 1][1], fraction)


def match_passages(
    documents: pd.DataFrame,
    pairs: pd.DataFrame,
    *,
    threshold: float = 0.7,
    text_field: str = "text",
    passage_field: str = "passage",
) -> PassageMatches:
    """Match every ``(docno, passage)`` row of ``pairs`` against ``documents`` (``docno, text``).

    Other columns of ``pairs`` (``qid``, a passage id, ...) are kept, so the result feeds
    :func:`~pyterrier_longdoc.diagnostics.positional_bias` with ``documents``.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    for name, frame, columns in (("documents", documents, ["docno", text_field]), ("pairs", pairs, ["docno", passage_field])):
        require_frame(frame, name, columns)
    texts = dict(zip(documents["docno"].astype(str), documents[text_field]))
    found = [
        match_passage(texts[d], p, threshold=threshold) if d in texts else None
        for d, p in zip(pairs["docno"].astype(str), pairs[passage_field])
    ]
    out = pairs.copy()
    out["char_start"] = pd.array([m.char_start if m else None for m in found], dtype="Int64")
    out["char_end"] = pd.array([m.char_end if m else None for m in found], dtype="Int64")
    out["matched_fraction"] = [m.matched_fraction if m else 0.0 for m in found]
    out["matched"] = [m is not None for m in found]
    return PassageMatches(out, float(out["matched"].mean()) if len(out) else 0.0)

"""Position de-biasing of training data: move each relevant passage to a random place, or
shuffle each document's segments where positions are unknown.

Relevant passages of standard collections sit mostly near the start of their documents
(Boytsov et al.), so a model can learn "early means relevant". When passage positions are
known (e.g. :class:`~pyterrier_longdoc.diagnostics.FarRelevantCollection` ``positions`` or
:class:`~pyterrier_longdoc.data.synthetic.SyntheticCollection` ``answers``), these functions cut
the passage out of its document and insert it again at a uniformly random word boundary,
so training documents carry no positional cue. Train once with and once without, to test
whether de-biasing helps on your data.

Without passage positions (MS MARCO documents), :func:`shuffle_segments` and
:class:`SegmentShuffle` cut each document at random word boundaries and shuffle the segments
(Hofstätter et al., "Mitigating the Position Bias of Transformer Models in Passage Re-Ranking",
ECIR 2021, as the positional-bias paper's de-biased MS MARCO).

The new place depends only on ``(seed, docno)``: the same document is moved the same way in
every row, every query, every process and any row order.
"""
from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np
import pandas as pd
import pyterrier as pt

from ..engine.rng import keyed_rng

_START_COLUMNS = ("char_start", "start_char")
_END_COLUMNS = ("char_end", "end_char")
_WORD_START = re.compile(r"(?:^|(?<=\s))\S")


def move_passage(text: str, start: int, end: int, rng: np.random.Generator) -> tuple[str, int, int]:
    """``text`` with ``text[start:end]`` moved to a random word boundary of the rest.

    Surrounding white space of the passage is dropped, and the rest is joined with one space
    where the passage was. Every word boundary of the rest (before the first word, between
    two words, after the last) is equally likely, the old place included. Returns the new
    text and the passage's new ``(start, end)``, so ``new[start:end]`` is the passage.
    """
    if not 0 <= start < end <= len(text):
        raise ValueError(f"passage span ({start}, {end}) is not inside a text of {len(text)} characters")
    passage = text[start:end].strip()
    if not passage:
        raise ValueError(f"passage span ({start}, {end}) holds only white space")
    head, tail = text[:start].rstrip(), text[end:].lstrip()
    rest = f"{head} {tail}" if head and tail else head + tail
    words = [m.start() for m in _WORD_START.finditer(rest)]
    if not words:
        return passage, 0, len(passage)
    end_of_words = len(rest.rstrip())
    at = (words + [end_of_words])[int(rng.integers(len(words) + 1))]
    if at == end_of_words:
        return f"{rest[:at]} {passage}{rest[at:]}", at + 1, at + 1 + len(passage)
    return f"{rest[:at]}{passage} {rest[at:]}", at, at + len(passage)


def _column(positions: pd.DataFrame, names: tuple[str, ...], given: str | None) -> str:
    if given is not None:
        return given
    for name in names:
        if name in positions.columns:
            return name
    raise ValueError(f"positions need a column {' or '.join(names)}; they have {list(positions.columns)}")


def passage_spans(positions: pd.DataFrame, *, start: str | None = None,
                  end: str | None = None) -> dict[str, tuple[int, int]]:
    """docno -> (char start, char end) of its relevant passage; one span per document."""
    start, end = _column(positions, _START_COLUMNS, start), _column(positions, _END_COLUMNS, end)
    missing = [c for c in ("docno", start, end) if c not in positions.columns]
    if missing:
        raise ValueError(f"positions lack columns {missing}; they have {list(positions.columns)}")
    spans = positions[["docno", start, end]].dropna().drop_duplicates()
    spans = spans.assign(docno=spans["docno"].astype(str))
    twice = spans["docno"][spans["docno"].duplicated()].unique().tolist()
    if twice:
        raise ValueError(f"documents {twice[:5]} have several different relevant-passage spans ({len(twice)} in "
                         "all); de-biasing moves one passage per document: pass one span for each")
    return {d: (int(s), int(e)) for d, s, e in zip(spans["docno"], spans[start], spans[end])}


def _rng(seed: int, docno: str) -> np.random.Generator:
    return keyed_rng(seed, docno)


def debias_positions(frame: pd.DataFrame, positions: pd.DataFrame | Mapping[str, tuple[int, int]], *, seed: int = 0,
                     text_field: str = "text", start: str | None = None, end: str | None = None,
                     add_positions: bool = False) -> pd.DataFrame:
    """A copy of ``frame`` (a candidates or documents frame with ``docno`` and ``text_field``)
    whose documents listed in ``positions`` have their relevant passage moved to a random
    word boundary (see :func:`move_passage`); other rows are unchanged.

    Args:
        positions: ``docno`` and the passage's character offsets (``char_start``/``char_end``,
            or ``start_char``/``end_char``, or the columns named by ``start``/``end``), or a
            mapping docno -> (start, end).
        seed: with the docno, fixes the new place.
        add_positions: add ``passage_start`` and ``passage_end`` columns (the passage's new
            offsets; missing for rows without a passage).
    """
    pt.validate.columns(frame, includes=["docno", text_field])
    spans = dict(positions) if isinstance(positions, Mapping) else passage_spans(positions, start=start, end=end)
    moved: dict[tuple[str, str], tuple[str, int, int]] = {}
    texts, starts, ends = [], [], []
    for docno, text in zip(frame["docno"].astype(str), frame[text_field]):
        span = spans.get(docno)
        if span is None:
            texts.append(text)
            starts.append(pd.NA)
            ends.append(pd.NA)
            continue
        key = (docno, text)
        if key not in moved:
            passage_start, passage_end = span
            if not isinstance(text, str) or passage_end > len(text):
                raise ValueError(f"the passage span {span} of document {docno!r} does not fit its text "
                                 f"({len(text) if isinstance(text, str) else type(text).__name__}); "
                                 "positions and text must come from the same collection")
            moved[key] = move_passage(text, passage_start, passage_end, _rng(seed, docno))
        new, s, e = moved[key]
        texts.append(new)
        starts.append(s)
        ends.append(e)
    out = frame.assign(**{text_field: texts})
    if add_positions:
        out = out.assign(passage_start=pd.array(starts, dtype="Int64"), passage_end=pd.array(ends, dtype="Int64"))
    return out


class PositionDebias(pt.Transformer):
    """:func:`debias_positions` as a pipeline stage, for training candidates or a text lookup:

    ``fit(model, topics, qrels, bm25 >> get_text >> PositionDebias(positions, seed=1))``, or
    ``fit(..., text=get_text >> PositionDebias(positions))`` for positives outside the candidates.
    """

    def __init__(self, positions, *, seed: int = 0, text_field: str = "text", start: str | None = None,
                 end: str | None = None):
        self.spans = dict(positions) if isinstance(positions, Mapping) else passage_spans(positions, start=start,
                                                                                          end=end)
        self.seed = seed
        self.text_field = text_field

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["docno", self.text_field], context=self)
        return debias_positions(inp, self.spans, seed=self.seed, text_field=self.text_field)

    def __repr__(self) -> str:
        return f"PositionDebias(<{len(self.spans)} passages>, seed={self.seed!r}, text_field={self.text_field!r})"


def shuffle_segments(text: str, segment_words: int, rng: np.random.Generator) -> str:
    """``text`` cut at random word boundaries into ``round(words / segment_words)`` segments
    (at least one: a shorter text stays whole), joined in a random order with single spaces."""
    if segment_words < 1:
        raise ValueError(f"segment_words must be at least 1, got {segment_words}")
    words = text.split()
    segments = max(1, round(len(words) / segment_words))
    if segments == 1:
        return text
    cuts = sorted(rng.choice(np.arange(1, len(words)), size=segments - 1, replace=False).tolist())
    pieces = [" ".join(words[a:b]) for a, b in zip([0, *cuts], [*cuts, len(words)])]
    return " ".join(pieces[i] for i in rng.permutation(segments))


class SegmentShuffle(pt.Transformer):
    """:func:`shuffle_segments` on every row's text, for training documents whose relevant
    passages have no known place: ``fit(..., text=get_text >> SegmentShuffle(100))``. A document
    is cut and ordered the same way wherever it appears (``seed`` and its docno fix both)."""

    def __init__(self, segment_words: int, *, seed: int = 0, text_field: str = "text"):
        if segment_words < 1:
            raise ValueError(f"segment_words must be at least 1, got {segment_words}")
        self.segment_words, self.seed, self.text_field = segment_words, seed, text_field

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["docno", self.text_field], context=self)
        texts = [shuffle_segments(text, self.segment_words, _rng(self.seed, docno))
                 for docno, text in zip(inp["docno"].astype(str), inp[self.text_field])]
        return inp.assign(**{self.text_field: pd.Series(texts, index=inp.index, dtype="object")})

    def __repr__(self) -> str:
        return f"SegmentShuffle({self.segment_words!r}, seed={self.seed!r}, text_field={self.text_field!r})"


__all__ = ["move_passage", "passage_spans", "debias_positions", "PositionDebias", "shuffle_segments",
           "SegmentShuffle"]

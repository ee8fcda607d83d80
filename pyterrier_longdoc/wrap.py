"""LongDoc: chunk-and-aggregate around any PyTerrier passage re-ranker.

Score aggregation of Dai & Callan (SIGIR 2019: FirstP, MaxP, SumP) and k-max-average of Chen
et al. (TREC 2020), for scorers that read passages only, e.g. ``pyterrier_t5.MonoT5ReRanker``.
"""
from __future__ import annotations

import contextlib
import re

import numpy as np
import pandas as pd
import pyterrier as pt

from .engine.chunking import window_starts
from .engine.frames import column_texts, failed_setting_run, input_frame
from .engine.text import text_offsets, text_only_backend, without_lone_surrogates
from ._warn import renamed, warn

AGGREGATIONS = ("first", "max", "sum", "mean", "kmaxavg")
# set_parameter's names: window_words/stride_words without a tokenizer, window/stride (tokens) with one
TUNABLE = ("aggregation", "window_words", "stride_words", "window", "stride", "k", "text_field", "tokenizer")
WINDOW_WORDS, STRIDE_WORDS = 150, 75  # Dai & Callan's passages: 150 words, every 75
WINDOW_TOKENS, STRIDE_TOKENS = 150, 75  # with a tokenizer: as many of its tokens
_ROW, _PASSAGE = "longdoc_row", "longdoc_passage"
_WHITESPACE = re.compile(r"\s+")


class _Length:
    """A passage length whose name says its unit: ``window_words``/``stride_words`` count white-space
    words (LongDoc without a tokenizer), ``window``/``stride`` its tokenizer's tokens. Without a
    tokenizer, ``window``/``stride`` are the deprecated names of the word counts."""

    def __init__(self, part: str, unit: str):
        self.part, self.unit = part, unit

    def __set_name__(self, owner, name: str) -> None:
        self.name = name

    def __get__(self, wrapper, owner=None):
        if wrapper is None:
            return self
        return getattr(wrapper, "_" + self._checked(wrapper))

    def __set__(self, wrapper, value) -> None:
        _check_setting(self.name, value)
        setattr(wrapper, "_" + self._checked(wrapper), value)

    def _checked(self, wrapper) -> str:
        counted = "words" if wrapper.tokenizer is None else "tokens"
        if self.unit == "words" and counted == "tokens":
            raise AttributeError(f"{self.name} counts white-space words, but this LongDoc counts its tokenizer's "
                                 f"tokens: use {self.part}")
        if self.unit == "tokens" and counted == "words":
            warn(f"LongDoc without a tokenizer counts white-space words: {self.name} is deprecated, use "
                 f"{self.part}_words (the same value; {self.name} goes in the next release)", DeprecationWarning)
        return self.part


def _length_names(tokenizer) -> tuple[str, str]:
    return ("window_words", "stride_words") if tokenizer is None else ("window", "stride")


def _lengths(window_words, stride_words, window, stride, tokenizer) -> tuple:
    """The passage length and step in the unit LongDoc counts in (see its docstring)."""
    if tokenizer is None:
        given = renamed({"window_words": window_words, "stride_words": stride_words, "window": window,
                         "stride": stride}, {"window": "window_words", "stride": "stride_words"},
                        "LongDoc without a tokenizer counts white-space words")
        window, stride = given.get("window_words"), given.get("stride_words")
    else:
        for name, value in (("window_words", window_words), ("stride_words", stride_words)):
            if value is not None:
                raise ValueError(f"LongDoc: {name} counts white-space words, but with a tokenizer passages are "
                                 f"counted in its tokens: give {name.removesuffix('_words')}= instead")
    defaults = (WINDOW_WORDS, STRIDE_WORDS) if tokenizer is None else (WINDOW_TOKENS, STRIDE_TOKENS)
    return (defaults[0] if window is None else window), (defaults[1] if stride is None else stride)


class LongDoc(pt.Transformer):
    """Splits each document into passages, scores them with one call of ``scorer`` (only each
    document's first passage with ``aggregation="first"``), and aggregates the scores per document.

    Args:
        scorer: any PyTerrier re-ranker of ``qid, query, docno, <text_field>`` rows that keeps
            the columns it is given.
        aggregation: ``"first"``, ``"max"`` (MaxP), ``"sum"``, ``"mean"`` or ``"kmaxavg"``
            (the mean of the ``k`` best passage scores).
        window_words, stride_words: passage length and step in white-space separated words
            (150 and 75, as Dai & Callan); the last passage always reaches the end of the
            document (no text is dropped).
        k: for ``"kmaxavg"``.
        text_field: the column with the document text.
        tokenizer: a HuggingFace tokenizer: passages are then counted in its tokens, ``window``
            and ``stride`` (150 and 75 tokens, the unit of the library's models' ``window``),
            instead of ``window_words`` and ``stride_words``. A passage is the document's own text
            between the character offsets of its first and last token (a Python-only tokenizer
            without offsets gives ``convert_tokens_to_string`` of the tokens instead). Setting
            another tokenizer later keeps the numbers, counted in the new unit.
        window, stride: with a ``tokenizer``, the passage length and step in its tokens. Without
            one, the deprecated names of ``window_words`` and ``stride_words`` (a DeprecationWarning;
            they go in the next release).

    User text stays text: a literal ``[SEP]`` or ``</s>`` in a document counts as characters, and
    while ``scorer`` runs, the HuggingFace tokenizers it holds (a ``tokenizer`` attribute of the
    scorer or of a stage of its pipeline, as ``pyterrier_t5.MonoT5ReRanker`` has) read special-token
    strings as text too.

    Output: the input with ``score`` and ``rank`` replaced, every other column kept.
    """

    window_words = _Length("window", "words")
    stride_words = _Length("stride", "words")
    window = _Length("window", "tokens")
    stride = _Length("stride", "tokens")

    def __init__(self, scorer: pt.Transformer, *, aggregation: str = "max", window_words: int | None = None,
                 stride_words: int | None = None, k: int = 3, text_field: str = "text", tokenizer=None,
                 window: int | None = None, stride: int | None = None):
        if not isinstance(scorer, pt.Transformer) and not callable(getattr(scorer, "transform", None)):
            raise TypeError(f"LongDoc wraps a PyTerrier transformer that scores passages (e.g. a CrossEncoder "
                            f"reranker, or pt.apply.doc_score(...)), got {type(scorer).__name__} {scorer!r:.60}")
        window, stride = _lengths(window_words, stride_words, window, stride, tokenizer)
        names = _length_names(tokenizer)
        for name, value in (("aggregation", aggregation), (names[0], window), (names[1], stride), ("k", k),
                            ("text_field", text_field)):
            _check_setting(name, value)
        if _combination_problem(window, stride, names):
            raise ValueError(_combination_problem(window, stride, names))
        self.scorer, self.aggregation, self._window, self._stride, self.k = scorer, aggregation, window, stride, k
        self.text_field = text_field
        self.tokenizer = tokenizer

    @property
    def tokenizer(self):
        return self._tokenizer

    @tokenizer.setter
    def tokenizer(self, tokenizer) -> None:
        self._tokenizer = tokenizer
        self._offsets = text_offsets(tokenizer) if tokenizer is not None else None

    def set_parameter(self, name: str, value) -> None:
        """Changes one setting in place, as ``pt.GridSearch`` does, with the constructor's checks
        of each value (an error names it). The passage length and step (``window_words`` and
        ``stride_words``, or ``window`` and ``stride`` with a tokenizer) are checked together when
        the next frame comes: a grid sets one at a time. A frame scored with a step over the length
        gives a warning naming them and a run that scores no document, so that a grid search
        finishes with a valid setting (the guide's "Tuning with pt.GridSearch")."""
        if name not in TUNABLE:
            raise ValueError(f"LongDoc has no parameter {name!r}; parameters: {', '.join(TUNABLE)}")
        _check_setting(name, value)
        setattr(self, name, value)  # the lengths' descriptors check their unit too

    def __repr__(self) -> str:
        extra = f", k={self.k}" if self.aggregation == "kmaxavg" else ""
        field = f", text_field={self.text_field!r}" if self.text_field != "text" else ""
        window, stride = _length_names(self.tokenizer)
        return (f"LongDoc({self.scorer!r}, aggregation={self.aggregation!r}, {window}={self._window}, "
                f"{stride}={self._stride}{extra}{field})")

    def passages(self, text: str) -> list[str]:
        """The passages of one document text."""
        return self._passages(text)

    def _passages(self, text: str, limit: int | None = None) -> list[str]:
        """The first ``limit`` passages of one document text (all with None): the others are not built."""
        text = without_lone_surrogates(text)
        if self._offsets is not None:
            offsets, _ = self._offsets(text)
            return [text[offsets[s][0]:offsets[min(s + self._window, len(offsets)) - 1][1]] if offsets else text
                    for s in window_starts(len(offsets), self._window, self._stride)[:limit]]
        if self.tokenizer is None:
            tokens, join = [t for t in _WHITESPACE.split(text) if t], " ".join
        else:
            tokens = self.tokenizer.tokenize(text, split_special_tokens=True)
            join = self.tokenizer.convert_tokens_to_string
        return [join(tokens[s:s + self._window])
                for s in window_starts(len(tokens), self._window, self._stride)[:limit]]

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        input_frame(inp, ["qid", "query", "docno", self.text_field], self)
        problem = _combination_problem(self._window, self._stride, _length_names(self.tokenizer))
        if problem:
            return failed_setting_run(inp, f"{self!r}: {problem}")
        if not len(inp):
            return pt.model.add_ranks(inp.assign(score=pd.Series(dtype="float64")))
        limit = 1 if self.aggregation == "first" else None  # FirstP: the scorer never sees the other passages
        split = [self._passages(text, limit) for text in column_texts(inp, self.text_field, self)]
        rows = np.repeat(np.arange(len(inp)), [len(p) for p in split])
        index = np.concatenate([np.arange(len(p)) for p in split])
        columns = [c for c in inp.columns if c not in ("score", "rank")]
        passages = _repeated(inp[[c for c in columns if c != self.text_field]], rows)
        passages = passages.assign(**{
            self.text_field: [p for doc in split for p in doc],
            "docno": passages["docno"].astype(str) + "%p" + index.astype(str),
        })[columns].assign(**{_ROW: rows, _PASSAGE: index})
        with _special_strings_as_text(self.scorer):
            scored = self.scorer.transform(passages)
        missing = [c for c in (_ROW, _PASSAGE, "score") if c not in scored.columns]
        if missing or len(scored) != len(passages):
            raise ValueError(f"{self!r}: the scorer must return one row per passage with the columns it was "
                             f"given and a score; it returned {len(scored)} of {len(passages)} rows, "
                             f"missing columns {missing}")
        scores = self._aggregate(scored)
        return pt.model.add_ranks(inp.assign(score=scores.reindex(range(len(inp))).to_numpy()))

    def _aggregate(self, scored: pd.DataFrame) -> pd.Series:
        if self.aggregation == "first":
            return scored.sort_values(_PASSAGE, kind="stable").groupby(_ROW)["score"].first()
        if self.aggregation == "kmaxavg":
            best = scored.sort_values("score", ascending=False, kind="stable")
            return best[best.groupby(_ROW).cumcount() < self.k].groupby(_ROW)["score"].mean()
        return scored.groupby(_ROW)["score"].agg(self.aggregation)


def _check_setting(name: str, value) -> None:
    if name == "aggregation" and value not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {value!r}; use one of {', '.join(AGGREGATIONS)}")
    lengths = ("window", "stride", "window_words", "stride_words", "k")
    if name in lengths and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if name == "text_field" and not isinstance(value, str):
        raise ValueError(f"text_field must be a column name (str), got {value!r}")


def _combination_problem(window: int, stride: int, names: tuple[str, str]) -> str | None:
    return f"{names[1]} ({stride}) > {names[0]} ({window}) would skip document text" if stride > window else None


def _repeated(frame: pd.DataFrame, rows: np.ndarray) -> pd.DataFrame:
    """``frame.iloc[rows]``, in memory that does not grow with the length of its values times
    their repeats: pandas' string columns (Arrow-backed) copy their values on ``iloc``, object
    columns repeat references, so string columns are taken as objects (each value made once)."""
    arrow = {c: object for c, dtype in frame.dtypes.items() if not pd.api.types.is_object_dtype(dtype)
             and pd.api.types.is_string_dtype(dtype)}
    return frame.astype(arrow).iloc[rows].reset_index(drop=True)


@contextlib.contextmanager
def _special_strings_as_text(scorer: pt.Transformer):
    """While the block runs, the HuggingFace tokenizers ``scorer`` holds read special-token
    strings in text as characters (their backend swapped for :func:`text_only_backend`; the
    special tokens a tokenizer adds itself, such as T5's final ``</s>``, are unchanged)."""
    tokenizers = [t for t in _held_tokenizers(scorer) if getattr(t, "_tokenizer", None) is not None]
    saved = [(t, t._tokenizer, getattr(t, "split_special_tokens", False)) for t in tokenizers]
    try:
        for tokenizer, backend, _ in saved:
            tokenizer._tokenizer = text_only_backend(backend)
            tokenizer.split_special_tokens = True  # transformers 5 sets the backend's flag from it per call
        yield
    finally:
        for tokenizer, backend, split in saved:
            tokenizer._tokenizer, tokenizer.split_special_tokens = backend, split


def _held_tokenizers(transformer: pt.Transformer) -> list:
    """The fast HuggingFace tokenizers held as ``tokenizer`` by a transformer or its subtransformers."""
    found, stack, seen = [], [transformer], set()
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        tokenizer = getattr(current, "tokenizer", None)
        if getattr(tokenizer, "backend_tokenizer", None) is not None and tokenizer not in found:
            found.append(tokenizer)
        try:
            subs = pt.inspect.subtransformers(current)
        except Exception:  # noqa: BLE001 - a transformer pt.inspect cannot read has no stages we know of
            subs = {}
        for value in subs.values():
            stack.extend(value if isinstance(value, list) else [value])
    return found

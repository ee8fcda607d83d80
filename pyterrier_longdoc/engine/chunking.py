"""Cut documents into the chunks a model reads (the ids come from ``tokenization``).

A chunk sequence is ``[CLS] q [SEP] chunk [SEP]`` (or whatever pair layout the tokenizer
uses), token type 0 for the query part and 1 for the document part. Texts are tokenized
without special tokens; the layout is added when a batch is built, so a document tokenized
once serves every query that retrieves it.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TypedDict

import numpy as np

CHUNK_SELECTIONS = ("first", "first_last_even")
DISJOINT_SPLITS = ("even", "fill")


@dataclass(frozen=True)
class SpecialLayout:
    """Where a tokenizer puts its special tokens around a (query, document) pair."""

    prefix: tuple[int, ...]
    middle: tuple[int, ...]
    suffix: tuple[int, ...]
    query_type: int
    doc_type: int

    @property
    def n_special(self) -> int:
        return len(self.prefix) + len(self.middle) + len(self.suffix)

    @classmethod
    def from_tokenizer(cls, tokenizer, query_prefix: str = "", doc_prefix: str = "",
                       eos: bool = False) -> SpecialLayout:
        """The tokenizer's pair layout, with the ids of ``query_prefix`` after its prefix and of
        ``doc_prefix`` after its middle (see :func:`text_encoder` for the space that ends them),
        and with ``eos`` its EOS token at the end (as RankLLaMA appends it), unless it ends so."""
        layout = cls._pair_layout(tokenizer)
        suffix = layout.suffix
        if eos:
            if tokenizer.eos_token_id is None:
                raise ValueError(f"tokenizer {type(tokenizer).__name__} has no EOS token to end a sequence with")
            if suffix[-1:] != (tokenizer.eos_token_id,):
                suffix += (tokenizer.eos_token_id,)
        return cls(layout.prefix + _prefix_ids(tokenizer, query_prefix),
                   layout.middle + _prefix_ids(tokenizer, doc_prefix), suffix, layout.query_type, layout.doc_type)

    @classmethod
    def single(cls, tokenizer, prefix: str = "") -> SpecialLayout:
        """The layout of one text alone (``[CLS] text [SEP]``; a bi-encoder's query or window),
        with the ids of ``prefix`` before it: the text takes the document's place, after an
        empty query and middle."""
        ids = tokenizer("a")["input_ids"]
        a = tokenizer("a", add_special_tokens=False)["input_ids"]
        i = _find(ids, a, 0)
        if i < 0:
            raise ValueError(f"cannot find the single-text layout of tokenizer {type(tokenizer).__name__}: {ids}")
        return cls(tuple(ids[:i]) + _prefix_ids(tokenizer, prefix), (), tuple(ids[i + len(a):]), 0, 0)

    @classmethod
    def _pair_layout(cls, tokenizer) -> SpecialLayout:
        # Encode a known pair and find the two texts in it: works for BERT ([CLS] a [SEP] b [SEP]),
        # RoBERTa (<s> a </s></s> b </s>), Llama (<s> a <s> b) and others, without tokenizer-specific code.
        a = tokenizer("a", add_special_tokens=False)["input_ids"]
        b = tokenizer("b", add_special_tokens=False)["input_ids"]
        pair = tokenizer("a", "b", return_token_type_ids=True)
        ids, types = pair["input_ids"], pair.get("token_type_ids") or [0] * len(pair["input_ids"])
        i = _find(ids, a, 0)
        j = _find(ids, b, i + len(a)) if i >= 0 else -1
        if i < 0 or j < 0:
            raise ValueError(f"cannot find the pair layout of tokenizer {type(tokenizer).__name__}: {ids}")
        return cls(tuple(ids[:i]), tuple(ids[i + len(a):j]), tuple(ids[j + len(b):]), types[i], types[j])


def window_starts(n_tokens: int, window: int, stride: int) -> range:
    """Where the windows over ``n_tokens`` start: every ``stride`` tokens, the last one where it
    still adds tokens no earlier window covered (one window for an empty text)."""
    return range(0, max(1, n_tokens - window + stride), stride)


def _prefix_ids(tokenizer, prefix: str) -> tuple[int, ...]:
    """The ids of a prefix without its trailing white space, which goes with the text after it
    (see :func:`text_encoder`)."""
    return tuple(tokenizer(prefix.rstrip(), add_special_tokens=False)["input_ids"]) if prefix.strip() else ()


def _find(seq: list[int], sub: list[int], start: int) -> int:
    for k in range(start, len(seq) - len(sub) + 1):
        if seq[k:k + len(sub)] == sub:
            return k
    return -1


def _chunk_setting(default, doc: str):
    """A chunking setting: its default and what it means (the metadata of ``settings.setting``)."""
    return dataclasses.field(default=default, metadata={"doc": doc, "derived": False})


@dataclass(frozen=True)
class ChunkingSettings:
    """The chunking settings, declared once (name, type, default, meaning): every model's ``Settings``
    extends them (``ModelSettings``), and the engine's :class:`Chunking` is the same fields, checked,
    with ``max_length`` and ``max_query_tokens`` resolved against the encoder where a model leaves them
    None (``ModelSettings.chunking``)."""

    window: int | None = _chunk_setting(None, "tokens per chunk; None fills the encoder input (max_length less "
                                              "the query and the special tokens: 477 for BERT)")
    stride: int | None = _chunk_setting(None, "tokens between the starts of two chunks; None: disjoint chunks")
    max_query_tokens: int | None = _chunk_setting(32, "query tokens read, the rest cropped (None: as many as the "
                                                      "model's query sequence holds; bi-encoders)")
    max_doc_tokens: int = _chunk_setting(1431, "document tokens read at most, the rest cropped")
    max_chunks: int | None = _chunk_setting(None, "chunks per document at most (None: no cap)")
    chunk_selection: str = _chunk_setting("first", f"which chunks ``max_chunks`` keeps: one of {CHUNK_SELECTIONS}")
    max_length: int | None = _chunk_setting(512, "tokens per encoder sequence (None: the encoder's own maximum)")
    disjoint_split: str = _chunk_setting("even", f"how ``stride=None`` cuts a document: one of {DISJOINT_SPLITS} "
                                                 "(chunks of equal size, or full chunks but the last)")
    query_prefix: str = _chunk_setting("", "text before the query (its tokens count as special tokens)")
    doc_prefix: str = _chunk_setting("", "text before every chunk (its tokens count as special tokens)")
    append_eos: bool | None = _chunk_setting(None, "the tokenizer's EOS after the chunk; None: where the head reads "
                                                   "the last token (decoder-only LMs)")


class ChunkingOptions(TypedDict, total=False):
    """The chunking settings as keywords, for type checkers (``ChunkingSettings``' fields and types: a test
    keeps them equal); every model class's keywords extend them (``engine.settings.ModelOptions``)."""

    window: int | None
    stride: int | None
    max_query_tokens: int | None
    max_doc_tokens: int
    max_chunks: int | None
    chunk_selection: str
    max_length: int | None
    disjoint_split: str
    query_prefix: str
    doc_prefix: str
    append_eos: bool | None


@dataclass(frozen=True)
class Chunking(ChunkingSettings):
    """How a model cuts a document into chunks: the chunking settings (:class:`ChunkingSettings`, whose
    fields it is), checked, with ``max_length`` and ``max_query_tokens`` integers; a model's engine gets
    its instance from the model's settings (``ModelSettings.chunking``).

    ``window=None`` fills the encoder input: ``max_length - max_query_tokens - special tokens``
    document tokens per chunk (477 for BERT). ``stride=None`` means disjoint chunks: with
    ``disjoint_split="even"`` (the reference code's way) a document of n tokens is cut into
    ``ceil(n / window)`` chunks of equal size (800 tokens in 489-token windows: 400 + 400);
    ``"fill"`` fills every chunk but the last (489 + 311; version 0.1's way). ``max_chunks``
    caps the chunks per document; ``chunk_selection`` says which to keep: ``"first"``, or
    PARADE's ``"first_last_even"`` (the first, the last, and the rest evenly spaced between them).
    ``query_prefix`` and ``doc_prefix`` go before the query and before every chunk (RankLLaMA's
    ``"query: "`` and ``"document: "``); their tokens count as special tokens. ``append_eos``: the
    tokenizer's EOS token after the chunk (a special token too); None: where the head reads the
    last token (decoder-only LMs), as transformers' sequence classifiers of them were trained by
    Tevatron's ``--append_eos_token``.
    """

    def __post_init__(self):
        if self.append_eos not in (None, True, False):
            raise ValueError(f"append_eos must be True, False or None (the model's rule), got {self.append_eos!r}")
        for name in ("query_prefix", "doc_prefix"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")
        for name in ("window", "stride", "max_chunks"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive integer or None, got {value!r}")
        for name in ("max_query_tokens", "max_doc_tokens", "max_length"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.disjoint_split not in DISJOINT_SPLITS:
            raise ValueError(f"disjoint_split must be one of {DISJOINT_SPLITS}, got {self.disjoint_split!r}")
        if self.chunk_selection not in CHUNK_SELECTIONS:
            raise ValueError(f"chunk_selection must be one of {CHUNK_SELECTIONS}, got {self.chunk_selection!r}")
        if self.window is not None and self.stride is not None and self.stride > self.window:
            raise ValueError(f"stride ({self.stride}) > window ({self.window}) would skip document tokens")

    def doc_window(self, layout: SpecialLayout) -> int:
        assert self.max_length is not None and self.max_query_tokens is not None  # integers, checked above
        window = self.window or self.max_length - self.max_query_tokens - layout.n_special
        if window < 1 or self.max_query_tokens + window + layout.n_special > self.max_length:
            raise ValueError(
                f"max_query_tokens={self.max_query_tokens} + window={window} + {layout.n_special} special "
                f"tokens do not fit max_length={self.max_length}")
        return window

    def spans(self, n_tokens: int, layout: SpecialLayout) -> list[tuple[int, int]]:
        """The (start, end) token spans of a document of ``n_tokens`` (already cropped).

        An empty document still has one (empty) chunk, so the model scores the query alone.
        """
        window = self.doc_window(layout)
        if self.stride is None and self.disjoint_split == "even" and n_tokens > window:
            window = -(-n_tokens // -(-n_tokens // window))  # ceil(n / number of chunks)
        stride = self.stride or window
        spans = [(s, min(s + window, n_tokens)) for s in window_starts(n_tokens, window, stride)]
        if self.max_chunks is not None and len(spans) > self.max_chunks:
            if self.chunk_selection == "first":
                spans = spans[:self.max_chunks]
            else:
                keep = np.linspace(0, len(spans) - 1, self.max_chunks).round().astype(int)
                spans = [spans[k] for k in sorted(set(keep.tolist()))]
        return spans

    def query_tokens_read(self) -> int:
        """How many query tokens the model reads at most: ``max_query_tokens``, an integer here (checked)."""
        assert self.max_query_tokens is not None  # None only in a model's settings, for the encoder to resolve
        return self.max_query_tokens

    def tokens_read(self, layout: SpecialLayout) -> int:
        """How many document tokens the model can read at most, after every cap."""
        window = self.doc_window(layout)
        stride = self.stride or window
        cap = self.max_doc_tokens
        if self.max_chunks is not None and self.chunk_selection == "first":
            cap = min(cap, (self.max_chunks - 1) * stride + window)
        return cap


# the chunking settings every model has: the fields of its ``Settings`` that make its engine's ``Chunking``
# (``ModelSettings.chunking``), declared once, in ``ChunkingSettings``
CHUNKING_SETTINGS = tuple(f.name for f in dataclasses.fields(ChunkingSettings))
CHUNKING_DEFAULTS = {f.name: f.default for f in dataclasses.fields(ChunkingSettings)}

"""Tokenize once, crop, and cut documents into the chunks a model reads.

A chunk sequence is ``[CLS] q [SEP] chunk [SEP]`` (or whatever pair layout the tokenizer
uses), token type 0 for the query part and 1 for the document part. Texts are tokenized
without special tokens; the layout is added when a batch is built, so a document tokenized
once serves every query that retrieves it.
"""
from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ._text import text_only_backend, without_lone_surrogates

CHUNK_SELECTIONS = ("first", "first_last_even")
DISJOINT_SPLITS = ("even", "fill")

# Characters of text per token are at least 1 for WordPiece and SentencePiece, and bytes per
# token at least 1 for byte-level BPE; a prefix of this many characters per wanted token (cut
# at white space, so the cut never splits a word) is almost always long enough; when it is
# not, the prefix doubles.
_CHARS_PER_TOKEN = 8
_WHITESPACE = re.compile(r"\s")
_TOKENIZER_BATCH = 256
# what a cache entry costs besides its ids: the key, the tuple, the array header, the dict slot
_ENTRY_OVERHEAD = 200


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


@dataclass(frozen=True)
class Chunking:
    """How a model cuts a document into chunks; saved in ``config.json``.

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

    window: int | None = None
    stride: int | None = None
    max_query_tokens: int = 32
    max_doc_tokens: int = 1431
    max_chunks: int | None = None
    chunk_selection: str = "first"
    max_length: int = 512
    disjoint_split: str = "even"
    query_prefix: str = ""
    doc_prefix: str = ""
    append_eos: bool | None = None

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

    def tokens_read(self, layout: SpecialLayout) -> int:
        """How many document tokens the model can read at most, after every cap."""
        window = self.doc_window(layout)
        stride = self.stride or window
        cap = self.max_doc_tokens
        if self.max_chunks is not None and self.chunk_selection == "first":
            cap = min(cap, (self.max_chunks - 1) * stride + window)
        return cap


class Tokenization:
    """Tokenizes texts to id arrays without special tokens, each text once.

    User text stays text: a literal ``[SEP]``, ``<s>`` or ``</s>`` in a query or document is
    read as characters, never as a special token (see :func:`text_only_backend`); lone
    surrogates are read as U+FFFD. A cache keyed by a hash of (text, limit) and bounded by the
    bytes of the ids it holds (``cache_bytes``) serves a document scored by several models or
    pipelines in the same process; it never keeps the texts themselves.
    """

    def __init__(self, tokenizer, cache_bytes: int = 64 << 20, prefix: str = ""):
        self.tokenizer = tokenizer
        self.cache_bytes = cache_bytes
        self.prefix = prefix
        self._cache: OrderedDict[bytes, tuple[np.ndarray, bool]] = OrderedDict()
        self._cached_bytes = 0
        self.encode = text_encoder(tokenizer, prefix)

    def __call__(self, texts: Sequence[str], max_tokens: int) -> tuple[list[np.ndarray], np.ndarray]:
        """Ids of the first ``max_tokens`` tokens of each text, and whether each text had more."""
        ids: list[np.ndarray | None] = [None] * len(texts)
        cropped = np.zeros(len(texts), dtype=bool)
        todo: dict[bytes, list[int]] = {}
        for i, text in enumerate(texts):
            key = _cache_key(text, max_tokens)
            hit = self._cache.get(key)
            if hit is None:
                todo.setdefault(key, []).append(i)
            else:
                self._cache.move_to_end(key)
                ids[i], cropped[i] = hit
        unique = list(todo)
        for start in range(0, len(unique), _TOKENIZER_BATCH):  # slices bound the tokenizer's own memory
            keys = unique[start:start + _TOKENIZER_BATCH]
            texts_slice = [without_lone_surrogates(texts[todo[key][0]]) for key in keys]
            for key, (tokens, was_cropped) in zip(keys, self._tokenize(texts_slice, max_tokens)):
                for i in todo[key]:
                    ids[i], cropped[i] = tokens, was_cropped
                self._remember(key, (tokens, was_cropped))
        return ids, cropped

    def __getstate__(self) -> dict:
        # pickled (e.g. for PyTerrier's .parallel()) without the encode closure, rebuilt on load
        state = self.__dict__.copy()
        del state["encode"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.encode = text_encoder(self.tokenizer, self.__dict__.get("prefix", ""))

    @property
    def cached_bytes(self) -> int:
        """Bytes the cache holds (ids and per-entry overhead), at most ``cache_bytes``."""
        return self._cached_bytes

    def clear(self) -> None:
        """Forget every cached text (e.g. to time tokenizing again)."""
        self._cache.clear()
        self._cached_bytes = 0

    def _remember(self, key: bytes, value: tuple[np.ndarray, bool]) -> None:
        size = value[0].nbytes + _ENTRY_OVERHEAD
        if size > self.cache_bytes:
            return
        self._cache[key] = value
        self._cached_bytes += size
        while self._cached_bytes > self.cache_bytes:
            _, (old, _) = self._cache.popitem(last=False)
            self._cached_bytes -= old.nbytes + _ENTRY_OVERHEAD

    def _tokenize(self, texts: list[str], max_tokens: int) -> list[tuple[np.ndarray, bool]]:
        # Only a prefix of each text is tokenized, so a 1,000,000-character document costs
        # what its first max_tokens tokens cost.
        result: list[tuple[np.ndarray, bool] | None] = [None] * len(texts)
        budget = max_tokens * _CHARS_PER_TOKEN + 64
        pending = list(range(len(texts)))
        while pending:
            prefixes = [_prefix(texts[i], budget) for i in pending]
            retry = []
            for i, prefix, tokens in zip(pending, prefixes, self.encode(prefixes)):
                text_was_cut = len(prefix) < len(texts[i])
                if text_was_cut and len(tokens) <= max_tokens:
                    retry.append(i)  # the prefix was too short to fill max_tokens: take more text
                    continue
                cropped = len(tokens) > max_tokens or text_was_cut
                result[i] = (np.asarray(tokens[:max_tokens], dtype=np.int32), cropped)  # int32: half the cache
            pending, budget = retry, budget * 2
        return result  # type: ignore[return-value]


def text_encoder(tokenizer, prefix: str = "") -> Callable[[list[str]], list[list[int]]]:
    """``encode(texts)``: the token ids of each text, without special tokens, text kept as text.

    A fast tokenizer is run through a private copy of its Rust backend (:func:`text_only_backend`);
    a Python-only ("slow") tokenizer with ``split_special_tokens=True``.

    With a ``prefix`` (``"query: "``), a text is tokenized as it reads after it, as RankLLaMA and
    sentence-transformers tokenize ``prefix + text``: ``prefix + text`` is tokenized and the
    tokens of the prefix without its trailing white space are dropped, so the space goes with
    the text's first word as the tokenizer joins them (byte-level BPE's ``Ġword``). Where the
    tokenizer joins the prefix with the text itself, the text is tokenized alone.
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        backend = text_only_backend(backend)
        encode = lambda texts: [e.ids for e in backend.encode_batch(texts, add_special_tokens=False)]  # noqa: E731
    else:
        encode = lambda texts: tokenizer(texts, add_special_tokens=False, split_special_tokens=True,  # noqa: E731
                                         return_attention_mask=False, return_token_type_ids=False,
                                         verbose=False)["input_ids"]
    if not prefix:
        return encode
    head = encode([prefix.rstrip()])[0] if prefix.rstrip() else []

    def encode_after_prefix(texts: list[str]) -> list[list[int]]:
        joined = encode([prefix + text for text in texts])
        alone = [i for i, ids in enumerate(joined) if ids[:len(head)] != head]
        for i, ids in zip(alone, encode([texts[i] for i in alone]) if alone else []):
            joined[i] = head + ids
        return [ids[len(head):] for ids in joined]

    return encode_after_prefix


def _cache_key(text: str, max_tokens: int) -> bytes:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16)
    digest.update(max_tokens.to_bytes(8, "little"))
    return digest.digest()


def _prefix(text: str, n_chars: int) -> str:
    if len(text) <= n_chars:
        return text
    # cut at the last white space inside the prefix, so no word is split by the cut
    head = text[:n_chars]
    last = None
    for last in _WHITESPACE.finditer(head, max(0, n_chars - 1000)):  # noqa: B007 - the last white space is wanted
        pass
    return head[:last.start()] if last else head


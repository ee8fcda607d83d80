"""Tokenize each text once, to id arrays without special tokens, in parallel, ahead of the encoder.

A model's ``Tokenization`` is shared by every model of the process with the same tokenizer and
prefix (:meth:`Tokenization.shared`): in ``bm25 >> FirstP >> MaxP`` over the same backbone, a
document is tokenized once. A fast tokenizer's Rust backend releases the GIL, so slices of a
batch are tokenized on several threads (and, in ``_scoring``, the next group of documents while
the encoder runs the current one).
"""
from __future__ import annotations

import hashlib
import os
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import cast

import numpy as np

from .text import text_only_backend, without_lone_surrogates

# Characters of text per token are at least 1 for WordPiece and SentencePiece, and bytes per
# token at least 1 for byte-level BPE; a prefix of this many characters per wanted token (cut
# at white space, so the cut never splits a word) is almost always long enough; when it is
# not, the prefix doubles.
_CHARS_PER_TOKEN = 8
_WHITESPACE = re.compile(r"\s")
_TOKENIZER_BATCH = 256
# what a cache entry costs besides its ids: the key, the tuple, the array header, the dict slot
_ENTRY_OVERHEAD = 200
# texts per thread below which splitting a batch costs more than it saves
_MIN_SLICE = 4
_threads: ThreadPoolExecutor | None = None
_module_lock = threading.Lock()  # guards the thread pool and the registry of shared tokenizations
_SHARED: weakref.WeakValueDictionary[tuple, Tokenization] = weakref.WeakValueDictionary()


def tokenizer_threads() -> int:
    """Threads that tokenize one batch: ``$PYTERRIER_LONGDOC_TOKENIZER_THREADS``, else the CPUs this
    process may use, at most 8 (a fast tokenizer's own Rayon pool may be off, e.g. with
    ``TOKENIZERS_PARALLELISM=false`` or after a fork, so the engine does not count on it)."""
    value = os.environ.get("PYTERRIER_LONGDOC_TOKENIZER_THREADS")
    if value is not None:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"PYTERRIER_LONGDOC_TOKENIZER_THREADS must be a positive integer, got {value!r}")
        return int(value)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, min(8, cpus))


def _pool() -> ThreadPoolExecutor:
    global _threads
    with _module_lock:
        if _threads is None:
            _threads = ThreadPoolExecutor(max(8, tokenizer_threads()), thread_name_prefix="pyterrier-longdoc-tokenize")
        return _threads


def _in_parallel(encode: Callable[[list[str]], list[list[int]]], texts: list[str]) -> list[list[int]]:
    """``encode(texts)``, its slices on several threads where the batch is large enough."""
    threads = min(tokenizer_threads(), len(texts) // _MIN_SLICE)
    if threads < 2:
        return encode(texts)
    size = -(-len(texts) // threads)
    parts = _pool().map(encode, [texts[start:start + size] for start in range(0, len(texts), size)])
    return [ids for part in parts for ids in part]


def _fingerprint(tokenizer) -> object:
    """What makes two tokenizers tokenize alike: a fast one's whole definition; a slow one, itself."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return ("object", id(tokenizer))
    return ("fast", hashlib.sha256(backend.to_str().encode()).hexdigest())


class Tokenization:
    """Tokenizes texts to id arrays without special tokens, each text once.

    User text stays text: a literal ``[SEP]``, ``<s>`` or ``</s>`` in a query or document is
    read as characters, never as a special token (see :func:`text_only_backend`); lone
    surrogates are read as U+FFFD. A cache keyed by a hash of the text and bounded by the bytes
    of the ids it holds (``cache_bytes``) serves a document scored by several models or
    pipelines in the same process, whatever each reads of it (its first n ids serve any limit up
    to n); it never keeps the texts themselves. Calls from several threads take turns.
    """

    def __init__(self, tokenizer, cache_bytes: int = 64 << 20, prefix: str = ""):
        self.tokenizer = tokenizer
        self.cache_bytes = cache_bytes
        self.prefix = prefix
        self._cache: OrderedDict[bytes, tuple[np.ndarray, bool]] = OrderedDict()
        self._cached_bytes = 0
        self._lock = threading.Lock()
        self.encode = text_encoder(tokenizer, prefix)
        # only a Rust backend releases the GIL: a Python tokenizer gains nothing from threads
        self._threads_help = getattr(tokenizer, "backend_tokenizer", None) is not None

    @classmethod
    def shared(cls, tokenizer, prefix: str = "") -> Tokenization:
        """The process's Tokenization of tokenizers that tokenize like ``tokenizer`` (the same
        definition) with this prefix: models over the same backbone share their ids and cache."""
        key = (_fingerprint(tokenizer), prefix)
        with _module_lock:
            found = _SHARED.get(key)
            if found is None:
                found = _SHARED[key] = cls(tokenizer, prefix=prefix)
            return found

    def __call__(self, texts: Sequence[str], max_tokens: int,
                 remember: bool = True) -> tuple[list[np.ndarray], np.ndarray]:
        """Ids of the first ``max_tokens`` tokens of each text, and whether each text had more;
        ``remember``: whether texts not in the cache are added to it."""
        with self._lock:
            return self._ids(texts, max_tokens, remember)

    def _ids(self, texts: Sequence[str], max_tokens: int, remember: bool) -> tuple[list[np.ndarray], np.ndarray]:
        ids: list[np.ndarray | None] = [None] * len(texts)
        cropped = np.zeros(len(texts), dtype=bool)
        todo: dict[bytes, list[int]] = {}
        for i, text in enumerate(texts):
            key = _cache_key(text)
            hit = self._cache.get(key)
            # a text's first n ids serve any limit up to n; all of its ids, any limit
            if hit is None or (hit[1] and len(hit[0]) < max_tokens):
                todo.setdefault(key, []).append(i)
            else:
                self._cache.move_to_end(key)
                ids[i], cropped[i] = hit[0][:max_tokens], hit[1] or len(hit[0]) > max_tokens
        unique = list(todo)
        step = _TOKENIZER_BATCH * (tokenizer_threads() if self._threads_help else 1)
        for start in range(0, len(unique), step):  # slices bound the tokenizer's own memory
            keys = unique[start:start + step]
            texts_slice = [without_lone_surrogates(texts[todo[key][0]]) for key in keys]
            for key, (tokens, was_cropped) in zip(keys, self._tokenize(texts_slice, max_tokens)):
                for i in todo[key]:
                    ids[i], cropped[i] = tokens, was_cropped
                if remember:
                    self._remember(key, (tokens, was_cropped))
        return cast(list[np.ndarray], ids), cropped  # every text's ids: from the cache or the tokenizer

    def __getstate__(self) -> dict:
        # pickled (e.g. for PyTerrier's .parallel()) without the encode closure, rebuilt on load
        state = self.__dict__.copy()
        del state["encode"], state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._threads_help = getattr(self.tokenizer, "backend_tokenizer", None) is not None
        self.encode = text_encoder(self.tokenizer, self.__dict__.get("prefix", ""))

    @property
    def cached_bytes(self) -> int:
        """Bytes the cache holds (ids and per-entry overhead), at most ``cache_bytes``."""
        return self._cached_bytes

    def clear(self) -> None:
        """Forget every cached text (e.g. to time tokenizing again)."""
        with self._lock:
            self._cache.clear()
            self._cached_bytes = 0

    def _remember(self, key: bytes, value: tuple[np.ndarray, bool]) -> None:
        replaced = self._cache.pop(key, None)  # a shorter prefix of the same text
        if replaced is not None:
            self._cached_bytes -= replaced[0].nbytes + _ENTRY_OVERHEAD
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
            encoded = _in_parallel(self.encode, prefixes) if self._threads_help else self.encode(prefixes)
            for i, prefix, tokens in zip(pending, prefixes, encoded):
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


def _cache_key(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _prefix(text: str, n_chars: int) -> str:
    if len(text) <= n_chars:
        return text
    # cut at the last white space inside the prefix, so no word is split by the cut
    head = text[:n_chars]
    last = None
    for last in _WHITESPACE.finditer(head, max(0, n_chars - 1000)):  # noqa: B007 - the last white space is wanted
        pass
    return head[:last.start()] if last else head


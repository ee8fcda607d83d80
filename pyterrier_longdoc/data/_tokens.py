"""Token spans for the diagnostics: one small protocol, a model-free default and a HF adapter.

The diagnostics measure positions in *tokens* (as the models see them) but report them next to
character offsets (which are exact and tokenizer independent). Everything here therefore works
on token spans ``(char_start, char_end)``; counting is ``len(spans)``.
"""

from __future__ import annotations

import os
import re
from bisect import bisect_left, bisect_right
from typing import Any, Protocol, runtime_checkable

from ..engine.text import text_offsets

Span = tuple[int, int]

_NON_SPACE = re.compile(r"\S+")


@runtime_checkable
class Tokenizer(Protocol):
    """Anything that splits a text into token character spans (without special tokens)."""

    def spans(self, text: str) -> list[Span]:
        """Return the ``(char_start, char_end)`` span of every token of ``text``, in order."""
        ...


class WhitespaceTokenizer:
    """The default tokenizer: a token is a maximal run of non-whitespace characters.

    It needs no model, so the diagnostics run anywhere. Its counts are lower than a WordPiece
    tokenizer's (punctuation and rare words are split there), so budgets such as 512 / 1431
    tokens mean "words" with it; pass a HF tokenizer to reproduce the papers' BERT token counts.
    """

    def spans(self, text: str) -> list[Span]:
        return [m.span() for m in _NON_SPACE.finditer(text)]

    def __repr__(self) -> str:
        return "WhitespaceTokenizer()"


class HFTokenizer:
    """Adapter for a HuggingFace tokenizer with a Rust backend (the only kind with offsets).

    The backend is copied with truncation and padding switched off: ``tokenizer.json`` files
    often carry ``truncation.max_length`` (128 for all-MiniLM-L6-v2), which would silently cap
    every count. Text is counted as the models read it: a literal ``[SEP]`` or ``</s>`` is
    characters, not one special token (:func:`~pyterrier_longdoc.engine.text.text_only_backend`).
    """

    def __init__(self, tokenizer: Any) -> None:
        encode = text_offsets(tokenizer)
        if encode is None:
            raise ValueError(
                f"{type(tokenizer).__name__} has no Rust backend (backend_tokenizer), so it cannot give "
                "token offsets; load a fast tokenizer (AutoTokenizer.from_pretrained(path))"
            )
        self._encode = encode
        self.name = getattr(tokenizer, "name_or_path", type(tokenizer).__name__)

    def spans(self, text: str) -> list[Span]:
        return [(start, end) for start, end in self._encode(text)[0]]

    def __repr__(self) -> str:
        return f"HFTokenizer({self.name!r})"


def resolve_tokenizer(tokenizer: Any = None) -> Tokenizer:
    """Turn the ``tokenizer=`` argument of the diagnostics into a :class:`Tokenizer`.

    ``None`` -> :class:`WhitespaceTokenizer`; a path or model name -> ``AutoTokenizer.from_pretrained``;
    a HF / ``tokenizers`` tokenizer -> :class:`HFTokenizer`; an object with ``spans`` is used as is.
    """
    if tokenizer is None:
        return WhitespaceTokenizer()
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if isinstance(tokenizer, (str, os.PathLike)):
        from transformers import AutoTokenizer

        return HFTokenizer(AutoTokenizer.from_pretrained(os.fspath(tokenizer)))
    return HFTokenizer(tokenizer)


def count_tokens(tokenizer: Tokenizer, text: str) -> int:
    """Number of tokens of ``text``."""
    return len(tokenizer.spans(text))


def char_to_token_span(spans: list[Span], char_start: int, char_end: int) -> Span:
    """Token span ``[start, end)`` of the tokens overlapping the characters ``[char_start, char_end)``.

    A token cut by the boundary counts as inside, because the model sees it.
    """
    start = bisect_right([e for _, e in spans], char_start)  # first token ending after char_start
    end = bisect_left([s for s, _ in spans], char_end)  # tokens starting before char_end
    return start, max(start, end)

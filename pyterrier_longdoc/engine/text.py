"""User text as text: lone surrogates replaced, and special-token strings kept out of the ids.

A Python ``str`` may hold lone UTF-16 surrogates (``json.loads('"\\ud800"')`` makes one), which
no tokenizer can encode. And a document that literally contains ``[SEP]`` or ``</s>`` must be
read as those characters, never as the separator the model was trained on.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Callable, Sequence

from .._warn import warn

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def without_lone_surrogates(text: str) -> str:
    """``text`` with each surrogate code point replaced by U+FFFD (same length, so character
    offsets still point into the original text)."""
    if text.isascii() or not _SURROGATE.search(text):
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def replace_lone_surrogates(values: Sequence[str], describe_row: Callable[[int], str], where: str) -> list[str]:
    """The texts with lone surrogates replaced by U+FFFD, and one warning naming the rows changed.

    ``describe_row(i)`` names row ``i`` (e.g. its qid and docno); ``where`` says what the texts
    are (e.g. ``"MaxP(...): column 'text'"``).
    """
    cleaned = [without_lone_surrogates(v) for v in values]
    changed = [i for i, (old, new) in enumerate(zip(values, cleaned)) if old is not new]
    if changed:
        examples = ", ".join(describe_row(i) for i in changed[:3])
        warn(f"{where} has lone UTF-16 surrogates (invalid Unicode, e.g. from json.loads('\"\\\\ud800\"')) "
             f"in {len(changed)} of {len(values)} rows (e.g. {examples}); they were replaced by U+FFFD")
    return cleaned


def text_only_backend(backend):
    """A copy of a ``tokenizers.Tokenizer`` that reads every string as text.

    Two ways a special token comes out of text are closed: the added-token pass, which matches
    ``[SEP]`` or ``</s>`` before the model sees the text (``encode_special_tokens``), and the
    model itself, where a SentencePiece (Unigram) vocabulary holds ``</s>`` as an ordinary
    piece. For the latter, a normalizer step writes such a string with a space after its first
    character (``</s>`` is read as ``< /s>``): the model sees the characters, with offsets kept.
    Truncation and padding are switched off (a ``tokenizer.json`` often carries a
    ``max_length`` that would silently cap every count).
    """
    from tokenizers import normalizers

    backend = copy.deepcopy(backend)
    backend.no_truncation()
    backend.no_padding()
    backend.encode_special_tokens = True
    special = {token_id: token.content for token_id, token in backend.get_added_tokens_decoder().items()
               if token.special}

    def read_as_special(strings):
        return [s for s in strings if set(backend.encode(s, add_special_tokens=False).ids) & set(special)]

    found = read_as_special(special.values())
    if found:
        spelled = [normalizers.Replace(s, f"{s[0]} {s[1:]}") for s in sorted(found, key=len, reverse=True)
                   if len(s) > 1]
        # before the tokenizer's own normalizer, and after it too: normalizing (e.g. NFKC of
        # full-width characters) may write a special string that the text did not contain
        steps = [*spelled, backend.normalizer, *spelled] if backend.normalizer else spelled
        backend.normalizer = normalizers.Sequence(steps)
        left = read_as_special(found)
        if left:
            warn(f"this tokenizer still reads {left} in text as special tokens")
    return backend


def text_offsets(tokenizer) -> Callable[[str], tuple[list[tuple[int, int]], list[int | None]]] | None:
    """``encode(text)``: the character offsets (into ``text``) and word ids of its tokens,
    without special tokens, special-token strings and lone surrogates read as text. ``tokenizer``
    is a HuggingFace tokenizer or a ``tokenizers.Tokenizer``; None for a tokenizer without a Rust
    backend (only those give offsets)."""
    from tokenizers import Tokenizer

    backend = tokenizer if isinstance(tokenizer, Tokenizer) else getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    backend = text_only_backend(backend)

    def encode(text: str) -> tuple[list[tuple[int, int]], list[int | None]]:
        encoding = backend.encode(without_lone_surrogates(text), add_special_tokens=False)
        return encoding.offsets, encoding.word_ids

    return encode

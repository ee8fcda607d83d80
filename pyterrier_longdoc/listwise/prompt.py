"""RankGPT's prompt (Sun et al., EMNLP 2023; github.com/sunnweiwei/RankGPT, rank_gpt.py), the
per-passage token budget, and the parsing of the permutation the model answers with."""
from __future__ import annotations

import re
from collections.abc import Sequence

from ..engine.text import text_offsets

SYSTEM = "You are RankGPT, an intelligent assistant that can rank passages based on their relevancy to the query."
# RankGPT's per-message overhead of the chat format (num_tokens_from_messages) and the room it
# keeps for the answer (max_tokens(model) - 200)
MESSAGE_OVERHEAD = 4
ANSWER_RESERVE = 200
_PASSAGE_ID = re.compile(r"\[(\d+)\]")  # rank_llm's rewrite of identifiers in passage text (_replace_number)


def rankgpt_messages(query: str, passages: Sequence[str]) -> list[dict]:
    """The chat of RankGPT's ``create_permutation_instruction``: the system message, the
    instruction, each passage ``[i] ...`` as a user turn acknowledged by the assistant, then the
    query again with the output format ``[] > []``."""
    num = len(passages)
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"I will provide you with {num} passages, each indicated by number identifier []. "
                                    f"\nRank the passages based on their relevance to query: {query}."},
        {"role": "assistant", "content": "Okay, please provide the passages."},
    ]
    for i, passage in enumerate(passages, 1):
        messages.append({"role": "user", "content": f"[{i}] {passage}"})
        messages.append({"role": "assistant", "content": f"Received passage [{i}]."})
    messages.append({"role": "user", "content": (
        f"Search Query: {query}. \nRank the {num} passages above based on their relevance to the search query. The "
        "passages should be listed in descending order using identifiers. The most relevant passages should be "
        "listed first. The output format should be [] > [], e.g., [1] > [2]. Only response the ranking results, "
        "do not say any word or explain.")})
    return messages


class TokenBudget:
    """Counts and cuts passages in tokens: white-space separated words by default (RankGPT cuts
    each passage to its first 300 words), or the tokens of a HuggingFace fast tokenizer, cut at
    the character offset of the last token kept (the passage stays the document's own text)."""

    def __init__(self, tokenizer=None):
        self.tokenizer = tokenizer
        self._offsets = None
        if tokenizer is not None:
            self._offsets = text_offsets(tokenizer)
            if self._offsets is None:
                raise ValueError(f"a token budget needs a fast (Rust) tokenizer with offsets; got "
                                 f"{type(tokenizer).__name__}")

    def ends(self, text: str) -> list[int]:
        """The character offset where each token of ``text`` ends."""
        if self._offsets is None:
            return [m.end() for m in re.finditer(r"\S+", text)]
        return [end for _, end in self._offsets(text)[0]]

    def count(self, text: str) -> int:
        return len(self.ends(text))


def passage(text: str, budget: int | None, ends: list[int]) -> str:
    """RankGPT's passage: stripped, white space collapsed, cut to ``budget`` tokens (``ends``:
    where each token of ``text`` ends) or whole when ``budget`` is None; a ``[N]`` in the text
    becomes ``(N)``, as rank_llm writes it, so that it cannot be read as a passage identifier."""
    if budget is not None and budget < len(ends):
        text = text[:ends[budget - 1]] if budget > 0 else ""
    return _PASSAGE_ID.sub(r"(\1)", " ".join(text.split()))


def fitting_budget(lengths: Sequence[int], fixed: int, limit: int) -> int:
    """The largest per-passage budget ``b`` with ``fixed + sum(min(length, b)) <= limit``
    (RankGPT lowers its 300 words one at a time until the prompt fits; this finds the same
    budget at once); an error when not even the prompt without passages fits."""
    if fixed > limit:
        raise ValueError(f"the prompt needs {fixed} tokens without any passage text, over the context of {limit}")
    low, high = 0, max(lengths, default=0)
    while low < high:
        middle = (low + high + 1) // 2
        if fixed + sum(min(n, middle) for n in lengths) <= limit:
            low = middle
        else:
            high = middle - 1
    return low


_THINKING = re.compile(r"<think>.*?(</think>|$)", re.DOTALL)
_BRACKETED = re.compile(r"\[\s*(\d+)\s*\]")


def parse_permutation(answer: str, n: int) -> tuple[list[int], bool]:
    """The order of ``n`` passages that ``answer`` (e.g. ``"[2] > [1] > [3]"``) gives, 0-based,
    as RankGPT's ``receive_permutation`` reads it: repeated ids are dropped, ids outside 1..n
    ignored, and the missing ones appended in their original order. Extra text is tolerated: a
    reasoning model's ``<think>`` block is skipped, and when the answer has bracketed ids only
    those count (so "the top 3 of 20" in prose is not read as ids). Also whether the answer was
    a clean permutation."""
    order, named = read_ids(answer, n)
    clean = named == n == len(order)
    return order + [i for i in range(n) if i not in order], clean


def read_ids(answer: str, n: int) -> tuple[list[int], int]:
    """The distinct passage ids in 1..n that ``answer`` names, 0-based in its order, and how
    many ids it named (repeats and ids out of range included); see :func:`parse_permutation`."""
    answer = _THINKING.sub(" ", answer)
    ids = _BRACKETED.findall(answer) or re.findall(r"\d+", answer)
    order = []
    for i in (int(x) - 1 for x in ids):
        if 0 <= i < n and i not in order:
            order.append(i)
    return order, len(ids)


def window_ranges(n: int, window_passages: int, stride_passages: int) -> list[tuple[int, int]]:
    """RankGPT's sliding window from the bottom of the list up: ``[n - window_passages, n)``, then
    ``stride_passages`` higher, until a window reaches the top (cut at 0; none after it, so a list
    of ``window_passages`` or fewer passages is one window)."""
    ranges, end = [], n
    while end > 0:
        ranges.append((max(end - window_passages, 0), end))
        if end <= window_passages:
            break
        end -= stride_passages
    return ranges

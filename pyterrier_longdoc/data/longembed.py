"""LongEmbed's synthetic tasks (Zhu et al., 2024), generated offline: passkey and needle retrieval.

Each query asks for one fact hidden at a random depth of one document of filler text; documents
come in LongEmbed's lengths (``LENGTHS``: 256 to 32,768 tokens) and a query's candidates are the
documents of its length, so a model must find the fact wherever it sits.

- ``passkey``: LongEmbed's filler ("The grass is green. The sky is blue. ...") around
  "{name}'s pass key is {number}. Remember it. {number} is the pass key for {name}."; the query
  asks "what is the pass key for {name}?".
- ``needle``: generated prose (the filler of :mod:`.synthetic`, in place of LongEmbed's Paul
  Graham essays, which are not shipped) around a one-sentence fact about a named thing; the query
  asks for it.

Lengths count the tokens of ``tokenizer`` (LongEmbed counts tokens; pass the model's own, a hub
id, a local path or a HF tokenizer), or whitespace-separated words without one (a document is
then somewhat longer in a model's tokens). A document holds the fact and as many whole filler
words as fit its length. Generation is deterministic in ``seed`` (and the tokenizer).
"""
from __future__ import annotations

import bisect
import random
from dataclasses import dataclass

import pandas as pd

from ._tokens import resolve_tokenizer
from .collection import InMemoryCollection
from .synthetic import _FILLER_TEMPLATES, _NAMES, _OBJECTS, _fill

__all__ = ["LENGTHS", "TASKS", "LongEmbedTask", "make_longembed_task"]

LENGTHS = (256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
TASKS = ("passkey", "needle")
_PASSKEY_FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
_NEEDLE_VALUES = ("red", "blue", "green", "golden", "silver", "purple", "orange", "white")


@dataclass(frozen=True, eq=False)
class LongEmbedTask(InMemoryCollection):
    """A generated evaluation set (the shape of :mod:`pyterrier_longdoc.data.collection`).

    documents: ``docno, text, length``; topics: ``qid, query, length``; qrels: ``qid, docno,
    label`` (one relevant document a query); positions: ``qid, docno, char_start, char_end,
    word_start, depth`` (the fact's span, and where it starts as a fraction of the document)."""

    task: str
    documents: pd.DataFrame
    topics: pd.DataFrame
    qrels: pd.DataFrame
    positions: pd.DataFrame

    def at_length(self, length: int) -> LongEmbedTask:
        """The queries and documents of one length."""
        if length not in set(self.topics["length"]):
            raise ValueError(f"no documents of length {length}; lengths: {sorted(set(self.topics['length']))}")
        qids = set(self.topics.loc[self.topics["length"] == length, "qid"])
        documents = self.documents[self.documents["length"] == length].reset_index(drop=True)
        return LongEmbedTask(self.task, documents, **self._with_topics(qids))

    def candidates(self) -> pd.DataFrame:
        """``qid, query, docno, text``: every query against every document of its length."""
        return self.topics.merge(self.documents, on="length")[["qid", "query", "docno", "text"]]


def make_longembed_task(task: str = "passkey", lengths=LENGTHS, queries_per_length: int = 50,
                        seed: int = 0, tokenizer=None) -> LongEmbedTask:
    """Generates ``queries_per_length`` queries and documents at each length of ``task``, in
    ``tokenizer``'s tokens (None: words)."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; tasks: {', '.join(TASKS)}")
    lengths = list(lengths)
    if not lengths or any(not isinstance(n, int) or n < 64 for n in lengths):
        raise ValueError(f"lengths must be integers of at least 64 words, got {lengths}")
    if not isinstance(queries_per_length, int) or not 1 <= queries_per_length <= len(_NAMES):
        raise ValueError(f"queries_per_length must be from 1 to {len(_NAMES)}, got {queries_per_length!r}")
    count = _word_tokens(tokenizer)
    documents, topics, qrels, positions = [], [], [], []
    for length in lengths:
        rng = random.Random(f"longembed-{task}-{seed}-{length}")
        for i, name in enumerate(rng.sample(_NAMES, queries_per_length)):
            qid, docno = f"{task}-{length}-{i}", f"{task}-{length}-d{i}"
            query, fact = _passkey(name, rng) if task == "passkey" else _needle(name, rng)
            budget = length - sum(count(fact.split()))
            filler = _filler(task, budget, rng)  # enough words: each is at least one token
            if tokenizer is not None:
                filler = _fitting(filler, budget, count)
            cut = rng.randint(0, len(filler))  # the fact's depth, uniform as in LongEmbed
            before = " ".join(filler[:cut])
            text = " ".join(part for part in (before, fact, " ".join(filler[cut:])) if part)
            start = len(before) + (1 if before else 0)
            documents.append((docno, text, length))
            topics.append((qid, query, length))
            qrels.append((qid, docno, 1))
            positions.append((qid, docno, start, start + len(fact), cut, cut / max(1, len(filler))))
    return LongEmbedTask(
        task, pd.DataFrame(documents, columns=["docno", "text", "length"]),
        pd.DataFrame(topics, columns=["qid", "query", "length"]),
        pd.DataFrame(qrels, columns=["qid", "docno", "label"]),
        pd.DataFrame(positions, columns=["qid", "docno", "char_start", "char_end", "word_start", "depth"]))


def _passkey(name: str, rng: random.Random) -> tuple[str, str]:
    key = rng.randint(10_000, 99_999)
    return (f"what is the pass key for {name}?",
            f"{name}'s pass key is {key}. Remember it. {key} is the pass key for {name}.")


def _needle(name: str, rng: random.Random) -> tuple[str, str]:
    thing, value = rng.choice(_OBJECTS), rng.choice(_NEEDLE_VALUES)
    return f"what color is the {thing} of {name}?", f"the {thing} of {name} is painted {value}."


def _word_tokens(tokenizer):
    """A function from a list of words to each word's token count once joined with spaces."""
    if tokenizer is None:
        return lambda words: [1] * len(words)
    tok = resolve_tokenizer(tokenizer)

    def count(words: list[str]) -> list[int]:
        text, starts, at = " ".join(words), [], 0
        for word in words:
            starts.append(at)
            at += len(word) + 1
        counts = [0] * len(words)
        for start, _ in tok.spans(text):  # a token belongs to the word it starts in
            counts[bisect.bisect_right(starts, start) - 1] += 1
        return counts

    return count


def _fitting(words: list[str], budget: int, count) -> list[str]:
    """The longest prefix of ``words`` whose tokens fit ``budget``."""
    total = 0
    for n, tokens in enumerate(count(words)):
        total += tokens
        if total > budget:
            return words[:n]
    return words


def _filler(task: str, words: int, rng: random.Random) -> list[str]:
    """``words`` words of filler, in whole sentences but the last."""
    out: list[str] = []
    while len(out) < words:
        sentence = _PASSKEY_FILLER if task == "passkey" else _fill(rng.choice(_FILLER_TEMPLATES), rng, {})
        out.extend(sentence.split())
    return out[:words]

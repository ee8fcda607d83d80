"""Real prose that ships with the package: WordNet's glosses as a FarRelevant collection.

``wordnet/wordnet.tsv.gz`` beside this module holds 11,500 entries of WordNet 3.0 (Princeton
University; its license, which allows redistribution with its notice, is
``wordnet/LICENSE-WordNet.txt``): headwords and their glosses, human-written definitions with
usage examples, as Debian's ``dict-wn`` prints them, cleaned of markup and cut to 120 words.
``scripts/build_shipped_prose.py`` in the repository rebuilds the file from ``dict-wn``. It installs
with ``pip`` on every OS: no Debian package, no download.

``prose_collection`` turns it into the positional-bias paper's FarRelevant setting (Boytsov et al.,
2022/2024) with the library's own builder (``diagnostics.build_far_relevant``): a query
``"what is <term>"`` for a headword that the backbone's vocabulary holds as one word; one document
per query, made of other entries (each printed ``headword: gloss``), in which the term's own entry
is the one relevant passage, placed inside the first ``first_tokens`` tokens of the backbone's
tokenizer (``near``: FirstP reads it) or beyond them (``far``: FirstP is blind to it). Other entries
mention the term too, so BM25's top documents are hard negatives; only a model that reads the query
and the passage that defines the term finds the answer.
"""
from __future__ import annotations

import gzip
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from ._tokens import count_tokens, resolve_tokenizer
from .collection import SplitCollection
from .dictionaries import DictionaryTask, dictionary_task
from .far_relevant import build_far_relevant

__all__ = ["PROSE_FILE", "ProseCollection", "prose_collection", "prose_entries", "prose_task"]

PROSE_FILE = Path(__file__).resolve().parent / "wordnet" / "wordnet.tsv.gz"
FILLER_WORDS = 15  # shorter glosses ("a small drop") make documents of lists, not prose


def prose_entries(path: str | Path = PROSE_FILE) -> pd.DataFrame:
    """The shipped WordNet entries as ``headword, text`` (a ``headword<TAB>text`` line each, gzipped
    when the name ends in ``.gz``); a malformed line raises ``ValueError`` naming the file and line."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: the prose ships inside the package (reinstall it), or pass "
                                "the path of a headword<TAB>text file")
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    rows = []
    for number, line in enumerate(data.decode("utf8").splitlines(), 1):
        fields = line.split("\t")
        if len(fields) != 2 or not all(f.strip() for f in fields):
            raise ValueError(f"{path} line {number}: expected 'headword<TAB>text', got {line[:80]!r}")
        rows.append(fields)
    return pd.DataFrame(rows, columns=["headword", "text"])


def prose_task(path: str | Path = PROSE_FILE, *, vocabulary=None, **options) -> DictionaryTask:
    """Definitional queries ("what is <term>") over the shipped entries, each passage printed
    headword first (``dictionary_task`` with ``hide_term=False, known_only=True``; ``vocabulary``:
    the tokenizer whose whole-word tokens a term must be, default the packaged MiniLM's)."""
    options = {"hide_term": False, "known_only": True, **options}
    return dictionary_task("wn", entries=prose_entries(path), vocabulary=vocabulary, **options)


@dataclass(frozen=True, eq=False, repr=False)
class ProseCollection(SplitCollection):
    """The shipped prose as a FarRelevant collection; see :func:`prose_collection`.

    Attributes:
        documents: ``docno, text`` (one document per query, ``"D" + qid``).
        topics: ``qid, query, split ('train'|'test'|'passage'), position ('near'|'far')``: the
            ``passage`` queries' documents give the passage stage its triples, apart from the
            queries the document stage trains and validates on.
        qrels: ``qid, docno, label``: the query's document, label 1.
        positions: where the relevant entry sits in its document, in characters and in the
            backbone's tokens (``qid, docno, passage_docno, char_start, char_end, token_start,
            token_end, doc_tokens``).
    """

    documents: pd.DataFrame
    topics: pd.DataFrame
    qrels: pd.DataFrame
    positions: pd.DataFrame
    splits: ClassVar[tuple[str, ...]] = ("train", "test", "passage")


def prose_collection(*, train_queries: int = 80, test_queries: int = 50, passage_queries: int = 400, tokenizer=None,
                     first_tokens: int = 512, max_doc_tokens: int = 720, seed: int = 0,
                     path: str | Path = PROSE_FILE) -> ProseCollection:
    """A FarRelevant collection of the shipped prose (see the module doc).

    Args:
        train_queries: training queries, half near and half far (``fit`` holds its validation
            queries out of them).
        test_queries: test queries per position: ``test_queries`` near and as many far.
        passage_queries: queries (half near, half far) whose documents the passage stage learns
            from (``training.document_passage_triples``), as the papers' passage stage learns from
            other queries than the document stage's; 0 for none.
        tokenizer: whose tokens count positions and lengths (a tokenizer or a path to one): the
            backbone's; default the packaged MiniLM's (BERT uncased).
        first_tokens: near answers lie inside the first ``first_tokens`` tokens, far ones start at
            or after it (512: what FirstP reads, query included).
        max_doc_tokens: the documents' length cap (at most the models' 1431 by default).
        seed: which terms are queried, in which split, and each document's filler entries.
    """
    if tokenizer is None:
        from ..packaged import packaged_minilm

        tokenizer = packaged_minilm()
    for name, value, least in (("train_queries", train_queries, 2), ("test_queries", test_queries, 2),
                               ("passage_queries", passage_queries, 0)):
        if not isinstance(value, int) or isinstance(value, bool) or value < least:
            raise ValueError(f"prose_collection: {name} must be an integer >= {least}, got {value!r}")
    task = prose_task(path, vocabulary=tokenizer)
    queries = _fitting(task, resolve_tokenizer(tokenizer), min(first_tokens, max_doc_tokens - first_tokens))
    queries = queries.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    needed = train_queries + 2 * test_queries + passage_queries
    if len(queries) < needed:
        raise ValueError(f"prose_collection: the prose has {len(queries)} queryable terms, fewer than the {needed} "
                         f"asked for ({train_queries} training, 2 x {test_queries} test and {passage_queries} passage "
                         "queries)")
    sizes = {"train": train_queries, "test": 2 * test_queries, "passage": passage_queries}
    starts = dict(zip(sizes, np.cumsum([0, *sizes.values()])))
    plan = {position: [queries.iloc[starts[split] + k * sizes[split] // 2:starts[split] + (k + 1) * sizes[split] // 2]
                       .assign(split=split) for split in sizes]
            for k, position in enumerate(("near", "far"))}
    words = task.passages["text"].str.split().str.len()
    prose = task.passages[(words >= FILLER_WORDS) | task.passages["docno"].isin(task.qrels["docno"])]
    built = []
    for position, parts in plan.items():
        chosen = pd.concat(parts)
        collection = build_far_relevant(prose, chosen[["qid", "query"]], task.qrels, tokenizer=tokenizer,
                                        first_tokens=first_tokens, max_doc_tokens=max_doc_tokens, variant=position,
                                        negatives=0, seed=seed)
        topics = chosen[chosen["qid"].isin(set(collection.topics["qid"]))][["qid", "query", "split"]]
        built.append((collection, topics.assign(position=position)))
    return ProseCollection(documents=pd.concat([c.documents for c, _ in built], ignore_index=True),
                           topics=pd.concat([t for _, t in built], ignore_index=True),
                           qrels=pd.concat([c.qrels for c, _ in built], ignore_index=True),
                           positions=pd.concat([c.positions for c, _ in built], ignore_index=True))


def _fitting(task: DictionaryTask, tokenizer, room: int) -> pd.DataFrame:
    """The queries whose relevant entry fits the room it has in a document of either position (a
    long gloss of 120 words can take over 200 tokens)."""
    text = task.passages.set_index("docno")["text"]
    relevant = dict(zip(task.qrels["qid"], task.qrels["docno"]))
    fits = [count_tokens(tokenizer, text[relevant[qid]]) <= room for qid in task.queries["qid"]]
    return task.queries[fits]

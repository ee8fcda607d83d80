"""BM25 in pure Python: the first stage where PISA does not install.

PyTerrier-PISA ships Linux x86_64 wheels only; on macOS and Windows the demo, the README's
quickstart and the tutorials retrieve with :class:`BM25` instead (``bm25_retriever`` picks). It
scores as PISA's BM25 does (Trotman et al.'s defaults ``k1=0.9, b=0.4``, and PISA's idf, which
never falls below a small positive floor)::

    score(q, d) = sum over query terms t of
                  max(1e-6, log((N - df + 0.5) / (df + 0.5))) * (k1 + 1) * tf / (tf + k1 * (1 - b + b * |d| / avgdl))

with ``tf`` the term's count in ``d``, ``df`` the number of documents holding it, ``N`` the
number of documents, ``|d|`` the document's length in words (stopwords included) and ``avgdl`` the
mean length; a term repeated in the query counts as often as it appears. As PISA's defaults, text
is lowercased, split into runs of letters and digits, stemmed with the Porter2 (Snowball English)
stemmer and stripped of Terrier's stopwords. On the generated collections its scores are PISA's up
to float32 rounding, and its rankings PISA's; PISA's tokenizer reads a few forms otherwise (e.g.
``U.S.``). The index is held in memory: it suits collections up to some hundred thousand documents.
"""
from __future__ import annotations

import contextlib
import functools
import os
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pyterrier as pt

from ..engine.frames import ranked_hits, require_frame, retrieval_queries
from ._stopwords import TERRIER

__all__ = ["BM25", "bm25_retriever"]

_TERMS = re.compile(r"[^\W_]+")
_IDF_FLOOR = 1e-6  # PISA's epsilon_score: a term in more than half the documents still counts a little


def _stemmer(name: str | None):
    if name is None:
        return lambda word: word
    if name != "porter2":
        raise ValueError(f"stemmer must be 'porter2' or None, got {name!r}")
    try:
        import snowballstemmer
    except ImportError:
        raise ImportError("BM25(stemmer='porter2') needs the Snowball stemmer: pip install snowballstemmer "
                          "(or pass stemmer=None)") from None
    # a collection repeats its words: each is stemmed once
    return functools.lru_cache(maxsize=None)(snowballstemmer.stemmer("english").stemWord)


class BM25(pt.Transformer):
    """BM25 over ``docs`` (a frame with ``docno`` and ``text_field``), indexed in memory.

    Args:
        docs: the documents.
        num_results: documents returned per query (those holding at least one query term).
        k1, b: BM25's parameters (PISA's defaults).
        stemmer: ``"porter2"`` (PISA's default; needs the ``snowballstemmer`` package) or ``None``.
        stops: ``"terrier"`` (Terrier's stopword list, PISA's default) or ``None`` (every word counts).
        text_field: the column of ``docs`` to index.
    """

    def __init__(self, docs: pd.DataFrame, *, num_results: int = 1000, k1: float = 0.9, b: float = 0.4,
                 stemmer: str | None = "porter2", stops: str | None = "terrier", text_field: str = "text"):
        docs = require_frame(docs, "docs", ["docno", text_field])
        if not len(docs):
            raise ValueError("BM25: docs has no rows")
        if stops not in ("terrier", None):
            raise ValueError(f"stops must be 'terrier' or None, got {stops!r}")
        self.num_results, self.k1, self.b, self.stemmer, self.stops = num_results, k1, b, stemmer, stops
        self._stem = _stemmer(stemmer)
        # stemmed, and compared with stemmed terms, as PISA does ("hastings" stems to the stopword "hast")
        self._stopwords = frozenset(map(self._stem, TERRIER)) if stops else frozenset()
        self.docnos = docs["docno"].astype(str).to_numpy()
        texts = docs[text_field].fillna("").astype(str).str.lower()
        counts = [Counter(self.terms(text)) for text in texts]
        # |d| counts every word, stopwords too, as PISA's document lengths do
        lengths = np.array([len(_TERMS.findall(text)) for text in texts], dtype=np.float64)
        # PISA's norm_len: |d| / avgdl, folded into each document's tf denominator once
        self._length_norm = k1 * (1 - b + b * lengths / max(lengths.mean(), 1e-9))
        postings: dict[str, tuple[list[int], list[int]]] = {}
        for position, count in enumerate(counts):
            for term, tf in count.items():
                docs_of, tfs = postings.setdefault(term, ([], []))
                docs_of.append(position)
                tfs.append(tf)
        self._postings = {term: (np.array(d), np.array(t, dtype=np.float64)) for term, (d, t) in postings.items()}

    def terms(self, text: str) -> list[str]:
        """The index terms of ``text``: lowercased runs of letters and digits, stemmed, but stopwords."""
        return [term for term in map(self._stem, _TERMS.findall(text.lower())) if term not in self._stopwords]

    def idf(self, term: str) -> float:
        """PISA's idf of an index term (``terms``' output), floored at 1e-6."""
        df = len(self._postings[term][0]) if term in self._postings else 0
        n = len(self.docnos)
        return max(_IDF_FLOOR, float(np.log((n - df + 0.5) / (df + 0.5))))

    def scores(self, query: str) -> np.ndarray:
        """Every document's BM25 score for ``query`` (0 where it holds no query term), in ``docs`` order."""
        scores = np.zeros(len(self.docnos))
        for term, repeats in Counter(self.terms(query)).items():
            if term in self._postings:
                positions, tf = self._postings[term]
                scores[positions] += repeats * self.idf(term) * (self.k1 + 1) * tf / (tf + self._length_norm[positions])
        return scores

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        queries = retrieval_queries(inp, self)
        hits = []
        for qid, query in zip(queries["qid"], queries["query"].astype(str)):
            scores = self.scores(query)
            matched = np.flatnonzero(scores)
            # highest score first; ties in the documents' order, so every run ranks alike
            top = matched[np.lexsort((matched, -scores[matched]))][:self.num_results]
            hits += [(qid, self.docnos[i], float(scores[i])) for i in top]
        return ranked_hits(queries, hits)

    def fuse_rank_cutoff(self, k: int):
        clone = object.__new__(BM25)  # the same index, fewer results: no re-indexing
        clone.__dict__.update(self.__dict__, num_results=min(k, self.num_results))
        return clone

    def __repr__(self) -> str:
        return (f"BM25({len(self.docnos)} documents, k1={self.k1}, b={self.b}, stemmer={self.stemmer!r}, "
                f"stops={self.stops!r})")


def bm25_retriever(docs: pd.DataFrame, index_dir: str | Path, *, num_results: int = 1000,
                   quiet: bool = True) -> pt.Transformer:
    """BM25 over ``docs`` (``docno, text``): PISA's, indexed into ``index_dir`` (overwritten), where
    PyTerrier-PISA is installed; elsewhere (PISA has Linux x86_64 wheels only) :class:`BM25`, in
    memory, and ``index_dir`` is left alone. ``quiet``: PISA's native log of every step of indexing
    and compressing is not shown."""
    try:
        from pyterrier_pisa import PisaIndex
    except ImportError:
        return BM25(docs, num_results=num_results)
    index = PisaIndex(str(index_dir), text_field="text", overwrite=True)
    with native_output_silenced() if quiet else contextlib.nullcontext():
        index.index(docs.to_dict("records"))
        return index.bm25(num_results=num_results)


@contextlib.contextmanager
def native_output_silenced():
    """Sends what native code writes to file descriptors 1 and 2 to /dev/null (Jupyter, too,
    forwards the descriptors to the notebook)."""
    sys.stdout.flush(), sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1), os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        os.close(saved[0]), os.close(saved[1])

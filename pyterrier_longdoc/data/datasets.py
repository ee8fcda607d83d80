"""The papers' collections through ``ir_datasets``, with document text for re-ranking.

``load_collection(name, fold=None)`` gives the topics, the qrels and a ``pt.Transformer`` that
adds the document text by docno (``bm25 >> collection.text >> model``):

- ``msmarco-document/train``, ``msmarco-document/dev``: the same ir_datasets ids; text = title + body
- ``msmarco-document/trec-dl-2019`` / ``-2020``: ``msmarco-document/trec-dl-2019/judged`` (/2020); title + body
- ``msmarco-document-v2/trec-dl-2021``: ``msmarco-document-v2/trec-dl-2021/judged``; title + headings + body
- ``robust04-title`` / ``robust04-desc``: ``disks45/nocr/trec-robust-2004``; title + body

Any other ir_datasets id works with an ``irds:`` prefix, as in PyTerrier (``load_collection(
"irds:antique/test")``): the query is the ``text`` (else ``title``) field, the document text its
title/headings/body/text fields (else every string field), joined.

TREC DL topics are the judged queries only (43 / 45 / 57), as evaluated in the papers.
Robust04 uses the topic title or description as the query, and the standard five folds of
Huston & Croft (2014) as used by CEDR and PARADE: ``fold=k`` tests on fold k, validates on
fold k-1 (fold 5 for fold 1) and trains on the other three (OpenNIR's ``trf<k>``/``vaf<k>``
rotation, by the CEDR authors).
The fold qids come from ir_datasets' ``disks45/nocr/trec-robust-2004/fold1..5`` subsets (the
same lists as OpenNIR's, from the DRMM release); pass ``folds=`` to use other ones.

ir_datasets downloads what it needs on first use (Robust04 needs the TREC disks 4 & 5, which
are licensed and must be provided locally; see the ir_datasets documentation).
"""
from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyterrier as pt

from .collection import Collection


@dataclass(frozen=True)
class _Spec:
    irds_id: str
    query_field: str
    doc_fields: tuple[str, ...]
    folds: bool = False


_MSMARCO_V1 = ("title", "body")
COLLECTIONS: dict[str, _Spec] = {
    "msmarco-document/train": _Spec("msmarco-document/train", "text", _MSMARCO_V1),
    "msmarco-document/dev": _Spec("msmarco-document/dev", "text", _MSMARCO_V1),
    "msmarco-document/trec-dl-2019": _Spec("msmarco-document/trec-dl-2019/judged", "text", _MSMARCO_V1),
    "msmarco-document/trec-dl-2020": _Spec("msmarco-document/trec-dl-2020/judged", "text", _MSMARCO_V1),
    "msmarco-document-v2/trec-dl-2021": _Spec("msmarco-document-v2/trec-dl-2021/judged", "text",
                                              ("title", "headings", "body")),
    "robust04-title": _Spec("disks45/nocr/trec-robust-2004", "title", ("title", "body"), folds=True),
    "robust04-desc": _Spec("disks45/nocr/trec-robust-2004", "description", ("title", "body"), folds=True),
}
_TEXT_FIELDS = ("title", "headings", "body", "text", "contents", "abstract")
ROBUST04_FOLD_IDS = tuple(f"disks45/nocr/trec-robust-2004/fold{k}" for k in range(1, 6))


class DocumentText(pt.Transformer):
    """Adds ``text_field`` by docno from an ir_datasets docstore: the ``fields`` joined by a space.

    Every other column is kept; an unknown docno raises a ``KeyError`` naming it.
    """

    def __init__(self, dataset, fields: Sequence[str], *, text_field: str = "text", name: str | None = None):
        self.dataset = dataset
        self.fields = tuple(fields)
        self.text_field = text_field
        self.name = name or "ir_datasets"
        self._store: Any = None  # the ir_datasets docstore (untyped), opened at the first call

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["docno"], context=self)
        if not len(inp):
            return inp.assign(**{self.text_field: pd.Series(dtype="object")})
        if self._store is None:
            self._store = self.dataset.docs_store()
        docnos = inp["docno"].astype(str)
        docs = self._store.get_many(list(dict.fromkeys(docnos)))
        missing = sorted(set(docnos) - set(docs))
        if missing:
            raise KeyError(f"{self!r}: {len(missing)} docnos are not in the collection, e.g. {missing[:5]}")
        texts = {d: " ".join(v for v in (getattr(doc, f, "") or "" for f in self.fields) if v)
                 for d, doc in docs.items()}
        return inp.assign(**{self.text_field: [texts[d] for d in docnos]})

    def __repr__(self) -> str:
        return f"DocumentText({self.name}, fields={list(self.fields)})"


@dataclass
class LongDocCollection(Collection):
    """What :func:`load_collection` returns (the shape of :mod:`pyterrier_longdoc.data.collection`,
    without documents and positions in memory); unpacks as ``topics, qrels, text``.

    Attributes:
        topics: ``qid, query`` (with a fold: the test fold's topics).
        qrels: ``qid, docno, label`` of every topic of the collection.
        text: a ``pt.Transformer`` adding the ``text`` column by docno.
        splits: with a fold, ``{"train", "valid", "test"}`` topic frames; else empty.
    """

    name: str
    irds_id: str
    topics: pd.DataFrame
    qrels: pd.DataFrame
    text: pt.Transformer
    splits: dict[str, pd.DataFrame] = field(default_factory=dict)
    dataset: Any = field(default=None, repr=False)

    documents = positions = None  # too large to hold, or not known

    def split(self, name: str) -> LongDocCollection:
        """The collection with the topics (and qrels) of ``"train"``, ``"valid"`` or ``"test"``
        (needs a fold); unpack it as ``topics, qrels, text``."""
        if name not in self.splits:
            raise ValueError(f"{self.name} has no split {name!r}; splits: {sorted(self.splits) or 'none (no fold)'}")
        topics = self.splits[name]  # self.topics holds the test fold's only
        qrels = self._with_topics(set(topics["qid"]))["qrels"]
        return dataclasses.replace(self, topics=topics, qrels=qrels)

    def candidates(self, k: int = 100) -> pd.DataFrame:
        """The collection's official first-stage run (MS MARCO's top 100), ``qid, docno, score, rank``,
        for the topics (``k`` per query); ``ValueError`` when the collection has none."""
        if self.dataset is None or not getattr(self.dataset, "has_scoreddocs", lambda: False)():
            raise ValueError(f"{self.name} has no official run in ir_datasets; retrieve candidates with a "
                             "first stage (e.g. BM25)")
        qids = set(self.topics["qid"])
        rows = [(str(s.query_id), str(s.doc_id), float(s.score)) for s in self.dataset.scoreddocs_iter()
                if str(s.query_id) in qids]
        run = pd.DataFrame(rows, columns=["qid", "docno", "score"])
        run = run.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
        run = run.groupby("qid", sort=False).head(k).reset_index(drop=True)
        return pt.model.add_ranks(run)


def load_collection(name: str, fold: int | None = None, *, folds: Sequence[Iterable[str]] | None = None,
                    doc_fields: Sequence[str] | None = None, text_field: str = "text",
                    irds_id: str | None = None) -> LongDocCollection:
    """Topics, qrels and a text lookup of one of the papers' collections (see the module doc).

    Args:
        name: one of ``COLLECTIONS``, or ``"irds:"`` and any ir_datasets id.
        fold: Robust04 only: the test fold, 1 to 5 (or to ``len(folds)``).
        folds: Robust04 only: your own folds, a list of qid lists, instead of the standard five.
        doc_fields: the document fields joined into the text (default in the table above).
        text_field: the column the text lookup adds.
        irds_id: read the collection from this ir_datasets id instead (a local copy registered
            under another id, or a small stand-in): ``name`` still gives the query field, the
            document fields and whether it has folds.
    """
    import ir_datasets

    if name.startswith("irds:"):
        if irds_id is not None:
            raise ValueError(f"irds_id= gives another source to a named collection; {name!r} names its id already")
        dataset = ir_datasets.load(name[len("irds:"):])
        spec = _generic_spec(name[len("irds:"):], dataset)
    elif name in COLLECTIONS:
        spec = COLLECTIONS[name]
        if irds_id is not None:
            spec = dataclasses.replace(spec, irds_id=irds_id)
        dataset = ir_datasets.load(spec.irds_id)
    else:
        raise ValueError(f"unknown collection {name!r}; known collections: {', '.join(COLLECTIONS)}, "
                         "or 'irds:' and any ir_datasets id")
    if not spec.folds and (fold is not None or folds is not None):
        raise ValueError(f"{name} has no folds; fold= and folds= are for the Robust04 collections")
    topics = pd.DataFrame([(str(q.query_id), getattr(q, spec.query_field)) for q in dataset.queries_iter()],
                          columns=["qid", "query"])
    qrels = pd.DataFrame([(str(r.query_id), str(r.doc_id), int(r.relevance)) for r in _qrels_iter(dataset)],
                         columns=["qid", "docno", "label"])
    text = DocumentText(dataset, doc_fields or spec.doc_fields, text_field=text_field, name=spec.irds_id)
    collection = LongDocCollection(name, spec.irds_id, topics, qrels, text, dataset=dataset)
    if fold is None:
        if folds is not None:
            raise ValueError("folds= needs fold= (the test fold)")
        return collection
    fold_qids = [list(map(str, f)) for f in folds] if folds is not None else _standard_folds(ir_datasets)
    splits = fold_splits(fold_qids, fold)
    known = set(topics["qid"])
    unknown = sorted({q for qids in fold_qids for q in qids} - known)
    if unknown:
        raise ValueError(f"{len(unknown)} fold qids are not topics of {name}, e.g. {unknown[:5]}")
    collection.splits = {split: topics[topics["qid"].isin(set(qids))].reset_index(drop=True)
                         for split, qids in splits.items()}
    collection.topics = collection.splits["test"]
    return collection


def _qrels_iter(dataset):
    return dataset.qrels_iter() if getattr(dataset, "has_qrels", lambda: True)() else iter(())


def _generic_spec(irds_id: str, dataset) -> _Spec:
    if not (dataset.has_docs() and dataset.has_queries()):
        raise ValueError(f"ir_datasets {irds_id!r} needs documents and queries for re-ranking")
    query_fields = [f for f in dataset.queries_cls()._fields if f != "query_id"]
    query_field = next((f for f in ("text", "title") if f in query_fields), query_fields[0])
    doc_fields = [f for f in dataset.docs_cls()._fields if f != "doc_id" and _is_text(dataset.docs_cls(), f)]
    if not doc_fields:
        raise ValueError(f"ir_datasets {irds_id!r}: its documents ({dataset.docs_cls().__name__}) have no text field")
    return _Spec(irds_id, query_field, tuple([f for f in doc_fields if f in _TEXT_FIELDS] or doc_fields))


def _is_text(doc_cls, field: str) -> bool:
    """Whether a document field holds text; annotations may be strings (``from __future__ import
    annotations`` in the module that defines the document class)."""
    annotation = doc_cls.__annotations__.get(field)
    if isinstance(annotation, typing.ForwardRef):  # what NamedTuple makes of a string annotation
        annotation = annotation.__forward_arg__
    return annotation is str or annotation == "str"


def _standard_folds(ir_datasets) -> list[list[str]]:
    return [sorted(str(q.query_id) for q in ir_datasets.load(i).queries_iter()) for i in ROBUST04_FOLD_IDS]


def fold_splits(folds: Sequence[Sequence[str]], fold: int) -> dict[str, list[str]]:
    """The train / valid / test qids for test fold ``fold`` (1-based): valid is the fold before
    it (the last for fold 1), train the rest."""
    n = len(folds)
    if n < 3:
        raise ValueError(f"need at least 3 folds (train, valid, test), got {n}")
    if not isinstance(fold, int) or not 1 <= fold <= n:
        raise ValueError(f"fold must be an integer from 1 to {n}, got {fold!r}")
    seen: set[str] = set()
    for qids in folds:
        overlap = seen & set(qids)
        if overlap:
            raise ValueError(f"folds overlap, e.g. qid {sorted(overlap)[0]!r}")
        seen |= set(qids)
    test, valid = fold - 1, (fold - 2) % n
    return {"train": [q for i, qids in enumerate(folds) if i not in (test, valid) for q in qids],
            "valid": list(folds[valid]), "test": list(folds[test])}


__all__ = ["COLLECTIONS", "DocumentText", "LongDocCollection", "fold_splits", "load_collection"]

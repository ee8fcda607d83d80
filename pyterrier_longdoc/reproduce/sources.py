"""Where a row's data come from: ir_datasets collections (through an id map, so a local copy or a
small stand-in can take a paper's id), BM25 candidates over their documents with PyTerrier-PISA
(or a given TREC run), and the FarRelevant collections built from MS MARCO passages."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..data.datasets import LongDocCollection, load_collection
from ..data.bm25 import native_output_silenced
from .registry import Column

__all__ = ["Sources"]


@dataclass
class Sources:
    """Loads what a row reads, once per run.

    ``datasets`` maps a paper's ir_datasets id to the id to read instead; ``runs`` maps a column
    name (or the training collection's id) to a TREC run file that replaces BM25 (e.g. the
    authors' cached runs); ``max_queries`` caps the topics of every collection (a smaller run,
    not comparable with the published values)."""

    folder: Path
    datasets: Mapping[str, str] = field(default_factory=dict)
    runs: Mapping[str, str] = field(default_factory=dict)
    max_queries: int | None = None
    _indexes: dict = field(default_factory=dict)

    def irds_id(self, paper_id: str) -> str:
        return self.datasets.get(paper_id, paper_id)

    def collection(self, name: str, paper_id: str, fold: int | None = None, folds: tuple[str, ...] = (),
                   max_queries: int | None = None) -> LongDocCollection:
        """A collection with its judged topics only, capped at ``max_queries`` (the first by qid)."""
        fold_qids = [self._qids(f) for f in folds] if fold is not None else None
        loaded = load_collection(name, fold, folds=fold_qids, irds_id=self.irds_id(paper_id))
        return _judged(loaded, _smaller(max_queries, self.max_queries))

    def _qids(self, paper_id: str) -> list[str]:
        import ir_datasets

        return sorted(str(q.query_id) for q in ir_datasets.load(self.irds_id(paper_id)).queries_iter())

    def candidates(self, collection: LongDocCollection, key: str, depth: int) -> pd.DataFrame:
        """``qid, query, docno, score, rank`` for the collection's topics: the run file given for
        ``key``, else BM25's top ``depth`` over the collection's documents."""
        topics = collection.topics
        if key in self.runs:
            import pyterrier as pt

            run = pt.io.read_results(self.runs[key]).astype({"qid": str, "docno": str})
            run = run[run["qid"].isin(set(topics["qid"]))]
            if run.empty:
                raise ValueError(f"{self.runs[key]}: no qid of the run is a topic of {collection.name}")
            run = run.sort_values(["qid", "rank"], kind="stable").groupby("qid").head(depth)
            return topics.merge(run.assign(rank=run.groupby("qid").cumcount()), on="qid")
        return self.bm25(collection.irds_id, collection.dataset, depth)(topics)

    def bm25(self, irds_id: str, dataset, depth: int):
        """BM25 (PyTerrier-PISA) over the documents of ``irds_id``, indexed once per document set
        (MS MARCO's dev and TREC DL topics share one index)."""
        import ir_datasets

        try:
            docs_id = ir_datasets.docs_parent_id(irds_id)
        except Exception:  # ids registered at run time (stand-ins) may have no parent
            docs_id = irds_id
        if docs_id not in self._indexes:
            self._indexes[docs_id] = _pisa_index(self.folder / "indexes" / docs_id.replace("/", "--"),
                                                 ({"docno": d.doc_id, "text": _text(d)} for d in dataset.docs_iter()))
        return self._indexes[docs_id].bm25(num_results=depth)

    def far_relevant(self, column: Column, split: str, max_queries: int | None, seed: int, tokenizer=None):
        """The FarRelevant collection (``far`` variant) of the test (dev/small) or training queries,
        with BM25's candidates over its documents (the relevant document always among them);
        positions counted in ``tokenizer``'s tokens (a hub id or a local path; None: words)."""
        from ..diagnostics import build_far_relevant, load_passage_collection

        paper_id = column.irds_ids[0 if split == "test" else 1]
        passages, queries, qrels = load_passage_collection(self.irds_id(paper_id))
        queries = queries.sort_values("qid", kind="stable").head(_smaller(max_queries, self.max_queries) or len(queries))
        folder = self.folder / "indexes" / f"farrelevant-{split}"

        def retriever(documents: pd.DataFrame):
            return _pisa_index(folder, documents.to_dict("records")).bm25(num_results=column.first_stage.depth)

        return build_far_relevant(passages, queries, qrels, negatives=0, retriever=retriever, tokenizer=tokenizer,
                                  retrieved_negatives=column.first_stage.depth - 1, seed=seed)


def _pisa_index(folder: Path, records):
    from pyterrier_pisa import PisaIndex

    index = PisaIndex(str(folder), text_field="text", overwrite=True)
    with native_output_silenced():
        index.index(records)
    return index


def _text(doc) -> str:
    return " ".join(v for k, v in doc._asdict().items() if k != "doc_id" and isinstance(v, str) and v)


def _smaller(a: int | None, b: int | None) -> int | None:
    return min(x for x in (a, b) if x is not None) if a is not None or b is not None else None


def _judged(collection: LongDocCollection, max_queries: int | None) -> LongDocCollection:
    """Only topics with a relevant document (the papers evaluate judged queries), the first
    ``max_queries`` by qid; the splits of a fold likewise."""
    import dataclasses

    relevant = set(collection.qrels.loc[collection.qrels["label"] > 0, "qid"])

    def select(topics: pd.DataFrame) -> pd.DataFrame:
        kept = topics[topics["qid"].isin(relevant)].sort_values("qid", kind="stable")
        return (kept.head(max_queries) if max_queries else kept).reset_index(drop=True)

    splits = {name: select(topics) for name, topics in collection.splits.items()}
    return dataclasses.replace(collection, topics=select(collection.topics), splits=splits)

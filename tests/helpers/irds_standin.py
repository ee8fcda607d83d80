"""A small ir_datasets dataset built from local files and registered under a fresh id: the real
ir_datasets code paths (registry, TsvDocs docstore, TrecQrels), with no download."""
import itertools
from typing import NamedTuple

import ir_datasets
from ir_datasets.datasets.base import Dataset
from ir_datasets.formats import GenericDoc, GenericQuery, TrecQrels, TsvDocs, TsvQueries
from ir_datasets.util import LocalDownload

_ids = itertools.count()


class StandInDoc(NamedTuple):
    doc_id: str
    title: str
    body: str
    url: str


DOCS = {"D1": ("Cats", "A cat is an animal.", "http://a"), "D2": ("Dogs", "Kibble for dogs.", "http://b"),
        "D3": ("Rivers", "Water flows.", "http://c")}
QUERIES = {"1": "what is a cat", "2": "dog food"}
QRELS = [("1", "D1", 2), ("2", "D2", 1), ("2", "D3", 0)]


def register_standin(folder, doc_cls=StandInDoc) -> str:
    """Writes the files into ``folder`` and returns the ir_datasets id it is registered under."""
    (folder / "docs.tsv").write_text("".join(f"{d}\t{t}\t{b}\t{u}\n" for d, (t, b, u) in DOCS.items()))
    (folder / "queries.tsv").write_text("".join(f"{q}\t{text}\n" for q, text in QUERIES.items()))
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in QRELS))
    irds_id = f"longdoc-standin/{next(_ids)}-{folder.name}"
    ir_datasets.registry.register(irds_id, Dataset(
        TsvDocs(LocalDownload(folder / "docs.tsv"), doc_cls=doc_cls),
        TsvQueries(LocalDownload(folder / "queries.tsv"), query_cls=GenericQuery),
        TrecQrels(LocalDownload(folder / "qrels.txt"), {0: "not relevant", 1: "relevant", 2: "very relevant"})))
    return irds_id


class StandInQuery(NamedTuple):
    query_id: str
    text: str
    title: str
    description: str


def _register(irds_id: str, folder, docs=None, queries=None, qrels=None, doc_cls=StandInDoc) -> str:
    """Registers whichever of docs (tuples of ``doc_cls``'s fields), queries (qid, text) and
    qrels (qid, docno, label) are given, as files in ``folder``."""
    parts = []
    folder.mkdir(parents=True, exist_ok=True)
    if docs is not None:
        (folder / "docs.tsv").write_text("".join("\t".join(d) + "\n" for d in docs))
        parts.append(TsvDocs(LocalDownload(folder / "docs.tsv"), doc_cls=doc_cls))
    if queries is not None:
        (folder / "queries.tsv").write_text("".join(f"{q}\t{t}\t{t}\t{t}\n" for q, t in queries))
        parts.append(TsvQueries(LocalDownload(folder / "queries.tsv"), query_cls=StandInQuery))
    if qrels is not None:
        (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels))
        parts.append(TrecQrels(LocalDownload(folder / "qrels.txt"), {0: "not relevant", 1: "relevant"}))
    ir_datasets.registry.register(irds_id, Dataset(*parts))
    return irds_id


def register_paper_standins(folder, n_queries: int = 10, docs_per_query: int = 3) -> dict[str, str]:
    """Small stand-ins for every ir_datasets id of the reproduction registry: a generated
    long-document collection for MS MARCO documents (train, dev, TREC DL) and Robust04 with five
    folds, and generated passages for MS MARCO passages (FarRelevant's source). Returns the map
    from each paper's id to its stand-in's id."""
    import random

    from helpers.tiny_bert import WORDS

    base = f"longdoc-paper-standin/{next(_ids)}"
    rng = random.Random(0)

    def words(n: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(n))

    # documents of 120 in-vocabulary words (one token each for the tiny BERT); the relevant one of
    # each query holds the query's words
    queries = [(str(q), words(3)) for q in range(1, n_queries + 1)]
    docs, qrels = [], []
    for qid, query in queries:
        for k in range(docs_per_query):
            docno = f"D{qid}-{k}"
            docs.append((docno, "", f"{words(60)} {query if k == 0 else words(3)} {words(57)}", ""))
            qrels.append((qid, docno, int(k == 0)))
    documents = _register(f"{base}/documents", folder / "documents", docs, queries, qrels)
    folds = {f"disks45/nocr/trec-robust-2004/fold{k}": _register(
        f"{base}/robust04/fold{k}", folder / f"fold{k}", queries=queries[k - 1::5]) for k in range(1, 6)}
    passages = [(f"P{i}", words(60)) for i in range(60)]
    passage_queries = [(f"q{i}", " ".join(passages[i][1].split()[:4])) for i in range(4)]
    passage_qrels = [(q, f"P{i}", 1) for i, (q, _) in enumerate(passage_queries)]
    passage_id = _register(f"{base}/passages", folder / "passages", passages, passage_queries, passage_qrels,
                           doc_cls=GenericDoc)
    ids = {paper_id: documents for paper_id in (
        "msmarco-document/train", "msmarco-document/dev", "msmarco-document/trec-dl-2019/judged",
        "msmarco-document/trec-dl-2020/judged", "msmarco-document-v2/trec-dl-2021/judged",
        "disks45/nocr/trec-robust-2004")}
    return {**ids, **folds, "msmarco-passage/dev/small": passage_id, "msmarco-passage/train/judged": passage_id}

"""A small ir_datasets dataset built from local files and registered under a fresh id: the real
ir_datasets code paths (registry, TsvDocs docstore, TrecQrels), with no download."""
import itertools
from typing import NamedTuple

import ir_datasets
from ir_datasets.datasets.base import Dataset
from ir_datasets.formats import GenericQuery, TrecQrels, TsvDocs, TsvQueries
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

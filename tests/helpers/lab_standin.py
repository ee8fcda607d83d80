"""Stand-ins for notebook 6 (the TREC DL 2019 lab), offline and tiny: a generated document
collection with an official top-k run (ir_datasets scoreddocs), its passage collection with passage
qrels, and a random cross-encoder folder in place of the hub model. CI runs the notebook on them
(``PYTERRIER_LONGDOC_LAB_STANDIN=<folder>``): they check that every cell runs, never what the
real run would measure.

``build(folder)`` writes the files and the model (in the test process); ``register(folder)``
registers the two ir_datasets ids (in the notebook's kernel) and returns the notebook's three
names: the document collection (``irds:`` id), the passage collection id, the cross-encoder path.
"""
import itertools
import json
import random
from pathlib import Path
from typing import NamedTuple

QUERIES = 6  # the notebook asserts these counts on the stand-ins
CANDIDATES = 8  # per query, in the official run
_ids = itertools.count()


class StandInDoc(NamedTuple):  # real annotations (no postponed ones): load_collection reads them
    doc_id: str
    title: str
    body: str


def _words(rng: random.Random, n: int, vocabulary: list[str]) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(n))


def build(folder: Path) -> Path:
    """Write the stand-in files and the tiny cross-encoder into ``folder``; returns it."""
    from helpers.tiny_bert import WORDS
    from helpers.cross_encoders import write_cross_encoder

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    filler = [w for w in WORDS if len(w) > 3]  # word-level tokens of the tiny vocabulary
    docs, queries, qrels, run, passages, passage_qrels = [], [], [], [], [], []
    for q in range(1, QUERIES + 1):
        qid = str(q)
        topic = rng.sample(filler, 2)
        queries.append((qid, " ".join(topic)))
        answer = f"{topic[0]} {topic[1]} " + _words(rng, 30, filler)  # the relevant passage
        passages.append((f"P{q}", answer))
        passage_qrels.append((qid, f"P{q}", 3))
        passages.append((f"P{q}n", _words(rng, 30, filler)))
        passage_qrels.append((qid, f"P{q}n", 0))
        for d in range(CANDIDATES + 1):  # the last relevant one is outside the official run
            docno = f"D{q}-{d}"
            label = 3 - d if d < 3 else (1 if d == CANDIDATES else 0)
            length = rng.randrange(200, 900)
            body = _words(rng, length, filler)
            if label:
                cut = rng.choice([0, length // 2, length])  # near the start, in the middle, at the end
                body = " ".join(body.split()[:cut] + [answer] + body.split()[cut:])
            docs.append((docno, f"{topic[0]} page {d}", body))
            qrels.append((qid, docno, label))
            if d < CANDIDATES:
                run.append((qid, docno, d + 1, float(CANDIDATES - d)))
    (folder / "docs.tsv").write_text("".join(f"{d}\t{t}\t{b}\n" for d, t, b in docs))
    (folder / "queries.tsv").write_text("".join(f"{q}\t{t}\n" for q, t in queries))
    (folder / "qrels.txt").write_text("".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels))
    (folder / "run.txt").write_text("".join(f"{q} Q0 {d} {k} {s} official\n" for q, d, k, s in run))
    (folder / "passages.tsv").write_text("".join(f"{p}\t{t}\n" for p, t in passages))
    (folder / "passage-qrels.txt").write_text("".join(f"{q} 0 {p} {r}\n" for q, p, r in passage_qrels))
    model = write_cross_encoder(folder / "cross-encoder")  # the folder of a transformers checkpoint
    (folder / "standin.json").write_text(json.dumps({"cross_encoder": str(model)}))
    return folder


def register(folder) -> tuple[str, str, str]:
    """Register the stand-in document and passage collections with ir_datasets (fresh ids, so a
    re-run cell registers again); returns ``("irds:" + documents id, passages id, model path)``."""
    import ir_datasets
    from ir_datasets.datasets.base import Dataset
    from ir_datasets.formats import GenericDoc, GenericQuery, TrecQrels, TrecScoredDocs, TsvDocs, TsvQueries
    from ir_datasets.util import LocalDownload

    folder = Path(folder)
    n = next(_ids)
    labels = {0: "not relevant", 1: "relevant", 2: "highly relevant", 3: "perfectly relevant"}
    queries = TsvQueries(LocalDownload(folder / "queries.tsv"), query_cls=GenericQuery)
    documents, passages = f"longdoc-lab-standin/{n}/documents", f"longdoc-lab-standin/{n}/passages"
    ir_datasets.registry.register(documents, Dataset(
        TsvDocs(LocalDownload(folder / "docs.tsv"), doc_cls=StandInDoc), queries,
        TrecQrels(LocalDownload(folder / "qrels.txt"), labels),
        TrecScoredDocs(LocalDownload(folder / "run.txt"))))
    ir_datasets.registry.register(passages, Dataset(
        TsvDocs(LocalDownload(folder / "passages.tsv"), doc_cls=GenericDoc), queries,
        TrecQrels(LocalDownload(folder / "passage-qrels.txt"), labels)))
    model = json.loads((folder / "standin.json").read_text())["cross_encoder"]
    return f"irds:{documents}", passages, model

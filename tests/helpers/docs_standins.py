"""Offline stand-ins for the documentation's code: what the user guide's pages take as given.

``prepare(folder)`` writes, into ``folder`` (the working directory of a page's code):

- ``my-cross-encoder``: a tiny random trained-cross-encoder folder (a BERT sequence classifier);
- ``my-encoder``: a tiny random plain encoder; ``my-maxp``: a saved MaxP over ``my-cross-encoder``;
- ``docs.jsonl`` (docno, text, title), ``docs.tsv``, ``collection/`` (Pyserini's id/contents JSON
  lines), ``topics.txt``, ``qrels.txt`` and ``bm25.run``.

``namespace(folder)`` gives the names the pages use without defining them: ``bm25`` (a first
stage over the documents, by shared words), ``text`` (a ``TextLoader`` of ``docs.jsonl``),
``topics``/``qrels`` and their ``train_``/``dev_`` halves.
"""
from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pandas as pd
from helpers.tiny_bert import WORDS, write_tiny_bert
from helpers.cross_encoders import write_cross_encoder

QUERIES = {"q1": "what castle", "q2": "what dog", "q3": "what music", "q4": "what river"}


def _documents() -> pd.DataFrame:
    rng = random.Random(0)
    rows = []
    for qid, query in QUERIES.items():
        word = query.split()[1]
        for j in range(3):
            filler = " ".join(rng.choice(WORDS) for _ in range(60))
            rows.append({"docno": f"{qid}-d{j}", "title": f"{word} {j}",
                         "text": filler + (f" the {word} answer " * 4 if j == 0 else " the house ")})
    return pd.DataFrame(rows)


def prepare(folder: Path) -> Path:
    folder = Path(folder)
    shutil.copytree(write_cross_encoder(folder / "_ce"), folder / "my-cross-encoder")
    shutil.rmtree(folder / "_ce")
    write_tiny_bert(folder / "my-encoder")
    from pyterrier_longdoc import MaxP

    MaxP(str(folder / "my-cross-encoder")).save_pretrained(folder / "my-maxp")
    docs = _documents()
    (folder / "docs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in docs.to_dict("records")))
    (folder / "docs.tsv").write_text("".join(f"{r.docno}\t{r.text}\n" for r in docs.itertuples()))
    (folder / "collection").mkdir()
    (folder / "collection" / "docs.jsonl").write_text(
        "".join(json.dumps({"id": r.docno, "contents": r.text}) + "\n" for r in docs.itertuples()))
    (folder / "topics.txt").write_text("".join(f"{q}\t{text}\n" for q, text in QUERIES.items()))
    (folder / "qrels.txt").write_text("".join(f"{r.docno[:2]} 0 {r.docno} {int(r.docno.endswith('d0'))}\n"
                                              for r in docs.itertuples()))
    (folder / "bm25.run").write_text("".join(f"{r.docno[:2]} Q0 {r.docno} {int(r.docno[-1]) + 1} "
                                             f"{10 - int(r.docno[-1])} bm25\n" for r in docs.itertuples()))
    return folder


def _first_stage(docs: pd.DataFrame):
    """A retrieval stand-in: every document, scored by the words it shares with the query."""
    import pyterrier as pt

    def retrieve(topics: pd.DataFrame) -> pd.DataFrame:
        rows = []
        for topic in topics.itertuples():
            words = set(topic.query.split())
            for doc in docs.itertuples():
                rows.append({"qid": topic.qid, "query": topic.query, "docno": doc.docno,
                             "score": float(sum(w in words for w in doc.text.split()))})
        return pt.model.add_ranks(pd.DataFrame(rows))

    return pt.apply.generic(retrieve)


def namespace(folder: Path) -> dict:
    from pyterrier_longdoc import TextLoader

    folder = Path(folder)
    docs = _documents()
    topics = pd.DataFrame({"qid": list(QUERIES), "query": list(QUERIES.values())})
    qrels = pd.DataFrame({"qid": docs["docno"].str[:2], "docno": docs["docno"],
                          "label": docs["docno"].str.endswith("d0").astype(int)})
    return {"bm25": _first_stage(docs), "text": TextLoader(str(folder / "docs.jsonl")), "topics": topics,
            "qrels": qrels, "train_topics": topics[:2], "train_qrels": qrels[qrels["qid"].isin(["q1", "q2"])],
            "dev_topics": topics[2:].reset_index(drop=True), "dev_qrels": qrels[qrels["qid"].isin(["q3", "q4"])]}

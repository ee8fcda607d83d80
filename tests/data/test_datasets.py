"""Collection loading, on a stand-in for ir_datasets (the real downloads are not reachable in tests)."""
from collections import namedtuple

import ir_datasets
import pandas as pd
import pytest

from pyterrier_longdoc.data.datasets import COLLECTIONS, DocumentText, fold_splits, load_collection

Query = namedtuple("Query", "query_id text")
RobustQuery = namedtuple("RobustQuery", "query_id title description narrative")
Qrel = namedtuple("Qrel", "query_id doc_id relevance iteration")
MsDoc = namedtuple("MsDoc", "doc_id url title body")
MsV2Doc = namedtuple("MsV2Doc", "doc_id url title headings body")
RobustDoc = namedtuple("RobustDoc", "doc_id title body marked_up_doc")
Scored = namedtuple("Scored", "query_id doc_id score")


class FakeStore:
    def __init__(self, docs):
        self.docs = {d.doc_id: d for d in docs}
        self.calls = 0

    def get_many(self, ids):
        self.calls += 1
        return {i: self.docs[i] for i in ids if i in self.docs}


class FakeDataset:
    def __init__(self, queries, qrels=(), docs=(), scored=None):
        self.queries, self.qrels, self.store, self.scored = list(queries), list(qrels), FakeStore(docs), scored

    def queries_iter(self):
        return iter(self.queries)

    def qrels_iter(self):
        return iter(self.qrels)

    def docs_store(self):
        return self.store

    def has_scoreddocs(self):
        return self.scored is not None

    def scoreddocs_iter(self):
        return iter(self.scored)


ROBUST_QIDS = [str(q) for q in range(301, 311)]  # 10 topics, 5 folds of 2 in the stand-in
STAND_IN_FOLDS = [ROBUST_QIDS[i::5] for i in range(5)]


def stand_ins():
    msmarco = FakeDataset([Query("1", "what is a cat"), Query("2", "dog food")],
                          [Qrel("1", "D1", 1, "0"), Qrel("2", "D2", 3, "0")],
                          [MsDoc("D1", "http://a", "Cats", "A cat is an animal."),
                           MsDoc("D2", "http://b", "", "Kibble.")],
                          scored=[Scored("1", "D2", 3.0), Scored("1", "D1", 5.0), Scored("2", "D2", 1.0),
                                  Scored("3", "D1", 9.0)])
    v2 = FakeDataset([Query("7", "q")], [Qrel("7", "msmarco_doc_00_1", 2, "0")],
                     [MsV2Doc("msmarco_doc_00_1", "u", "T", "H1 H2", "B")])
    robust = FakeDataset([RobustQuery(q, f"title {q}", f"description {q}", "n") for q in ROBUST_QIDS],
                         [Qrel(q, f"FBIS-{q}", 1, "0") for q in ROBUST_QIDS],
                         [RobustDoc("FBIS-301", "Head", "Body text", "<DOC>")])
    datasets = {"msmarco-document/trec-dl-2019/judged": msmarco, "msmarco-document-v2/trec-dl-2021/judged": v2,
                "disks45/nocr/trec-robust-2004": robust}
    for k, qids in enumerate(STAND_IN_FOLDS, 1):
        datasets[f"disks45/nocr/trec-robust-2004/fold{k}"] = FakeDataset(
            [q for q in robust.queries if q.query_id in qids])
    return datasets


@pytest.fixture
def loaded(monkeypatch):
    datasets, calls = stand_ins(), []

    def load(irds_id):
        calls.append(irds_id)
        if irds_id not in datasets:
            raise KeyError(irds_id)
        return datasets[irds_id]

    monkeypatch.setattr(ir_datasets, "load", load)
    return datasets, calls


def test_msmarco_dl19_topics_qrels_text_and_official_run(loaded):
    datasets, calls = loaded
    topics, qrels, text = load_collection("msmarco-document/trec-dl-2019")
    assert calls == ["msmarco-document/trec-dl-2019/judged"]  # the judged queries, as in the papers
    assert topics.to_dict("list") == {"qid": ["1", "2"], "query": ["what is a cat", "dog food"]}
    assert qrels.to_dict("list") == {"qid": ["1", "2"], "docno": ["D1", "D2"], "label": [1, 3]}
    frame = pd.DataFrame({"qid": ["1", "1", "2"], "docno": ["D1", "D2", "D1"], "score": [1.0, 2.0, 3.0]})
    out = text(frame)
    assert out["text"].tolist() == ["Cats A cat is an animal.", "Kibble.", "Cats A cat is an animal."]
    assert out["score"].tolist() == [1.0, 2.0, 3.0]
    assert datasets["msmarco-document/trec-dl-2019/judged"].store.calls == 1  # one lookup per call
    assert text(frame.iloc[:0])["text"].tolist() == []
    with pytest.raises(KeyError, match="NOPE"):
        text(pd.DataFrame({"docno": ["NOPE"]}))
    run = load_collection("msmarco-document/trec-dl-2019").candidates(k=1)
    assert run[["qid", "docno", "rank"]].values.tolist() == [["1", "D1", 0], ["2", "D2", 0]]  # qid 3 is no topic


def test_msmarco_v2_text_has_headings_and_fields_can_change(loaded):
    collection = load_collection("msmarco-document-v2/trec-dl-2021")
    frame = pd.DataFrame({"docno": ["msmarco_doc_00_1"]})
    assert collection.text(frame)["text"].iloc[0] == "T H1 H2 B"
    body = load_collection("msmarco-document-v2/trec-dl-2021", doc_fields=["body"], text_field="body_text")
    assert body.text(frame)["body_text"].iloc[0] == "B"
    assert "body" in repr(body.text) and collection.qrels["label"].tolist() == [2]
    with pytest.raises(ValueError, match="no official run"):
        collection.candidates()


def test_robust04_title_and_description_with_the_standard_folds(loaded):
    _, calls = loaded
    title = load_collection("robust04-title", fold=1)
    assert set(calls) >= {f"disks45/nocr/trec-robust-2004/fold{k}" for k in range(1, 6)}
    # fold 1: test fold 1, valid fold 5, train folds 2-4
    assert title.topics["qid"].tolist() == STAND_IN_FOLDS[0]
    assert title.splits["valid"]["qid"].tolist() == STAND_IN_FOLDS[4]
    assert sorted(title.splits["train"]["qid"]) == sorted(STAND_IN_FOLDS[1] + STAND_IN_FOLDS[2] + STAND_IN_FOLDS[3])
    assert title.topics["query"].iloc[0] == "title 301"
    assert len(title.qrels) == 10  # qrels of every topic; split() filters them
    train_topics, train_qrels, _ = title.split("train")  # a collection: topics, qrels, text
    assert set(train_qrels["qid"]) == set(train_topics["qid"])
    assert title.text(pd.DataFrame({"docno": ["FBIS-301"]}))["text"].iloc[0] == "Head Body text"
    desc = load_collection("robust04-desc")
    assert desc.topics["query"].tolist()[:2] == ["description 301", "description 302"] and desc.splits == {}
    with pytest.raises(ValueError, match="no split"):
        desc.split("train")


def test_user_folds_and_errors(loaded):
    mine = [ROBUST_QIDS[:4], ROBUST_QIDS[4:7], ROBUST_QIDS[7:]]
    collection = load_collection("robust04-title", fold=2, folds=mine)
    assert collection.topics["qid"].tolist() == mine[1]
    assert collection.splits["valid"]["qid"].tolist() == mine[0]
    assert collection.splits["train"]["qid"].tolist() == mine[2]
    with pytest.raises(ValueError, match="not topics"):
        load_collection("robust04-title", fold=1, folds=[["301"], ["302"], ["999"]])
    with pytest.raises(ValueError, match="unknown collection"):
        load_collection("robust05")
    with pytest.raises(ValueError, match="no folds"):
        load_collection("msmarco-document/trec-dl-2019", fold=1)
    with pytest.raises(ValueError, match="from 1 to 5"):
        load_collection("robust04-title", fold=6)


def test_fold_splits_rotation():
    folds = [["a"], ["b"], ["c"], ["d"], ["e"]]
    assert fold_splits(folds, 1) == {"train": ["b", "c", "d"], "valid": ["e"], "test": ["a"]}
    assert fold_splits(folds, 3) == {"train": ["a", "d", "e"], "valid": ["b"], "test": ["c"]}
    with pytest.raises(ValueError, match="overlap"):
        fold_splits([["a"], ["a"], ["b"]], 1)
    with pytest.raises(ValueError, match="at least 3"):
        fold_splits([["a"], ["b"]], 1)


def test_registry_names_the_papers_collections():
    assert {"msmarco-document/dev", "msmarco-document/trec-dl-2019", "msmarco-document/trec-dl-2020",
            "msmarco-document-v2/trec-dl-2021", "robust04-title", "robust04-desc"} <= set(COLLECTIONS)
    assert COLLECTIONS["robust04-desc"].query_field == "description"
    assert isinstance(DocumentText(None, ["body"]), DocumentText)


def test_any_ir_datasets_id_with_the_irds_prefix(tmp_path):
    from helpers.irds_standin import register_standin

    irds_id = register_standin(tmp_path)  # a real ir_datasets dataset from local files, no download
    topics, qrels, text = load_collection(f"irds:{irds_id}")
    assert topics.to_dict("list") == {"qid": ["1", "2"], "query": ["what is a cat", "dog food"]}
    assert qrels.values.tolist() == [["1", "D1", 2], ["2", "D2", 1], ["2", "D3", 0]]
    out = text(pd.DataFrame({"qid": ["2"], "docno": ["D2"]}))
    assert out["text"].tolist() == ["Dogs Kibble for dogs."]  # title and body joined; the url left out
    body = load_collection(f"irds:{irds_id}", doc_fields=["body"]).text
    assert body(pd.DataFrame({"docno": ["D3"]}))["text"].tolist() == ["Water flows."]
    with pytest.raises(ValueError, match="no folds"):
        load_collection(f"irds:{irds_id}", fold=1)
    with pytest.raises(ValueError, match="irds:"):
        load_collection(irds_id)  # without the prefix: not one of the named collections


def test_document_classes_with_string_annotations_keep_their_text(tmp_path):
    from helpers.irds_standin import register_standin

    namespace = {}  # a class defined under `from __future__ import annotations`: its annotations are strings
    exec("from __future__ import annotations\nfrom typing import NamedTuple\n"
         "class LazyDoc(NamedTuple):\n    doc_id: str\n    title: str\n    body: str\n    url: str\n", namespace)
    assert namespace["LazyDoc"].__annotations__["body"] is not str
    text = load_collection(f"irds:{register_standin(tmp_path, namespace['LazyDoc'])}").text
    assert text(pd.DataFrame({"docno": ["D2"]}))["text"].tolist() == ["Dogs Kibble for dogs."]

"""One collection shape: generated, FarRelevant-style and loaded collections name the same things
the same way (topics, qrels, text, documents, positions, split, unpacking)."""
import pandas as pd
import pytest

from pyterrier_longdoc.data.collection import Collection
from pyterrier_longdoc.diagnostics import build_far_relevant
from pyterrier_longdoc.data.synthetic import make_collection

POSITION_COLUMNS = ["qid", "docno", "char_start", "char_end"]


def check_shape(collection: Collection) -> None:
    assert isinstance(collection, Collection)
    topics, qrels, text = collection
    assert {"qid", "query"} <= set(topics.columns) and {"qid", "docno", "label"} <= set(qrels.columns)
    assert list(collection.documents.columns[:2]) == ["docno", "text"]
    assert set(POSITION_COLUMNS) <= set(collection.positions.columns)
    first = collection.positions.iloc[0]
    document = collection.documents.set_index("docno").loc[first["docno"], "text"]
    assert document[first["char_start"]:first["char_end"]]  # the passage is a slice of the document's text
    added = text(pd.DataFrame({"docno": [first["docno"]]}))
    assert added["text"].iloc[0] == document
    with pytest.raises(KeyError):
        text(pd.DataFrame({"docno": ["no-such-docno"]}))
    assert len(list(collection.get_corpus_iter())) == len(collection.documents)


def test_the_generated_collection_has_the_one_shape():
    collection = make_collection(n_queries=8)
    check_shape(collection)
    train = collection.split("train")
    assert type(train) is type(collection) and set(train.positions["qid"]) <= set(train.topics["qid"])
    # version 0.1's names still answer
    assert collection.docs is collection.documents and "start_char" in collection.answers.columns
    assert collection.get_text()(collection.qrels[:1])["text"].iloc[0]


def test_the_far_relevant_collection_has_the_one_shape(corpus):  # noqa: F811
    collection = build_far_relevant(*corpus, variant="far")
    check_shape(collection)
    qids = collection.topics["qid"].iloc[:2]
    part = collection.split(qids)
    assert type(part) is type(collection) and set(part.topics["qid"]) == set(qids)
    assert set(part.candidates["qid"]) == set(qids) and set(part.qrels["qid"]) == set(qids)
    assert collection.queries is collection.topics  # version 0.1's name

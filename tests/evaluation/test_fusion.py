"""Fusion with the first stage: per-query normalisation, the weight chosen on validation (ties to the re-ranker),
saved with a model, tuned by pt.GridSearch, and clear errors where the first stage's scores are missing."""
import json
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_longdoc as pl
from pyterrier_longdoc.fusion import Fusion, FirstStageFusion, choose_weight, fuse_runs, normalised


def candidates() -> pd.DataFrame:
    """Two queries of three candidates; the first stage's scores (BM25-like) in ``score``, the relevant
    documents d1 (q1) and e0 (q2); ``model`` is what the toy re-ranker below scores each pair."""
    return pd.DataFrame({"qid": ["q1"] * 3 + ["q2"] * 3, "query": ["red cat"] * 3 + ["blue river"] * 3,
                         "docno": ["d0", "d1", "d2", "e0", "e1", "e2"],
                         "text": ["a", "b", "c", "d", "e", "f"],
                         "score": [12.0, 11.0, 2.0, 9.0, 3.0, 1.0],
                         "model": [0.0, 1.0, 5.0, 0.9, 1.0, 0.0]})


QRELS = pd.DataFrame({"qid": ["q1", "q2"], "docno": ["d1", "e0"], "label": [1, 1]})


def toy_reranker() -> pt.Transformer:
    return pt.apply.doc_score(lambda row: float(row["model"]))


def test_normalisation_is_per_query_and_constant_queries_contribute_nothing():
    scores, qids = pd.Series([1.0, 3.0, 5.0, 7.0, 7.0]), pd.Series(["a", "a", "a", "b", "b"])
    np.testing.assert_allclose(normalised(scores, qids), [0.0, 0.5, 1.0, 0.0, 0.0])
    z = normalised(scores, qids, "zscore")
    np.testing.assert_allclose(z[:3], [-1.224745, 0.0, 1.224745], rtol=1e-5)
    np.testing.assert_allclose(z[3:], [0.0, 0.0])
    with pytest.raises(ValueError, match="normalisation must be one of minmax, zscore; got 'rank'"):
        normalised(scores, qids, "rank")


def test_weight_one_is_the_reranker_and_zero_the_first_stage():
    frame = candidates()
    reranked = toy_reranker()(frame)
    model_alone = fuse_runs(frame, reranked, 1.0)
    first_alone = fuse_runs(frame, reranked, 0.0)
    order = lambda run, qid: run[run["qid"] == qid].sort_values("rank")["docno"].tolist()  # noqa: E731
    assert order(model_alone, "q1") == ["d2", "d1", "d0"] and order(first_alone, "q1") == ["d0", "d1", "d2"]
    halfway = fuse_runs(frame, reranked, 0.5)  # d1: 0.5 * 0.2 + 0.5 * 0.9 beats d0 (0.5) and d2 (0.5)
    assert order(halfway, "q1")[0] == "d1"
    assert list(halfway.columns[:len(reranked.columns) - 1]) == [c for c in reranked.columns if c != "rank"]


def test_the_weight_is_chosen_on_validation_with_ties_going_to_the_reranker():
    frame = candidates()
    chosen = choose_weight(frame, toy_reranker()(frame), QRELS)
    # neither part alone puts both relevant documents first; a mix does
    assert chosen.values["0.0"] == 0.75 and chosen.values["1.0"] == 0.5
    best = max(chosen.values.values())
    assert best == 1.0 and chosen.values[f"{chosen.weight:.1f}"] == best
    assert chosen.weight == max(float(w) for w, v in chosen.values.items() if v == best)  # ties: the re-ranker
    assert chosen.queries == 2 and chosen.metric == "RR@10"
    perfect = frame.assign(model=[0.0, 1.0, 0.0, 1.0, 0.0, 0.0])
    assert choose_weight(perfect, toy_reranker()(perfect), QRELS).weight == 1.0  # all tie at 1.0: the re-ranker
    with pytest.raises(ValueError, match="weights must include 0"):
        choose_weight(frame, toy_reranker()(frame), QRELS, weights=[0.5, 1.0])
    with pytest.raises(ValueError, match="no query of the 2 re-ranked has qrels"):
        choose_weight(frame, toy_reranker()(frame), QRELS.assign(qid=["x", "y"]))


def test_fusion_in_a_pipeline_fits_on_the_validation_pair_and_grid_search_tunes_the_weight():
    frame = candidates()
    fusion = FirstStageFusion(toy_reranker(), weight=1.0)
    train = frame.assign(model=frame["score"])  # the pair fit must not read when validation is given
    assert fusion.fit(train, QRELS, frame, QRELS) is fusion
    assert fusion.fusion.queries == 2 and 0 < fusion.weight < 1
    fused = fusion(frame)
    assert set(fused.groupby("qid")["rank"].min()) == {0} and fused.set_index("docno").loc[["d1", "e0"], "rank"].eq(0).all()
    fusion.set_parameter("weight", 0.0)
    assert fusion.get_parameter("weight") == 0.0 and fusion.fusion.values is None  # given, not chosen
    with pytest.raises(ValueError, match=r"a number in \[0, 1\]; got 1.5"):
        fusion.set_parameter("weight", 1.5)
    best = pt.GridSearch(pt.Transformer.from_df(frame) >> fusion, {fusion: {"weight": [0.0, 0.5, 1.0]}},
                         frame[["qid", "query"]].drop_duplicates(), QRELS, "recip_rank", verbose=False)
    assert best[1].weight == 0.5 if isinstance(best, tuple) else fusion.weight == 0.5


def test_missing_or_broken_first_stage_scores_are_clear_errors():
    fusion = FirstStageFusion(toy_reranker(), weight=0.5)
    with pytest.raises(ValueError, match="has no 'score' column: fusion needs the first stage's score of each "
                                         r"candidate.*Its columns: \['qid', 'query', 'docno', 'text', 'model'\]"):
        fusion(candidates().drop(columns="score"))
    broken = candidates()
    broken.loc[4, "score"] = np.nan
    with pytest.raises(ValueError, match=r"1 rows have no finite first-stage score, e.g. \(qid 'q2', docno 'e1'\)"):
        fusion(broken)
    twice = pd.concat([candidates(), candidates().iloc[:1]], ignore_index=True)
    with pytest.raises(ValueError, match=r"appears more than once, e.g. \(qid 'q1', docno 'd0'\)"):
        fusion(twice)
    empty = fusion(candidates().iloc[:0])
    assert len(empty) == 0 and {"score", "rank"} <= set(empty.columns)
    with pytest.raises(ValueError, match="has no fusion weight saved with it: pass weight="):
        FirstStageFusion(toy_reranker())
    with pytest.raises(ValueError, match="fit needs the qrels"):
        fusion.fit(candidates(), None)


def test_fusion_is_saved_with_the_model_and_cleared_by_training(window_model, tmp_path):
    frame = candidates().drop(columns="model")
    fusion = FirstStageFusion(window_model, weight=0.5).fit(frame, QRELS)
    fusion.save_pretrained(tmp_path / "fused")
    config = json.loads((tmp_path / "fused" / "config.json").read_text())
    assert config["pyterrier_longdoc"]["fusion"] == fusion.fusion.to_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pl.UntrainedHeadWarning)
        loaded = pl.MaxP.from_pretrained(tmp_path / "fused")
        artifact = pt.Artifact.load(str(tmp_path / "fused"))
    assert loaded.fusion == fusion.fusion and artifact.fusion == fusion.fusion
    again = FirstStageFusion(loaded)  # the saved weight, and what it was chosen on
    assert again.fusion == fusion.fusion
    np.testing.assert_allclose(again(frame).sort_values(["qid", "docno"])["score"],
                               fusion(frame).sort_values(["qid", "docno"])["score"])
    card = (tmp_path / "fused" / "README.md").read_text()
    assert "## Fusion with the first stage" in card and f"weight {fusion.weight:g} on the re-ranker's score" in card
    assert FirstStageFusion(loaded, weight=0.2).fusion.values is None  # a weight given by hand was chosen on nothing
    loaded.fusion = None
    loaded.save_pretrained(tmp_path / "fused")
    assert json.loads((tmp_path / "fused" / "config.json").read_text())["pyterrier_longdoc"]["fusion"] is None


def test_a_saved_fusion_is_checked_when_loaded():
    with pytest.raises(ValueError, match=r"somewhere: unknown fusion fields \['wieght'\]"):
        Fusion.from_dict({"weight": 0.5, "wieght": 0.2}, "somewhere")
    with pytest.raises(ValueError, match="a number in"):
        Fusion.from_dict({"weight": "high"})

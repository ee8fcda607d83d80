"""``model.explain(frame)``: where a window-based model looked, from transform's own scoring call."""
import numpy as np
import pandas as pd
import pytest
import torch

import pyterrier_longdoc as pl

from helpers.toy_training import new_model, toy_task

# random heads over the tiny BERT, and toy documents longer than max_doc_tokens: expected here
pytestmark = [pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning"),
              pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")]

# how each model makes its score of its window scores
REDUCTIONS = {pl.FirstP: lambda s: s[0], pl.MaxP: max, pl.SumP: sum,
              pl.KMaxAvgP: lambda s: np.mean(sorted(s)[-3:])}


def explained_and_transformed(model, frame):
    explained = model.explain(frame)
    transformed = model.transform(frame)
    joined = explained.merge(transformed[["qid", "docno", "score", "rank"]], on=["qid", "docno"],
                             suffixes=("", "_transform"))
    assert len(joined) == len(frame) == len(explained)
    np.testing.assert_allclose(joined["score"], joined["score_transform"], atol=1e-5)
    assert (joined["rank"] == joined["rank_transform"]).all()
    return explained


def check_windows(model, explained, weights):
    for _, row in explained.iterrows():
        assert [tuple(span) for span in row["windows"]] == model.chunk_spans(row["text"])  # the model's own windows
        assert len(row[weights]) == len(row["windows"])
        assert row["best_window"] == int(np.argmax(row[weights]))
        assert (row["best_start"], row["best_end"]) == tuple(row["windows"][row["best_window"]])
        assert row["best_text"] and row["best_text"] in " ".join(row["text"].split())


@pytest.mark.parametrize("cls", list(REDUCTIONS), ids=lambda c: c.__name__)
def test_window_scores_make_the_transform_score(cls, tiny_bert, monkeypatch):
    import pyterrier_longdoc._scoring as scoring

    monkeypatch.setattr(scoring, "_FIRST_GROUP", 5)  # several groups of documents, several aggregator calls
    _, _, candidates = toy_task()
    shuffled = candidates.sample(frac=1, random_state=0).reset_index(drop=True)
    model = new_model(tiny_bert, cls)
    explained = explained_and_transformed(model, shuffled)
    for _, row in explained.iterrows():
        assert REDUCTIONS[cls](row["window_scores"]) == pytest.approx(row["score"], abs=1e-5)
    check_windows(model, explained, "window_scores")
    if cls is not pl.FirstP:
        assert explained["windows"].map(len).min() > 1


def test_bi_encoder_maxp_gives_each_windows_similarity(tiny_bert):
    _, _, candidates = toy_task(n_queries=2)
    model = pl.BiEncoderMaxP(tiny_bert, window=12, stride=6, max_doc_tokens=64)
    explained = explained_and_transformed(model, candidates)
    check_windows(model, explained, "window_scores")
    for _, row in explained.iterrows():
        assert max(row["window_scores"]) == pytest.approx(row["score"], abs=1e-5)


def test_parade_attn_gives_its_attention_over_the_windows(tiny_bert):
    _, _, candidates = toy_task(n_queries=2)
    model = new_model(tiny_bert, pl.ParadeAttn)
    explained = explained_and_transformed(model, candidates)
    check_windows(model, explained, "window_attention")
    for weights in explained["window_attention"]:
        assert min(weights) > 0 and sum(weights) == pytest.approx(1, abs=1e-5)
    with torch.no_grad():
        model.model.aggregator.query_vector.zero_()  # no preference: every window weighs the same
    for weights in model.explain(candidates)["window_attention"]:
        np.testing.assert_allclose(weights, 1 / len(weights), rtol=1e-5)


def test_an_empty_frame_gives_an_empty_explanation(window_model):
    empty = pd.DataFrame({"qid": [], "query": [], "docno": [], "text": []}, dtype=object)
    explained = window_model.explain(empty)
    assert explained.empty and {"score", "rank", "windows", "window_scores", "best_window", "best_start",
                                "best_end", "best_text"} <= set(explained.columns)


def test_models_that_mix_the_windows_say_so(tiny_bert):
    _, _, candidates = toy_task(n_queries=1)
    with pytest.raises(TypeError, match="ParadeMax.explain: its aggregation .* mixes the windows"):
        new_model(tiny_bert, pl.ParadeMax).explain(candidates)


def test_explain_beside_other_threads_scoring_the_same_model_gives_the_serial_explanation(tiny_bert, monkeypatch):
    import threading

    import pyterrier_longdoc._scoring as scoring

    monkeypatch.setattr(scoring, "_FIRST_GROUP", 3)  # many aggregator calls per call, interleaving across threads
    _, _, candidates = toy_task()
    model = new_model(tiny_bert, pl.MaxP)
    serial_explained, serial_scored = model.explain(candidates), model.transform(candidates)
    start, results, errors = threading.Barrier(4), {}, []

    def run(k):
        try:
            start.wait()
            for repeat in range(3):
                results[k, repeat] = model.explain(candidates) if k % 2 == 0 else model.transform(candidates)
        except Exception as error:  # noqa: BLE001 - reported below, with the thread
            errors.append((k, error))

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for (k, _), result in results.items():
        pd.testing.assert_frame_equal(result, serial_explained if k % 2 == 0 else serial_scored, check_exact=True)

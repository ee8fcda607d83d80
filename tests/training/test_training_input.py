"""What fit is given: every input is checked before the first step (texts, labels, frames,
validation data, options), duplicate qrels follow one rule, and the usual mistakes get messages
that say what to do."""
import json
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_longdoc as pl
from pyterrier_longdoc.training.arguments import TrainingArguments, fit_option_defaults
from pyterrier_longdoc.training.best import fit_best
from pyterrier_longdoc.training.sampling import training_data

from helpers.toy_training import FAST, SEGMENT_SETTINGS, make_data, new_model, refused_fit, toy_task

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


@pytest.fixture()
def data():
    return toy_task(n_queries=3)


# --- every input checked before the first step ---

@pytest.mark.parametrize("value", [None, np.nan, 42])
def test_bad_query_text_is_named_before_training(tiny_bert, data, value):
    topics, qrels, candidates = data
    topics = topics.astype({"query": object})
    topics.loc[2, "query"] = value
    with pytest.raises(ValueError, match=r"fit topics: column 'query' has .* 1 of 3 rows .*qid='q2'"):
        refused_fit(tiny_bert, topics, qrels, candidates)


@pytest.mark.parametrize("value, missing", [(None, True), (np.nan, True), (3.5, False)])
def test_bad_document_text_is_named_before_training(tiny_bert, data, value, missing):
    topics, qrels, candidates = data
    candidates = candidates.astype({"text": object})
    candidates.loc[candidates["docno"] == "q1-d3", "text"] = value  # a negative, sampled or not
    match = (r"no 'text' for documents \['q1-d3'\] \(1 in all\): 1 of them has None/NaN in the candidates' 'text' column"
             if missing else "column 'text' has non-string .*q1-d3")
    with pytest.raises(ValueError, match=match):
        refused_fit(tiny_bert, topics, qrels, candidates)


def test_missing_text_of_a_positive_is_found_before_training(tiny_bert, data):
    topics, qrels, candidates = data
    candidates = candidates[candidates["docno"] != "q2-d2"]  # q2's positive: judged, not retrieved
    for seed in range(3):  # whichever query the first step samples
        with pytest.raises(ValueError, match=r"no 'text' for documents \['q2-d2'\]"):
            refused_fit(tiny_bert, topics, qrels, candidates, queries_per_step=1, seed=seed)


def test_a_positive_whose_docno_differs_only_in_unicode_normal_form_is_named(tiny_bert, data):
    import unicodedata

    topics, qrels, candidates = data
    nfc = {"q2-d2": "q2-caf\u00e9"}  # q2's positive: é as one code point in the candidates...
    candidates = candidates.assign(docno=candidates["docno"].replace(nfc))
    qrels = qrels.assign(docno=qrels["docno"].replace({k: unicodedata.normalize("NFD", v) for k, v in nfc.items()}))
    for seed in range(3):  # ...and as e + a combining accent in the qrels: alike on screen, different ids
        with pytest.raises(ValueError, match=r"1 of them differs only in Unicode normal form.*"
                                             r"'q2-cafe\\u0301' \(without text\) vs 'q2-caf\\xe9' \(with text\)"):
            refused_fit(tiny_bert, topics, qrels, candidates, queries_per_step=1, seed=seed)


@pytest.mark.parametrize("valid, match", [
    (dict(valid_topics="topics"), "valid_qrels, valid_candidates are missing"),
    (dict(valid_topics="topics", valid_candidates="candidates"), "valid_qrels is missing"),
    (dict(valid_topics="topics", valid_qrels="qrels", valid_candidates="candidates", valid_metric="NDCG10"),
     "valid_metric 'NDCG10' is not an ir_measures measure"),
])
def test_validation_arguments_are_checked_before_training(tiny_bert, data, valid, match):
    frames = dict(zip(("topics", "qrels", "candidates"), data))
    valid = {k: frames.get(v, v) for k, v in valid.items()}
    with pytest.raises(ValueError, match=match):
        refused_fit(tiny_bert, *data, **valid)


def test_validation_text_is_checked_before_training(tiny_bert, data):
    topics, qrels, candidates = data
    unseen = candidates.drop(columns=["text"]).assign(docno="valid-" + candidates["docno"])
    with pytest.raises(ValueError, match=r"no 'text' for documents \['valid-q0-d0'"):
        refused_fit(tiny_bert, topics, qrels, candidates, valid_topics=topics, valid_qrels=qrels, valid_candidates=unseen)


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning",
                            "ignore::pyterrier_longdoc.training.selection.TrainingBelowStartWarning")  # a toy fit
def test_int_qids_in_valid_topics_match_str_qids_in_valid_candidates(tiny_bert, data):
    topics, qrels, candidates = data
    number = {f"q{i}": i for i in range(len(topics))}
    int_topics = topics.assign(qid=topics["qid"].map(number))  # as read from a file of numbers
    str_candidates = candidates.drop(columns=["query"]).assign(qid=candidates["qid"].map(number).astype(str))
    int_qrels = qrels.assign(qid=qrels["qid"].map(number))
    options = dict(FAST, epochs=1, valid_metric="RR@10")
    mixed = new_model(tiny_bert).fit(topics, qrels, candidates, valid_topics=int_topics, valid_qrels=int_qrels,
                                     valid_candidates=str_candidates, **options)
    same = new_model(tiny_bert).fit(topics, qrels, candidates, valid_topics=int_topics.astype({"qid": str}),
                                    valid_qrels=int_qrels.astype({"qid": str}), valid_candidates=str_candidates,
                                    **options)
    pd.testing.assert_series_equal(mixed["RR@10"], same["RR@10"])
    assert mixed["RR@10"].notna().any()


def test_candidates_without_rank_or_score(tiny_bert, data):
    topics, qrels, candidates = data
    with pytest.raises(ValueError, match="candidates need a 'rank' or 'score' column"):
        refused_fit(tiny_bert, topics, qrels, candidates.drop(columns=["rank", "score"]))


def test_numeric_string_labels_are_read_and_others_named(tiny_bert, data):
    topics, qrels, candidates = data
    history = new_model(tiny_bert).fit(topics, qrels.astype({"label": str}), candidates, **FAST)
    assert len(history) == 1
    labels = qrels.astype({"label": object})
    labels.loc[5, "label"] = "relevant"
    with pytest.raises(ValueError, match=r"qrels: column 'label' must hold numbers; 1 of 12 rows .*q1-d1.*'relevant'"):
        refused_fit(tiny_bert, topics, labels, candidates)


def test_a_pipeline_or_series_where_a_frame_is_expected(tiny_bert, data):
    topics, qrels, candidates = data
    with pytest.raises(TypeError, match=r"topics must be a DataFrame .* got a pt.Transformer .*call it first"):
        refused_fit(tiny_bert, pt.Transformer.from_df(topics), qrels, candidates)
    with pytest.raises(TypeError, match="qrels must be a DataFrame .* got Series"):
        refused_fit(tiny_bert, topics, qrels["label"], candidates)
    with pytest.raises(TypeError, match="candidates must be a result DataFrame .* got Series"):
        refused_fit(tiny_bert, topics, qrels, candidates["docno"])
    with pytest.raises(TypeError, match="text must be a pt.Transformer .* got int"):
        refused_fit(tiny_bert, topics, qrels, candidates.drop(columns=["text"]), text=3)


def test_text_in_every_obvious_form_and_only_what_training_samples(tiny_bert, data):
    topics, qrels, candidates = data
    texts = dict(zip(candidates["docno"], candidates["text"]))
    bare = candidates.drop(columns=["text"])
    requested = []

    def recording(docnos):
        requested.extend(docnos)
        return [texts[d] for d in docnos]

    forms = [texts, pd.Series(texts), pd.DataFrame({"docno": list(texts), "text": list(texts.values())}), recording,
             pt.apply.text(lambda row: texts[row["docno"]])]
    for form in forms:
        assert len(new_model(tiny_bert).fit(topics, qrels, bare, text=form, **{**FAST, "top_k": 2})) == 1
    # top_k=2: each query's positive (rank 2) and its first two candidates; never the rank-3 documents
    assert sorted(requested) == sorted(f"q{i}-d{j}" for i in range(3) for j in (0, 1, 2))


def test_lone_surrogates_in_training_text_are_replaced_and_named(tiny_bert, data):
    topics, qrels, candidates = data
    topics = topics.astype({"query": object})
    topics.loc[0, "query"] = json.loads('"what \\ud800 cat"')
    candidates = candidates.astype({"text": object})
    candidates.loc[candidates["docno"] == "q1-d2", "text"] = json.loads('"castle \\udfff castle"')
    with pytest.warns(UserWarning) as caught:
        history = new_model(tiny_bert).fit(topics, qrels, candidates, **{**FAST, "epochs": 2, "queries_per_step": 1})
    messages = " ".join(str(w.message) for w in caught)
    assert "column 'query' has lone UTF-16 surrogates" in messages and "qid='q0'" in messages
    assert "column 'text' has lone UTF-16 surrogates" in messages and "docno='q1-d2'" in messages
    assert len(history) == 6 and np.isfinite(history["loss"]).all()


# --- duplicate qrels ---

def pools(qrels):
    topics, _, candidates = toy_task(n_queries=2)
    data = training_data(topics, qrels, candidates, top_k=10, text=None, text_field="text", context="test")
    return data.pools, data.qrels


def test_a_pair_listed_twice_counts_once():
    _, qrels, _ = toy_task(n_queries=2)
    twice = pd.concat([qrels, qrels[qrels["label"] > 0]], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same label twice: nothing to say
        deduplicated, kept = pools(twice)
    assert deduplicated == pools(qrels)[0]
    assert deduplicated["q0"][0] == ["q0-d2"]  # one positive, sampled as often as before
    assert len(kept) == len(qrels)


def test_conflicting_labels_keep_the_largest_with_a_warning_naming_the_pairs():
    _, qrels, _ = toy_task(n_queries=2)
    conflicting = pd.concat([qrels, qrels[qrels["label"] > 0].assign(label=0)], ignore_index=True)
    with pytest.warns(UserWarning, match=r"qrels: 2 \(qid, docno\) pairs are judged more than once with different "
                                         r"labels \(e\.g\. qid='q0' docno='q0-d2' labels \[1, 0\].*largest"):
        deduplicated, kept = pools(conflicting)
    assert deduplicated == pools(qrels)[0]
    assert kept.sort_values(["qid", "docno"]).reset_index(drop=True).equals(
        qrels.sort_values(["qid", "docno"]).reset_index(drop=True))


def test_fit_best_follows_the_same_rule(tiny_bert):
    topics, qrels, candidates = make_data()
    positives = qrels[qrels["label"] > 0]
    runs = {}
    for name, given in [("plain", qrels), ("twice", pd.concat([qrels, positives])),
                        ("conflicting", pd.concat([qrels, positives.assign(label=0)]))]:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fit_best(lambda: pl.MaxP(tiny_bert, **SEGMENT_SETTINGS), topics, given, candidates, iterations=1,
                              queries_per_step=3, queries_per_forward=3, seed=1)
        assert not [w for w in caught if "skipped" in str(w.message)], name
        runs[name] = result.iterations["segments"].tolist()
    assert runs["twice"] == runs["conflicting"] == runs["plain"]


# --- the usual mistakes ---

def test_unknown_fit_options_are_refused_when_the_model_is_built(tiny_bert):
    with pytest.raises(TypeError, match=r"fit_options: unknown fit option 'epoch' \(did you mean 'epochs'\?\); "
                                         r"valid options: epochs, loss, "):
        pl.MaxP(tiny_bert, fit_options={"epoch": 1})
    assert {"epochs", "lr", "checkpoint_dir", "text", "valid_metric"} <= set(fit_option_defaults())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pl.UntrainedHeadWarning)
        assert pl.MaxP(tiny_bert, fit_options={"epochs": 2, "text": {}}).fit_options == {"epochs": 2, "text": {}}


def test_missing_positives_say_how_to_give_text_inside_a_pipeline(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=2)
    without = candidates[candidates["docno"] != "q0-d2"]
    model = new_model(tiny_bert)
    with pytest.raises(ValueError, match=r"no 'text' for documents \['q0-d2'\].*inside a pipeline.*"
                                         r"fit_options=\{'text': \.\.\.\}"):
        model.fit(topics, qrels, without, **FAST)


def test_skipped_training_queries_are_named(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=4)
    qrels = qrels[qrels["qid"] != "q1"]
    candidates = candidates[(candidates["qid"] != "q3") | (candidates["docno"] == "q3-d2")]
    with pytest.warns(UserWarning, match=r"2 of 4 training queries were skipped: 1 without a judged-relevant "
                                         r"document \(e\.g\. 'q1'\); 1 without a negative among their candidates "
                                         r"\(e\.g\. 'q3'\)"):
        training_data(topics, qrels, candidates, top_k=10, text=None, text_field="text", context="test")




# --- an unknown valid_metric fails where it is given ---

@pytest.mark.parametrize("given", [dict(valid_metric="NDCG10"), dict(valid_metric=10)])
def test_an_unknown_valid_metric_fails_without_validation_data(given):
    with pytest.raises(ValueError, match=r"valid_metric .* is not an ir_measures measure"):
        TrainingArguments(**given)


# --- validation topics without candidates are named and left out ---

def validated_fit(tiny_bert, extra_topics):
    topics, qrels, candidates = toy_task(n_queries=4)
    valid_topics = pd.concat([topics, extra_topics], ignore_index=True)
    return new_model(tiny_bert).fit(topics, qrels, candidates, **FAST, epochs=1, valid_topics=valid_topics,
                                    valid_qrels=qrels, valid_candidates=candidates, valid_metric="RR@10")


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.TrainingBelowStartWarning")  # a toy fit
@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
def test_validation_topics_without_candidates_are_left_out_with_a_warning(tiny_bert):
    plain = validated_fit(tiny_bert, pd.DataFrame(columns=["qid", "query"]))
    lost = pd.DataFrame({"qid": ["lost-1", "lost-2"], "query": ["what cat", "what dog"]})
    with pytest.warns(UserWarning, match=r"2 of 6 validation topics have no candidates \(qid 'lost-1', 'lost-2'\): "
                                         r"they are left out of validation, where they would count as RR@10 0"):
        history = validated_fit(tiny_bert, lost)
    assert history.attrs["selection"]["start"] == plain.attrs["selection"]["start"]  # not lowered by them


def test_validation_without_any_candidates_is_an_error(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=4)
    with pytest.raises(ValueError, match=r"no validation topic has candidates: valid_candidates holds none of the 4 "
                                         r"validation qids \(e\.g\. 'q0'\)"):
        new_model(tiny_bert).fit(topics, qrels, candidates, **FAST, valid_topics=topics, valid_qrels=qrels,
                                 valid_candidates=candidates.assign(qid="other"), valid_metric="RR@10")

"""Issue 12, training side: fit checks everything before its first step, checkpoints belong to
their data, and a damaged checkpoint falls back to an older one."""
import json
import shutil
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from helpers import FAST, Interrupt, new_model, resumes_past_damage, run_to_step, toy_task

import pyterrier_longdoc as pl
from pyterrier_longdoc.training.checkpoints import checkpoints


def no_step(row):
    raise AssertionError(f"training started (step {row['step']}) although the input was bad")


@pytest.fixture()
def data():
    return toy_task(n_queries=3)


def fit(tiny_bert, topics, qrels, candidates, **options):
    """fit on input that must be refused before anything is encoded or any step taken."""
    model = new_model(tiny_bert)

    def no_encoding(batch):
        raise AssertionError("a document was encoded although the input was bad")

    model.model.encode = no_encoding
    return model.fit(topics, qrels, candidates, **{**FAST, "callback": no_step, **options})


# --- item 6: every input checked before the first step ---

@pytest.mark.parametrize("value", [None, np.nan, 42])
def test_bad_query_text_is_named_before_training(tiny_bert, data, value):
    topics, qrels, candidates = data
    topics = topics.astype({"query": object})
    topics.loc[2, "query"] = value
    with pytest.raises(ValueError, match=r"fit topics: column 'query' has .* 1 of 3 rows .*qid='q2'"):
        fit(tiny_bert, topics, qrels, candidates)


@pytest.mark.parametrize("value, missing", [(None, True), (np.nan, True), (3.5, False)])
def test_bad_document_text_is_named_before_training(tiny_bert, data, value, missing):
    topics, qrels, candidates = data
    candidates = candidates.astype({"text": object})
    candidates.loc[candidates["docno"] == "q1-d3", "text"] = value  # a negative, sampled or not
    match = (r"no 'text' for documents \['q1-d3'\] \(1 in all\): 1 of them has None/NaN in the candidates' 'text' column"
             if missing else "column 'text' has non-string .*q1-d3")
    with pytest.raises(ValueError, match=match):
        fit(tiny_bert, topics, qrels, candidates)


def test_missing_text_of_a_positive_is_found_before_training(tiny_bert, data):
    topics, qrels, candidates = data
    candidates = candidates[candidates["docno"] != "q2-d2"]  # q2's positive: judged, not retrieved
    for seed in range(3):  # whichever query the first step samples
        with pytest.raises(ValueError, match=r"no 'text' for documents \['q2-d2'\]"):
            fit(tiny_bert, topics, qrels, candidates, queries_per_step=1, seed=seed)


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
        fit(tiny_bert, *data, **valid)


def test_validation_text_is_checked_before_training(tiny_bert, data):
    topics, qrels, candidates = data
    unseen = candidates.drop(columns=["text"]).assign(docno="valid-" + candidates["docno"])
    with pytest.raises(ValueError, match=r"no 'text' for documents \['valid-q0-d0'"):
        fit(tiny_bert, topics, qrels, candidates, valid_topics=topics, valid_qrels=qrels, valid_candidates=unseen)


def test_candidates_without_rank_or_score(tiny_bert, data):
    topics, qrels, candidates = data
    with pytest.raises(ValueError, match="candidates need a 'rank' or 'score' column"):
        fit(tiny_bert, topics, qrels, candidates.drop(columns=["rank", "score"]))


def test_numeric_string_labels_are_read_and_others_named(tiny_bert, data):
    topics, qrels, candidates = data
    history = new_model(tiny_bert).fit(topics, qrels.astype({"label": str}), candidates, **FAST)
    assert len(history) == 1
    labels = qrels.astype({"label": object})
    labels.loc[5, "label"] = "relevant"
    with pytest.raises(ValueError, match=r"qrels: column 'label' must hold numbers; 1 of 12 rows .*q1-d1.*'relevant'"):
        fit(tiny_bert, topics, labels, candidates)


def test_a_pipeline_or_series_where_a_frame_is_expected(tiny_bert, data):
    topics, qrels, candidates = data
    with pytest.raises(TypeError, match=r"topics must be a DataFrame .* got a pt.Transformer .*call it first"):
        fit(tiny_bert, pt.Transformer.from_df(topics), qrels, candidates)
    with pytest.raises(TypeError, match="qrels must be a DataFrame .* got Series"):
        fit(tiny_bert, topics, qrels["label"], candidates)
    with pytest.raises(TypeError, match="candidates must be a result DataFrame .* got Series"):
        fit(tiny_bert, topics, qrels, candidates["docno"])
    with pytest.raises(TypeError, match="text must be a pt.Transformer .* got int"):
        fit(tiny_bert, topics, qrels, candidates.drop(columns=["text"]), text=3)


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


# --- item 4: a checkpoint belongs to its training data ---

@pytest.mark.parametrize("change", ["topics", "qrels", "candidates", "texts"])
def test_resuming_with_other_training_data_is_refused(tiny_bert, data, tmp_path, change):
    topics, qrels, candidates = data
    new_model(tiny_bert).fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **FAST)
    other = {"topics": ("topics", topics.assign(query=topics["query"] + " please")),
             "qrels": ("qrels", qrels.assign(label=qrels["label"] * 2)),
             "candidates": ("candidates", candidates.assign(rank=candidates["rank"][::-1].to_numpy())),
             "texts": ("candidates", candidates.assign(text=candidates["text"] + " more"))}
    frames = {"topics": topics, "qrels": qrels, "candidates": candidates}
    frames[other[change][0]] = other[change][1]
    with pytest.raises(ValueError, match=rf"written for other training data \(the {change} differ\).*restart=True"):
        fit(tiny_bert, **frames, checkpoint_dir=tmp_path)
    # the same rows in another order are the same data
    shuffled = candidates.sample(frac=1, random_state=0)
    assert len(new_model(tiny_bert).fit(topics, qrels, shuffled, checkpoint_dir=tmp_path, **FAST)) == 1


def test_restart_discards_the_checkpoints_and_trains_from_the_first_step(tiny_bert, data, tmp_path):
    topics, qrels, candidates = data
    new_model(tiny_bert).fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **FAST, epochs=3)
    steps = []
    history = new_model(tiny_bert).fit(topics, qrels.assign(label=qrels["label"] * 2), candidates,
                                       checkpoint_dir=tmp_path, restart=True, **FAST,
                                       callback=lambda row: steps.append(row["step"]))
    assert steps == [1] and len(history) == 1
    assert [p.name for p in checkpoints(tmp_path)] == ["step-000001"]


# --- item 7: damaged checkpoints ---


@pytest.mark.parametrize("damage", ["training_state.safetensors", "trainer_state.json", "model.safetensors"])
def test_a_damaged_checkpoint_falls_back_to_the_previous_one(tiny_bert, data, tmp_path, damage):
    def half_written(folder):
        broken = folder / damage
        broken.write_bytes(broken.read_bytes()[: len(broken.read_bytes()) // 2])

    resumes_past_damage(tiny_bert, data, tmp_path, half_written, damage)


def test_no_valid_checkpoint_names_every_file(tiny_bert, data, tmp_path):
    with pytest.raises(Interrupt):
        run_to_step(tiny_bert, data, tmp_path, 6, stop_at=3)
    for path in checkpoints(tmp_path):
        (path / "trainer_state.json").write_text('{"step": 3, "hist')
    with pytest.raises(ValueError, match=r"no valid checkpoint in .*step-000002/trainer_state.json is unreadable.*"
                                         r"step-000001/trainer_state.json is unreadable"):
        run_to_step(tiny_bert, data, tmp_path, 6)


def test_leftovers_of_a_killed_write_are_removed_and_the_limit_is_kept(tiny_bert, data, tmp_path):
    leftover = tmp_path / ".tmp-abc123"
    leftover.mkdir(parents=True)
    (leftover / "model.safetensors").write_bytes(b"half")
    run_to_step(tiny_bert, data, tmp_path, 6, save_total_limit=3)
    assert not leftover.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pt_meta.json", "step-000004", "step-000005", "step-000006"]


def test_a_truncated_plain_encoder_names_the_file(tiny_bert, tmp_path):
    encoder = tmp_path / "encoder"
    shutil.copytree(tiny_bert, encoder)
    weights = encoder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])
    with pytest.raises(ValueError, match=rf"{weights} is corrupt or truncated .*tensors need \d+ bytes"):
        pl.MaxP(encoder)
    weights.write_bytes(b"\x05\x00")
    with pytest.raises(ValueError, match=rf"{weights} is corrupt or truncated .*shorter than a safetensors header"):
        pl.MaxP(encoder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", pl.UntrainedHeadWarning)
        pl.MaxP(tiny_bert)  # an intact one loads as before

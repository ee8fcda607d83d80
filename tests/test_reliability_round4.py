"""Issue 44: the last silent paths, and drop-in behaviour where users switch from
sentence-transformers (CrossEncoder), PyTerrier (GridSearch, artifacts) and rank_llm."""
import copy
import json
import re
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_longdoc as pl
from pyterrier_longdoc.cli import build_parser, main
from pyterrier_longdoc.training.arguments import TrainingArguments
from pyterrier_longdoc.training.selection import Selection, TrainingBelowStartWarning
from conftest import write_tiny_bert
from cross_encoders import write_cross_encoder
from helpers import FAST, new_model, toy_task


# --- item 11: an unknown valid_metric fails where it is given ---

@pytest.mark.parametrize("given", [dict(valid_metric="NDCG10"), dict(valid_metric=10)])
def test_an_unknown_valid_metric_fails_without_validation_data(given):
    with pytest.raises(ValueError, match=r"valid_metric .* is not an ir_measures measure"):
        TrainingArguments(**given)


# --- item 12: the advice of TrainingBelowStartWarning follows the run's lr ---

def below_start_warning(lr):
    selection = Selection("RR@10", patience=None)
    model = __import__("torch").nn.Linear(1, 1)
    selection.record(0.9, 0, model)
    selection.record(0.5, 1, model)
    with pytest.warns(TrainingBelowStartWarning) as caught:
        selection.warn_if_below_start(restored=True, lr=lr)
    return str(caught[0].message)


def test_below_start_advises_a_lower_lr_only_above_the_papers_range():
    in_range = below_start_warning(2e-5)  # the recipe's rate
    assert "A lower rate" not in in_range and "already in the papers' range" in in_range and "2e-05" in in_range
    assert "A lower rate" in below_start_warning(1e-4) and "this run used 0.0001" in below_start_warning(1e-4)


# --- item 17: the command line takes whole option names and points to the right one ---

def test_cli_refuses_an_abbreviated_option(capsys):
    with pytest.raises(SystemExit):  # not read as --model x
        build_parser().parse_args(["rerank", "--mod", "x", "--topics", "t", "--output", "o"])
    assert "required: --model" in capsys.readouterr().err


def test_cli_model_name_without_backbone_says_to_add_it(trec_files, tmp_path, capsys):
    assert main(["rerank", "--model", "maxp", "--topics", trec_files["topics"], "--run", trec_files["run"],
                 "--docs", trec_files["docs"], "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "--model maxp: no such directory; 'maxp' is a model name" in err and "add --backbone DIR" in err


def test_cli_fit_option_typo_points_to_the_option(trec_files, tiny_bert, tmp_path, capsys):
    assert main(["train", "--model", "maxp", "--backbone", tiny_bert, "--topics", trec_files["topics"],
                 "--run", trec_files["run"], "--docs", trec_files["docs"], "--qrels", trec_files["qrels"],
                 "--output", str(tmp_path / "m"), "--fit", "epoch=1"]) == 2
    assert "unknown name 'epoch' (did you mean --epochs?)" in capsys.readouterr().err


def test_fit_options_typo_points_to_the_option(tiny_bert):
    with pytest.raises(TypeError, match=r"unknown fit option 'epoch' \(did you mean 'epochs'\?\)"):
        pl.MaxP(tiny_bert, fit_options={"epoch": 1}, window=12, stride=6, max_length=48, max_query_tokens=8)


# --- items 9, 10, 14: predict and rank take what CrossEncoder takes ---

@pytest.fixture(scope="module")
def window_model(tiny_bert):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a new head: random scores are all these tests need
        return pl.MaxP(tiny_bert, seed=0, window=12, stride=6, max_length=48, max_query_tokens=8)


PAIRS = [("what cat", "the cat by the river"), ("what dog", "a dog in the house is red")]


def test_predict_takes_numpy_arrays_device_prompt_and_chunk_size(window_model):
    expected = window_model.predict(PAIRS)
    np.testing.assert_array_equal(window_model.predict(np.array(PAIRS)), expected)
    np.testing.assert_array_equal(window_model.predict(PAIRS, device="cpu", chunk_size=8), expected)
    assert window_model.predict(np.array(PAIRS[0])) == pytest.approx(expected[0], abs=1e-5)  # a 1-D array: one pair
    prompted = window_model.predict([("please " + q, d) for q, d in PAIRS])
    np.testing.assert_array_equal(window_model.predict(PAIRS, prompt="please "), prompted)
    ranked = window_model.rank("what cat", [d for _, d in PAIRS], device="cpu", prompt="please ")
    assert [r["score"] for r in ranked] == sorted(window_model.predict([("please what cat", d) for _, d in PAIRS])
                                                  .tolist(), reverse=True)


def test_predict_names_what_it_cannot_take(window_model):
    with pytest.raises(ValueError, match="prompt_name 'query': the model has no named prompts"):
        window_model.predict(PAIRS, prompt_name="query")
    with pytest.raises(ValueError, match=r"pool: .* device=\[\.\.\.\]"):
        window_model.predict(PAIRS, pool={"processes": []})


@pytest.mark.parametrize("given, problem", [(["just a string"], "1 string, not a pair"),
                                            ("just a string", "one string 'just a string'"),
                                            (["q", "d", "e"], "3 strings, not a pair")])
def test_predict_of_strings_that_are_not_pairs_says_so(window_model, given, problem):
    with pytest.raises(TypeError, match=f"predict takes \\(query, document\\) pairs of strings; .*{problem}"):
        window_model.predict(given)


def test_a_cuda_device_without_a_gpu_is_a_clear_error(tiny_bert, window_model):
    with pytest.raises(ValueError, match=r"device='cuda': no CUDA GPU is available .*use device='cpu'"):
        pl.MaxP(tiny_bert, device="cuda", window=12, stride=6, max_length=48, max_query_tokens=8)
    with pytest.raises(ValueError, match=r"device='cuda:1': no CUDA GPU is available"):
        window_model.predict(PAIRS, device="cuda:1")
    assert window_model.device.type == "cpu" and window_model.predict(PAIRS).shape == (2,)  # left where it was


# --- items 1, 6: LongDoc.set_parameter checks what its constructor checks ---

def castle_counter():
    return pt.apply.doc_score(lambda row: float(row["text"].count("castle")))


@pytest.mark.parametrize("name, value, problem", [
    ("window_words", 0, "window_words must be a positive integer, got 0"),
    ("window_words", "wide", "window_words must be a positive integer, got 'wide'"),
    ("k", 0, "k must be a positive integer, got 0"),
    ("aggregation", "median", "unknown aggregation 'median'"),
    ("text_field", 3, "text_field must be a column name"),
    ("windows", 10, "LongDoc has no parameter 'windows'; parameters: aggregation, window_words"),
])
def test_longdoc_set_parameter_refuses_what_the_constructor_refuses(name, value, problem):
    wrapped = pl.LongDoc(castle_counter(), aggregation="kmaxavg", window_words=30, stride_words=15)
    with pytest.raises(ValueError, match=re.escape(problem)):
        wrapped.set_parameter(name, value)
    assert wrapped.get_parameter("window_words") == 30 and wrapped.get_parameter("k") == 3  # unchanged


def test_longdoc_stride_beyond_window_reads_nothing_with_a_warning():
    _, _, candidates = toy_task(n_queries=2)
    wrapped = pl.LongDoc(castle_counter(), window_words=30, stride_words=15)
    wrapped.set_parameter("stride_words", 100)  # a grid sets one value at a time: checked when a frame comes
    with pytest.warns(UserWarning, match=r"stride_words \(100\) > window_words \(30\) would skip document text\. "
                                         r"This setting scores no document"):
        run = wrapped(candidates)
    from pyterrier_longdoc._frames import FAILED_SETTING_DOCNO

    assert run["docno"].tolist() == [FAILED_SETTING_DOCNO] * 2 and run["qid"].tolist() == ["q0", "q1"]
    wrapped.set_parameter("window_words", 100)  # the grid's next value makes it valid
    assert len(wrapped(candidates)) == len(candidates)


# --- item 13: pt.GridSearch over a grid with invalid combinations finishes with a valid setting ---

def grid_search(pipeline, transformer, grid):
    topics, qrels, _ = toy_task(n_queries=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scan = pt.GridScan(pipeline, {transformer: grid}, topics, qrels, ["recip_rank"])
        _, best, setting = pt.GridSearch(pipeline, {transformer: grid}, topics, qrels, "recip_rank", return_type="both")
    return scan, best, dict((name, value) for _, name, value in setting), [str(w.message) for w in caught]


def test_grid_search_over_longdoc_skips_stride_beyond_window():
    _, _, candidates = toy_task(n_queries=4)
    wrapped = pl.LongDoc(castle_counter(), window_words=4, stride_words=4)
    scan, best, setting, messages = grid_search(pt.Transformer.from_df(candidates) >> wrapped, wrapped,
                                                {"window_words": [4, 60], "stride_words": [4, 60]})
    assert setting["stride_words"] <= setting["window_words"] and best == 1.0
    invalid = scan[scan["tran_1_stride_words"] > scan["tran_0_window_words"]]
    assert len(invalid) == 1 and invalid["recip_rank"].tolist() == [0.0]
    assert any("stride_words (60) > window_words (4)" in m for m in messages)


def test_grid_search_over_a_model_skips_stride_beyond_window(window_model):
    _, _, candidates = toy_task(n_queries=4)
    model = copy.deepcopy(window_model)
    scan, best, setting, messages = grid_search(pt.Transformer.from_df(candidates) >> model, model,
                                                {"window": [6, 24], "stride": [6, 24]})
    assert setting["stride"] <= setting["window"] and best > 0
    invalid = scan[scan["tran_1_stride"] > scan["tran_0_window"]]
    assert invalid["recip_rank"].tolist() == [0.0] and scan["recip_rank"].max() == best
    assert any("stride (24) > window (6)" in m for m in messages)
    model.set_parameter("window", 6)
    model.set_parameter("stride", 24)
    with pytest.raises(ValueError, match=r"stride \(24\) > window \(6\)"):  # outside a frame, still an error
        model.predict(PAIRS)


# --- item 8: a column name given twice is named ---

@pytest.mark.parametrize("column", ["text", "qid"])
def test_a_column_given_twice_is_named(window_model, column):
    _, _, candidates = toy_task(n_queries=2)
    twice = pd.concat([candidates, candidates[[column]]], axis=1)
    for transformer in (window_model, pl.LongDoc(castle_counter())):
        with pytest.raises(ValueError, match=f"more than one column named '{column}'"):
            transformer(twice)


# --- item 2: validation topics without candidates are named and left out ---

def validated_fit(tiny_bert, extra_topics):
    topics, qrels, candidates = toy_task(n_queries=4)
    valid_topics = pd.concat([topics, extra_topics], ignore_index=True)
    return new_model(tiny_bert).fit(topics, qrels, candidates, **FAST, epochs=1, valid_topics=valid_topics,
                                    valid_qrels=qrels, valid_candidates=candidates, valid_metric="RR@10")


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


# --- item 5: an exported cross-encoder reads the windows the model reads ---

def test_an_exported_cross_encoder_reads_whole_windows(tmp_path):
    import torch
    from sentence_transformers import CrossEncoder

    source = write_cross_encoder(tmp_path / "ce")
    config = json.loads((source / "tokenizer_config.json").read_text())
    (source / "tokenizer_config.json").write_text(json.dumps({**config, "model_max_length": 24}))  # a short stage
    firstp = pl.FirstP(str(source), max_query_tokens=8, window=40, max_length=64)
    firstp.save_pretrained(tmp_path / "saved")
    firstp.save_cross_encoder(tmp_path / "exported")
    window = " ".join(["castle", "river", "the", "red", "house"] * 7)  # 35 tokens: one window, longer than 24
    ours = firstp.predict([("what river", window)])
    for folder in ("saved", "exported"):
        theirs = CrossEncoder(str(tmp_path / folder), device="cpu")
        assert theirs.max_seq_length == 64
        np.testing.assert_allclose(theirs.predict([("what river", window)], activation_fn=torch.nn.Identity()),
                                   ours, atol=1e-5)


# --- item 4: CrossEncoder(folder) of a model that does not score windows one at a time fails loudly ---

def test_cross_encoder_refuses_a_saved_parade_attn(tiny_bert, tmp_path):
    from sentence_transformers import CrossEncoder

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parade = pl.ParadeAttn(tiny_bert, seed=0, window=12, stride=6, max_length=48, max_query_tokens=8)
    parade.save_pretrained(tmp_path / "parade")
    with pytest.raises(ValueError, match="NotACrossEncoder"):  # sentence-transformers' own refusal of unknown code
        CrossEncoder(str(tmp_path / "parade"))
    with pytest.raises(ValueError, match=r"holds a pyterrier_longdoc 'parade_attn' model, which is not a "
                                         r"cross-encoder.*LongDocReranker\.from_pretrained"):
        CrossEncoder(str(tmp_path / "parade"), trust_remote_code=True)
    again = pl.LongDocReranker.from_pretrained(str(tmp_path / "parade"))  # the library still loads it
    np.testing.assert_allclose(again.predict(PAIRS), parade.predict(PAIRS), atol=1e-6)


def test_a_window_scorer_folder_stays_a_cross_encoder(window_model, tmp_path):
    from sentence_transformers import CrossEncoder

    window_model.save_pretrained(tmp_path / "maxp")
    assert not (tmp_path / "maxp" / "modules.json").exists()
    assert CrossEncoder(str(tmp_path / "maxp")).predict(PAIRS).shape == (2,)


# --- item 7: trust_remote_code on a saved folder reads the code in the folder ---

def test_remote_code_of_a_saved_folder_is_read_from_the_folder(tmp_path):
    base = write_tiny_bert(tmp_path / "base")
    (base / "custom.py").write_text("from transformers import BertForSequenceClassification\n\n\n"
                                    "class CustomForSequenceClassification(BertForSequenceClassification):\n"
                                    "    pass\n")
    config = json.loads((base / "config.json").read_text())
    config["auto_map"] = {"AutoModelForSequenceClassification": "custom.CustomForSequenceClassification"}
    (base / "config.json").write_text(json.dumps(config))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pl.MaxP(str(base), trust_remote_code=True, seed=0, window=12, stride=6, max_length=48,
                        max_query_tokens=8)
    model.save_pretrained(tmp_path / "saved")
    assert (tmp_path / "saved" / "custom.py").read_text() == (base / "custom.py").read_text()  # saved with it
    # the base's code changes (as a hub repository's may): the saved model keeps its own
    (base / "custom.py").write_text("raise RuntimeError('the base model's code ran')\n")
    again = pl.LongDocReranker.from_pretrained(str(tmp_path / "saved"), trust_remote_code=True)
    np.testing.assert_allclose(again.predict(PAIRS), model.predict(PAIRS), atol=1e-6)


# --- item 15: the recipe saves what it trained; a checkpoint folder is a PyTerrier artifact ---

def test_the_recipe_saves_the_trained_model_in_its_output_dir(tiny_bert, tmp_path):
    from pyterrier_longdoc.training import train_long_document_ranker

    topics, qrels, candidates = toy_task(n_queries=4)
    args = TrainingArguments(epochs=1, lr=1e-3, head_lr=1e-2, queries_per_step=2, warmup=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, _ = train_long_document_ranker(pl.MaxP, tiny_bert, topics, qrels, candidates, passages=False,
                                              output_dir=tmp_path / "recipe", args=args, model_options=dict(
                                                  window=12, stride=6, max_length=48, max_query_tokens=8))
    assert repr(model).startswith(f"MaxP({str(tmp_path / 'recipe')!r}") and model.history is not None
    loaded = pt.Artifact.load(str(tmp_path / "recipe"))
    assert isinstance(loaded, pl.MaxP)
    np.testing.assert_allclose(loaded.predict(PAIRS), model.predict(PAIRS), atol=1e-6)


def test_a_checkpoint_folder_loads_as_a_pyterrier_artifact(window_model, tmp_path):
    topics, qrels, candidates = toy_task(n_queries=2)
    model = copy.deepcopy(window_model)
    model.fit(topics, qrels, candidates, **FAST, checkpoint_dir=tmp_path / "run")
    loaded = pt.Artifact.load(str(tmp_path / "run"))
    assert isinstance(loaded, pl.MaxP)
    np.testing.assert_allclose(loaded.predict(PAIRS), model.predict(PAIRS), atol=1e-6)

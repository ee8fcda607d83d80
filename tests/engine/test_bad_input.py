"""Bad input gets a clear error naming the problem, or a documented behaviour; nothing is lost silently."""
import json
import tracemalloc
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

import pyterrier_longdoc as pl

from helpers.contract import castle_counter
from helpers.toy_training import toy_task

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


@pytest.fixture(scope="module")
def maxp(tiny_bert):
    torch.manual_seed(0)
    return pl.MaxP(tiny_bert, window=12, stride=6, max_doc_tokens=64, max_query_tokens=8)


def frame(texts, queries=None):
    queries = queries or ["red cat"] * len(texts)
    return pd.DataFrame({"qid": [f"q{i}" for i in range(len(texts))], "query": queries,
                         "docno": [f"d{i}" for i in range(len(texts))], "text": texts})


def test_a_first_stages_results_without_text_name_the_text_loader(maxp):
    import pyterrier as pt

    results = frame(["red cat"]).drop(columns="text")  # what bm25 gives: qid, query, docno
    with pytest.raises(pt.validate.InputValidationError, match=r"'text' column is missing.*TextLoader.*get_text"):
        maxp(results)


@pytest.mark.parametrize("missing", [None, np.nan, pd.NA])
@pytest.mark.parametrize("column", ["text", "query"])
def test_missing_text_or_query_names_the_column_and_rows(maxp, column, missing):
    inp = frame(["the red cat", "a dog"])
    inp[column] = inp[column].astype(object)
    inp.loc[1, column] = missing
    with pytest.raises(ValueError, match=rf"column '{column}' has missing values .* 1 of 2 rows .*qid='q1' docno='d1'"):
        maxp(inp)


@pytest.mark.parametrize("value", [42, 3.5, b"bytes", ["a", "list"]])
def test_non_string_values_are_a_value_error_naming_the_type(maxp, value):
    inp = frame(["the red cat", "a dog"]).astype({"text": object})
    inp.at[0, "text"] = value
    with pytest.raises(ValueError, match=rf"column 'text' has non-string values .*{type(value).__name__}"):
        maxp(inp)


def test_empty_and_whitespace_documents_and_queries_are_scored(maxp):
    # documented: an empty document is one empty chunk, so the model scores the query alone
    inp = frame(["", "   \n\t ", "the red cat", "the red cat"], queries=["red cat", "red cat", "", "  "])
    out = maxp(inp)
    assert np.isfinite(out["score"]).all()
    assert out.loc[0, "score"] == pytest.approx(out.loc[1, "score"], abs=1e-6)  # both are the empty document
    assert out.loc[2, "score"] == pytest.approx(out.loc[3, "score"], abs=1e-6)  # both are the empty query


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")  # long toy documents
def test_unicode_emoji_cjk_rtl_zero_width_and_control_characters(maxp):
    texts = ["the red cat 😺🐈 " * 5, "日本語のテキスト 中文文本 " * 10, "שלום עולם مرحبا بالعالم " * 10,
             "red\u200bcat\u200d\ufeff zero width", "control \x00\x07\x1b[31m chars \r\n end", "\u200b\u200b\u200b"]
    out = maxp(frame(texts))
    assert np.isfinite(out["score"]).all() and len(out) == len(texts)


def test_a_million_character_document_costs_only_what_the_model_reads(maxp):
    huge = "the red cat sat on the mat " * 40_000  # over 1,000,000 characters
    assert len(huge) > 1_000_000
    tracemalloc.start()
    with pytest.warns(UserWarning, match=r"1 of 1 documents are longer than the 64 tokens it reads and were cropped "
                                         r"\(max_doc_tokens= reads more; warn_cropping=False"):
        score = maxp.score_texts(["red cat"], [huge])[0]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50_000_000  # the text itself is 1 MB; tokenizing it all would not stay this small
    with pytest.warns(pl.CroppingWarning, match="1 of 1 documents are longer than the 64 tokens"):
        start = maxp.score_texts(["red cat"], [huge[:2000]])[0]
    assert score == pytest.approx(start, abs=1e-6)


def test_long_text_without_white_space_is_cropped_not_crashed(maxp):
    # BERT's WordPiece reads a "word" over 100 characters as one [UNK]: only the CJK text is cropped
    with pytest.warns(pl.CroppingWarning, match="1 of 2 documents are longer than the 64 tokens it reads"):
        scores = maxp.score_texts(["red cat"], ["x" * 2_000_000, "猫" * 500_000])
    assert np.isfinite(scores).all()


def test_a_query_longer_than_its_budget_is_cropped_and_said(maxp):
    long_query = " ".join(["red"] * 40)
    with pytest.warns(UserWarning, match="1 of 1 queries were cropped to max_query_tokens=8"):
        long_score = maxp.score_texts([long_query], ["the red cat"])[0]
    assert long_score == pytest.approx(maxp.score_texts([" ".join(["red"] * 8)], ["the red cat"])[0], abs=1e-6)


def test_nothing_cropped_means_no_warning(maxp):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        maxp(frame(["the red cat"]))


def test_duplicate_rows_are_each_scored_and_kept(maxp):
    inp = pd.concat([frame(["the red cat", "a dog"])] * 2, ignore_index=True)
    out = maxp(inp)
    assert len(out) == 4
    scores = out.groupby(["qid", "docno"])["score"].nunique()
    assert (scores == 1).all()


def test_bad_runtime_settings(tiny_bert):
    with pytest.raises(ValueError, match="batch_size"):
        pl.MaxP(tiny_bert, batch_size=0)
    with pytest.raises(ValueError, match="unknown dtype"):
        pl.MaxP(tiny_bert, dtype="int3")
    with pytest.raises(TypeError, match="base class"):
        pl.LongDocReranker(tiny_bert)


@pytest.fixture()
def saved(maxp, tmp_path):
    path = tmp_path / "model"
    maxp.save_pretrained(path)
    return path


def test_truncated_weights_give_a_clear_error(saved):
    weights = saved / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ValueError, match="corrupt or truncated"):
        pl.LongDocReranker.from_pretrained(saved)


def test_missing_weights_give_a_clear_error(saved):
    (saved / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="has no model.safetensors"):
        pl.MaxP.from_pretrained(saved)


def test_corrupt_config_gives_a_clear_error(saved):
    (saved / "config.json").write_text('{"pyterrier_longdoc_version": "0.1.0", "model": ')
    with pytest.raises(ValueError, match="not valid JSON"):
        pl.LongDocReranker.from_pretrained(saved)


def test_a_bad_saved_setting_names_the_file_and_the_setting(saved):
    import re

    config = json.loads((saved / "config.json").read_text())
    config["pyterrier_longdoc"]["settings"]["window"] = "wide"
    (saved / "config.json").write_text(json.dumps(config))
    where = re.escape(str(saved / "config.json"))
    with pytest.raises(ValueError, match=rf"^{where}: its saved settings do not load \('window' = 'wide'\): "
                                         r"MaxPSettings: window must be a positive integer or None, got 'wide'$"):
        pl.LongDocReranker.from_pretrained(saved)
    assert pl.MaxP.from_pretrained(saved, window=20).settings["window"] == 20  # an override replaces it
    config["pyterrier_longdoc"]["settings"].update(window=12, windows=3)
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(TypeError, match=rf"^{where}: its saved settings do not load \('windows' = 3\): MaxP got unknown"):
        pl.MaxP.from_pretrained(saved)
    del config["pyterrier_longdoc"]["settings"]["windows"]
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="^MaxPSettings: window must"):  # a value given by hand: the user's own
        pl.MaxP.from_pretrained(saved, window="wide")


def test_pickle_weights_are_refused(saved):
    (saved / "model.safetensors").rename(saved / "pytorch_model.bin")
    with pytest.raises(ValueError, match="pickle"):
        pl.MaxP.from_pretrained(saved)


def test_plain_encoder_with_pickle_weights_only_is_refused(tiny_bert, tmp_path):
    import shutil

    encoder = tmp_path / "pickled-encoder"
    shutil.copytree(tiny_bert, encoder)
    (encoder / "model.safetensors").rename(encoder / "pytorch_model.bin")
    with pytest.raises(ValueError, match="safetensors only"):
        pl.MaxP(encoder)


def test_checkpoint_of_another_model_names_the_right_class(saved):
    with pytest.raises(ValueError, match="holds a 'maxp' model.*MaxP.from_pretrained"):
        pl.ParadeAttn.from_pretrained(saved)


def test_checkpoint_from_a_newer_version_warns(saved):
    config = json.loads((saved / "config.json").read_text())
    config["pyterrier_longdoc"]["version"] = "99.0.0"
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.warns(UserWarning, match="saved by pyterrier_longdoc 99.0.0, newer"):
        pl.LongDocReranker.from_pretrained(saved)


def test_missing_directory_is_a_clear_error():
    with pytest.raises(FileNotFoundError, match="not a directory with a model"):
        pl.MaxP("./no/such/model")


def test_base_class_refuses_a_plain_encoder(tiny_bert):
    with pytest.raises(ValueError, match="not a saved pyterrier_longdoc model"):
        pl.LongDocReranker.from_pretrained(tiny_bert)


def test_overrides_apply_to_a_loaded_checkpoint(saved):
    loaded = pl.MaxP.from_pretrained(saved, window=10, stride=5, batch_size=3)
    assert loaded.settings["window"] == 10 and loaded.batch_size == 3
    # repr shows the settings as they are: the saved ones that differ from the defaults too
    assert repr(loaded) == f"MaxP({str(saved)!r}, batch_size=3, window=10, stride=5, max_query_tokens=8, max_doc_tokens=64)"


def test_bf16_on_a_cpu_without_native_bf16_warns(tiny_bert, monkeypatch):
    monkeypatch.setattr("pyterrier_longdoc.engine.runtime.native_bf16_cpu", lambda: False)
    with pytest.warns(UserWarning, match="no native bf16") as said:
        pl.MaxP(tiny_bert, dtype="bf16", device="cpu")
    assert {w.filename for w in said if "no native bf16" in str(w.message)} == {__file__}  # the caller's line
    monkeypatch.setattr("pyterrier_longdoc.engine.runtime.native_bf16_cpu", lambda: True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.simplefilter("ignore", pl.UntrainedHeadWarning)
        assert pl.MaxP(tiny_bert, dtype=torch.bfloat16, device="cpu").autocast_dtype == torch.bfloat16


def test_the_cropping_report_names_the_setting_that_reads_more(tiny_bert):
    long = "the red cat sat on the mat " * 100  # 700 tokens
    capped_by_chunks = pl.AvgP(tiny_bert, max_chunks=2, max_length=48)  # two chunks of the start
    with pytest.warns(UserWarning, match=r"were cropped \(max_chunks= reads more; warn_cropping=False"):
        capped_by_chunks.score_texts(["red cat"], [long])
    with pytest.warns(UserWarning) as shown:  # FirstP reads the start by definition: no setting reads more
        pl.FirstP(tiny_bert, warn_cropping=True, max_length=48).score_texts(["red cat"], [long])
    assert "were cropped" in str(shown[-1].message) and "reads more" not in str(shown[-1].message)


# --- a column name given twice is named ---

@pytest.mark.parametrize("column", ["text", "qid"])
def test_a_column_given_twice_is_named(window_model, column):
    _, _, candidates = toy_task(n_queries=2)
    twice = pd.concat([candidates, candidates[[column]]], axis=1)
    for transformer in (window_model, pl.LongDoc(castle_counter())):
        with pytest.raises(ValueError, match=f"more than one column named '{column}'"):
            transformer(twice)

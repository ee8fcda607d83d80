"""The anchors' behaviour, met point by point and checked against the anchors themselves:
sentence-transformers' CrossEncoder.predict/rank on the same tiny cross-encoder, PyTerrier's
GridSearch/GridScan tuning chunking settings, pt.inspect on the artifact, warnings at the
user's line, and the progress bar."""
import copy
import json
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch

import pyterrier_longdoc as pl

from helpers.contract import castle_counter
from helpers.cross_encoders import PAIRS, write_cross_encoder
from helpers.toy_training import FAST, new_model, toy_task

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

QUERIES = ["castle river", "red dog", "what is music"]
DOCS = ["the castle by the river is red", "a dog in the house", "music song answer"]


@pytest.fixture(scope="module")
def cross_encoder(tmp_path_factory):
    return write_cross_encoder(tmp_path_factory.mktemp("ce"), "bert")


@pytest.fixture(scope="module")
def pair(cross_encoder):
    """(our FirstP, sentence-transformers' CrossEncoder) of the same checkpoint; one window per document."""
    from sentence_transformers import CrossEncoder

    return pl.FirstP(str(cross_encoder), max_query_tokens=8), CrossEncoder(str(cross_encoder), device="cpu")


def test_predict_gives_what_cross_encoder_predict_gives(pair):
    ours, theirs = pair
    pairs = list(zip(QUERIES, DOCS))
    for activation in (torch.nn.Sigmoid(), torch.nn.Identity()):
        expected = theirs.predict(pairs, activation_fn=activation)
        got = ours.predict(pairs, activation_fn=activation, batch_size=2, show_progress_bar=False)
        assert got.dtype == expected.dtype == np.float32 and got.shape == expected.shape
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    # scores are logits: CrossEncoder's own default (a sigmoid) is ours with activation_fn=Sigmoid
    np.testing.assert_allclose(torch.sigmoid(torch.from_numpy(ours.predict(pairs))), theirs.predict(pairs), atol=1e-5)
    # one pair: one scalar of the same type
    one_ours, one_theirs = ours.predict(pairs[0]), theirs.predict(pairs[0], activation_fn=torch.nn.Identity())
    assert type(one_ours) is type(one_theirs) is np.float32 and np.ndim(one_ours) == 0
    assert one_ours == pytest.approx(float(one_theirs), abs=1e-5)
    # tensors, and lists of 0-d tensors
    as_tensor = ours.predict(pairs, convert_to_tensor=True)
    assert isinstance(as_tensor, torch.Tensor) and as_tensor.dtype == torch.float32 and as_tensor.shape == (3,)
    as_list = ours.predict(pairs, convert_to_numpy=False)
    theirs_list = theirs.predict(pairs, convert_to_numpy=False)
    assert isinstance(as_list, list) and len(as_list) == len(theirs_list) == 3
    assert all(isinstance(s, torch.Tensor) and s.ndim == 0 for s in as_list + theirs_list)
    # apply_softmax touches several labels only, in CrossEncoder too
    np.testing.assert_allclose(ours.predict(pairs, apply_softmax=True), ours.predict(pairs))
    np.testing.assert_allclose(theirs.predict(pairs, apply_softmax=True), theirs.predict(pairs))
    assert ours.batch_size == 16 and ours.verbose is None  # the call's options were for that call only


def test_rank_gives_what_cross_encoder_rank_gives(pair):
    ours, theirs = pair
    documents = DOCS + ["the red castle", "a house"]
    for kwargs in ({}, {"top_k": 2, "return_documents": True}):
        expected = theirs.rank("red castle", documents, **kwargs)
        got = ours.rank("red castle", documents, activation_fn=torch.nn.Sigmoid(), batch_size=3, **kwargs)
        assert [r["corpus_id"] for r in got] == [r["corpus_id"] for r in expected]
        assert [r.get("text") for r in got] == [r.get("text") for r in expected]
        assert all(type(a["score"]) is type(b["score"]) is float for a, b in zip(got, expected))
        np.testing.assert_allclose([r["score"] for r in got], [r["score"] for r in expected], atol=1e-5)
    with pytest.raises(TypeError, match="pair 1"):
        ours.predict([("q", "d"), ("q",)])


def test_a_progress_bar_counts_documents_from_the_start(pair, monkeypatch):
    ours, _ = pair
    bars = []

    class Recorder:
        def __init__(self, total=None, disable=False, unit="it", **_):
            self.total, self.disable, self.unit, self.n, self.at_start = total, disable, unit, 0, total
            bars.append(self)

        def update(self, n):
            self.n += n

        def __enter__(self):
            return self

        def __exit__(self, *_):
            pass

    monkeypatch.setattr(pt, "tqdm", Recorder)
    maxp = pl.MaxP(str(ours._source[0]), window=4, stride=2, max_query_tokens=8)
    maxp.predict(list(zip(QUERIES, DOCS)), show_progress_bar=True)
    bar, = bars
    assert not bar.disable and bar.unit == "doc"
    assert bar.at_start == bar.total == bar.n == 3  # a total before the first batch; documents, not windows
    maxp.predict(list(zip(QUERIES, DOCS)))
    assert bars[1].disable  # verbose is off by default


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")  # long toy documents
def test_grid_search_tunes_chunking_settings(tiny_bert):
    topics, qrels, candidates = toy_task()
    model = new_model(tiny_bert)
    pipeline = pt.Transformer.from_df(candidates) >> model
    grid = {"window": [8, 12], "stride": [4, 8], "max_doc_tokens": [24, 64]}
    scan = pt.GridScan(pipeline, {model: grid}, topics, qrels, ["recip_rank"])
    assert len(scan) == 8
    for _, row in scan.iterrows():  # each row is what a model built with those settings scores
        settings = {name: int(row[f"tran_{i}_{name}"]) for i, name in enumerate(grid)}
        torch.manual_seed(0)
        fresh = pl.MaxP(tiny_bert, max_query_tokens=8, **settings)
        fresh.model.load_state_dict(model.model.state_dict())
        expected = pt.Experiment([pt.Transformer.from_df(candidates) >> fresh], topics, qrels, ["recip_rank"])
        assert row["recip_rank"] == pytest.approx(expected["recip_rank"][0])
    best = scan.loc[scan["recip_rank"].idxmax()]
    tuned = pt.GridSearch(pipeline, {model: grid}, topics, qrels, "recip_rank")
    assert tuned is pipeline
    assert [model.get_parameter(name) for name in grid] == [int(best[f"tran_{i}_{name}"]) for i, name in
                                                          enumerate(grid)]
    assert model.settings["window"] == model.get_parameter("window")  # saved with the model


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")  # long toy documents
def test_grid_scan_rows_show_the_model_as_it_was_for_the_row(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=2, docs_per_query=2)
    model = new_model(tiny_bert)
    pipeline = pt.Transformer.from_df(candidates) >> model
    grid = {"window": [8, 12], "stride": [4, 6]}
    scan = pl.grid_scan(pipeline, {model: grid}, topics, qrels, "recip_rank")
    assert len(scan) == 4 and scan["tran_0"].nunique() == 4  # pt.GridScan's object shows the last row's four times
    for _, row in scan.iterrows():
        assert row["tran_0"] == row["tran_1"]
        assert f"window={row['tran_0_window']}, stride={row['tran_1_stride']}" in row["tran_0"]
    assert repr(model) == scan["tran_0"].iloc[-1] and model.get_parameter("window") == 12  # as pt.GridScan leaves it
    plain = pt.GridScan(pipeline, {model: grid}, topics, qrels, ["recip_rank"])
    assert plain.drop(columns=["tran_0", "tran_1"]).equals(scan.drop(columns=["tran_0", "tran_1"]))


def test_parameters_are_checked_and_runtime_options_are_parameters(tiny_bert):
    model = new_model(tiny_bert)  # window 12, stride 6
    model.set_parameter("window", 4)  # stride 6 > window 4 for now: GridSearch sets one at a time
    assert model.get_parameter("window") == 4
    model.set_parameter("stride", 2)
    assert model.chunk_spans("the cat " * 4)[:2] == [(0, 4), (2, 6)]
    model.set_parameter("stride", 100)
    with pytest.raises(ValueError,
                       match=r"set_parameter \(stride=100\) do not work together: MaxPSettings: stride \(100\) > window"):
        model.predict(("q", "d"))
    model.set_parameter("stride", 4)
    with pytest.raises(ValueError, match="window must be a positive integer"):
        model.set_parameter("window", 0)
    with pytest.raises(ValueError, match="no parameter 'windw'.*window"):
        model.set_parameter("windw", 10)
    with pytest.raises(ValueError, match="batch_size must be a positive integer"):
        model.set_parameter("batch_size", 0)
    assert model.get_parameter("stride") == 4 and model.get_parameter("batch_size") == 16
    model.set_parameter("batch_size", 4)
    assert model.batch_size == 4
    cedr = new_model(tiny_bert, pl.CedrPacrr)
    with pytest.raises(ValueError, match="max_query_tokens=8: its weights depend on it"):
        cedr.set_parameter("max_query_tokens", 4)


def test_pyterrier_inspects_the_artifact_type_and_format(tiny_bert, tmp_path):

    model = new_model(tiny_bert)
    assert pt.inspect.artifact_type_format(model) == ("reranker", "pyterrier_longdoc")
    assert pt.inspect.artifact_type_format(pl.ParadeAttn) == ("reranker", "pyterrier_longdoc")
    model.save_pretrained(tmp_path / "m")
    meta = json.loads((tmp_path / "m" / "pt_meta.json").read_text())
    assert (meta["type"], meta["format"]) == pt.inspect.artifact_type_format(model)


def long_frame():
    return pd.DataFrame({"qid": ["q1"], "query": ["castle"], "docno": ["d1"], "text": ["the castle " * 80]})


def test_warnings_point_at_the_users_line(tiny_bert, cross_encoder):
    maxp = pl.MaxP(str(cross_encoder), window=8, stride=8, max_doc_tokens=16, max_query_tokens=8)
    calls = {
        "call": lambda: maxp(long_frame()),
        "pipeline": lambda: (pt.Transformer.from_df(long_frame()) >> maxp)(long_frame()[["qid", "query"]]),
        "predict": lambda: maxp.predict([("castle", "the castle " * 80)]),
        "constructor": lambda: pl.MaxP(tiny_bert),
        "from_pretrained": lambda: pl.MaxP.from_pretrained(tiny_bert),
    }
    for what, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        ours = [w for w in caught if "cropped" in str(w.message) or w.category is pl.UntrainedHeadWarning]
        assert ours, what
        assert {(w.filename, w.lineno) for w in ours} == {(__file__, call.__code__.co_firstlineno)}, what


def test_firstp_crops_by_definition_so_it_warns_only_when_asked(cross_encoder):
    settings = dict(max_doc_tokens=16, max_query_tokens=8)
    frame = long_frame()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "FirstP: .*documents are longer")
        pl.FirstP(str(cross_encoder), **settings)(frame)
    with pytest.warns(UserWarning, match="1 of 1 documents are longer"):
        pl.FirstP(str(cross_encoder), warn_cropping=True, **settings)(frame)
    maxp = pl.MaxP(str(cross_encoder), window=8, stride=8, **settings)
    with pytest.warns(UserWarning, match="1 of 1 documents are longer"):
        maxp(frame)
    maxp.set_parameter("warn_cropping", False)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", "MaxP: .*documents are longer")
        maxp(frame)


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.ChanceLevelWarning")  # a toy fit of a few steps
@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.training.selection.TrainingBelowStartWarning")  # its 2 steps may
def test_the_model_card_states_each_setting_once_and_truly(tiny_bert, tmp_path):
    from pyterrier_longdoc._card import model_card

    topics, qrels, candidates = toy_task()
    model = new_model(tiny_bert)  # window 12, stride 6: not the class's documented 150/100
    untrained = model_card(model)
    assert "base_model" not in untrained.split("---")[1] and "**Base model:** a local folder" in untrained
    assert "Not trained by `fit`" in untrained and "## Evaluation" not in untrained
    assert "150" not in untrained and "| `window` | `12` |" in untrained
    for setting in model.settings:
        assert untrained.count(f"`{setting}`") == 1, setting
    model.fit(topics, qrels, candidates, **FAST, epochs=1, valid_topics=topics, valid_qrels=qrels,
              valid_candidates=candidates, valid_metric="RR@10")
    model.config.base_model = "cross-encoder/ms-marco-MiniLM-L-6-v2"  # as if started from the hub
    card = model_card(model)
    front = card.split("---")[1]
    assert "base_model: cross-encoder/ms-marco-MiniLM-L-6-v2" in front and "metrics: [RR@10]" in front
    assert "# MaxP based on cross-encoder/ms-marco-MiniLM-L-6-v2" in card
    assert "2 optimiser steps over 1 epoch;" in card and "- 8 topics\n- 32 judgements" in card
    assert "- `lr`: 0.003" in card and "checkpoint_dir" not in card
    from pyterrier_longdoc._card import hyperparameters
    from pyterrier_longdoc.training import TrainingArguments

    assert hyperparameters({"args": TrainingArguments(epochs=3, checkpoint_dir="x"), "lr": 0.1}) == {"epochs": 3,
                                                                                                    "lr": 0.1}
    best = model.history["RR@10"].max()
    assert f"| RR@10 | {model.history['RR@10'].dropna().iloc[-1]:.4f} | {best:.4f} |" in card


# --- pt.GridSearch over a grid with invalid combinations finishes with a valid setting ---

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

"""Trained cross-encoders in and out: a sequence-classification checkpoint keeps its head, its
window scores equal sentence-transformers' CrossEncoder.predict, and FirstP/MaxP/SumP export
back to a CrossEncoder folder. Also: the warning for new heads, and version-0.1 checkpoints."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers.cross_encoders import ARCHITECTURES, LAYOUTS, predict, write_cross_encoder
from helpers.cross_encoders import CROSS_ENCODER_SETTINGS, LONG_DOCS, QUERIES, window_texts

import pyterrier_longdoc as pl

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

DOCS = ["the castle by the river is red", "a dog in the house", "music song answer", "the green door of the house"]


@pytest.fixture(scope="module", params=ARCHITECTURES)
def cross_encoder(request, tmp_path_factory):
    return write_cross_encoder(tmp_path_factory.mktemp(request.param), request.param)


def test_firstp_on_a_one_window_document_equals_cross_encoder_predict(cross_encoder):
    with warnings.catch_warnings():
        warnings.simplefilter("error", pl.UntrainedHeadWarning)  # a trained head: no warning
        firstp = pl.FirstP(cross_encoder, max_query_tokens=8)
    expected = predict(cross_encoder, list(zip(QUERIES, DOCS)))
    np.testing.assert_allclose(firstp.score_texts(QUERIES, DOCS), expected, atol=1e-5, rtol=0)
    assert firstp.config.head_type == "sequence_classification"


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")  # long toy documents
def test_maxp_sump_and_kmax_equal_predict_over_the_same_windows(cross_encoder):
    models = {cls: cls(cross_encoder, **CROSS_ENCODER_SETTINGS) for cls in (pl.MaxP, pl.SumP, pl.KMaxAvgP)}
    maxp = models[pl.MaxP]
    for query, text in zip(QUERIES, LONG_DOCS):
        windows = window_texts(maxp, query, text)
        assert len(windows) > 2
        per_window = predict(cross_encoder, [(query, w) for w in windows])
        np.testing.assert_allclose(maxp.score_texts([query], [text]), [per_window.max()], atol=1e-5, rtol=0)
        np.testing.assert_allclose(models[pl.SumP].score_texts([query], [text]), [per_window.sum()], atol=1e-5, rtol=0)
        best3 = np.sort(per_window)[-3:].mean()
        np.testing.assert_allclose(models[pl.KMaxAvgP].score_texts([query], [text]), [best3], atol=1e-5, rtol=0)


def test_parade_pooled_and_attention_start_from_the_head(cross_encoder):
    # over one window, the combined vector is that window's own: the score is the cross-encoder's
    expected = predict(cross_encoder, list(zip(QUERIES, DOCS)))
    for cls in (pl.ParadeMax, pl.ParadeAvg, pl.ParadeAttn, pl.AvgP):
        model = cls(cross_encoder, max_query_tokens=8)
        np.testing.assert_allclose(model.score_texts(QUERIES, DOCS), expected, atol=1e-5, rtol=0, err_msg=cls.name)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_every_saved_layout_keeps_the_head(tmp_path, layout):
    folder = write_cross_encoder(tmp_path, "bert", layout=layout)
    transformers_model = folder / "0_Transformer" if layout == "subfolder" else folder
    np.testing.assert_allclose(pl.FirstP(str(folder), max_query_tokens=8).score_texts(QUERIES, DOCS),
                               predict(transformers_model, list(zip(QUERIES, DOCS))), atol=1e-5, rtol=0)


def test_two_labels_score_the_logit_difference(tmp_path):
    folder = write_cross_encoder(tmp_path, "bert", num_labels=2)
    logits = predict(folder, list(zip(QUERIES, DOCS)))
    assert logits.shape == (4, 2)
    scores = pl.FirstP(str(folder), max_query_tokens=8).score_texts(QUERIES, DOCS)
    np.testing.assert_allclose(scores, logits[:, 1] - logits[:, 0], atol=1e-5, rtol=0)


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")  # long toy documents
@pytest.mark.parametrize("arch", ["bert", "roberta", "modernbert"])
def test_export_gives_a_cross_encoder_with_the_same_window_scores(tmp_path, arch):
    from transformers import AutoModelForSequenceClassification

    maxp = pl.MaxP(str(write_cross_encoder(tmp_path / "in", arch, seed=3)), **CROSS_ENCODER_SETTINGS)
    with torch.no_grad():  # as if trained: the weights are no longer the checkpoint's
        for parameter in maxp.model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.01)
    maxp.save_cross_encoder(tmp_path / "out")
    query, text = QUERIES[0], LONG_DOCS[0]
    per_window = predict(tmp_path / "out", [(query, w) for w in window_texts(maxp, query, text)])
    np.testing.assert_allclose(maxp.score_texts([query], [text]), [per_window.max()], atol=1e-5, rtol=0)
    loaded = AutoModelForSequenceClassification.from_pretrained(tmp_path / "out")
    assert type(loaded).__name__.endswith("ForSequenceClassification")
    # and the export starts a model again, with the head it was trained to
    again = pl.MaxP(str(tmp_path / "out"), **CROSS_ENCODER_SETTINGS)
    np.testing.assert_allclose(again.score_texts([query], [text]), maxp.score_texts([query], [text]), atol=1e-5)


def test_export_is_refused_where_no_window_scorer_exists(tmp_path):
    folder = write_cross_encoder(tmp_path, "bert")
    with pytest.raises(ValueError, match="no cross-encoder to export"):
        pl.ParadeAttn(str(folder)).save_cross_encoder(tmp_path / "out")


def test_a_plain_encoder_warns_once_that_its_head_is_new(tiny_bert, tmp_path):
    with pytest.warns(pl.UntrainedHeadWarning, match="random until fit") as caught:
        model = pl.MaxP(tiny_bert)
    assert len([w for w in caught if issubclass(w.category, pl.UntrainedHeadWarning)]) == 1
    assert "cross-encoder" in str(caught[0].message)
    model.save_pretrained(tmp_path / "saved")
    with warnings.catch_warnings():
        warnings.simplefilter("error", pl.UntrainedHeadWarning)  # a saved model is what was trained
        pl.MaxP.from_pretrained(tmp_path / "saved")


def test_models_with_their_own_new_head_warn_even_over_a_cross_encoder(tmp_path):
    folder = str(write_cross_encoder(tmp_path, "bert"))
    with pytest.warns(pl.UntrainedHeadWarning, match="its CedrKnrm head is new"):
        pl.CedrKnrm(folder)


def test_the_head_survives_a_save_and_load_round_trip(tmp_path):
    folder = write_cross_encoder(tmp_path / "ce", "deberta-v2")
    maxp = pl.MaxP(str(folder), **CROSS_ENCODER_SETTINGS)
    maxp.save_pretrained(tmp_path / "saved")
    loaded = pl.LongDocReranker.from_pretrained(tmp_path / "saved")
    np.testing.assert_allclose(loaded.score_texts(QUERIES, LONG_DOCS), maxp.score_texts(QUERIES, LONG_DOCS), atol=1e-6)
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(tmp_path / "saved")  # transformers reads the saved config
    assert config.model_type == "deberta-v2"
    assert json.loads((tmp_path / "saved" / "config.json").read_text())["pyterrier_longdoc"]["model"] == "maxp"


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "version-0.1"


@pytest.mark.parametrize("name", ["maxp", "parade_attn"])
def test_a_version_0_1_checkpoint_loads_and_scores_as_it_did(name):
    expected = json.loads((FIXTURES / "expected.json").read_text())
    model = pl.LongDocReranker.from_pretrained(FIXTURES / name)
    assert model.name == name and model.config.head_type == "linear"
    np.testing.assert_allclose(model.score_texts(expected["queries"], expected["texts"]),
                               expected["scores"][name], atol=1e-5, rtol=0)

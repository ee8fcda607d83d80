"""Issue 23, item 1: a saved folder is what its config.json claims. A window scorer's folder is
also the cross-encoder it scores windows with (sentence-transformers and transformers load it
with every weight); any other model's folder names only its encoder's architecture, whose
weights it holds. Folders saved under the library's own names (version 0.2.0) still load."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from cross_encoders import predict, write_cross_encoder
from helpers import CROSS_ENCODER_SETTINGS, LONG_DOCS, QUERIES, window_texts

import pyterrier_longdoc as pl

FIXTURES = Path(__file__).parent / "fixtures" / "version-0.2.0"


def trained(model):
    with torch.no_grad():  # as if trained: the weights are no longer the checkpoint's
        for parameter in model.model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.05)
    return model


@pytest.mark.parametrize("arch, num_labels", [("bert", 1), ("bert", 2), ("roberta", 1), ("modernbert", 1)])
def test_a_saved_window_scorer_is_the_cross_encoder_it_claims(tmp_path, arch, num_labels):
    from transformers import AutoModelForSequenceClassification

    maxp = trained(pl.MaxP(str(write_cross_encoder(tmp_path / "ce", arch, num_labels=num_labels)), **CROSS_ENCODER_SETTINGS))
    maxp.save_pretrained(tmp_path / "saved")
    config = json.loads((tmp_path / "saved" / "config.json").read_text())
    assert len(config["architectures"]) == 1 and config["architectures"][0].endswith("ForSequenceClassification")
    loaded, info = AutoModelForSequenceClassification.from_pretrained(tmp_path / "saved", output_loading_info=True)
    assert type(loaded).__name__ == config["architectures"][0]
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    for query, text in zip(QUERIES, LONG_DOCS):
        windows = window_texts(maxp, query, text)
        logits = predict(tmp_path / "saved", [(query, w) for w in windows])
        per_window = logits[:, 1] - logits[:, 0] if num_labels == 2 else logits
        np.testing.assert_allclose(maxp.score_texts([query], [text]), [per_window.max()], atol=1e-5, rtol=0)
    assert "The folder is also a cross-encoder" in (tmp_path / "saved" / "README.md").read_text()
    again = pl.LongDocReranker.from_pretrained(tmp_path / "saved")
    np.testing.assert_allclose(again.score_texts(QUERIES, LONG_DOCS), maxp.score_texts(QUERIES, LONG_DOCS), atol=1e-6)


@pytest.mark.parametrize("cls", [pl.ParadeAttn, pl.AvgP, pl.CedrKnrm])
def test_any_other_saved_model_claims_only_its_encoder(tmp_path, cls):
    from transformers import AutoModel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pl.UntrainedHeadWarning)  # ParadeAttn and CEDR have new parameters
        model = trained(cls(str(write_cross_encoder(tmp_path / "ce", "bert"))))
    model.save_pretrained(tmp_path / "saved")
    assert json.loads((tmp_path / "saved" / "config.json").read_text())["architectures"] == ["BertModel"]
    assert "cross-encoder" not in (tmp_path / "saved" / "README.md").read_text()
    encoder = AutoModel.from_pretrained(tmp_path / "saved")
    mine = model.model.encoder.state_dict()
    for name, value in encoder.state_dict().items():
        if name in mine:  # BERT's pooler belongs to the head of the models that keep one
            torch.testing.assert_close(value, mine[name], rtol=0, atol=0, msg=name)
    assert len(set(encoder.state_dict()) & set(mine)) == len(mine)
    again = pl.LongDocReranker.from_pretrained(tmp_path / "saved")
    np.testing.assert_allclose(again.score_texts(QUERIES, LONG_DOCS), model.score_texts(QUERIES, LONG_DOCS), atol=1e-6)


@pytest.mark.parametrize("name", ["maxp", "parade_attn"])
def test_a_folder_saved_under_the_library_names_still_loads(name, tmp_path):
    from safetensors.torch import load_file

    assert all(k.startswith(("encoder.", "aggregator.")) for k in load_file(FIXTURES / name / "model.safetensors"))
    expected = json.loads((FIXTURES / "expected.json").read_text())
    model = pl.LongDocReranker.from_pretrained(FIXTURES / name)
    assert model.name == name and model.config.head_type == "sequence_classification"
    scores = model.score_texts(expected["queries"], expected["texts"])
    np.testing.assert_allclose(scores, expected["scores"][name], atol=1e-5, rtol=0)
    model.save_pretrained(tmp_path / "again")  # saved again, in transformers' names
    np.testing.assert_allclose(pl.LongDocReranker.from_pretrained(tmp_path / "again").score_texts(
        expected["queries"], expected["texts"]), scores, atol=1e-6)


def test_longp_pooling_otherwise_than_its_architecture_claims_only_its_encoder(tmp_path):
    folder = str(write_cross_encoder(tmp_path / "ce", "bert"))
    for pooling, architecture in [("cls", "BertForSequenceClassification"), ("mean", "BertModel")]:
        model = trained(pl.LongP(folder, pooling=pooling))
        model.save_pretrained(tmp_path / pooling)
        assert json.loads((tmp_path / pooling / "config.json").read_text())["architectures"] == [architecture]
        again = pl.LongDocReranker.from_pretrained(tmp_path / pooling)
        np.testing.assert_allclose(again.score_texts(QUERIES, LONG_DOCS), model.score_texts(QUERIES, LONG_DOCS), atol=1e-6)

"""Saved folders: a saved folder is what its config.json claims. A window scorer's folder is
also the cross-encoder it scores windows with (sentence-transformers and transformers load it
with every weight, an exported one reads whole windows); any other model's folder names only its
encoder's architecture, whose weights it holds, and CrossEncoder refuses it loudly. Folders saved
under the library's own names (version 0.2.0) still load; an unknown or newer version is said
once; remote code is read from the folder."""
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc.engine.weights import NotACrossEncoder

from helpers.cross_encoders import (
    CROSS_ENCODER_SETTINGS,
    LONG_DOCS,
    PAIRS,
    QUERIES,
    predict,
    window_texts,
    write_cross_encoder,
)
from helpers.tiny_bert import write_tiny_bert

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "version-0.2.0"


def trained(model):
    with torch.no_grad():  # as if trained: the weights are no longer the checkpoint's
        for parameter in model.model.parameters():
            parameter.add_(torch.randn_like(parameter) * 0.05)
    return model


@pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")  # long toy documents
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


# --- version strings ---

@pytest.fixture(scope="module")
def saved(tiny_bert, tmp_path_factory):
    folder = tmp_path_factory.mktemp("saved")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pl.UntrainedHeadWarning)
        pl.MaxP(tiny_bert, window=12, stride=6).save_pretrained(folder)
    return folder


def with_version(folder, tmp_path, version):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    config["pyterrier_longdoc"]["version"] = version
    (copy / "config.json").write_text(json.dumps(config))
    return copy


def version_warnings(load):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load()
    return [str(w.message) for w in caught if "pyterrier_longdoc" in str(w.message)]


@pytest.mark.parametrize("version", ["garbage", "", None, 1.0])
def test_an_unknown_version_is_said_once(saved, tmp_path, version):
    folder = with_version(saved, tmp_path, version)
    for load in (lambda: pl.MaxP(folder), lambda: pl.LongDocReranker.from_pretrained(folder)):
        said = version_warnings(load)
        assert len(said) == 1 and f"version {version!r}, which is not a version number" in said[0]


@pytest.mark.parametrize("version", ["9.0.0", "v1.0.0", "V9"])
def test_a_newer_version_is_said_once(saved, tmp_path, version):
    folder = with_version(saved, tmp_path, version)
    for load in (lambda: pl.MaxP(folder), lambda: pl.LongDocReranker.from_pretrained(folder)):
        said = version_warnings(load)
        assert len(said) == 1 and f"saved by pyterrier_longdoc {version}, newer than" in said[0]
    assert version_warnings(lambda: pl.MaxP(with_version(saved, tmp_path / "old", "0.1.0"))) == []


# --- an exported cross-encoder reads the windows the model reads ---

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


# --- CrossEncoder(folder) of a model that does not score windows one at a time fails loudly ---

def test_cross_encoder_refuses_a_saved_parade_attn(tiny_bert, tmp_path):
    from sentence_transformers import CrossEncoder

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parade = pl.ParadeAttn(tiny_bert, seed=0, window=12, stride=6, max_length=48, max_query_tokens=8)
    parade.save_pretrained(tmp_path / "parade")
    # the library's refusal comes first and alone, not sentence-transformers' "pass trust_remote_code=True"
    for trust in (False, True):
        with pytest.raises(ImportError, match=r"holds a pyterrier_longdoc 'parade_attn' model, which is not a "
                                              r"cross-encoder.*LongDocReranker\.from_pretrained") as refusal:
            CrossEncoder(str(tmp_path / "parade"), trust_remote_code=trust)
        assert "trust_remote_code" not in str(refusal.value) and "pip install" not in str(refusal.value)
    # sentence-transformers versions that read no requirements reach the module, which refuses it too
    with pytest.raises(ValueError, match=r"holds a pyterrier_longdoc 'parade_attn' model, which is not a "
                                         r"cross-encoder.*LongDocReranker\.from_pretrained\('.*parade'\)"):
        NotACrossEncoder.load(str(tmp_path / "parade"))
    again = pl.LongDocReranker.from_pretrained(str(tmp_path / "parade"))  # the library still loads it
    np.testing.assert_allclose(again.predict(PAIRS), parade.predict(PAIRS), atol=1e-6)


def test_a_window_scorer_folder_stays_a_cross_encoder(window_model, tmp_path):
    from sentence_transformers import CrossEncoder

    window_model.save_pretrained(tmp_path / "maxp")
    assert not (tmp_path / "maxp" / "modules.json").exists()
    assert CrossEncoder(str(tmp_path / "maxp")).predict(PAIRS).shape == (2,)


# --- trust_remote_code on a saved folder reads the code in the folder ---

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


def test_a_remote_code_encoder_of_its_own_model_type_reloads(tmp_path):
    """A custom architecture (transformers' custom-model recipe: its own config class and
    ``model_type``, found through ``auto_map``) saves and loads again with trust_remote_code,
    and without it is refused rather than run."""
    base = write_tiny_bert(tmp_path / "base")
    (base / "custom.py").write_text(
        "from transformers import BertConfig, BertForSequenceClassification, BertModel\n\n\n"
        "class TinyCustomConfig(BertConfig):\n    model_type = 'tiny-custom-bert'\n\n\n"
        "class TinyCustomModel(BertModel):\n    config_class = TinyCustomConfig\n\n\n"
        "class TinyCustomForSequenceClassification(BertForSequenceClassification):\n"
        "    config_class = TinyCustomConfig\n")
    config = json.loads((base / "config.json").read_text())
    config["model_type"] = "tiny-custom-bert"
    config["auto_map"] = {"AutoConfig": "custom.TinyCustomConfig", "AutoModel": "custom.TinyCustomModel",
                          "AutoModelForSequenceClassification": "custom.TinyCustomForSequenceClassification"}
    (base / "config.json").write_text(json.dumps(config))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = pl.MaxP(str(base), trust_remote_code=True, seed=0, window=12, stride=6, max_length=48,
                        max_query_tokens=8)
    assert type(model.model.encoder).__module__.startswith("transformers_modules.")
    model.save_pretrained(tmp_path / "saved")
    again = pl.LongDocReranker.from_pretrained(str(tmp_path / "saved"), trust_remote_code=True)
    assert type(again.model.encoder).__name__ == type(model.model.encoder).__name__
    np.testing.assert_allclose(again.predict(PAIRS), model.predict(PAIRS), atol=1e-6)
    with pytest.raises(ValueError, match="trust_remote_code"):  # never runs the folder's code unasked
        pl.LongDocReranker.from_pretrained(str(tmp_path / "saved"))

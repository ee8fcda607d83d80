"""PARADE-CNN and PARADE-Transformer (random, pretrained, -Q) on tiny offline backbones."""
import json
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModel

from pyterrier_longdoc.aggregators.parade import (ParadeCNN, ParadeTransformer, ParadeTransformerPretrained,
                                                  ParadeTransformerQ)
from zoo_backbones import assert_padding_invariant, margin_training, tiny_backbone_for

MODELS = [ParadeCNN, ParadeTransformer, ParadeTransformerPretrained, ParadeTransformerQ]


@pytest.fixture(scope="module", params=MODELS, ids=lambda cls: cls.name)
def model(request, tmp_path_factory):
    path, settings = tiny_backbone_for(request.param.name, tmp_path_factory.mktemp(request.param.name))
    return request.param.from_pretrained(path, **settings)


def test_padding_never_changes_a_score(model):
    assert_padding_invariant(model)


def test_training_lowers_the_loss(model):
    before, after = margin_training(model)
    assert after < before


def test_zero_layers_reduce_to_a_linear_head_on_the_prepended_vector(tiny_bert):
    model = ParadeTransformer.from_pretrained(tiny_bert, layers=0, window=12, stride=6)
    aggregator = model.model.aggregator
    scores = model.score_texts(["castle river", "red"], ["the castle river " * 8, "dog"])
    expected = float(aggregator.head(aggregator.cls_vector).detach())
    np.testing.assert_allclose(scores, [expected, expected], rtol=1e-6)
    # C starts as the backbone's [CLS] word embedding, as in the paper
    cls_id = model.model.tokenizer.cls_token_id
    assert torch.equal(aggregator.cls_vector.detach(), model.model.encoder.get_input_embeddings().weight[cls_id])


def test_zero_pretrained_layers_reduce_to_a_linear_head_on_the_embedded_vector(tmp_path):
    path, settings = tiny_backbone_for("parade_transformer_pretr", tmp_path)
    model = ParadeTransformerPretrained.from_pretrained(path, **{**settings, "layers": 0})
    aggregator = model.model.aggregator
    embedded = aggregator.encoder.embeddings(inputs_embeds=aggregator.cls_vector.view(1, 1, -1))[0, 0]
    model.model.eval()
    np.testing.assert_allclose(model.score_texts(["castle"], ["red dog"]), [float(aggregator.head(embedded))], rtol=1e-5)


def test_pretrained_aggregator_loads_without_its_source(tmp_path):
    path, settings = tiny_backbone_for("parade_transformer_q", tmp_path)
    model = ParadeTransformerQ.from_pretrained(path, **{**settings, "layers": 1})
    aggregator = model.model.aggregator
    assert aggregator.encoder.config.num_hidden_layers == 1 and aggregator.encoder.config.hidden_size == 48
    assert not any("word_embeddings" in name for name in aggregator.state_dict())
    source = AutoModel.from_pretrained(settings["aggregator_model"])  # its first layer was taken
    assert torch.equal(aggregator.encoder.encoder.layer[0].output.dense.weight, source.encoder.layer[0].output.dense.weight)
    queries, texts = ["castle river", "red"], ["the castle river " * 8, "dog"]
    scores = model.score_texts(queries, texts)
    model.save_pretrained(tmp_path / "saved")
    shutil.rmtree(settings["aggregator_model"])  # the source is gone: loading must not need it
    saved = json.loads((tmp_path / "saved" / "config.json").read_text())["settings"]
    assert saved["aggregator_config"]["hidden_size"] == 48 and saved["query_tokens"] is True
    loaded = ParadeTransformerQ.from_pretrained(tmp_path / "saved")
    np.testing.assert_allclose(loaded.score_texts(queries, texts), scores, rtol=1e-5, atol=1e-6)


def test_pretrained_needs_an_aggregator_model(tiny_bert):
    with pytest.raises(ValueError, match="aggregator_model"):
        ParadeTransformer.from_pretrained(tiny_bert, init="pretrained")

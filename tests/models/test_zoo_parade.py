"""PARADE-Transformer (random, pretrained, -Q): equivalences and checkpoints (training: test_zoo_training)."""
import json
import shutil

import numpy as np
import pytest
import torch
from transformers import AutoModel
from helpers.zoo_backbones import tiny_backbone_for

from pyterrier_longdoc.models.parade import ParadeTransformer, ParadeTransformerPretrained, ParadeTransformerQ

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


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
    model.model.eval()
    with torch.no_grad():
        embedded = aggregator.encoder.embeddings(inputs_embeds=aggregator.cls_vector.view(1, 1, -1))[0, 0]
        expected = float(aggregator.head(embedded))
    np.testing.assert_allclose(model.score_texts(["castle"], ["red dog"]), [expected], rtol=1e-5)


def test_pretrained_aggregator_loads_without_its_source(tmp_path):
    path, settings = tiny_backbone_for("parade_transformer_q", tmp_path)
    model = ParadeTransformerQ.from_pretrained(path, **{**settings, "layers": 1})
    aggregator = model.model.aggregator
    assert aggregator.encoder.config.num_hidden_layers == 1 and aggregator.encoder.config.hidden_size == 48
    assert not any("word_embeddings" in name for name in aggregator.state_dict())
    source = AutoModel.from_pretrained(settings["aggregator_model"])  # its first layer was taken
    taken, original = aggregator.encoder.encoder.layer[0], source.encoder.layer[0]
    assert torch.equal(taken.output.dense.weight, original.output.dense.weight)
    queries, texts = ["castle river", "red"], ["the castle river " * 8, "dog"]
    scores = model.score_texts(queries, texts)
    model.save_pretrained(tmp_path / "saved")
    shutil.rmtree(settings["aggregator_model"])  # the source is gone: loading must not need it
    saved = json.loads((tmp_path / "saved" / "config.json").read_text())["pyterrier_longdoc"]["settings"]
    assert saved["aggregator_config"]["hidden_size"] == 48 and saved["query_tokens"] is True
    loaded = ParadeTransformerQ.from_pretrained(tmp_path / "saved")
    np.testing.assert_allclose(loaded.score_texts(queries, texts), scores, rtol=1e-5, atol=1e-6)


def test_pretrained_needs_an_aggregator_model(tiny_bert):
    with pytest.raises(ValueError, match="aggregator_model"):
        ParadeTransformer.from_pretrained(tiny_bert, init="pretrained")


def test_pretrained_aggregator_gives_the_chunk_vectors_token_type_1(tmp_path):
    # as the reference code (parade_transf.py): C and the query tokens type 0, the chunk vectors type 1
    path, settings = tiny_backbone_for("parade_transformer_q", tmp_path)
    model = ParadeTransformerQ.from_pretrained(path, **{**settings, "layers": 1})
    calls = []
    hook = model.model.aggregator.encoder.register_forward_pre_hook(
        lambda module, args, kwargs: calls.append(kwargs), with_kwargs=True)
    try:
        model.score_texts(["castle river"], ["the castle river " * 8])
    finally:
        hook.remove()
    types, mask = calls[0]["token_type_ids"][0], calls[0]["attention_mask"][0].bool()
    n_query = 2  # "castle river": one vector per query token of the first chunk
    n_chunks = len(model.chunk_spans("the castle river " * 8))
    assert types[mask].tolist() == [0] * (1 + n_query) + [1] * n_chunks

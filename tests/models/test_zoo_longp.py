"""LongP on tiny random Longformer and BigBird encoders built here, offline (Longformer training and
padding: test_zoo_training)."""
import numpy as np
import pytest
import torch
from helpers.tiny_bert import write_tiny_bert
from helpers.zoo_backbones import margin_training, tiny_backbone_for

from pyterrier_longdoc import LongP
from pyterrier_longdoc.aggregators.longp import LongPAggregator

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


def write_tiny_bigbird(path):
    """The tiny BERT's tokenizer with a 2-layer block-sparse BigBird in place of its encoder."""
    from transformers import BigBirdConfig, BigBirdModel

    write_tiny_bert(path)
    torch.manual_seed(0)
    config = BigBirdConfig(vocab_size=len((path / "vocab.txt").read_text().split()), hidden_size=32,
                           num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                           max_position_embeddings=512, attention_type="block_sparse", block_size=4,
                           num_random_blocks=2, pad_token_id=0, hidden_dropout_prob=0.0,
                           attention_probs_dropout_prob=0.0)
    BigBirdModel(config).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def longformer(tmp_path_factory):
    path, settings = tiny_backbone_for("longp", tmp_path_factory.mktemp("longformer"))
    return LongP.from_pretrained(path, **settings)


@pytest.fixture(scope="module")
def bigbird(tmp_path_factory):
    return LongP.from_pretrained(str(write_tiny_bigbird(tmp_path_factory.mktemp("bigbird"))), max_doc_tokens=96)


def captured_encoder_calls(model, queries, texts) -> list[dict]:
    calls = []
    hook = model.model.encoder.register_forward_pre_hook(lambda m, args, kwargs: calls.append(kwargs), with_kwargs=True)
    try:
        model.score_texts(queries, texts)
    finally:
        hook.remove()
    return calls


def test_global_attention_covers_exactly_cls_and_the_query(longformer):
    tokenizer = longformer.model.tokenizer
    queries, texts = ["castle river", "red"], ["the castle by the river " * 4, "a dog"]
    calls = captured_encoder_calls(longformer, queries, texts)
    assert len(calls) == 1
    ids, globally = calls[0]["input_ids"], calls[0]["global_attention_mask"]
    seen = set()
    for row_ids, row_global in zip(ids, globally):
        tokens = row_ids[row_global.bool()].tolist()
        assert tokens[0] == tokenizer.cls_token_id
        seen.add(tokenizer.decode(tokens[1:]).strip())
    assert seen == set(queries)


def test_encoders_without_global_attention_get_none(bigbird):
    assert "global_attention_mask" not in captured_encoder_calls(bigbird, ["castle"], ["red dog"])[0]


def test_the_budget_follows_the_encoder_and_max_doc_tokens(longformer, bigbird):
    # Longformer: 258 positions less RoBERTa's offset of padding index + 1
    assert longformer.model.chunking.max_length == 256 and bigbird.model.chunking.max_length == 512
    layout = longformer.model.layout
    assert longformer.model.chunking.tokens_read(layout) == 96
    short = LongP.from_pretrained(longformer.config.base_model, max_length=64)
    assert short.model.chunking.tokens_read(short.model.layout) == 64 - 32 - layout.n_special


def test_bigbird_training_lowers_the_loss(bigbird):
    before, after = margin_training(bigbird)
    assert after < before


def test_bigbird_stays_block_sparse_after_a_short_batch(bigbird):
    long = bigbird.score_texts(["castle river"], ["the castle by the river " * 10])
    bigbird.score_texts(["castle"], ["red"])  # too short for block-sparse attention
    assert bigbird.model.encoder.attention_type == "original_full"
    np.testing.assert_allclose(bigbird.score_texts(["castle river"], ["the castle by the river " * 10]), long)
    assert bigbird.model.encoder.attention_type == "block_sparse"


def test_bigbird_round_trip(bigbird, tmp_path):
    scores = bigbird.score_texts(["castle river"], ["the castle by the river " * 10])
    bigbird.save_pretrained(tmp_path / "saved")
    np.testing.assert_allclose(LongP.from_pretrained(tmp_path / "saved").score_texts(
        ["castle river"], ["the castle by the river " * 10]), scores, rtol=1e-5)


def test_pooling_cls_mean_or_the_encoders_own(tiny_bert):
    from transformers import BertModel, ModernBertConfig, ModernBertModel

    modernbert = ModernBertModel(ModernBertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        pad_token_id=0, bos_token_id=2, eos_token_id=3, cls_token_id=2, sep_token_id=3, classifier_pooling="mean"))
    aggregator = LongPAggregator(32)
    aggregator.attach(modernbert, None, None)
    assert aggregator.pooling == "mean" and not aggregator.global_attention
    aggregator = LongPAggregator(32)
    aggregator.attach(BertModel.from_pretrained(tiny_bert), None, None)
    assert aggregator.pooling == "cls"
    with pytest.raises(ValueError, match="pooling"):
        LongPAggregator(32, pooling="max")
    mean = LongP.from_pretrained(tiny_bert, pooling="mean")
    calls = []
    mean.model.encoder.register_forward_hook(lambda m, args, kwargs, out: calls.append((kwargs, out)), with_kwargs=True)
    score = mean.score_texts(["castle"], ["red dog"])
    kwargs, out = calls[0]
    with torch.no_grad():
        expected = mean.model.aggregator.head(out.last_hidden_state[0].mean(0))
    np.testing.assert_allclose(score, [float(expected)], rtol=1e-5)

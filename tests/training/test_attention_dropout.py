"""Attention dropout while training (``attention_dropout``): the rate is what training runs with,
the model is as it was afterwards, and an unknown architecture or a bad rate is a clear error."""
import pytest
import torch
from helpers.cross_encoders import ARCHITECTURES, write_cross_encoder
from helpers.toy_training import FAST, new_model, toy_task
from helpers.llm_backbones import write_tiny_lm

import pyterrier_longdoc as pl
from pyterrier_longdoc.engine.backbone import training_attention_dropout
from pyterrier_longdoc.training import TrainingArguments, train_passage_ranker

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


def attention_rates(model: torch.nn.Module) -> set[float]:
    """Every attention-probability dropout rate of ``model``, as its attention layers read it."""
    rates = {m.dropout.p for m in model.modules() if type(m).__name__.endswith("SelfAttention")}
    return rates | {m.attention_dropout for m in model.modules() if isinstance(getattr(m, "attention_dropout", None), float)}


def recorded_rates(model: torch.nn.Module) -> list[tuple[bool, set[float]]]:
    """A list that a hook fills with (training mode, attention rates) at every call of ``model``."""
    seen = []
    model.register_forward_pre_hook(lambda module, args: seen.append((module.training, attention_rates(module))))
    return seen


@pytest.mark.parametrize("family", ARCHITECTURES + ("llama", "qwen2"))
def test_the_rate_holds_inside_the_block_and_the_model_is_restored_after(family, tmp_path):
    from transformers import AutoModelForSequenceClassification

    folder = (write_tiny_lm(tmp_path / family, family) if family in ("llama", "qwen2")
              else write_cross_encoder(tmp_path / family, family))
    config_rate = 0.1 if family not in ("llama", "qwen2", "modernbert") else 0.0
    model = AutoModelForSequenceClassification.from_pretrained(folder, attention_dropout=0.25) \
        if family in ("llama", "qwen2", "modernbert") else AutoModelForSequenceClassification.from_pretrained(folder)
    before = attention_rates(model)
    assert before == ({0.25} if config_rate == 0.0 else {0.1})
    with training_attention_dropout(model, 0.0):
        assert attention_rates(model) == {0.0}
    assert attention_rates(model) == before
    with training_attention_dropout(model, None):  # None: the model's own
        assert attention_rates(model) == before
    with pytest.raises(RuntimeError), training_attention_dropout(model, 0.05):
        raise RuntimeError("a failing training run")
    assert attention_rates(model) == before  # restored on the way out of a failure too


def test_a_model_without_a_known_attention_dropout_is_a_clear_error():
    with pytest.raises(ValueError, match="Linear has no attention dropout"):
        with training_attention_dropout(torch.nn.Linear(2, 2), 0.0):
            pass


@pytest.mark.parametrize("bad", [1.0, -0.1, True, "0", float("nan")])
def test_a_rate_outside_0_1_is_refused_before_training(bad):
    with pytest.raises(ValueError, match=r"attention_dropout must be a rate in \[0, 1\) or None"):
        TrainingArguments(attention_dropout=bad)


def test_fit_trains_with_the_rate_and_leaves_the_models_own(tiny_bert):
    topics, qrels, candidates = toy_task(n_queries=4)
    model = new_model(tiny_bert, pl.MaxP)
    own = attention_rates(model.model)
    assert own == {0.0}  # write_tiny_bert's: so that 0.3 below is visibly training's rate
    seen = recorded_rates(model.model.encoder)
    model.fit(topics, qrels, candidates, **FAST, attention_dropout=0.3)
    assert {frozenset(rates) for training, rates in seen if training} == {frozenset({0.3})}
    assert attention_rates(model.model) == own  # as it was after training


def test_resuming_with_another_rate_is_refused(tiny_bert, tmp_path):
    topics, qrels, candidates = toy_task(n_queries=2)
    new_model(tiny_bert).fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **FAST, attention_dropout=0.0)
    with pytest.raises(ValueError, match="attention_dropout"):
        new_model(tiny_bert).fit(topics, qrels, candidates, checkpoint_dir=tmp_path, **FAST)


def test_the_passage_stage_trains_with_the_rate_and_saves_the_backbones_config(tiny_bert, tmp_path):
    import json

    from sentence_transformers.cross_encoder import CrossEncoderTrainer

    triples = [("cat", "the cat sat", "a dog ran"), ("bird", "a bird sang", "the fish swam")] * 4
    seen = []
    original = CrossEncoderTrainer.training_step

    def recording_step(self, model, *args, **kwargs):
        seen.append(attention_rates(model))
        return original(self, model, *args, **kwargs)

    CrossEncoderTrainer.training_step = recording_step
    try:
        folder = train_passage_ranker(tiny_bert, triples, tmp_path / "ranker", steps=2, triples_per_step=4, dtype="fp32",
                                      attention_dropout=0.3)
    finally:
        CrossEncoderTrainer.training_step = original
    assert seen and all(rates == {0.3} for rates in seen)
    # the backbone's own rate (write_tiny_bert's 0.0) is what the saved model carries
    assert json.loads((tmp_path / "ranker" / "config.json").read_text())["attention_probs_dropout_prob"] == 0.0
    assert folder == str(tmp_path / "ranker")
    with pytest.raises(ValueError, match="attention_dropout must be a rate"):
        train_passage_ranker(tiny_bert, triples, tmp_path / "bad", steps=1, attention_dropout=2)

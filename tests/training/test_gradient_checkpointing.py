"""``gradient_checkpointing``: every encoder-based model recomputes its encoder's activations in the
backward pass when asked (the LLM models by default), which changes memory, not the gradients."""
import pytest
import torch

import pyterrier_longdoc as pl

pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

QUERIES = ["red cat", "blue river castle", "red cat", "blue river castle"]
TEXTS = ["the cat sat on the red mat " * 6, "blue river " * 20, "castle door window " * 9, "the a of " * 12]


def checkpointing(encoder) -> bool:
    if hasattr(type(encoder), "is_activation_checkpointing"):  # transformers >= 5.x
        return encoder.is_activation_checkpointing
    return encoder.is_gradient_checkpointing


@pytest.mark.parametrize("cls", [pl.MaxP, pl.ParadeAttn, pl.FirstP, pl.BiEncoderMaxP])
def test_checkpointing_is_off_by_default_and_saved_with_the_model(cls, tiny_bert, tmp_path):
    assert cls.Settings().gradient_checkpointing is False
    assert not checkpointing(cls(tiny_bert, seed=0).model.encoder)
    model = cls(tiny_bert, seed=0, gradient_checkpointing=True)
    assert checkpointing(model.model.encoder) and model.settings["gradient_checkpointing"] is True
    assert "gradient_checkpointing=True" in repr(model)
    model.save_pretrained(tmp_path / "saved")
    loaded = pl.LongDocReranker.from_pretrained(tmp_path / "saved")
    assert loaded.settings["gradient_checkpointing"] is True and checkpointing(loaded.model.encoder)
    assert not checkpointing(cls(tmp_path / "saved", gradient_checkpointing=False).model.encoder)


def test_a_bad_value_is_refused(tiny_bert):
    with pytest.raises(ValueError, match="gradient_checkpointing must be True or False"):
        pl.MaxP(tiny_bert, gradient_checkpointing="yes")


@pytest.mark.parametrize("cls", [pl.MaxP, pl.ParadeAttn])
def test_checkpointing_gives_the_same_loss_and_gradients(cls, tiny_bert):
    settings = dict(seed=0, window=12, stride=6, max_length=48, max_query_tokens=8, max_doc_tokens=64)
    plain, checkpointed = cls(tiny_bert, **settings), cls(tiny_bert, gradient_checkpointing=True, **settings)
    checkpointed.model.load_state_dict(plain.model.state_dict())
    results = []
    for model in (plain, checkpointed):
        model.model.train()
        torch.manual_seed(1)  # the same dropout draws on both sides (checkpointing replays them)
        loss = torch.relu(1 - model.score_batch(QUERIES, TEXTS).scores.view(2, 2).diff(dim=0)).sum()
        loss.backward()
        results.append((loss.item(), {n: p.grad.clone() for n, p in model.model.named_parameters()
                                      if p.grad is not None}))
    (loss_plain, grads_plain), (loss_checkpointed, grads_checkpointed) = results
    assert loss_checkpointed == pytest.approx(loss_plain, abs=1e-5)
    assert grads_plain.keys() == grads_checkpointed.keys() and any(n.startswith("encoder.") for n in grads_plain)
    for name, grad in grads_plain.items():
        torch.testing.assert_close(grads_checkpointed[name], grad, rtol=1e-5, atol=1e-5, msg=name)

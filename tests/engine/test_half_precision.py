"""Weights held in half precision, as a GPU holds them (bf16 or fp16 autocast): the embedding
tables and LayerNorms stay in fp32, so that a BERT's word, position and type vectors are not summed
in bf16. Runs on the CPU, holding the weights in bf16 as ``Runtime.weights_dtype`` does on a GPU
(``tests/engine/test_cuda.py`` checks the same agreement on one)."""
import numpy as np
import pytest
import torch
from helpers.contract import frame, small_model

from pyterrier_longdoc.engine.runtime import Runtime, hold_parameters

pytestmark = [pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning"),
              pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning"),
              pytest.mark.filterwarnings("ignore:this CPU has no native bf16")]  # CPUs without AMX emulate it


@pytest.mark.parametrize("name", ["maxp", "parade_attn"])
def test_bf16_weights_keep_the_embeddings_in_fp32_and_score_as_fp32_does(name, tiny_bert, tmp_path, monkeypatch):
    torch.manual_seed(0)
    fp32 = small_model(name, tiny_bert, tmp_path, device="cpu", dtype="fp32")
    half = small_model(name, tiny_bert, tmp_path, device="cpu", dtype="bf16")
    half.model.load_state_dict(fp32.model.state_dict())
    inp = frame()
    reference = fp32(inp)["score"].to_numpy()
    monkeypatch.setattr(Runtime, "weights_dtype", lambda self, device=None: torch.bfloat16)  # as on a GPU
    scores = half(inp)["score"].to_numpy()
    embeddings = half.model.encoder.embeddings
    assert embeddings.word_embeddings.weight.dtype == torch.float32 == embeddings.LayerNorm.weight.dtype
    assert half.model.encoder.encoder.layer[0].attention.self.query.weight.dtype == torch.bfloat16
    # bf16 keeps 8 bits of mantissa: about 1% of the scores' scale, summed over a few layers (test_cuda's
    # tolerance); with the embeddings summed in bf16 the difference was 0.28 against a bound of 0.11
    assert np.abs(scores - reference).max() <= 0.05 * np.abs(reference).max() + 1e-2


def test_only_half_precision_keeps_embeddings_apart():
    model = torch.nn.Sequential(torch.nn.Embedding(10, 4), torch.nn.LayerNorm(4), torch.nn.Linear(4, 4))
    hold_parameters(model, torch.bfloat16, fp32_embeddings=True)
    assert [p.dtype for p in model.parameters()] == [torch.float32] * 3 + [torch.bfloat16] * 2
    hold_parameters(model, torch.bfloat16)  # the LLM models: everything in the weights' dtype
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    hold_parameters(model, torch.float32, fp32_embeddings=True)
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_the_llm_models_hold_their_embeddings_in_the_weights_dtype():
    import pyterrier_longdoc as pl

    assert pl.LLMMaxP.fp32_embeddings is False and pl.MaxP.fp32_embeddings is True

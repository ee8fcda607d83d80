"""The library on a CUDA GPU: every model scores there as on the CPU (in fp32), defaults to bf16
there, saves there and loads on the CPU, and trains there (the document stage, LoRA adapters and
the passage stage).

The rest of the suite checks CPU fp32 reference values and hides GPUs (tests/conftest.py); these
tests run where one is shown: ``LONGDOC_TESTS_ON_CUDA=1 pytest tests/engine/test_cuda.py``.
"""
import numpy as np
import pytest
import torch
from helpers.contract import frame, small_model
from helpers.passage_task import pairwise_accuracy, toy_triples

import pyterrier_longdoc as pl

MODELS = sorted(pl.registered_models())
# expected here, not what these tests are about: models built over a plain encoder (the tiny random BERT)
# get a new head, and documents longer than the tiny settings read are cropped
pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not torch.cuda.is_available(),
                                 reason="needs a CUDA GPU, shown to the tests by LONGDOC_TESTS_ON_CUDA=1"),
              pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning"),
              pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")]
# a few models of each family for the slower checks
FAMILIES = ("firstp", "maxp", "parade_attn", "cedr_knrm", "neural_model1", "biencoder_maxp", "llm_maxp")


def pair(name, tiny_bert, tmp_path, **gpu_runtime):
    """The same model on the CPU (fp32) and on the GPU, with the CPU one's weights."""
    torch.manual_seed(0)
    cpu = small_model(name, tiny_bert, tmp_path, device="cpu", dtype="fp32")
    gpu = small_model(name, tiny_bert, tmp_path, device="cuda", **gpu_runtime)
    gpu.model.load_state_dict(cpu.model.state_dict())
    return cpu, gpu


@pytest.mark.parametrize("name", MODELS)
def test_every_model_scores_on_the_gpu_as_on_the_cpu(name, tiny_bert, tmp_path):
    cpu, gpu = pair(name, tiny_bert, tmp_path, dtype="fp32")
    inp = frame()
    assert next(gpu.model.parameters()).device.type == "cuda"
    np.testing.assert_allclose(gpu(inp)["score"], cpu(inp)["score"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", FAMILIES)
def test_the_gpu_default_is_bf16_and_scores_as_fp32_does_within_its_rounding(name, tiny_bert, tmp_path):
    cpu, gpu = pair(name, tiny_bert, tmp_path)
    assert gpu.runtime.dtype_name() in ("bf16", "fp16")
    inp = frame()
    reference, scores = cpu(inp)["score"].to_numpy(), gpu(inp)["score"].to_numpy()
    assert np.isfinite(scores).all()
    # bf16 keeps 8 bits of mantissa: about 1% of the scores' scale, summed over a few layers
    assert np.abs(scores - reference).max() <= 0.05 * np.abs(reference).max() + 1e-2


@pytest.mark.parametrize("dtype,held", [("bf16", torch.bfloat16), ("fp16", torch.float16), ("fp32", torch.float32)])
def test_half_precision_holds_the_weights_in_it_and_fit_trains_fp32_masters(dtype, held, tiny_bert, tmp_path):
    _, gpu = pair("llm_maxp", tiny_bert, tmp_path, dtype=dtype)
    frozen = [p for p in gpu.model.parameters() if not p.requires_grad]
    assert frozen and {p.dtype for p in gpu.model.parameters()} == {held}  # the LM's weights and its adapters
    inp = frame()
    assert np.isfinite(gpu(inp)["score"]).all()
    topics = inp[["qid", "query"]].drop_duplicates()
    qrels = inp.assign(label=(inp["docno"] == "d2").astype(int))[["qid", "docno", "label"]]
    gpu.fit(topics, qrels, inp.assign(rank=inp.groupby("qid").cumcount()), epochs=1, queries_per_step=2,
            negatives=1, warmup=0.0)
    assert {p.dtype for p in gpu.model.parameters() if p.requires_grad} == {torch.float32}
    assert {p.dtype for p in frozen} == {held}  # what fit does not train stays in half precision


@pytest.mark.parametrize("name", FAMILIES)
def test_a_model_saved_on_the_gpu_loads_on_the_cpu_with_its_scores(name, tiny_bert, tmp_path):
    _, gpu = pair(name, tiny_bert, tmp_path, dtype="fp32")
    inp = frame()
    gpu.save_pretrained(tmp_path / "saved")
    loaded = pl.LongDocReranker.from_pretrained(tmp_path / "saved", device="cpu", dtype="fp32")
    np.testing.assert_allclose(loaded(inp)["score"], gpu(inp)["score"], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", ["fp32", None])
@pytest.mark.parametrize("name", FAMILIES)
def test_fit_trains_on_the_gpu(name, dtype, tiny_bert, tmp_path):
    """One step in fp32 and in the GPU's default (bf16 autocast): a finite loss, changed weights
    (LoRA adapters and the head for the LLM), still on the GPU."""
    _, model = pair(name, tiny_bert, tmp_path, dtype=dtype)
    inp = frame()
    topics = inp[["qid", "query"]].drop_duplicates()
    qrels = inp.assign(label=(inp["docno"] == "d2").astype(int))[["qid", "docno", "label"]]
    before = {n: p.detach().clone() for n, p in model.model.named_parameters() if p.requires_grad}
    history = model.fit(topics, qrels, inp.assign(rank=inp.groupby("qid").cumcount()), epochs=1,
                        queries_per_step=2, negatives=1, lr=1e-3, head_lr=1e-2, warmup=0.0)
    assert len(history) == 1 and np.isfinite(history["loss"]).all(), history
    after = dict(model.model.named_parameters())
    assert all(after[n].device.type == "cuda" for n in before)
    assert any(not torch.equal(value, after[n].detach()) for n, value in before.items())


def test_the_passage_stage_trains_on_the_gpu(tiny_bert, tmp_path):
    from sentence_transformers import CrossEncoder

    from pyterrier_longdoc.training import train_passage_ranker

    path = train_passage_ranker(tiny_bert, toy_triples(160, seed=0), tmp_path / "ranker", epochs=4,
                                            lr=1e-2, batch_size=16, seed=0, device="cuda")
    assert pairwise_accuracy(CrossEncoder(path, device="cuda"), toy_triples(64, seed=1)) >= 0.95


def test_batches_reach_the_gpu_by_asynchronous_copies_of_the_same_values():
    """ChunkBatch.to copies from page-locked memory without blocking; the values arrive unchanged,
    and the next copy into a reused pinned block does not overwrite one still in flight."""
    from pyterrier_longdoc.engine.batching import ChunkPlan, build_batch
    from pyterrier_longdoc.engine.chunking import Chunking, SpecialLayout

    layout = SpecialLayout((2,), (3,), (3,), 0, 1)
    rng = np.random.default_rng(0)
    docs = [rng.integers(10, 999, size=n) for n in rng.integers(50, 400, size=40)]
    queries = [rng.integers(10, 999, size=4)] * len(docs)
    plan = ChunkPlan.build(queries, docs, Chunking(window=40, stride=20, max_doc_tokens=400), layout)
    batches = [build_batch(plan, np.arange(start, min(start + 64, len(plan))), queries, docs, layout, 0)
               for start in range(0, len(plan), 64)]
    on_gpu = [batch.to("cuda") for batch in batches]
    torch.cuda.synchronize()
    for batch, moved in zip(batches, on_gpu):
        for name in ("input_ids", "attention_mask", "token_type_ids", "query_mask", "doc_mask"):
            assert getattr(moved, name).device.type == "cuda"
            assert torch.equal(getattr(moved, name).cpu(), getattr(batch, name)), name

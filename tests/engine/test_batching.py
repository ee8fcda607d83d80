"""The out-of-memory back-off of batching: an allocation failure halves the batch, the size that
worked holds for the rest of the call, and a new call starts again from the full batch."""
import numpy as np
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc.engine.batching import ChunkPlan, build_batch, is_out_of_memory, run_with_backoff
from pyterrier_longdoc.engine.chunking import Chunking, SpecialLayout

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


def test_out_of_memory_back_off_keeps_the_size_that_worked(tiny_bert):
    torch.manual_seed(0)
    model = pl.MaxP(tiny_bert, window=6, stride=3, batch_size=16)
    texts = ["the red cat sat on a mat " * 3] * 64  # 64 documents of 3 chunks: 12 batches of 16
    expected = model.score_texts(["red cat"] * 64, texts)
    n_chunks = 64 * len(model.chunk_spans(texts[0]))
    encode = model.model.encode
    sizes, failures = [], []

    def small_memory(batch):
        if len(batch) > 4:
            failures.append(len(batch))
            raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] . DefaultCPUAllocator: can't allocate memory: "
                               "you tried to allocate 123456789 bytes.")
        sizes.append(len(batch))
        return encode(batch)

    model.model.encode = small_memory
    np.testing.assert_allclose(model.score_texts(["red cat"] * 64, texts), expected, atol=1e-5)
    assert failures == [16, 8]  # learned once: every later batch runs at 4
    assert set(sizes) == {4} and sum(sizes) == n_chunks


def test_cpu_allocation_failure_counts_as_out_of_memory():
    assert is_out_of_memory(RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 8 bytes"))
    assert is_out_of_memory(torch.OutOfMemoryError("CUDA out of memory"))
    assert not is_out_of_memory(RuntimeError("shape mismatch"))
    assert not is_out_of_memory(ValueError("DefaultCPUAllocator: can't allocate memory"))


def test_a_new_call_starts_again_from_the_full_batch():
    bert = SpecialLayout((101,), (102,), (102,), 0, 1)
    queries, docs = [np.array([1])] * 8, [np.array([2, 3])] * 8
    plan = ChunkPlan.build(queries, docs, Chunking(window=4), bert)
    batch = build_batch(plan, np.arange(8), queries, docs, bert, 0)
    tried = []

    def make_run(budget):
        def run(b):
            tried.append(len(b))
            if len(b) > budget:
                raise torch.OutOfMemoryError("CUDA out of memory")
            return torch.zeros(len(b))
        return run

    run = make_run(2)
    run_with_backoff(batch, run)
    run_with_backoff(batch, run)
    assert tried == [8, 4, 2, 2, 2, 2] + [2, 2, 2, 2]
    tried.clear()
    run_with_backoff(batch, make_run(8))  # another call: another callable, nothing remembered
    assert tried == [8]


def test_a_lower_size_learned_midway_holds_for_the_rest_of_the_batch():
    bert = SpecialLayout((101,), (102,), (102,), 0, 1)
    queries, docs = [np.array([1])] * 32, [np.array([2, 3])] * 32
    plan = ChunkPlan.build(queries, docs, Chunking(window=4), bert)
    batch = build_batch(plan, np.arange(32), queries, docs, bert, 0)
    tried, done, budget = [], [], [4]

    def run(b):  # memory shrinks after the fourth successful call (another process took some)
        tried.append(len(b))
        if len(b) > budget[0]:
            raise torch.OutOfMemoryError("CUDA out of memory")
        done.append(len(b))
        if len(done) == 4:
            budget[0] = 2
        return torch.zeros(len(b))

    pieces = run_with_backoff(batch, run)
    assert sorted(np.concatenate([index for index, _ in pieces]).tolist()) == list(range(32))
    # one failure at 4 after memory shrank, then 2 for every remaining sequence
    assert tried == [32, 16, 8, 4, 4, 4, 4, 4] + [2] * 8

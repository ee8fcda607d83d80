"""Chunking, batching and the equivalences the engine must keep (MaxP over one chunk is FirstP,
PARADE-Max over one chunk is its head on that chunk, MaxP is the max over windows scored alone)."""
import numpy as np
import pandas as pd
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc.engine.batching import ChunkPlan, build_batch, length_sorted_batches, run_with_backoff
from pyterrier_longdoc.engine.chunking import Chunking, SpecialLayout

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

BERT = SpecialLayout(prefix=(2,), middle=(3,), suffix=(3,), query_type=0, doc_type=1)


def test_special_layout_found_from_the_tokenizer(tiny_bert):
    from transformers import AutoTokenizer

    assert SpecialLayout.from_tokenizer(AutoTokenizer.from_pretrained(tiny_bert)) == BERT


@pytest.mark.parametrize("n_tokens, spans", [
    (0, [(0, 0)]),
    (10, [(0, 10)]),
    (150, [(0, 150)]),
    (151, [(0, 150), (100, 151)]),
    (350, [(0, 150), (100, 250), (200, 350)]),
    (351, [(0, 150), (100, 250), (200, 350), (300, 351)]),
])
def test_sliding_windows_cover_every_token_once_started(n_tokens, spans):
    assert Chunking(window=150, stride=100).spans(n_tokens, BERT) == spans


def test_disjoint_chunks_are_split_evenly_as_in_the_reference_code():
    chunking = Chunking()  # window None: 512 - 32 query tokens - 3 special tokens
    assert chunking.doc_window(BERT) == 477
    assert chunking.spans(1000, BERT) == [(0, 334), (334, 668), (668, 1000)]
    assert chunking.spans(400, BERT) == [(0, 400)]
    # CEDR's defaults: 20 query tokens, 800 document tokens in 489-token windows
    assert Chunking(max_query_tokens=20, max_doc_tokens=800).spans(800, BERT) == [(0, 400), (400, 800)]
    assert Chunking(disjoint_split="fill").spans(1000, BERT) == [(0, 477), (477, 954), (954, 1000)]


def test_chunk_cap_keeps_first_or_first_last_and_evenly_spaced():
    spans = Chunking(window=10, stride=10, max_doc_tokens=1000).spans(100, BERT)
    assert len(spans) == 10
    assert Chunking(window=10, stride=10, max_chunks=3).spans(100, BERT) == spans[:3]
    even = Chunking(window=10, stride=10, max_chunks=4, chunk_selection="first_last_even").spans(100, BERT)
    assert even == [spans[0], spans[3], spans[6], spans[9]]


def test_tokens_read_follows_the_first_chunks_cap():
    assert Chunking(max_chunks=1).tokens_read(BERT) == 477
    assert Chunking(window=150, stride=100, max_chunks=2).tokens_read(BERT) == 250
    assert Chunking(window=150, stride=100).tokens_read(BERT) == 1431


@pytest.mark.parametrize("bad", [dict(window=0), dict(stride=-1), dict(max_doc_tokens=0), dict(window=10, stride=20),
                                 dict(chunk_selection="random"), dict(max_chunks=1.5)])
def test_bad_chunking_is_refused(bad):
    with pytest.raises(ValueError):
        Chunking(**bad)


def test_window_that_cannot_fit_the_encoder_is_refused(tiny_bert):
    with pytest.raises(ValueError, match="do not fit max_length"):
        pl.MaxP(tiny_bert, window=500)


def test_sequence_layout_and_token_types():
    query, doc = np.array([7, 8]), np.array([20, 21, 22, 23, 24])
    plan = ChunkPlan.build([query], [doc], Chunking(window=3, stride=2), BERT)
    batch = build_batch(plan, np.arange(len(plan)), [query], [doc], BERT, pad_id=0)
    assert batch.input_ids.tolist() == [[2, 7, 8, 3, 20, 21, 22, 3], [2, 7, 8, 3, 22, 23, 24, 3]]
    assert batch.token_type_ids.tolist()[0] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert batch.query_mask.tolist()[0] == [False, True, True, False, False, False, False, False]
    assert batch.doc_mask.tolist()[0] == [False, False, False, False, True, True, True, False]


def test_length_sorted_batches_pad_little_and_cover_every_chunk():
    rng = np.random.default_rng(0)
    docs = [rng.integers(10, 99, size=n) for n in rng.integers(0, 400, size=50)]
    queries = [np.array([5, 6])] * len(docs)
    plan = ChunkPlan.build(queries, docs, Chunking(window=20, stride=10, max_doc_tokens=400), BERT)
    batches = list(length_sorted_batches(plan, queries, docs, BERT, batch_size=8, pad_id=0))
    assert sorted(np.concatenate([b.index for b in batches]).tolist()) == list(range(len(plan)))
    padding = sum(int((b.attention_mask == 0).sum()) for b in batches)
    assert padding / sum(b.attention_mask.numel() for b in batches) < 0.05


def short_docs():
    return pd.DataFrame({"qid": ["1", "1", "2"], "query": ["red cat", "red cat", "blue river"],
                         "docno": ["a", "b", "c"], "text": ["the red cat", "a dog", "blue river house"]})


def test_maxp_with_one_chunk_equals_firstp_on_short_documents(tiny_bert, tmp_path):
    torch.manual_seed(0)
    first = pl.FirstP(tiny_bert)
    first.save_pretrained(tmp_path / "firstp")
    # same weights under the MaxP aggregation: copy the checkpoint and rename the model
    maxp = pl.MaxP(tiny_bert)
    maxp.model.load_state_dict(first.model.state_dict())
    np.testing.assert_allclose(maxp(short_docs())["score"], first(short_docs())["score"], atol=1e-6)


def test_parade_max_over_one_chunk_is_the_linear_head_on_its_cls(tiny_bert):
    torch.manual_seed(0)
    parade = pl.ParadeMax(tiny_bert)
    maxp = pl.MaxP(tiny_bert)
    maxp.model.load_state_dict(parade.model.state_dict())
    np.testing.assert_allclose(parade(short_docs())["score"], maxp(short_docs())["score"], atol=1e-6)


def test_engine_maxp_equals_the_max_over_windows_scored_one_by_one(tiny_bert):
    torch.manual_seed(0)
    maxp = pl.MaxP(tiny_bert, window=6, stride=3, max_doc_tokens=30)
    text = "the red cat and a blue bird in the green river of the castle house door window"  # one token a word
    tokens = maxp.model.tokenizer(text, add_special_tokens=False)["input_ids"]
    windows = [maxp.model.tokenizer.decode(tokens[s:e]) for s, e in maxp.model.chunking.spans(len(tokens), maxp.model.layout)]
    assert len(windows) > 3
    one_by_one = [maxp.score_texts(["red cat"], [w])[0] for w in windows]
    assert maxp.score_texts(["red cat"], [text])[0] == pytest.approx(max(one_by_one), abs=1e-5)


def test_padding_chunks_never_change_a_documents_score(tiny_bert):
    torch.manual_seed(0)
    for cls in (pl.ParadeAttn, pl.ParadeMax, pl.ParadeAvg, pl.MaxP, pl.SumP):
        model = cls(tiny_bert, window=6, stride=3, max_doc_tokens=60)
        short = "the red cat"
        alone = model.score_texts(["red cat"], [short])[0]
        # scored beside a long document, the short one gets padding chunks in the grouped tensor
        together = model.score_texts(["red cat", "red cat"], [short, "blue river house " * 15])[0]
        assert together == pytest.approx(alone, abs=1e-5), cls.__name__


def test_out_of_memory_halves_the_batch_and_other_errors_propagate(tiny_bert):
    torch.manual_seed(0)
    model = pl.MaxP(tiny_bert, window=6, stride=3, batch_size=64)
    texts = ["the red cat sat on a mat " * k for k in range(1, 6)]
    expected = model.score_texts(["red cat"] * 5, texts)
    encode = model.model.encode
    sizes = []

    def flaky(batch):
        sizes.append(len(batch))
        if len(batch) > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (simulated)")
        return encode(batch)

    model.model.encode = flaky
    np.testing.assert_allclose(model.score_texts(["red cat"] * 5, texts), expected, atol=1e-5)
    assert max(sizes) > 2 and sizes[-1] <= 2

    def broken(batch):
        raise KeyError("not an OOM")

    model.model.encode = broken
    with pytest.raises(KeyError):
        model.score_texts(["red cat"], ["text"])


def test_out_of_memory_on_a_single_sequence_is_a_clear_error():
    batch = build_batch(ChunkPlan.build([np.array([1])], [np.array([2, 3])], Chunking(window=4), BERT),
                        np.array([0]), [np.array([1])], [np.array([2, 3])], BERT, 0)

    def oom(_):
        raise torch.OutOfMemoryError("CUDA out of memory")

    with pytest.raises(RuntimeError, match="out of memory encoding a single sequence"):
        run_with_backoff(batch, oom)


def test_documents_are_tokenized_once(tiny_bert):
    model = pl.MaxP(tiny_bert, window=6, stride=3)
    calls = []
    encode = model.model.tokenization.encode

    def counting(texts):
        calls.append(list(texts))
        return encode(texts)

    model.model.tokenization.encode = counting
    model.score_texts(["q one", "q two", "q one"], ["same text", "same text", "other text"])
    model.score_texts(["q one"], ["same text"])
    assert sorted(t for call in calls for t in call) == ["other text", "q one", "q two", "same text"]


def test_registry_names_and_unknown_names(tiny_bert):
    assert {"firstp", "maxp", "sump", "avgp", "parade_avg", "parade_max", "parade_sum", "parade_attn"} <= set(
        pl.registered_models())
    with pytest.raises(ValueError, match="known models: .*maxp"):
        pl.model_class("nope")
    with pytest.raises(TypeError, match="valid settings"):
        pl.MaxP(tiny_bert, windw=10)


def test_default_chunking_follows_the_papers(tiny_bert):
    assert pl.MaxP(tiny_bert).model.chunking.spans(1431, BERT)[-1] == (1300, 1431)
    assert pl.ParadeAttn(tiny_bert).settings["stride"] == 75
    assert pl.AvgP(tiny_bert).model.chunking.tokens_read(BERT) == 1431
    assert pl.FirstP(tiny_bert).model.chunking.tokens_read(BERT) == 477


def reference_batch(plan, index, query_ids, doc_ids, layout, pad_id):
    """The batch built row by row, as the layout says: the reference for ``build_batch``."""
    rows = []
    for k in index:
        q, d = query_ids[plan.doc[k]], doc_ids[plan.doc[k]][plan.start[k]:plan.end[k]]
        head = [*layout.prefix, *q, *layout.middle]
        rows.append((head + [*d, *layout.suffix], len(head), len(q), len(d)))
    width = max(len(r[0]) for r in rows)
    ids, types, attention, query_mask, doc_mask = [], [], [], [], []
    for seq, head, n_query, n_doc in rows:
        pad = width - len(seq)
        ids.append(seq + [pad_id] * pad)
        attention.append([1] * len(seq) + [0] * pad)
        types.append([layout.query_type] * head + [layout.doc_type] * (len(seq) - head) + [0] * pad)
        start = len(layout.prefix)
        query_mask.append([start <= c < start + n_query for c in range(width)])
        doc_mask.append([head <= c < head + n_doc for c in range(width)])
    return ids, attention, types, query_mask, doc_mask


@pytest.mark.parametrize("layout", [BERT, SpecialLayout((0, 9), (2, 2), (), 1, 0), SpecialLayout((), (5,), (6, 7), 0, 0)])
def test_batches_hold_each_rows_layout_whatever_the_lengths(layout):
    """Empty queries and documents, several special tokens, any token types: every row as the
    layout says, padded with the pad id."""
    rng = np.random.default_rng(1)
    docs = [rng.integers(10, 99, size=n) for n in rng.integers(0, 60, size=30)]
    queries = [rng.integers(100, 199, size=n) for n in rng.integers(0, 6, size=30)]
    plan = ChunkPlan.build(queries, docs, Chunking(window=7, stride=4, max_doc_tokens=60), layout)
    for index in (np.arange(len(plan)), rng.permutation(len(plan))[:11], np.array([len(plan) - 1])):
        batch = build_batch(plan, index, queries, docs, layout, pad_id=-1)
        expected = reference_batch(plan, index, queries, docs, layout, -1)
        got = (batch.input_ids, batch.attention_mask, batch.token_type_ids, batch.query_mask, batch.doc_mask)
        for name, tensor, rows in zip(("ids", "attention", "types", "query mask", "doc mask"), got, expected):
            assert tensor.tolist() == rows, name
        assert batch.input_ids.dtype == torch.int64 and batch.attention_mask.dtype == torch.int64

"""Tokenization that keeps the encoder fed: shared between models, in parallel, ahead of the encoder;
its cache is bounded by bytes and holds no text."""
import gc
import threading

import numpy as np
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc.engine import tokenization as _tokenization
from pyterrier_longdoc._scoring import pipeline_groups
from pyterrier_longdoc.engine.tokenization import Tokenization, text_encoder, tokenizer_threads

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

TEXTS = [f"document {i} about the red cat and the blue river " * (1 + i % 7) for i in range(200)]


def test_models_over_the_same_tokenizer_share_their_tokenization(tiny_bert):
    torch.manual_seed(0)
    firstp, maxp = pl.FirstP(tiny_bert), pl.MaxP(tiny_bert, window=6, stride=3)
    assert firstp.model.tokenization is maxp.model.tokenization
    maxp.model.tokenization.clear()
    firstp.score_texts(["red cat"] * 3, TEXTS[:3])
    cached = maxp.model.tokenization.cached_bytes
    assert cached > 0  # FirstP's ids serve MaxP: a pipeline of both tokenizes each document once
    maxp.score_texts(["red cat"] * 3, TEXTS[:3])
    assert maxp.model.tokenization.cached_bytes == cached


# the tiny vocabulary has no capitals: "[ PAD]", spelled out, still gives [UNK]
@pytest.mark.filterwarnings("ignore:this tokenizer still reads:pyterrier_longdoc.LongDocWarning")
def test_another_prefix_or_tokenizer_is_not_shared(tiny_bert):
    tokenizer = pl.MaxP(tiny_bert).model.tokenizer
    assert Tokenization.shared(tokenizer, "query: ") is not Tokenization.shared(tokenizer, "passage: ")
    assert Tokenization.shared(tokenizer, "query: ") is Tokenization.shared(tokenizer, "query: ")
    other = type(tokenizer).from_pretrained(tiny_bert, do_lower_case=False)  # tokenizes otherwise
    assert Tokenization.shared(other) is not Tokenization.shared(tokenizer)


def test_parallel_tokenization_gives_the_serial_ids_on_several_threads(tiny_bert, monkeypatch):
    tokenizer = pl.MaxP(tiny_bert).model.tokenizer
    serial = text_encoder(tokenizer)
    threads = set()

    def encode(texts):
        threads.add(threading.current_thread().name)
        return serial(texts)

    monkeypatch.setenv("PYTERRIER_LONGDOC_TOKENIZER_THREADS", "4")
    tokenization = Tokenization(tokenizer)
    tokenization.encode = encode
    ids, cropped = tokenization(TEXTS, 40)
    assert len(threads) > 1
    expected = [np.asarray(ids[:40], dtype=np.int32) for ids in serial(TEXTS)]
    assert all(np.array_equal(a, b) for a, b in zip(ids, expected))
    assert cropped.tolist() == [len(e) > 40 for e in serial(TEXTS)]


@pytest.mark.parametrize("value", ["0", "-2", "many"])
def test_a_bad_thread_count_is_refused_by_name(monkeypatch, value):
    monkeypatch.setenv("PYTERRIER_LONGDOC_TOKENIZER_THREADS", value)
    with pytest.raises(ValueError, match="PYTERRIER_LONGDOC_TOKENIZER_THREADS must be a positive integer"):
        tokenizer_threads()


def test_groups_start_small_and_double():
    assert pipeline_groups(0) == []
    assert pipeline_groups(5) == [(0, 5)]
    assert pipeline_groups(64) == [(0, 64)]  # a small frame: one group, one aggregator call
    assert pipeline_groups(500) == [(0, 64), (64, 192), (192, 448), (448, 500)]
    sizes = [end - start for start, end in pipeline_groups(10_000)]
    assert max(sizes) == 2048 and sum(sizes) == 10_000


def test_inference_tokenizes_the_next_group_while_the_encoder_runs(tiny_bert, monkeypatch):
    """The encoder never tokenizes: every group's ids come from another thread, and the next
    group's tokenizing starts while the encoder runs this one; the scores are those of documents
    scored one at a time."""
    torch.manual_seed(0)
    model = pl.MaxP(tiny_bert, window=6, stride=3)
    tokenize, encode = model.model.tokenize, model.model.encode
    calls, next_started, waited = [], threading.Event(), []

    def tokenize_spy(queries, texts):
        calls.append((len(texts), threading.current_thread() is threading.main_thread()))
        if len(calls) == 2:
            next_started.set()
        return tokenize(queries, texts)

    def encode_spy(batch):
        if not waited:  # the first batch waits until the second group is being tokenized
            waited.append(next_started.wait(timeout=10))
        return encode(batch)

    monkeypatch.setattr(model.model, "tokenize", tokenize_spy)
    monkeypatch.setattr(model.model, "encode", encode_spy)
    queries, texts = ["red cat"] * 200, TEXTS
    scores = model.score_texts(queries, texts)
    assert calls == [(64, False), (128, False), (8, False)]
    assert waited == [True]
    monkeypatch.undo()
    one_by_one = np.array([model.score_texts([q], [t])[0] for q, t in zip(queries, texts)])
    np.testing.assert_allclose(scores, one_by_one, rtol=1e-5, atol=1e-6)


def test_an_error_while_tokenizing_ahead_reaches_the_caller(tiny_bert, monkeypatch):
    model = pl.MaxP(tiny_bert, window=6, stride=3)

    def broken(queries, texts):
        raise RuntimeError("tokenizer broke")

    monkeypatch.setattr(model.model, "tokenize", broken)
    with pytest.raises(RuntimeError, match="tokenizer broke"):
        model.score_texts(["red cat"] * 20, TEXTS[:20])


def test_the_thread_pool_is_reused(tiny_bert):
    assert _tokenization._pool() is _tokenization._pool()


def test_a_cached_text_serves_shorter_limits_and_is_tokenized_again_for_longer(tiny_bert):
    tokenizer = pl.MaxP(tiny_bert).model.tokenizer
    tokenization, encoded = Tokenization(tokenizer), []
    serial = tokenization.encode
    tokenization.encode = lambda texts: encoded.append(len(texts)) or serial(texts)
    long_text, short_text = "red cat sat " * 100, "red cat"
    (first_60,), cropped = tokenization([long_text], 60)
    assert len(first_60) == 60 and cropped.tolist() == [True]
    (first_20,), cropped = tokenization([long_text], 20)
    assert encoded == [1] and np.array_equal(first_20, first_60[:20]) and cropped.tolist() == [True]
    (first_100,), _ = tokenization([long_text], 100)  # more than the cache holds: tokenized again
    assert encoded == [1, 1] and np.array_equal(first_100[:60], first_60)
    (whole,), _ = tokenization([short_text], 60)
    (again,), cropped = tokenization([short_text], 500)  # all of it was cached: any limit is served
    assert encoded == [1, 1, 1] and np.array_equal(whole, again) and cropped.tolist() == [False]
    assert tokenization.cached_bytes == first_100.nbytes + whole.nbytes + 2 * _tokenization._ENTRY_OVERHEAD


@pytest.fixture(scope="module")
def maxp(tiny_bert):
    torch.manual_seed(0)
    return pl.MaxP(tiny_bert, window=12, stride=6, max_doc_tokens=64, max_query_tokens=16)


# --- the token cache is bounded by bytes and keeps no text ---

def test_token_cache_is_bounded_by_bytes_and_holds_no_text(maxp):
    tokenization = Tokenization(maxp.model.tokenizer, cache_bytes=20_000)
    documents = [f"document {i} " + "the red cat sat on the mat " * 40_000 for i in range(20)]
    for document in documents:
        tokenization([document], 1000)
    del documents
    gc.collect()
    held = sum(ids.nbytes for ids, _ in tokenization._cache.values())
    assert held <= 20_000 and 0 < len(tokenization._cache) < 20
    assert all(isinstance(key, bytes) and len(key) <= 32 for key in tokenization._cache)
    # a repeated text is still served from the cache, with the same ids
    again = "document 19 " + "the red cat sat on the mat " * 40_000
    before = len(tokenization._cache)
    (ids,), _ = tokenization([again], 1000)
    assert len(tokenization._cache) == before and len(ids) == 1000


def test_the_same_text_with_another_limit_is_another_entry(maxp):
    tokenization = Tokenization(maxp.model.tokenizer)
    (short,), (cut,) = tokenization(["the red cat sat"], 2)
    (full,), (whole,) = tokenization(["the red cat sat"], 10)
    assert len(short) == 2 and cut and len(full) == len(maxp.model.tokenizer.tokenize("the red cat sat")) and not whole

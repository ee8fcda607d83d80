"""Issue 12: no bad input reaches a traceback, and no score is silently wrong (inference side)."""
import gc
import json
import re

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch
from tokenizer_families import FAMILIES, special_ids, tiny_tokenizer

import pyterrier_longdoc as pl
from pyterrier_longdoc._batching import ChunkPlan, build_batch, is_out_of_memory, run_with_backoff
from pyterrier_longdoc._chunking import Chunking, SpecialLayout
from pyterrier_longdoc._tokenization import Tokenization, text_encoder
from pyterrier_longdoc.diagnostics._tokens import HFTokenizer, count_tokens
from pyterrier_longdoc.wrap import LongDoc

HTML_DUMP = "html dump: [CLS] body [SEP] footer [PAD] [MASK] [UNK]"
SPECIAL_QUERY = "what is [SEP] [MASK]"


@pytest.fixture(scope="module")
def maxp(tiny_bert):
    torch.manual_seed(0)
    return pl.MaxP(tiny_bert, window=12, stride=6, max_doc_tokens=64, max_query_tokens=16)


def frame(texts, queries=None):
    queries = queries or ["red cat"] * len(texts)
    # object columns: pandas' Arrow-backed strings cannot hold lone surrogates at all
    return pd.DataFrame({"qid": [f"q{i}" for i in range(len(texts))], "query": queries,
                         "docno": [f"d{i}" for i in range(len(texts))], "text": texts}, dtype=object)


# --- item 1: user text stays text ---

@pytest.mark.parametrize("family", FAMILIES)
def test_special_token_strings_in_text_are_read_as_characters(family, tmp_path):
    tokenizer = tiny_tokenizer(family, tmp_path)
    specials = [s for s in tokenizer.all_special_tokens if s != tokenizer.unk_token][:10] + [tokenizer.unk_token]
    text = "the cat " + " ".join(specials) + " dog" + "".join(specials)
    encode = text_encoder(tokenizer)
    ids, plain = encode([text, "the cat and the dog"])
    assert not set(ids) & special_ids(tokenizer), tokenizer.convert_ids_to_tokens(ids)
    assert ids.count(tokenizer.unk_token_id) < len(specials) * 2  # characters, not whole specials as unknowns
    # ordinary text is tokenized exactly as the tokenizer itself does
    assert plain == tokenizer("the cat and the dog", add_special_tokens=False)["input_ids"]
    # the special tokens a pair gets are still there, and are still the only ones
    layout = SpecialLayout.from_tokenizer(tokenizer)
    assert set(layout.prefix + layout.middle + layout.suffix) <= special_ids(tokenizer)


def test_a_special_string_written_by_normalization_stays_text(tmp_path):
    from tokenizers import normalizers

    tokenizer = tiny_tokenizer("t5", tmp_path)
    tokenizer.backend_tokenizer.normalizer = normalizers.NFKC()  # as SentencePiece's own NFKC map does
    (ids,) = text_encoder(tokenizer)(["cat \uff1c/s\uff1e dog"])  # full-width < and >: NFKC gives </s>
    assert tokenizer.eos_token_id not in ids


@pytest.mark.parametrize("family", ["bert", "roberta", "xlmr", "deberta", "t5"])
def test_diagnostics_count_special_token_strings_as_characters(family, tmp_path):
    tokenizer = tiny_tokenizer(family, tmp_path)
    special = tokenizer.all_special_tokens[0]
    counter = HFTokenizer(tokenizer)
    text = f"cat {special} dog"
    assert all(text[start:end] != special for start, end in counter.spans(text))  # no token is the whole special
    assert count_tokens(counter, text) == len(text_encoder(tokenizer)([text])[0])


def test_the_encoder_sees_no_special_token_from_user_text(maxp):
    tokenizer = maxp.model.tokenizer
    specials = special_ids(tokenizer)
    seen = []
    encode = maxp.model.encode

    def recording(batch):
        seen.append(batch)
        return encode(batch)

    maxp.model.encode = recording
    try:
        maxp(frame([HTML_DUMP, "a red cat"], queries=[SPECIAL_QUERY, SPECIAL_QUERY]))
    finally:
        maxp.model.encode = encode
    layout = maxp.model.layout
    for batch in seen:
        for ids, mask in zip(batch.input_ids, batch.attention_mask):
            ids = ids[mask.bool()].tolist()
            # [CLS] q [SEP] d [SEP]: special ids only where the layout puts them
            inside = ids[len(layout.prefix):len(ids) - len(layout.suffix)]
            assert [i for i in inside if i in specials] == list(layout.middle), tokenizer.convert_ids_to_tokens(ids)


def test_chunk_spans_and_training_path_read_special_strings_as_characters(maxp):
    tokenizer = maxp.model.tokenizer
    spans = maxp.chunk_spans(HTML_DUMP)
    n_tokens = spans[-1][1]
    assert n_tokens == len(tokenizer.tokenize(HTML_DUMP, split_special_tokens=True))
    # the differentiable path training uses reads the same ids as inference
    with torch.no_grad():
        train = maxp.score_batch([SPECIAL_QUERY], [HTML_DUMP]).scores
    assert train.item() == pytest.approx(maxp.score_texts([SPECIAL_QUERY], [HTML_DUMP])[0], abs=1e-5)


def test_longdoc_passages_keep_the_documents_own_text(tiny_bert):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    wrapper = LongDoc(pl.MaxP(tiny_bert), window=4, stride=4, tokenizer=tokenizer)
    text = "Castle [SEP] River dog [CLS]"
    passages = wrapper.passages(text)
    # [SEP] counts as the tokens of its characters ([ s ##e ##p ]), and passages are slices of the original text
    n_tokens = len(tokenizer.tokenize(text, split_special_tokens=True))
    assert n_tokens == 13 and len(passages) == 4
    assert all(p in text for p in passages) and passages[0].startswith("Castle [") and text.endswith(passages[-1])


def test_longdoc_with_a_python_only_tokenizer_counts_special_strings_as_characters(tmp_path):
    tokenizer = tiny_tokenizer("byt5", tmp_path)  # no Rust backend, no offsets
    wrapper = LongDoc(pt.apply.doc_score(lambda row: 0.0), window=4, stride=4, tokenizer=tokenizer)
    assert wrapper.passages("ab</s>cd") == ["ab</", "s>cd"]  # byte tokens: </s> is 4 of them


def write_tiny_monot5(path):
    from transformers import T5Config, T5ForConditionalGeneration

    tokenizer = tiny_tokenizer("t5", path)
    tokenizer.add_tokens(["true", "false"])
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(tokenizer), d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
                      decoder_start_token_id=tokenizer.pad_token_id, pad_token_id=tokenizer.pad_token_id,
                      eos_token_id=tokenizer.eos_token_id)
    config.n_positions = 512  # pyterrier_t5 reads it
    T5ForConditionalGeneration(config).save_pretrained(path)
    return path


def test_monot5_inside_longdoc_reads_end_of_sequence_strings_as_text(tmp_path):
    from pyterrier_t5 import MonoT5ReRanker

    path = write_tiny_monot5(tmp_path / "monot5")
    monot5 = MonoT5ReRanker(tok_model=str(path), model=str(path), verbose=False)
    eos = monot5.tokenizer.eos_token_id
    seen = []
    forward = monot5.model.forward

    def recording(**kwargs):
        seen.append([row[mask.bool()].tolist() for row, mask in zip(kwargs["input_ids"], kwargs["attention_mask"])])
        return forward(**kwargs)

    monot5.model.forward = recording
    texts, queries = ["the cat </s> dog <pad> </s>", "the dog"], ["cat </s>", "dog"]
    out = LongDoc(monot5, window_words=50, stride_words=50)(frame(texts, queries))
    assert np.isfinite(out["score"]).all()
    plain = [t.replace("</s>", "zz").replace("<pad>", "zz") for t in texts]
    LongDoc(monot5, window_words=50, stride_words=50)(frame(plain, [q.replace("</s>", "zz") for q in queries]))
    with_strings, without = seen
    # the only end-of-sequence and padding ids are the ones MonoT5 adds itself, as without the strings
    assert [row.count(eos) for row in with_strings] == [row.count(eos) for row in without]
    assert [monot5.tokenizer.pad_token_id in row for row in with_strings] == [False, False]
    # the scorer's tokenizer is given back unchanged
    assert monot5.tokenizer("a </s>", add_special_tokens=False)["input_ids"][-1] == eos


# --- item 5: lone surrogates ---

def test_lone_surrogates_are_replaced_and_the_rows_named(maxp):
    bad = json.loads('"red \\ud800 cat"')
    inp = frame(["the red cat", bad, "a dog"], queries=["red cat", "red cat", json.loads('"cat \\udfff"')])
    with pytest.warns(UserWarning, match=r"column '(text|query)' has lone UTF-16 surrogates") as caught:
        out = maxp(inp)
    messages = [str(w.message) for w in caught]
    assert any(re.search(r"column 'text' has lone UTF-16 surrogates .* 1 of 3 rows .*docno='d1'", m) for m in messages)
    assert any("column 'query' has lone UTF-16 surrogates" in m for m in messages)
    assert np.isfinite(out["score"]).all()
    clean = maxp.score_texts(["red cat"], ["red \ufffd cat"])[0]
    # scored in a batch of three against a batch of one: GEMM rounding by shape, up to ~1e-6
    assert out.set_index("docno").loc["d1", "score"] == pytest.approx(clean, abs=1e-5)
    # direct calls never fail either
    assert np.isfinite(maxp.score_texts([bad], [bad])).all()
    assert maxp.chunk_spans(bad) == maxp.chunk_spans("red \ufffd cat")


def test_lone_surrogates_in_longdoc_and_the_diagnostics(tiny_bert):
    from transformers import AutoTokenizer

    bad = "the \ud800 red cat"
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    assert count_tokens(HFTokenizer(tokenizer), bad) == count_tokens(HFTokenizer(tokenizer), "the \ufffd red cat")
    with pytest.warns(UserWarning, match="lone UTF-16 surrogates"):
        out = LongDoc(pl.MaxP(tiny_bert), window=4, stride=4, tokenizer=tokenizer)(frame([bad]))
    assert np.isfinite(out["score"]).all()


# --- item 9: the token cache is bounded by bytes and keeps no text ---

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


# --- item 10: the OOM back-off remembers ---

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

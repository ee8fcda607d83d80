"""User text stays text: special-token strings in queries and documents are read as characters
(by the models, LongDoc and the diagnostics), and lone surrogates are replaced and their rows named."""
import json
import re

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc.engine.chunking import SpecialLayout
from pyterrier_longdoc.engine.tokenization import text_encoder
from pyterrier_longdoc.data._tokens import HFTokenizer, count_tokens
from pyterrier_longdoc.wrap import LongDoc

from helpers.tokenizer_families import FAMILIES, special_ids, tiny_tokenizer

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

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


# --- user text stays text ---

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


# --- lone surrogates ---

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

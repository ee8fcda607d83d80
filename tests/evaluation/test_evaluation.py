"""Seed averaging, significance tests and relative gains against hand-computed values."""
import sys

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from pyterrier.measures import RR
from scipy import stats

from pyterrier_longdoc.evaluation import correct_pvalues, format_gain, multi_seed_experiment

QIDS = ["1", "2", "3", "4"]
TOPICS = pd.DataFrame({"qid": QIDS, "query": ["a", "b", "c", "d"]})
QRELS = pd.DataFrame({"qid": QIDS, "docno": ["rel"] * 4, "label": [1] * 4})


def run(ranks):
    """A run whose relevant document of query i sits at rank ranks[i] (so RR = 1 / rank)."""
    rows = []
    for qid, rank in zip(QIDS, ranks):
        docs = [f"n{i}" for i in range(3)]
        docs.insert(rank - 1, "rel")
        rows += [(qid, d, 10.0 - i) for i, d in enumerate(docs)]
    return pd.DataFrame(rows, columns=["qid", "docno", "score"])


# RR per query and seed
FIRSTP = {0: [1, 2, 3, 1], 1: [2, 2, 1, 1]}   # RR (1, .5, .333, 1), (.5, .5, 1, 1) -> mean .75 .5 .667 1
MAXP = {0: [1, 1, 2, 1], 1: [1, 2, 1, 1]}     # -> 1 .75 .75 1
BM25 = [2, 2, 2, 1]                           # -> .5 .5 .5 1
FIRSTP_Q = np.array([0.75, 0.5, (1 / 3 + 1) / 2, 1.0])
MAXP_Q = np.array([1.0, 0.75, 0.75, 1.0])
BM25_Q = np.array([0.5, 0.5, 0.5, 1.0])


class Counting(pt.Transformer):
    def __init__(self, frame):
        self.frame, self.calls = frame, 0

    def transform(self, inp):
        self.calls += len(inp) > 0  # pt.Experiment also inspects it with an empty frame
        return self.frame if len(inp) else self.frame.iloc[:0]


def hand_t_test(a, b):
    d = np.asarray(a) - np.asarray(b)
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    return 2 * stats.t.sf(abs(t), df=len(d) - 1)


def systems(calls):
    def firstp(seed):
        calls.append(seed)
        return run(FIRSTP[seed])

    bm25 = Counting(run(BM25))
    return {"FirstP": firstp, "MaxP": {s: run(r) for s, r in MAXP.items()}, "BM25": bm25}, bm25


def test_seed_averages_tests_and_gains():
    calls = []
    spec, bm25 = systems(calls)
    table, per_query = multi_seed_experiment(spec, TOPICS, QRELS, [RR], seeds=[0, 1], baseline="FirstP",
                                             perquery=True)
    assert calls == [0, 1] and bm25.calls == 1  # one model per seed; a fixed system runs once
    table = table.set_index("name")
    assert table.index.tolist() == ["FirstP", "MaxP", "BM25"]
    assert table.loc["FirstP", "RR"] == pytest.approx(FIRSTP_Q.mean())
    assert table.loc["MaxP", "RR"] == pytest.approx(MAXP_Q.mean())       # 0.875
    assert table.loc["BM25", "RR"] == pytest.approx(BM25_Q.mean())       # 0.625
    assert (table.loc["MaxP", "RR +"], table.loc["MaxP", "RR -"]) == (3, 0)
    assert (table.loc["BM25", "RR +"], table.loc["BM25", "RR -"]) == (0, 2)
    assert table.loc["MaxP", "RR p-value"] == pytest.approx(hand_t_test(MAXP_Q, FIRSTP_Q))
    assert table.loc["BM25", "RR p-value"] == pytest.approx(hand_t_test(BM25_Q, FIRSTP_Q))
    assert pd.isna(table.loc["FirstP", "RR p-value"])
    # the papers' format: value and relative gain over FirstP
    assert table.loc["FirstP", "RR (gain)"] == "0.729"
    assert table.loc["MaxP", "RR (gain)"] == "0.875 (+20.0%)"    # (0.875 - 0.72917) / 0.72917
    assert table.loc["BM25", "RR (gain)"] == "0.625 (-14.3%)"
    # per query: the mean over seeds, and each seed's value
    maxp = per_query[per_query["name"] == "MaxP"].set_index("qid")
    assert maxp["value"].tolist() == pytest.approx(MAXP_Q.tolist())
    assert maxp["seed=0"].tolist() == pytest.approx([1, 1, 0.5, 1])


def test_holm_correction_by_hand_with_and_without_statsmodels(monkeypatch):
    spec, _ = systems([])
    p_maxp, p_bm25 = hand_t_test(MAXP_Q, FIRSTP_Q), hand_t_test(BM25_Q, FIRSTP_Q)
    low, high = sorted([p_maxp, p_bm25])
    holm = {low: min(1, 2 * low), high: min(1, max(2 * low, high))}
    for hide in (False, True):
        if hide:  # the fallback written in the module
            monkeypatch.setitem(sys.modules, "statsmodels.stats.multitest", None)
        table = multi_seed_experiment(spec, TOPICS, QRELS, [RR], seeds=[0, 1], baseline=0, correction="holm",
                                      significance_mark="*", correction_alpha=0.5).set_index("name")
        assert table.loc["MaxP", "RR p-value corrected"] == pytest.approx(holm[p_maxp])
        assert table.loc["BM25", "RR p-value corrected"] == pytest.approx(holm[p_bm25])
        assert table.loc["MaxP", "RR reject"] == (holm[p_maxp] <= 0.5)
        assert not table.loc["FirstP", "RR reject"]
        assert table.loc["MaxP", "RR (gain)"] == "0.875" + ("*" if holm[p_maxp] <= 0.5 else "") + " (+20.0%)"
    with pytest.raises(ImportError, match="statsmodels"):
        correct_pvalues([0.01, 0.2], "fdr_bh")


def test_own_corrections_match_statsmodels():
    multitest = pytest.importorskip("statsmodels.stats.multitest")
    from pyterrier_longdoc.evaluation import _own_correction

    p = np.array([0.01, 0.04, 0.03, 0.2, 0.001])
    for method in ("holm", "bonferroni"):
        reject, corrected, _, _ = multitest.multipletests(p, alpha=0.05, method=method)
        own_reject, own_corrected = _own_correction(p, method, 0.05)
        assert own_corrected == pytest.approx(corrected)
        assert own_reject.tolist() == reject.tolist()
    reject, corrected = correct_pvalues([0.01, np.nan, 0.04], "bonferroni")
    assert corrected[0] == pytest.approx(0.02) and np.isnan(corrected[1]) and reject.tolist() == [True, False, False]


def test_firstp_mapping_lists_and_errors():
    spec, _ = systems([])
    spec["MaxP"] = [run(MAXP[0]), run(MAXP[1])]  # a list aligned with the seeds
    table = multi_seed_experiment(spec, TOPICS, QRELS, [RR], seeds=[0, 1], firstp={"MaxP": "FirstP"})
    table = table.set_index("name")
    assert "RR p-value" not in table.columns  # no baseline, no tests
    assert table.loc["MaxP", "RR (gain)"] == "0.875 (+20.0%)" and table.loc["BM25", "RR (gain)"] == "0.625"
    one_seed = multi_seed_experiment({"FirstP": lambda s: run(FIRSTP[s])}, TOPICS, QRELS, [RR], seeds=[1])
    assert one_seed["RR"].iloc[0] == pytest.approx(np.mean([0.5, 0.5, 1, 1]))
    with pytest.raises(ValueError, match="unknown baseline"):
        multi_seed_experiment(spec, TOPICS, QRELS, [RR], seeds=[0, 1], baseline="nope")
    with pytest.raises(ValueError, match="needs a baseline"):
        multi_seed_experiment(spec, TOPICS, QRELS, [RR], seeds=[0, 1], correction="holm")
    calls = []
    with pytest.raises(ValueError, match="no entry for seed 2"):  # checked before anything is trained
        multi_seed_experiment({"FirstP": calls.append, "MaxP": {s: run(r) for s, r in MAXP.items()}},
                              TOPICS, QRELS, [RR], seeds=[0, 2])
    assert calls == []
    with pytest.raises(ValueError, match="lists 2 systems for 3 seeds"):
        multi_seed_experiment({"MaxP": spec["MaxP"]}, TOPICS, QRELS, [RR], seeds=[0, 1, 5])
    for option in ({"dataframe": False}, {"save_dir": "runs"}):
        with pytest.raises(TypeError, match=next(iter(option))):
            multi_seed_experiment(spec, TOPICS, QRELS, [RR], seeds=[0, 1], **option)


def test_format_gain():
    assert format_gain(0.416, 0.39431) == "0.416 (+5.5%)"
    assert format_gain(0.3, 0.0) == "0.300"
    assert format_gain(0.41234, 0.41234, precision=4) == "0.4123 (+0.0%)"


def test_comparison_statistics_over_queries():
    from pyterrier.measures import RR

    from pyterrier_longdoc.evaluation import mean_interval, per_query_values, queries_needed

    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["a", "b"]})
    qrels = pd.DataFrame({"qid": ["1", "2"], "docno": ["d1", "d2"], "label": [1, 1]})
    good = pd.DataFrame({"qid": ["1", "1", "2", "2"], "docno": ["d1", "x", "d2", "x"], "score": [2.0, 1.0, 2.0, 1.0]})
    bad = good.assign(score=[1.0, 2.0, 1.0, 2.0])
    values = per_query_values({"good": good, "bad": bad}, topics, qrels, RR)
    assert list(values.columns) == ["good", "bad"] and list(values.index) == ["1", "2"]
    assert values["good"].tolist() == [1.0, 1.0] and values["bad"].tolist() == [0.5, 0.5]

    mean, low, high = mean_interval([1.0, 2.0, 3.0, None])  # the missing value is dropped
    assert mean == 2.0 and abs((high - mean) - 4.302653 * 1.0 / 3 ** 0.5) < 1e-5  # t(0.975, 2 df) sd / sqrt(n)
    with pytest.raises(ValueError, match="at least 2"):
        mean_interval([1.0])

    assert queries_needed(0.1, 0.37) == 108  # ((1.95996 + 0.84162) * 0.37 / 0.1)^2 = 107.5
    assert queries_needed(0.3, 0.37) == 12
    with pytest.raises(ValueError, match="difference must be > 0"):
        queries_needed(0.0, 0.3)


def test_int_docnos_in_the_qrels_match_str_docnos_in_the_run():
    from pyterrier_longdoc.evaluation import per_query_values

    topics = pd.DataFrame({"qid": ["1", "2"], "query": ["a", "b"]})
    run = pd.DataFrame({"qid": ["1", "1", "2", "2"], "docno": ["10", "11", "20", "21"], "score": [2.0, 1.0, 2.0, 1.0]})
    qrels = pd.DataFrame({"qid": [1, 2], "docno": [11, 20], "label": [1, 1]})  # ints, as read from a CSV
    values = per_query_values({"run": run}, topics, qrels, RR)
    assert values["run"].to_dict() == {"1": 0.5, "2": 1.0}
    seeds = multi_seed_experiment({"run": lambda seed: run}, topics, qrels, [RR], seeds=[0, 1])
    assert seeds["RR"].iloc[0] == pytest.approx(0.75)

"""Small statistics helpers the tutorials share: the random baseline, confidence intervals of a
mean over queries, and how many queries a difference needs (the last two, and the per-query
values, are the library's: ``pyterrier_longdoc.evaluation``)."""
from __future__ import annotations

import pandas as pd

from pyterrier_longdoc import demo
from pyterrier_longdoc.evaluation import correct_pvalues
from pyterrier_longdoc.evaluation import mean_interval as interval
from pyterrier_longdoc.evaluation import per_query_values, queries_needed


def expected_random_rr(first_stage_run: pd.DataFrame, collection) -> float:
    """The mean RR of a random order of each query's candidates in ``first_stage_run``, over the
    topics of ``collection`` (a collection or a subset of it: ``split``, ``near``, ``far``), computed
    exactly: ``H(n)/n`` with one relevant document among n (0 where the first stage missed it)."""
    return demo.expected_random_rr(first_stage_run, collection.topics["qid"], collection.qrels)


def per_query(runs: dict[str, pd.DataFrame], collection, measure) -> pd.DataFrame:
    """One row per query, one column per system: the measure's per-query values."""
    return per_query_values(runs, collection.topics, collection.qrels, measure)


def measure_interval(values) -> tuple[float, float, float]:
    """The mean of a measure's per-query values (RR, nDCG: 0 to 1) and its 95% t-interval, cut to
    that range: near 1 the t-interval of values piled at the top runs past it. (``interval``, uncut,
    is for differences between systems, -1 to 1.)"""
    mean, low, high = interval(values)
    return mean, max(low, 0.0), min(high, 1.0)


def summary(runs: dict[str, pd.DataFrame], collection, measure, first_stage_run: pd.DataFrame) -> pd.DataFrame:
    """Mean, 95% interval (cut to the measure's range 0 to 1) and the number of queries of each
    system, with a first row for a random order of the same candidates (its expected value,
    computed exactly: ``H(n)/n``)."""
    values = per_query(runs, collection, measure)
    rows = {"random order": {"mean": expected_random_rr(first_stage_run, collection), "low": float("nan"),
                             "high": float("nan")}}
    for name in values:
        mean, low, high = measure_interval(values[name])
        rows[name] = {"mean": mean, "low": low, "high": high}
    table = pd.DataFrame(rows).T
    table["queries"] = len(values)
    return table


def one_family(tests: pd.DataFrame, controls: dict[str, pd.DataFrame] | None = None):
    """Every test a notebook draws, corrected by Holm as one family: ``tests`` (one row per test, its
    raw ``p-value``) and the query controls' tests (each ``query_controls`` table's p-values, whose
    own correction covers its table only). Returns ``tests`` with ``p-value (Holm)``, and the controls
    with their ``p-value corrected`` replaced by the family's, which ``reads_the_query`` then reads."""
    controls = {name: table.copy() for name, table in (controls or {}).items()}
    rows = [(name, i) for name, table in controls.items() for i, p in table["p-value"].items() if pd.notna(p)]
    raw = [controls[name].loc[i, "p-value"] for name, i in rows] + list(tests["p-value"])
    corrected = correct_pvalues(raw, "holm")[1]
    for (name, i), value in zip(rows, corrected):
        controls[name].loc[i, "p-value corrected"] = value
    tests = tests.assign(**{"p-value (Holm)": corrected[len(rows):]})
    print(f"one family: {len(raw)} tests ({len(rows)} of them the query controls'), Holm-corrected together")
    return tests, controls


__all__ = ["expected_random_rr", "interval", "one_family", "measure_interval", "per_query", "queries_needed", "summary"]

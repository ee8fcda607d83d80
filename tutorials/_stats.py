"""Small statistics helpers the tutorials share: the random baseline, confidence intervals of a
mean over queries, and how many queries a difference needs."""
from __future__ import annotations

import math

import pandas as pd
import pyterrier as pt
from scipy import stats

from pyterrier_longdoc.demo import expected_random_rr


def per_query(runs: dict[str, pd.DataFrame], collection, measure) -> pd.DataFrame:
    """One row per query, one column per system: the measure's per-query values."""
    frame = pt.Experiment(list(runs.values()), collection.topics, collection.qrels, [measure],
                          names=list(runs), perquery=True)
    return frame.pivot_table(index="qid", columns="name", values="value")[list(runs)]


def interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """(mean, low, high): the mean and its t-based confidence interval."""
    values = pd.Series(values).dropna()
    mean = float(values.mean())
    half = float(stats.t.ppf((1 + confidence) / 2, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values)))
    return mean, mean - half, mean + half


def summary(runs: dict[str, pd.DataFrame], collection, measure, first_stage_run: pd.DataFrame) -> pd.DataFrame:
    """Mean, 95% interval (cut to the measure's range 0 to 1) and the number of queries of each
    system, with a first row for a random order of the same candidates (its expected value,
    computed exactly: ``H(n)/n``)."""
    values = per_query(runs, collection, measure)
    rows = {"random order": {"mean": expected_random_rr(first_stage_run, collection), "low": float("nan"),
                             "high": float("nan")}}
    for name in values:
        mean, low, high = interval(values[name])
        rows[name] = {"mean": mean, "low": max(low, 0.0), "high": min(high, 1.0)}
    table = pd.DataFrame(rows).T
    table["queries"] = len(values)
    return table


def queries_needed(difference: float, sd_of_differences: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Queries a paired test needs to detect a mean difference of ``difference`` (two-sided
    ``alpha``, probability ``power``), when the per-query differences have standard deviation
    ``sd_of_differences``: the normal approximation n = ((z(1-alpha/2) + z(power)) sd / d)^2."""
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return math.ceil((z * sd_of_differences / difference) ** 2)

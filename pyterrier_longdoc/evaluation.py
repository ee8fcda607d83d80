"""Multi-seed experiments, as in the papers' tables.

Neural re-rankers vary with the training seed, so the papers train one model per seed, average
each query's metric over the seeds, and only then run significance tests (paired t-test)
against a baseline; the tables show each model's value with its relative gain over FirstP,
e.g. ``0.416 (+5.5%)``. :func:`multi_seed_experiment` does exactly that on top of
``pt.Experiment``.

Three helpers read one comparison over queries: :func:`per_query_values` (one column per system),
:func:`mean_interval` (a mean with its t-interval) and :func:`queries_needed` (how many queries a
paired test needs for a difference of a given size).

:func:`query_controls` checks that a ranker reads the query: it re-scores the same candidates with
another query's text and with a constant query, beside a random order; :func:`reads_the_query`
reads its verdict. A ranker that ranks as well without its query has learned what an answer looks
like, or where it sits, not relevance.

:func:`grid_scan` is ``pt.GridScan`` with each row showing the model as it was for that row.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import math

import numpy as np
import pandas as pd
import pyterrier as pt

OWN_CORRECTIONS = ("bonferroni", "holm")


def multi_seed_experiment(systems: Mapping[str, Any] | Sequence[Any], topics: pd.DataFrame, qrels: pd.DataFrame,
                          eval_metrics: Sequence[Any], *, seeds: Sequence[int] = (0, 1, 2),
                          names: Sequence[str] | None = None, baseline: int | str | None = None,
                          firstp: str | Mapping[str, str] | None = None, test: str | Callable = "t",
                          correction: str | None = None, correction_alpha: float = 0.05, precision: int = 3,
                          significance_mark: str = "", perquery: bool = False, **experiment_options):
    """Evaluate systems over several seeds; test the seed-averaged per-query values.

    Args:
        systems: ``{name: system}`` (or a list with ``names``). A system is

            - a ``pt.Transformer`` or a result frame: the same for every seed (e.g. BM25),
              evaluated once;
            - a function ``seed -> pt.Transformer | frame`` that trains or loads the seed's model
              (``lambda s: MaxP.from_pretrained(f"maxp-seed{s}")``); each model is dropped once
              evaluated, so one model is in memory at a time;
            - a mapping ``{seed: system}`` or a list aligned with ``seeds``.
        eval_metrics: as for ``pt.Experiment``.
        baseline: the system (name or index) the others are tested against: ``+`` / ``-`` (queries
            better / worse than the baseline), ``p-value``, and with ``correction`` also
            ``reject`` and ``p-value corrected``, one set per measure, as ``pt.Experiment``.
        firstp: the reference of the relative gains: a system name for all, or
            ``{system: its FirstP}`` (e.g. the FirstP with the same backbone); default the
            baseline. Adds a column ``"<measure> (gain)"`` per measure: ``"0.416 (+5.5%)"``,
            the reference itself ``"0.394"``, a system without reference only its value.
        test: ``"t"`` (``scipy.stats.ttest_rel``), ``"wilcoxon"``, or a function like them.
        correction: multiple-comparison correction over the non-baseline systems, per measure:
            any ``statsmodels`` ``multipletests`` method when statsmodels is installed, else
            ``"bonferroni"`` or ``"holm"`` (implemented here).
        significance_mark: appended to the value in the gain column when the system differs
            significantly from the baseline (p < ``correction_alpha``, after correction if any),
            e.g. ``"*"``.
        perquery: also return the per-query frame: ``name, qid, measure, value`` (the mean over
            seeds) and one ``seed=<s>`` column per seed.
        **experiment_options: passed to ``pt.Experiment`` (``batch_size``, ``filter_by_qrels``, ...).

    Returns:
        one row per system: ``name``, the seed-averaged means, the significance columns, and
        the gain columns; with ``perquery=True`` a tuple ``(table, per_query)``.
    """
    systems = _named(systems, names)
    seeds = list(seeds)
    if not seeds:
        raise ValueError("seeds must not be empty")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    base = _resolve_name(baseline, list(systems), "baseline")
    if correction is not None and base is None:
        raise ValueError("a multiple-comparison correction needs a baseline")
    test_fn = _test_function(test)
    for option in ("perquery", "baseline", "names", "correction", "dataframe"):
        if option in experiment_options:
            raise TypeError(f"multi_seed_experiment sets pt.Experiment's {option!r} itself")
    if "save_dir" in experiment_options:  # pt.Experiment names a saved run by system, not by seed
        raise TypeError("save_dir is not supported: pt.Experiment would save every seed's run of a system under "
                        "one name and read the first seed's run back for the others; save each seed's run yourself")

    per_seed = _per_query(systems, seeds, topics, qrels, eval_metrics, experiment_options)
    measures = list(dict.fromkeys(per_seed["measure"]))
    wide = per_seed.pivot_table(index=["name", "qid", "measure"], columns="seed", values="value", aggfunc="first")
    incomplete = wide.isna().any(axis=1)
    if incomplete.any():
        example = wide.index[incomplete][0]
        raise ValueError(f"{int(incomplete.sum())} (system, query, measure) values are missing for some seeds, e.g. "
                         f"{example}: every seed must be evaluated on the same queries")
    averaged = wide.mean(axis=1).rename("value").reset_index()

    table = averaged.groupby(["name", "measure"])["value"].mean().unstack("measure")
    table = table.reindex(index=list(systems), columns=measures).reset_index()
    table.columns.name = None
    if base is not None:
        table = _significance(table, averaged, base, measures, test_fn, correction, correction_alpha)
    table = _gains(table, measures, base, firstp, precision, significance_mark, correction, correction_alpha)
    if not perquery:
        return table
    per_query = wide.rename(columns=lambda s: f"seed={s}").reset_index()
    per_query.columns.name = None
    per_query.insert(3, "value", wide.mean(axis=1).to_numpy())
    return table, per_query


def _named(systems, names) -> dict[str, Any]:
    if isinstance(systems, Mapping):
        if names is not None:
            raise ValueError("names are the keys of the systems mapping; do not pass both")
        return {str(k): v for k, v in systems.items()}
    systems = list(systems)
    if names is None:
        names = [repr(s) if isinstance(s, pt.Transformer) else f"system {i}" for i, s in enumerate(systems)]
    names = [str(n) for n in names]
    if len(names) != len(systems):
        raise ValueError(f"{len(names)} names for {len(systems)} systems")
    if len(set(names)) != len(names):
        raise ValueError(f"system names must be distinct, got {names}")
    return dict(zip(names, systems))


def _resolve_name(which: int | str | None, names: list[str], what: str) -> str | None:
    if which is None:
        return None
    if isinstance(which, (int, np.integer)) and not isinstance(which, bool):
        if not 0 <= which < len(names):
            raise ValueError(f"{what} index {which} is out of range for {len(names)} systems")
        return names[which]
    if which not in names:
        raise ValueError(f"unknown {what} {which!r}; systems: {', '.join(names)}")
    return which


def _test_function(test: str | Callable) -> Callable:
    from scipy import stats

    if callable(test):
        return test
    tests = {"t": stats.ttest_rel, "wilcoxon": stats.wilcoxon}
    if test not in tests:
        raise ValueError(f"unknown test {test!r}; use 't', 'wilcoxon' or a function like scipy.stats.ttest_rel")
    return tests[test]


def _fixed(spec) -> bool:
    return isinstance(spec, (pt.Transformer, pd.DataFrame))


def _for_seed(spec, seed: int, seeds: list[int]):
    if _fixed(spec):
        return spec
    if isinstance(spec, Mapping):
        return spec[seed]
    if isinstance(spec, (list, tuple)):
        return spec[seeds.index(seed)]
    return spec(seed)


def _check_specs(systems: dict, seeds: list[int]) -> None:
    """Fail before any model is trained when a mapping or list cannot serve every seed."""
    for name, spec in systems.items():
        if _fixed(spec):
            continue
        if isinstance(spec, Mapping):
            missing = [s for s in seeds if s not in spec]
            if missing:
                raise ValueError(f"system {name!r} has no entry for seed {missing[0]}; it has {sorted(spec)}")
        elif isinstance(spec, (list, tuple)):
            if len(spec) != len(seeds):
                raise ValueError(f"system {name!r} lists {len(spec)} systems for {len(seeds)} seeds")
        elif not callable(spec):
            raise TypeError(f"system {name!r} must be a pt.Transformer, a result frame, a function of the seed, a "
                            f"mapping seed -> system or a list aligned with the seeds; got {type(spec).__name__}")


def _per_query(systems: dict, seeds: list[int], topics, qrels, eval_metrics, options) -> pd.DataFrame:
    _check_specs(systems, seeds)
    frames = []
    for name, spec in systems.items():
        once = None
        for seed in seeds:
            if once is None or not _fixed(spec):
                system = _for_seed(spec, seed, seeds)
                if not _fixed(system):
                    raise TypeError(f"system {name!r} for seed {seed} is a {type(system).__name__}, not a "
                                    "pt.Transformer or a result frame")
                once = pt.Experiment([_str_ids(system)], _str_ids(topics), _str_ids(qrels), eval_metrics, names=[name],
                                     perquery=True, **options)
                del system  # one seed's model in memory at a time
            frames.append(once.assign(seed=seed))
    frame = pd.concat(frames, ignore_index=True)
    return frame.assign(qid=frame["qid"].astype(str))


def _significance(table: pd.DataFrame, averaged: pd.DataFrame, base: str, measures: list[str], test_fn,
                  correction: str | None, alpha: float) -> pd.DataFrame:
    values = averaged.pivot_table(index=["measure", "qid"], columns="name", values="value", aggfunc="first")
    for m in measures:
        columns: dict[str, list] = {f"{m} +": [], f"{m} -": [], f"{m} p-value": []}
        by_query = values.loc[m]
        for name in table["name"]:
            if name == base:
                for values_list in columns.values():
                    values_list.append(np.nan)
                continue
            pair = by_query[[name, base]].dropna()
            system, reference = pair[name].to_numpy(), pair[base].to_numpy()
            columns[f"{m} +"].append(int((system > reference).sum()))
            columns[f"{m} -"].append(int((system < reference).sum()))
            columns[f"{m} p-value"].append(float(test_fn(system, reference)[1]))
        for column, column_values in columns.items():
            table[column] = column_values
        if correction is not None:
            others_p = table.loc[table["name"] != base, f"{m} p-value"].to_numpy(dtype=float)
            reject, corrected = correct_pvalues(others_p, correction, alpha)
            table[f"{m} reject"] = False
            table[f"{m} p-value corrected"] = np.nan
            table.loc[table["name"] != base, f"{m} reject"] = reject
            table.loc[table["name"] != base, f"{m} p-value corrected"] = corrected
    return table


def correct_pvalues(pvalues, method: str, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """``(reject, corrected p-values)`` for one family of tests; NaN p-values stay NaN (not
    rejected) and do not count as tests.

    Uses ``statsmodels.stats.multitest.multipletests`` when statsmodels is installed (any of its
    methods); otherwise ``"bonferroni"`` (``min(1, m p)``) and ``"holm"`` (step-down:
    ``max_{j <= i} min(1, (m - j + 1) p_(j))`` over the ascending p-values) are computed here.
    """
    p = np.asarray(pvalues, dtype=float)
    reject = np.zeros(len(p), dtype=bool)
    corrected = np.full(len(p), np.nan)
    valid = ~np.isnan(p)
    if not valid.any():
        return reject, corrected
    try:
        from statsmodels.stats.multitest import multipletests
    except ImportError:
        multipletests = None
    if multipletests is not None:
        reject[valid], corrected[valid], _, _ = multipletests(p[valid], alpha=alpha, method=method)
        return reject, corrected
    if method not in OWN_CORRECTIONS:
        raise ImportError(f"correction {method!r} needs statsmodels (pip install statsmodels); without it, "
                          f"use one of {OWN_CORRECTIONS}")
    reject[valid], corrected[valid] = _own_correction(p[valid], method, alpha)
    return reject, corrected


def _own_correction(p: np.ndarray, method: str, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    m = len(p)
    if method == "bonferroni":
        corrected = np.minimum(1.0, p * m)
    else:  # holm
        order = np.argsort(p, kind="stable")
        stepped = np.maximum.accumulate(p[order] * (m - np.arange(m)))
        corrected = np.empty(m)
        corrected[order] = np.minimum(1.0, stepped)
    return corrected <= alpha, corrected


def format_gain(value: float, reference: float | None, precision: int = 3, mark: str = "") -> str:
    """``"0.416 (+5.5%)"``: the value and its relative change over ``reference`` (none when the
    reference is missing or zero)."""
    text = f"{value:.{precision}f}{mark}"
    if reference is None or pd.isna(reference) or reference == 0 or pd.isna(value):
        return text
    return f"{text} ({(value - reference) / reference * 100:+.1f}%)"


def _gains(table: pd.DataFrame, measures: list[str], base: str | None, firstp, precision: int, mark: str,
           correction: str | None, alpha: float) -> pd.DataFrame:
    names = table["name"].tolist()
    if isinstance(firstp, Mapping):
        unknown = sorted({*firstp, *firstp.values()} - set(names))
        if unknown:
            raise ValueError(f"firstp names unknown systems {unknown}; systems: {', '.join(names)}")
        reference = {n: firstp.get(n) for n in names}
    else:
        ref = _resolve_name(firstp, names, "firstp") if firstp is not None else base
        reference = {n: ref for n in names}
    means = table.set_index("name")
    for m in measures:
        cells = []
        for name in names:
            ref = reference[name]
            significant = False
            if mark and base is not None and name != base:
                if correction is not None:
                    significant = bool(means.loc[name, f"{m} reject"])
                else:
                    p = means.loc[name, f"{m} p-value"]
                    significant = bool(not pd.isna(p) and p < alpha)
            cells.append(format_gain(means.loc[name, m], None if ref in (None, name) else means.loc[ref, m],
                                     precision, mark if significant else ""))
        table[f"{m} (gain)"] = cells
    return table


__all__ = ["multi_seed_experiment", "correct_pvalues", "format_gain", "query_controls", "reads_the_query",
           "grid_scan"]


def grid_scan(pipeline, params: Mapping[Any, Mapping[str, Sequence[Any]]], topics: pd.DataFrame,
              qrels: pd.DataFrame, metrics=("map",), **options) -> pd.DataFrame:
    """``pt.GridScan``'s table, with each ``tran_<i>`` column showing the transformer as it was
    for that row (``MaxP('dir', window=8, stride=4)``) rather than as the scan left it.

    ``pt.GridScan`` puts the transformer object itself in every row, so a table printed after the
    scan shows its final settings on every row. This takes the same arguments (``options``: its
    ``jobs``, ``backend``, ``verbose``, ``batch_size``) and leaves the transformers with the last
    row's settings, as ``pt.GridScan`` does.
    """
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    settings = pt.GridScan(pipeline, dict(params), topics, qrels, metrics, dataframe=False, **options)
    rows = []
    for setting, measures in settings:
        for transformer, name, value in setting:  # the row's settings again: repr shows them
            transformer.set_parameter(name, value)
        row = {}
        for i, (transformer, name, value) in enumerate(setting):
            row[f"tran_{i}"] = repr(transformer)
            row[f"tran_{i}_{name}"] = value
        rows.append({**row, **measures})
    return pd.DataFrame(rows)


def per_query_values(runs: Mapping[str, pd.DataFrame], topics: pd.DataFrame, qrels: pd.DataFrame, measure) -> pd.DataFrame:
    """One row per query of ``topics``, one column per run of ``runs`` (name -> result frame, in
    that order): the runs' per-query values of ``measure``, from ``pt.Experiment(perquery=True)``."""
    frame = pt.Experiment([_str_ids(run) for run in runs.values()], _str_ids(topics), _str_ids(qrels), [measure],
                          names=list(runs), perquery=True)
    return frame.pivot_table(index="qid", columns="name", values="value")[list(runs)]


def mean_interval(values, confidence: float = 0.95) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean of ``values`` (missing ones dropped) and its t-based
    confidence interval, e.g. of per-query differences between two systems."""
    from scipy import stats

    values = pd.Series(values, dtype=float).dropna()
    if len(values) < 2:
        raise ValueError(f"an interval needs at least 2 values, got {len(values)}")
    mean = float(values.mean())
    half = float(stats.t.ppf((1 + confidence) / 2, len(values) - 1) * values.std(ddof=1) / math.sqrt(len(values)))
    return mean, mean - half, mean + half


def queries_needed(difference: float, sd_of_differences: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Queries a paired test needs to detect a mean difference of ``difference`` (two-sided
    ``alpha``, with probability ``power``) when the per-query differences have standard deviation
    ``sd_of_differences``: the normal approximation ``n = ((z(1 - alpha/2) + z(power)) sd / d)^2``."""
    from scipy import stats

    if difference <= 0 or sd_of_differences < 0:
        raise ValueError(f"difference must be > 0 and sd_of_differences >= 0, got {difference}, {sd_of_differences}")
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return math.ceil((z * sd_of_differences / difference) ** 2)


CONSTANT_QUERY = "what is it"
CONTROLS = ("real query", "another query's text", "constant query", "random order")


def query_controls(model, candidates: pd.DataFrame, qrels: pd.DataFrame, *, groups: Mapping[str, Any] | None = None,
                   measure=None, constant_query: str = CONSTANT_QUERY, shuffles: int = 100, seed: int = 0,
                   correction: str = "holm", listwise: bool | None = None,
                   run: pd.DataFrame | None = None, runs: Mapping[str, pd.DataFrame] | None = None) -> pd.DataFrame:
    """Does ``model`` read the query? Scores the same ``candidates`` (the frame ``model`` re-ranks:
    ``qid, query, docno`` and what else it needs, e.g. ``text``) three times: with each query's own
    text, with the next query's text (queries in order of appearance, the last taking the first's),
    and with ``constant_query`` for every query; and sets beside them a random order of the
    candidates (the mean over ``shuffles`` seeded shuffles). A control scores each distinct (query
    text, docno) pair once (a document that several queries share meets the constant query once),
    as a pointwise model scores a pair alike whichever query id it comes with; a listwise ranker
    (``listwise``) gets every query's whole list instead.

    Args:
        groups: query groups to report apart, name -> qids (e.g. ``{"near": ..., "far": ...}``);
            one group ``"all"`` by default.
        measure: an ir_measures measure (default ``RR``).
        correction: the multiple-comparison correction over every paired test of the table (the real
            query against each control in every group): ``"holm"`` (default) or any
            :func:`correct_pvalues` method.
        listwise: whether a document's score depends on the other documents of its query's list
            (RankGPT): then a control scores each query's list whole, not each distinct pair once.
            None: the model's own ``listwise`` attribute (True on the library's listwise rankers),
            else False.
        run: ``model``'s ranking of ``candidates`` with their own queries (``qid, docno, score``), where
            it is scored already (the pipeline's output that ``pt.Experiment`` evaluated): the real
            query's row reads it instead of scoring the candidates again. It must score every
            (qid, docno) pair of ``candidates``; its other rows are ignored.
        runs: every ranking's run, as :func:`control_runs` gives them (or runs made from them, such as
            their fusion with the first stage): nothing is scored, and ``model`` is not called.

    Returns:
        One row per group and ranking (``CONTROLS``): ``group, ranking, queries``, the measure's mean,
        ``difference`` (ranking minus the real query), ``p-value`` (paired t-test of the real query
        against the ranking, per query) and ``p-value corrected``. Empty ``candidates`` give an empty
        frame with these columns.

    A query without qrels is left out, with a warning naming it (``pt.Experiment`` leaves it out of its
    means too); a group's qids that are no query of the candidates are left out with a warning. A group
    that would give no p-value, so no verdict, is a ValueError naming it before anything is scored: one
    of no query or of one, or one whose every query scores alike in any order (a single candidate, or
    no relevant document among them; such queries elsewhere count as they score, 0 with RR).
    """
    from scipy import stats
    from ir_measures import RR  # pyterrier.measures' own

    measure = RR if measure is None else measure
    name = str(measure)
    columns = ["group", "ranking", "queries", name, "difference", "p-value", "p-value corrected"]
    _check_columns(candidates, ("qid", "query", "docno"), "candidates")
    _check_columns(qrels, ("qid", "docno", "label"), "qrels")
    if len(candidates) == 0:
        return pd.DataFrame(columns=columns)
    candidates = candidates.assign(qid=candidates["qid"].astype(str))
    qrels = qrels.assign(qid=qrels["qid"].astype(str))
    if candidates["qid"].nunique() < 2:
        raise ValueError("query_controls needs candidates of at least two queries (one lends its text to another)")
    given_qids = set(candidates["qid"])
    candidates = _judged_queries(candidates, qrels)
    _warn_normal_form_twins(candidates, qrels)
    topics = candidates[["qid", "query"]].drop_duplicates("qid")
    qids = pd.Index(topics["qid"])
    members = _group_members(groups or {"all": qids}, qids, given_qids, _unscorable_queries(candidates, qrels))
    if runs is None:
        runs = control_runs(model, candidates, constant_query=constant_query, listwise=listwise, run=run)
    values = pd.DataFrame({ranking: _values_per_query(_run_of_candidates(runs[ranking], candidates), qrels, measure)
                           .reindex(qids, fill_value=0.0) for ranking in CONTROLS[:3]})
    values["random order"] = _random_order_values(candidates, qids, qrels, measure, shuffles, seed)
    rows = []
    for group, chosen_qids in members.items():
        chosen = values.loc[values.index.isin(chosen_qids)]
        real = chosen["real query"].to_numpy()
        for ranking in CONTROLS:
            other = chosen[ranking].to_numpy()
            p = np.nan if ranking == "real query" else float(stats.ttest_rel(real, other).pvalue)
            rows.append((group, ranking, len(chosen), float(other.mean()), float(other.mean() - real.mean()), p))
    table = pd.DataFrame(rows, columns=columns[:-1])
    tested = table["ranking"].isin(CONTROLS[1:3])
    table["p-value corrected"] = np.nan
    table.loc[tested, "p-value corrected"] = correct_pvalues(table.loc[tested, "p-value"], correction)[1]
    return table


def control_runs(model, candidates: pd.DataFrame, *, constant_query: str = CONSTANT_QUERY,
                 listwise: bool | None = None, run: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """``model``'s runs (``qid, docno, score``) of ``candidates`` with each query's own text (``run`` where it is
    scored already), with the next query's text, and with ``constant_query``: what :func:`query_controls`
    evaluates (its ``runs``), for a caller that also derives runs from them (fusion with the first stage)."""
    listwise = bool(getattr(model, "listwise", False)) if listwise is None else listwise
    candidates = candidates.assign(qid=candidates["qid"].astype(str))
    topics = candidates[["qid", "query"]].drop_duplicates("qid")
    following = dict(zip(topics["qid"], np.roll(topics["query"].to_numpy(), -1)))
    queries = {"another query's text": candidates["qid"].map(following), "constant query": constant_query}
    real = _run_of_candidates(run, candidates) if run is not None else model(candidates)
    return {"real query": real, **{ranking: _scored_once(model, candidates.assign(query=query), not listwise)
                                   for ranking, query in queries.items()}}


def _judged_queries(candidates: pd.DataFrame, qrels: pd.DataFrame) -> pd.DataFrame:
    """The candidates of the queries that have qrels: one without is no query of the evaluation (as in
    ``pt.Experiment``, whose means leave it out), not a query whose every ranking scores 0."""
    from ._warn import warn

    judged = candidates["qid"].isin(set(qrels["qid"]))
    if not judged.any():
        raise ValueError(f"query_controls: no query of the candidates has qrels (candidates' qids e.g. "
                         f"{list(candidates['qid'].unique()[:3])}, qrels' {list(qrels['qid'].unique()[:3])})")
    if not judged.all():
        unjudged = list(candidates.loc[~judged, "qid"].unique())
        warn(f"query_controls: {len(unjudged)} of {candidates['qid'].nunique()} queries have no qrels and are left "
             f"out, as pt.Experiment leaves them out of its means: {_some(unjudged)}")
    return candidates[judged]


def _group_members(groups: Mapping[str, Any], qids: pd.Index, candidate_qids: set[str],
                   unscorable: dict[str, str]) -> dict[str, set[str]]:
    """Each group's qids among ``qids`` (the queries evaluated), checked before anything is scored: a
    group of no query, of one, or of ``unscorable`` queries only gives no p-value, so no verdict: a
    ValueError says which and why. Qids not among ``candidate_qids`` are named in a warning (those of
    the candidates left out for lacking qrels were named already)."""
    from ._warn import warn

    members = {}
    for group, given in groups.items():
        given = list(dict.fromkeys(str(q) for q in given))
        wanted = set(given)
        chosen = [q for q in qids if q in wanted]
        foreign = [q for q in given if q not in candidate_qids]
        if not chosen:
            raise ValueError(f"query_controls: group {group!r} names no query of the candidates that has qrels: "
                             f"{_some(given)}")
        if foreign:
            warn(f"query_controls: group {group!r}: {len(foreign)} of its {len(given)} qids "
                 f"{'is not a query' if len(foreign) == 1 else 'are not queries'} of the candidates, left out: "
                 f"{_some(foreign)}")
        if len(chosen) < 2:
            raise ValueError(f"query_controls: group {group!r} has 1 query ({chosen}): a paired test needs 2")
        if all(q in unscorable for q in chosen):
            reasons = "; ".join(f"{_some([q for q in chosen if unscorable[q] == why])}: {why}"
                                for why in dict.fromkeys(unscorable[q] for q in chosen))
            raise ValueError(f"query_controls: group {group!r} has no verdict to give: in none of its {len(chosen)} "
                             f"queries can one order of the candidates score better than another ({reasons})")
        members[group] = set(chosen)
    return members


def _unscorable_queries(candidates: pd.DataFrame, qrels: pd.DataFrame) -> dict[str, str]:
    """The queries whose every order of candidates scores alike (one candidate, or no relevant document
    among them), with why."""
    relevant = qrels[pd.to_numeric(qrels["label"], errors="coerce") > 0]
    pairs = pd.MultiIndex.from_arrays([relevant["qid"], relevant["docno"].astype(str)])
    found = pd.MultiIndex.from_arrays([candidates["qid"], candidates["docno"].astype(str)]).isin(pairs)
    per_query = candidates.assign(found=found).groupby("qid", sort=False).agg(
        docnos=("docno", "nunique"), found=("found", "any"))
    one = per_query.index[per_query["docnos"] < 2]
    unfound = per_query.index[~per_query["found"]]
    return {**{q: "no relevant document among its candidates" for q in unfound}, **{q: "one candidate" for q in one}}


def _some(qids: list, shown: int = 5) -> str:
    return f"{qids[:shown]}" + (f" and {len(qids) - shown} more" if len(qids) > shown else "")


def _run_of_candidates(run: pd.DataFrame, candidates: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``run`` that score ``candidates``; a ValueError naming the pairs it does not score."""
    _check_columns(run, ("qid", "docno", "score"), "run")
    pairs = candidates[["qid", "docno"]]
    scored = pairs.merge(run.assign(qid=run["qid"].astype(str))[["qid", "docno", "score"]].drop_duplicates(
        ["qid", "docno"]), on=["qid", "docno"], how="left")
    missing = scored[scored["score"].isna()]
    if len(missing):
        listed = ", ".join(f"({qid}, {docno})" for qid, docno in missing[["qid", "docno"]].head(5).itertuples(index=False))
        raise ValueError(f"run has no score for {len(missing)} of the candidates' (qid, docno) pairs, e.g. {listed}: "
                         "pass the model's run on these very candidates, or no run")
    return scored


def _scored_once(model, frame: pd.DataFrame, control: bool) -> pd.DataFrame:
    """``model``'s scores of ``frame`` (``qid, docno, score``); in a control, each distinct (query,
    docno) pair scored once: the constant query meets every document that several queries share
    (in the demo a third of the test candidates' rows) and would only get the same score again. The
    real query's frame goes to ``model`` as it is."""
    pairs = frame.drop_duplicates(["query", "docno"]) if control else frame
    if len(pairs) == len(frame):
        return model(frame)
    scores = model(pairs)[["query", "docno", "score"]]
    return frame[["qid", "query", "docno"]].merge(scores, on=["query", "docno"], how="inner")


def reads_the_query(controls: pd.DataFrame, *, tolerance: float = 0.1, alpha: float = 0.05) -> bool:
    """The verdict on a :func:`query_controls` table: in every group, the real query ranks above
    each control (another query's text, the constant query) with a corrected p-value below
    ``alpha``, and no control ranks more than ``tolerance`` above a random order. (A control below a
    random order is no sign of reading shapes: another query's text steers a model that reads it
    towards that query's answers, away from this query's.)"""
    if len(controls) == 0:
        raise ValueError("an empty controls table has no verdict")
    measure = controls.columns[3]
    for _, group in controls.groupby("group", sort=False):
        by_ranking = group.set_index("ranking")
        random = by_ranking.loc["random order", measure]
        for control in CONTROLS[1:3]:
            row = by_ranking.loc[control]
            if not (row["difference"] < 0 and row["p-value corrected"] < alpha
                    and row[measure] - random <= tolerance):
                return False
    return True


def _random_order_values(candidates, qids: pd.Index, qrels, measure, shuffles: int, seed: int) -> pd.Series:
    """Each query's mean ``measure`` over ``shuffles`` random orders of its candidates, evaluated
    at once: shuffle k of the i-th query under the query id ``i * shuffles + k``, a number (no qid's
    own characters can blur where one key ends)."""
    if shuffles < 1:
        raise ValueError(f"shuffles must be positive, got {shuffles}")
    rng = np.random.default_rng(seed)
    position = pd.Series(np.arange(len(qids)), index=qids)

    def per_shuffle(frame: pd.DataFrame) -> pd.DataFrame:
        copies = pd.concat([frame] * shuffles, ignore_index=True)
        shuffle = np.repeat(np.arange(shuffles), len(frame))
        return copies.assign(qid=(copies["qid"].map(position).to_numpy() * shuffles + shuffle).astype(str))

    run = per_shuffle(candidates[["qid", "docno"]]).assign(score=lambda f: rng.random(len(f)))
    values = _values_per_query(run, per_shuffle(qrels[qrels["qid"].isin(set(qids))]), measure)
    sums = values.groupby(values.index.astype(int) // shuffles).sum().reindex(range(len(qids)), fill_value=0.0)
    return pd.Series(sums.to_numpy() / shuffles, index=qids)


def _warn_normal_form_twins(candidates: pd.DataFrame, qrels: pd.DataFrame) -> None:
    """A warning naming relevant documents that are not among their query's candidates only
    because their docno differs in Unicode normal form (NFD in the qrels, NFC in the run): they
    look the same on screen yet count as not retrieved."""
    from .engine.frames import describe_twins, normal_form_twins
    from ._warn import warn

    relevant = qrels[pd.to_numeric(qrels["label"], errors="coerce") > 0]
    retrieved = candidates.groupby("qid")["docno"].agg(lambda docnos: set(docnos.astype(str)))
    twins, qids = [], []
    for qid, docnos in relevant.groupby("qid")["docno"]:
        present = retrieved.get(qid, set())
        found = normal_form_twins([d for d in dict.fromkeys(docnos.astype(str)) if d not in present], present)
        twins += found
        qids += [qid] * len(found)
    if twins:
        warn(f"query_controls: {len(twins)} relevant document(s) of the qrels (qids {sorted(set(qids))[:5]}) are "
             f"not among their query's candidates and count as not retrieved, though "
             f"{describe_twins(twins, 'in the qrels', 'in the candidates')}")


def _values_per_query(run: pd.DataFrame, qrels: pd.DataFrame, measure) -> pd.Series:
    """``measure`` of each query of ``run`` (``qid, docno, score``), by qid."""
    import ir_measures

    scored = pd.DataFrame({"query_id": run["qid"], "doc_id": run["docno"].astype(str), "score": run["score"]})
    judged = pd.DataFrame({"query_id": qrels["qid"], "doc_id": qrels["docno"].astype(str),
                           "relevance": qrels["label"].astype(int)})
    results = [(r.query_id, r.value) for r in ir_measures.iter_calc([measure], judged, scored)]
    return pd.Series(dict(results), dtype=float)


def _str_ids(frame_or_system):
    """Query ids and docnos as strings (a frame; a transformer's output): pt.Experiment matches a run
    with its qrels by value, so int docnos in the qrels and str ones in the run would silently match
    nothing (RR 0), as fit's validation already avoids."""
    from .engine.frames import str_ids

    if isinstance(frame_or_system, pd.DataFrame):
        return str_ids(frame_or_system)
    return frame_or_system >> pt.apply.generic(_str_ids)


def _check_columns(frame: pd.DataFrame, needed: Sequence[str], what: str) -> None:
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; it has {list(frame.columns)}")

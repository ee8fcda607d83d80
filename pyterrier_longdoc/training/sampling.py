"""Training instances from PyTerrier frames: a query, one positive, n hard negatives."""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyterrier as pt

from ..engine.frames import (column_texts, describe_twins, kind_of, normal_form_twins, numeric_column, require_frame,
                             sort_results)
from .._warn import warn

TextLookup = Callable[[list[str]], list[str]]


@dataclass(frozen=True)
class Instance:
    qid: str
    query: str
    docnos: tuple[str, ...]  # the positive first, then the negatives


def as_frame(candidates, topics: pd.DataFrame, name: str = "candidates") -> pd.DataFrame:
    """A result frame: the frame itself, or what a retrieval pipeline returns for the topics."""
    if isinstance(candidates, pd.DataFrame):
        return candidates
    if isinstance(candidates, pt.Transformer):
        frame = candidates(topics)
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"{name}: the pipeline {candidates!r} returned a {type(frame).__name__}, not a DataFrame")
        return frame
    raise TypeError(f"{name} must be a result DataFrame (qid, docno, rank or score) or a pt.Transformer that "
                    f"retrieves them for the topics, got {kind_of(candidates)}")


TEXT_FORMS = ("a pt.Transformer adding the text column to a frame of docnos (e.g. pt.text.get_text(dataset, "
              "'text')), a dict or pd.Series from docno to text, a DataFrame with docno and text columns, "
              "or a function of a list of docnos")


def check_text_source(text, text_field: str) -> None:
    """A clear error for a ``text=`` argument of a form :func:`text_lookup` cannot use."""
    if text is None or isinstance(text, (pt.Transformer, Mapping, pd.Series)) or callable(text):
        return
    if isinstance(text, pd.DataFrame):
        require_frame(text, "text", ["docno", text_field])
        return
    raise TypeError(f"text must be {TEXT_FORMS}; got {type(text).__name__}")


def text_lookup(candidates: pd.DataFrame, text_field: str, text) -> TextLookup:
    """docno -> text, from the candidates' own text column, then the user's lookup.

    ``text`` may be a pt.Transformer that adds ``text_field`` to a frame of docnos (such as
    ``pt.text.get_text(dataset, "text")``), a mapping or ``pd.Series`` from docno to text, a
    DataFrame with ``docno`` and ``text_field`` columns, or a function of a list of docnos.
    """
    check_text_source(text, text_field)
    known: dict[str, str] = {}
    blank: set[str] = set()  # docnos whose text in the candidates is None/NaN
    if text_field in candidates.columns:
        for docno, value in zip(candidates["docno"].astype(str), candidates[text_field]):
            if not isinstance(value, str) and pd.api.types.is_scalar(value) and pd.isna(value):
                blank.add(docno)
            else:
                known[docno] = value

    def lookup(docnos: list[str]) -> list[str]:
        missing = sorted({d for d in docnos if d not in known})
        if missing:
            known.update(_fetch(missing, text, text_field))
        absent = list(dict.fromkeys(d for d in docnos if d not in known))
        if absent:
            n_blank = len(blank & set(absent))
            where = (f"{n_blank} of them {'has' if n_blank == 1 else 'have'} None/NaN in the candidates' "
                     f"{text_field!r} column, the others are not in it" if n_blank
                     else f"they are not in the candidates' {text_field!r} column")
            source = "nor in the text= given" if text is not None else (
                f"pass text= {TEXT_FORMS}; inside a pipeline, whose fit passes only topics and qrels, give it "
                "when building the model: fit_options={'text': ...}")
            twins = normal_form_twins(absent, known)
            if twins:
                where += "; " + describe_twins(twins, "without text", "with text")
            raise ValueError(f"no {text_field!r} for documents {absent[:5]} ({len(absent)} in all): {where}; {source}")
        return [known[d] for d in docnos]

    return lookup


def _fetch(docnos: list[str], text, text_field: str) -> dict[str, str]:
    if text is None:
        return {}
    if isinstance(text, pt.Transformer):
        frame = text.transform(pd.DataFrame({"qid": "0", "query": "", "docno": docnos}))
        require_frame(frame, f"what text={text!r} returned", ["docno", text_field])
        return dict(zip(frame["docno"].astype(str), frame[text_field]))
    if isinstance(text, pd.DataFrame):
        text = pd.Series(text[text_field].to_numpy(), index=text["docno"].astype(str))
    if isinstance(text, pd.Series):
        text = text[~text.index.astype(str).duplicated()]
        text = dict(zip(text.index.astype(str), text.to_numpy()))
    if isinstance(text, Mapping):
        return {d: text[d] for d in docnos if d in text}
    fetched = list(text(docnos))
    if len(fetched) != len(docnos):
        raise ValueError(f"text={text!r} returned {len(fetched)} texts for {len(docnos)} docnos")
    return dict(zip(docnos, fetched))


def hard_negative_pools(topics: pd.DataFrame, qrels: pd.DataFrame, candidates: pd.DataFrame,
                        top_k: int) -> dict[str, tuple[list[str], list[str]]]:
    """Per qid: (positives, negatives from the top_k candidates that are not judged relevant)."""
    require_frame(topics, "topics", ["qid", "query"])
    require_frame(qrels, "qrels", ["qid", "docno", "label"])
    require_frame(candidates, "candidates", ["qid", "docno"])
    order = "rank" if "rank" in candidates.columns else "score"
    if order not in candidates.columns:
        raise ValueError(f"candidates need a 'rank' or 'score' column to take the top_k of each query; they have "
                         f"{list(candidates.columns)} (pt.model.add_ranks adds rank from score)")
    relevant = qrels[numeric_column(qrels, "label", "qrels") > 0]
    positives = relevant.groupby(relevant["qid"].astype(str))["docno"].apply(lambda d: sorted(d.astype(str)))
    ranked = candidates.assign(qid=candidates["qid"].astype(str), docno=candidates["docno"].astype(str),
                               **{order: numeric_column(candidates, order, "candidates")})
    ranked = sort_results(ranked)
    top = ranked.groupby("qid", sort=False).head(top_k)
    pools = {}
    for qid, docnos in top.groupby("qid", sort=False)["docno"]:
        pos = positives.get(qid, [])
        pools[qid] = (pos, [d for d in dict.fromkeys(docnos) if d not in set(pos)])
    return pools


def sampled_docnos(topics: pd.DataFrame, pools: dict[str, tuple[list[str], list[str]]]) -> list[str]:
    """Every docno training can sample: the positives and negatives of the usable queries."""
    docnos: dict[str, None] = {}
    for qid in topics["qid"].astype(str):
        pos, neg = pools.get(qid, ([], []))
        if pos and neg:
            docnos.update(dict.fromkeys(pos + neg))
    return list(docnos)


def sample_epoch(topics: pd.DataFrame, pools: dict[str, tuple[list[str], list[str]]], negatives: int,
                 rng: np.random.Generator) -> list[Instance]:
    """One instance per usable query, in a shuffled order; the same rng state gives the same epoch."""
    instances = []
    for qid, query in zip(topics["qid"].astype(str), topics["query"]):
        pos, neg = pools.get(qid, ([], []))
        if pos and neg:  # the others were reported by training_data
            chosen = rng.choice(len(neg), size=negatives, replace=len(neg) < negatives)
            instances.append(Instance(qid, query, (pos[rng.integers(len(pos))], *(neg[i] for i in chosen))))
    return [instances[i] for i in rng.permutation(len(instances))]


class Named:
    """What an error message names as the source of a bad value (``MaxP(...).fit``)."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


def checked_topics(topics, name: str, context) -> pd.DataFrame:
    """Topics with valid query text (lone surrogates replaced); errors name the rows."""
    require_frame(topics, name, ["qid", "query"])
    return topics.assign(query=column_texts(topics, "query", Named(f"{context!r} {name}")))


def checked_qrels(qrels, name: str) -> pd.DataFrame:
    """Qrels with numeric labels (numeric strings are read as numbers; errors name the rows) and
    one row per (qid, docno): a pair listed twice counts once, and a pair listed with different
    labels gets the largest, with a warning naming it."""
    require_frame(qrels, name, ["qid", "docno", "label"])
    qrels = qrels.assign(label=numeric_column(qrels, "label", name))
    key = qrels["qid"].astype(str) + "\t" + qrels["docno"].astype(str)
    if not key.duplicated().any():
        return qrels
    labels = qrels["label"].groupby(key.to_numpy(), sort=False)
    conflicting = labels.nunique()[lambda n: n > 1].index
    if len(conflicting):
        examples = ", ".join("qid={!r} docno={!r} labels {}".format(*k.split("\t", 1), labels.get_group(k).tolist())
                             for k in conflicting[:3])
        warn(f"{name}: {len(conflicting)} (qid, docno) pairs are judged more than once with different "
             f"labels (e.g. {examples}); each keeps its largest label")
    order = np.argsort(-qrels["label"].to_numpy(), kind="stable")  # the largest label of a pair first
    return qrels.iloc[np.sort(order[~key.iloc[order].duplicated().to_numpy()])]


@dataclass
class TrainingData:
    """Checked training input: topics, qrels, candidates, each usable query's (positives,
    negatives) and where document text comes from."""

    topics: pd.DataFrame
    qrels: pd.DataFrame
    candidates: pd.DataFrame
    pools: dict[str, tuple[list[str], list[str]]]
    lookup: TextLookup


def training_data(topics, qrels, candidates, *, top_k: int, text, text_field: str, context) -> TrainingData:
    """The prologue of every training loop: inputs checked with errors naming the rows, the hard
    negative pools, and one warning for the queries that cannot be trained on (an error if none can)."""
    topics = checked_topics(topics, "topics", context)
    qrels = checked_qrels(qrels, "qrels")
    frame = as_frame(candidates, topics)
    pools = hard_negative_pools(topics, qrels, frame, top_k)
    usable = {qid: pools[qid] for qid in topics["qid"].astype(str) if qid in pools and all(pools[qid])}
    skipped = len(topics) - len(usable)
    if not usable:
        raise ValueError("no training query has both a relevant document (qrels label > 0) and a negative candidate")
    if skipped:
        without: dict[str, list[str]] = {"a judged-relevant document": [], "a negative among their candidates": []}
        for qid in topics["qid"].astype(str):
            if qid not in usable:
                pos, neg = pools.get(qid, ([], []))
                without["a judged-relevant document" if not pos else "a negative among their candidates"].append(qid)
        named = "; ".join(f"{len(qids)} without {what} (e.g. {', '.join(map(repr, qids[:5]))})"
                          for what, qids in without.items() if qids)
        warn(f"{skipped} of {len(topics)} training queries were skipped: {named}")
    return TrainingData(topics, qrels, frame, usable, text_lookup(frame, text_field, text))


def split_validation(topics: pd.DataFrame, qrels: pd.DataFrame, fraction: float,
                     seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(training topics, validation topics): ``fraction`` of the topics that have a judged-relevant
    document (at least one), drawn by ``seed`` whatever the topics' order; the rest train."""
    qids = topics["qid"].astype(str)
    judged = set(qrels.loc[numeric_column(qrels, "label", "qrels") > 0, "qid"].astype(str))
    eligible = sorted(set(qids) & judged)
    count = max(1, int(round(fraction * len(eligible))))
    if len(eligible) - count < 1:
        raise ValueError(f"valid_fraction={fraction} leaves no training query: {len(eligible)} topics have a "
                         "judged-relevant document")
    order = np.random.default_rng([seed, len(eligible)]).permutation(len(eligible))
    held_out = {eligible[i] for i in order[:count]}
    mask = qids.isin(held_out).to_numpy()
    return topics[~mask].reset_index(drop=True), topics[mask].reset_index(drop=True)

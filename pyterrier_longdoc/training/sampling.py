"""Training instances from PyTerrier frames: a query, one positive, n hard negatives."""
from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyterrier as pt

TextLookup = Callable[[list[str]], list[str]]


@dataclass(frozen=True)
class Instance:
    qid: str
    query: str
    docnos: tuple[str, ...]  # the positive first, then the negatives


def as_frame(candidates, topics: pd.DataFrame) -> pd.DataFrame:
    """A result frame: the frame itself, or what a retrieval pipeline returns for the topics."""
    if isinstance(candidates, pd.DataFrame):
        return candidates
    if isinstance(candidates, pt.Transformer):
        return candidates(topics)
    raise TypeError(f"candidates must be a result DataFrame or a pt.Transformer, got {type(candidates).__name__}")


def text_lookup(candidates: pd.DataFrame, text_field: str, text) -> TextLookup:
    """docno -> text, from the candidates' own text column, then the user's lookup.

    ``text`` may be a pt.Transformer that adds ``text_field`` to a frame of docnos (such as
    ``pt.text.get_text(dataset, "text")``), a mapping, or a function of a list of docnos.
    """
    known: dict[str, str] = {}
    if text_field in candidates.columns:
        known = dict(zip(candidates["docno"].astype(str), candidates[text_field]))

    def lookup(docnos: list[str]) -> list[str]:
        missing = sorted({d for d in docnos if d not in known})
        if missing:
            known.update(_fetch(missing, text, text_field))
        absent = [d for d in docnos if d not in known]
        if absent:
            raise ValueError(f"no {text_field!r} for documents {absent[:5]} ({len(absent)} in all): they are not in the "
                             "candidates' text column; pass text=pt.text.get_text(dataset, ...), a dict or a function")
        return [known[d] for d in docnos]

    return lookup


def _fetch(docnos: list[str], text, text_field: str) -> dict[str, str]:
    if text is None:
        return {}
    if isinstance(text, pt.Transformer):
        frame = text(pd.DataFrame({"qid": "0", "query": "", "docno": docnos}))
        return dict(zip(frame["docno"].astype(str), frame[text_field]))
    if isinstance(text, Mapping):
        return {d: text[d] for d in docnos if d in text}
    return dict(zip(docnos, text(docnos)))


def hard_negative_pools(topics: pd.DataFrame, qrels: pd.DataFrame, candidates: pd.DataFrame,
                        top_k: int) -> dict[str, tuple[list[str], list[str]]]:
    """Per qid: (positives, negatives from the top_k candidates that are not judged relevant)."""
    for frame, name, columns in ((topics, "topics", ["qid", "query"]), (qrels, "qrels", ["qid", "docno", "label"]),
                                 (candidates, "candidates", ["qid", "docno"])):
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise ValueError(f"{name} lacks columns {missing}; it has {list(frame.columns)}")
    relevant = qrels[qrels["label"] > 0]
    positives = relevant.groupby(relevant["qid"].astype(str))["docno"].apply(lambda d: sorted(d.astype(str)))
    ranked = candidates.assign(qid=candidates["qid"].astype(str), docno=candidates["docno"].astype(str))
    ranked = ranked.sort_values(["qid", "rank"] if "rank" in ranked.columns else ["qid", "score"],
                                ascending=[True, "rank" in ranked.columns], kind="stable")
    top = ranked.groupby("qid", sort=False).head(top_k)
    pools = {}
    for qid, docnos in top.groupby("qid", sort=False)["docno"]:
        pos = positives.get(qid, [])
        pools[qid] = (pos, [d for d in dict.fromkeys(docnos) if d not in set(pos)])
    return pools


def sample_epoch(topics: pd.DataFrame, pools: dict[str, tuple[list[str], list[str]]], negatives: int,
                 rng: np.random.Generator) -> list[Instance]:
    """One instance per usable query, in a shuffled order; the same rng state gives the same epoch."""
    instances = []
    skipped = 0
    for qid, query in zip(topics["qid"].astype(str), topics["query"]):
        pos, neg = pools.get(qid, ([], []))
        if not pos or not neg:
            skipped += 1
            continue
        chosen = rng.choice(len(neg), size=negatives, replace=len(neg) < negatives)
        instances.append(Instance(qid, query, (pos[rng.integers(len(pos))], *(neg[i] for i in chosen))))
    if skipped:
        warnings.warn(f"{skipped} of {len(topics)} training queries have no judged-relevant document or no "
                      "negative among their candidates and were skipped")
    if not instances:
        raise ValueError("no training query has both a relevant document (qrels label > 0) and a negative candidate")
    return [instances[i] for i in rng.permutation(len(instances))]

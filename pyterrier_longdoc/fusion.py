"""Fusion with the first stage: the first stage's score and the re-ranker's, combined per query.

A re-ranker replaces the first stage's scores; the first stage (BM25) often knows something the
re-ranker does not (an exact term match, a rare name). Interpolating the two keeps both, as
TREC re-ranking runs, Pyserini's re-ranking recipes and FlexNeuART's final linear rankers do. For a
document ``d`` of query ``q``::

    fused(q, d) = weight * norm_q(reranker(q, d)) + (1 - weight) * norm_q(first_stage(q, d))

``norm_q`` puts each score on a common scale over that query's candidates:

- ``"minmax"`` (the default): ``(s - min_q) / (max_q - min_q)``, in [0, 1]; 0 where all of the
  query's candidates score alike (that score then orders nothing);
- ``"zscore"``: ``(s - mean_q) / std_q``; 0 where the scores do not vary.

``weight`` 1 is the re-ranker alone, 0 the first stage alone. ``FirstStageFusion.fit`` chooses it on
validation queries from a grid (0, 0.1, ..., 1): the weight with the best mean metric, ties going to
the re-ranker (the largest such weight), so on the validation queries the fusion is never below
either part. The choice is saved with a pyterrier_longdoc model (``model.fusion``, in its
``config.json``), and ``FirstStageFusion(model)`` applies it.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import pyterrier as pt

__all__ = ["Fusion", "FirstStageFusion", "NORMALISATIONS", "WEIGHTS", "choose_weight", "fuse_runs"]

NORMALISATIONS = ("minmax", "zscore")
WEIGHTS = tuple(round(i / 10, 1) for i in range(11))  # the re-ranker's weight, from the first stage alone to itself


@dataclasses.dataclass(frozen=True)
class Fusion:
    """A fusion with the first stage, as chosen on validation and saved with a model (plain JSON values).

    Attributes:
        weight: the re-ranker's share, in [0, 1] (the first stage gets ``1 - weight``).
        normalisation: the per-query normalisation of both scores (``NORMALISATIONS``).
        metric: what the weight was chosen by (None where the weight was given, not chosen).
        queries: on how many validation queries.
        values: the metric at each weight tried (``{"0.0": first stage alone, ..., "1.0": the re-ranker
            alone}``).
    """

    weight: float
    normalisation: str = "minmax"
    metric: str | None = None
    queries: int | None = None
    values: dict[str, float] | None = None

    def __post_init__(self):
        if isinstance(self.weight, bool) or not isinstance(self.weight, (int, float)) or not 0 <= self.weight <= 1:
            raise ValueError(f"the fusion weight is the re-ranker's share of the fused score, a number in [0, 1]; got "
                             f"{self.weight!r}")
        if self.normalisation not in NORMALISATIONS:
            raise ValueError(f"normalisation must be one of {', '.join(NORMALISATIONS)}; got {self.normalisation!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: dict[str, Any], where: str = "fusion") -> Fusion:
        if not isinstance(values, dict) or "weight" not in values:
            raise ValueError(f"{where}: a fusion needs at least a 'weight'; got {values!r}")
        unknown = set(values) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise ValueError(f"{where}: unknown fusion fields {sorted(unknown)}")
        return cls(**values)

    def describe(self) -> str:
        """One sentence on what the fusion is and, where it was chosen, on what."""
        text = (f"weight {self.weight:g} on the re-ranker's score and {1 - self.weight:g} on the first stage's, each "
                f"{self.normalisation}-normalised per query")
        if self.values:
            text += (f"; chosen on {self.queries} validation queries by {self.metric}: the first stage alone "
                     f"{self.values[_key(0.0)]:.3f}, the re-ranker alone {self.values[_key(1.0)]:.3f}, fused "
                     f"{self.values[_key(self.weight)]:.3f}")
        return text


def normalised(scores: pd.Series, qids: pd.Series, normalisation: str = "minmax") -> pd.Series:
    """Each query's scores on a common scale (see the module doc); 0 where a query's scores do not vary."""
    groups = scores.astype(float).groupby(qids.to_numpy(), sort=False)
    if normalisation == "minmax":
        low, spread = groups.transform("min"), groups.transform("max") - groups.transform("min")
    elif normalisation == "zscore":
        low, spread = groups.transform("mean"), groups.transform("std", ddof=0).fillna(0.0)
    else:
        raise ValueError(f"normalisation must be one of {', '.join(NORMALISATIONS)}; got {normalisation!r}")
    return ((scores - low) / spread.where(spread > 0, np.inf)).fillna(0.0)


def fuse_runs(first_stage: pd.DataFrame, reranked: pd.DataFrame, weight: float,
              normalisation: str = "minmax") -> pd.DataFrame:
    """``reranked`` (the re-ranker's run: ``qid, docno, score`` and any other columns) with ``score`` the fusion
    with ``first_stage``'s score of the same (qid, docno) and ``rank`` recomputed. Every pair of ``reranked``
    must have a first-stage score, and each pair must appear once."""
    Fusion(weight, normalisation)  # checks both
    _check_first_stage(first_stage, "the first stage's run")
    for frame, what in ((first_stage, "the first stage's run"), (reranked, "the re-ranker's run")):
        twice = frame[frame.duplicated(["qid", "docno"], keep=False)]
        if len(twice):
            raise ValueError(f"{what} lists {len(twice)} rows of a (qid, docno) pair that appears more than once, "
                             f"e.g. {_pairs(twice)}: fusion reads one score per pair")
    key = ["qid", "docno"]
    first = first_stage[key + ["score"]].astype({"qid": str, "docno": str}).rename(columns={"score": "_first"})
    merged = reranked.astype({"qid": str, "docno": str}).merge(first, on=key, how="left")
    missing = merged[merged["_first"].isna()]
    if len(missing):
        raise ValueError(f"the first stage's run has no score for {len(missing)} of the re-ranked (qid, docno) pairs, "
                         f"e.g. {_pairs(missing)}")
    merged["score"] = (weight * normalised(merged["score"], merged["qid"], normalisation)
                       + (1 - weight) * normalised(merged["_first"], merged["qid"], normalisation))
    merged = merged.drop(columns=["_first", "rank"], errors="ignore")
    return pt.model.add_ranks(merged)


def choose_weight(first_stage: pd.DataFrame, reranked: pd.DataFrame, qrels: pd.DataFrame, *, metric: str = "RR@10",
                  weights: Sequence[float] = WEIGHTS, normalisation: str = "minmax") -> Fusion:
    """The weight of ``weights`` whose fused run has the best mean ``metric`` (an ir_measures name) over the
    queries of ``reranked`` that ``qrels`` judges; ties go to the re-ranker (the largest weight). ``weights`` must
    hold 0 and 1, so that both parts alone are measured too."""
    import ir_measures

    weights = sorted({float(w) for w in weights})
    if 0.0 not in weights or 1.0 not in weights:
        raise ValueError(f"weights must include 0 (the first stage alone) and 1 (the re-ranker alone); got {weights}")
    measure = ir_measures.parse_measure(metric)
    qids = set(reranked["qid"].astype(str))
    judged = qrels.assign(qid=qrels["qid"].astype(str), docno=qrels["docno"].astype(str))
    judged = judged[judged["qid"].isin(qids)]
    if judged.empty:
        raise ValueError(f"no query of the {len(qids)} re-ranked has qrels: the fusion weight cannot be chosen")
    judged = judged.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    values = {}
    for weight in weights:
        run = fuse_runs(first_stage, reranked, weight, normalisation)
        run = run.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
        values[_key(weight)] = float(ir_measures.calc_aggregate([measure], judged, run)[measure])
    best = max(values.values())
    chosen = max(w for w in weights if values[_key(w)] >= best - 1e-12)
    return Fusion(chosen, normalisation, metric, int(judged["query_id"].nunique()), values)


class FirstStageFusion(pt.Estimator):
    """``reranker`` fused with the first stage's ``score`` per query: in a pipeline,
    ``bm25 % 10 >> TextLoader(docs) >> FirstStageFusion(model)``. For a document ``d`` of query ``q``,
    ``weight * norm_q(reranker(q, d)) + (1 - weight) * norm_q(first_stage(q, d))``, with ``norm_q`` a
    per-query normalisation of each score over the query's candidates (``"minmax"``: into [0, 1];
    ``"zscore"``; 0 where a query's scores do not vary).

    Its input is the re-ranker's plus the first stage's ``score`` column (what a retriever returns); its output
    is the re-ranker's with ``score`` the fused score and ``rank`` recomputed.

    Args:
        reranker: any PyTerrier re-ranker (a pyterrier_longdoc model, ``LongDoc``, a monoT5 ...).
        weight: the re-ranker's share in [0, 1]; None takes the weight saved with a pyterrier_longdoc model
            (``reranker.fusion``, chosen on validation by the recipe or by ``fit``), and is an error where
            there is none. ``pt.GridSearch`` tunes it (``{fusion: {"weight": [0.3, 0.5, 0.7]}}``).
        normalisation: ``"minmax"`` or ``"zscore"``; None: the saved fusion's, else ``"minmax"``.
        metric, weights: what ``fit`` chooses the weight by, and among.

    ``fit(candidates, qrels)`` (or ``fit(train, train_qrels, valid, valid_qrels)``, as ``pt.Estimator``; the
    validation pair is used where given) chooses the weight on those candidates: give it queries the re-ranker
    was not trained on. It does not train the re-ranker. ``save_pretrained(path)`` saves the re-ranker with the
    chosen fusion.
    """

    # the fused score of a document depends on the other candidates of its query (the per-query normalisation):
    # evaluation.query_controls scores each query's list whole
    listwise = True

    def __init__(self, reranker: pt.Transformer, weight: float | None = None, normalisation: str | None = None, *,
                 metric: str = "RR@10", weights: Sequence[float] = WEIGHTS):
        saved = getattr(reranker, "fusion", None)
        if weight is None and saved is not None:
            weight = saved.weight
        if weight is None:
            raise ValueError(f"{reranker!r} has no fusion weight saved with it: pass weight= (the re-ranker's share "
                             "in [0, 1]), or choose one on validation queries with "
                             "FirstStageFusion(model, weight=0.5).fit(valid_candidates, valid_qrels)")
        self.reranker, self.metric, self.weights = reranker, metric, tuple(weights)
        self._fusion = Fusion(weight, normalisation or (saved.normalisation if saved is not None else "minmax"))
        if saved is not None and (saved.weight, saved.normalisation) == (self._fusion.weight,
                                                                         self._fusion.normalisation):
            self._fusion = saved  # what it was chosen on comes along

    @property
    def fusion(self) -> Fusion:
        """The weight and normalisation in use, with what they were chosen on (``fit``) where they were."""
        return self._fusion

    @property
    def weight(self) -> float:
        return self._fusion.weight

    @weight.setter
    def weight(self, value: float) -> None:  # checked when set, as pt.GridSearch sets it
        self._fusion = Fusion(value, self._fusion.normalisation)

    @property
    def normalisation(self) -> str:
        return self._fusion.normalisation

    @normalisation.setter
    def normalisation(self, value: str) -> None:
        self._fusion = Fusion(self._fusion.weight, value)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        _check_first_stage(inp, f"{self!r}'s input")
        reranked = self.reranker(inp)
        if len(inp) == 0:
            return reranked
        return fuse_runs(inp, reranked, self.weight, self.normalisation)

    def fit(self, topics_or_res_tr: pd.DataFrame, qrels_tr: pd.DataFrame, topics_or_res_va: pd.DataFrame | None = None,
            qrels_va: pd.DataFrame | None = None) -> FirstStageFusion:
        """Chooses the weight on the validation candidates (the first pair where no validation is given)."""
        validation = topics_or_res_va is not None
        candidates, qrels = (topics_or_res_tr, qrels_tr) if topics_or_res_va is None else (topics_or_res_va, qrels_va)
        if qrels is None:
            raise ValueError("fit needs the qrels of the candidates it chooses the weight on")
        _check_first_stage(candidates, f"{self!r}.fit's {'validation ' if validation else ''}candidates")
        if len(candidates) == 0:
            raise ValueError(f"{self!r}.fit: no candidates to choose the weight on")
        self._fusion = choose_weight(candidates, self.reranker(candidates), qrels, metric=self.metric,
                                     weights=self.weights, normalisation=self.normalisation)
        return self

    def save_pretrained(self, path) -> None:
        """Saves the re-ranker with this fusion (``reranker.fusion``): ``FirstStageFusion(from_pretrained(path))``
        is this fusion again."""
        if not hasattr(self.reranker, "save_pretrained"):
            raise TypeError(f"{self.reranker!r} has no save_pretrained: save it your way and keep {self.fusion}")
        setattr(self.reranker, "fusion", self.fusion)  # noqa: B010 - any re-ranker that saves its fusion
        self.reranker.save_pretrained(path)

    def __repr__(self) -> str:
        return f"FirstStageFusion({self.reranker!r}, weight={self.weight:g}, normalisation={self.normalisation!r})"


def _check_first_stage(frame, what: str) -> None:
    """The first stage's scores are there and are numbers: a clear error naming the problem and the rows."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{what} must be a DataFrame of candidates, got {type(frame).__name__}")
    missing = [c for c in ("qid", "docno", "score") if c not in frame.columns]
    if "score" in missing:
        raise ValueError(f"{what} has no 'score' column: fusion needs the first stage's score of each candidate, as "
                         "a retriever returns it (e.g. bm25 % 10 >> TextLoader(docs) >> FirstStageFusion(model)); a "
                         f"re-ranked run read without scores cannot be fused. Its columns: {list(frame.columns)}")
    if missing:
        raise ValueError(f"{what} lacks the columns {missing}; its columns: {list(frame.columns)}")
    scores = pd.to_numeric(frame["score"], errors="coerce")
    bad = frame[scores.isna() | ~np.isfinite(scores.fillna(0.0).to_numpy(dtype=float))]
    if len(bad):
        raise ValueError(f"{what}: {len(bad)} rows have no finite first-stage score, e.g. {_pairs(bad)}")


def _pairs(frame: pd.DataFrame) -> str:
    shown = [f"(qid {q!r}, docno {d!r})" for q, d in frame[["qid", "docno"]].head(3).itertuples(index=False)]
    return ", ".join(shown) + (f" and {len(frame) - 3} more" if len(frame) > 3 else "")


def _key(weight: float) -> str:
    return f"{float(weight):.1f}" if round(weight, 1) == weight else repr(float(weight))

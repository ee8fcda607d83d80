"""BeST: query-driven segment selection for training long-document rankers.

Kim, Rahimi, Bonab & Allan, "Query-driven Segment Selection for Ranking Long Documents"
(CIKM 2021). Every judged document is cut into segments (the windows the model reads).
Iteration 0 trains on *all* segments of each positive and negative document, each segment
inheriting its document's label. Every later iteration re-scores every segment with the
current model, keeps the best segment of each positive and negative document, and trains a
*fresh* model on those. A validation metric picks the best iteration and stops the loop when
it no longer improves. At inference every segment is scored and the best one decides (MaxP).

Segments are rows of an ordinary candidates frame (docno ``"<docno>#<k>"``, the segment text
in a lookup), so each iteration is one call of :func:`~pyterrier_longdoc.training.fit` and
no training loop is duplicated here.
"""
from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from pathlib import Path

import numpy as np
import pandas as pd

from ..engine.chunking import window_starts
from ..engine.text import text_offsets, without_lone_surrogates
from .fit_loop import evaluate, fit, validation_data
from .sampling import Named, text_lookup, training_data
from .scorer import Scorer

SEGMENT_SEPARATOR = "#"
# the models BeST applies to: trained on one segment, ranking by the best segment
_SEGMENT_MODELS = ("firstp", "maxp")


@dataclass
class BestResult:
    """What :func:`fit_best` returns.

    Attributes:
        reranker: the chosen model, ready for inference: a MaxP that scores every segment
            (a FirstP-trained model is returned as the MaxP with the same weights).
        iterations: one row per iteration: ``iteration``, ``segments`` (training segment rows),
            ``steps``, ``loss`` (mean over the iteration's steps), the validation metric when
            validating, and ``chosen`` (True for the returned iteration).
        history: every iteration's :func:`fit` history, with an ``iteration`` column.
        selections: the segments the last selection kept: ``qid, docno, segment, score,
            relevant`` (empty when only iteration 0 ran).
    """

    reranker: object
    iterations: pd.DataFrame
    history: pd.DataFrame
    selections: pd.DataFrame


def segment_id(docno: str, k: int) -> str:
    return f"{docno}{SEGMENT_SEPARATOR}{k}"


def parent_docno(segment_docno: str) -> str:
    """``"D12#3"`` -> ``"D12"`` (the last ``#`` separates, so docnos may contain ``#``)."""
    return segment_docno.rsplit(SEGMENT_SEPARATOR, 1)[0]


def segment_documents(reranker: Scorer, docnos: Iterable[str], texts: Iterable[str]) -> pd.DataFrame:
    """Cut documents into the segments ``reranker`` reads: its (window, stride) over the
    first ``max_doc_tokens`` tokens, every window kept (``max_chunks`` does not apply, so a
    FirstP gets all of its 477-token windows, not just the first).

    A segment is the original text between the character offsets of its first and last
    token; a window that starts or ends inside a word is trimmed to whole words, so the
    segment re-tokenizes to at most ``window`` tokens. Returns ``docno, segment, seg_docno,
    text, char_start, char_end``; every document has at least one segment.
    """
    model = reranker.model
    chunking = model.chunking
    encode = text_offsets(model.tokenizer)  # special-token strings and lone surrogates read as text
    if encode is None:
        raise ValueError(f"cutting documents into segments needs character offsets, which the slow "
                         f"{type(model.tokenizer).__name__} cannot give: use a model with a fast tokenizer")
    rows = []
    for docno, text in zip(docnos, texts):
        text = without_lone_surrogates(text)  # U+FFFD, one character for one: the offsets stay
        for k, (start, end) in enumerate(_segment_spans(text, encode, chunking, model.layout)):
            rows.append((docno, k, segment_id(docno, k), text[start:end], start, end))
    return pd.DataFrame(rows, columns=["docno", "segment", "seg_docno", "text", "char_start", "char_end"])


def _segment_spans(text: str, encode, chunking, layout) -> list[tuple[int, int]]:
    offsets, words = encode(text)
    offsets = offsets[:chunking.max_doc_tokens]
    n = len(offsets)
    if n == 0:
        return [(0, len(text))]
    words = words[:n]
    window = chunking.doc_window(layout)
    stride = chunking.stride or window
    starts_word = [i == 0 or words is None or words[i] is None or words[i] != words[i - 1] for i in range(n)]
    starts_word.append(True)  # the end of the text ends a word
    spans = []
    for s in window_starts(n, window, stride):
        e = min(s + window, n)
        a, b = s, e
        while a < b and not starts_word[a]:
            a += 1
        while b > a and not starts_word[b]:
            b -= 1
        if a >= b:  # one word longer than the window: keep the raw token span
            a, b = s, e
        spans.append((offsets[a][0], offsets[b - 1][1]))
    return spans


def fit_best(model_factory: Callable[[], object], topics: pd.DataFrame, qrels: pd.DataFrame, candidates, *,
             iterations: int = 3, top_k: int = 100, text=None,
             valid_topics: pd.DataFrame | None = None, valid_qrels: pd.DataFrame | None = None,
             valid_candidates=None, valid_metric: str = "nDCG@10", valid_text=None, patience: int = 1,
             **fit_options) -> BestResult:
    """Train with BeST segment selection; see the module doc.

    Args:
        model_factory: returns a fresh, untrained FirstP or MaxP (e.g.
            ``lambda: MaxP("bert-base-uncased", window=150, stride=100)``); called once per
            iteration. Its chunking defines the segments.
        topics, qrels, candidates, top_k, text: as for :func:`fit`: the positives are the qrels'
            relevant documents, the negatives the ``top_k`` candidates not judged relevant.
        iterations: training rounds, iteration 0 (all segments) included.
        valid_*: when ``valid_topics`` is given, ``valid_metric`` of the full-document ranking
            (MaxP over all segments) is computed after each iteration; the best iteration is
            returned and the loop stops after ``patience`` iterations without improvement.
            ``valid_text`` (default ``text``) supplies validation document text.
        **fit_options: passed to every :func:`fit` call (``epochs``, ``lr``, ``seed``, ...).
            ``checkpoint_dir`` gets one sub-directory per iteration, so an interrupted run
            called again resumes where it stopped.
    """
    if iterations < 1:
        raise ValueError(f"iterations must be at least 1 (iteration 0 trains on all segments), got {iterations}")
    if patience < 1:
        raise ValueError(f"patience must be at least 1, got {patience}")
    checkpoint_dir = fit_options.pop("checkpoint_dir", None)

    reranker = _fresh(model_factory)
    context = Named(f"fit_best({reranker!r})")
    data = training_data(topics, qrels, candidates, top_k=top_k, text=text, text_field=reranker.text_field,
                         context=context)
    lookup = data.lookup
    judged = _judged_segments(reranker, data)
    pairs, per_doc, segment_text = judged.pairs, judged.per_doc, judged.segment_text

    valid_lookup = lookup if valid_text is None else text_lookup(data.candidates, reranker.text_field, valid_text)
    validation = validation_data(reranker, valid_topics, valid_qrels, valid_candidates, valid_metric, valid_lookup,
                                 context)
    validating = validation is not None

    rows, histories = [], []
    best_value, best_model, best_iteration, since_best = -np.inf, None, 0, 0
    selections = pd.DataFrame(columns=["qid", "docno", "segment", "score", "relevant"])
    chosen = {key: per_doc[key[1]] for key in ((q, d) for q, d, _ in pairs)}  # iteration 0: all segments
    for iteration in range(iterations):
        if iteration > 0:
            selections = _select(reranker, pairs, per_doc, segment_text, judged.queries)
            chosen = {(q, d): [segment_id(d, k)] for q, d, k in zip(selections["qid"], selections["docno"],
                                                                     selections["segment"])}
            reranker = _fresh(model_factory)
        seg_qrels, seg_candidates = _training_frames(pairs, chosen, judged.labels, judged.rank)
        options = dict(fit_options)
        if checkpoint_dir is not None:
            options["checkpoint_dir"] = Path(checkpoint_dir) / f"iteration-{iteration}"
        history = fit(reranker, judged.topics, seg_qrels, seg_candidates, text=segment_text,
                      top_k=max(1, int(seg_candidates.groupby("qid").size().max())) if len(seg_candidates) else 1,
                      **options)
        histories.append(history.assign(iteration=iteration))
        row = {"iteration": iteration, "segments": len(seg_qrels) + len(seg_candidates), "steps": len(history),
               "loss": float(history["loss"].mean()) if len(history) else float("nan")}
        if validation is not None:
            inference = as_maxp(reranker)
            value = evaluate(inference, *validation, valid_metric, valid_lookup)
            row[valid_metric] = value
            if value > best_value:
                best_value, best_model, best_iteration, since_best = value, inference, iteration, 0
            else:
                since_best += 1
        else:
            best_model, best_iteration = reranker, iteration
        rows.append(row)
        if validating and since_best >= patience:
            break
    table = pd.DataFrame(rows)
    table["chosen"] = table["iteration"] == best_iteration
    if not validating:  # the one model trained
        best_model = as_maxp(reranker)
    return BestResult(best_model, table, pd.concat(histories, ignore_index=True), selections)


@dataclass
class _Judged:
    """The judged documents of the usable queries, cut into segments."""

    pairs: list               # (qid, docno, positive)
    labels: dict              # (qid, docno) -> label, of the positives
    rank: dict                # (qid, docno) -> candidate rank, of the negatives
    queries: dict             # qid -> query
    topics: pd.DataFrame      # the training topics
    segment_text: dict        # segment docno -> text
    per_doc: dict             # docno -> its segment docnos


def _judged_segments(reranker: Scorer, data) -> _Judged:
    topics, qrels, usable = data.topics, data.qrels, data.pools
    pairs = [(qid, docno, True) for qid, (pos, _) in usable.items() for docno in pos]
    pairs += [(qid, docno, False) for qid, (_, neg) in usable.items() for docno in neg]
    docnos = list(dict.fromkeys(d for _, d, _ in pairs))
    segments = segment_documents(reranker, docnos, data.lookup(docnos))
    return _Judged(
        pairs=pairs,
        labels={(str(q), str(d)): int(label) for q, d, label in zip(qrels["qid"], qrels["docno"], qrels["label"])},
        rank={(qid, docno): r for qid, (_, neg) in usable.items() for r, docno in enumerate(neg)},
        queries=dict(zip(topics["qid"].astype(str), topics["query"])),
        topics=topics[topics["qid"].astype(str).isin(set(usable))],
        segment_text=dict(zip(segments["seg_docno"], segments["text"])),
        per_doc={d: list(g) for d, g in segments.groupby("docno", sort=False)["seg_docno"]})


def _fresh(model_factory):
    reranker = model_factory()
    name = getattr(reranker, "name", None)
    if name not in _SEGMENT_MODELS:
        raise ValueError(f"BeST trains on single segments and ranks by the best one: model_factory must return a "
                         f"FirstP or MaxP, got {type(reranker).__name__}")
    return reranker


def _training_frames(pairs, chosen: Mapping, labels: Mapping, rank: Mapping) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Segment qrels (each positive's chosen segments, with its label) and segment candidates
    (each negative's chosen segments, ranked as their document)."""
    qrel_rows, candidate_rows = [], []
    for qid, docno, positive in pairs:
        for seg in chosen[(qid, docno)]:
            if positive:
                qrel_rows.append((qid, seg, labels[(qid, docno)]))
            else:
                candidate_rows.append((qid, seg, rank[(qid, docno)]))
    return (pd.DataFrame(qrel_rows, columns=["qid", "docno", "label"]),
            pd.DataFrame(candidate_rows, columns=["qid", "docno", "rank"]))


def _select(reranker: Scorer, pairs, per_doc: Mapping, segment_text: Mapping, queries: Mapping) -> pd.DataFrame:
    """Score every segment of every training (query, document) pair; keep each pair's best."""
    keys, seg_docnos = [], []
    for qid, docno, positive in pairs:
        for seg in per_doc[docno]:
            keys.append((qid, docno, positive))
            seg_docnos.append(seg)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # segments fit the model's window; nothing meaningful is cropped
        scores = reranker.score_texts([queries[q] for q, _, _ in keys], [segment_text[s] for s in seg_docnos])
    frame = pd.DataFrame({"qid": [k[0] for k in keys], "docno": [k[1] for k in keys],
                          "segment": [int(s.rsplit(SEGMENT_SEPARATOR, 1)[1]) for s in seg_docnos],
                          "score": scores, "relevant": [k[2] for k in keys]})
    # the first segment wins ties, so selection is deterministic
    best = frame.sort_values(["qid", "docno", "score", "segment"], ascending=[True, True, False, True], kind="stable")
    return best.drop_duplicates(["qid", "docno"]).reset_index(drop=True)


@runtime_checkable
class SegmentModel(Scorer, Protocol):
    """A model BeST trains (a FirstP or MaxP), which reads every segment as a MaxP."""

    def as_maxp(self, **settings) -> Scorer:
        """The MaxP that scores every segment with this model's head (``FirstP.as_maxp``, ``MaxP.as_maxp``)."""


def as_maxp(reranker: Scorer, **settings) -> Scorer:
    """The inference view of a segment-trained model: a MaxP scoring every segment.

    A MaxP is returned as it is (or a copy with ``settings`` when given); a FirstP becomes a
    MaxP with a copy of its weights, reading disjoint windows of the FirstP's size over
    ``max_doc_tokens`` tokens (FirstP and MaxP score each window with the same head).
    """
    if reranker.name not in _SEGMENT_MODELS or not isinstance(reranker, SegmentModel):
        raise ValueError(f"as_maxp needs a FirstP or MaxP, got {type(reranker).__name__}")
    return reranker.as_maxp(**settings)


__all__ = ["BestResult", "fit_best", "segment_documents", "as_maxp", "parent_docno", "segment_id"]

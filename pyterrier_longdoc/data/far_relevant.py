"""MS MARCO FarRelevant-style collections: relevant text placed beyond the first 512 tokens.

Boytsov et al., "Understanding Performance of Long-Document Ranking Models through Comprehensive
Evaluation and Leaderboarding" (2022/2024), show that on standard benchmarks relevant passages sit
mostly at the start of documents, so FirstP is hard to beat; their synthetic MS MARCO FarRelevant
collection moves the relevant passage past the first 512 tokens, where FirstP is blind. This module
builds such a collection from any passage collection with passage-level qrels, and a ``near``
control with the very same passages whose relevant passage sits inside the first 512 tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

import numpy as np
import pandas as pd

from ..engine.frames import numeric_column, require_frame, sort_results
from ..engine.rng import keyed_rng
from .collection import InMemoryCollection
from .._warn import warn
from ._tokens import Tokenizer, char_to_token_span, count_tokens, resolve_tokenizer

VARIANTS = ("far", "near")

#: consecutive non-fitting passages after which the tail of a document stops being filled
_PATIENCE = 20

_NO_RELEVANT = "no relevant passage"
_NOT_ADDITIVE = "token counts not additive over passages"


@dataclass
class FarRelevantCollection(InMemoryCollection):
    """A generated collection (the shape of :mod:`pyterrier_longdoc.data.collection`); every frame
    uses string ``qid`` / ``docno``.

    documents: ``docno, text``; topics: ``qid, query``; qrels: ``qid, docno, label`` (document
    level); positions: the relevant passage in its document, ``qid, docno, passage_docno,
    char_start, char_end, token_start, token_end, doc_tokens`` (end exclusive, so
    ``text[char_start:char_end]`` is the passage); candidates: ``qid, query, docno, text, label,
    source`` (``relevant`` / ``retrieved`` / ``random``) in a per-query random order, ready for a
    re-ranker; skipped: ``qid, reason``. The document of query ``qid`` has docno ``"D" + qid`` in
    both variants, so near and far runs share qrels.
    """

    documents: pd.DataFrame
    topics: pd.DataFrame
    qrels: pd.DataFrame
    positions: pd.DataFrame
    candidates: pd.DataFrame
    skipped: pd.DataFrame
    variant: str
    config: dict[str, Any] = field(default_factory=dict)

    queries = property(lambda self: self.topics)  # version 0.1's name

    def split(self, qids) -> FarRelevantCollection:
        """The same documents with the topics ``qids`` (and their qrels, positions and candidates)."""
        qids = set(qids)
        candidates = self.candidates[self.candidates["qid"].isin(qids)].reset_index(drop=True)
        return dataclasses.replace(self, **self._with_topics(qids), candidates=candidates)


@dataclass
class _Plan:
    """One query's relevant passage, chosen before any document is built."""

    qid: str
    query: str
    passage_docno: str
    text: str
    label: int
    n_tokens: int
    rng: np.random.Generator


class _FillerPool:
    """Non-relevant passages, with token counts computed lazily (MS MARCO has 8.8M passages)."""

    def __init__(self, docnos: np.ndarray, texts: np.ndarray, tokenizer: Tokenizer) -> None:
        self.docnos = docnos
        self.texts = texts
        self._counts = np.full(len(texts), -1, dtype=np.int64)
        self._tokenizer = tokenizer

    def __len__(self) -> int:
        return len(self.texts)

    def count(self, i: int) -> int:
        if self._counts[i] < 0:
            self._counts[i] = count_tokens(self._tokenizer, self.texts[i])
        return int(self._counts[i])

    def draw_order(self, rng: np.random.Generator, k: int) -> Iterator[int]:
        """Up to ``k`` distinct passages in random order (no passage twice in a document)."""
        return iter(rng.choice(len(self), size=min(len(self), k), replace=False).tolist())


def load_passage_collection(
    dataset_id: str, *, max_passages: int | None = None, min_label: int = 1
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Passages, queries and qrels of an ``ir_datasets`` passage collection as DataFrames.

    ``max_passages`` keeps the first passages of ``docs_iter()`` as the filler pool (the full
    MS MARCO collection needs several GB as a DataFrame); relevant passages are always added,
    fetched through the docs store.
    """
    import ir_datasets

    dataset = ir_datasets.load(dataset_id)
    qrels = pd.DataFrame(
        [(q.query_id, q.doc_id, int(q.relevance)) for q in dataset.qrels_iter()], columns=["qid", "docno", "label"]
    )
    queries = pd.DataFrame([(q.query_id, _record_text(q)) for q in dataset.queries_iter()], columns=["qid", "query"])
    docs = {d.doc_id: _record_text(d) for d in islice(dataset.docs_iter(), max_passages)}
    missing = sorted(set(qrels.loc[qrels["label"] >= min_label, "docno"]) - docs.keys())
    if missing:
        docs.update({doc_id: _record_text(d) for doc_id, d in dataset.docs_store().get_many(missing).items()})
    passages = pd.DataFrame({"docno": list(docs.keys()), "text": list(docs.values())})
    return passages, queries, qrels


def build_far_relevant(
    passages: pd.DataFrame | str,
    queries: pd.DataFrame | None = None,
    qrels: pd.DataFrame | None = None,
    *,
    tokenizer: Any = None,
    first_tokens: int = 512,
    max_doc_tokens: int = 1431,
    variant: str = "far",
    negatives: int = 9,
    retriever: Callable[..., Any] | None = None,
    retrieved_negatives: int = 10,
    seed: int = 0,
    min_label: int = 1,
    separator: str = " ",
    max_passages: int | None = None,
) -> FarRelevantCollection:
    """Build a MS MARCO FarRelevant-style collection (Boytsov et al., 2022/2024, §FarRelevant).

    Each query gets one document: non-relevant passages fill the first ``first_tokens`` tokens,
    then the query's relevant passage is placed among further non-relevant passages, so that it
    starts at token ``>= first_tokens`` and the document has ``<= max_doc_tokens`` tokens.
    ``variant="near"`` draws the very same passages and only moves the relevant one into the
    first ``first_tokens`` tokens, so near vs far isolates the effect of position.

    Args:
        passages / queries / qrels: DataFrames ``docno, text`` / ``qid, query`` / ``qid, docno, label``,
            or ``passages`` an ``ir_datasets`` id (e.g. ``"msmarco-passage/train/judged"``), whose
            queries and qrels are used unless given (``max_passages`` caps the filler pool).
        tokenizer: None (whitespace tokens, no model needed), a HF tokenizer or a local path to one.
        negatives: other queries' documents sampled into each query's candidate list.
        retriever: optional ``pt.Transformer`` over the generated documents, or a callable
            ``documents -> pt.Transformer`` (e.g. one indexing them with PISA); its top
            ``retrieved_negatives`` documents other than the relevant one join the candidates.
        seed: every random choice derives from ``(seed, qid)``, so results do not depend on the
            order of the queries, and near / far builds with the same seed share their passages.

    Queries without a relevant passage are skipped with a warning; too few non-relevant
    passages, or a relevant passage longer than ``min(first_tokens, max_doc_tokens -
    first_tokens)`` tokens (the room it has in both variants), raise ``ValueError``.
    """
    _check_arguments(first_tokens, max_doc_tokens, variant, negatives, retrieved_negatives, seed, separator)
    passages, queries, qrels = _inputs(passages, queries, qrels, max_passages, min_label)
    tok = resolve_tokenizer(tokenizer)

    relevant, pool = _split_passages(passages, qrels, min_label, tok)
    plans, skipped = _plan_queries(queries, relevant, tok, seed)
    _check_budget(plans, min(first_tokens, max_doc_tokens - first_tokens))
    rows, not_additive = _build_documents(plans, pool, tok, first_tokens, max_doc_tokens, variant, separator)
    skipped += not_additive
    skipped_frame = pd.DataFrame(skipped, columns=["qid", "reason"])
    _warn_skipped(skipped_frame, len(queries))
    if not rows:
        raise ValueError(f"no document could be built: {len(skipped_frame)} of {len(queries)} queries skipped")

    built = pd.DataFrame(rows)
    documents = built[["docno", "text"]].reset_index(drop=True)
    built_queries = queries[queries["qid"].isin(set(built["qid"]))].reset_index(drop=True)
    retrieved = _retrieve(retriever, built_queries, documents) if retriever is not None else {}
    candidates = _candidates(built, built_queries, documents, negatives, retrieved, retrieved_negatives, seed)
    return FarRelevantCollection(
        documents=documents,
        topics=built_queries,
        qrels=built[["qid", "docno", "label"]].reset_index(drop=True),
        positions=built[
            ["qid", "docno", "passage_docno", "char_start", "char_end", "token_start", "token_end", "doc_tokens"]
        ].reset_index(drop=True),
        candidates=candidates,
        skipped=skipped_frame,
        variant=variant,
        config=dict(
            tokenizer=repr(tok), first_tokens=first_tokens, max_doc_tokens=max_doc_tokens, variant=variant,
            negatives=negatives, retrieved_negatives=retrieved_negatives if retriever is not None else 0,
            seed=seed, min_label=min_label, separator=separator,
        ),
    )


def _check_arguments(
    first_tokens: int, max_doc_tokens: int, variant: str, negatives: int, retrieved_negatives: int, seed: int,
    separator: str,
) -> None:
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if first_tokens < 1 or max_doc_tokens <= first_tokens:
        raise ValueError(f"need 0 < first_tokens < max_doc_tokens, got {first_tokens} and {max_doc_tokens}")
    if negatives < 0 or retrieved_negatives < 0:
        raise ValueError("negatives and retrieved_negatives must be >= 0")
    if not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if separator == "" or separator.strip():
        # a separator with tokens of its own would break the additive token budget
        raise ValueError(f"separator must be non-empty whitespace, got {separator!r}")


def _inputs(
    passages: pd.DataFrame | str, queries: pd.DataFrame | None, qrels: pd.DataFrame | None,
    max_passages: int | None, min_label: int,
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Validated passages, queries and qrels, loading an ``ir_datasets`` id if given one."""
    if isinstance(passages, str):
        loaded = load_passage_collection(passages, max_passages=max_passages, min_label=min_label)
        passages = loaded[0]
        queries = loaded[1] if queries is None else queries
        qrels = loaded[2] if qrels is None else qrels
    if queries is None or qrels is None:
        raise ValueError("queries and qrels are required when passages is a DataFrame")
    return (
        _normalise(passages, ["docno", "text"], "passages"),
        _normalise(queries, ["qid", "query"], "queries").drop_duplicates("qid"),
        _normalise(qrels, ["qid", "docno", "label"], "qrels"),
    )


def _record_text(record: Any) -> str:
    # ir_datasets records expose default_text() in recent versions; older ones only .text
    return record.default_text() if hasattr(record, "default_text") else record.text


def _normalise(frame: pd.DataFrame, columns: list[str], name: str) -> pd.DataFrame:
    """Required columns only, ids as str, texts stripped (the separator alone joins passages)."""
    out = require_frame(frame, name, columns)[columns].copy()
    for col in columns:
        if col == "label":
            out[col] = numeric_column(out, col, name).astype(int)
        elif col in ("text", "query"):
            out[col] = out[col].astype(str).str.strip()
        else:
            out[col] = out[col].astype(str)
    if name == "passages" and out["docno"].duplicated().any():
        raise ValueError("passages has duplicate docnos")
    return out


def _query_rng(seed: int, qid: str, stream: int) -> np.random.Generator:
    return keyed_rng(seed, qid, stream)


def _split_passages(
    passages: pd.DataFrame, qrels: pd.DataFrame, min_label: int, tokenizer: Tokenizer
) -> tuple[pd.DataFrame, _FillerPool]:
    """Judged relevant passages (``qid, docno, label, text``) and the pool of fillers.

    Fillers exclude passages relevant to *any* query, so that no generated document holds a
    second relevant passage, for its own query or for another one it is a negative of.
    """
    positive = qrels[qrels["label"] >= min_label]
    relevant = positive.merge(passages, on="docno")
    relevant = relevant[relevant["text"] != ""]
    fillers = passages[~passages["docno"].isin(set(positive["docno"])) & (passages["text"] != "")]
    if fillers.empty:
        raise ValueError("not enough non-relevant passages: every passage is relevant to some query or empty")
    return relevant, _FillerPool(fillers["docno"].to_numpy(), fillers["text"].to_numpy(), tokenizer)


def _build_documents(
    plans: list[_Plan], pool: _FillerPool, tokenizer: Tokenizer, first_tokens: int, max_doc_tokens: int,
    variant: str, separator: str,
) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """One measured document per plan, and the queries whose document broke the limits."""
    rows, skipped = [], []
    for plan in plans:
        parts, rel_index = _compose(plan, pool, first_tokens, max_doc_tokens, variant)
        row = _measure(plan, parts, rel_index, separator, tokenizer)
        if _within_limits(row, first_tokens, max_doc_tokens, variant):
            rows.append(row)
        else:  # only tokenizers whose tokens cross passage boundaries get here
            skipped.append((plan.qid, _NOT_ADDITIVE))
    return rows, skipped


def _plan_queries(
    queries: pd.DataFrame, relevant: pd.DataFrame, tokenizer: Tokenizer, seed: int
) -> tuple[list[_Plan], list[tuple[str, str]]]:
    """Choose each query's relevant passage: highest label, ties broken at random."""
    by_qid = {qid: group.sort_values("docno") for qid, group in relevant.groupby("qid", sort=False)}
    plans, skipped = [], []
    for qid, query in zip(queries["qid"], queries["query"]):
        group = by_qid.get(qid)
        if group is None:
            skipped.append((qid, _NO_RELEVANT))
            continue
        best = group[group["label"] == group["label"].max()]
        rng = _query_rng(seed, qid, 0)
        pick = best.iloc[int(rng.integers(len(best)))]
        plans.append(
            _Plan(qid, query, pick["docno"], pick["text"], int(pick["label"]), count_tokens(tokenizer, pick["text"]), rng)
        )
    return plans, skipped


def _check_budget(plans: list[_Plan], budget: int) -> None:
    too_long = [p for p in plans if p.n_tokens > budget]
    if too_long:
        shown = ", ".join(f"qid {p.qid} ({p.n_tokens} tokens)" for p in too_long[:5])
        raise ValueError(
            f"the relevant passage of {len(too_long)} queries is longer than the {budget}-token budget "
            f"(min(first_tokens, max_doc_tokens - first_tokens): the room it has in both variants): {shown}; "
            "drop these queries or change the budget"
        )


def _take(order: Iterator[int], pool: _FillerPool, stop_at: int, limit: int, patience: int | None) -> tuple[list[int], int]:
    """Accept passages from ``order`` that keep the total <= ``limit`` until it reaches ``stop_at``."""
    taken, total, misses = [], 0, 0
    for i in order:
        if total >= stop_at or (patience is not None and misses >= patience):
            break
        n = pool.count(i)
        if total + n <= limit:
            taken.append(i)
            total, misses = total + n, 0
        else:
            misses += 1
    return taken, total


def _compose(plan: _Plan, pool: _FillerPool, first_tokens: int, max_doc_tokens: int, variant: str) -> tuple[list[str], int]:
    """The document's passages in order and the relevant passage's index among them.

    The random draws do not depend on ``variant`` (the position is always one draw), so near and
    far documents of a query hold the same passages.
    """
    budget = max_doc_tokens - plan.n_tokens
    order = pool.draw_order(plan.rng, max_doc_tokens + _PATIENCE)
    head, head_tokens = _take(order, pool, stop_at=first_tokens, limit=budget, patience=None)
    if head_tokens < first_tokens:
        raise ValueError(
            f"not enough non-relevant passages to fill the first {first_tokens} tokens of query {plan.qid}'s "
            f"document within {max_doc_tokens} tokens: {len(pool)} usable passages (passages relevant to any query "
            "are excluded)"
        )
    tail, _ = _take(order, pool, stop_at=budget - head_tokens, limit=budget - head_tokens, patience=_PATIENCE)
    fillers = [pool.texts[i] for i in head + tail]
    if variant == "far":
        # anywhere after the head: the relevant passage starts at token >= first_tokens
        index = len(head) + int(plan.rng.integers(len(tail) + 1))
    else:
        starts = np.cumsum([0] + [pool.count(i) for i in head])
        fits = np.flatnonzero(starts + plan.n_tokens <= first_tokens)  # never empty: n_tokens <= first_tokens
        index = int(fits[int(plan.rng.integers(len(fits)))])
    return fillers[:index] + [plan.text] + fillers[index:], index


def _measure(plan: _Plan, parts: list[str], rel_index: int, separator: str, tokenizer: Tokenizer) -> dict[str, Any]:
    """Join the passages and measure the relevant one on the real tokenization of the document."""
    text = separator.join(parts)
    char_start = sum(len(p) for p in parts[:rel_index]) + rel_index * len(separator)
    char_end = char_start + len(plan.text)
    spans = tokenizer.spans(text)
    token_start, token_end = char_to_token_span(spans, char_start, char_end)
    return dict(
        qid=plan.qid, docno=f"D{plan.qid}", text=text, label=plan.label, passage_docno=plan.passage_docno,
        char_start=char_start, char_end=char_end, token_start=token_start, token_end=token_end, doc_tokens=len(spans),
    )


def _within_limits(row: dict[str, Any], first_tokens: int, max_doc_tokens: int, variant: str) -> bool:
    placed = row["token_start"] >= first_tokens if variant == "far" else row["token_end"] <= first_tokens
    return placed and row["doc_tokens"] <= max_doc_tokens


def _warn_skipped(skipped: pd.DataFrame, n_queries: int) -> None:
    if len(skipped):
        reasons = ", ".join(f"{n} with {reason}" for reason, n in skipped["reason"].value_counts().items())
        warn(f"skipped {len(skipped)} of {n_queries} queries ({reasons}); see .skipped")


def _retrieve(retriever: Any, queries: pd.DataFrame, documents: pd.DataFrame) -> dict[str, list[str]]:
    """Ranked docnos per query from a pt retriever, or from a factory given the documents."""
    import pyterrier as pt

    if not isinstance(retriever, pt.Transformer):
        if not callable(retriever):
            raise ValueError("retriever must be a pt.Transformer or a callable documents -> pt.Transformer")
        retriever = retriever(documents)
    results = retriever.transform(queries[["qid", "query"]].copy())
    if results.empty:
        return {}
    results = sort_results(results.assign(qid=results["qid"].astype(str), docno=results["docno"].astype(str)))
    return {qid: group["docno"].tolist() for qid, group in results.groupby("qid", sort=False)}


def _candidates(
    built: pd.DataFrame, queries: pd.DataFrame, documents: pd.DataFrame, negatives: int,
    retrieved: dict[str, list[str]], retrieved_negatives: int, seed: int,
) -> pd.DataFrame:
    """The relevant document, retrieved negatives, then random other documents, shuffled.

    Shuffled because a re-ranker that ties would otherwise put the relevant document first.
    """
    docnos = documents["docno"].to_numpy()
    if negatives > len(docnos) - 1:
        raise ValueError(f"negatives={negatives} but only {len(docnos) - 1} other documents were built")
    known = set(docnos)
    rows = []
    query_text = dict(zip(queries["qid"], queries["query"]))
    for qid, own, label in zip(built["qid"], built["docno"], built["label"]):
        hard = [d for d in retrieved.get(qid, []) if d != own and d in known][:retrieved_negatives]
        excluded = {own, *hard}
        rng = _query_rng(seed, qid, 1)  # own stream: negatives never change the documents
        draw = rng.choice(len(docnos), size=min(len(docnos), negatives + len(excluded)), replace=False)
        easy = [d for d in docnos[draw].tolist() if d not in excluded][:negatives]
        chosen = [(own, int(label), "relevant")] + [(d, 0, "retrieved") for d in hard] + [(d, 0, "random") for d in easy]
        rows += [(qid, query_text[qid], *chosen[i]) for i in rng.permutation(len(chosen))]
    frame = pd.DataFrame(rows, columns=["qid", "query", "docno", "label", "source"])
    frame.insert(3, "text", frame["docno"].map(dict(zip(documents["docno"], documents["text"]))))
    return frame

"""End-to-end training: the aggregated document score goes into the loss."""
from __future__ import annotations

import warnings
from collections.abc import Callable

import pandas as pd

from ..engine.backbone import training_attention_dropout
from ..engine.frames import column_texts, require_frame, str_ids
from ..engine.lora import redraw_fresh_lora
from .._warn import warn
from .arguments import TrainingArguments, check_option_names
from .checkpoints import fingerprint
from .sampling import Named, as_frame, checked_qrels, checked_topics, sampled_docnos, split_validation, training_data
from .scorer import Scorer
from .trainer import PreparedData, Trainer, grad_scaler  # noqa: F401 - grad_scaler: public here since 0.2


def fit(reranker: Scorer, topics: pd.DataFrame, qrels: pd.DataFrame, candidates, args: TrainingArguments | None = None, *,
        text=None, valid_topics: pd.DataFrame | None = None, valid_qrels: pd.DataFrame | None = None,
        valid_candidates=None, callback: Callable[[dict], None] | None = None, **options) -> pd.DataFrame:
    """Train ``reranker`` end to end and return the training history (one row per optimiser step).

    The settings are a :class:`TrainingArguments` (``args``) or its fields as keywords
    (``epochs``, ``lr``, ``valid_fraction``, ``checkpoint_dir``, ...; keywords override ``args``).
    Defaults follow the papers (PARADE; Boytsov et al.): per query, one positive and one hard
    negative sampled from the ``top_k`` candidates; the pairwise margin loss (margin 1, summed);
    AdamW with ``lr`` for the backbone and ``head_lr`` for the rest, weight decay 1e-7; linear
    warm-up over the first ``warmup`` fraction of steps, then a constant rate; ``queries_per_step``
    queries per optimiser step (gradient accumulation, ``queries_per_forward`` at a time); one epoch.

    Args:
        candidates: a result frame (qid, docno, rank or score) or a retrieval pipeline run on ``topics``.
        text: where document text comes from when the candidates have no ``text_field`` column or
            lack a positive: a pt.Transformer such as ``pt.text.get_text(dataset, "text")``, a dict
            or ``pd.Series`` from docno to text, a DataFrame with ``docno`` and the text column, or
            a function of a list of docnos. Only the documents training can sample (each usable
            query's positives and top_k negatives) and the validation candidates are fetched.
        valid_topics, valid_qrels, valid_candidates: validation data (all three), or carve it from
            the training queries with ``valid_fraction``.
        callback: called after every optimiser step with the history row.

    The settings (``loss``, ``valid_metric``, ``checkpoint_dir``, ``attention_dropout``, ...) are documented
    on :class:`TrainingArguments`, where each is declared.

    Every input is checked before the first step: a missing, non-text or invalid query or
    document text, a non-numeric label, rank or score, a missing text for a document training
    can sample, and validation arguments, each with an error naming the rows or documents.

    With fp16 autocast (``dtype="fp16"``, and the default on a CUDA device without bf16) the loss
    is scaled by a ``torch.amp.GradScaler``: a step whose gradients overflow is skipped and the
    scale halved (the first steps often are, while the scale comes down from 2**16); the history's
    ``loss_scale`` column shows the scale of each step. bf16 and fp32 need no scaling.

    Under ``torchrun`` (or any initialised ``torch.distributed`` process group; gloo on CPU, NCCL
    on GPU) the model trains wrapped in ``torch.nn.parallel.DistributedDataParallel``: every
    process takes its share of each step's queries (every ``world_size``-th), the gradients are
    all-reduced in buckets during the last micro-batch's backward pass (the others accumulate
    under ``no_sync``) and add up to the gradient of the whole global batch, so the same
    ``queries_per_step`` gives the same training (up to the order of floating-point sums). Every
    process calls ``fit`` with the same data and options and its own device, e.g.
    ``device=f"cuda:{os.environ['LOCAL_RANK']}"``. Rank 0 writes checkpoints (``checkpoint_dir``
    on a file system every process reads: each resumes from it, with its own RNG state) and runs
    validation. On the CPU a resumed run ends bit-identical to an uninterrupted one, in one
    process and in 2 (tested with gloo; with more, the all-reduce may add in another order); on a
    GPU, dropout draws from the GPU's generator, which checkpoints do not hold, and some CUDA
    kernels are not deterministic, so a resumed run ends close to, not bitwise equal to, it.
    """
    check_option_names(options, "fit", data=False)
    args = (args or TrainingArguments()).replace(**options) if options else (args or TrainingArguments())
    data = prepare(reranker, args, topics, qrels, candidates, text, (valid_topics, valid_qrels, valid_candidates))
    redraw_fresh_lora(reranker.model.encoder, args.seed)  # LoRA's A from the run's seed: the same in every process
    with training_attention_dropout(reranker.model, args.attention_dropout):
        return Trainer(reranker, args, data, callback).train()


def prepare(reranker: Scorer, args: TrainingArguments, topics, qrels, candidates, text, validation) -> PreparedData:
    """Checks the input and builds what the Trainer reads: training pools, texts, validation and
    the data's fingerprint."""
    context = Named(f"{reranker!r}.fit")
    valid_topics, valid_qrels, valid_candidates = validation
    if args.valid_fraction:
        if any(v is not None for v in validation):
            raise ValueError("valid_fraction carves validation queries out of the training queries; it cannot be "
                             "combined with valid_topics, valid_qrels or valid_candidates")
        topics, valid_topics = split_validation(checked_topics(topics, "topics", context),
                                                checked_qrels(qrels, "qrels"), args.valid_fraction, args.seed)
        valid_qrels, valid_candidates = qrels, candidates
    data = training_data(topics, qrels, candidates, top_k=args.top_k, text=text, text_field=reranker.text_field,
                         context=context)
    texts = document_texts(data.lookup, sampled_docnos(data.topics, data.pools), reranker.text_field, context)
    valid = validation_data(reranker, valid_topics, valid_qrels, valid_candidates, args.valid_metric, data.lookup,
                            context)
    # what training reads of the candidates: each query's ranked negatives (retrieval scores that
    # differ in the last digit but rank the same are the same data), and the sampled documents' text
    ranked_negatives = pd.DataFrame([(qid, d, k) for qid, (_, neg) in data.pools.items() for k, d in enumerate(neg)],
                                    columns=["qid", "docno", "rank"])
    identity = fingerprint(topics=data.topics[["qid", "query"]], qrels=data.qrels[["qid", "docno", "label"]],
                           candidates=ranked_negatives,
                           texts=pd.DataFrame({"docno": list(texts), "text": list(texts.values())}))
    evaluate_now, chance = None, None
    if valid is not None:
        identity.update(fingerprint(valid=valid[2][["qid", "docno", "query", reranker.text_field]]))
        evaluate_now = lambda: evaluate(reranker, *valid, args.valid_metric, data.lookup)  # noqa: E731
        chance = chance_level(*valid, args.valid_metric, args.seed)
    return PreparedData(data.topics, data.pools, texts, identity, evaluate_now, chance)


def evaluate(reranker: Scorer, topics: pd.DataFrame, qrels: pd.DataFrame, candidates, metric: str, lookup) -> float:
    """Mean ``metric`` of the re-ranked validation candidates."""

    if qrels is None or candidates is None:
        raise ValueError("validation needs valid_topics, valid_qrels and valid_candidates")
    frame = as_frame(candidates, topics)
    if reranker.text_field not in frame.columns:
        frame = frame.assign(**{reranker.text_field: lookup(frame["docno"].astype(str).tolist())})
    if "query" not in frame.columns:
        frame = frame.merge(topics[["qid", "query"]], on="qid")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cropping report belongs to users' own runs
        run = reranker.transform(frame)
    return run_metric(run, topics, qrels, metric)


def run_metric(run: pd.DataFrame, topics: pd.DataFrame, qrels: pd.DataFrame, metric: str) -> float:
    """Mean ``metric`` of a run ``qid, docno, score`` over ``topics``."""
    import ir_measures

    measure = ir_measures.parse_measure(metric)
    qrels = qrels[qrels["qid"].astype(str).isin(set(topics["qid"].astype(str)))]  # the mean is over these topics
    result = ir_measures.calc_aggregate(
        [measure],
        qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
             .astype({"query_id": str, "doc_id": str}),
        run.rename(columns={"qid": "query_id", "docno": "doc_id"}).astype({"query_id": str, "doc_id": str}))
    return float(result[measure])


def chance_level(topics: pd.DataFrame, qrels: pd.DataFrame, candidates: pd.DataFrame, metric: str,
                 seed: int) -> tuple[float, float]:
    """``(mean, 95th percentile)`` of ``metric`` over random orders of the validation candidates:
    what a model that learned nothing scores, and what it scores by luck 1 time in 20."""
    import ir_measures
    import numpy as np

    measure = ir_measures.parse_measure(metric)
    qids = set(topics["qid"].astype(str))
    # 200 orders; fewer for many queries, whose mean varies less (at most ~100,000 evaluations)
    orders = int(np.clip(100_000 // max(len(qids), 1), 20, 200))
    run = candidates[["qid", "docno"]].astype(str)
    qrels = qrels[qrels["qid"].astype(str).isin(qids)].astype({"qid": str, "docno": str})
    # every order's run under its own query ids ("<qid>@order<k>"), evaluated in one call
    tagged = lambda frame, k: frame.assign(qid=frame["qid"] + f"@order{k}")  # noqa: E731
    runs = pd.concat([tagged(run, k) for k in range(orders)], ignore_index=True)
    runs["score"] = np.random.default_rng([seed, 20]).random(len(runs))
    judged = pd.concat([tagged(qrels, k) for k in range(orders)], ignore_index=True)
    per_query = pd.DataFrame([(m.query_id, m.value) for m in ir_measures.iter_calc(
        [measure], judged.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"}),
        runs.rename(columns={"qid": "query_id", "docno": "doc_id"}))], columns=["qid", "value"])
    values = per_query.groupby(per_query["qid"].str.rsplit("@order", n=1).str[1])["value"].mean()
    return float(values.mean()), float(np.percentile(values, 95))


def document_texts(lookup, docnos: list[str], text_field: str, context) -> dict[str, str]:
    """docno -> text of every document in ``docnos``, fetched now and checked like inference input."""
    frame = pd.DataFrame({"docno": docnos, text_field: lookup(docnos) if docnos else []}, dtype=object)
    return dict(zip(docnos, column_texts(frame, text_field, context)))


def validation_data(reranker: Scorer, topics, qrels, candidates, metric: str, lookup,
                    context) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None:
    """(topics, qrels, candidates with query and text) for validation, checked before training;
    None without validation."""
    given = {"valid_topics": topics, "valid_qrels": qrels, "valid_candidates": candidates}
    missing = [name for name, value in given.items() if value is None]
    if len(missing) == len(given):
        return None
    if missing:
        raise ValueError(f"validation needs valid_topics, valid_qrels and valid_candidates; {', '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} missing")
    # ids as strings, as evaluation compares them: int qids in valid_topics and str ones in the candidates match
    topics = str_ids(checked_topics(topics, "valid_topics", context))
    qrels = str_ids(checked_qrels(qrels, "valid_qrels"))
    frame = str_ids(require_frame(as_frame(candidates, topics, "valid_candidates"), "valid_candidates",
                                  ["qid", "docno"]))
    # only the validation topics' candidates: the same frame often holds the training queries' too
    frame = frame[frame["qid"].astype(str).isin(set(topics["qid"].astype(str)))].reset_index(drop=True)
    topics = _topics_with_candidates(topics, frame, metric)
    valid_context = Named(f"{context!r} valid_candidates")
    field = reranker.text_field
    if field not in frame.columns:
        texts = document_texts(lookup, frame["docno"].astype(str).tolist(), field, valid_context)
        frame = frame.assign(**{field: [texts[d] for d in frame["docno"].astype(str)]})
    if "query" not in frame.columns:
        frame = frame.merge(topics[["qid", "query"]], on="qid")
    frame = frame.assign(query=column_texts(frame, "query", valid_context),
                         **{field: column_texts(frame, field, valid_context)})
    return topics, qrels, frame


def _topics_with_candidates(topics: pd.DataFrame, candidates: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The validation topics that have candidates; the others are left out with a warning naming
    them (no model can rank them: they would count as 0 in every evaluation, the start's included,
    and put the metric below what random orders of the candidates score)."""
    have = set(candidates["qid"].astype(str))
    lacking = [q for q in topics["qid"].astype(str) if q not in have]
    if len(lacking) == len(topics):
        raise ValueError(f"no validation topic has candidates: valid_candidates holds none of the {len(topics)} "
                         f"validation qids (e.g. {lacking[0]!r}); check that its qids are the topics' (as strings)")
    if lacking:
        warn(f"{len(lacking)} of {len(topics)} validation topics have no candidates ({_few(lacking)}): they are left "
             f"out of validation, where they would count as {metric} 0 whatever the model")
        topics = topics[topics["qid"].astype(str).isin(have)].reset_index(drop=True)
    return topics


def _few(qids: list[str]) -> str:
    return "qid " + ", ".join(map(repr, qids[:5])) + (f" and {len(qids) - 5} more" if len(qids) > 5 else "")

"""The whole recipe in one call: a passage stage, then document-level training with model selection.

``train_long_document_ranker`` is what the papers do (PARADE; Boytsov et al.), at any scale:
1. the passage stage turns the backbone into a passage cross-encoder (``train_passage_ranker``).
   Without passage data it learns from the document-level qrels, as the FarRelevant and BeST
   work do: the best-matching window (BM25 over the windows) of each relevant document is the
   positive; the best-matching window of a non-relevant candidate (a hard negative) and a random
   window of another (an easy one) are its negatives;
2. the document stage starts ``model_class`` from that cross-encoder and trains it with ``fit``,
   holding out ``valid_fraction`` of the queries: the starting model is evaluated and the best
   evaluated model is kept, so the result is never worse than its start on validation.
"""
from __future__ import annotations

import math
import os
import re
import time
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..engine.backbone import attention_dropout_sites
from .._warn import renamed
from .arguments import TrainingArguments
from .passage_arguments import PassageArguments
from .sampling import Named, as_frame, checked_qrels, checked_topics, hard_negative_pools, text_lookup

__all__ = ["train_long_document_ranker", "RECIPE_DOCUMENT_STAGE", "RECIPE_PASSAGE_STAGE", "document_passage_triples"]

# One setting for every model and collection: an encoder rate in the papers' range (1e-5 to 3e-5;
# 1e-4 collapsed a trained FirstP on held-out prose), validation of the start and after each epoch
# (transformers' eval_strategy="epoch"; every 10 steps as well made a fit 17-25% dearer), keeping the
# best model. benchmarks/effectiveness.py measures it on collections it was not chosen on. No attention
# dropout (PyTorch's fused CPU attention takes none): a fit costs 20-40% less, which the
# 15-minute budget needs; FOLDOC's validation queries kept the same best models without it.
RECIPE_DOCUMENT_STAGE: dict[str, Any] = dict(epochs=2, lr=2e-5, head_lr=1e-4, warmup=0.1, queries_per_step=4,
                                              top_k=10, valid_fraction=0.2, valid_metric="RR@10", eval_every=None,
                                              attention_dropout=0.0)
# At CPU scale the passage stage needs a larger rate than the papers' 100k+ GPU steps (measured:
# MiniLM at 3e-5 learned nothing in 120 steps of 8; at 1e-4 a usable ranker). The passage stage keeps
# the encoder's attention dropout: the faster setting (attention_dropout=0.0 in both stages, the
# passage head at 1e-3) held on GCIDE but left FOLDOC's passage stage near a random order.
# Passages of 75 words (128 tokens), not 150 (256): the answer is a larger share of its window, and
# FOLDOC's passage stage went from zero-shot MaxP 0.50 to 0.91 on its training queries in 100 steps
# (0.94 in 200, at twice the CPU time the 15-minute budget has no room for;
# benchmarks/results/effectiveness-passage-foldoc-trial-passage_steps_100.md). 80 steps scored as well there, but left the
# demo's MaxP below a random order (benchmarks/results/archive/demo-80-step-passage-stage-rejected.json).
RECIPE_PASSAGE_STAGE = dict(steps=100, lr=1e-4, max_length=128)  # over PassageArguments' defaults
RECIPE_WINDOW_WORDS, RECIPE_STRIDE_WORDS = 75, 38  # the passage stage's windows of documents, in words
_WORD = re.compile(r"\w+")
HARD_NEGATIVES = ("sampled", "hardest")


def train_long_document_ranker(model_class, backbone: str | os.PathLike, topics: pd.DataFrame, qrels: pd.DataFrame,
                               candidates, *, passages=None, text=None, output_dir: str | os.PathLike = "ranker",
                               passage_options: dict | None = None, args: TrainingArguments | None = None,
                               model_options: dict | None = None, seed: int = 42, dtype: str | None = None,
                               fusion: bool | None = None):
    """Train ``model_class`` (e.g. ``MaxP``) from ``backbone`` on documents; returns ``(model, report)``.
    The trained model is saved in ``output_dir`` (the passage stage in ``output_dir/passage-stage``),
    so ``from_pretrained(output_dir)`` and ``pt.Artifact.load(output_dir)`` load it.

    Args:
        backbone: an encoder or sentence-transformers model (``pyterrier_longdoc.packaged.packaged_minilm()``
            offline), or a trained cross-encoder (``passages=False`` then skips the passage stage).
        topics, qrels, candidates, text: as for ``fit``: the training queries, their document
            qrels, their candidates (a result frame or a retrieval pipeline) and where text comes from.
        passages: (query, positive, negative) passage triples for the passage stage (a frame or
            an iterable, as ``train_passage_ranker``'s ``data``); ``None`` derives them from the
            documents (see the module doc); ``False`` skips the passage stage.
        passage_options / args: the passage stage's options (``PassageArguments``' fields) over
            ``RECIPE_PASSAGE_STAGE``, checked before anything is built; the document stage's
            ``TrainingArguments`` (default ``RECIPE_DOCUMENT_STAGE``).
        model_options: the model's settings and runtime options (``window``, ``dtype``, ...).
        fusion: choose the model's fusion with the first stage (``pyterrier_longdoc.fusion``) on the
            validation queries, saved with the model (``model.fusion``; ``FirstStageFusion(model)`` applies
            it): True requires it (the candidates' ``score`` is the first stage's), None chooses it where
            the validation candidates carry a ``score`` (the report says why not elsewhere), False skips it.
    The recipe's document stage trains without attention dropout where the library knows how to
    switch it off (BERT-style and Llama-style encoders; another encoder keeps its own, and the
    report says which: ``attention_dropout``).
    The report: per stage its wall and CPU seconds, and the passage stage's number of triples,
    first and last logged loss and whether a complete stage was reused (``reused``); the document
    stage's validation metric at the start, at its best and at the end, what random orders of the
    validation candidates score (``random``, ``random_p95``), whether the best model was restored and
    what training changed (``trained``: the modules, or none where the start was kept); the fusion
    chosen (``fusion``: ``Fusion.to_dict()``, or why there is none).
    """
    from .passage import train_passage_ranker

    output_dir = Path(output_dir)
    recipe_args = args is None
    args = args or TrainingArguments(**RECIPE_DOCUMENT_STAGE, seed=seed)
    report = {}
    warm_start = str(backbone)
    if passages is not False:
        started, cpu = time.time(), time.process_time()
        options = {**RECIPE_PASSAGE_STAGE, **(passage_options or {}), "seed": seed}
        if dtype is not None and "bf16" not in options:  # the same precision in both stages
            options.setdefault("dtype", dtype)
        # a killed recipe run again resumes its passage stage from the last of four checkpoints
        options.setdefault("checkpoint_every", max(1, options["steps"] // 4) if options.get("steps") else 500)
        with warnings.catch_warnings():  # checked before the triples are built; a deprecation is warned below
            warnings.simplefilter("ignore", DeprecationWarning)
            PassageArguments.from_options(options, where="train_long_document_ranker: passage_options")
        if passages is None:
            passages = document_passage_triples(topics, qrels, candidates, text=text, seed=seed)
        stage, key = output_dir / "passage-stage", _passage_stage_key(backbone, passages, options)
        reused = key is not None and not options.get("restart") and _complete_stage(stage, key)
        if reused:
            print(f"train_long_document_ranker: the passage stage in {stage} is complete (the same backbone, triples "
                  "and options): reused, not trained again")
            warm_start = str(stage)
        else:
            warm_start = train_passage_ranker(backbone, passages, stage, **options)
            if key is not None:
                (stage / PASSAGE_STAGE_KEY).write_text(key)
        report["passage stage"] = {"seconds": time.time() - started, "cpu_seconds": time.process_time() - cpu,
                                   "triples": len(passages), "reused": reused, **_passage_losses(warm_start)}
    started, cpu = time.time(), time.process_time()
    options = {**({"dtype": dtype} if dtype else {}), **(model_options or {})}
    model = model_class(warm_start, **options)
    if recipe_args and not attention_dropout_sites(model.model):
        args = args.replace(attention_dropout=None)  # an encoder the library cannot switch keeps its own
    history = model.fit(topics, qrels, candidates, args=args, text=text)
    selection = history.attrs.get("selection", {})
    report["document stage"] = {"seconds": time.time() - started, "cpu_seconds": time.process_time() - cpu,
                                "steps": int(history["step"].max()), "attention_dropout": args.attention_dropout,
                                **selection, "trained": _trained_parts(model, selection)}
    if fusion is not False:
        report["fusion"] = _chosen_fusion(model, topics, qrels, candidates, text, args, required=fusion is True)
    return _saved(model, model_class, output_dir, options), report


def _trained_parts(model, selection: dict) -> str:
    """What the document stage changed: the modules with trainable parameters, or none where the best
    model on validation was the start."""
    if selection.get("best_step") == 0:
        return "none: no evaluation on validation improved on the start, which was kept"
    trainable = {name.split(".")[0] for name, p in model.model.named_parameters() if p.requires_grad}
    return ", ".join(sorted(trainable))


def _chosen_fusion(model, topics, qrels, candidates, text, args: TrainingArguments, required: bool):
    """The model's fusion with the first stage, chosen on the validation queries that ``fit`` held out
    (``valid_fraction``) and set on the model; where there is none, a sentence saying why (an error
    where ``required``)."""
    from ..fusion import FirstStageFusion
    from .sampling import split_validation

    def missing(reason: str) -> str:
        if required:
            raise ValueError(f"train_long_document_ranker(fusion=True): {reason}")
        return f"not chosen: {reason}"

    if not args.valid_fraction:
        return missing("no validation queries (valid_fraction is 0) to choose the fusion weight on")
    context = Named("train_long_document_ranker")
    valid = split_validation(checked_topics(topics, "topics", context), checked_qrels(qrels, "qrels"),
                             args.valid_fraction, args.seed)[1]
    frame = as_frame(candidates, valid)
    frame = frame[frame["qid"].astype(str).isin(set(valid["qid"].astype(str)))]
    if "score" not in frame.columns:
        return missing("the candidates carry no 'score' column, the first stage's score that fusion combines")
    field = model.text_field
    if field not in frame.columns:
        lookup = text_lookup(frame, field, text)
        frame = frame.assign(**{field: lookup(frame["docno"].astype(str).tolist())})
    if "query" not in frame.columns:
        frame = frame.merge(valid[["qid", "query"]], on="qid")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the cropping report belongs to users' own runs
        model.fusion = FirstStageFusion(model, weight=1.0, metric=args.valid_metric).fit(frame, qrels).fusion
    return model.fusion.to_dict()


def _saved(model, model_class, output_dir: Path, options: dict):
    """The trained model saved in ``output_dir`` (from_pretrained and pt.Artifact.load read it there),
    loaded back from it: its repr and artifact path name that folder, not the passage stage."""
    model.save_pretrained(output_dir)
    saved = model_class(str(output_dir), **options)
    saved.history, saved.training_data, saved.training_options = (model.history, model.training_data,
                                                                  model.training_options)
    return saved


PASSAGE_STAGE_KEY = "recipe_stage.json"  # what a complete passage stage was trained from


def _passage_stage_key(backbone, passages, options: dict) -> str | None:
    """The backbone (its files' digest: the same weights in another folder are the same backbone,
    other weights in the same folder are not), the triples' fingerprint and the options of a passage
    stage (but how often it checkpoints), as JSON; None for triples that are not a frame (an iterable
    is read once: that stage is always trained)."""
    import json

    from .checkpoints import fingerprint, folder_fingerprint

    if not isinstance(passages, pd.DataFrame):
        return None
    trained_by = {name: value for name, value in options.items() if name not in ("checkpoint_every", "restart")}
    return json.dumps({"backbone": folder_fingerprint(backbone),
                       "triples": fingerprint(triples=passages.reset_index(drop=True)), "options": trained_by},
                      default=repr, sort_keys=True)


def _complete_stage(stage: Path, key: str) -> bool:
    marker = stage / PASSAGE_STAGE_KEY
    return marker.is_file() and (stage / "config.json").is_file() and marker.read_text() == key


def _passage_losses(folder: str) -> dict:
    import json

    log = Path(folder) / "training_log.json"
    return json.loads(log.read_text()) if log.exists() else {}


def document_passage_triples(topics: pd.DataFrame, qrels: pd.DataFrame, candidates, *, text=None,
                             text_field: str = "text", window_words: int = RECIPE_WINDOW_WORDS,
                             stride_words: int = RECIPE_STRIDE_WORDS, top_k: int = 10, hard_negative: str = "sampled",
                             seed: int = 42, window: int | None = None, stride: int | None = None) -> pd.DataFrame:
    """Passage triples ``qid, query, positive, negative`` from document qrels (see the module doc):
    two per relevant document, one hard negative and one easy.

    ``window_words``, ``stride_words``: the windows' length and step in white-space separated
    words (``window`` and ``stride`` are their deprecated names, for one release).
    ``hard_negative``: ``"sampled"``, the best-matching window of a negative drawn from the top_k;
    ``"hardest"``, the best-matching window over all of them (the window a lexical match most
    confuses with the answer)."""
    given = renamed({"window_words": window_words, "stride_words": stride_words, "window": window, "stride": stride},
                    {"window": "window_words", "stride": "stride_words"}, "document_passage_triples",
                    defaults={"window_words": RECIPE_WINDOW_WORDS, "stride_words": RECIPE_STRIDE_WORDS})
    window_words, stride_words = given["window_words"], given["stride_words"]
    for name, value in (("window_words", window_words), ("stride_words", stride_words)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"document_passage_triples: {name} must be a positive integer, got {value!r}")
    if hard_negative not in HARD_NEGATIVES:
        raise ValueError(f"hard_negative must be one of {HARD_NEGATIVES}, got {hard_negative!r}")
    context = Named("train_long_document_ranker")
    topics = checked_topics(topics, "topics", context)
    qrels = checked_qrels(qrels, "qrels")
    frame = as_frame(candidates, topics)
    pools = hard_negative_pools(topics, qrels, frame, top_k)
    lookup = text_lookup(frame, text_field, text)
    docnos = list(dict.fromkeys(d for pos, neg in pools.values() if pos and neg for d in pos + neg))
    windows = {d: _windows(t, window_words, stride_words) for d, t in zip(docnos, lookup(docnos))}
    bm25 = _WindowBM25([w for ws in windows.values() for w in ws])
    rows = []
    for qid, query in zip(topics["qid"].astype(str), topics["query"]):
        positives, negatives = pools.get(qid, ([], []))
        if not positives or not negatives:
            continue
        rng = np.random.default_rng([seed, *map(ord, qid)])
        hardest = bm25.best(query, [w for d in negatives for w in windows[d]]) if hard_negative == "hardest" else None
        for positive in positives:
            best = bm25.best(query, windows[positive])
            hard = hardest or bm25.best(query, windows[negatives[int(rng.integers(len(negatives)))]])
            easy_doc = windows[negatives[int(rng.integers(len(negatives)))]]
            for negative in (hard, easy_doc[int(rng.integers(len(easy_doc)))]):
                if negative != best:
                    rows.append((qid, query, best, negative))
    if not rows:
        raise ValueError("no passage triples: no training query has a relevant document and a non-relevant "
                         "candidate with text")
    return pd.DataFrame(rows, columns=["qid", "query", "positive", "negative"])


def _windows(text: str, window_words: int, stride_words: int) -> list[str]:
    words = text.split()
    starts = range(0, max(1, len(words) - window_words + stride_words), stride_words)
    return [" ".join(words[s:s + window_words]) for s in starts if words[s:s + window_words]] or [text]


class _WindowBM25:
    """BM25 (k1 0.9, b 0.4) over a set of windows: which window of a document matches a query best."""

    def __init__(self, windows: list[str], k1: float = 0.9, b: float = 0.4):
        self.k1, self.b = k1, b
        counts = Counter(term for w in windows for term in set(_terms(w)))
        self.idf = {t: math.log(1 + (len(windows) - n + 0.5) / (n + 0.5)) for t, n in counts.items()}
        self.average = max(1.0, float(np.mean([len(_terms(w)) for w in windows]))) if windows else 1.0

    def score(self, query: str, window: str) -> float:
        terms = _terms(window)
        tf = Counter(terms)
        norm = self.k1 * (1 - self.b + self.b * len(terms) / self.average)
        return sum(self.idf.get(t, 0.0) * tf[t] * (self.k1 + 1) / (tf[t] + norm) for t in set(_terms(query)))

    def best(self, query: str, windows: list[str]) -> str:
        scores = [self.score(query, w) for w in windows]
        return windows[int(np.argmax(scores))]  # the first of equals: the earliest window


def _terms(text: str) -> list[str]:
    return _WORD.findall(text.lower())

"""The passage stage: the cross-encoder that long-document models start from.

The papers never train a long-document ranker from a raw encoder: PARADE (Li et al., 2020)
starts from a BERT fine-tuned on MS MARCO passages, and the leaderboard study (Boytsov et al.,
2022/2024) trains every model from a passage-trained checkpoint. ``train_passage_ranker`` is
that first stage, done by sentence-transformers' own ``CrossEncoder`` + ``CrossEncoderTrainer``;
it writes a standard CrossEncoder folder that ``sentence_transformers.CrossEncoder(folder)``,
``AutoModelForSequenceClassification`` and this library's models load as their backbone.

On a GPU, the papers' passage data comes from ``ir_datasets`` (passages, queries, qrels and
BM25 candidates as frames, or the official triples)::

    import ir_datasets
    triples = ir_datasets.load("msmarco-passage/train/triples-small")   # (query, positive, negative) ids
    judged = ir_datasets.load("msmarco-passage/train/judged")           # queries with passage qrels
    # pt.get_dataset("irds:msmarco-passage/train/judged") gives topics / qrels frames for PyTerrier

and the papers' budget is about 100k-300k steps of 32 triples at a rate of 1e-5 to 3e-5. On a CPU,
a few hundred triples and a larger rate (1e-4) already give a usable ranker (see
``benchmarks/effectiveness.py``).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import warnings
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from typing_extensions import Unpack

from ..engine.backbone import training_attention_dropout
from ..engine.frames import numeric_column, require_frame, row_positions
from ..engine.runtime import Runtime
from .passage_arguments import LOSSES, PassageArguments, PassageOptions
from .passage_checkpoints import identity, latest_checkpoint

__all__ = ["train_passage_ranker", "passage_triples", "PassageArguments", "LOSSES"]


def train_passage_ranker(backbone: str | os.PathLike, data=None, output_dir: str | os.PathLike = "passage-ranker", *,
                         topics: pd.DataFrame | None = None, qrels: pd.DataFrame | None = None,
                         passages: pd.DataFrame | None = None, candidates: pd.DataFrame | None = None,
                         args: PassageArguments | None = None, **options: Unpack[PassageOptions]) -> str:
    """Fine-tune ``backbone`` as a passage cross-encoder and save it to ``output_dir``.

    Args:
        backbone: a HuggingFace encoder, a sentence-transformers model or a CrossEncoder folder
            (``pyterrier_longdoc.packaged.packaged_minilm()`` offline). A plain encoder gets a fresh
            one-logit head.
        data: (query, positive passage, negative passage) triples: an iterable of 3-tuples or a
            frame with columns ``query, positive, negative``. Optional when the frames are given;
            both are used when both are given.
        topics, qrels, passages, candidates: PyTerrier frames ``qid, query`` / ``qid, docno,
            label`` / ``docno, text`` / ``qid, docno`` with ``rank`` or ``score`` (e.g. BM25's
            run on the topics). Every relevant passage (``label > 0``) of a topic gives
            ``negatives_per_query`` triples whose negatives are drawn from the topic's ``top_k``
            non-relevant candidates (hard negatives); without ``candidates``, or for a topic none
            of whose candidates is a non-relevant passage, from all the passages at random.
        args: a :class:`~pyterrier_longdoc.training.PassageArguments` (steps, lr, triples_per_step,
            loss, dtype, ...; see it for each field's meaning and default).
        **options: the same fields as keyword arguments (``steps=100, lr=1e-4``), over ``args``:
            an explicit keyword wins. An unknown name or a bad value is an error naming it,
            before anything loads.

    Returns the path of the saved folder (``output_dir``), loadable with
    ``sentence_transformers.CrossEncoder``; its ``training_log.json`` holds the number of steps
    and the first and last logged loss.
    """
    args = PassageArguments.from_options(options, base=args)
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer

    runtime = Runtime(dtype=args.dtype, device=args.device)
    triples = _training_triples(data, topics, qrels, passages, candidates, args.negatives_per_query, args.top_k,
                                args.seed)

    torch.manual_seed(args.seed)  # the fresh head's weights
    with _quiet_loading(args.verbose):  # the "classifier MISSING" report: a new head is what this stage trains
        model = CrossEncoder(str(backbone), num_labels=1, max_length=args.max_length,
                             device=str(runtime.available_devices()[0]))
    total_steps = args.steps or args.epochs * -(-len(triples) // args.triples_per_step)
    output_dir = Path(output_dir)
    resume_from = None
    if args.checkpoint_every is not None:  # checked before training: a changed run is refused at once
        resume_from = latest_checkpoint(output_dir / "trainer", identity(backbone, triples, args), args.restart)
    trainer_args = _trainer_arguments(runtime, output_dir, args, total_steps=total_steps,
                                      rates=_head_rates(model.model, args.head_lr))
    dataset = Dataset.from_pandas(triples[["query", "positive", "negative"]], preserve_index=False)
    trainer = CrossEncoderTrainer(model=model, args=trainer_args, train_dataset=dataset, loss=_loss(model, args.loss))
    if not args.verbose:
        from transformers.trainer_callback import PrinterCallback

        trainer.remove_callback(PrinterCallback)  # the loss is logged for training_log.json, not printed
    if args.progress:
        trainer.add_callback(_progress_bar())
    with training_attention_dropout(model.model, args.attention_dropout):
        trainer.train(resume_from_checkpoint=resume_from)
    model.save_pretrained(str(output_dir))
    _write_training_log(output_dir, trainer.state)
    # the stage is complete and saved: its checkpoints (and the scratch folder) are no longer needed
    shutil.rmtree(output_dir / "trainer", ignore_errors=True)
    return str(output_dir)


def _training_triples(data, topics, qrels, passages, candidates, negatives_per_query: int, top_k: int,
                      seed: int) -> pd.DataFrame:
    """The triples given, and those the frames give."""
    triples = _triples(data)
    frames = (topics, qrels, passages)
    if any(f is not None for f in (*frames, candidates)):
        if any(f is None for f in frames):
            raise ValueError("training from frames needs topics, qrels and passages (candidates are optional)")
        triples = pd.concat([triples, passage_triples(topics, qrels, passages, candidates,
                                                      negatives_per_query=negatives_per_query, top_k=top_k,
                                                      seed=seed)], ignore_index=True)
    if triples.empty:
        raise ValueError("no training triples: give data=(query, positive, negative) triples, or topics, qrels and "
                         "passages with at least one relevant passage")
    return triples


def _head_rates(model, head_lr: float | None) -> dict[str, float]:
    """sentence-transformers' ``learning_rate_mapping`` (parameter-name patterns to rates) that
    gives ``head_lr`` to the parameters of ``model`` outside its encoder (BERT's ``classifier``,
    Llama's ``score``, ModernBERT's ``head`` and ``classifier``, ...)."""
    if head_lr is None:
        return {}
    prefix = model.base_model_prefix + "."
    head = [name for name, _ in model.named_parameters() if not name.startswith(prefix)]
    if not head:
        raise ValueError(f"head_lr: {type(model).__name__} has no parameters outside its encoder "
                         f"({model.base_model_prefix!r})")
    return {r"(^|\.)model\.(" + "|".join(re.escape(name) for name in head) + ")$": float(head_lr)}


def _trainer_arguments(runtime: Runtime, output_dir, args: PassageArguments, *, total_steps: int,
                       rates: dict[str, float]):
    """sentence-transformers' training arguments: the runtime's device and precision, the
    head's rate (``rates``), a checkpoint every ``checkpoint_every`` steps (the newest kept) or
    none, the loss logged ten times for ``training_log.json``."""
    from sentence_transformers.cross_encoder import CrossEncoderTrainingArguments

    device = runtime.devices()[0]
    # int8 quantizes inference only: training is fp32, as a model's fit is
    precision = "fp32" if runtime.int8 else runtime.dtype_name(device)
    if precision == "fp16" and device.type != "cuda":
        raise ValueError(f"dtype fp16 trains on a CUDA GPU only, not on {device}; use 'bf16' or 'fp32'")
    return CrossEncoderTrainingArguments(
        output_dir=str(Path(output_dir) / "trainer"), max_steps=args.steps or -1, num_train_epochs=args.epochs,
        per_device_train_batch_size=args.triples_per_step, learning_rate=args.lr, learning_rate_mapping=rates,
        warmup_steps=int(args.warmup * total_steps), weight_decay=0.0,
        seed=args.seed, data_seed=args.seed, bf16=precision == "bf16", fp16=precision == "fp16",
        save_strategy="no" if args.checkpoint_every is None else "steps",
        save_steps=args.checkpoint_every or 500, save_total_limit=1,
        report_to="none", logging_strategy="steps", logging_steps=max(1, total_steps // 10),
        # the Trainer's own bar writes every logged loss below it: _progress_bar shows it as a postfix
        disable_tqdm=True, dataloader_drop_last=False,
        use_cpu=device.type == "cpu")


def _progress_bar():
    """A Trainer callback: a bar over the optimiser steps, as ``fit``'s, with the last logged loss."""
    import pyterrier as pt
    from transformers import TrainerCallback

    class ProgressBar(TrainerCallback):
        bar = None

        def on_train_begin(self, args, state, control, **kwargs):  # a resumed run starts at its checkpoint's step
            self.bar = pt.tqdm(total=state.max_steps, initial=state.global_step, desc="passage stage", unit="step")

        def on_step_end(self, args, state, control, **kwargs):
            self.bar.update(1)

        def on_log(self, args, state, control, logs=None, **kwargs):
            if self.bar is not None and logs and "loss" in logs:
                self.bar.set_postfix(loss=f"{logs['loss']:.4f}")

        def on_train_end(self, args, state, control, **kwargs):
            self.bar.close()

    return ProgressBar()


def passage_triples(topics: pd.DataFrame, qrels: pd.DataFrame, passages: pd.DataFrame,
                    candidates: pd.DataFrame | None = None, *, negatives_per_query: int = 1, top_k: int = 20,
                    seed: int = 42) -> pd.DataFrame:
    """(query, positive, negative) triples from PyTerrier frames (see ``train_passage_ranker``):
    a frame ``qid, query, positive, negative``."""
    topics = _columns(topics, ["qid", "query"], "topics")
    qrels = _columns(qrels, ["qid", "docno", "label"], "qrels")
    passages = _columns(passages, ["docno", "text"], "passages")
    duplicated = passages["docno"].duplicated(keep=False)
    if duplicated.any():
        raise ValueError(f"passages has duplicate docnos in rows {row_positions(duplicated)}: "
                         f"{sorted(set(passages.loc[duplicated, 'docno']))[:5]}")
    text = dict(zip(passages["docno"], passages["text"]))
    unknown = ~qrels["docno"].isin(text.keys()) & (qrels["label"] > 0)
    if unknown.any():
        raise ValueError(f"qrels rows {row_positions(unknown)} name relevant passages that are not in passages: "
                         f"{qrels.loc[unknown, 'docno'].tolist()[:5]}")
    pools = _candidate_pools(candidates, top_k) if candidates is not None else {}
    relevant = qrels[qrels["label"] > 0].groupby("qid")["docno"].apply(set).to_dict()
    everything = passages["docno"].to_numpy()
    rows = []
    for qid, query in zip(topics["qid"], topics["query"]):
        positives = relevant.get(qid)
        if not positives:
            continue
        rng = np.random.default_rng([seed, *map(ord, qid)])
        # by text: a copy of a relevant passage under another docno is no negative either
        relevant_texts = {text[d] for d in positives}
        hard = [d for d in pools.get(qid, []) if d in text and text[d] not in relevant_texts]
        for positive in sorted(positives):
            for _ in range(negatives_per_query):
                negative = hard[int(rng.integers(len(hard)))] if hard else None
                while negative is None or text[negative] in relevant_texts:  # a random passage; never a relevant one
                    negative = everything[int(rng.integers(len(everything)))]
                rows.append((qid, query, text[positive], text[negative]))
    return pd.DataFrame(rows, columns=["qid", "query", "positive", "negative"])


class MarginLoss(torch.nn.Module):
    """Hinge on ``score(query, positive) - score(query, negative)`` with margin 1, averaged over the
    batch: the pairwise loss of the papers' training, for sentence-transformers' trainer."""

    def __init__(self, model, margin: float = 1.0):
        super().__init__()
        self.model = model
        self.margin = margin

    def _scores(self, queries: list[str], passages: list[str]) -> torch.Tensor:
        from sentence_transformers.util import batch_to_device

        inputs = batch_to_device(self.model.preprocess(list(zip(queries, passages))), self.model.device)
        return self.model(inputs)["scores"].view(-1)

    def forward(self, inputs: list[list[str]], labels=None, prompt=None, task=None) -> torch.Tensor:
        queries, positives, negatives = inputs[0], inputs[1], inputs[2]
        scores = self._scores(queries + queries, positives + negatives).float()
        difference = scores[:len(queries)] - scores[len(queries):]
        return torch.relu(self.margin - difference).mean()

    def get_config_dict(self) -> dict:
        return {"margin": self.margin}


def _loss(model, name: str) -> torch.nn.Module:
    if name == "margin":
        return MarginLoss(model)
    from sentence_transformers.cross_encoder.losses import MultipleNegativesRankingLoss

    return MultipleNegativesRankingLoss(model)


def _triples(data) -> pd.DataFrame:
    columns = ["query", "positive", "negative"]
    if data is None:
        return pd.DataFrame(columns=["qid", *columns])
    if isinstance(data, pd.DataFrame):
        frame = require_frame(data, "triples", columns)[columns].reset_index(drop=True)
    else:
        if isinstance(data, (str, bytes)) or not isinstance(data, Iterable):
            raise TypeError(f"data must be (query, positive, negative) triples or a frame of them, got {type(data)}")
        rows = list(data)
        bad = [i for i, row in enumerate(rows) if isinstance(row, str) or not hasattr(row, "__len__") or len(row) != 3]
        if bad:
            raise ValueError(f"triples rows {bad[:10]} are not (query, positive, negative) 3-tuples: {rows[bad[0]]!r}")
        frame = pd.DataFrame(rows, columns=columns)
    empty = frame.isna().any(axis=1) | (frame.astype(str).apply(lambda c: c.str.strip()) == "").any(axis=1)
    if empty.any():
        raise ValueError(f"triples rows {row_positions(empty)} have an empty or missing query, positive or negative")
    frame = frame.astype(str)
    same = frame["positive"] == frame["negative"]
    if same.any():
        raise ValueError(f"triples rows {row_positions(same)} have the same text as positive and negative")
    return frame.assign(qid="")


def _columns(frame: pd.DataFrame, columns: list[str], name: str) -> pd.DataFrame:
    out = require_frame(frame, name, columns)[columns].reset_index(drop=True).copy()
    for column in columns:
        out[column] = numeric_column(out, column, name) if column == "label" else out[column].astype(str)
    return out


def _candidate_pools(candidates: pd.DataFrame, top_k: int) -> dict[str, list[str]]:
    require_frame(candidates, "candidates", ["qid", "docno"])
    if "rank" in candidates.columns:
        ordered = candidates.sort_values(["qid", "rank"], kind="stable")
    elif "score" in candidates.columns:
        ordered = candidates.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
    else:
        raise ValueError(f"candidates need a rank or a score column to find the top {top_k}; got {list(candidates.columns)}")
    ordered = ordered.assign(qid=ordered["qid"].astype(str), docno=ordered["docno"].astype(str))
    return {qid: group["docno"].head(top_k).tolist() for qid, group in ordered.groupby("qid", sort=False)}


@contextlib.contextmanager
def _quiet_loading(verbose: bool):
    import logging

    from transformers.utils import logging as hf_logging

    st_logger = logging.getLogger("sentence_transformers")
    levels = hf_logging.get_verbosity(), st_logger.level
    if not verbose:
        hf_logging.set_verbosity_error()
        st_logger.setLevel(logging.ERROR)  # "Converting SentenceTransformer model ... to CrossEncoder"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore" if not verbose else "default")
            yield
    finally:
        hf_logging.set_verbosity(levels[0])
        st_logger.setLevel(levels[1])


def _write_training_log(output_dir: Path, state) -> None:
    """``training_log.json`` beside the model: steps, and the first and last logged loss."""
    import json

    losses = [entry["loss"] for entry in state.log_history if "loss" in entry]
    log = {"steps": state.global_step, "loss_first": losses[0] if losses else None,
           "loss_last": losses[-1] if losses else None}
    (output_dir / "training_log.json").write_text(json.dumps(log))


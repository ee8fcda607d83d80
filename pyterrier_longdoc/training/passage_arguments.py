"""PassageArguments: every setting of the passage stage (``train_passage_ranker``), typed and checked
in one place, as ``TrainingArguments`` is for ``fit`` (and sentence-transformers'
``CrossEncoderTrainingArguments`` for its trainer): one name, one default and one check per field.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import InitVar, dataclass
from typing import Any, TypedDict

import torch

from ..engine.backbone import check_attention_dropout
from ..engine.runtime import Runtime
from .._warn import REMOVED_IN, LongDocDeprecationWarning, warn
from .arguments import _integer, _is_number, _positive_int, did_you_mean

__all__ = ["PassageArguments", "LOSSES"]

LOSSES = ("margin", "mnrl")
# keyword arguments of earlier releases: (the new field, how the old value reads as the new one)
# old name -> (new name, the new value from the old); each works until _warn.REMOVED_IN, with a DeprecationWarning
_DEPRECATED = {"bf16": ("dtype", lambda bf16: "bf16" if bf16 else "fp32"),
               # batch_size is the models' (query, chunk) sequences per encoder call; here it counted triples per step
               "batch_size": ("triples_per_step", lambda triples: triples)}


@dataclass
class PassageArguments:
    """Settings of the passage stage (:func:`~pyterrier_longdoc.training.train_passage_ranker`).

    Attributes:
        steps: optimiser steps; default (None) ``epochs`` passes over the triples.
        epochs: passes over the triples when ``steps`` is None.
        lr: the papers use 1e-5 to 3e-5 over 100k+ steps; a few hundred CPU steps need ~1e-4
            (measured: MiniLM at 3e-5 learns nothing in 120 steps of 8, at 1e-4 a usable ranker).
        head_lr: the rate of the sequence-classification head (the parameters outside the
            encoder: a fresh one over a plain encoder); default (None) ``lr``. A fresh head at the
            encoder's rate barely turns from its random direction in a few hundred steps, so
            the encoder has to learn towards it; the papers' document training gives the head
            ten times the encoder's rate. (The recipe leaves it off: with it and no attention
            dropout the passage stage did better on GCIDE and worse on FOLDOC.)
        triples_per_step: (query, positive, negative) triples per optimiser step (``batch_size``, its old name,
            works until version 0.3.0 with a DeprecationWarning: a model's ``batch_size`` counts sequences per
            encoder call).
        warmup: fraction of the steps with a linearly rising rate (then linear decay, the
            Trainer's default schedule).
        loss: ``"margin"`` (hinge on ``score(positive) - score(negative)`` with margin 1, as the
            papers' document training and ``fit``) or ``"mnrl"`` (sentence-transformers'
            MultipleNegativesRankingLoss: softmax over the positive, the hard negative and the
            batch's other passages).
        negatives_per_query: triples per relevant passage, when triples are drawn from frames.
        top_k: the non-relevant candidates of a topic that hard negatives are drawn from.
        max_length: tokens of query + passage.
        seed: sampling of negatives, the head's initialisation and the data order.
        dtype: mixed precision, as the models take it, with their default: ``None`` (bf16 or fp16
            on CUDA, fp32 elsewhere, so that a recipe without ``dtype`` trains both stages alike on
            every CPU), ``"auto"`` (also bf16 on CPUs that have it natively), ``"bf16"``,
            ``"fp16"`` (GPUs only), ``"fp32"`` or a ``torch.dtype``; ``"int8"`` quantizes inference
            only, so it trains in fp32. (``bf16=True``/``False``, its deprecated form, still works
            for one release with a DeprecationWarning.)
        device: where to train; default CUDA if available, else MPS if available, else the CPU.
        verbose: the loading reports of transformers and sentence-transformers, and each logged
            loss, printed.
        progress: a progress bar over the optimiser steps, with the last logged loss (on stderr);
            ``False`` for none. On a CPU this stage takes minutes: the bar shows it is working.
        attention_dropout: the dropout on the attention probabilities while training (default
            ``None``: the backbone's own, 0.1 for BERT-style encoders); ``0.0`` lets PyTorch use
            its fused attention kernel on the CPU (a step at 256 tokens takes about 30% less
            time), as ``fit``'s option of the same name. The saved config keeps the backbone's.
        checkpoint_every: write the Trainer's checkpoint (weights, optimizer, scheduler, RNG
            states) to ``output_dir/trainer`` every this many steps, and resume from the latest one
            there when a run is started again with the same backbone, triples and settings (a run
            started with others is refused); default (None) no checkpoints. Once the stage has
            finished and saved its model, its checkpoints are removed.
        restart: remove the checkpoints in ``output_dir/trainer`` and train from the first step.
    """

    steps: int | None = None
    epochs: int = 1
    lr: float = 1e-4
    head_lr: float | None = None
    triples_per_step: int = 8
    warmup: float = 0.1
    loss: str = "margin"
    negatives_per_query: int = 1
    top_k: int = 20
    max_length: int = 256
    seed: int = 42
    dtype: str | torch.dtype | None = None
    device: str | torch.device | None = None
    verbose: bool = False
    progress: bool = True
    attention_dropout: float | None = None
    checkpoint_every: int | None = None
    restart: bool = False
    batch_size: InitVar[int | None] = None  # triples_per_step's old name, until version 0.3.0

    def __post_init__(self, batch_size: int | None = None):
        if batch_size is not None:
            if self.triples_per_step != 8 and self.triples_per_step != batch_size:
                raise TypeError("PassageArguments: give triples_per_step only: batch_size= is its deprecated form")
            warn(f"PassageArguments(batch_size=...) is deprecated: use triples_per_step={batch_size!r} (batch_size "
                 f"is removed in version {REMOVED_IN})",
                 LongDocDeprecationWarning)
            self.triples_per_step = batch_size
        if self.loss not in LOSSES:
            raise ValueError(f"loss must be one of {LOSSES}, got {self.loss!r}")
        for name in ("epochs", "triples_per_step", "negatives_per_query", "top_k", "max_length"):
            _positive_int(name, getattr(self, name))
        for name in ("steps", "checkpoint_every"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name), "or None")
        _integer("seed", self.seed)
        if not (_is_number(self.lr) and self.lr > 0):
            raise ValueError(f"lr must be a positive number, got {self.lr!r}")
        if self.head_lr is not None and not (_is_number(self.head_lr) and self.head_lr > 0):
            raise ValueError(f"head_lr must be a positive number or None, got {self.head_lr!r}")
        if not _is_number(self.warmup) or not 0 <= self.warmup < 1:
            raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {self.warmup!r}")
        for name in ("verbose", "progress", "restart"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        check_attention_dropout(self.attention_dropout)
        Runtime(dtype=self.dtype, device=self.device)  # its own checks, with the models' messages

    @classmethod
    def from_options(cls, options: Mapping[str, Any] | None = None, base: PassageArguments | None = None,
                     where: str = "train_passage_ranker") -> PassageArguments:
        """``base`` (default: the defaults) with ``options`` over it: keyword arguments, the recipe's
        ``passage_options`` or a saved dict of them. An explicit option wins over ``base``; an
        unknown name is a TypeError naming it and the valid ones; a deprecated name (``bf16``)
        still works with a DeprecationWarning naming its replacement."""
        if base is not None and not isinstance(base, PassageArguments):
            raise TypeError(f"{where}: args must be a PassageArguments, got {type(base).__name__}")
        options = dict(options or {})
        for old, (new, convert) in _DEPRECATED.items():
            if options.get(old) is None:
                options.pop(old, None)
                continue
            if options.get(new) is not None:
                raise TypeError(f"{where}: give {new} only: {old}= is its deprecated form")
            warn(f"{where}({old}=...) is deprecated: use {new}={convert(options[old])!r} ({old} is removed in "
                 f"version {REMOVED_IN})",
                 LongDocDeprecationWarning)
            options[new] = convert(options.pop(old))
        valid = [f.name for f in dataclasses.fields(cls)]
        unknown = [name for name in options if name not in valid]
        if unknown:
            raise TypeError(f"{where}: unknown argument{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(map(repr, unknown))}{did_you_mean(unknown[0], valid)}; PassageArguments' "
                            f"fields: {', '.join(valid)}")
        return dataclasses.replace(base or cls(), **options)

    def to_dict(self) -> dict:
        """The fields that differ from their defaults (what ``from_options`` reads back)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if getattr(self, f.name) != f.default}


class PassageOptions(TypedDict, total=False):
    """``train_passage_ranker``'s keywords for type checkers (PEP 692): PassageArguments' fields, their types
    (``tests/training/test_passage.py`` keeps them equal), and the deprecated names ``from_options`` still takes."""

    steps: int | None
    epochs: int
    lr: float
    head_lr: float | None
    triples_per_step: int
    warmup: float
    loss: str
    negatives_per_query: int
    top_k: int
    max_length: int
    seed: int
    dtype: str | torch.dtype | None
    device: str | torch.device | None
    verbose: bool
    progress: bool
    attention_dropout: float | None
    checkpoint_every: int | None
    restart: bool
    batch_size: int | None  # deprecated: triples_per_step, until version 0.3.0
    bf16: bool | None  # deprecated: dtype, until version 0.3.0


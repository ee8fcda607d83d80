"""TrainingArguments: every setting of document-level training, typed and checked in one place.

In the spirit of transformers' ``TrainingArguments`` and sentence-transformers'
``CrossEncoderTrainingArguments``: ``fit``, a model's ``fit_options``, ``fit_best``, the command
line and the demo all build one, so a setting has one name, one default and one check. The
fields marked ``identity`` define a checkpoint's identity: resuming with another value is refused.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import numbers
from dataclasses import dataclass, field
from typing import Any

from ..engine.backbone import check_attention_dropout

__all__ = ["TrainingArguments", "DATA_OPTIONS", "check_option_names", "did_you_mean", "fit_option_defaults"]

# fit's keyword arguments that are data or callables, not settings (they are never saved)
DATA_OPTIONS = ("text", "valid_topics", "valid_qrels", "valid_candidates", "callback")


def _identity(default, *, since: str | None = None, **kwargs):
    """A field that is part of a checkpoint's identity. ``since``: the version that added it; a
    checkpoint of an older version records no value, so the field is left out of the identity
    while it has its default (those checkpoints stay resumable)."""
    return field(default=default, metadata={"identity": True, "since": since}, **kwargs)


def _recording_given(cls):
    """A dataclass whose ``__init__`` also records which fields its caller set (``given``)."""
    fields_init = cls.__init__

    @functools.wraps(fields_init)
    def __init__(self, *args, **kwargs) -> None:
        fields_init(self, *args, **kwargs)
        self.given = frozenset([f.name for f in dataclasses.fields(cls)][:len(args)]) | frozenset(kwargs)

    cls.__init__ = __init__
    return cls


@_recording_given
@dataclass
class TrainingArguments:
    """Settings of :func:`pyterrier_longdoc.training.fit`.

    Defaults follow the papers (PARADE; Boytsov et al.): one positive and one hard negative from
    the ``top_k`` candidates per query, the pairwise margin loss, AdamW at ``lr`` 1e-5 for the
    encoder (the papers use 1e-5 to 3e-5; 1e-4, a passage-stage rate at CPU scale, collapsed a
    trained FirstP to a random order) and ``head_lr`` 1e-4 for the rest, weight decay 1e-7,
    linear warm-up over the first 20% of steps, 16 queries per optimiser step, one epoch; the
    rates are multiplied by ``epoch_lr_decay`` after each epoch (1.0: constant; the authors'
    FlexNeuART configurations for Boytsov et al. use 0.95).

    Validation and model selection (as transformers' ``load_best_model_at_end``): with
    validation data, given to ``fit`` or carved from the training queries by ``valid_fraction``,
    the starting model is evaluated, then every ``eval_every`` steps and after every epoch; at
    the end the best model by ``valid_metric`` is restored (the start included, so training never
    ends below its start on validation), and ``patience`` evaluations without improvement stop
    training early.

    ``given`` names the fields the caller set (the constructor's arguments, ``from_options``'
    names, ``replace``'s changes): a model's own ``fit_options`` (e.g. the LLM classes' LoRA
    rate) still apply to the others when these arguments are passed to its ``fit``.

    Settings:
        loss: ``"margin"``, ``"listwise"`` (softmax cross-entropy over the positive and ``negatives``
            negatives) or an ``nn.Module`` taking scores ``[queries, 1 + negatives]``.
        valid_fraction: a fraction of the training queries that have a judged-relevant document
            (at least one query), drawn by ``seed``, held out for validation (their candidates
            come from the same ``candidates``); disjoint from the training queries.
        valid_metric: an ir_measures name (``"nDCG@10"``, ``"RR@10"``, ...). With validation the
            starting model is evaluated before the first step, then every ``eval_every`` steps and
            after every epoch (the history's ``valid_metric`` column; the start's value is in
            ``attrs["selection"]``).
        load_best_model_at_end: (default True) restore the best evaluated model at the end, the
            start included, so training never ends below its start on validation; a
            ``TrainingBelowStartWarning`` says when the last evaluation was below the start. The
            history's ``attrs["selection"]`` holds the start, best, best step and last value, and
            what random orders of the validation candidates score (``random``: their mean;
            ``random_p95``: 95% of them score less); a ``ChanceLevelWarning`` says when the best
            model is no better than that: nothing that tells the answers apart was learned.
        patience: stop after this many evaluations without improvement (early stopping).
        checkpoint_dir: written atomically every ``checkpoint_every`` steps and after every epoch;
            a later call with the same directory resumes from the newest valid checkpoint (a
            damaged one is skipped with a warning) and ends with the same model as an
            uninterrupted run, selection included (the best weights are kept in ``best/``).
            Resuming with other settings or other training data (topics, qrels, the candidates'
            ranking, the documents' text) is refused. With selection, the last checkpoint is
            rewritten with the selected weights, so ``from_pretrained(checkpoint_dir)`` loads the
            model ``fit`` ended with.
        save_total_limit: how many of the newest checkpoints are kept.
        restart: remove the checkpoints of ``checkpoint_dir`` and train from the first step.
        attention_dropout: the dropout on the encoder's attention probabilities while training
            (default ``None``: the model's own, 0.1 for BERT-style encoders, as the papers train).
            ``0.0`` lets PyTorch use its fused attention kernel on the CPU, which takes no dropout:
            a training step at 512 tokens takes about 40% less time
            (``benchmarks/attention_dropout.py``). The model's config and inference are unchanged.
        epoch_lr_decay: multiply both rates by this after each epoch (default 1.0: constant after
            the warm-up; the authors' configurations for Boytsov et al.'s models use 0.95).
        max_grad_norm: clip the gradient of each optimiser step (over all parameters, after
            unscaling) to this L2 norm, and record the norm before clipping in the history's
            ``grad_norm`` column. Default off (``None``), as in PARADE's and FlexNeuART's training.
    """

    # the fields its caller set, recorded by __init__ (_recording_given) and kept by replace: not annotated, so
    # not a field
    given = frozenset[str]()
    epochs: int = _identity(1)
    loss: Any = _identity("margin")
    negatives: int = _identity(1)
    top_k: int = _identity(100)
    lr: float = _identity(1e-5)
    head_lr: float = _identity(1e-4)
    weight_decay: float = _identity(1e-7)
    warmup: float = _identity(0.2)
    queries_per_step: int = _identity(16)
    queries_per_forward: int = field(default=4)  # memory only: the same gradients in any size
    seed: int = _identity(42)
    max_grad_norm: float | None = _identity(None, since="0.2")
    valid_metric: str = _identity("nDCG@10", since="0.3")
    valid_fraction: float = _identity(0.0, since="0.3")
    eval_every: int | None = _identity(None, since="0.3")
    patience: int | None = _identity(None, since="0.3")
    load_best_model_at_end: bool = _identity(True, since="0.3")
    attention_dropout: float | None = _identity(None, since="0.3")
    epoch_lr_decay: float = _identity(1.0, since="0.3")
    checkpoint_dir: Any = None
    checkpoint_every: int | None = None
    save_total_limit: int = 2
    restart: bool = False

    def __post_init__(self):
        for name in ("epochs", "negatives", "top_k", "queries_per_step", "queries_per_forward", "save_total_limit"):
            _positive_int(name, getattr(self, name))
        for name in ("eval_every", "patience", "checkpoint_every"):
            if getattr(self, name) is not None:
                _positive_int(name, getattr(self, name), "or None")
        _integer("seed", self.seed)
        for name in ("lr", "head_lr"):
            _number(name, getattr(self, name), low=0.0, low_open=True)
        _number("epoch_lr_decay", self.epoch_lr_decay, low=0.0, low_open=True)
        _number("weight_decay", self.weight_decay, low=0.0)
        if not _is_number(self.warmup) or not 0 <= self.warmup < 1:
            raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {self.warmup!r}")
        if not _is_number(self.valid_fraction) or not 0 <= self.valid_fraction < 1:
            raise ValueError(f"valid_fraction is a fraction of the training queries in [0, 1), got "
                             f"{self.valid_fraction!r}")
        check_attention_dropout(self.attention_dropout)
        if self.max_grad_norm is not None and (not _is_number(self.max_grad_norm) or self.max_grad_norm <= 0):
            raise ValueError(f"max_grad_norm must be a positive number or None (no clipping), got {self.max_grad_norm!r}")
        for name in ("load_best_model_at_end", "restart"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        _check_metric(self.valid_metric)  # here, not when validation first runs (or never, without validation)
        from .losses import make_loss

        make_loss(self.loss)  # an unknown loss fails here, not at the first step

    @classmethod
    def from_options(cls, options: dict | None = None, **overrides) -> TrainingArguments:
        """Arguments from a dict of options (e.g. a model's ``fit_options``), refusing unknown names."""
        options = {**(options or {}), **overrides}
        check_option_names(options, "training options", data=False)
        return cls(**options)

    def replace(self, **changes) -> TrainingArguments:
        check_option_names(changes, "training options", data=False)
        replaced = dataclasses.replace(self, **changes)
        replaced.given = self.given | frozenset(changes)
        return replaced

    def identity(self) -> dict:
        """The settings a checkpoint records: resuming with other values is refused."""
        out = {}
        for f in dataclasses.fields(self):
            if not f.metadata.get("identity"):
                continue
            value = getattr(self, f.name)
            if f.metadata.get("since") and value == f.default:
                continue  # not recorded by older versions while at its default
            out[f.name] = str(value) if f.name == "loss" else value
        return out


def fit_option_defaults(data: bool = True) -> dict[str, Any]:
    """The options ``fit`` takes, with their defaults: the settings, and (``data``) the data
    arguments such as ``text`` and ``valid_topics``."""
    settings = {f.name: f.default for f in dataclasses.fields(TrainingArguments)}
    return {**settings, **({name: None for name in DATA_OPTIONS} if data else {})}


def check_option_names(options: dict, where: str = "fit_options", *, data: bool = True) -> dict:
    """``options`` itself; a TypeError naming every unknown option and listing the valid ones, where
    they are given (a model's ``fit_options``, the CLI's ``--fit``) rather than when training starts."""
    if not isinstance(options, dict):
        raise TypeError(f"{where} must be a dict of fit options, got {type(options).__name__}")
    valid = list(fit_option_defaults(data))
    unknown = [name for name in options if name not in valid]
    if unknown:
        raise TypeError(f"{where}: unknown fit option{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(map(repr, unknown))}{did_you_mean(unknown[0], valid)}; valid options: "
                        f"{', '.join(valid)}")
    return options


def did_you_mean(name: str, valid) -> str:
    """`` (did you mean 'epochs'?)`` when a valid name is close to ``name`` (a typo or a singular), else ``""``."""
    import difflib

    close = difflib.get_close_matches(str(name), list(valid), n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _check_metric(name) -> None:
    import ir_measures

    try:
        if not isinstance(name, str):
            raise TypeError(f"not a string but {type(name).__name__}")
        ir_measures.parse_measure(name)
    except Exception as error:  # noqa: BLE001 - ir_measures raises NameError and others for unknown names
        raise ValueError(f"valid_metric {name!r} is not an ir_measures measure ({error}); use a name such as "
                         "'nDCG@10', 'RR@10', 'AP' or 'P@10'") from None


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def _integer(name: str, value) -> None:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")


def _positive_int(name: str, value, extra: str = "") -> None:
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive integer{' ' + extra if extra else ''}, got {value!r}")


def _number(name: str, value, *, low: float, low_open: bool = False) -> None:
    if not _is_number(value) or value < low or (low_open and value == low):
        bound = f"> {low}" if low_open else f">= {low}"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")

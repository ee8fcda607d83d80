"""Model selection on validation: the best model so far, early stopping, and what a run reports.

As transformers' Trainer does with ``load_best_model_at_end``: the starting model is evaluated
first, so a run whose every later evaluation is worse ends with the weights it started from.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from ..engine.files import os_errors_naming
from .._warn import LongDocWarning, warn

BEST_DIR = "best"
PAPERS_LR = (1e-5, 3e-5)  # the encoder rates of PARADE's and Boytsov et al.'s training


class Selection:
    """The best validation value so far, its step and (on the CPU) its trainable weights."""

    def __init__(self, metric: str, patience: int | None):
        self.metric = metric
        self.patience = patience
        self.start: float | None = None
        self.best: float | None = None
        self.best_step: int | None = None
        self.last: float | None = None
        self.since_best = 0
        self.stopped_early = False
        self._weights: dict[str, torch.Tensor] | None = None

    def record(self, value: float, step: int, model: torch.nn.Module) -> bool:
        """Takes one evaluation; returns whether it is a new best (ties keep the earlier model)."""
        if not math.isfinite(value):
            raise ValueError(f"validation {self.metric} at step {step} is {value}")
        if self.start is None:
            self.start = value
        self.last = value
        if self.best is not None and value <= self.best:
            self.since_best += 1
            self.stopped_early = self.patience is not None and self.since_best >= self.patience
            return False
        self.best, self.best_step, self.since_best = value, step, 0
        self._weights = trainable_weights(model)
        return True

    def restore(self, model: torch.nn.Module) -> None:
        """Puts the best weights back into ``model``."""
        if self._weights is None:
            raise RuntimeError("no evaluation recorded: nothing to restore")
        with torch.no_grad():
            parameters = dict(model.named_parameters())
            for name, value in self._weights.items():
                parameters[name].copy_(value)
        weights_changed = getattr(model, "weights_changed", None)
        if weights_changed is not None:  # a bi-encoder's kept window embeddings are of the last weights
            weights_changed()

    # -- checkpoints: the state in the trainer state, the weights in best/step-N.safetensors

    def state_dict(self) -> dict:
        return {"start": self.start, "best": self.best, "best_step": self.best_step, "last": self.last,
                "since_best": self.since_best, "stopped_early": self.stopped_early}

    def save_weights(self, directory: Path) -> None:
        """Writes the best weights once per best step (atomically), where a resumed run finds them."""
        if self.best_step is None or self._weights is None:
            return
        path = weights_path(directory, self.best_step)
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{path.name}")
        try:
            with os_errors_naming(path, "not written: the best weights written before are as they were", inner=tmp):
                save_file({k: v.contiguous() for k, v in self._weights.items()}, str(tmp))
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        os.replace(tmp, path)

    def load(self, state: dict, directory: Path) -> None:
        """Restores the state a checkpoint recorded, and the best weights it refers to."""
        for key, value in state.items():
            setattr(self, key, value)
        if self.best_step is not None:
            path = weights_path(directory, self.best_step)
            if not path.is_file():
                raise FileNotFoundError(f"{path} is missing: the checkpoint's best model (step {self.best_step}) "
                                        "cannot be restored; use restart=True to train from the start")
            self._weights = load_file(str(path))

    def report(self) -> dict:
        return {"metric": self.metric, "start": self.start, "best": self.best, "best_step": self.best_step,
                "last": self.last, "stopped_early": self.stopped_early}

    def warn_if_below_start(self, restored: bool, lr: float | None = None) -> None:
        """The warning a run that ended below its start on validation gives; it advises a lower
        encoder rate only when ``lr`` is above the papers' range."""
        if self.start is None or self.last is None or self.last >= self.start:
            return
        ended = f"training ended below its start on validation ({self.metric} {self.last:.4f} at the last " \
                f"evaluation, {self.start:.4f} before training)"
        if restored:
            which = "the starting weights" if self.best_step == 0 else f"the weights of step {self.best_step}"
            warn(f"{ended}; {which} ({self.metric} {self.best:.4f}) were restored. {_advice(lr)}",
                 TrainingBelowStartWarning)
        else:
            warn(f"{ended}; the last weights were kept (load_best_model_at_end=False)", TrainingBelowStartWarning)

    def warn_if_at_chance(self, chance: float, chance_p95: float) -> None:
        """The warning a run whose best model scores no more than random orders of the validation
        candidates do 1 time in 20 gives: it ranks the answers no better than a random order."""
        if self.best is None or self.best > chance_p95:
            return
        warn(f"the best model ranks the validation queries no better than a random order ({self.metric} "
             f"{self.best:.4f}; random orders of the same candidates: {chance:.4f} on average, 5% of them "
             f"above {chance_p95:.4f}). The model it started from may rank no better itself: if it comes "
             "from train_passage_ranker, train that with more steps or another seed; or the validation "
             "queries are too few to tell: hold out more (TrainingArguments(valid_fraction=...), or more "
             "valid_topics).",
             ChanceLevelWarning)


def _advice(lr: float | None) -> str:
    if lr is None or lr > PAPERS_LR[1]:
        return (f"A lower rate may train better: TrainingArguments(lr=...) (the papers use {PAPERS_LR[0]:g} to "
                f"{PAPERS_LR[1]:g} for the encoder{'' if lr is None else f'; this run used {lr:g}'}).")
    # already in the papers' range: a lower rate is not the likely cure
    return (f"Its lr ({lr:g}) is already in the papers' range ({PAPERS_LR[0]:g} to {PAPERS_LR[1]:g}): more "
            "training queries, more validation queries (a few make the metric noisy) or a better starting "
            "model (a passage stage) are more likely to help.")


class TrainingBelowStartWarning(LongDocWarning):
    """Training ended with a validation metric below the starting model's."""


class ChanceLevelWarning(LongDocWarning):
    """The best model's validation metric is no better than a random order of the candidates."""


def trainable_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """A CPU copy of the parameters training changes (frozen ones, e.g. under LoRA, never change)."""
    return {name: p.detach().to("cpu", copy=True) for name, p in model.named_parameters() if p.requires_grad}


def weights_path(directory: Path, step: int) -> Path:
    return Path(directory) / BEST_DIR / f"step-{step:06d}.safetensors"


def prune_weights(directory: Path, keep_steps: set[int]) -> None:
    """Removes the best weights no kept checkpoint refers to."""
    folder = Path(directory) / BEST_DIR
    if not folder.is_dir():
        return
    keep = {weights_path(directory, s).name for s in keep_steps}
    for path in folder.iterdir():
        if path.name not in keep:
            path.unlink(missing_ok=True)

"""The Trainer: one end-to-end training run, step by step, with evaluation, selection and checkpoints."""
from __future__ import annotations

import contextlib
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..engine.config import ModelConfig
from ..engine.progress import progress_bar
from .._warn import warn
from .arguments import TrainingArguments
from .checkpoints import STATE_JSON, remove_checkpoints, remove_leftovers, resume, save_checkpoint
from .checkpoints import checkpoints as list_checkpoints
from .distributed import (barrier, broadcast_value, distributed_setup, micro_batches, rng_states, scoring_module,
                          sum_across_processes)
from .losses import make_loss
from .sampling import sample_epoch
from .scorer import Scorer
from .selection import Selection, prune_weights


@dataclass
class PreparedData:
    """What a run trains on, checked: topics, each usable query's (positives, negatives), the
    sampled documents' text, the data's fingerprint and (with validation) the metric's evaluation."""

    topics: pd.DataFrame
    pools: dict
    texts: dict[str, str]
    fingerprint: dict
    evaluate: Callable[[], float] | None = None
    chance: tuple[float, float] | None = None  # random orders' validation metric: mean, 95th percentile


class CheckpointedRun:
    """The Trainer's checkpoints: resuming a run where it stopped (refusing one of other options
    or data), and writing the run's state atomically, with the selection's best weights."""

    # the run's state, which the Trainer sets up
    reranker: Scorer
    args: TrainingArguments
    data: PreparedData
    directory: Path | None
    world: int
    rank: int
    optimizer: torch.optim.Optimizer
    scheduler: torch.optim.lr_scheduler.LRScheduler
    scaler: torch.amp.GradScaler | None
    selection: Selection | None
    total_steps: int
    global_step: int
    history: list[dict]
    resumed_from: Path | None

    def prepare_checkpoints(self) -> None:
        if self.directory is None:
            torch.manual_seed(self.args.seed)
            return
        if self.rank == 0:
            remove_leftovers(self.directory)
            if self.args.restart:
                remove_checkpoints(self.directory)
        barrier(self.world)
        resumed = resume(self.directory, self.reranker, self.optimizer, check=self.same_run, rank=self.rank)
        if resumed is None:
            torch.manual_seed(self.args.seed)
            return
        self.resumed_from, state = resumed
        self.global_step, self.history = state["step"], state["history"]
        warn(f"{self.resumed_from}: resumed at step {self.global_step} of {self.total_steps}"
             if self.global_step < self.total_steps else
             f"{self.resumed_from}: this run was already complete ({self.total_steps} steps): the model is "
             "its trained model, nothing was trained now (restart=True trains again)")
        if self.scaler is not None and state.get("grad_scaler"):
            self.scaler.load_state_dict(state["grad_scaler"])
        if self.selection is not None and state.get("selection"):
            self.selection.load(state["selection"], self.directory)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` before")
            for _ in range(self.global_step):  # catching up with the steps taken before
                self.scheduler.step()

    def same_run(self, path: Path, state: dict) -> None:
        """Refuses a checkpoint written with other options or other training data."""
        options = self.args.identity()
        if state["options"] != options:
            raise ValueError(f"{path} was written with other training options {state['options']}; "
                             f"use another checkpoint_dir, the same options ({options}), or restart=True")
        self.same_model(path)
        saved = state.get("data")
        if saved is None:
            warn(f"{path} does not record its training data (an older version wrote it); resuming without "
                 "checking that the topics, qrels and candidates are the same")
        elif saved != self.data.fingerprint:
            changed = [name for name in self.data.fingerprint if saved.get(name) != self.data.fingerprint[name]]
            raise ValueError(f"{path} was written for other training data (the {', '.join(changed)} differ); "
                             "use another checkpoint_dir, the same data, or restart=True to train from the start")

    def same_model(self, path: Path) -> None:
        """Refuses a checkpoint of another model class or other model settings (``window``,
        ``max_doc_tokens``, ...): its weights would load, but the run would go on as another model."""
        import json

        try:
            saved = ModelConfig.read(path)
        except ValueError:
            return  # a damaged config.json: loading the weights names it
        if saved is None:
            return
        current = self.reranker.config
        if saved.model != current.model:
            raise ValueError(f"{path} was written by a {saved.model!r} model, not this {current.model!r}; use another "
                             f"checkpoint_dir, a {saved.model!r} model, or restart=True to train from the start")
        plain = json.loads(json.dumps(current.settings))  # tuples as config.json holds them
        changed = {name: (saved.settings[name], value) for name, value in plain.items()
                   if name in saved.settings and saved.settings[name] != value}  # older versions lack newer settings
        if changed:
            listed = ", ".join(f"{name} {old!r} -> {new!r}" for name, (old, new) in sorted(changed.items()))
            raise ValueError(f"{path} was written with other model settings ({listed}); use another checkpoint_dir, "
                             "the same settings, or restart=True to train from the start")

    def checkpoint(self) -> None:
        if self.directory is not None:
            state = {"options": self.args.identity(), "data": self.data.fingerprint, "history": self.history}
            if self.scaler is not None:
                state["grad_scaler"] = self.scaler.state_dict()
            if self.selection is not None:
                state["selection"] = self.selection.state_dict()
            states = rng_states(self.world, self.reranker.device)  # every process takes part
            if self.rank == 0:
                if self.selection is not None:
                    self.selection.save_weights(self.directory)  # before the checkpoint that refers to it
                save_checkpoint(self.directory, self.global_step, self.reranker, self.optimizer, state,
                                keep=self.args.save_total_limit, rng_states=states)
                self.prune_best_weights(self.directory)
        barrier(self.world)

    @staticmethod
    def prune_best_weights(directory: Path) -> None:
        import json

        steps = set()
        for path in list_checkpoints(directory):
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                steps.add(json.loads((path / STATE_JSON).read_text())["selection"]["best_step"])
        prune_weights(directory, steps)


class Trainer(CheckpointedRun):
    """Trains ``reranker`` on ``data`` with ``args``: ``train()`` runs the whole run (resuming from
    ``args.checkpoint_dir`` when it holds a checkpoint) and returns the history, one row per step."""

    def __init__(self, reranker: Scorer, args: TrainingArguments, data: PreparedData,
                 callback: Callable[[dict], None] | None = None):
        self.reranker, self.args, self.data, self.callback = reranker, args, data, callback
        self.model = reranker.model
        self.world, self.rank = distributed_setup(reranker)
        head = [p for name, p in self.model.named_parameters() if not name.startswith("encoder.") and p.requires_grad]
        encoder = [p for p in self.model.encoder.parameters() if p.requires_grad]
        self.optimizer = adamw([{"params": encoder, "lr": args.lr}, {"params": head, "lr": args.head_lr}],
                               args.weight_decay)
        self.criterion = make_loss(args.loss)
        self.first_epoch = self.epoch_instances(0)
        self.steps_per_epoch = math.ceil(len(self.first_epoch) / args.queries_per_step)
        self.total_steps = self.steps_per_epoch * args.epochs
        warmup_steps, steps_per_epoch = int(args.warmup * self.total_steps), self.steps_per_epoch
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(  # warm-up, then constant but for the epochs' decay
            self.optimizer, lambda step: (min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0)
            * args.epoch_lr_decay ** (step // steps_per_epoch))
        self.scaler = grad_scaler(reranker)
        self.selection = Selection(args.valid_metric, args.patience) if data.evaluate is not None else None
        self.directory = Path(args.checkpoint_dir) if args.checkpoint_dir is not None else None
        self.history: list[dict] = []
        self.global_step = 0
        self.resumed_from: Path | None = None

    def epoch_instances(self, epoch: int) -> list:
        """A fixed function of (seed, epoch), so a resumed run sees the same data."""
        return sample_epoch(self.data.topics, self.data.pools, self.args.negatives,
                            np.random.default_rng([self.args.seed, epoch]))

    # -- the run

    def train(self) -> pd.DataFrame:
        self.prepare_checkpoints()
        if self.selection is not None and self.selection.start is None:
            self.evaluate()  # the start: what training must beat
        scoring = scoring_module(self.reranker, self.world)
        progress = progress_bar(self.reranker.verbose, total=self.total_steps, initial=self.global_step, unit="step",
                                desc=f"fit {type(self.reranker).__name__}", disable=bool(self.rank))
        with progress:
            for epoch in range(self.global_step // self.steps_per_epoch, self.args.epochs):
                if self.stopped():
                    break
                instances = self.first_epoch if epoch == 0 else self.epoch_instances(epoch)
                for epoch_step in range(self.global_step - epoch * self.steps_per_epoch, self.steps_per_epoch):
                    row = self.step(scoring, instances[epoch_step * self.args.queries_per_step:
                                                       (epoch_step + 1) * self.args.queries_per_step], epoch)
                    progress.update(1)
                    progress.set_postfix(loss=f"{row['loss']:.4f}")
                    end_of_epoch = epoch_step == self.steps_per_epoch - 1
                    if not end_of_epoch and self.due(self.args.eval_every):
                        self.evaluate()
                    if not end_of_epoch and (self.due(self.args.checkpoint_every) or self.stopped()):
                        self.checkpoint()
                    if self.callback is not None:
                        self.callback(row)
                    if self.stopped():
                        break
                else:
                    if self.selection is not None:
                        self.evaluate()
                    self.checkpoint()
        del scoring  # DDP's gradient hooks go with it
        self.model.eval()
        return self.finish()

    def due(self, every: int | None) -> bool:
        return every is not None and every != 0 and self.global_step % every == 0

    def stopped(self) -> bool:
        return self.selection is not None and self.selection.stopped_early

    def step(self, scoring, batch: list, epoch: int) -> dict:
        """One optimiser step over ``batch`` (this process's share, in micro-batches); its history row."""
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        parts = micro_batches(batch, self.rank, self.world, self.args.queries_per_forward)
        # DDP all-reduces the gradients during the last micro-batch's backward pass
        total = sum(self.backward(scoring, part, factor, synchronise=i == len(parts) - 1)
                    for i, (part, factor) in enumerate(parts))
        total = sum_across_processes(total, self.world, self.reranker.device)
        recorded = self.optimiser_step()
        self.global_step += 1
        row = {"step": self.global_step, "epoch": epoch, "loss": total / len(batch),
               "lr": self.optimizer.param_groups[0]["lr"], **recorded}
        self.history.append(row)
        return row

    def backward(self, scoring, part: list, factor: float, synchronise: bool) -> float:
        """Scores one micro-batch and back-propagates its loss times ``factor``; returns the loss."""
        accumulate = not synchronise and isinstance(scoring, torch.nn.parallel.DistributedDataParallel)
        with scoring.no_sync() if accumulate else contextlib.nullcontext():
            docnos = [d for inst in part for d in inst.docnos]
            queries = [inst.query for inst in part for _ in inst.docnos]
            value = self.criterion(scoring(queries, [self.data.texts[d] for d in docnos]).view(len(part), -1))
            loss = value.item() if factor else 0.0
            if factor != 1:
                value = value * factor
            (self.scaler.scale(value) if self.scaler is not None else value).backward()
        return loss

    def optimiser_step(self) -> dict:
        """Unscales, clips and steps; returns the history's columns of the loss scale and norm."""
        recorded = {}
        if self.scaler is not None:
            recorded["loss_scale"] = self.scaler.get_scale()
        if self.args.max_grad_norm is not None:
            if self.scaler is not None:
                self.scaler.unscale_(self.optimizer)
            recorded["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(),
                                                                         self.args.max_grad_norm))
        if self.scaler is not None:
            self.scaler.step(self.optimizer)  # skipped when a gradient is not finite
            self.scaler.update()
        else:
            self.optimizer.step()
        with warnings.catch_warnings():  # also after a step the scaler skipped: it is counted
            warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` before")
            self.scheduler.step()
        return recorded

    def evaluate(self) -> float:
        """The validation metric of the current model (rank 0 computes it), recorded for selection."""
        evaluate, selection = self.data.evaluate, self.selection
        if evaluate is None or selection is None:
            raise RuntimeError("no validation data: nothing to evaluate")
        value = evaluate() if self.rank == 0 else 0.0
        value = broadcast_value(value, self.world, self.reranker.device)
        if self.history:  # the start's value is in the selection's report (history: one row per step)
            self.history[-1][self.args.valid_metric] = value
        selection.record(value, self.global_step, self.model)
        return value

    def finish(self) -> pd.DataFrame:
        """Restores the best model (with selection), warns when training ended below its start,
        and returns the history with the selection's report in ``attrs["selection"]``."""
        history = pd.DataFrame(self.history)
        if self.selection is None:
            return history
        restore = self.args.load_best_model_at_end
        if restore:
            self.selection.restore(self.model)
            if self.selection.best_step != self.global_step:
                self.checkpoint()  # the last checkpoint holds the selected model: from_pretrained(checkpoint_dir)
        self.selection.warn_if_below_start(restored=restore, lr=self.args.lr)
        history.attrs["selection"] = {**self.selection.report(), "restored": restore}
        if self.data.chance is not None:
            self.selection.warn_if_at_chance(*self.data.chance)
            history.attrs["selection"].update(random=self.data.chance[0], random_p95=self.data.chance[1])
        return history


def adamw(groups: list[dict], weight_decay: float) -> torch.optim.AdamW:
    """AdamW with torch's fused kernel, as transformers' Trainer and sentence-transformers'
    CrossEncoderTrainer use by default: one pass over all the parameters, on the CPU too, where it
    takes less than half the foreach kernel's time (``benchmarks/training.py``, row T1d). It rounds
    otherwise than the per-tensor loop, by float noise (``tests/training/test_training.py``). Where
    torch has no fused kernel for the device or the parameters' dtype (the CPU before torch 2.4), the
    foreach one."""
    try:
        return torch.optim.AdamW(groups, weight_decay=weight_decay, fused=True)
    except RuntimeError:  # torch refuses fused=True for parameters it has no kernel for
        return torch.optim.AdamW(groups, weight_decay=weight_decay, foreach=True)


def grad_scaler(reranker: Scorer) -> torch.amp.GradScaler | None:
    """A loss scaler for fp16 autocast, whose small range lets gradients underflow or overflow;
    None for bf16 and fp32."""
    if reranker.autocast_dtype != torch.float16:
        return None
    return torch.amp.GradScaler(reranker.device.type)

"""End-to-end training: the aggregated document score goes into the loss."""
from __future__ import annotations

import contextlib
import math
import os
import warnings
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import pyterrier as pt
import torch

from .checkpoints import fingerprint, remove_checkpoints, remove_leftovers, resume, save_checkpoint
from .losses import make_loss
from .sampling import (Named, as_frame, checked_qrels, checked_topics, require_frame, sample_epoch, sampled_docnos,
                       training_data)


def fit(reranker, topics: pd.DataFrame, qrels: pd.DataFrame, candidates, *,
        epochs: int = 1, loss="margin", negatives: int = 1, top_k: int = 100,
        lr: float = 1e-5, head_lr: float = 1e-4, weight_decay: float = 1e-7, warmup: float = 0.2,
        queries_per_step: int = 16, queries_per_forward: int = 4, seed: int = 42, text=None,
        valid_topics: pd.DataFrame | None = None, valid_qrels: pd.DataFrame | None = None, valid_candidates=None,
        valid_metric: str = "nDCG@10", checkpoint_dir: str | os.PathLike | None = None,
        checkpoint_every: int | None = None, callback: Callable[[dict], None] | None = None,
        save_total_limit: int = 2, restart: bool = False, max_grad_norm: float | None = None) -> pd.DataFrame:
    """Train ``reranker`` end to end and return the training history (one row per optimiser step).

    Defaults follow the papers (PARADE; Boytsov et al.): per query, one positive and one hard
    negative sampled from the ``top_k`` candidates; the pairwise margin loss (margin 1, summed);
    AdamW with ``lr`` for the backbone and ``head_lr`` for the rest, weight decay 1e-7; linear
    warm-up over the first ``warmup`` fraction of steps, then a constant rate; ``queries_per_step``
    queries per optimiser step (gradient accumulation, ``queries_per_forward`` at a time); one epoch.

    Args:
        candidates: a result frame (qid, docno, rank or score) or a retrieval pipeline run on ``topics``.
        loss: ``"margin"``, ``"listwise"`` (softmax cross-entropy over the positive and ``negatives``
            negatives) or an ``nn.Module`` taking scores ``[queries, 1 + negatives]``.
        text: where document text comes from when the candidates have no ``text_field`` column or
            lack a positive: a pt.Transformer such as ``pt.text.get_text(dataset, "text")``, a dict
            or ``pd.Series`` from docno to text, a DataFrame with ``docno`` and the text column, or
            a function of a list of docnos. Only the documents training can sample (each usable
            query's positives and top_k negatives) and the validation candidates are fetched.
        valid_*: when given (all three of ``valid_topics``, ``valid_qrels``, ``valid_candidates``),
            ``valid_metric`` (an ir_measures name such as ``"nDCG@10"``) is computed after every epoch.
        checkpoint_dir: written atomically every ``checkpoint_every`` steps and after every epoch;
            a later call with the same directory resumes from the newest valid checkpoint (a
            damaged one is skipped with a warning) and ends with the same model as an
            uninterrupted run. Resuming with other options or other training data (topics,
            qrels, the candidates' ranking, the documents' text) is refused.
        callback: called after every optimiser step with the history row.
        save_total_limit: how many of the newest checkpoints are kept.
        restart: remove the checkpoints of ``checkpoint_dir`` and train from the first step.
        max_grad_norm: clip the gradient of each optimiser step (over all parameters, after
            unscaling) to this L2 norm, and record the norm before clipping in the history's
            ``grad_norm`` column. Default off (``None``), as in PARADE's and FlexNeuART's training.

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
    all-reduced in buckets while the last micro-batch's backward pass runs (the other micro-batches
    of a step accumulate locally under ``no_sync``), and they add up to the gradient one process
    computes on the whole global batch, so the same ``queries_per_step`` gives the same training
    (up to the order of floating-point sums). Every process calls ``fit`` with the same data and
    options, and its own device, e.g. ``device=f"cuda:{os.environ['LOCAL_RANK']}"``. Rank 0
    writes checkpoints (``checkpoint_dir`` must be on a file system every process reads, as each
    resumes from it, with its own RNG state) and runs validation. On the CPU a resumed run ends
    bit-identical to an uninterrupted one, in one process and in 2 (tested with gloo; with more,
    the all-reduce may add in another order); on a GPU, dropout draws from the GPU's generator,
    which checkpoints do not hold, and some CUDA kernels are not deterministic, so a resumed run
    ends close to, not bitwise equal to, an uninterrupted one.
    """
    if epochs < 1 or negatives < 1 or queries_per_step < 1 or queries_per_forward < 1:
        raise ValueError("epochs, negatives, queries_per_step and queries_per_forward must be positive")
    if not 0 <= warmup < 1:
        raise ValueError(f"warmup is a fraction of the steps in [0, 1), got {warmup}")
    if not isinstance(save_total_limit, int) or save_total_limit < 1:
        raise ValueError(f"save_total_limit must be a positive integer, got {save_total_limit!r}")
    if max_grad_norm is not None and (isinstance(max_grad_norm, bool) or not isinstance(max_grad_norm, (int, float))
                                      or not 0 < max_grad_norm < math.inf):
        raise ValueError(f"max_grad_norm must be a positive number or None (no clipping), got {max_grad_norm!r}")
    criterion = make_loss(loss)
    context = Named(f"{reranker!r}.fit")
    data = training_data(topics, qrels, candidates, top_k=top_k, text=text, text_field=reranker.text_field,
                         context=context)
    topics, qrels, candidate_frame, pools, lookup = data.topics, data.qrels, data.candidates, data.pools, data.lookup
    texts = document_texts(lookup, sampled_docnos(topics, pools), reranker.text_field, context)
    validation = validation_data(reranker, valid_topics, valid_qrels, valid_candidates, valid_metric, lookup, context)
    # what training reads of the candidates: each query's ranked negatives (retrieval scores that
    # differ in the last digit but rank the same are the same data), and the sampled documents' text
    ranked_negatives = pd.DataFrame([(qid, d, k) for qid, (_, neg) in pools.items() for k, d in enumerate(neg)],
                                    columns=["qid", "docno", "rank"])
    data = fingerprint(topics=topics[["qid", "query"]], qrels=qrels[["qid", "docno", "label"]],
                       candidates=ranked_negatives,
                       texts=pd.DataFrame({"docno": list(texts), "text": list(texts.values())}))

    world, rank = distributed_setup(reranker)
    model = reranker.model
    head = [p for name, p in model.named_parameters() if not name.startswith("encoder.")]
    optimizer = torch.optim.AdamW([{"params": list(model.encoder.parameters()), "lr": lr},
                                   {"params": head, "lr": head_lr}], weight_decay=weight_decay)
    def epoch_instances(epoch: int):  # a fixed function of (seed, epoch), so a resumed run sees the same data
        return sample_epoch(topics, pools, negatives, np.random.default_rng([seed, epoch]))

    first_epoch = epoch_instances(0)
    steps_per_epoch = math.ceil(len(first_epoch) / queries_per_step)
    total_steps = steps_per_epoch * epochs
    warmup_steps = int(warmup * total_steps)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0)

    options = dict(epochs=epochs, loss=str(loss), negatives=negatives, top_k=top_k, lr=lr, head_lr=head_lr,
                   weight_decay=weight_decay, warmup=warmup, queries_per_step=queries_per_step, seed=seed)
    if max_grad_norm is not None:  # only then: checkpoints written without clipping stay resumable
        options["max_grad_norm"] = max_grad_norm
    scaler = grad_scaler(reranker)
    history: list[dict] = []
    step = 0
    checkpoints = Path(checkpoint_dir) if checkpoint_dir is not None else None
    if checkpoints is not None:
        if rank == 0:
            remove_leftovers(checkpoints)
            if restart:
                remove_checkpoints(checkpoints)
        if world > 1:
            torch.distributed.barrier()

    def same_run(path: Path, state: dict) -> None:
        if state["options"] != options:
            raise ValueError(f"{path} was written with other training options {state['options']}; "
                             f"use another checkpoint_dir, the same options ({options}), or restart=True")
        saved = state.get("data")
        if saved is None:
            warnings.warn(f"{path} does not record its training data (an older version wrote it); resuming without "
                          "checking that the topics, qrels and candidates are the same", stacklevel=4)
        elif saved != data:
            changed = [name for name in data if saved.get(name) != data[name]]
            raise ValueError(f"{path} was written for other training data (the {', '.join(changed)} differ); "
                             "use another checkpoint_dir, the same data, or restart=True to train from the start")

    resumed = resume(checkpoints, reranker, optimizer, check=same_run, rank=rank) if checkpoints is not None else None
    if resumed is not None:
        path, state = resumed
        step, history = state["step"], state["history"]
        warnings.warn(f"{path}: resumed at step {step} of {total_steps}" if step < total_steps else
                      f"{path}: this run was already complete ({total_steps} steps): the model is its trained model, "
                      "nothing was trained now (restart=True trains again)", stacklevel=3)
        if scaler is not None and state.get("grad_scaler"):
            scaler.load_state_dict(state["grad_scaler"])
        for _ in range(step):  # catching up with the steps taken before
            advance(scheduler)
    else:
        torch.manual_seed(seed)
    scoring = scoring_module(reranker, world)

    def backward(part: list, factor: float, synchronise: bool) -> float:
        """Scores one micro-batch and back-propagates its loss times ``factor``; returns the loss."""
        accumulate = not synchronise and isinstance(scoring, torch.nn.parallel.DistributedDataParallel)
        with scoring.no_sync() if accumulate else contextlib.nullcontext():
            docnos = [d for inst in part for d in inst.docnos]
            queries = [inst.query for inst in part for _ in inst.docnos]
            value = criterion(scoring(queries, [texts[d] for d in docnos]).view(len(part), -1))
            loss = value.item() if factor else 0.0
            if factor != 1:
                value = value * factor
            (scaler.scale(value) if scaler is not None else value).backward()
        return loss

    def optimiser_step() -> dict:
        """Unscales, clips and steps; returns the history's columns of the loss scale and norm."""
        recorded = {}
        if scaler is not None:
            recorded["loss_scale"] = scaler.get_scale()
        if max_grad_norm is not None:
            if scaler is not None:
                scaler.unscale_(optimizer)
            recorded["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm))
        if scaler is not None:
            scaler.step(optimizer)  # skipped when a gradient is not finite
            scaler.update()
        else:
            optimizer.step()
        advance(scheduler)
        return recorded

    def checkpoint():
        if checkpoints is not None:
            trainer_state = {"options": options, "data": data, "history": history}
            if scaler is not None:
                trainer_state["grad_scaler"] = scaler.state_dict()
            states = rng_states(world, reranker.device)  # every process takes part
            if rank == 0:
                save_checkpoint(checkpoints, step, reranker, optimizer, trainer_state, keep=save_total_limit,
                                rng_states=states)
        if world > 1:
            torch.distributed.barrier()

    progress = pt.tqdm(total=total_steps, initial=step, desc=f"fit {type(reranker).__name__}", unit="step",
                       disable=not reranker.verbose or rank != 0)
    with progress:
        for epoch in range(step // steps_per_epoch, epochs):
            instances = first_epoch if epoch == 0 else epoch_instances(epoch)
            for epoch_step in range(step - epoch * steps_per_epoch, steps_per_epoch):
                model.train()
                batch = instances[epoch_step * queries_per_step:(epoch_step + 1) * queries_per_step]
                optimizer.zero_grad(set_to_none=True)
                parts = micro_batches(batch, rank, world, queries_per_forward)
                # DDP all-reduces the gradients during the last micro-batch's backward pass
                total = sum(backward(part, factor, synchronise=i == len(parts) - 1)
                            for i, (part, factor) in enumerate(parts))
                if world > 1:
                    total = sum_across_processes(total, reranker.device)
                recorded = optimiser_step()
                step += 1
                row = {"step": step, "epoch": epoch, "loss": total / len(batch), "lr": optimizer.param_groups[0]["lr"],
                       **recorded}
                history.append(row)
                progress.update(1)
                progress.set_postfix(loss=f"{row['loss']:.4f}")
                if checkpoint_every and step % checkpoint_every == 0 and step % steps_per_epoch:
                    checkpoint()
                if callback is not None:
                    callback(row)
            if validation is not None:
                value = evaluate(reranker, *validation, valid_metric, lookup) if rank == 0 else 0.0
                history[-1][valid_metric] = broadcast_value(value, world, reranker.device)
            checkpoint()
    del scoring  # DDP's gradient hooks go with it
    model.eval()
    return pd.DataFrame(history)


def grad_scaler(reranker) -> torch.amp.GradScaler | None:
    """A loss scaler for fp16 autocast, whose small range lets gradients underflow or overflow;
    None for bf16 and fp32."""
    if reranker.autocast_dtype != torch.float16:
        return None
    return torch.amp.GradScaler(reranker.device.type)


def advance(scheduler: torch.optim.lr_scheduler.LRScheduler) -> None:
    """One scheduler step, also after an optimiser step the gradient scaler skipped (as it is
    counted), without torch's warning that the optimiser did not step first."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Detected call of `lr_scheduler\.step\(\)` before")
        scheduler.step()


def micro_batches(batch: list, rank: int, world: int, size: int) -> list[tuple[list, float]]:
    """This process's share of a step's queries, ``size`` at a time, each with the factor of its loss.

    The losses are sums over queries and one process sums its micro-batches' gradients; DDP
    averages over the ``world`` processes, so each loss counts ``world`` times to make that
    average the sum over the global batch. A process left without queries (a last step with
    fewer queries than processes) must still join the all-reduce: it scores one query with
    factor 0, which adds nothing.
    """
    mine = batch[rank::world]
    if not mine:
        return [(batch[:1], 0.0)]
    factor = float(world)
    return [(mine[start:start + size], factor) for start in range(0, len(mine), size)]


class _Scoring(torch.nn.Module):
    """The reranker's differentiable scores as a module's ``forward``, the call DDP wraps."""

    def __init__(self, reranker):
        super().__init__()
        self.model = reranker.model
        self.score_batch = reranker.score_batch

    def forward(self, queries: list[str], texts: list[str]) -> torch.Tensor:
        return self.score_batch(queries, texts).scores


def scoring_module(reranker, world: int) -> torch.nn.Module:
    """``(queries, texts) -> scores`` for training; with several processes in DistributedDataParallel.

    DDP's constructor gives every process rank 0's weights (a fresh head differs in each). Heads
    that read the encoder's hidden states (CEDR, Neural Model 1, PARADE-CNN and -Transformer)
    leave its pooler without a gradient, hence ``find_unused_parameters``; such a parameter keeps
    no gradient, as in one process, and AdamW leaves it alone. The buffers (position ids) never
    change, so they are not broadcast again at every step.
    """
    scoring = _Scoring(reranker)
    if world == 1:
        return scoring
    return torch.nn.parallel.DistributedDataParallel(scoring, find_unused_parameters=True, forward_sync_buffers=False)


def distributed_setup(reranker) -> tuple[int, int]:
    """(world size, rank); joins the process group torchrun describes."""
    import torch.distributed as dist

    if not dist.is_available():
        return 1, 0
    if not dist.is_initialized() and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("nccl" if reranker.device.type == "cuda" else "gloo")
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return 1, 0
    return dist.get_world_size(), dist.get_rank()


def sum_across_processes(loss: float, device: torch.device) -> float:
    """The sum of a step's loss over the processes (DDP reduces the gradients, not the loss)."""
    import torch.distributed as dist

    total = torch.tensor([loss], dtype=torch.float64, device=device)
    dist.all_reduce(total)
    return float(total.item())


def rng_states(world: int, device: torch.device) -> list[torch.Tensor]:
    """The torch RNG state of every process, by rank (collective: every process calls it)."""
    state = torch.get_rng_state()
    if world == 1:
        return [state]
    import torch.distributed as dist

    gathered = [torch.empty_like(state, device=device) for _ in range(world)]
    dist.all_gather(gathered, state.to(device))  # on the device: NCCL gathers CUDA tensors only
    return [s.cpu() for s in gathered]


def broadcast_value(value: float, world: int, device: torch.device) -> float:
    if world == 1:
        return value
    import torch.distributed as dist

    tensor = torch.tensor([value], dtype=torch.float64, device=device)
    dist.broadcast(tensor, src=0)
    return float(tensor.item())


def evaluate(reranker, topics: pd.DataFrame, qrels: pd.DataFrame, candidates, metric: str, lookup) -> float:
    """Mean ``metric`` of the re-ranked validation candidates."""
    import ir_measures

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
    measure = ir_measures.parse_measure(metric)
    qrels = qrels[qrels["qid"].astype(str).isin(set(topics["qid"].astype(str)))]  # the mean is over these topics
    result = ir_measures.calc_aggregate(
        [measure],
        qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
             .astype({"query_id": str, "doc_id": str}),
        run.rename(columns={"qid": "query_id", "docno": "doc_id"}).astype({"query_id": str, "doc_id": str}))
    return float(result[measure])


def document_texts(lookup, docnos: list[str], text_field: str, context) -> dict[str, str]:
    """docno -> text of every document in ``docnos``, fetched now and checked like inference input."""
    from .._runtime import column_texts

    frame = pd.DataFrame({"docno": docnos, text_field: lookup(docnos) if docnos else []}, dtype=object)
    return dict(zip(docnos, column_texts(frame, text_field, context)))


def validation_data(reranker, topics, qrels, candidates, metric: str, lookup,
                    context) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame] | None:
    """(topics, qrels, candidates with query and text) for validation, checked before training;
    None without validation."""
    import ir_measures

    from .._runtime import column_texts

    given = {"valid_topics": topics, "valid_qrels": qrels, "valid_candidates": candidates}
    missing = [name for name, value in given.items() if value is None]
    if len(missing) == len(given):
        return None
    if missing:
        raise ValueError(f"validation needs valid_topics, valid_qrels and valid_candidates; {', '.join(missing)} "
                         f"{'is' if len(missing) == 1 else 'are'} missing")
    try:
        ir_measures.parse_measure(metric)
    except Exception as error:  # noqa: BLE001 - ir_measures raises NameError and others for unknown names
        raise ValueError(f"valid_metric {metric!r} is not an ir_measures measure ({error}); use a name such as "
                         "'nDCG@10', 'RR@10', 'AP' or 'P@10'") from None
    topics = checked_topics(topics, "valid_topics", context)
    qrels = checked_qrels(qrels, "valid_qrels")
    frame = require_frame(as_frame(candidates, topics, "valid_candidates"), "valid_candidates", ["qid", "docno"])
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

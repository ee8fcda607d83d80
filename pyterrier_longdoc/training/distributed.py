"""Training on several processes (torchrun): the process group, collectives and the DDP wrapper."""
from __future__ import annotations

import os

import torch

from .scorer import Scorer


def distributed_setup(reranker: Scorer) -> tuple[int, int]:
    """(world size, rank); joins the process group torchrun describes."""
    import torch.distributed as dist

    if not dist.is_available():
        return 1, 0
    if not dist.is_initialized() and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("nccl" if reranker.device.type == "cuda" else "gloo")
    if not dist.is_initialized() or dist.get_world_size() == 1:
        return 1, 0
    return dist.get_world_size(), dist.get_rank()


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

    def __init__(self, reranker: Scorer):
        super().__init__()
        self.model = reranker.model
        self.score_batch = reranker.score_batch

    def forward(self, queries: list[str], texts: list[str]) -> torch.Tensor:
        return self.score_batch(queries, texts).scores


def scoring_module(reranker: Scorer, world: int) -> torch.nn.Module:
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


def sum_across_processes(loss: float, world: int, device: torch.device) -> float:
    """The sum of a step's loss over the processes (DDP reduces the gradients, not the loss)."""
    if world == 1:
        return loss
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


def barrier(world: int) -> None:
    if world > 1:
        torch.distributed.barrier()

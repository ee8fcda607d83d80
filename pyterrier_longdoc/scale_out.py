"""Scoring over a Ray cluster: the model loaded once per worker, documents shipped in large groups.

PyTerrier's ``.parallel(n, backend="ray")`` ships the model with every call and splits a frame by
query; on the benchmark's frames it was slower than one process (``benchmarks/scale_out.py``).
``RayScorer`` keeps one actor per worker, each holding the model from its first call on, and
sends each a few large groups of rows: what is left to pay per call is shipping the texts.
"""
from __future__ import annotations

import pandas as pd
import pyterrier as pt


class _Worker:
    """A Ray actor's state: the model, unpickled once, on the actor's own device and threads."""

    def __init__(self, model, device: str | None, threads: int):
        import torch

        torch.set_num_threads(threads)
        if device is not None:
            model.place(device)
        self.model = model

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        return self.model.transform(frame)


class RayScorer(pt.Transformer):
    """``model`` re-ranking on ``workers`` Ray actors (start Ray first: ``ray.init()``, or
    ``ray.init(address=...)`` to join a cluster).

    Each actor receives the model once (on the first call) and keeps it; a frame is cut into
    groups of at most ``group_size`` rows, about as many rows for every actor, dealt round-robin to the
    actors, and the scored groups are
    ranked again per query, so the result is the model's own. ``num_cpus`` and ``num_gpus`` are
    each actor's Ray resources: with ``num_gpus=1`` every actor scores on its own GPU (``device``
    defaults to ``"cuda"`` then). Warnings raised inside the actors (e.g. cropping reports) stay
    in their logs. ``close()`` (or a ``with`` block) ends the actors.
    """

    def __init__(self, model, workers: int = 2, *, group_size: int = 2048, num_cpus: int = 1,
                 num_gpus: float = 0, device: str | None = None):
        for name, value in (("workers", workers), ("group_size", group_size), ("num_cpus", num_cpus)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if num_gpus < 0:
            raise ValueError(f"num_gpus must be 0 or more, got {num_gpus!r}")
        self.model, self.workers, self.group_size = model, workers, group_size
        self.num_cpus, self.num_gpus = num_cpus, num_gpus
        self.device = device if device is not None else ("cuda" if num_gpus else None)
        self._actors: list | None = None

    def __repr__(self) -> str:
        return f"RayScorer({self.model!r}, workers={self.workers}, group_size={self.group_size})"

    def _started(self) -> list:
        import ray

        if not ray.is_initialized():
            raise RuntimeError("RayScorer needs a running Ray: call ray.init() (or ray.init(address=...)) first")
        if self._actors is None:
            actor = ray.remote(num_cpus=self.num_cpus, num_gpus=self.num_gpus)(_Worker)
            model = ray.put(self.model)  # serialised once, for every actor
            self._actors = [actor.remote(model, self.device, self.num_cpus) for _ in range(self.workers)]
        return self._actors

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        if len(inp) == 0:
            return self.model.transform(inp)  # the model's own empty result (and its column checks)
        pt.validate.columns(inp, includes=["qid", "query", "docno", self.model.text_field])
        import ray

        actors = self._started()
        # about as many rows for every worker (none waits on another's extra group), no group over group_size rows
        rounds = -(-len(inp) // (len(actors) * self.group_size))
        size = -(-len(inp) // (len(actors) * rounds))
        futures = [actors[k % len(actors)].transform.remote(inp.iloc[start:start + size])
                   for k, start in enumerate(range(0, len(inp), size))]
        scored = pd.concat(ray.get(futures), ignore_index=True)
        return pt.model.add_ranks(scored.drop(columns=["rank"], errors="ignore"))

    def close(self) -> None:
        """End the actors (a later call starts new ones)."""
        if self._actors is not None:
            import ray

            for actor in self._actors:
                ray.kill(actor)
            self._actors = None

    def __enter__(self) -> RayScorer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


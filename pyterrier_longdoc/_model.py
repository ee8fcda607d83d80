"""LongDocModel: encoder + chunking + aggregator, and its safetensors checkpoints.

The one differentiable scoring path (``LongDocModel.score``) serves inference and training.
"""
from __future__ import annotations

import copy
import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch
from torch import nn

from ._batching import ChunkBatch, ChunkPlan, length_sorted_batches, run_with_backoff
from ._chunking import Chunking, SpecialLayout, Tokenization
from ._files import check_safetensors
from .aggregators.base import Aggregator

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
CONFIG_KEY = "pyterrier_longdoc_version"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")


@dataclass
class Scored:
    """Scores of (query, document) pairs and what was cropped to get them."""

    scores: torch.Tensor
    cropped_queries: int
    cropped_docs: int


class LongDocModel(nn.Module):
    """A backbone encoder, the chunking it reads documents with, and an aggregator head."""

    def __init__(self, encoder: nn.Module, tokenizer, aggregator: Aggregator, chunking: Chunking):
        super().__init__()
        self.encoder = encoder
        self.aggregator = aggregator
        self.tokenizer = tokenizer
        self.chunking = chunking
        self.layout = SpecialLayout.from_tokenizer(tokenizer)
        chunking.doc_window(self.layout)  # fails early if the chunks cannot fit the encoder
        aggregator.attach(encoder, tokenizer, chunking)
        self.tokenization = Tokenization(tokenizer)
        # encoders without token types (RoBERTa-style) get none, rather than ids they never saw
        self.uses_token_types = getattr(encoder.config, "type_vocab_size", 0) > 1
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    def replica(self, device) -> "LongDocModel":
        """A copy for inference on ``device``; it shares the tokenizer and its cache."""
        memo = {id(self.tokenizer): self.tokenizer, id(self.tokenization): self.tokenization}
        return copy.deepcopy(self, memo).to(device).eval()

    def encode(self, batch: ChunkBatch) -> torch.Tensor:
        """Per-chunk features of one batch (the aggregator decides what it keeps)."""
        output = self.encoder(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            token_type_ids=batch.token_type_ids if self.uses_token_types else None,
            output_hidden_states=self.aggregator.output_hidden_states,
            **self.aggregator.encoder_inputs(self.encoder, batch),
        )
        return self.aggregator.chunk_features(output, batch)

    def chunk_spans(self, text: str) -> list[tuple[int, int]]:
        """The (start, end) document-token spans encoded of ``text``, one per chunk."""
        (ids,), _ = self.tokenization([text], self.chunking.tokens_read(self.layout))
        return self.chunking.spans(len(ids), self.layout)

    def score(self, queries: Sequence[str], texts: Sequence[str], *, batch_size: int, progress=None,
              workers: Sequence[Callable[[ChunkBatch], torch.Tensor]] | None = None) -> Scored:
        """Scores of ``(queries[i], texts[i])``; keeps gradients unless called under no_grad.

        ``workers`` encode batches instead of this model (e.g. replicas on other devices, each
        taking a CPU batch); with several, batches are shared among them in threads.
        """
        query_ids, query_cropped = self.tokenization(queries, self.chunking.max_query_tokens)
        doc_ids, doc_cropped = self.tokenization(texts, self.chunking.tokens_read(self.layout))
        plan = ChunkPlan.build(query_ids, doc_ids, self.chunking, self.layout)
        batches = length_sorted_batches(plan, query_ids, doc_ids, self.layout, batch_size, self.pad_id)
        workers = workers or [lambda batch: self.encode(batch.to(self.device))]
        workers = [_owning(worker) for worker in workers]

        pieces: list[tuple[np.ndarray, torch.Tensor]] = []
        if len(workers) == 1:
            for batch in batches:
                pieces += run_with_backoff(batch, workers[0])
                if progress is not None:
                    progress.update(len(batch))
        else:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(len(workers)) as pool:
                futures = [pool.submit(run_with_backoff, batch, workers[k % len(workers)])
                           for k, batch in enumerate(batches)]
                for future in futures:
                    done = future.result()
                    pieces += [(index, features.to(self.device)) for index, features in done]
                    if progress is not None:
                        progress.update(sum(len(index) for index, _ in done))
        index = np.concatenate([i for i, _ in pieces])
        outputs = [f for _, f in pieces]
        single = isinstance(outputs[0], torch.Tensor)
        columns = [_concat_padded(list(c)) for c in ([outputs] if single else zip(*outputs))]
        device = columns[0].device
        order = torch.from_numpy(np.argsort(index, kind="stable")).to(device)

        # regroup per document: [documents, chunks, ...], padding chunks masked
        doc = torch.from_numpy(plan.doc).to(device)
        position = torch.from_numpy(plan.position).to(device)
        n_chunks = int(plan.n_chunks.max())
        grouped = []
        for features in columns:
            features = features[order]  # back in plan order
            if features.is_floating_point():
                features = features.float()
            empty = features.new_zeros((len(doc_ids), n_chunks, *features.shape[1:]))
            grouped.append(empty.index_put((doc, position), features))
        mask = torch.zeros((len(doc_ids), n_chunks), dtype=torch.bool, device=device)
        mask[doc, position] = True
        scores = self.aggregator(grouped[0] if single else tuple(grouped), mask).float()
        return Scored(scores, int(query_cropped.sum()), int(doc_cropped.sum()))

    def save_pretrained(self, path: str | os.PathLike, config: dict) -> None:
        """Writes ``config.json`` (plain JSON), ``model.safetensors`` and the tokenizer files."""
        from safetensors.torch import save_model

        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.tokenizer.save_pretrained(path)
        save_model(self, str(path / WEIGHTS_NAME), metadata={"format": "pt"})
        (path / CONFIG_NAME).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")

    def load_weights(self, path: Path) -> None:
        from safetensors import SafetensorError
        from safetensors.torch import load_model

        weights = path / WEIGHTS_NAME
        if not weights.is_file():
            raise FileNotFoundError(f"{path} has no {WEIGHTS_NAME}: an incomplete pyterrier_longdoc checkpoint")
        try:
            missing, unexpected = load_model(self, str(weights), strict=False, device=str(self.device))
        except (SafetensorError, OSError, ValueError, RuntimeError) as error:
            raise ValueError(f"{weights} is corrupt or truncated and cannot be loaded: {error}") from error
        if missing or unexpected:
            raise ValueError(f"{weights} does not match the model of {path / CONFIG_NAME}: "
                             f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}")


def _owning(worker: Callable[[ChunkBatch], torch.Tensor]) -> Callable[[ChunkBatch], torch.Tensor]:
    """Features that own their memory: a view such as ``last_hidden_state[:, 0]`` would keep the
    whole batch's hidden states alive until the group of documents is aggregated."""
    def own(features):
        if isinstance(features, tuple):
            return tuple(own(f) for f in features)
        return features.clone() if features._base is not None else features

    return lambda batch: own(worker(batch))


def _concat_padded(parts: list[torch.Tensor]) -> torch.Tensor:
    """``torch.cat`` of ``[n_i, ...]`` tensors whose trailing sizes may differ: zero-padded to the largest."""
    shape = tuple(max(sizes) for sizes in zip(*(p.shape[1:] for p in parts)))
    if all(p.shape[1:] == shape for p in parts):
        return torch.cat(parts)
    out = parts[0].new_zeros((sum(len(p) for p in parts), *shape))
    start = 0
    for p in parts:
        out[(slice(start, start + len(p)), *(slice(0, size) for size in p.shape[1:]))] = p
        start += len(p)
    return out


def encoder_max_length(encoder: nn.Module, tokenizer) -> int:
    """The longest input the encoder takes: its position embeddings (less RoBERTa-style offsets,
    whose positions start after the padding index), capped by the tokenizer's own limit."""
    length = getattr(encoder.config, "max_position_embeddings", None) or 512
    padding_idx = getattr(getattr(encoder, "embeddings", None), "padding_idx", None)
    if isinstance(padding_idx, int):
        length -= padding_idx + 1
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and limit < 1_000_000:
        length = min(length, limit)
    return length


def read_checkpoint_config(path: Path) -> dict | None:
    """The pyterrier_longdoc config of a directory, or None when it holds something else."""
    config_file = path / CONFIG_NAME
    if not config_file.is_file():
        return None
    try:
        config = json.loads(config_file.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{config_file} is not valid JSON (corrupt or truncated checkpoint?): {error}") from error
    if not isinstance(config, dict) or CONFIG_KEY not in config:
        return None
    for key in ("model", "settings", "encoder"):
        if key not in config:
            raise ValueError(f"{config_file} is a pyterrier_longdoc config without {key!r}: corrupt checkpoint")
    return config


def refuse_pickle(path: Path) -> None:
    """Only safetensors weights are loaded: pickle files can run code when loaded."""
    if not path.is_dir() or any(path.glob("*.safetensors")):
        return
    pickles = sorted(p.name for p in path.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickles:
        raise ValueError(f"{path} holds only pickle weights ({', '.join(pickles)}); pyterrier_longdoc loads "
                         "safetensors only. Convert them, e.g. model.save_pretrained(dir, safe_serialization=True)")


def load_backbone(name_or_path: str, *, trust_remote_code: bool = False, encoder_config: dict | None = None,
                  **config_overrides):
    """The encoder and tokenizer of a HuggingFace model (hub id or local directory).

    With ``encoder_config`` the encoder is built from that config, for weights loaded after.
    ``config_overrides`` (e.g. ``num_hidden_layers=2``) change the config of a pretrained encoder.
    """
    from transformers import AutoModel, AutoTokenizer

    refuse_pickle(Path(name_or_path))
    check_safetensors(Path(name_or_path))
    tokenizer = AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=trust_remote_code)
    if not getattr(tokenizer, "is_fast", False):
        warnings.warn(f"{name_or_path}: no fast tokenizer; tokenization will be slow")
    kwargs = {"trust_remote_code": trust_remote_code}
    if encoder_config is not None:
        return encoder_from_config(encoder_config, **kwargs), tokenizer
    build = lambda **kw: AutoModel.from_pretrained(name_or_path, use_safetensors=True, **config_overrides, **kw)  # noqa: E731
    return _with_sdpa(build, kwargs), tokenizer


def encoder_from_config(encoder_config: dict, **kwargs) -> nn.Module:
    """A randomly initialised encoder of a saved ``config.to_dict()``, for weights loaded after."""
    from transformers import AutoConfig, AutoModel

    def config():  # a fresh one per attempt: a failed SDPA attempt leaves its mark on the config
        settings = dict(encoder_config)
        return AutoConfig.for_model(settings.pop("model_type"), **settings)

    return _with_sdpa(lambda **kw: AutoModel.from_config(config(), **kw), kwargs)


def _with_sdpa(build, kwargs: dict):
    try:
        return build(attn_implementation="sdpa", **kwargs)
    except (ValueError, ImportError):  # this architecture has no SDPA attention
        return build(**kwargs)

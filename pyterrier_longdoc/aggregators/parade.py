"""Representation aggregation: chunk [CLS] vectors are combined first, then scored.

Li, Yates, MacAvaney, He, Sun, "PARADE: Passage Representation Aggregation for Document
Reranking", ACM TOIS 2023 (PARADE Avg / Max / Sum / Attn), and AvgP of Boytsov et al.,
"Understanding Performance of Long-Document Ranking Models through Comprehensive Evaluation
and Leaderboarding" (mean [CLS] of up to three disjoint 477-token chunks).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import torch
from torch import nn

from .base import Aggregator, expand_mask, masked_reduce, recorded, select_tokens
from .heads import Head, LinearHead

if TYPE_CHECKING:
    from transformers import PreTrainedModel


class PooledAggregator(Aggregator):
    """``head(reduce(cls_1, ..., cls_m))`` with an element-wise mean, max or sum.

    Started from a trained cross-encoder, the head is its sequence-classification head: before
    any training PARADE-Max scores a document by the head on the element-wise max of its
    windows' [CLS] vectors, PARADE-Avg (and AvgP) on their mean, close to what the cross-encoder
    gives a passage that says what the whole document says.
    """

    chunk_head = True

    def __init__(self, hidden_size: int, reduce: str, head: Head | None = None):
        super().__init__(hidden_size, head)
        self.reduce = reduce

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.head(masked_reduce(features, mask, self.reduce)).squeeze(-1)


class AttentionAggregator(Aggregator):
    """PARADE-Attn: ``w = softmax_i(C . cls_i)``, score ``head(sum_i w_i cls_i)``.

    C starts at zero, so an untrained PARADE-Attn weighs the windows equally: started from a
    trained cross-encoder it ranks exactly as PARADE-Avg (the head on the mean [CLS]), then learns
    where to look. A document stage that never improves on validation keeps that start, which
    already ranks, instead of a vector drawn at random (C is trainable from zero: its gradient is
    the head's gradient on the windows' spread around their mean). A start along the head's
    gradient at the origin (attend where the cross-encoder scores highest) was measured and not
    kept: zero-shot it ranks like MaxP and on FOLDOC FarRelevant it trained better, but on the
    demo's collection, whose hard negatives fool the warm start's windows, it trained worse at
    every scale of C tried.
    """

    chunk_head = True
    window_weights_column = "window_attention"
    neutral_start = ("query_vector",)

    def __init__(self, hidden_size: int, head: Head | None = None):
        super().__init__(hidden_size, head)
        self.query_vector = nn.Parameter(torch.zeros(hidden_size))

    def window_weights(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The attention ``w_i`` over the windows' [CLS] vectors (0 on padding windows)."""
        logits = (features @ self.query_vector).masked_fill(~mask, float("-inf"))
        return torch.softmax(logits, dim=1)

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        weights = recorded(self.window_weights(features, mask), mask)
        pooled = (weights.unsqueeze(-1) * features * expand_mask(mask, features)).sum(dim=1)
        return self.head(pooled).squeeze(-1)


class CNNAggregator(Aggregator):
    """PARADE-CNN (Li et al., §3.3-3.4): ``layers`` convolutions of window 2 and stride 2 over the
    chunk [CLS] vectors, each halving their number; an FFN with one hidden layer scores every
    output of every level, and the document score is the sum of those scores.

    Choices the paper leaves open, written here: a ReLU after each convolution; an odd level is
    completed with a zero vector; padding chunks enter as zero vectors, and an output whose two
    inputs are both padding is zeroed and not scored, so padding never changes a score.
    """

    def __init__(self, hidden_size: int, layers: int = 4):
        super().__init__(hidden_size)
        self.convs = nn.ModuleList(nn.Conv1d(hidden_size, hidden_size, kernel_size=2, stride=2) for _ in range(layers))
        self.ffn = nn.Sequential(nn.Linear(hidden_size, hidden_size), nn.ReLU(), nn.Linear(hidden_size, 1))

    def forward(self, features: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = (features * expand_mask(mask, features)).transpose(1, 2)  # [docs, hidden, chunks]
        score = features.new_zeros(len(features))
        for conv in self.convs:
            if x.shape[-1] % 2:
                x = nn.functional.pad(x, (0, 1))
                mask = nn.functional.pad(mask, (0, 1))
            mask = mask[:, 0::2] | mask[:, 1::2]
            x = torch.relu(conv(x)) * mask.unsqueeze(1)
            score = score + (self.ffn(x.transpose(1, 2)).squeeze(-1) * mask).sum(dim=1)
        return score


class TransformerAggregator(Aggregator):
    """PARADE-Transformer: ``F(T(C, cls_1, ..., cls_m)[0])`` (Li et al., Eq. 5-7).

    ``T`` is either ``layers`` randomly initialised post-LN Transformer layers with ``heads``
    heads and a ReLU FFN (Eq. 5-6: RAND-Ln), without position embeddings, as in the paper;
    or, with ``init="pretrained"``, the first ``layers`` layers (all when None) of the
    HuggingFace encoder ``aggregator_model`` fed through ``inputs_embeds``, its word embeddings
    discarded, ``heads`` unused (PRETR-Ln of Boytsov, Lin, Liu et al., "Understanding
    Performance of Long-Document Ranking Models through Comprehensive Evaluation and
    Leaderboarding", 2022); chunk vectors are projected when the widths differ.
    ``C`` is a learned vector initialised, as in the paper, from the [CLS] word embedding (of
    the backbone, or of the aggregator model when pretrained).

    ``query_tokens=True`` is the "-Q" variant of Boytsov et al.: the last-layer query token
    vectors of the first chunk, projected, enter between ``C`` and the chunk vectors. Padding
    chunks and padding query tokens are masked; the sequence is packed so that positions do
    not depend on how much padding a batch has.

    ``aggregator_config`` is filled in by the model (the aggregator encoder's config), so that a
    saved model loads without the aggregator's source model.
    """

    loads_encoder: ClassVar[bool] = True

    def __init__(self, hidden_size: int, layers: int | None = 2, heads: int = 4, init: str = "random",
                 aggregator_model: str | None = None, query_tokens: bool = False,
                 aggregator_config: dict | None = None, load_encoder: Callable | None = None):
        super().__init__(hidden_size)
        if init not in ("random", "pretrained"):
            raise ValueError(f"init must be 'random' or 'pretrained', got {init!r}")
        self.init, self.query_tokens = init, query_tokens
        self.encoder: PreTrainedModel | None = None  # PRETR's aggregator encoder
        start = None
        self.layers = nn.ModuleList()
        if init == "random":
            self.layers.extend(nn.TransformerEncoderLayer(hidden_size, heads, dim_feedforward=4 * hidden_size,
                                                          batch_first=True) for _ in range(layers or 0))
        else:
            if load_encoder is None:
                raise ValueError("init='pretrained' needs load_encoder, the engine's loader of the aggregator encoder")
            self.encoder, start = _aggregator_encoder(load_encoder(aggregator_model, layers, aggregator_config))
        width = hidden_size if self.encoder is None else self.encoder.config.hidden_size
        self.cls_vector = nn.Parameter(torch.empty(width).normal_(std=0.02) if start is None else start)
        self.project = nn.Identity() if width == hidden_size else nn.Linear(hidden_size, width)
        self.project_query = nn.Linear(hidden_size, width) if query_tokens else None
        self.head = LinearHead(width)  # on the output at C

    def saved_settings(self) -> dict:
        # the aggregator encoder's config is saved with the model, so loading needs no aggregator_model
        return {} if self.encoder is None else {"aggregator_config": self.encoder.config.to_dict()}

    def attach(self, encoder, tokenizer, chunking) -> None:
        start = _cls_embedding(encoder, tokenizer)
        if self.init == "random" and start is not None:
            self.cls_vector.data.copy_(start)

    @property
    def features_are_leading(self) -> bool:
        return True  # [CLS], and for -Q the query tokens, which come right after it

    def last_layer_positions(self, batch) -> int:
        if not self.query_tokens:
            return 1
        # up to the last query token of the batch (queries of one token or more; 1 if none has any)
        reached = batch.query_mask.any(0).nonzero()
        return int(reached.max()) + 1 if len(reached) else 1

    def chunk_features(self, output, batch):
        states = output.last_hidden_state
        cls = states[:, 0]
        if not self.query_tokens:
            return cls
        tokens, mask = select_tokens(states, batch.query_mask[:, :states.shape[1]])
        return cls, tokens, mask

    def forward(self, features, mask: torch.Tensor) -> torch.Tensor:
        cls = features[0] if self.query_tokens else features
        parts, masks = [self.project(cls)], [mask]
        if self.project_query is not None:  # -Q: the query tokens of the first chunk
            parts.insert(0, self.project_query(features[1][:, 0]))
            masks.insert(0, features[2][:, 0])
        start = self.cls_vector.expand(len(mask), 1, -1)
        x = torch.cat([start, *parts], dim=1)
        valid = torch.cat([mask.new_ones((len(mask), 1)), *masks], dim=1)
        # token types as in the reference code: 0 for C and the query tokens, 1 for the chunk vectors,
        # carried through the packing as one more channel
        types = torch.zeros_like(valid, dtype=x.dtype)
        types[:, -mask.shape[1]:] = 1
        x, valid = select_tokens(torch.cat([x, types.unsqueeze(-1)], dim=-1), valid)  # packed: padding at the end
        x, types = x[..., :-1], x[..., -1].long()
        if self.encoder is not None:
            uses_types = getattr(self.encoder.config, "type_vocab_size", 0) > 1
            x = self.encoder(inputs_embeds=x, attention_mask=valid.long(),
                             token_type_ids=types if uses_types else None).last_hidden_state
        for layer in self.layers:
            x = layer(x, src_key_padding_mask=~valid)
        return self.head(x[:, 0]).squeeze(-1)


def _cls_embedding(encoder: PreTrainedModel, tokenizer) -> torch.Tensor | None:
    """The word embedding of the tokenizer's [CLS] (or <s>) token, if it has one."""
    cls_id = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    embeddings = encoder.get_input_embeddings()
    return None if cls_id is None or embeddings is None else embeddings.get_parameter("weight")[cls_id].detach().clone()


def _aggregator_encoder(loaded: tuple[PreTrainedModel, object | None]) -> tuple[PreTrainedModel, torch.Tensor | None]:
    """PRETR: the engine's aggregator encoder (and its tokenizer, None when loaded from a saved config:
    the weights come from the model's safetensors) without word embeddings and pooler, and the [CLS]
    embedding to start ``C`` from."""
    encoder, tokenizer = loaded
    start = None if tokenizer is None else _cls_embedding(encoder, tokenizer)
    encoder.set_input_embeddings(None)  # type: ignore[arg-type]  # transformers takes None: the table discarded,
    if getattr(encoder, "pooler", None) is not None:  # the aggregator reads inputs_embeds; and the pooler
        encoder.register_module("pooler", None)
    return encoder, start

"""The encoder's last layer computed at [CLS] only, for models that read nothing else.

FirstP, MaxP, SumP, KMaxAvgP, AvgP and PARADE's pooled and attention heads keep one vector per
chunk, the last layer's output at [CLS] (a BERT sequence-classification head reads it too: its
pooler takes the first position). In that layer the keys and values of every position are still
needed, since [CLS] attends to them, but the query projection, the attention output, the
feed-forward network and the norms are needed at [CLS] only: with MiniLM-L6 at ~200-token
windows that is ~60% of the last layer's FLOPs, ~10% of the encoder's.

It applies to HuggingFace BERT-style layers (BERT, RoBERTa, XLM-R, CamemBERT, ELECTRA: query,
key and value projections, ``attention.output``, ``intermediate``, ``output``) at inference;
every other encoder, and training, take the full path. Scores equal the full path's within
float rounding (tested at 1e-5 in fp32).
"""
from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import nn

BERT_STYLE = ("bert", "roberta", "xlm-roberta", "camembert", "electra")


def supports_cls_only(encoder: nn.Module) -> bool:
    """Whether ``encoder`` is a BERT-style HuggingFace encoder whose last layer can run at [CLS] only."""
    config = getattr(encoder, "config", None)
    if getattr(config, "model_type", None) not in BERT_STYLE or getattr(config, "is_decoder", False):
        return False
    if getattr(config, "position_embedding_type", "absolute") not in (None, "absolute"):
        return False  # relative position terms inside attention (older transformers) are not computed here
    layers = getattr(getattr(encoder, "encoder", None), "layer", None)
    if not isinstance(layers, nn.ModuleList) or not len(layers):
        return False
    last = layers[-1]
    self_attention = getattr(getattr(last, "attention", None), "self", None)
    return (all(isinstance(getattr(self_attention, name, None), nn.Linear) for name in ("query", "key", "value"))
            and isinstance(getattr(self_attention, "attention_head_size", None), int)
            and all(isinstance(m, nn.Module) for m in (getattr(last.attention, "output", None),
                                                       getattr(last, "intermediate", None), getattr(last, "output", None)))
            and not hasattr(last, "crossattention"))


@contextlib.contextmanager
def last_layer_at_cls(encoder: nn.Module, attention_mask: torch.Tensor):
    """Within this block, ``encoder``'s last layer returns ``[batch, 1, hidden]``: its output at
    [CLS] only, attending to the positions where ``attention_mask [batch, length]`` is 1."""
    layers = encoder.encoder.layer
    last = layers[-1]
    layers[-1] = _ClsOnlyLayer(last, attention_mask)
    try:
        yield
    finally:
        layers[-1] = last


class _ClsOnlyLayer(nn.Module):
    """Stands in for a BERT layer for one encoder call (it holds the layer, not as a submodule, so
    the encoder's state dict never changes)."""

    def __init__(self, layer: nn.Module, attention_mask: torch.Tensor):
        super().__init__()
        object.__setattr__(self, "layer", layer)
        self.attention_mask = attention_mask

    def forward(self, hidden_states: torch.Tensor, *args, **kwargs) -> torch.Tensor:
        layer = self.layer
        attention = layer.attention
        projections = attention.self
        b, length, _ = hidden_states.shape
        size = projections.attention_head_size
        heads = projections.query.out_features // size
        cls = hidden_states[:, :1]
        q = projections.query(cls).view(b, 1, heads, size).transpose(1, 2)
        k = projections.key(hidden_states).view(b, length, heads, size).transpose(1, 2)
        v = projections.value(hidden_states).view(b, length, heads, size).transpose(1, 2)
        mask = self.attention_mask[:, None, None, :].bool()
        scale = getattr(projections, "scaling", size ** -0.5)
        context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
        x = attention.output(context.transpose(1, 2).reshape(b, 1, heads * size), cls)
        return layer.output(layer.intermediate(x), x)

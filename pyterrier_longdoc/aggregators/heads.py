"""Chunk scorers: the encoder architecture's own sequence-classification head, or a linear layer.

A trained cross-encoder (a transformers ``*ForSequenceClassification`` checkpoint, e.g. one saved
by sentence-transformers' ``CrossEncoder``) scores a (query, passage) pair with its encoder and
its head: pooler, dropout, dense layers and activation as its architecture defines them. Models
that score chunks keep that head, made of transformers' own modules, so that a chunk's score is
the cross-encoder's score of the same pair.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from transformers import PreTrainedModel

POOLINGS = ("cls", "mean", "last")


def pool(output, attention_mask: torch.Tensor, pooling: str) -> torch.Tensor:
    """A sequence's vector: its first token ([CLS], <s>), the mean of its tokens, or its last
    non-pad token (decoder-only models: the only one that has seen the whole sequence), wherever
    the padding is, left or right."""
    states = output.last_hidden_state
    if pooling == "cls":
        return states[:, 0]
    if pooling == "last":
        positions = torch.arange(attention_mask.shape[1], device=attention_mask.device)
        last = (positions * attention_mask.bool()).argmax(1)
        return states[torch.arange(len(states), device=states.device), last]
    mask = attention_mask.unsqueeze(-1).to(states.dtype)
    return (states * mask).sum(1) / mask.sum(1).clamp(min=1)


class LinearHead(nn.Linear):
    """A linear layer on a chunk's [CLS] vector (or mean token vector): ``[..., H] -> [..., 1]``."""

    def __init__(self, hidden_size: int, pooling: str = "cls"):
        super().__init__(hidden_size, 1)
        self.pooling = pooling


# How a *ForSequenceClassification model applies its head to the encoder's output, by the names of
# its modules besides the encoder. Heads that read the first position of a sequence get the
# pooled vector as a sequence of one.
def _pooler_then_linear(head, x):  # BERT, MiniLM, DeBERTa-v2/v3: pooler (dense, activation), dropout, linear
    return head.classifier(head.dropout(head.pooler(x.unsqueeze(1))))


def _classification_head(head, x):  # RoBERTa, XLM-R, ELECTRA, Longformer, BigBird: dense, activation, out_proj
    return head.classifier(x.unsqueeze(1))


def _modernbert(head, x):  # ModernBERT: prediction head (dense, activation, norm), dropout, linear
    return head.classifier(head.drop(head.head(x)))


def _distilbert(head, x):  # DistilBERT: dense, ReLU, dropout, linear
    return head.classifier(head.dropout(torch.relu(head.pre_classifier(x))))


def _score_layer(head, x):  # decoder-only LMs (Llama, Qwen2, Mistral, Gemma, GPT-2): a linear layer on the last token
    return head.score(x)


_LAYOUTS = {
    frozenset({"score"}): _score_layer,
    frozenset({"pooler", "dropout", "classifier"}): _pooler_then_linear,
    frozenset({"classifier"}): _classification_head,
    frozenset({"head", "drop", "classifier"}): _modernbert,
    frozenset({"pre_classifier", "dropout", "classifier"}): _distilbert,
}


class ClassifierHead(nn.Module):
    """The sequence-classification head of a transformers model, on pooled chunk vectors:
    ``[..., H] -> [..., 1]``.

    With two labels (monoBERT-style: not relevant, relevant) the score is the logit difference
    ``logit_relevant - logit_not_relevant``, the log-odds of relevance: it orders pairs as the
    probability of relevance does, and unlike a probability it can be summed or averaged over
    chunks without saturating.
    """

    def __init__(self, modules: dict[str, nn.Module], pooling: str, num_labels: int, in_encoder: tuple[str, ...] = ()):
        super().__init__()
        for name, module in modules.items():
            self.add_module(name, module)
        self.apply_head = _LAYOUTS[frozenset(modules)]
        self.pooling = pooling
        self.num_labels = num_labels
        self.in_encoder = in_encoder  # modules that live in the encoder of the transformers model (BERT's pooler)

    def reset_output_layer(self) -> None:
        """A new head's output layer, initialised as ``nn.Linear`` is: small scores at the start,
        whatever the encoder's ``initializer_range``."""
        [*_, output] = (m for m in self.modules() if isinstance(m, nn.Linear))
        output.reset_parameters()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape[:-1]
        logits = self.apply_head(self, x.reshape(-1, x.shape[-1]))
        if self.num_labels == 2:
            logits = logits[:, 1:] - logits[:, :1]
        return logits.reshape(*shape, 1)



Head = LinearHead | ClassifierHead  # a chunk head: a new linear one, or a trained cross-encoder's

def is_sequence_classifier(model: nn.Module) -> bool:
    return type(model).__name__.endswith("ForSequenceClassification")


def split_sequence_classifier(model: PreTrainedModel) -> tuple[PreTrainedModel, ClassifierHead]:
    """The encoder and the head of a transformers ``*ForSequenceClassification`` model."""
    prefix = model.base_model_prefix
    encoder = getattr(model, prefix)
    modules = {name: module for name, module in model.named_children() if name != prefix}
    in_encoder: tuple[str, ...] = ()
    if set(modules) == {"dropout", "classifier"} and isinstance(getattr(encoder, "pooler", None), nn.Module):
        modules["pooler"] = encoder.pooler  # BERT keeps its pooler in the encoder: it belongs to the head
        encoder.pooler = None
        in_encoder = ("pooler",)
    if frozenset(modules) not in _LAYOUTS:
        raise ValueError(f"{type(model).__name__}: its sequence-classification head ({sorted(modules)}) is not one "
                         "pyterrier_longdoc can apply to chunks (BERT, ELECTRA, RoBERTa/XLM-R, DeBERTa-v2/v3, "
                         "ModernBERT, DistilBERT, Longformer and BigBird heads are, and the last-token score layer "
                         "of decoder-only LMs)")
    num_labels = model.config.num_labels
    if num_labels not in (1, 2):
        raise ValueError(f"{type(model).__name__} has {num_labels} labels; a ranking head has 1 (a score) or 2 "
                         "(not relevant, relevant)")
    pooling = getattr(model.config, "classifier_pooling", "cls")
    if set(modules) == {"score"}:  # transformers' causal LMs score the last non-pad token
        pooling = "last"
    return encoder, ClassifierHead(modules, pooling if pooling in POOLINGS else "cls", num_labels, in_encoder)


def join_sequence_classifier(encoder: nn.Module, head: ClassifierHead, build) -> PreTrainedModel:
    """The transformers ``*ForSequenceClassification`` model of ``encoder`` and ``head``;
    ``build(config)`` makes an empty one (e.g. ``AutoModelForSequenceClassification.from_config``)."""
    model = build(encoder.config)
    prefix = model.base_model_prefix
    state = {f"{prefix}.{k}": v for k, v in encoder.state_dict().items()}
    for name, module in head.named_children():
        where = f"{prefix}.{name}" if name in head.in_encoder else name
        state.update({f"{where}.{k}": v for k, v in module.state_dict().items()})
    model.load_state_dict(state, strict=True)
    return model

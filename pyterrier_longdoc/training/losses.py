"""Ranking losses over ``scores [queries, 1 + negatives]``, the positive document first."""
from __future__ import annotations

import torch
from torch import nn


class _RankingLoss(nn.Module):
    min_negatives = 1

    def __init__(self) -> None:  # no options (nn.Module's own signature, *args and **kwargs, would say otherwise)
        super().__init__()

    def check(self, scores: torch.Tensor) -> None:
        if scores.dim() != 2 or scores.shape[1] < 1 + self.min_negatives:
            raise ValueError(f"{type(self).__name__} needs scores of shape [queries, 1 + negatives] with the "
                             f"positive first and at least {self.min_negatives} negative(s); got {tuple(scores.shape)}")
        if not torch.isfinite(scores).all():
            raise ValueError(f"{type(self).__name__} got non-finite scores: {scores.detach().cpu().tolist()}")


class MarginLoss(_RankingLoss):
    """Pairwise hinge ``sum max(0, margin - s_pos + s_neg)`` over every (positive, negative) pair.

    Margin 1 and a sum, as in Boytsov et al. and PARADE's training.
    """

    def __init__(self, margin: float = 1.0):
        super().__init__()
        self.margin = margin

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        self.check(scores)
        return torch.relu(self.margin - scores[:, :1] + scores[:, 1:]).sum()


class ListwiseSoftmaxLoss(_RankingLoss):
    """Softmax cross-entropy of the positive among itself and its negatives, summed over queries."""

    def forward(self, scores: torch.Tensor) -> torch.Tensor:
        self.check(scores)
        return -torch.log_softmax(scores, dim=1)[:, 0].sum()


LOSSES = {"margin": MarginLoss, "listwise": ListwiseSoftmaxLoss}


def make_loss(loss: str | nn.Module) -> nn.Module:
    if isinstance(loss, nn.Module):
        return loss
    if loss not in LOSSES:
        raise ValueError(f"unknown loss {loss!r}; use one of {sorted(LOSSES)} or an nn.Module")
    return LOSSES[loss]()

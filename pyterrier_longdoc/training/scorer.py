"""What training needs of a model: the scorer protocol. Training sits below the reranker and
never imports it; any object with these members (a ``LongDocReranker`` is one) can be trained."""
from __future__ import annotations

import os
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd
import torch

from ..engine.config import ModelConfig
from ..engine.model import LongDocModel, Scored
from ..engine.runtime import Runtime


@runtime_checkable
class Scorer(Protocol):
    """A model that training can fit, select, checkpoint and evaluate."""

    name: str | None
    model: LongDocModel           # the differentiable module whose parameters are trained
    config: ModelConfig
    runtime: Runtime
    device: torch.device
    autocast_dtype: torch.dtype | None

    @property
    def settings(self) -> dict[str, Any]: ...

    @property
    def text_field(self) -> str: ...

    @property
    def verbose(self) -> bool | None: ...

    def score_batch(self, queries: list[str], texts: list[str], progress=None, workers=None) -> Scored:
        """Scores that keep their gradients (training's forward pass)."""

    def score_texts(self, queries: list[str], texts: list[str]) -> np.ndarray:
        """Inference scores (no gradients), e.g. to select segments."""

    def transform(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The ranked frame (validation)."""

    def save_pretrained(self, path: str | os.PathLike) -> None:
        """The model's folder (checkpoints)."""

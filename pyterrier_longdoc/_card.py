"""What a saved model says about itself: a model card (README.md with YAML metadata, in the shape
of sentence-transformers' cards) and PyTerrier's artifact metadata."""
from __future__ import annotations

import json
import platform
import re
from pathlib import Path

from typing import Any, Protocol

import pandas as pd

from ._version import __version__
from .engine.config import ModelConfig


class CardSubject(Protocol):
    """What a model card and the artifact metadata read of a model (a ``LongDocReranker`` is one)."""

    name: str | None
    config: ModelConfig
    history: pd.DataFrame | None
    training_data: dict[str, int] | None
    training_options: dict[str, Any] | None

    @property
    def fusion(self) -> Described | None: ...  # with the first stage (a Fusion)


class Described(Protocol):
    def describe(self) -> str: ...

ARTIFACT_TYPE, ARTIFACT_FORMAT = "reranker", "pyterrier_longdoc"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# history columns that are not metrics
_LOG_COLUMNS = ("step", "epoch", "loss", "lr", "grad_norm", "loss_scale")


def artifact_metadata(reranker: CardSubject) -> str:
    """``pt_meta.json``: ``pt.Artifact.load`` finds the loader of a folder by its type and format."""
    return json.dumps({"type": ARTIFACT_TYPE, "format": ARTIFACT_FORMAT, "package_hint": "pyterrier-longdoc",
                       "model": reranker.name, "version": __version__}, indent=2) + "\n"


def hub_id(source: str | None) -> str | None:
    """``source`` when it names a HuggingFace hub model (``org/name``), not a local folder."""
    if not source or Path(source).expanduser().exists() or not _HUB_ID.match(source):
        return None
    return source


def hyperparameters(options: dict) -> dict:
    """The training settings a model card lists: the fields of a ``TrainingArguments`` (``args``)
    that differ from their defaults, and the plain values given as keywords (no data, no paths)."""
    import dataclasses

    args = options.get("args")
    settings = {f.name: getattr(args, f.name) for f in dataclasses.fields(args)
                if getattr(args, f.name) != f.default} if dataclasses.is_dataclass(args) else {}
    settings.update({k: v for k, v in options.items() if isinstance(v, (int, float, str, bool))})
    settings.pop("checkpoint_dir", None)
    return settings


def count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def model_card(reranker: CardSubject) -> str:
    config, cls = reranker.config, type(reranker).__name__
    base = hub_id(config.base_model)
    history = reranker.history
    trained = history is not None and len(history) > 0
    metrics = [c for c in history.columns if c not in _LOG_COLUMNS and history[c].notna().any()] \
        if history is not None and trained else []
    front = ["---", "library_name: pyterrier-longdoc", "pipeline_tag: text-ranking",
             f"tags: [{', '.join(['pyterrier', 'pyterrier-artifact', 'reranker', 'long-document', str(reranker.name)])}]"]
    if base:
        front.append(f"base_model: {base}")
    if metrics:
        front.append(f"metrics: [{', '.join(metrics)}]")
    lines = front + ["---", "", f"# {cls}" + (f" based on {base}" if base else ""), "", _description(reranker, base), ""]
    if str((config.encoder.get("architectures") or [""])[0]).endswith("ForSequenceClassification"):
        lines += ["The folder is also a cross-encoder: `sentence_transformers.CrossEncoder(\"<this folder>\")` "
                  "scores a (query, passage) pair as this model scores one window of a document.", ""]
    lines += ["## Model Details", "", *_details(reranker, base), "", "### Settings", "", "| setting | value |", "|---|---|"]
    lines += [f"| `{key}` | `{json.dumps(value) if not isinstance(value, dict) else '{...}'}` |"
              for key, value in sorted(config.settings.items())]
    lines += ["", "## Usage", "", "```python", "import pyterrier as pt", "from pyterrier_longdoc import LongDocReranker",
              "", 'model = LongDocReranker.from_pretrained("<this folder or hub id>")   # or pt.Artifact.load(...)',
              "pipeline = bm25 % 100 >> text_loader >> model   # any first stage, then the document text",
              'model.predict([("a query", "a long document ...")])   # logits, as CrossEncoder.predict', "```", ""]
    if reranker.fusion is not None:
        lines += ["## Fusion with the first stage", "", f"Validated fusion: {reranker.fusion.describe()}. "
                  "`FirstStageFusion(model)` applies it to candidates that carry the first stage's `score`:", "",
                  "```python", "from pyterrier_longdoc import FirstStageFusion",
                  "pipeline = bm25 % 100 >> text_loader >> FirstStageFusion(model)", "```", ""]
    lines += _training(reranker, history, metrics) if trained else [
        "## Training Details", "", "Not trained by `fit` before it was saved: its weights are those of the start "
        "(see the base model above)."]
    lines += ["", "### Framework Versions", "", *_versions()]
    return "\n".join(lines) + "\n"


def _description(reranker: CardSubject, base: str | None) -> str:
    summary = (type(reranker).__doc__ or "").strip().split("\n\n")[0]
    summary = re.sub(r"\s*\([^)]*\d[^)]*\)", "", " ".join(summary.split())).rstrip(".")  # settings: the table's
    start = f" started from [{base}](https://huggingface.co/{base})" if base else ""
    # the library has no page to link to (not on PyPI, its repository's URL not recorded): PyTerrier's
    return (f"A long-document re-ranker of pyterrier-longdoc, a [PyTerrier](https://github.com/terrier-org/pyterrier) "
            f"plugin{start}. "
            f"{summary}. It scores (query, document) pairs of any length; its scores are logits, "
            "for ranking the documents of a query.")


def _details(reranker: CardSubject, base: str | None) -> list[str]:
    config, encoder = reranker.config, reranker.config.encoder
    return [f"- **Model Type:** {type(reranker).__name__} (`{reranker.name}`)",
            f"- **Base model:** {f'[{base}](https://huggingface.co/{base})' if base else 'a local folder'}",
            f"- **Encoder:** {encoder.get('model_type')}, {count(encoder.get('num_hidden_layers', 0), 'layer')}, "
            f"width {encoder.get('hidden_size', '?')}",
            f"- **Chunk head:** {config.head_type or 'none (the model has its own head)'}",
            "- **Output:** one score (a logit) per (query, document) pair"]


def _training(reranker: CardSubject, history: pd.DataFrame, metrics: list[str]) -> list[str]:
    last = history.iloc[-1]
    steps, epochs = int(last["step"]), int(last["epoch"]) + 1
    lines = []
    if metrics:
        lines += ["## Evaluation", "", "On the validation topics, after each epoch:", "",
                  "| metric | last | best |", "|---|---|---|"]
        lines += [f"| {m} | {history[m].dropna().iloc[-1]:.4f} | {history[m].max():.4f} |" for m in metrics]
        lines.append("")
    data = getattr(reranker, "training_data", None) or {}
    lines += ["## Training Details", "", "### Training Dataset", ""]
    lines += [f"- {count(int(v), k.rstrip('s'))}" for k, v in data.items()] or ["- not recorded"]
    lines += ["", "### Training Hyperparameters", ""]
    options = getattr(reranker, "training_options", None) or {}
    lines += [f"- `{k}`: {json.dumps(v)}" for k, v in sorted(options.items())] or ["- the defaults of `fit`"]
    lines += ["", "### Training Logs", "", f"{count(steps, 'optimiser step')} over {count(epochs, 'epoch')}; "
              f"final training loss {last['loss']:.4f}.", "", "| epoch | step | training loss |" +
              "".join(f" {m} |" for m in metrics), "|---|---|---|" + "---|" * len(metrics)]
    for _, row in history.groupby("epoch").tail(1).iterrows():
        values = "".join(f" {row[m]:.4f} |" if pd.notna(row[m]) else " |" for m in metrics)
        lines.append(f"| {int(row['epoch']) + 1} | {int(row['step'])} | {row['loss']:.4f} |{values}")
    return lines


def _versions() -> list[str]:
    import pyterrier
    import torch
    import transformers

    return [f"- Python: {platform.python_version()}", f"- pyterrier-longdoc: {__version__}",
            f"- PyTerrier: {pyterrier.__version__}", f"- Transformers: {transformers.__version__}",
            f"- PyTorch: {torch.__version__}"]

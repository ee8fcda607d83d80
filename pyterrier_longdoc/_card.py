"""What a saved model says about itself: a model card (README.md with YAML metadata, as the
HuggingFace hub and sentence-transformers write them) and PyTerrier's artifact metadata."""
from __future__ import annotations

import json

import pandas as pd

from ._version import __version__

ARTIFACT_TYPE, ARTIFACT_FORMAT = "reranker", "pyterrier_longdoc"


def artifact_metadata(reranker) -> str:
    """``pt_meta.json``: ``pt.Artifact.load`` finds the loader of a folder by its type and format."""
    return json.dumps({"type": ARTIFACT_TYPE, "format": ARTIFACT_FORMAT, "package_hint": "pyterrier-longdoc",
                       "model": reranker.name, "version": __version__}, indent=2) + "\n"


def model_card(reranker) -> str:
    config = reranker.config
    cls = type(reranker).__name__
    tags = ["pyterrier", "pyterrier-artifact", "reranker", "long-document", reranker.name]
    lines = ["---", "library_name: pyterrier-longdoc", "pipeline_tag: text-ranking",
             f"tags: [{', '.join(tags)}]"]
    if config.base_model:
        lines.append(f"base_model: {json.dumps(config.base_model)}")
    lines += ["---", "", f"# {cls} ({reranker.name})", "",
              f"A long-document re-ranker of [pyterrier-longdoc](https://pypi.org/project/pyterrier-longdoc/) "
              f"{__version__}: {type(reranker).__doc__.strip().splitlines()[0]}", "",
              "```python", "import pyterrier as pt", "from pyterrier_longdoc import LongDocReranker", "",
              'model = LongDocReranker.from_pretrained("<this folder or hub id>")   # or pt.Artifact.load(...)',
              'pipeline = bm25 % 100 >> pt.text.get_text(dataset, "text") >> model', "```", ""]
    if str((config.encoder.get("architectures") or [""])[0]).endswith("ForSequenceClassification"):
        lines += ["The folder is also a cross-encoder: `sentence_transformers.CrossEncoder(\"<this folder>\")` "
                  "scores a (query, passage) pair as this model scores one window of a document.", ""]
    lines += ["## Model", "", "| | |", "|---|---|",
              f"| class | `{cls}` |", f"| encoder | {config.encoder.get('model_type')}, "
              f"{config.encoder.get('num_hidden_layers', '?')} layers, width {config.encoder.get('hidden_size', '?')} |",
              f"| chunk head | {config.head_type or 'none (the model has its own head)'} |",
              f"| base model | {config.base_model or 'unknown'} |", "", "## Settings", "", "| setting | value |",
              "|---|---|"]
    lines += [f"| `{key}` | `{json.dumps(value) if not isinstance(value, dict) else '{...}'}` |"
              for key, value in sorted(config.settings.items())]
    lines += ["", "## Training", ""]
    history = getattr(reranker, "history", None)
    if isinstance(history, pd.DataFrame) and len(history):
        last = history.iloc[-1]
        lines.append(f"Trained with `fit` for {int(last['step'])} optimiser steps ({int(last['epoch']) + 1} epochs); "
                     f"final training loss {last['loss']:.4f}.")
        metrics = [c for c in history.columns if c not in ("step", "epoch", "loss", "lr")]
        for metric in metrics:
            values = history[metric].dropna()
            if len(values):
                lines.append(f"Validation {metric} after the last epoch: {values.iloc[-1]:.4f}.")
        summary = getattr(reranker, "training_data", None)
        if summary:
            lines.append("Training data: " + ", ".join(f"{k} {v}" for k, v in summary.items()) + ".")
    else:
        lines.append("Not trained by `fit` in this process: see where the model came from (base model above).")
    return "\n".join(lines) + "\n"

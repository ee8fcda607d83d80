"""What an embedding model's own folder says about using it: pooling, normalisation, similarity,
prefixes (prompts) and input length, as sentence-transformers reads them.

A sentence-transformers folder names its modules in ``modules.json`` (Transformer, Pooling,
Normalize), its pooling in the Pooling module's ``config.json``, its prompts and similarity
function in ``config_sentence_transformers.json`` and its input length in
``sentence_bert_config.json``. A plain transformers folder has none of these: mean pooling (what
sentence-transformers gives such a model), cosine similarity, no prefixes.
"""
from __future__ import annotations

import json
from collections.abc import Collection
from pathlib import Path

from ..aggregators.biencoder import SIMILARITIES  # the aggregator's own: the similarities it computes

#: sentence-transformers' pooling modes and ours (heads.POOLINGS)
_POOLINGS = {"cls": "cls", "cls_token": "cls", "mean": "mean", "mean_tokens": "mean", "lasttoken": "last"}
# the prompt names sentence-transformers' encode_document tries, in its order
_DOCUMENT_PROMPTS = ("document", "passage", "corpus")


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from error


def embedder_settings(name_or_path: str, given: Collection[str] = ()) -> dict:
    """The settings of a bi-encoder over ``name_or_path`` that its folder fixes (see the module
    doc), but those ``given``; empty for a hub id or a folder without a sentence-transformers config."""
    folder = Path(name_or_path)
    modules = _json(folder / "modules.json")
    if not isinstance(modules, list):
        return {}
    kinds = {str(m.get("type", "")).rsplit(".", 1)[-1]: folder / m.get("path", "") for m in modules}
    settings: dict = {"normalize": "Normalize" in kinds}
    if "Pooling" in kinds and "pooling" not in given:
        settings["pooling"] = _pooling(kinds["Pooling"] / "config.json")
    st_config = _json(folder / "config_sentence_transformers.json")
    prompts = st_config.get("prompts") or {}
    settings["query_prefix"] = prompts.get("query", "")
    settings["doc_prefix"] = next((prompts[name] for name in _DOCUMENT_PROMPTS if name in prompts), "")
    similarity = st_config.get("similarity_fn_name")
    if similarity is not None and "similarity" not in given:
        if similarity not in SIMILARITIES:
            raise ValueError(f"{folder}: similarity_fn_name {similarity!r} is not supported; a bi-encoder scores by "
                             f"{' or '.join(SIMILARITIES)} (pass similarity=... to choose)")
        settings["similarity"] = similarity
    transformer = kinds.get("Transformer", folder)
    # sentence-transformers < 6 writes the input length in sentence_bert_config.json, 6 in the tokenizer's config
    length = (_json(transformer / "sentence_bert_config.json").get("max_seq_length")
              or _json(transformer / "tokenizer_config.json").get("model_max_length"))
    if isinstance(length, int) and length < 1_000_000:
        settings["max_length"] = length
    return settings


def _pooling(config_file: Path) -> str:
    config = _json(config_file)
    mode = config.get("pooling_mode")
    modes = [mode] if isinstance(mode, str) else list(mode) if isinstance(mode, list) else [
        k.removeprefix("pooling_mode_") for k, v in config.items() if k.startswith("pooling_mode_") and v is True]
    if len(modes) != 1 or modes[0] not in _POOLINGS or config.get("include_prompt") is False:
        raise ValueError(f"{config_file}: pooling {modes}{' without the prompt' * (config.get('include_prompt') is False)}"
                         " is not supported; a bi-encoder pools the [CLS] token, the mean of all tokens or the last "
                         "token (pass pooling=... to choose)")
    return _POOLINGS[modes[0]]

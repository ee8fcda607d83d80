"""Loading HuggingFace backbones: a plain encoder, or a trained cross-encoder with its head.

A name is a local folder or a hub id. Folders saved by sentence-transformers (``CrossEncoder``
or ``SentenceTransformer``, any layout: the transformers model at the root or in the folder
that ``modules.json`` names) are read through their transformers model. Only safetensors
weights are loaded.
"""
from __future__ import annotations

import contextlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

from torch import nn

from .config import ModelConfig
from .files import check_safetensors, damaged_json
from .lora import adapter_folder, merged_adapter_model
from .._warn import warn

if TYPE_CHECKING:
    from transformers import PreTrainedModel

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".ckpt")
# the JSON files a tokenizer is read from (transformers and tokenizers name none of them when one is damaged)
TOKENIZER_JSON = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json")


@dataclass
class Pretrained:
    """A loaded backbone: a ``*ForSequenceClassification`` model when the architecture has one
    (its head trained when ``trained_head``), else the plain encoder."""

    model: PreTrainedModel
    tokenizer: object
    trained_head: bool
    path: str


def resolve_checkpoint(name_or_path: str) -> Path | None:
    """A local folder for a saved pyterrier_longdoc model: ``name_or_path`` itself, or a download
    of a hub repository holding one; None for anything else (e.g. a plain encoder on the hub)."""
    path = Path(name_or_path)
    if path.is_dir():
        return path
    if path.exists() or name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1:
        raise FileNotFoundError(f"{name_or_path} is not a directory with a model")
    try:
        from huggingface_hub import hf_hub_download, snapshot_download

        if ModelConfig.read(Path(hf_hub_download(name_or_path, "config.json")).parent) is None:
            return None
        return Path(snapshot_download(name_or_path, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model"]))
    except Exception as error:  # noqa: BLE001 - the plain-encoder path gives its own error
        if adapter_folder(name_or_path) is not None:  # a peft adapter repository: load_pretrained reads it
            return None
        from huggingface_hub import constants
        from huggingface_hub.errors import LocalEntryNotFoundError

        if constants.HF_HUB_OFFLINE and isinstance(error, LocalEntryNotFoundError):  # nothing to load
            raise FileNotFoundError(f"{name_or_path}: no such directory, and not in the HuggingFace cache "
                                    "(HF_HUB_OFFLINE is set): download it first, or pass a local folder") from None
        warn(f"could not look up {name_or_path!r} on the HuggingFace hub ({type(error).__name__}); "
             "treating it as a plain encoder")
        return None


def transformers_folder(name_or_path: str) -> str:
    """Where the transformers model of a sentence-transformers folder lives (``modules.json``
    names it); the name itself for anything else."""
    modules = Path(name_or_path) / "modules.json"
    if not modules.is_file():
        return name_or_path
    try:
        entries = json.loads(modules.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{modules} is not valid JSON: {error}") from error
    for entry in entries:
        if str(entry.get("type", "")).rsplit(".", 1)[-1] == "Transformer":
            return str(Path(name_or_path) / entry.get("path", ""))
    raise ValueError(f"{modules} names no Transformer module: not a sentence-transformers model with a "
                     "transformers backbone")


def refuse_pickle(path: Path) -> None:
    """Only safetensors weights are loaded: pickle files can run code when loaded."""
    if not path.is_dir() or any(path.glob("*.safetensors")):
        return
    pickles = sorted(p.name for p in path.iterdir() if p.suffix in PICKLE_SUFFIXES)
    if pickles:
        raise ValueError(f"{path} holds only pickle weights ({', '.join(pickles)}); pyterrier_longdoc loads "
                         "safetensors only. Convert them, e.g. model.save_pretrained(dir, safe_serialization=True)")


def load_tokenizer(name_or_path: str, trust_remote_code: bool = False):
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, trust_remote_code=trust_remote_code)
    except Exception as error:  # a bare JSON error (transformers) or tokenizers' own: say which file
        damaged = damaged_json(Path(name_or_path), TOKENIZER_JSON)
        if damaged is not None:
            raise damaged from error
        raise
    if not getattr(tokenizer, "is_fast", False):
        warn(f"{name_or_path}: no fast tokenizer; tokenization will be slow")
    return tokenizer


def load_pretrained(name_or_path: str, *, trust_remote_code: bool = False, sequence_classifier: bool = True,
                    **config_overrides) -> Pretrained:
    """The backbone of a HuggingFace model (hub id or local folder).

    With ``sequence_classifier`` the architecture's ``*ForSequenceClassification`` model is
    loaded when it has one: a trained cross-encoder keeps its head, a plain encoder gets a new
    one (``trained_head`` False). ``config_overrides`` (e.g. ``num_hidden_layers=2``) change
    the config.
    """
    from transformers import AutoConfig, AutoModel, AutoModelForSequenceClassification

    folder = transformers_folder(name_or_path)
    adapter = adapter_folder(folder) if sequence_classifier else None
    if adapter is not None:
        return _adapter_model(adapter, trust_remote_code, config_overrides)
    refuse_pickle(Path(folder))
    check_safetensors(Path(folder))
    tokenizer = load_tokenizer(folder, trust_remote_code)
    kwargs = {"trust_remote_code": trust_remote_code, "use_safetensors": True, **config_overrides}
    if sequence_classifier:
        config = AutoConfig.from_pretrained(folder, trust_remote_code=trust_remote_code)
        trained = any(str(a).endswith("ForSequenceClassification") for a in (config.architectures or ()))
        if type(config) in AutoModelForSequenceClassification._model_mapping:
            if not trained:
                kwargs["num_labels"] = 1
            with _quiet_transformers():  # a new head is reported by our own warning
                model, info = _with_sdpa(lambda **kw: AutoModelForSequenceClassification.from_pretrained(
                    folder, output_loading_info=True, **kw), kwargs)
            prefix = model.base_model_prefix
            head_missing = [k for k in info.get("missing_keys", ()) if not k.startswith(prefix + ".")]
            return Pretrained(model, tokenizer, trained and not head_missing, folder)
    model = _with_sdpa(lambda **kw: AutoModel.from_pretrained(folder, **kw), kwargs)
    return Pretrained(model, tokenizer, False, folder)


def _adapter_model(folder: Path, trust_remote_code: bool, config_overrides: dict) -> Pretrained:
    """A peft adapter folder (RankLLaMA's published form): its base model's sequence classifier
    with the adapters merged and the adapter's score head, if its file holds one (else the base's
    head: trained only if the base is a trained classifier); the base model's tokenizer unless the
    folder has its own."""
    bases = []

    def load_base(name: str) -> PreTrainedModel:
        bases.append(load_pretrained(name, trust_remote_code=trust_remote_code, **config_overrides))
        return bases[0].model

    model, head_in_adapter = merged_adapter_model(folder, load_base)
    has_tokenizer = (folder / "tokenizer_config.json").is_file()
    tokenizer = load_tokenizer(str(folder), trust_remote_code) if has_tokenizer else bases[0].tokenizer
    return Pretrained(model, tokenizer, head_in_adapter or bases[0].trained_head, str(folder))


def model_from_config(encoder_config: dict, *, sequence_classifier: bool, trust_remote_code: bool = False,
                      folder: Path | None = None) -> PreTrainedModel:
    """A randomly initialised model of a saved ``config.to_dict()``, for weights loaded after:
    the architecture's ``*ForSequenceClassification`` model or its plain encoder. Custom code
    (the config's ``auto_map``, with ``trust_remote_code``) is read from ``folder``, the saved
    model's own, never from where the encoder first came from (a hub repository's code may have
    changed since)."""
    from transformers import AutoModel, AutoModelForSequenceClassification

    auto = AutoModelForSequenceClassification if sequence_classifier else AutoModel

    def build(**kw):  # a fresh config per attempt: a failed SDPA attempt leaves its mark on it
        settings = dict(encoder_config)
        if folder is not None:
            settings["_name_or_path"] = str(folder)  # where transformers looks for the auto_map's code
        config = _config_class(settings.pop("model_type"), settings, trust_remote_code, folder)(**settings)
        return auto.from_config(config, **kw)

    with _quiet_transformers():
        return _with_sdpa(build, {"trust_remote_code": trust_remote_code})


def _config_class(model_type: str, settings: dict, trust_remote_code: bool, folder: Path | None) -> type:
    """The config class of a saved encoder: transformers' own for its ``model_type``, else the
    custom one its ``auto_map`` names (an architecture of its own, ``trust_remote_code``), read
    from ``folder``; its code runs only with ``trust_remote_code``."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING

    if model_type in CONFIG_MAPPING:
        return CONFIG_MAPPING[model_type]
    reference = (settings.get("auto_map") or {}).get("AutoConfig")
    where = f"the saved model in {folder}" if folder is not None else "a saved encoder config"
    if reference is None or folder is None:
        raise ValueError(f"{where} has an encoder of model_type {model_type!r}, which this version of transformers "
                         "does not know and whose config's auto_map names no custom AutoConfig class")
    if not trust_remote_code:
        raise ValueError(f"{where} has an encoder of its own architecture ({model_type!r}, code in {folder}): "
                         "load it with trust_remote_code=True if you trust that code")
    from transformers.dynamic_module_utils import get_class_from_dynamic_module

    return get_class_from_dynamic_module(reference, str(folder), local_files_only=True)


def aggregator_encoder(source: str | None, layers: int | None, config: dict | None) -> tuple[PreTrainedModel, object]:
    """PARADE PRETR's aggregator encoder (a head's ``load_encoder``) and its tokenizer: from ``config`` when
    loading a saved model (its weights come from the model's safetensors; no tokenizer, None), else the
    first ``layers`` layers of the pretrained ``source``."""
    if config is not None:
        return model_from_config(config, sequence_classifier=False), None
    if source is None:
        raise ValueError("init='pretrained' needs aggregator_model, a HuggingFace encoder (hub id or directory)")
    loaded = (load_pretrained(source, sequence_classifier=False) if layers is None
              else load_pretrained(source, sequence_classifier=False, num_hidden_layers=layers))
    return loaded.model, loaded.tokenizer


def remote_code_files(model: nn.Module) -> list[str]:
    """The files of custom code (``trust_remote_code``) that define ``model``'s class and what
    they import, so that a saved folder holds the code it was built with; none for a class of
    transformers itself."""
    from transformers.dynamic_module_utils import get_relative_import_files

    module = sys.modules.get(type(model).__module__)
    if not type(model).__module__.startswith("transformers_modules.") or module is None or module.__file__ is None:
        return []
    return [module.__file__, *get_relative_import_files(module.__file__)]


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


def check_attention_dropout(p) -> None:
    """A ValueError unless ``p`` is None or a rate in [0, 1)."""
    if p is not None and (isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1):
        raise ValueError(f"attention_dropout must be a rate in [0, 1) or None (the model's own), got {p!r}")


def attention_dropout_sites(model: nn.Module) -> list[tuple[object, str, float]]:
    """``(owner, attribute, rate)`` of every attention dropout in ``model`` that the library knows
    how to set (empty for an encoder it does not know): BERT-style self-attention's ``dropout``
    module, or an ``attention_dropout`` rate (Llama, Qwen2, ModernBERT)."""
    sites: list[tuple[object, str, float]] = []
    for module in model.modules():
        rate, dropout = getattr(module, "attention_dropout", None), getattr(module, "dropout", None)
        if isinstance(rate, float):
            sites.append((module, "attention_dropout", rate))
        elif type(module).__name__.endswith("SelfAttention") and isinstance(dropout, nn.Dropout):
            sites.append((dropout, "p", dropout.p))
    return sites


def enable_gradient_checkpointing(encoder: PreTrainedModel) -> None:
    """Recompute ``encoder``'s activations in the backward pass instead of keeping them (transformers'
    checkpointing; active in training mode only). Non-reentrant, so gradients reach LoRA adapters
    and the layers' parameters even where the encoder's inputs need none."""
    enable = getattr(encoder, "activation_checkpointing_enable", None)  # transformers >= 5.x
    if enable is not None:
        enable(activation_checkpointing_kwargs={"use_reentrant": False})
    elif getattr(encoder, "supports_gradient_checkpointing", False):
        encoder.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    else:
        raise ValueError(f"gradient_checkpointing=True: {type(encoder).__name__} does not support transformers' "
                         "gradient checkpointing; leave it False for this encoder")


@contextlib.contextmanager
def training_attention_dropout(model: nn.Module, p: float | None):
    """Within the block, the dropout on ``model``'s attention probabilities is ``p`` (None: the
    model's own); afterwards the model is as it was (its config is never changed).

    Why it matters: PyTorch's fused attention kernels on the CPU take no dropout, so an encoder
    trained with BERT's attention dropout (0.1) materialises every attention matrix; at 512
    tokens that makes a training step about 1.7 times as long (benchmarks/attention_dropout.py).
    Knows BERT-style self-attention (BERT, ELECTRA, RoBERTa, DeBERTa-v2: a ``dropout`` module)
    and decoder-style attention (Llama, Qwen2, ModernBERT: an ``attention_dropout`` rate)."""
    check_attention_dropout(p)
    if p is None:
        yield
        return
    changed = attention_dropout_sites(model)
    if not changed:
        raise ValueError(f"attention_dropout={p}: {type(model).__name__} has no attention dropout this library knows "
                         "(BERT-style self-attention or an attention_dropout rate); leave it None for this model")
    for owner, name, _ in changed:
        setattr(owner, name, float(p))
    try:
        yield
    finally:
        for owner, name, value in changed:
            setattr(owner, name, value)


def set_attention(encoder: PreTrainedModel, attn_implementation: str | None) -> None:
    """transformers' attention kernel ``attn_implementation`` for ``encoder`` (None: leave it);
    transformers' own error for a kernel it cannot use (e.g. flash-attn not installed), and ours
    where the architecture cannot change its kernel once built."""
    if attn_implementation is None or encoder.config._attn_implementation == attn_implementation:
        return
    with _quiet_transformers():
        encoder.set_attn_implementation(attn_implementation)
    if encoder.config._attn_implementation != attn_implementation:
        raise ValueError(f"attn_implementation={attn_implementation!r}: {type(encoder).__name__} cannot change its "
                         f"attention kernel once built (it uses {encoder.config._attn_implementation!r})")


def _with_sdpa(build, kwargs: dict):
    try:
        return build(attn_implementation="sdpa", **kwargs)
    except (ValueError, ImportError):  # this architecture has no SDPA attention
        return build(**kwargs)


@contextlib.contextmanager
def _quiet_transformers():
    from transformers.utils import logging

    level = logging.get_verbosity()
    logging.set_verbosity_error()
    try:
        yield
    finally:
        logging.set_verbosity(level)

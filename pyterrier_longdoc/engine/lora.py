"""LoRA adapters on a backbone (``peft``, an optional extra): added, saved in peft's format, merged.

Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", ICLR 2022. The adapters are
injected into the encoder module itself (``peft.inject_adapter_in_model``), so the encoder keeps
its class and its forward; its own weights are frozen and only the adapters (and the heads,
which live outside the encoder) train.
"""
from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import torch
from torch import nn

from .files import check_safetensors

if TYPE_CHECKING:
    from transformers import PreTrainedModel

#: Tevatron's LoRA defaults (its lora_r, lora_alpha, lora_dropout), on every linear layer of the LM;
#: the published RankLLaMA adapters use r=32 with the same alpha 64 (docs/guide/models.md)
LORA_DEFAULTS = {"r": 8, "alpha": 64, "dropout": 0.1, "target_modules": "all-linear"}
ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_PICKLE = "adapter_model.bin"  # older peft's (RankLLaMA v1's): read as weights only, never run


def _peft():
    try:
        import peft
    except ImportError:
        raise ImportError("LoRA adapters need peft: pip install 'pyterrier-longdoc[llm]' (or pip install peft); "
                          "or pass lora=None to fine-tune every weight") from None
    return peft


@overload
def lora_settings(lora: dict) -> dict: ...
@overload
def lora_settings(lora: None) -> None: ...
def lora_settings(lora: dict | None) -> dict | None:
    """``lora`` completed with the defaults; an error names an unknown key."""
    if lora is None:
        return None
    if not isinstance(lora, dict):
        raise ValueError(f"lora must be a dict of LoRA settings ({', '.join(LORA_DEFAULTS)}) or None, got {lora!r}")
    unknown = sorted(set(lora) - set(LORA_DEFAULTS))
    if unknown:
        raise ValueError(f"unknown LoRA settings {unknown}; valid: {sorted(LORA_DEFAULTS)}")
    return {**LORA_DEFAULTS, **lora}


def add_lora(encoder: nn.Module, lora: dict) -> None:
    """Injects LoRA adapters into ``encoder`` (B = 0: the scores are unchanged until training)
    and freezes the encoder's own weights."""
    peft = _peft()
    settings = lora_settings(lora)
    targets = settings["target_modules"]
    config = peft.LoraConfig(r=settings["r"], lora_alpha=settings["alpha"], lora_dropout=settings["dropout"],
                             target_modules=targets if isinstance(targets, str) else list(targets))
    peft.inject_adapter_in_model(config, encoder)
    for name, parameter in encoder.named_parameters():
        parameter.requires_grad = "lora_" in name


def has_lora(encoder: nn.Module) -> bool:
    return any("lora_" in name for name, _ in encoder.named_parameters())


def merge_lora(encoder: nn.Module) -> None:
    """Adds the adapters' product into the weights they adapt and removes them (peft's
    ``merge_and_unload``); every encoder weight is trainable again."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    layers = [(name, module) for name, module in encoder.named_modules() if isinstance(module, BaseTunerLayer)]
    for name, layer in layers:
        layer.merge()
        parent_name, _, child = name.rpartition(".")
        setattr(encoder.get_submodule(parent_name) if parent_name else encoder, child, layer.get_base_layer())
    if hasattr(encoder, "peft_config"):
        del encoder.peft_config
    for parameter in encoder.parameters():
        parameter.requires_grad = True


def save_adapter(encoder: nn.Module, head: nn.Module, path: Path, base_model: str | None) -> None:
    """The adapters and the score head in peft's format (``adapter_config.json`` and
    ``adapter_model.safetensors``, the head as a module to save): ``peft.PeftModel.from_pretrained``
    loads them onto the base model's ``AutoModelForSequenceClassification``, as RankLLaMA's are."""
    from safetensors.torch import save_file

    peft = _peft()
    config = vars(encoder)["peft_config"]["default"]  # peft's plain attribute
    prefix = f"base_model.model.{encoder.base_model_prefix}."
    tensors = {prefix + name.replace(".default", ""): value for name, value in encoder.state_dict().items()
               if "lora_" in name}
    tensors.update({f"base_model.model.{name}": value for name, value in head.state_dict().items()})
    path.mkdir(parents=True, exist_ok=True)
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(path / ADAPTER_WEIGHTS))
    saved = peft.LoraConfig(r=config.r, lora_alpha=config.lora_alpha, lora_dropout=config.lora_dropout,
                            target_modules=sorted(config.target_modules), task_type="SEQ_CLS",
                            modules_to_save=sorted(dict(head.named_children())), base_model_name_or_path=base_model)
    saved.save_pretrained(str(path))


def redraw_fresh_lora(encoder: nn.Module, seed: int) -> bool:
    """Draws the ``A`` matrices of adapters that were never trained (every ``B`` still 0) again
    from ``seed`` (peft's initialisation), so that a fit starts from the same adapters in every
    process; the scores do not change (B = 0). False when there are no fresh adapters."""
    layers: list[Any] = [m for m in encoder.modules()  # peft's LoRA layers: lora_A and lora_B are ModuleDicts
                         if isinstance(getattr(m, "lora_A", None), nn.ModuleDict)]
    if not layers or any(bool(b.weight.any()) for m in layers for b in m.lora_B.values()):
        return False
    with torch.random.fork_rng(devices=[]), torch.no_grad():
        torch.manual_seed(seed)
        for layer in layers:
            for a in layer.lora_A.values():
                nn.init.kaiming_uniform_(a.weight, a=math.sqrt(5))
    return True


def is_adapter_folder(path: Path) -> bool:
    """A peft adapter folder (RankLLaMA's published form): adapters and a base model's name, no model."""
    return (path / "adapter_config.json").is_file() and not (path / "config.json").is_file()


def adapter_folder(name_or_path: str) -> Path | None:
    """The peft adapter folder ``name_or_path`` names: itself, or the files of a hub repository
    holding one (downloaded, or from the HuggingFace cache when offline); None for anything else."""
    path = Path(name_or_path)
    if path.is_dir():
        return path if is_adapter_folder(path) else None
    if path.exists() or name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") != 1:
        return None
    from huggingface_hub import hf_hub_download, snapshot_download

    try:
        hf_hub_download(name_or_path, "adapter_config.json")
    except Exception:  # noqa: BLE001 - not an adapter repository, or none reachable: the caller's path decides
        return None
    return Path(snapshot_download(name_or_path, allow_patterns=["*.json", "*.safetensors", ADAPTER_PICKLE, "*.txt",
                                                                "*.model"]))


def adapter_weights(path: Path) -> dict[str, torch.Tensor]:
    """The tensors of an adapter folder: ``adapter_model.safetensors``, or else ``adapter_model.bin``
    read with ``torch.load(weights_only=True)``, which refuses a pickle that would run code."""
    if (path / ADAPTER_WEIGHTS).is_file():
        from safetensors.torch import load_file

        check_safetensors(path)  # a truncated file is named, not safetensors' bare "invalid header"
        return load_file(str(path / ADAPTER_WEIGHTS))
    if (path / ADAPTER_PICKLE).is_file():
        try:
            return torch.load(path / ADAPTER_PICKLE, map_location="cpu", weights_only=True)
        except Exception as error:  # noqa: BLE001 - an unpickling error names what it refused
            raise ValueError(f"{path / ADAPTER_PICKLE} is not weights alone (torch.load(weights_only=True) refused "
                             f"it: {error}); it is not loaded") from None
    raise FileNotFoundError(f"{path} has no adapter weights ({ADAPTER_WEIGHTS} or {ADAPTER_PICKLE})")


def merged_adapter_model(path: Path, load_base: Callable[[str], PreTrainedModel]) -> tuple[PreTrainedModel, bool]:
    """The sequence-classification model of a peft adapter folder, adapters merged, as
    ``PeftModel.from_pretrained(base, path).merge_and_unload()`` makes it; ``load_base(name)``
    loads the base model its ``adapter_config.json`` names. Also whether the adapter file holds the
    head's weights, however the config says so: RankLLaMA's (``task_type: SEQ_CLS``,
    ``modules_to_save: null``) has them in the file, which peft loads for a SEQ_CLS adapter."""
    peft = _peft()
    base = json.loads((path / "adapter_config.json").read_text()).get("base_model_name_or_path")
    if not base:
        raise ValueError(f"{path / 'adapter_config.json'} names no base_model_name_or_path to apply the adapters to")
    saved = adapter_weights(path)  # checked here: peft reads the same file after
    try:
        base_model = load_base(base)
    except OSError as error:  # transformers' own names neither the base nor where it came from
        raise OSError(f"the base model {base!r} that {path / 'adapter_config.json'} names (base_model_name_or_path) "
                      f"could not be loaded: {error}\nDownload it while online (huggingface-cli download {base}), or "
                      "set base_model_name_or_path in that file to a local folder holding the base model") from error
    heads = [name for name, _ in base_model.named_children() if name != base_model.base_model_prefix]
    trained_head = any(key.startswith(f"base_model.model.{head}.") for key in saved for head in heads)
    with torch.no_grad():
        return peft.PeftModel.from_pretrained(base_model, str(path)).merge_and_unload(), trained_head

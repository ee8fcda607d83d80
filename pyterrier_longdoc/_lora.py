"""LoRA adapters on a backbone (``peft``, an optional extra): added, saved in peft's format, merged.

Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models", ICLR 2022. The adapters are
injected into the encoder module itself (``peft.inject_adapter_in_model``), so the encoder keeps
its class and its forward; its own weights are frozen and only the adapters (and the heads,
which live outside the encoder) train.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

#: RankLLaMA's (Tevatron's) LoRA: rank 8, alpha 64, dropout 0.1, every linear layer of the LM
LORA_DEFAULTS = {"r": 8, "alpha": 64, "dropout": 0.1, "target_modules": "all-linear"}
ADAPTER_WEIGHTS = "adapter_model.safetensors"


def _peft():
    try:
        import peft
    except ImportError:
        raise ImportError("LoRA adapters need peft: pip install 'pyterrier-longdoc[llm]' (or pip install peft); "
                          "or pass lora=None to fine-tune every weight") from None
    return peft


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
    config = encoder.peft_config["default"]
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


def is_adapter_folder(path: Path) -> bool:
    """A peft adapter folder (RankLLaMA's published form): adapters and a base model's name, no model."""
    return (path / "adapter_config.json").is_file() and not (path / "config.json").is_file()


def merged_adapter_model(path: Path, load_base) -> nn.Module:
    """The sequence-classification model of a peft adapter folder, adapters merged:
    ``load_base(name)`` loads the base model its ``adapter_config.json`` names."""
    peft = _peft()
    base = json.loads((path / "adapter_config.json").read_text()).get("base_model_name_or_path")
    if not base:
        raise ValueError(f"{path / 'adapter_config.json'} names no base_model_name_or_path to apply the adapters to")
    with torch.no_grad():
        return peft.PeftModel.from_pretrained(load_base(base), str(path)).merge_and_unload()

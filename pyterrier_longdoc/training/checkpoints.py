"""Training checkpoints: written atomically, resumed exactly, and never pickled.

A checkpoint is a directory ``step-000123`` holding the model as ``save_pretrained`` writes it,
``training_state.safetensors`` (optimizer tensors and the torch RNG state) and
``trainer_state.json`` (step, options, history, the optimizer's plain values).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

STATE_TENSORS = "training_state.safetensors"
STATE_JSON = "trainer_state.json"
PREFIX = "step-"


def save_checkpoint(directory: Path, step: int, reranker, optimizer: torch.optim.Optimizer, trainer_state: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{PREFIX}{step:06d}"
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=directory))
    try:
        reranker.save_pretrained(tmp)
        tensors, plain = _split_optimizer_state(optimizer.state_dict())
        tensors["rng.torch"] = torch.get_rng_state()
        save_file(tensors, str(tmp / STATE_TENSORS))
        (tmp / STATE_JSON).write_text(json.dumps({**trainer_state, "step": step, "optimizer": plain}, indent=1))
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)  # atomic: a reader sees the old checkpoint or the complete new one
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    for older in directory.glob(f"{PREFIX}*"):
        if older != final:
            shutil.rmtree(older, ignore_errors=True)
    return final


def latest_checkpoint(directory: Path) -> Path | None:
    found = sorted(p for p in directory.glob(f"{PREFIX}*") if (p / STATE_JSON).is_file()) if directory.is_dir() else []
    return found[-1] if found else None


def load_checkpoint(path: Path, reranker, optimizer: torch.optim.Optimizer) -> dict:
    """Restores model weights, optimizer and RNG state; returns the trainer state."""
    state = json.loads((path / STATE_JSON).read_text())
    reranker.model.load_weights(path)
    tensors = load_file(str(path / STATE_TENSORS))
    torch.set_rng_state(tensors.pop("rng.torch"))
    optimizer.load_state_dict(_join_optimizer_state(tensors, state.pop("optimizer")))
    return state


def _split_optimizer_state(state_dict: dict) -> tuple[dict[str, torch.Tensor], dict]:
    tensors, plain_state = {}, {}
    for param, values in state_dict["state"].items():
        for key, value in values.items():
            if isinstance(value, torch.Tensor):
                tensors[f"optimizer.{param}.{key}"] = value.detach().contiguous().cpu()
            else:
                plain_state.setdefault(str(param), {})[key] = value
    return tensors, {"param_groups": state_dict["param_groups"], "state": plain_state}


def _join_optimizer_state(tensors: dict[str, torch.Tensor], plain: dict) -> dict:
    state: dict[int, dict] = {int(p): dict(v) for p, v in plain["state"].items()}
    for name, value in tensors.items():
        _, param, key = name.split(".", 2)
        state.setdefault(int(param), {})[key] = value
    return {"state": state, "param_groups": plain["param_groups"]}

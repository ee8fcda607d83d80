"""Training checkpoints: written atomically, resumed exactly, and never pickled.

A checkpoint is a directory ``step-000123`` holding the model as ``save_pretrained`` writes it,
``training_state.safetensors`` (optimizer tensors and the torch RNG state of every training
process: ``rng.torch`` for rank 0, ``rng.torch.<rank>`` for the others) and ``trainer_state.json``
(step, options, a fingerprint of the training data, history, the optimizer's plain values,
whatever else the trainer keeps, such as the gradient scaler's state, and the SHA-256 of every
other file of the checkpoint). The newest ``keep`` checkpoints are kept, so a checkpoint damaged
after it was written (a full disk, a bad copy, changed bytes) is found by its checksums and
leaves an older one to resume from.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import torch
from safetensors.torch import load_file, save_file

from ..engine.files import SAVING_PREFIX, check_safetensors, file_sha256, new_folder, os_errors_naming
from ..engine.text import without_lone_surrogates
from .._warn import warn
from .scorer import Scorer

ARTIFACT_META = "pt_meta.json"
STATE_TENSORS = "training_state.safetensors"
STATE_JSON = "trainer_state.json"
PREFIX = "step-"
TMP_PREFIX = ".tmp-"
_STEP = re.compile(rf"{PREFIX}(\d+)$")


def save_checkpoint(directory: Path, step: int, reranker: Scorer, optimizer: torch.optim.Optimizer, trainer_state: dict,
                    keep: int = 2, rng_states: list[torch.Tensor] | None = None) -> Path:
    """Writes checkpoint ``step`` atomically and removes all but the newest ``keep`` checkpoints.

    ``rng_states``: the torch RNG state of each training process, by rank (default: this
    process's alone)."""
    if not isinstance(keep, int) or keep < 1:
        raise ValueError(f"the number of checkpoints to keep must be a positive integer, got {keep!r}")
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{PREFIX}{step:06d}"
    tmp = new_folder(directory, TMP_PREFIX)
    try:
        with os_errors_naming(final, "not written: the earlier checkpoints are as they were", inner=tmp):
            reranker.save_pretrained(tmp)
            tensors, plain = _split_optimizer_state(optimizer.state_dict())
            for rank, state in enumerate(rng_states or [torch.get_rng_state()]):
                tensors[_rng_key(rank)] = state
            save_file(tensors, str(tmp / STATE_TENSORS))
            checksums = {f.name: file_sha256(f) for f in sorted(tmp.iterdir()) if f.is_file()}
            (tmp / STATE_JSON).write_text(json.dumps({**trainer_state, "step": step, "optimizer": plain,
                                                      "checksums": checksums}, indent=1))
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)  # atomic: a reader sees the old checkpoint or the complete new one
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if (final / ARTIFACT_META).is_file():  # pt.Artifact.load(directory) loads the latest, as from_pretrained does
        shutil.copyfile(final / ARTIFACT_META, directory / ARTIFACT_META)
    for older in checkpoints(directory)[:-keep]:
        shutil.rmtree(older, ignore_errors=True)
    return final


def checkpoints(directory: Path) -> list[Path]:
    """The checkpoint directories in ``directory``, oldest first."""
    if not directory.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in directory.iterdir() if p.is_dir() and (m := _STEP.match(p.name))]
    return [p for _, p in sorted(found)]


def latest_checkpoint(directory: Path) -> Path | None:
    """The newest checkpoint that has its trainer state (not checked further: see :func:`resume`)."""
    found = [p for p in checkpoints(directory) if (p / STATE_JSON).is_file()]
    return found[-1] if found else None


def remove_leftovers(directory: Path) -> list[Path]:
    """Removes the temporary directories of writes that were killed midway (a checkpoint's, and the
    model's save into it); returns them."""
    leftovers = [p for prefix in (TMP_PREFIX, SAVING_PREFIX + TMP_PREFIX) for p in directory.glob(f"{prefix}*")
                 if p.is_dir()] if directory.is_dir() else []
    for path in leftovers:
        shutil.rmtree(path, ignore_errors=True)
    return leftovers


def remove_checkpoints(directory: Path) -> None:
    for path in checkpoints(directory):
        shutil.rmtree(path, ignore_errors=True)


def resume(directory: Path, reranker: Scorer, optimizer: torch.optim.Optimizer,
           check: Callable[[Path, dict], None] | None = None, rank: int = 0) -> tuple[Path, dict] | None:
    """Restores the newest valid checkpoint of ``directory``: (its path, its trainer state), or
    None when there is none. A damaged newer one is skipped with a warning; when every one is
    damaged, the error names each file and what is wrong with it. ``check(path, state)`` may
    refuse a checkpoint (by raising) before anything is restored; ``rank`` is the training
    process whose RNG state is restored."""
    found = checkpoints(directory)
    problems = []
    for path in reversed(found):
        try:
            state = load_checkpoint(path, reranker, optimizer, check, rank)
        except CorruptCheckpoint as error:
            problems.append(str(error))
            continue
        if problems:
            warn(f"skipped {len(problems)} damaged checkpoint(s): " + "; ".join(problems)
                 + f"; resumed from {path}")
        return path, state
    if problems:
        raise ValueError(f"no valid checkpoint in {directory}: " + "; ".join(problems)
                         + ". Remove them (or use another checkpoint_dir, or restart=True) to train from the start")
    return None


def fingerprint(**frames: pd.DataFrame) -> dict[str, str]:
    """A short hash of each frame's content, row order ignored (the same rows from another
    run of a retrieval pipeline are the same data)."""
    result = {}
    for name, frame in frames.items():
        # as text, lone surrogates replaced (hashing encodes to UTF-8, which they are not)
        canonical = frame.map(lambda value: without_lone_surrogates(str(value)))
        canonical = canonical.sort_values(sorted(frame.columns), kind="stable").reindex(columns=sorted(frame.columns))
        digest = hashlib.sha256(",".join(canonical.columns).encode())
        digest.update(pd.util.hash_pandas_object(canonical, index=False).to_numpy().tobytes())
        result[name] = digest.hexdigest()[:16]
    return result


def folder_fingerprint(path) -> str:
    """A short hash of a model folder's files, their names and contents: the same files in another
    folder give the same hash. A name that is no local folder (a hub id) stands for itself."""
    folder = Path(path)
    if not folder.is_dir():
        return str(path)
    digest = hashlib.sha256()
    for file in sorted(f for f in folder.rglob("*") if f.is_file()):
        digest.update(f"{file.relative_to(folder).as_posix()}:{file_sha256(file)};".encode())
    return digest.hexdigest()[:16]


class CorruptCheckpoint(ValueError):
    """A checkpoint file that cannot be read; the message names it."""


def load_checkpoint(path: Path, reranker: Scorer, optimizer: torch.optim.Optimizer,
                    check: Callable[[Path, dict], None] | None = None, rank: int = 0) -> dict:
    """Restores model weights, optimizer and the RNG state of process ``rank``; returns the
    trainer state. A rank the checkpoint has no state for (it was written by fewer processes)
    takes rank 0's, as every process starts from the same seed.

    Every file is read and checked (and ``check(path, state)`` called) before anything is
    restored, so a damaged or refused checkpoint leaves the model and optimizer as they were.
    """
    from safetensors import SafetensorError

    state_file, tensors_file = path / STATE_JSON, path / STATE_TENSORS
    try:
        state = json.loads(state_file.read_text())
        if not isinstance(state, dict) or not {"step", "optimizer", "history", "options"} <= set(state):
            raise ValueError("not a trainer state (step, options, history, optimizer)")
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise CorruptCheckpoint(f"{state_file} is unreadable ({type(error).__name__}: {error})") from error
    verify_checksums(path, state.pop("checksums", None))
    if check is not None:
        check(path, state)
    try:
        tensors = load_file(str(tensors_file))
        optimizer_state = _join_optimizer_state(tensors, state.pop("optimizer"))
        rng = tensors.get(_rng_key(rank), tensors["rng.torch"])
    except (OSError, SafetensorError, ValueError, KeyError) as error:
        raise CorruptCheckpoint(f"{tensors_file} is unreadable ({type(error).__name__}: {error})") from error
    check_rng_state(rng, tensors_file)
    try:
        check_safetensors(path)
        reranker.model.load_weights(path)
    except (OSError, ValueError) as error:
        raise CorruptCheckpoint(str(error)) from error
    torch.set_rng_state(rng)
    optimizer.load_state_dict(optimizer_state)
    return state


def verify_checksums(path: Path, checksums) -> None:
    """Every file the checkpoint was written with is there with the same bytes (checkpoints of
    versions that wrote no checksums are only read and checked as they load)."""
    if checksums is None:
        return
    if not isinstance(checksums, dict):
        raise CorruptCheckpoint(f"{path / STATE_JSON} is unreadable (its checksums are not a mapping)")
    for name, digest in checksums.items():
        file = path / name
        if not file.is_file():
            raise CorruptCheckpoint(f"{file} is missing")
        if file_sha256(file) != digest:
            raise CorruptCheckpoint(f"{file} is damaged: its SHA-256 is not the one it was written with")


def check_rng_state(state: torch.Tensor, file: Path) -> None:
    """A RNG state torch accepts, tried before anything is restored; the global state is left as it was."""
    current = torch.get_rng_state()
    try:
        torch.set_rng_state(state)
    except (RuntimeError, TypeError, ValueError) as error:
        raise CorruptCheckpoint(f"{file} holds an invalid RNG state ({error})") from error
    finally:
        torch.set_rng_state(current)


def _rng_key(rank: int) -> str:
    return "rng.torch" if rank == 0 else f"rng.torch.{rank}"


def _split_optimizer_state(state_dict: dict) -> tuple[dict[str, torch.Tensor], dict]:
    tensors: dict[str, torch.Tensor] = {}
    plain_state: dict = {}
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
        if not name.startswith("optimizer."):
            continue
        _, param, key = name.split(".", 2)
        state.setdefault(int(param), {})[key] = value
    return {"state": state, "param_groups": plain["param_groups"]}

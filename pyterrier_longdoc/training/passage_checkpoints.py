"""Checkpoints of the passage stage: sentence-transformers' trainer writes them, this module decides
whether a run resumes from them.

The passage stage trains with ``CrossEncoderTrainer`` (a transformers ``Trainer``), so its
checkpoints are the Trainer's own (``output_dir/trainer/checkpoint-N``: weights, optimizer,
scheduler, RNG states, the data order's position). Beside them ``passage_stage.json`` records what
the run was started with (backbone, a fingerprint of the triples, the settings that change the
trained weights); a run started with anything else is refused, as ``fit`` refuses a changed run
(``restart=True`` removes the checkpoints and trains from the first step).
"""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pandas as pd

from .checkpoints import fingerprint
from .passage_arguments import PassageArguments

IDENTITY = "passage_stage.json"
# settings that change how or where the run is shown or saved, not the weights it trains
_NOT_IDENTITY = ("verbose", "progress", "checkpoint_every", "restart", "device")


def identity(backbone, triples: pd.DataFrame, args: PassageArguments) -> dict:
    """What a run of the passage stage trains from: resuming with anything else is refused."""
    settings = {field.name: getattr(args, field.name) for field in dataclasses.fields(args)
                if field.name not in _NOT_IDENTITY}
    return json.loads(json.dumps({"backbone": str(backbone), "triples": fingerprint(triples=triples)["triples"],
                                  "settings": settings}, default=str, sort_keys=True))


def latest_checkpoint(trainer_dir: Path, wanted: dict, restart: bool) -> str | None:
    """The Trainer checkpoint to resume from (None: train from the first step). Checkpoints of a
    run started with another backbone, other triples or other settings are refused, or removed
    with ``restart``."""
    checkpoints = sorted(trainer_dir.glob("checkpoint-*"), key=_step) if trainer_dir.is_dir() else []
    if restart or not checkpoints:
        shutil.rmtree(trainer_dir, ignore_errors=True)
        trainer_dir.mkdir(parents=True, exist_ok=True)
        (trainer_dir / IDENTITY).write_text(json.dumps(wanted, indent=1, sort_keys=True))
        return None
    recorded = trainer_dir / IDENTITY
    saved = json.loads(recorded.read_text()) if recorded.is_file() else None
    if saved != wanted:
        raise ValueError(f"{trainer_dir} holds checkpoints of a passage stage started with {_difference(saved, wanted)}; "
                         "use another output_dir, the same backbone, triples and settings, or restart=True to "
                         "train from the first step")
    return str(checkpoints[-1])


def _step(path: Path) -> int:
    tail = path.name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1


def _difference(saved: dict | None, wanted: dict) -> str:
    if saved is None:
        return f"nothing recorded ({IDENTITY} is missing)"
    parts = [f"another {name}" for name in ("backbone", "triples") if saved.get(name) != wanted[name]]
    old, new = saved.get("settings", {}), wanted["settings"]
    changed = sorted(name for name in {*old, *new} if old.get(name) != new.get(name))
    parts += [f"{name} {old.get(name)!r} (now {new.get(name)!r})" for name in changed]
    return ", ".join(parts) or "other settings"

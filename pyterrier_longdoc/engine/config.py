"""ModelConfig: everything needed to rebuild a saved model, as plain JSON values.

Saved as ``config.json``: the encoder's own transformers config (so ``AutoConfig`` reads the
folder), with this library's fields under the one key ``"pyterrier_longdoc"``. Folders saved by
version 0.1 (the library's fields at the top level, the encoder's config under ``"encoder"``)
still load.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from .._version import __version__
from .._warn import warn

CONFIG_NAME = "config.json"
WEIGHTS_NAME = "model.safetensors"
CONFIG_KEY = "pyterrier_longdoc"
_LEGACY_KEY = "pyterrier_longdoc_version"  # version 0.1's marker
#: how each chunk (window) is scored by models that score chunks
HEAD_TYPES = ("sequence_classification", "linear", None)


@dataclasses.dataclass
class ModelConfig:
    """A model's saved configuration.

    model: the registered short name (``"maxp"``). settings: chunking and the model's own
    settings. encoder: the encoder's transformers config (its ``num_labels`` is the classifier's:
    2 for monoBERT-style checkpoints, scored by the logit difference). head_type: for the models
    that score chunks with a chunk head, ``"sequence_classification"`` when it is the encoder
    architecture's own sequence-classification head (pooler, dropout, dense layers, as
    transformers defines them; kept from a trained cross-encoder), ``"linear"`` for a linear
    layer on the last layer's [CLS] (version 0.1's models); None for the other models.
    base_model: where the encoder came from. weights_sha256: the checksum of
    ``model.safetensors``, verified on load. fusion: the fusion with the first stage chosen on
    validation (``pyterrier_longdoc.fusion.Fusion.to_dict()``), or None.
    """

    model: str
    settings: dict[str, Any]
    encoder: dict[str, Any]
    head_type: str | None = "sequence_classification"
    base_model: str | None = None
    weights_sha256: str | None = None
    fusion: dict[str, Any] | None = None
    version: str = __version__

    def __post_init__(self):
        if self.head_type not in HEAD_TYPES:
            raise ValueError(f"head_type must be one of {HEAD_TYPES}, got {self.head_type!r}")
        if "model_type" not in self.encoder:
            raise ValueError("the encoder's config has no model_type")

    def to_dict(self) -> dict:
        ours = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "encoder"}
        return {**self.encoder, CONFIG_KEY: ours}

    @classmethod
    def from_dict(cls, config: dict, where: str = "config.json") -> ModelConfig:
        if _LEGACY_KEY in config and CONFIG_KEY not in config:  # version 0.1
            missing = [k for k in ("model", "settings", "encoder") if k not in config]
            if missing:
                raise ValueError(f"{where} is a pyterrier_longdoc config without {missing}: corrupt checkpoint")
            # version 0.1 scored windows with a linear layer and filled disjoint chunks
            settings = {"disjoint_split": "fill", **config["settings"]}
            return cls(model=config["model"], settings=settings, encoder=config["encoder"],
                       head_type="linear", version=config[_LEGACY_KEY])
        ours = config.get(CONFIG_KEY)
        if not isinstance(ours, dict) or "model" not in ours or "settings" not in ours:
            raise ValueError(f"{where}: its {CONFIG_KEY!r} entry lacks 'model' or 'settings': corrupt checkpoint")
        encoder = {k: v for k, v in config.items() if k != CONFIG_KEY}
        known = {f.name for f in dataclasses.fields(cls)} - {"encoder"}
        return cls(encoder=encoder, **{k: v for k, v in ours.items() if k in known})

    def write(self, folder: Path) -> None:
        (Path(folder) / CONFIG_NAME).write_text(json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n")

    @classmethod
    def read(cls, folder: Path) -> ModelConfig | None:
        """The config of a saved pyterrier_longdoc folder; None when the folder holds something else."""
        config_file = Path(folder) / CONFIG_NAME
        if not config_file.is_file():
            return None
        try:
            config = json.loads(config_file.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ValueError(f"{config_file} is not valid JSON (corrupt or truncated checkpoint?): {error}") from error
        if not isinstance(config, dict) or (CONFIG_KEY not in config and _LEGACY_KEY not in config):
            return None
        return cls.from_dict(config, str(config_file))

    def warn_about_version(self, where) -> None:
        """One warning when the version that saved the model is newer than this one, or is not a
        version number at all (a hand-edited or foreign config.json)."""
        from packaging.version import InvalidVersion, Version

        try:
            saved = Version(self.version) if isinstance(self.version, str) else None
        except InvalidVersion:
            saved = None
        if saved is None:
            warn(f"{where}: its config.json gives the pyterrier_longdoc version {self.version!r}, which is "
                 f"not a version number (such as {__version__!r}); it is loaded as this version "
                 f"{__version__} saves models, which may not be how it was saved.")
        elif saved > Version(__version__):
            warn(f"{where} was saved by pyterrier_longdoc {self.version}, newer than this "
                 f"{__version__}; it may not load as intended. Upgrade pyterrier_longdoc.")

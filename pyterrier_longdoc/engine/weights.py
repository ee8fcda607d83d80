"""``model.safetensors`` under transformers' names, so a saved folder is what its config.json claims.

The encoder's weights are saved under its base-model prefix (``bert.*``), as transformers saves
them. A window scorer (FirstP, MaxP, SumP, KMaxAvgP, LongP with a sequence-classification head)
saves its head as its ``*ForSequenceClassification`` model has it (``classifier.*``, BERT's
pooler as ``bert.pooler.*``), and config.json names that architecture: the folder is also a
cross-encoder that ``sentence_transformers.CrossEncoder`` and ``AutoModelForSequenceClassification``
load, scoring a window as the model does. Every other model names the encoder's own class
(``BertModel``), which is all of it transformers can load; its head keeps the library's names.
Folders saved under the library's names (version 0.2.0) still load.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from .config import WEIGHTS_NAME, ModelConfig
from .files import file_sha256
from ..aggregators.heads import POOLINGS, ClassifierHead
from ..aggregators.score import ScoreAggregator

if TYPE_CHECKING:
    from .model import LongDocModel


def scores_windows(model: LongDocModel) -> bool:
    """Whether the model scores each window as its architecture's sequence classifier does (a
    cross-encoder): with that head, pooled as the architecture pools (LongP may pool otherwise)."""
    head = getattr(model.aggregator, "head", None)
    own = getattr(model.encoder.config, "classifier_pooling", "cls")
    return (isinstance(model.aggregator, ScoreAggregator) and isinstance(head, ClassifierHead)
            and head.pooling == (own if own in POOLINGS else "cls"))


def saved_names(model: LongDocModel) -> dict[str, str]:
    """The model's state-dict names -> the names in ``model.safetensors``."""
    prefix = getattr(model.encoder, "base_model_prefix", "") or "encoder"
    head = model.aggregator.head if scores_windows(model) else None
    in_encoder = head.in_encoder if isinstance(head, ClassifierHead) else ()  # a window scorer's: ClassifierHead
    names = {}
    for name in model.state_dict():
        scope, _, rest = name.partition(".")
        if scope == "encoder":
            names[name] = f"{prefix}.{rest}"
        elif head is not None and name.startswith("aggregator.head."):
            module = rest.removeprefix("head.")
            names[name] = f"{prefix}.{module}" if module.split(".")[0] in in_encoder else module
        else:
            names[name] = name
    return names


def architecture(model: LongDocModel) -> str:
    """What config.json's ``architectures`` names: the sequence-classification class of a
    window scorer, else the encoder's class."""
    if scores_windows(model):
        from transformers import AutoModelForSequenceClassification

        mapping = AutoModelForSequenceClassification._model_mapping
        if type(model.encoder.config) in mapping:
            # a model class, which transformers annotates as a (slow, fast) pair, as in its tokenizer mapping
            return mapping[type(model.encoder.config)].__name__  # type: ignore[attr-defined]
    return type(model.encoder).__name__


def not_a_cross_encoder(model: str, folder: str | None = None) -> str:
    """Why a saved ``model`` (its short name) in ``folder`` is no sentence-transformers ``CrossEncoder``."""
    return (f"{folder or 'the folder'} holds a pyterrier_longdoc {model!r} model, which is not a cross-encoder: it "
            "scores a document from its windows together, so a (query, passage) classifier would be a new, random "
            "one. Load it with pyterrier_longdoc.LongDocReranker.from_pretrained"
            f"({repr(folder) if folder else '<this folder>'}) (or pt.Artifact.load)")


class NotACrossEncoder:
    """What ``modules.json`` names in the folder of a model that does not score windows one at a
    time (PARADE, CEDR, LongP pooled otherwise, a linear head...), for the sentence-transformers
    versions that read no ``requirements`` (see ``save_not_a_cross_encoder``): ``CrossEncoder(folder,
    trust_remote_code=True)`` loads the modules it names, so it stops with an error naming the model
    and how to load it, instead of putting a new, random classifier on its encoder.
    (transformers' ``AutoModel`` still loads the encoder.)"""

    @classmethod
    def load(cls, model_name_or_path, *args, **kwargs):
        import json

        config = json.loads((Path(model_name_or_path) / "config.json").read_text()).get("pyterrier_longdoc", {})
        raise ValueError(not_a_cross_encoder(config.get("model", ""), str(model_name_or_path)))


def save_not_a_cross_encoder(path: Path, model: str) -> None:
    """The sentence-transformers files of a folder whose ``model`` (its short name) is not a
    cross-encoder, so that ``CrossEncoder(path)`` refuses it, naming the model, rather than guess a
    head. ``config_sentence_transformers.json`` makes ``CrossEncoder`` read the folder as its own
    (sentence-transformers 6 and later; older versions build a cross-encoder from config.json alone);
    it declares a requirement no Python meets, whose reason is the refusal: sentence-transformers
    checks requirements before it imports any module, so the refusal comes first, and alone, instead
    of its generic "pass trust_remote_code=True" for ``modules.json``'s class (which versions without
    requirements still reach)."""
    import json

    module = {"idx": 0, "name": "0", "path": "", "type": f"{NotACrossEncoder.__module__}.NotACrossEncoder"}
    (Path(path) / "modules.json").write_text(json.dumps([module], indent=2) + "\n")
    refusal = {"specifier": "<0", "reason": "No Python loads it with sentence-transformers: "
                                            + not_a_cross_encoder(model) + "."}
    st_config = {"model_type": "CrossEncoder", "requirements": {"python": refusal}}
    (Path(path) / "config_sentence_transformers.json").write_text(json.dumps(st_config, indent=2) + "\n")


def save_weights(model: LongDocModel, file: Path) -> None:
    from safetensors.torch import save_file

    names = saved_names(model)
    save_file({names[k]: v.detach().contiguous() for k, v in model.state_dict().items()}, str(file),
              metadata={"format": "pt"})


def read_weights(model: LongDocModel, file: Path, device: str) -> tuple[list[str], list[str]]:
    """Loads ``file`` saved under transformers' names or the library's own; returns (missing, unexpected)."""
    from safetensors.torch import load_file

    internal = {saved: name for name, saved in saved_names(model).items()}
    tensors = load_file(str(file), device=device)
    return model.load_state_dict({internal.get(k, k): v for k, v in tensors.items()}, strict=False)


def save_cross_encoder(model: LongDocModel, path: Path, owner: str) -> None:
    """Writes the window scorer of ``model`` (``owner`` names it in errors) as a standard
    sequence-classification folder, which ``CrossEncoder(path)`` and
    ``AutoModelForSequenceClassification`` load, scoring a (query, window) pair as the model does."""
    from transformers import AutoModelForSequenceClassification

    from ..aggregators.heads import join_sequence_classifier

    head = getattr(model.aggregator, "head", None)
    if not isinstance(model.aggregator, ScoreAggregator) or not isinstance(head, ClassifierHead):
        raise ValueError(f"{owner} does not score windows with a sequence-classification head, "
                         "so it has no cross-encoder to export (FirstP, MaxP, SumP, KMaxAvgP and LongP built "
                         "from an encoder with a sequence-classification architecture have)")
    classifier = join_sequence_classifier(model.encoder, head, AutoModelForSequenceClassification.from_config)
    classifier.config.architectures = [type(classifier).__name__]
    path = Path(path)
    classifier.save_pretrained(path)
    save_tokenizer(model, path)


def save_tokenizer(model: LongDocModel, path: Path) -> None:
    """The model's tokenizer, its ``model_max_length`` the longest sequence the model reads (query,
    window and special tokens: ``max_length``): ``CrossEncoder(path)`` truncates its input there,
    and the backbone's own limit (256 for MiniLM, 128 after a passage stage) would cut windows the
    model reads whole."""
    tokenizer = model.tokenizer
    own = tokenizer.model_max_length
    tokenizer.model_max_length = model.chunking.max_length
    try:
        tokenizer.save_pretrained(path)
    finally:
        tokenizer.model_max_length = own


def write_folder(model: LongDocModel, path: Path, config: ModelConfig, code_files: tuple = ()) -> None:
    """Writes ``model.safetensors`` (under transformers' names), the tokenizer files, the custom code
    (``code_files``, which a load with ``trust_remote_code`` reads here, and only here) and ``config.json``
    (last, with the weights' checksum and the architecture the weights are)."""
    path.mkdir(parents=True, exist_ok=True)
    save_tokenizer(model, path)
    for file in code_files:
        shutil.copyfile(file, path / Path(file).name)
    if not scores_windows(model):
        save_not_a_cross_encoder(path, config.model)  # CrossEncoder(path) fails, naming the model, not guessing a head
    save_weights(model, path / WEIGHTS_NAME)
    config.weights_sha256 = file_sha256(path / WEIGHTS_NAME)
    config.encoder = {**config.encoder, "architectures": [architecture(model)]}
    config.write(path)


def load_folder_weights(model: LongDocModel, path: Path, sha256: str | None = None) -> None:
    """Loads ``model.safetensors`` of ``path`` into ``model``; with ``sha256``, only if its checksum matches."""
    from safetensors import SafetensorError

    weights = path / WEIGHTS_NAME
    if not weights.is_file():
        raise FileNotFoundError(f"{path} has no {WEIGHTS_NAME}: an incomplete pyterrier_longdoc checkpoint")
    if sha256 is not None and file_sha256(weights) != sha256:
        raise ValueError(f"{weights} is corrupt or truncated, or was changed: its checksum is not the one its "
                         "config.json was saved with. Restore the file, or pass verify_weights=False to load "
                         "weights you changed on purpose")
    try:
        missing, unexpected = read_weights(model, weights, str(next(model.parameters()).device))
    except (SafetensorError, OSError, ValueError, RuntimeError) as error:
        raise ValueError(f"{weights} is corrupt or truncated and cannot be loaded: {error}") from error
    if missing or unexpected:
        raise ValueError(f"{weights} does not match the model of {path / 'config.json'}: "
                         f"missing {sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}")

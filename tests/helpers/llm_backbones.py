"""Tiny random decoder-only LMs (Llama, Qwen2) with tokenizers trained here, offline.

The Llama tokenizer is SentencePiece-style BPE (``▁word``, ``<s> a <s> b`` pairs, as Llama-2's);
the Qwen2 one byte-level BPE without special tokens around pairs (``Ġword``), as Qwen2's.
"""
from __future__ import annotations

import json
import string
from pathlib import Path

from helpers.tiny_bert import WORDS
from helpers.written_once import written_once

CORPUS = [" ".join(WORDS + ["query", "document", "passage", ":", "?", "."])] * 4 + list(string.ascii_lowercase)
TINY = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": 256}


def _bpe(trainer, special: list[str]) -> dict:
    trainer.train_from_iterator(CORPUS, vocab_size=300, min_frequency=1, special_tokens=special)
    model = json.loads(trainer._tokenizer.to_str())["model"]
    return {"vocab": model["vocab"], "merges": [tuple(m) if isinstance(m, list) else tuple(m.split(" "))
                                                for m in model["merges"]]}


def llama_tokenizer():
    from tokenizers import SentencePieceBPETokenizer
    from transformers import LlamaTokenizer

    return LlamaTokenizer(**_bpe(SentencePieceBPETokenizer(), ["<unk>", "<s>", "</s>"]), add_bos_token=True)


def qwen2_tokenizer():
    from tokenizers import ByteLevelBPETokenizer
    from transformers import Qwen2Tokenizer

    bpe = _bpe(ByteLevelBPETokenizer(), ["<|endoftext|>", "<|pad|>"])
    return Qwen2Tokenizer(**bpe, pad_token="<|pad|>")  # a pad token apart from EOS, as RankLLaMA's Llama has


@written_once  # built once per session, copied for each test that asks
def write_tiny_lm(path: Path, family: str = "llama", *, classifier: bool = True, seed: int = 0) -> Path:
    """A 2-layer ``family`` ("llama" or "qwen2") LM: a sequence classifier with a random score head
    (a stand-in for a RankLLaMA-style checkpoint) or, with ``classifier=False``, the plain LM."""
    import torch
    from transformers import AutoModel, AutoModelForSequenceClassification, LlamaConfig, Qwen2Config

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = llama_tokenizer() if family == "llama" else qwen2_tokenizer()
    tokenizer.save_pretrained(path)
    config_class = LlamaConfig if family == "llama" else Qwen2Config
    config = config_class(vocab_size=len(tokenizer), num_labels=1, pad_token_id=tokenizer.pad_token_id,
                          bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                          initializer_range=0.2, **TINY)
    torch.manual_seed(seed)
    model = (AutoModelForSequenceClassification if classifier else AutoModel).from_config(config)
    model.save_pretrained(path)
    return path

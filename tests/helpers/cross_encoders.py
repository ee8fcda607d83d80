"""Tiny random cross-encoders (sequence-classification checkpoints) of several architectures,
built offline and saved in the layouts people have them in."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from helpers.tiny_bert import write_tiny_bert

ARCHITECTURES = ("bert", "electra", "roberta", "deberta-v2", "modernbert")
LAYOUTS = ("transformers", "sentence-transformers", "subfolder")


def _config(arch: str, vocab_size: int, tokenizer, num_labels: int):
    from transformers import AutoConfig

    small = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                 num_labels=num_labels, pad_token_id=tokenizer.pad_token_id)
    if arch == "modernbert":  # its special-token ids must lie inside the vocabulary
        return AutoConfig.for_model(arch, vocab_size=vocab_size, **small, global_attn_every_n_layers=1,
                                    bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                                    cls_token_id=tokenizer.cls_token_id, sep_token_id=tokenizer.sep_token_id,
                                    max_position_embeddings=512, classifier_pooling="mean")
    extra = {"type_vocab_size": 1} if arch == "roberta" else {}
    if arch == "roberta":
        extra.update(bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                     max_position_embeddings=514)
    else:
        extra["max_position_embeddings"] = 512
    return AutoConfig.for_model(arch, vocab_size=vocab_size, **small, initializer_range=0.2, **extra)


def _roberta_tokenizer(path: Path):
    """A byte-level BPE tokenizer trained here (the RoBERTa pair layout <s> a </s></s> b </s>)."""
    import string

    from helpers.tiny_bert import WORDS
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaTokenizerFast

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([" ".join(WORDS)] * 4 + list(string.ascii_lowercase), vocab_size=300, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    path.mkdir(parents=True, exist_ok=True)
    bpe.save_model(str(path))
    return RobertaTokenizerFast.from_pretrained(path)


def write_cross_encoder(path: Path, arch: str = "bert", *, layout: str = "transformers", num_labels: int = 1,
                        seed: int = 0) -> Path:
    """A random ``*ForSequenceClassification`` model of ``arch`` with a word-level tokenizer
    (byte-level BPE for RoBERTa), saved in ``layout``: transformers' own folder, the folder
    sentence-transformers' ``CrossEncoder.save`` writes, or the transformers model in a
    subfolder that ``modules.json`` names."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    path = Path(path)
    if arch == "roberta":
        tokenizer = _roberta_tokenizer(path / "_bpe")
    else:
        tokenizer = AutoTokenizer.from_pretrained(write_tiny_bert(path / "_vocab"))
    torch.manual_seed(seed)
    vocab_size = max(tokenizer.get_vocab().values()) + 1  # the tiny vocabulary lists one word twice
    model = AutoModelForSequenceClassification.from_config(_config(arch, vocab_size, tokenizer, num_labels))
    with torch.no_grad():  # a head whose bias matters too
        for name, parameter in model.named_parameters():
            if name.endswith("bias"):
                parameter.normal_(std=0.1)
    model.eval()
    target = path / "model"
    model.save_pretrained(target)
    tokenizer.save_pretrained(target)
    shutil.rmtree(path / ("_bpe" if arch == "roberta" else "_vocab"))
    if layout == "sentence-transformers":
        from sentence_transformers import CrossEncoder

        CrossEncoder(str(target), num_labels=num_labels).save(str(target))
    elif layout == "subfolder":
        inner = path / "st"
        inner.mkdir()
        shutil.move(str(target), str(inner / "0_Transformer"))
        (inner / "modules.json").write_text(json.dumps(
            [{"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"}]))
        return inner
    return target


def predict(folder, pairs):
    """sentence-transformers' own scores of ``pairs`` with the activation off (the logits)."""
    import torch
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(folder), device="cpu")
    return model.predict(pairs, activation_fn=torch.nn.Identity(), batch_size=64)


# queries and documents of the tiny vocabulary

CROSS_ENCODER_SETTINGS = dict(window=12, stride=6, max_doc_tokens=48, max_query_tokens=8)


# (query, document) pairs, as CrossEncoder.predict takes them
PAIRS = [("what cat", "the cat by the river"), ("what dog", "a dog in the house is red")]


QUERIES = ["castle river", "red dog", "what is music", "green door"]


# words of the tiny vocabulary only, so that a window's text, written back, tokenizes to the same ids
LONG_DOCS = ["the city of the castle and the river and the mountain forest house door window book paper " * 2,
        "a red dog in the house and the blue bird and the green fish of the city " * 2,
        "music song answer question alpha beta gamma of the river castle " * 2,
        "the green door " * 9]


def window_texts(model, query: str, text: str) -> list[str]:
    """The texts of the windows the model reads of ``text``, as the tokenizer writes them back."""
    tokenizer = model.model.tokenizer
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return [tokenizer.decode(ids[s:e]) for s, e in model.chunk_spans(text)]

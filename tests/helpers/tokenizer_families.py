"""Tiny tokenizers of every family the library loads, built offline: WordPiece (BERT), byte-level
BPE (RoBERTa, Longformer), SentencePiece Unigram with ``<s></s>`` (XLM-R), with ``[CLS] [SEP]``
(DeBERTa-v2/v3) and with ``</s>`` only (T5, as MonoT5 uses), and a Python-only one (ByT5)."""
from __future__ import annotations

import string

from helpers.tiny_bert import WORDS

FAMILIES = ("bert", "roberta", "xlmr", "deberta", "t5", "byt5")


def _pieces():
    return ([("▁" + w, -5.0) for w in WORDS] + [("▁", -3.0)]
            + [(c, -8.0) for c in string.ascii_letters + string.digits + string.punctuation]
            + [("▁" + c, -7.0) for c in string.ascii_lowercase])


def tiny_tokenizer(family: str, tmp_path):
    """A small tokenizer of ``family`` (see :data:`FAMILIES`)."""
    from transformers import AutoTokenizer, ByT5Tokenizer, DebertaV2Tokenizer, T5Tokenizer, XLMRobertaTokenizer

    if family == "bert":
        from helpers.tiny_bert import write_tiny_bert

        return AutoTokenizer.from_pretrained(write_tiny_bert(tmp_path / "bert"))
    if family == "roberta":
        from tokenizers import ByteLevelBPETokenizer
        from transformers import RobertaTokenizerFast

        bpe = ByteLevelBPETokenizer()
        bpe.train_from_iterator([" ".join(WORDS)] * 4 + list(string.ascii_lowercase), vocab_size=300,
                                min_frequency=1, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        (tmp_path / "roberta").mkdir(parents=True, exist_ok=True)
        bpe.save_model(str(tmp_path / "roberta"))
        return RobertaTokenizerFast.from_pretrained(tmp_path / "roberta")
    if family == "xlmr":
        return XLMRobertaTokenizer(vocab=[("<s>", 0.0), ("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + _pieces()
                                   + [("<mask>", 0.0)])
    if family == "deberta":
        return DebertaV2Tokenizer(vocab=[("[PAD]", 0.0), ("[UNK]", 0.0), ("[CLS]", 0.0), ("[SEP]", 0.0),
                                         ("[MASK]", 0.0)] + _pieces())
    if family == "t5":
        return T5Tokenizer(vocab=[("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)] + _pieces(), extra_ids=0)
    if family == "byt5":
        return ByT5Tokenizer(extra_ids=0)
    raise ValueError(family)


def special_ids(tokenizer) -> set[int]:
    """Special-token ids that text must never give (the unknown token excepted: unknown characters give it)."""
    return set(tokenizer.all_special_ids) - {tokenizer.unk_token_id}

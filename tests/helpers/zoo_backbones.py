"""Tiny offline backbones and settings for the model-zoo models, and a toy training check.

``tiny_backbone_for(name, tmp_path)`` is what the shared contract test uses for the models that need
another backbone than the tiny BERT; ``margin_training`` is the training check of tests/models/test_zoo_*.py.
"""
from __future__ import annotations

import string
from pathlib import Path

from helpers.tiny_bert import WORDS, write_tiny_bert
from helpers.written_once import written_once

# several chunks per test document, and still fast
SMALL_CHUNKS = {"window": 12, "stride": 6, "max_doc_tokens": 48}
SMALL_DISJOINT = {"window": 12, "max_doc_tokens": 48}
ZOO_SETTINGS = {
    "parade_cnn": SMALL_CHUNKS,
    "parade_transformer": SMALL_CHUNKS,
    "parade_transformer_pretr": SMALL_CHUNKS,
    "parade_transformer_q": SMALL_CHUNKS,
    "cedr_knrm": SMALL_DISJOINT,
    "cedr_pacrr": SMALL_DISJOINT,
    "cedr_drmm": SMALL_DISJOINT,
    "neural_model1": SMALL_DISJOINT,
    "longp": {"max_doc_tokens": 96},
}
# decoder-only LMs (tests/helpers/llm_backbones.py; their own training checks are in tests/models/test_llm.py)
LLM_SETTINGS = {"llm_firstp": {"max_length": 48, "max_query_tokens": 8, "max_doc_tokens": 64},
                "llm_maxp": SMALL_CHUNKS, "llm_sump": SMALL_CHUNKS, "llm_kmax_avgp": SMALL_CHUNKS,
                "llm_longp": {"max_doc_tokens": 96}}


def tiny_backbone_for(name: str, tmp_path) -> tuple[str, dict] | None:
    """The backbone directory and small settings to test the zoo model ``name`` with, offline;
    None for the other models (the tiny BERT and the contract test's own settings suit them)."""
    tmp_path = Path(tmp_path)
    if name in LLM_SETTINGS:
        from helpers.llm_backbones import write_tiny_lm

        return str(write_tiny_lm(tmp_path / "tiny-llama")), dict(LLM_SETTINGS[name])
    if name not in ZOO_SETTINGS:
        return None
    settings = dict(ZOO_SETTINGS[name])
    if name == "longp":
        return str(write_tiny_longformer(tmp_path / "tiny-longformer")), settings
    if name in ("parade_transformer_pretr", "parade_transformer_q"):
        # another width than the backbone, so the chunk vectors are projected
        settings["aggregator_model"] = str(write_tiny_bert(tmp_path / "tiny-aggregator", hidden_size=48, seed=1))
    return str(write_tiny_bert(tmp_path / "tiny-bert")), settings


@written_once  # built once per session, copied for each test that asks
def write_tiny_longformer(path: Path, attention_window: int = 8) -> Path:
    """A 2-layer Longformer with a byte-level BPE tokenizer (RoBERTa layout) trained here."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import LongformerConfig, LongformerModel, RobertaTokenizerFast

    path.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([" ".join(WORDS)] * 4 + list(string.ascii_lowercase), vocab_size=300, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(path))
    tokenizer = RobertaTokenizerFast.from_pretrained(path)
    tokenizer.save_pretrained(path)
    torch.manual_seed(0)
    config = LongformerConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                              intermediate_size=64, attention_window=attention_window, max_position_embeddings=258,
                              pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
                              eos_token_id=tokenizer.eos_token_id, type_vocab_size=1,
                              hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    LongformerModel(config).save_pretrained(path)
    return path


def toy_task(n: int = 4):
    """Queries whose answer words sit near the end of long documents: FirstP cannot see them,
    a model must aggregate the chunks. Returns (queries, positives, negatives)."""
    filler = " ".join(["the a of and to in is"] * 6)
    pairs = [("castle river", "forest city"), ("red dog", "blue fish"), ("alpha song", "beta book"),
             ("green door", "music paper")][:n]
    queries = [q for q, _ in pairs]
    positives = [f"{filler} {q} {q}" for q, _ in pairs]
    negatives = [f"{filler} {other} {other}" for _, other in pairs]
    return queries, positives, negatives


def margin_training(reranker, steps: int = 8, lr: float = 1e-3) -> tuple[float, float]:
    """A few AdamW steps of the pairwise margin loss (margin 1, sum) straight over
    ``score_batch``; returns the loss before and after, both measured in eval mode."""
    import torch

    queries, positives, negatives = toy_task()

    def loss() -> torch.Tensor:
        scores = reranker.score_batch(queries * 2, positives + negatives).scores
        pos, neg = scores[:len(queries)], scores[len(queries):]
        return torch.relu(1 - pos + neg).sum()

    def measure() -> float:
        reranker.model.eval()
        with torch.no_grad():
            return float(loss())

    torch.manual_seed(0)
    before = measure()
    optimizer = torch.optim.AdamW(reranker.model.parameters(), lr=lr)
    reranker.model.train()
    for _ in range(steps):
        optimizer.zero_grad()
        loss().backward()
        optimizer.step()
    return before, measure()


def assert_padding_invariant(reranker, rtol: float = 1e-4) -> None:
    """A document's score does not change when its batch also holds a longer query and a longer
    document (more query padding, more token padding, more padding chunks). The tolerance is
    for float noise of the padded encoder, which CEDR-KNRM's exact-match kernel (sigma 0.001)
    multiplies by up to a thousand."""
    import numpy as np

    queries, positives, _ = toy_task()
    alone = reranker.score_texts(queries[:1], ["castle"])
    padded = reranker.score_texts([queries[0], " ".join(queries)], ["castle", positives[1]])
    np.testing.assert_allclose(padded[:1], alone, rtol=rtol, atol=1e-6)

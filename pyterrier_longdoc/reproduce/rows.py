"""The tables' rows: each model as the papers train it (``MODELS_2022``, ``MODELS_2024``), and which
of them each table prints, under the paper's name (``TABLES``).

A row is here when the library has a class for its model. Left out, with the reason (the guide
lists them too): the retriever and "random shuffling" reference rows (the first stage itself),
RankGPT (listwise prompting of a hosted LLM, ``pyterrier_longdoc.listwise``, not a trained
re-ranker) and PARADE-Transf-Pretr-LATEIR-L6 (late interaction with three encoders, no class).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .schema import Recipe

__all__ = ["MODELS_2022", "MODELS_2024", "ModelSpec", "TABLES"]


@dataclass(frozen=True)
class ModelSpec:
    model: str
    backbone: str
    settings: tuple[tuple[str, Any], ...] = ()
    recipe: Recipe = Recipe()
    notes: tuple[str, ...] = ()


_BERT = "bert-base-uncased"
# "the Electra model provided via Sentence-BERT library" (Boytsov et al. 2022): its MS MARCO cross-encoder
_ELECTRA = "cross-encoder/ms-marco-electra-base"
_DEBERTA = "microsoft/deberta-v3-base"
_LONGFORMER = "allenai/longformer-base-4096"
_BIGBIRD = "google/bigbird-roberta-base"
_JINA = "jinaai/jina-embeddings-v2-base-en"
_MOSAIC = "mosaicml/mosaic-bert-base-seqlen-2048"
_TINYLLAMA = "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T"
_E5_4K = "dwzhu/e5-base-4k"

# greedy disjoint chunks (every one but the last full, 477 tokens with a 32-token query)
_GREEDY = (("disjoint_split", "fill"),)
_CEDR = (("max_query_tokens", 32), ("max_doc_tokens", 1431)) + _GREEDY
# window 150, stride 100: Boytsov et al. 2022's Table 8 rows of that setting equal its Table 4
_PARADE = (("stride", 100),)
_LONG = (("max_doc_tokens", 1431),)
_REMOTE = (("trust_remote_code", True),)

_ELECTRA_NOTE = ("ELECTRA: the paper's 'Electra model provided via Sentence-BERT library' is taken to be "
                 f"{_ELECTRA}, its heads discarded (google/electra-base-discriminator is the plain backbone)")
_GLOBAL_NOTE = ("Longformer: the library gives global attention to [CLS] and the query tokens; the paper to "
                "the query tokens")
_LLM_NOTE = ("TinyLLAMA: the paper mean-pools (the authors' configuration: use_mean_pool); the library's LLM rankers "
             "score the last token (their head needs it); every weight is trained at lr 1e-5 (the head 1e-4), as "
             "the authors' configuration, not LoRA adapters; no 'query:'/'document:' prompts, as in the paper")
_MOSAIC_NOTE = ("MOSAIC: trained and run in full precision (fp32), as the paper and the authors' configuration (amp "
                "off); the paper's training was unstable and it 'continued training with more seeds' until three "
                "were reasonable, which may bias its values up: the registry runs seeds 0-2 and keeps them all")
_ZERO_SHOT = Recipe(warm_start="zero-shot", seeds=(0,))  # nothing trained: one run
_E5_NOTE = "E5-4K: zero-shot (no training, no fine-tuning on Robust04 or FarRelevant), as in the paper"
_RAND_NOTE = ("the paper trains the randomly initialised aggregator for {} until it stops improving: "
              "{} epochs here")
# the checkpoint a row starts from where the paper's text names none: the authors' released
# configuration files (model_conf/main/config_long_*.json of long_doc_rank_model_analysis_v2)
_CONFIG_CHECKPOINT = ("checkpoint {}: the paper's text names none; the authors' released configuration does "
                      "(model.bert_flavor)")
_E5_CHECKPOINT = (f"checkpoint {_E5_4K}: an assumption (the E5-4K of LongEmbed, Zhu et al. 2024); neither the paper "
                  "nor the authors' configuration names one")
# Transf-RAND as the authors released it, beside the papers' text
_RAND_CONFIG = ("the rates are multiplied by 0.95 after each epoch, as the authors' configuration (epoch_lr_decay)")
_RAND_2022_NOTE = ("Transf-RAND: three layers and four heads as the 2022 paper's text and Table 4 (its Table 3 says "
                   "L2); the authors' released configuration (config_long_parade_rand.json) has two layers, "
                   "two epochs and its own default window; stride 100 as the 2022 paper's Table 8 rows equal to "
                   "Table 4, where the authors' main PARADE configuration has stride 75; " + _RAND_CONFIG)
_RAND_2024_NOTE = ("Transf-RAND-L2: window 150, stride 100, two layers as the authors' configuration "
                   "(config_long_parade_rand_150_100*.json); " + _RAND_CONFIG)
_PARADE_STRIDE_NOTE = ("PARADE: stride 100, as Boytsov et al. 2022's Table 8 rows equal to its Table 4; the "
                       "authors' main PARADE configuration (config_long_parade.json) has stride 75")
# de-biased MS MARCO (the positional-bias paper's Table 2): shuffled segments, documents read up
# to 8109 tokens in training, one epoch
_DEBIASED = Recipe(shuffled_segment_words=100)
_DEBIASED_NOTE = ("de-biased MS MARCO: training documents cut at random word boundaries and the segments shuffled "
                  "(Hofstätter et al. 2021a); neither paper says how long the segments are: about 100 words here "
                  "(an assumption); documents read up to 8109 tokens, one epoch, as the paper")
_DEBIASED_SETTINGS = (("max_doc_tokens", 8109),)

_COMMON = {
    "firstp": ModelSpec("firstp", _BERT),
    "firstp-longformer": ModelSpec("firstp", _LONGFORMER),
    "firstp-electra": ModelSpec("firstp", _ELECTRA, notes=(_ELECTRA_NOTE,)),
    "avgp": ModelSpec("avgp", _BERT, _GREEDY),
    "maxp": ModelSpec("maxp", _BERT),
    "sump": ModelSpec("sump", _BERT),
    "cedr-drmm": ModelSpec("cedr_drmm", _BERT, _CEDR),
    "cedr-knrm": ModelSpec("cedr_knrm", _BERT, _CEDR),
    "cedr-pacrr": ModelSpec("cedr_pacrr", _BERT, _CEDR),
    "neural-model1": ModelSpec("neural_model1", _BERT, _GREEDY),
    "parade-attn": ModelSpec("parade_attn", _BERT, _PARADE, notes=(_PARADE_STRIDE_NOTE,)),
    "parade-attn-electra": ModelSpec("parade_attn", _ELECTRA, _PARADE, notes=(_ELECTRA_NOTE, _PARADE_STRIDE_NOTE)),
    "parade-avg": ModelSpec("parade_avg", _BERT, _PARADE, notes=(_PARADE_STRIDE_NOTE,)),
    "parade-max": ModelSpec("parade_max", _BERT, _PARADE, notes=(_PARADE_STRIDE_NOTE,)),
    "parade-transf-pretr": ModelSpec("parade_transformer_pretr", _BERT, _PARADE, notes=(_PARADE_STRIDE_NOTE,)),
    "longformer": ModelSpec("longp", _LONGFORMER, _LONG, notes=(_GLOBAL_NOTE,)),
    "bigbird": ModelSpec("longp", _BIGBIRD, _LONG),
}
MODELS_2022 = {
    **_COMMON,
    "parade-transf-rand": ModelSpec("parade_transformer", _BERT, _PARADE + (("layers", 3), ("heads", 4)),
                                    Recipe(epochs=3), (_RAND_NOTE.format("several epochs", 3), _RAND_2022_NOTE)),
    "parade-transf-pretr-q": ModelSpec("parade_transformer_q", _BERT, _PARADE, notes=(_PARADE_STRIDE_NOTE,)),
}
_RAND_L2 = _PARADE + (("layers", 2), ("heads", 4))
_TINYLLAMA_SETTINGS = (("query_prefix", ""), ("doc_prefix", ""), ("lora", None))
MODELS_2024 = {
    **_COMMON,
    "firstp-deberta": ModelSpec("firstp", _DEBERTA, notes=(_CONFIG_CHECKPOINT.format(_DEBERTA),)),
    "firstp-bigbird": ModelSpec("firstp", _BIGBIRD),
    "firstp-jina": ModelSpec("firstp", _JINA, _REMOTE, notes=(
        "FirstP (JINA): the library's FirstP scores [CLS]; the paper mean-pools JINA", _CONFIG_CHECKPOINT.format(_JINA))),
    "firstp-mosaic": ModelSpec("firstp", _MOSAIC, _REMOTE, Recipe(dtype="fp32"),
                               (_MOSAIC_NOTE, _CONFIG_CHECKPOINT.format(_MOSAIC))),
    "firstp-tinyllama": ModelSpec("llm_firstp", _TINYLLAMA, _TINYLLAMA_SETTINGS,
                                  notes=(_LLM_NOTE, _CONFIG_CHECKPOINT.format(_TINYLLAMA))),
    "firstp-e5": ModelSpec("biencoder_firstp", _E5_4K, (("query_prefix", "query: "), ("doc_prefix", "passage: ")),
                           _ZERO_SHOT, (_E5_NOTE, _E5_CHECKPOINT)),
    "maxp-electra": ModelSpec("maxp", _ELECTRA, notes=(_ELECTRA_NOTE,)),
    "maxp-deberta": ModelSpec("maxp", _DEBERTA, notes=(_CONFIG_CHECKPOINT.format(_DEBERTA),)),
    "parade-attn-deberta": ModelSpec("parade_attn", _DEBERTA, _PARADE,
                                     notes=(_PARADE_STRIDE_NOTE, _CONFIG_CHECKPOINT.format(_DEBERTA))),
    "parade-transf-rand": ModelSpec("parade_transformer", _BERT, _RAND_L2, Recipe(epochs=3),
                                    (_RAND_NOTE.format("two to three epochs", 3), _RAND_2024_NOTE)),
    "parade-transf-rand-electra": ModelSpec("parade_transformer", _ELECTRA, _RAND_L2, Recipe(epochs=3),
                                            (_ELECTRA_NOTE, _RAND_NOTE.format("two to three epochs", 3),
                                             _RAND_2024_NOTE)),
    "jina-longp": ModelSpec("longp", _JINA, _LONG + (("pooling", "mean"),) + _REMOTE,
                            notes=(_CONFIG_CHECKPOINT.format(_JINA),)),
    "mosaic-longp": ModelSpec("longp", _MOSAIC, _LONG + (("pooling", "cls"),) + _REMOTE, Recipe(dtype="fp32"),
                              (_MOSAIC_NOTE, _CONFIG_CHECKPOINT.format(_MOSAIC))),
    "tinyllama-longp": ModelSpec("llm_longp", _TINYLLAMA, _LONG + _TINYLLAMA_SETTINGS,
                                 notes=(_LLM_NOTE, _CONFIG_CHECKPOINT.format(_TINYLLAMA))),
    "e5-longp": ModelSpec("biencoder_longp", _E5_4K,
                          _LONG + (("query_prefix", "query: "), ("doc_prefix", "passage: ")),
                          _ZERO_SHOT, (_E5_NOTE, _E5_CHECKPOINT)),
    # Table 2's models trained on the de-biased MS MARCO
    "maxp-electra-debiased": ModelSpec("maxp", _ELECTRA, _DEBIASED_SETTINGS, _DEBIASED,
                                       (_ELECTRA_NOTE, _DEBIASED_NOTE)),
    "parade-attn-electra-debiased": ModelSpec("parade_attn", _ELECTRA, _PARADE + _DEBIASED_SETTINGS, _DEBIASED,
                                              (_ELECTRA_NOTE, _PARADE_STRIDE_NOTE, _DEBIASED_NOTE)),
    "parade-transf-rand-electra-debiased": ModelSpec("parade_transformer", _ELECTRA, _RAND_L2 + _DEBIASED_SETTINGS,
                                                     _DEBIASED, (_ELECTRA_NOTE, _RAND_2024_NOTE, _DEBIASED_NOTE)),
    "cedr-knrm-debiased": ModelSpec("cedr_knrm", _BERT, _CEDR[:1] + _DEBIASED_SETTINGS + _GREEDY, _DEBIASED,
                                    (_DEBIASED_NOTE,)),
}

_FIRSTP_2024 = (("firstp", "FirstP (BERT)"), ("firstp-longformer", "FirstP (Longformer)"),
                ("firstp-electra", "FirstP (ELECTRA)"))
_CEDR_MODEL1 = (("cedr-drmm", "CEDR-DRMM"), ("cedr-knrm", "CEDR-KNRM"), ("cedr-pacrr", "CEDR-PACRR"),
                ("neural-model1", "Neural Model1"))
_PARADE_2024 = (("parade-attn", "PARADE Attn"), ("parade-attn-electra", "PARADE Attn (ELECTRA)"),
                ("parade-attn-deberta", "PARADE Attn (DEBERTA)"), ("parade-avg", "PARADE Avg"),
                ("parade-max", "PARADE Max"), ("parade-transf-rand", "PARADE Transf-RAND-L2"))
_LONGP_2024 = (("longformer", "LongP (Longformer)"), ("bigbird", "LongP (Big-Bird)"), ("jina-longp", "LongP (JINA)"),
               ("mosaic-longp", "LongP (MOSAIC)"), ("tinyllama-longp", "LongP (TinyLLAMA)"))
# (paper, table) -> (row name, the row's name in that table), in the table's order
TABLES = {
    ("boytsov2022", 4): (
        ("avgp", "AvgP"), ("firstp", "FirstP (BERT)"), ("firstp-longformer", "FirstP (Longformer)"),
        ("firstp-electra", "FirstP (ELECTRA)"), ("maxp", "MaxP"), ("sump", "SumP")) + _CEDR_MODEL1 + (
        ("parade-attn", "PARADE Attn"), ("parade-attn-electra", "PARADE Attn (ELECTRA)"), ("parade-avg", "PARADE Avg"),
        ("parade-max", "PARADE Max"), ("parade-transf-rand", "PARADE Transf-RAND-L3"),
        ("parade-transf-pretr", "PARADE Transf-PRETR-L6"), ("parade-transf-pretr-q", "PARADE Transf-PRETR-Q-L6"),
        ("longformer", "LongP (Longformer)"), ("bigbird", "LongP (Big-Bird)")),
    ("positional-bias", 1): _FIRSTP_2024 + (
        ("firstp-deberta", "FirstP (DEBERTA)"), ("firstp-bigbird", "FirstP (Big-Bird)"), ("firstp-jina", "FirstP (JINA)"),
        ("firstp-mosaic", "FirstP (MOSAIC)"), ("firstp-tinyllama", "FirstP (TinyLLAMA)"),
        ("firstp-e5", "FirstP (E5-4K) zero-shot"), ("avgp", "AvgP"), ("maxp", "MaxP"), ("maxp-electra", "MaxP (ELECTRA)"),
        ("maxp-deberta", "MaxP (DEBERTA)"), ("sump", "SumP")) + _CEDR_MODEL1 + _PARADE_2024 + (
        ("parade-transf-rand-electra", "PARADE Transf-RAND-L2 (ELECTRA)"),
        ("parade-transf-pretr", "PARADE Transf-PRETR-L6")) + _LONGP_2024 + (
        ("e5-longp", "LongP (E5-4K) zero-shot"),),
    ("positional-bias", 2): (
        ("firstp-electra", "FirstP (ELECTRA)"), ("maxp-electra", "MaxP (ELECTRA)"),
        ("parade-attn-electra", "PARADE Attn (ELECTRA)"),
        ("parade-transf-rand-electra", "PARADE Transf-RAND-L2 (ELECTRA)"), ("cedr-knrm", "CEDR-KNRM"),
        ("maxp-electra-debiased", "MaxP (ELECTRA), de-biased MS MARCO"),
        ("parade-attn-electra-debiased", "PARADE Attn (ELECTRA), de-biased MS MARCO"),
        ("parade-transf-rand-electra-debiased", "PARADE Transf-RAND-L2 (ELECTRA), de-biased MS MARCO"),
        ("cedr-knrm-debiased", "CEDR-KNRM, de-biased MS MARCO")),
    ("positional-bias", 4): _FIRSTP_2024 + (
        ("firstp-bigbird", "FirstP (Big-Bird)"), ("firstp-jina", "FirstP (JINA)"), ("firstp-mosaic", "FirstP (MOSAIC)"),
        ("firstp-tinyllama", "FirstP (TinyLLAMA)"), ("firstp-e5", "FirstP (E5-4K)"), ("avgp", "AvgP"),
        ("maxp", "MaxP"), ("maxp-electra", "MaxP (ELECTRA)"), ("maxp-deberta", "MaxP (DEBERTA)"),
        ("sump", "SumP")) + _CEDR_MODEL1 + _PARADE_2024 + (
        ("parade-transf-rand-electra", "P. Transf-RAND-L2 (ELECTRA)"),
        ("parade-transf-pretr", "PARADE Transf-PRETR-L6")) + _LONGP_2024 + (("e5-longp", "LongP (E5-4K)"),),
    ("positional-bias", 5): (
        ("firstp", "FirstP (BERT)"), ("maxp", "MaxP (BERT)"), ("parade-attn", "PARADE Attn"),
        ("firstp-electra", "FirstP (ELECTRA)"), ("maxp-electra", "MaxP (ELECTRA)"),
        ("parade-attn-electra", "PARADE Attn (ELECTRA)"), ("firstp-deberta", "FirstP (DEBERTA)"),
        ("maxp-deberta", "MaxP (DEBERTA)"), ("parade-attn-deberta", "PARADE Attn (DEBERTA)"),
        ("firstp-longformer", "FirstP (Longformer)"), ("longformer", "LongP (Longformer)"),
        ("firstp-bigbird", "FirstP (Big-Bird)"), ("bigbird", "LongP (Big-Bird)"), ("firstp-jina", "FirstP (JINA)"),
        ("jina-longp", "LongP (JINA)"), ("firstp-mosaic", "FirstP (MOSAIC)"), ("mosaic-longp", "LongP (MOSAIC)")),
}

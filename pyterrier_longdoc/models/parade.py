"""AvgP and PARADE: the windows' [CLS] vectors are combined first, then scored.

Li, Yates, MacAvaney, He, Sun, "PARADE: Passage Representation Aggregation for Document
Reranking", ACM TOIS 2023 (Avg / Max / Sum / Attn / CNN / Transformer), and AvgP and PARADE
Transformer PRETR(-Q) of Boytsov et al., "Understanding Performance of Long-Document Ranking
Models through Comprehensive Evaluation and Leaderboarding".

Started from a trained cross-encoder, the encoder is the cross-encoder's (as in the papers,
which start PARADE from a passage ranker); AvgP, PARADE-Avg/Max/Sum/Attn also keep its head as
their scoring layer, so they rank zero-shot before any document-level training. The other
PARADE heads (CNN, Transformer) are new and need ``fit``.
"""
from __future__ import annotations

from .._reranker import LongDocReranker
from ..aggregators.parade import AttentionAggregator, CNNAggregator, PooledAggregator, TransformerAggregator

PARADE_WINDOWS = {"window": 150, "stride": 75, "max_doc_tokens": 1431}


class AvgP(LongDocReranker):
    """AvgP: the mean [CLS] of up to three disjoint chunks of 477 tokens, then the head."""

    name = "avgp"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "mean"}
    defaults = {"window": None, "stride": None, "max_chunks": 3, "max_doc_tokens": 1431}


class ParadeAvg(LongDocReranker):
    """PARADE-Avg: the element-wise mean of the windows' [CLS] vectors, then the head."""

    name = "parade_avg"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "mean"}
    defaults = PARADE_WINDOWS


class ParadeMax(LongDocReranker):
    """PARADE-Max: the element-wise max of the windows' [CLS] vectors, then the head."""

    name = "parade_max"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "max"}
    defaults = PARADE_WINDOWS


class ParadeSum(LongDocReranker):
    """PARADE-Sum: the element-wise sum of the windows' [CLS] vectors, then the head."""

    name = "parade_sum"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "sum"}
    defaults = PARADE_WINDOWS


class ParadeAttn(LongDocReranker):
    """PARADE-Attn: an attention-weighted sum of the windows' [CLS] vectors, then the head."""

    name = "parade_attn"
    aggregator = AttentionAggregator
    defaults = PARADE_WINDOWS


class ParadeCNN(LongDocReranker):
    """PARADE-CNN: four stride-2 convolutions over the windows' [CLS] vectors, every level scored."""

    name = "parade_cnn"
    aggregator = CNNAggregator
    defaults = {**PARADE_WINDOWS, **CNNAggregator.settings_defaults()}


class ParadeTransformer(LongDocReranker):
    """PARADE-Transformer: a Transformer over [C, cls_1..cls_m], a linear head on its first output.

    Defaults: RAND-L2 (2 random layers, 4 heads). ``init="pretrained"`` with
    ``aggregator_model=...`` gives PRETR-Ln, ``query_tokens=True`` the "-Q" variant; see
    :class:`ParadeTransformerPretrained` and :class:`ParadeTransformerQ` for those defaults.
    """

    name = "parade_transformer"
    aggregator = TransformerAggregator
    defaults = {**PARADE_WINDOWS, **TransformerAggregator.settings_defaults()}  # RAND-L2


class ParadeTransformerPretrained(ParadeTransformer):
    """PARADE-Transformer PRETR: the aggregator layers come from a pretrained encoder (all its
    layers by default: a 6-layer MiniLM cross-encoder in Boytsov et al.)."""

    name = "parade_transformer_pretr"
    defaults = {**ParadeTransformer.defaults, "init": "pretrained", "layers": None,
                "aggregator_model": "cross-encoder/ms-marco-MiniLM-L-6-v2"}


class ParadeTransformerQ(ParadeTransformerPretrained):
    """PARADE-Transformer PRETR-Q: also feeds the first chunk's projected query token vectors."""

    name = "parade_transformer_q"
    defaults = {**ParadeTransformerPretrained.defaults, "query_tokens": True}

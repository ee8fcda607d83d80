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

from dataclasses import dataclass

from .._reranker import LongDocReranker
from ..engine.settings import ModelSettings, flag, one_of, positive_int, setting
from ..aggregators.parade import AttentionAggregator, CNNAggregator, PooledAggregator, TransformerAggregator


@dataclass(frozen=True)
class AvgPSettings(ModelSettings):
    """AvgP's chunks (Boytsov et al.): up to three disjoint chunks that fill the encoder input."""

    max_chunks: int | None = setting(3, "chunks per document at most")


@dataclass(frozen=True)
class ParadeSettings(ModelSettings):
    """PARADE's passages (Li et al.): 150-token windows every 75 tokens, 1431 document tokens in all."""

    window: int | None = setting(150, "tokens per passage")
    stride: int | None = setting(75, "tokens between the starts of two passages")


@dataclass(frozen=True)
class ParadeCNNSettings(ParadeSettings):
    """PARADE-CNN's passages and its convolutions."""

    layers: int = setting(4, "stride-2 convolution layers over the passage vectors, each level scored")

    def __post_init__(self):
        super().__post_init__()
        positive_int(self, "layers")


@dataclass(frozen=True)
class ParadeTransformerSettings(ParadeSettings):
    """PARADE-Transformer's passages and its aggregator (RAND-L2: two random layers, four heads)."""

    layers: int | None = setting(2, "aggregator layers (random init), or how many of the pretrained model's "
                                     "first layers (None: all)")
    heads: int = setting(4, "attention heads of a random layer")
    init: str = setting("random", "'random' layers, or 'pretrained' ones from aggregator_model (PRETR)")
    aggregator_model: str | None = setting(None, "the encoder whose layers aggregate (init='pretrained')")
    query_tokens: bool = setting(False, "also feed the first chunk's projected query token vectors (-Q)")
    aggregator_config: dict | None = setting(None, "the aggregator encoder's config, saved so that loading needs "
                                                   "no aggregator_model", derived=True)

    def __post_init__(self):
        super().__post_init__()
        if self.layers is not None and (not isinstance(self.layers, int) or isinstance(self.layers, bool)
                                        or self.layers < 0):  # 0: a linear head on the prepended vector
            raise ValueError(f"{type(self).__name__}: layers must be an integer >= 0 or None, got {self.layers!r}")
        positive_int(self, "heads")
        one_of(self, "init", ("random", "pretrained"))
        flag(self, "query_tokens")


@dataclass(frozen=True)
class ParadeTransformerPretrainedSettings(ParadeTransformerSettings):
    """PRETR: every layer of a pretrained encoder aggregates (a 6-layer MiniLM cross-encoder in Boytsov et al.)."""

    layers: int | None = setting(None, "how many of the pretrained model's first layers aggregate (None: all)")
    init: str = setting("pretrained", "'random' layers, or 'pretrained' ones from aggregator_model (PRETR)")
    aggregator_model: str | None = setting("cross-encoder/ms-marco-MiniLM-L-6-v2",
                                           "the encoder whose layers aggregate")


@dataclass(frozen=True)
class ParadeTransformerQSettings(ParadeTransformerPretrainedSettings):
    """PRETR-Q: PRETR with the first chunk's query token vectors."""

    query_tokens: bool = setting(True, "also feed the first chunk's projected query token vectors (-Q)")


class AvgP(LongDocReranker):
    """AvgP: the mean [CLS] of up to three disjoint chunks of 477 tokens, then the head."""

    name = "avgp"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "mean"}
    Settings = AvgPSettings


class ParadeAvg(LongDocReranker):
    """PARADE-Avg: the element-wise mean of the windows' [CLS] vectors, then the head."""

    name = "parade_avg"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "mean"}
    Settings = ParadeSettings


class ParadeMax(LongDocReranker):
    """PARADE-Max: the element-wise max of the windows' [CLS] vectors, then the head."""

    name = "parade_max"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "max"}
    Settings = ParadeSettings


class ParadeSum(LongDocReranker):
    """PARADE-Sum: the element-wise sum of the windows' [CLS] vectors, then the head."""

    name = "parade_sum"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "sum"}
    Settings = ParadeSettings


class ParadeAttn(LongDocReranker):
    """PARADE-Attn: an attention-weighted sum of the windows' [CLS] vectors, then the head."""

    name = "parade_attn"
    aggregator = AttentionAggregator
    Settings = ParadeSettings


class ParadeCNN(LongDocReranker):
    """PARADE-CNN: four stride-2 convolutions over the windows' [CLS] vectors, every level scored."""

    name = "parade_cnn"
    aggregator = CNNAggregator
    Settings = ParadeCNNSettings


class ParadeTransformer(LongDocReranker):
    """PARADE-Transformer: a Transformer over [C, cls_1..cls_m], a linear head on its first output.

    Defaults: RAND-L2 (2 random layers, 4 heads). ``init="pretrained"`` with
    ``aggregator_model=...`` gives PRETR-Ln, ``query_tokens=True`` the "-Q" variant; see
    :class:`ParadeTransformerPretrained` and :class:`ParadeTransformerQ` for those defaults.
    """

    name = "parade_transformer"
    aggregator = TransformerAggregator
    Settings = ParadeTransformerSettings  # RAND-L2


class ParadeTransformerPretrained(ParadeTransformer):
    """PARADE-Transformer PRETR: the aggregator layers come from a pretrained encoder (all its
    layers by default: a 6-layer MiniLM cross-encoder in Boytsov et al.)."""

    name = "parade_transformer_pretr"
    Settings = ParadeTransformerPretrainedSettings


class ParadeTransformerQ(ParadeTransformerPretrained):
    """PARADE-Transformer PRETR-Q: also feeds the first chunk's projected query token vectors."""

    name = "parade_transformer_q"
    Settings = ParadeTransformerQSettings

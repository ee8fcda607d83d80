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

from typing_extensions import Unpack

from .._reranker import LongDocReranker, Source
from ..engine.settings import ModelOptions, ModelSettings, flag, one_of, positive_int, setting
from ..aggregators.parade import AttentionAggregator, CNNAggregator, PooledAggregator, TransformerAggregator


@dataclass(frozen=True)
class AvgPSettings(ModelSettings):
    """AvgP's chunks (Boytsov et al.): up to three disjoint chunks that fill the encoder input."""

    max_chunks: int | None = setting(3, "chunks per document at most")


class AvgPOptions(ModelOptions, total=False):
    """AvgP's keywords (``AvgPSettings``)."""


@dataclass(frozen=True)
class ParadeSettings(ModelSettings):
    """PARADE's passages (Li et al.): 150-token windows every 75 tokens, 1431 document tokens in all."""

    window: int | None = setting(150, "tokens per passage")
    stride: int | None = setting(75, "tokens between the starts of two passages")


class ParadeOptions(ModelOptions, total=False):
    """The keywords of PARADE-Avg, -Max, -Sum and -Attn (``ParadeSettings``)."""


@dataclass(frozen=True)
class ParadeCNNSettings(ParadeSettings):
    """PARADE-CNN's passages and its convolutions."""

    layers: int = setting(4, "stride-2 convolution layers over the passage vectors, each level scored")

    def __post_init__(self):
        super().__post_init__()
        positive_int(self, "layers")


class ParadeCNNOptions(ParadeOptions, total=False):
    """PARADE-CNN's keywords (``ParadeCNNSettings``)."""

    layers: int


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


class ParadeTransformerOptions(ParadeOptions, total=False):
    """PARADE-Transformer's keywords (``ParadeTransformerSettings``; ``aggregator_config`` is derived, never given)."""

    layers: int | None
    heads: int
    init: str
    aggregator_model: str | None
    query_tokens: bool


@dataclass(frozen=True)
class ParadeTransformerPretrainedSettings(ParadeTransformerSettings):
    """PRETR: every layer of a pretrained encoder aggregates (a 6-layer MiniLM cross-encoder in Boytsov et al.)."""

    layers: int | None = setting(None, "how many of the pretrained model's first layers aggregate (None: all)")
    init: str = setting("pretrained", "'random' layers, or 'pretrained' ones from aggregator_model (PRETR)")
    aggregator_model: str | None = setting("cross-encoder/ms-marco-MiniLM-L-6-v2",
                                           "the encoder whose layers aggregate")


class ParadeTransformerPretrainedOptions(ParadeTransformerOptions, total=False):
    """PRETR's keywords (``ParadeTransformerPretrainedSettings``)."""


@dataclass(frozen=True)
class ParadeTransformerQSettings(ParadeTransformerPretrainedSettings):
    """PRETR-Q: PRETR with the first chunk's query token vectors."""

    query_tokens: bool = setting(True, "also feed the first chunk's projected query token vectors (-Q)")


class ParadeTransformerQOptions(ParadeTransformerPretrainedOptions, total=False):
    """PRETR-Q's keywords (``ParadeTransformerQSettings``)."""


class AvgP(LongDocReranker):
    """AvgP: the mean [CLS] of up to three disjoint chunks of 477 tokens, then the head."""

    name = "avgp"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "mean"}
    Settings = AvgPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[AvgPOptions]):
        self._load(model_name_or_path, options)


class ParadeAvg(LongDocReranker):
    """PARADE-Avg: the element-wise mean of the windows' [CLS] vectors, then the head."""

    name = "parade_avg"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "mean"}
    Settings = ParadeSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[ParadeOptions]):
        self._load(model_name_or_path, options)


class ParadeMax(LongDocReranker):
    """PARADE-Max: the element-wise max of the windows' [CLS] vectors, then the head."""

    name = "parade_max"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "max"}
    Settings = ParadeSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[ParadeOptions]):
        self._load(model_name_or_path, options)


class ParadeSum(LongDocReranker):
    """PARADE-Sum: the element-wise sum of the windows' [CLS] vectors, then the head."""

    name = "parade_sum"
    aggregator = PooledAggregator
    aggregator_args = {"reduce": "sum"}
    Settings = ParadeSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[ParadeOptions]):
        self._load(model_name_or_path, options)


class ParadeAttn(LongDocReranker):
    """PARADE-Attn: an attention-weighted sum of the windows' [CLS] vectors, then the head."""

    name = "parade_attn"
    aggregator = AttentionAggregator
    Settings = ParadeSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[ParadeOptions]):
        self._load(model_name_or_path, options)


class ParadeCNN(LongDocReranker):
    """PARADE-CNN: four stride-2 convolutions over the windows' [CLS] vectors, every level scored."""

    name = "parade_cnn"
    aggregator = CNNAggregator
    Settings = ParadeCNNSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[ParadeCNNOptions]):
        self._load(model_name_or_path, options)


class ParadeTransformer(LongDocReranker):
    """PARADE-Transformer: a Transformer over [C, cls_1..cls_m], a linear head on its first output.

    Defaults: RAND-L2 (2 random layers, 4 heads). ``init="pretrained"`` with
    ``aggregator_model=...`` gives PRETR-Ln, ``query_tokens=True`` the "-Q" variant; see
    :class:`ParadeTransformerPretrained` and :class:`ParadeTransformerQ` for those defaults.
    """

    name = "parade_transformer"
    aggregator = TransformerAggregator
    Settings = ParadeTransformerSettings  # RAND-L2

    def __init__(self, model_name_or_path: Source, **options: Unpack[ParadeTransformerOptions]):
        self._load(model_name_or_path, options)


class ParadeTransformerPretrained(ParadeTransformer):
    """PARADE-Transformer PRETR: the aggregator layers come from a pretrained encoder (all its
    layers by default: a 6-layer MiniLM cross-encoder in Boytsov et al.)."""

    name = "parade_transformer_pretr"
    Settings = ParadeTransformerPretrainedSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[ParadeTransformerPretrainedOptions]):
        self._load(model_name_or_path, options)


class ParadeTransformerQ(ParadeTransformerPretrained):
    """PARADE-Transformer PRETR-Q: also feeds the first chunk's projected query token vectors."""

    name = "parade_transformer_q"
    Settings = ParadeTransformerQSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[ParadeTransformerQOptions]):
        self._load(model_name_or_path, options)

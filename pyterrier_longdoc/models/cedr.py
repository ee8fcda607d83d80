"""CEDR: contextual similarity matrices of every layer, with the mean [CLS].

MacAvaney, Yates, Cohan, Goharian, "CEDR: Contextualized Embeddings for Document Ranking",
SIGIR 2019. Started from a trained cross-encoder, the encoder is the cross-encoder's; the CEDR
head is new and needs ``fit``.
"""
from __future__ import annotations

from dataclasses import dataclass

from typing_extensions import Unpack

from .._reranker import LongDocReranker, Source
from ..engine.settings import ModelOptions, ModelSettings, positive_int, setting
from ..aggregators.cedr import KNRM_MUS, KNRM_SIGMAS, DrmmAggregator, KnrmAggregator, PacrrAggregator


@dataclass(frozen=True)
class CedrSettings(ModelSettings):
    """The reference code's chunks: 20 query tokens, 800 document tokens in disjoint chunks."""

    max_query_tokens: int | None = setting(20, "query tokens read (the similarity matrices' rows)")
    max_doc_tokens: int = setting(800, "document tokens read at most")


class CedrOptions(ModelOptions, total=False):
    """The keywords every CEDR model takes (``CedrSettings``)."""


@dataclass(frozen=True)
class CedrKnrmSettings(CedrSettings):
    """CEDR-KNRM's kernels (K-NRM's 11: ten soft ones and an exact-match one)."""

    mus: list = setting(KNRM_MUS, "the kernels' means (cosine similarities)")
    sigmas: list = setting(KNRM_SIGMAS, "the kernels' widths, one per mean")

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.mus, (list, tuple)) or not isinstance(self.sigmas, (list, tuple)) \
                or len(self.mus) != len(self.sigmas) or not self.mus:
            raise ValueError(f"CedrKnrmSettings: mus and sigmas must be lists of one length, got {self.mus!r} and "
                             f"{self.sigmas!r}")


class CedrKnrmOptions(CedrOptions, total=False):
    """CEDR-KNRM's keywords (``CedrKnrmSettings``)."""

    mus: list
    sigmas: list


@dataclass(frozen=True)
class CedrPacrrSettings(CedrSettings):
    """CEDR-PACRR's convolutions and pooling."""

    max_ngram: int = setting(3, "the longest n-gram convolution (1 to max_ngram)")
    filters: int = setting(32, "filters per convolution")
    kmax: int = setting(2, "strongest signals kept per query token (k-max pooling)")

    def __post_init__(self):
        super().__post_init__()
        for name in ("max_ngram", "filters", "kmax"):
            positive_int(self, name)


class CedrPacrrOptions(CedrOptions, total=False):
    """CEDR-PACRR's keywords (``CedrPacrrSettings``)."""

    max_ngram: int
    filters: int
    kmax: int


@dataclass(frozen=True)
class CedrDrmmSettings(CedrSettings):
    """CEDR-DRMM's histograms and its feed-forward layer."""

    bins: int = setting(11, "histogram bins over [-1, 1]")
    hidden: int = setting(5, "units of the hidden layer over each histogram")

    def __post_init__(self):
        super().__post_init__()
        for name in ("bins", "hidden"):
            positive_int(self, name)


class CedrDrmmOptions(CedrOptions, total=False):
    """CEDR-DRMM's keywords (``CedrDrmmSettings``)."""

    bins: int
    hidden: int


class CedrKnrm(LongDocReranker):
    """CEDR-KNRM: RBF kernel pooling of contextual similarity matrices, with the [CLS]."""

    name = "cedr_knrm"
    aggregator = KnrmAggregator
    Settings = CedrKnrmSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[CedrKnrmOptions]):
        self._load(model_name_or_path, options)


class CedrPacrr(LongDocReranker):
    """CEDR-PACRR: n-gram convolutions and k-max pooling over contextual similarities, with the [CLS]."""

    name = "cedr_pacrr"
    aggregator = PacrrAggregator
    Settings = CedrPacrrSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[CedrPacrrOptions]):
        self._load(model_name_or_path, options)


class CedrDrmm(LongDocReranker):
    """CEDR-DRMM: similarity histograms per query token, with the [CLS]."""

    name = "cedr_drmm"
    aggregator = DrmmAggregator
    Settings = CedrDrmmSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[CedrDrmmOptions]):
        self._load(model_name_or_path, options)

"""CEDR: contextual similarity matrices of every layer, with the mean [CLS].

MacAvaney, Yates, Cohan, Goharian, "CEDR: Contextualized Embeddings for Document Ranking",
SIGIR 2019. Started from a trained cross-encoder, the encoder is the cross-encoder's; the CEDR
head is new and needs ``fit``.
"""
from __future__ import annotations

from dataclasses import dataclass

from .._reranker import LongDocReranker
from ..engine.settings import ModelSettings, positive_int, setting
from ..aggregators.cedr import KNRM_MUS, KNRM_SIGMAS, DrmmAggregator, KnrmAggregator, PacrrAggregator


@dataclass(frozen=True)
class CedrSettings(ModelSettings):
    """The reference code's chunks: 20 query tokens, 800 document tokens in disjoint chunks."""

    max_query_tokens: int | None = setting(20, "query tokens read (the similarity matrices' rows)")
    max_doc_tokens: int = setting(800, "document tokens read at most")


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


@dataclass(frozen=True)
class CedrDrmmSettings(CedrSettings):
    """CEDR-DRMM's histograms and its feed-forward layer."""

    bins: int = setting(11, "histogram bins over [-1, 1]")
    hidden: int = setting(5, "units of the hidden layer over each histogram")

    def __post_init__(self):
        super().__post_init__()
        for name in ("bins", "hidden"):
            positive_int(self, name)


class CedrKnrm(LongDocReranker):
    """CEDR-KNRM: RBF kernel pooling of contextual similarity matrices, with the [CLS]."""

    name = "cedr_knrm"
    aggregator = KnrmAggregator
    Settings = CedrKnrmSettings


class CedrPacrr(LongDocReranker):
    """CEDR-PACRR: n-gram convolutions and k-max pooling over contextual similarities, with the [CLS]."""

    name = "cedr_pacrr"
    aggregator = PacrrAggregator
    Settings = CedrPacrrSettings


class CedrDrmm(LongDocReranker):
    """CEDR-DRMM: similarity histograms per query token, with the [CLS]."""

    name = "cedr_drmm"
    aggregator = DrmmAggregator
    Settings = CedrDrmmSettings

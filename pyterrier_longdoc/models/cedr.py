"""CEDR: contextual similarity matrices of every layer, with the mean [CLS].

MacAvaney, Yates, Cohan, Goharian, "CEDR: Contextualized Embeddings for Document Ranking",
SIGIR 2019. Started from a trained cross-encoder, the encoder is the cross-encoder's; the CEDR
head is new and needs ``fit``.
"""
from __future__ import annotations

from .._reranker import LongDocReranker
from ..aggregators.cedr import DrmmAggregator, KnrmAggregator, PacrrAggregator

# the reference code's defaults: 20 query tokens, 800 document tokens in disjoint chunks
CEDR_CHUNKS = {"window": None, "stride": None, "max_query_tokens": 20, "max_doc_tokens": 800}


class CedrKnrm(LongDocReranker):
    """CEDR-KNRM: RBF kernel pooling of contextual similarity matrices, with the [CLS]."""

    name = "cedr_knrm"
    aggregator = KnrmAggregator
    defaults = {**CEDR_CHUNKS, **KnrmAggregator.settings_defaults()}


class CedrPacrr(LongDocReranker):
    """CEDR-PACRR: n-gram convolutions and k-max pooling over contextual similarities, with the [CLS]."""

    name = "cedr_pacrr"
    aggregator = PacrrAggregator
    defaults = {**CEDR_CHUNKS, **PacrrAggregator.settings_defaults()}


class CedrDrmm(LongDocReranker):
    """CEDR-DRMM: similarity histograms per query token, with the [CLS]."""

    name = "cedr_drmm"
    aggregator = DrmmAggregator
    defaults = {**CEDR_CHUNKS, **DrmmAggregator.settings_defaults()}

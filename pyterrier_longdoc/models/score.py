"""FirstP, MaxP, SumP and the k-max average: every window scored by the chunk head, then combined.

Dai & Callan, "Deeper Text Understanding for IR with Contextual Neural Language Modeling",
SIGIR 2019. Started from a trained cross-encoder, a window's score is that cross-encoder's
score of the (query, window) pair, so these models rank zero-shot.
"""
from __future__ import annotations

from .._reranker import LongDocReranker
from ..aggregators.score import ScoreAggregator

SLIDING = {"window": 150, "stride": 100, "max_doc_tokens": 1431}


class FirstP(LongDocReranker):
    """FirstP: the query with the start of the document (query + document <= 512 tokens)."""

    name = "firstp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "first"}
    defaults = {"window": None, "stride": None, "max_chunks": 1}
    crops = True  # reading the start only is FirstP's definition: no cropping warning unless warn_cropping=True


class MaxP(LongDocReranker):
    """MaxP: the best-scoring sliding window decides (window 150, stride 100, 1431 tokens)."""

    name = "maxp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "max"}
    defaults = SLIDING


class SumP(LongDocReranker):
    """SumP: the sum of the sliding windows' scores (window 150, stride 100, 1431 tokens)."""

    name = "sump"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "sum"}
    defaults = SLIDING


class KMaxAvgP(LongDocReranker):
    """k-max average: the mean of the ``k`` best windows' scores (k=3; window 150, stride 100)."""

    name = "kmax_avgp"
    aggregator = ScoreAggregator
    aggregator_args = {"reduce": "kmaxavg"}
    defaults = {**SLIDING, "k": 3}

"""Bi-encoder rankers: FirstP, MaxP and LongP over an embedding model (see aggregators/biencoder.py
for the papers). The positional-bias study behind MS MARCO FarRelevant evaluates FirstP and LongP
over E5-4K zero-shot so.

Zero-shot by design: an embedding model (a sentence-transformers folder, or a transformers
encoder) is used as its own folder says: its pooling, normalisation, similarity function, query
and document prompts and input length, each overridable (``pooling``, ``normalize``,
``similarity``, ``query_prefix``, ``doc_prefix``, ``max_length``). A query is read as far as the
model reads (``max_query_tokens=None``: ``max_length`` less its special tokens and prompt, as
sentence-transformers truncates it). On one window the score is ``SentenceTransformer.encode``'s
embeddings compared by the model's similarity.

``fit`` trains the shared encoder (both towers) with the library's losses over each query's
sampled hard negatives (``loss="listwise"`` is the contrastive softmax cross-entropy over the
positive and the negatives); there are no in-batch negatives, as a training step scores each
query only with its own candidates.
"""
from __future__ import annotations

from .._biencoder import BiEncoderModel
from .._embedder import embedder_settings
from .._reranker import LongDocReranker
from ..aggregators.biencoder import BiEncoderAggregator
from .score import SLIDING

EMBEDDER_DEFAULTS = {"pooling": "mean", "normalize": False, "similarity": "cosine", "query_prefix": "",
                     "doc_prefix": "", "max_query_tokens": None}  # None: as far as sentence-transformers reads


class _BiEncoder(LongDocReranker):
    engine = BiEncoderModel
    aggregator = BiEncoderAggregator

    @classmethod
    def source_settings(cls, source: str, settings: dict) -> dict:
        # a new model: as its folder says, unless told otherwise
        return {**embedder_settings(source, given=settings), **settings}


class BiEncoderFirstP(_BiEncoder):
    """Bi-encoder FirstP: the query's and the document start's embeddings compared (Sentence-BERT, Reimers &
    Gurevych EMNLP 2019; E5, Wang et al. 2022), zero-shot."""

    name = "biencoder_firstp"
    aggregator_args = {"reduce": "first"}
    defaults = {**EMBEDDER_DEFAULTS, "window": None, "stride": None, "max_chunks": 1}


class BiEncoderMaxP(_BiEncoder):
    """Bi-encoder MaxP: the most similar sliding window's similarity (window 150, stride 100; Sentence-BERT
    embeddings), zero-shot."""

    name = "biencoder_maxp"
    aggregator_args = {"reduce": "max"}
    defaults = {**EMBEDDER_DEFAULTS, **SLIDING}


class BiEncoderLongP(_BiEncoder):
    """Bi-encoder LongP: the whole document in one embedding of a long-context embedding model (E5-4K in the
    positional-bias study), zero-shot; by default as long as the model reads (its max_seq_length or position embeddings)."""

    name = "biencoder_longp"
    aggregator_args = {"reduce": "first"}
    defaults = {**EMBEDDER_DEFAULTS, "window": None, "stride": None, "max_chunks": 1, "max_length": None,
                "max_doc_tokens": 4096}

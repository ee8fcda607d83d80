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

from dataclasses import dataclass

from typing_extensions import Unpack

from ..engine.biencoder import BiEncoderModel
from ..engine.embedder import SIMILARITIES, embedder_settings
from .._reranker import LongDocReranker, Source
from ..engine.settings import ModelOptions, ModelSettings, flag, one_of, setting
from ..aggregators.biencoder import BiEncoderAggregator
from ..aggregators.heads import POOLINGS
from .score import FirstPOptions, FirstPSettings, MaxPOptions, MaxPSettings


@dataclass(frozen=True)
class BiEncoderSettings:
    """What a bi-encoder adds to its chunking (a mixin, first in the bases); a new model takes each from
    its sentence-transformers folder unless given."""

    pooling: str = setting("mean", f"how a sequence becomes a vector: one of {POOLINGS}")
    normalize: bool = setting(False, "L2-normalise the vectors (the folder's Normalize module)")
    similarity: str = setting("cosine", f"how the query's and a window's vectors compare: one of {SIMILARITIES}")
    query_prefix: str = setting("", "the model's query prompt")
    doc_prefix: str = setting("", "the model's document prompt, before every window")
    max_query_tokens: int | None = setting(None, "query tokens read (None: as far as the model reads, as "
                                                 "sentence-transformers truncates)")

    def __post_init__(self):
        one_of(self, "pooling", POOLINGS)
        one_of(self, "similarity", SIMILARITIES)
        flag(self, "normalize")
        super().__post_init__()


class BiEncoderOptions(ModelOptions, total=False):
    """What the bi-encoders' keywords add (``BiEncoderSettings``)."""

    pooling: str
    normalize: bool
    similarity: str


@dataclass(frozen=True)
class BiEncoderFirstPSettings(BiEncoderSettings, FirstPSettings):
    """Bi-encoder FirstP's settings: the document's start, as far as the model reads."""


class BiEncoderFirstPOptions(BiEncoderOptions, FirstPOptions, total=False):
    """Bi-encoder FirstP's keywords (``BiEncoderFirstPSettings``)."""


@dataclass(frozen=True)
class BiEncoderMaxPSettings(BiEncoderSettings, MaxPSettings):
    """Bi-encoder MaxP's settings: MaxP's sliding windows."""


class BiEncoderMaxPOptions(BiEncoderOptions, MaxPOptions, total=False):
    """Bi-encoder MaxP's keywords (``BiEncoderMaxPSettings``)."""


@dataclass(frozen=True)
class BiEncoderLongPSettings(BiEncoderSettings, ModelSettings):
    """Bi-encoder LongP's settings: the whole document in one embedding."""

    max_chunks: int | None = setting(1, "one chunk: the whole (cropped) document")
    max_length: int | None = setting(None, "tokens per sequence (None: the model's max_seq_length or position "
                                           "embeddings)")
    max_doc_tokens: int = setting(4096, "document tokens read at most")


class BiEncoderLongPOptions(BiEncoderOptions, total=False):
    """Bi-encoder LongP's keywords (``BiEncoderLongPSettings``)."""


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
    crops = True  # reading the start only is FirstP's definition: no cropping warning unless warn_cropping=True
    aggregator_args = {"reduce": "first"}
    Settings = BiEncoderFirstPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[BiEncoderFirstPOptions]):
        self._load(model_name_or_path, options)


class BiEncoderMaxP(_BiEncoder):
    """Bi-encoder MaxP: the most similar sliding window's similarity (window 150, stride 100; Sentence-BERT
    embeddings), zero-shot."""

    name = "biencoder_maxp"
    aggregator_args = {"reduce": "max"}
    Settings = BiEncoderMaxPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[BiEncoderMaxPOptions]):
        self._load(model_name_or_path, options)


class BiEncoderLongP(_BiEncoder):
    """Bi-encoder LongP: the whole document in one embedding of a long-context embedding model (E5-4K in the
    positional-bias study), zero-shot; by default as long as the model reads (its max_seq_length or position embeddings)."""

    name = "biencoder_longp"
    aggregator_args = {"reduce": "first"}
    Settings = BiEncoderLongPSettings

    def __init__(self, model_name_or_path: Source, **options: Unpack[BiEncoderLongPOptions]):
        self._load(model_name_or_path, options)

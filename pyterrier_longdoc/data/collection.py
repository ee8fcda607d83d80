"""One shape for every collection of this library: generated (``synthetic.make_collection``),
FarRelevant-style (``diagnostics.build_far_relevant``) and loaded (``load_collection``).

Every collection has ``topics`` (``qid, query``), ``qrels`` (``qid, docno, label``) and ``text``
(a ``pt.Transformer`` adding the ``text`` column by docno, as ``pt.text.get_text`` does); unpacks
as ``topics, qrels, text``; and ``split(name)`` gives a collection of the same kind. Collections
held in memory also have ``documents`` (``docno, text``) and ``positions``: where each query's
relevant passage sits, ``qid, docno, char_start, char_end`` (end exclusive:
``text[char_start:char_end]`` is the passage) and what else the collection knows (word or token
offsets). Collections that cannot hold them (MS MARCO, Robust04) have ``None`` there.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import TYPE_CHECKING, ClassVar, TypedDict

import pandas as pd
import pyterrier as pt


class Collection:
    """The shape described in the module doc; subclasses hold ``topics``, ``qrels``, ``text``
    and the rest."""

    topics: pd.DataFrame
    qrels: pd.DataFrame
    documents: pd.DataFrame | None
    positions: pd.DataFrame | None

    if TYPE_CHECKING:  # a field of some collections, a property of others: to a type checker, read-only
        @property
        def text(self) -> pt.Transformer: ...

    def __iter__(self) -> Iterator:
        return iter((self.topics, self.qrels, self.text))

    def get_corpus_iter(self) -> Iterator[dict[str, str]]:
        """Documents as dicts, for an indexer: ``pt.IterDictIndexer(...).index(coll.get_corpus_iter())``."""
        if self.documents is None:
            raise NotImplementedError(f"{type(self).__name__} has no documents in memory")
        for docno, text in zip(self.documents["docno"], self.documents["text"]):
            yield {"docno": docno, "text": text}

    def _with_topics(self, qids: set) -> TopicFrames:
        """``topics``, ``qrels`` and ``positions`` restricted to ``qids``."""
        def select(frame):
            return None if frame is None else frame[frame["qid"].isin(qids)].reset_index(drop=True)

        return {"topics": select(self.topics), "qrels": select(self.qrels), "positions": select(self.positions)}


class TopicFrames(TypedDict):
    """A collection's frames that follow its topics (``Collection._with_topics``)."""

    topics: pd.DataFrame | None
    qrels: pd.DataFrame | None
    positions: pd.DataFrame | None


class InMemoryCollection(Collection):
    """A collection whose ``documents`` are in memory: ``text`` reads them."""

    documents: pd.DataFrame

    @property
    def text(self) -> pt.Transformer:
        """Adds ``text`` by docno; a ``KeyError`` names docnos the collection does not have."""
        from .documents import TextLoader

        return TextLoader(self.documents[["docno", "text"]], "text")


@dataclasses.dataclass(frozen=True, eq=False, repr=False)
class SplitCollection(InMemoryCollection):
    """An in-memory collection whose topics say which split each query is in (``split``: one of
    ``splits``) and where its answer sits (``position``: 'near', inside what FirstP reads, or 'far',
    beyond it): the generated collection and the shipped prose (``data.prose``). Subclasses are
    dataclasses of ``documents, topics, qrels, positions``."""

    documents: pd.DataFrame
    topics: pd.DataFrame
    qrels: pd.DataFrame
    positions: pd.DataFrame
    splits: ClassVar[tuple[str, ...]] = ("train", "test")

    docs = property(lambda self: self.documents)  # version 0.1's name

    def get_text(self) -> pt.Transformer:
        """The same as ``text``."""
        return self.text

    def _subset(self, keep: pd.Series):
        """The same documents with the topics selected by ``keep`` (a mask over ``topics``)."""
        return type(self)(self.documents, **self._with_topics(set(self.topics.loc[keep, "qid"])))

    def split(self, name: str):
        """The topics (and their qrels and positions) of split ``name``, one of ``splits``."""
        if name not in self.splits:
            raise ValueError(f"unknown split {name!r}; valid splits: {', '.join(self.splits)}")
        return self._subset(self.topics["split"] == name)

    def near(self):
        """The topics whose answer sits inside what FirstP reads."""
        return self._subset(self.topics["position"] == "near")

    def far(self):
        """The topics whose answer lies beyond what FirstP reads."""
        return self._subset(self.topics["position"] == "far")

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(getattr(self, f).equals(getattr(other, f)) for f in ("documents", "topics", "qrels", "positions"))

    __hash__ = None  # type: ignore[assignment]  # frames are mutable

    def __repr__(self) -> str:
        def counts(column: str) -> str:
            return ", ".join(f"{n} {k}" for k, n in self.topics[column].value_counts().sort_index().items())

        return (f"{type(self).__name__}({len(self.documents)} docs, {len(self.topics)} topics: "
                f"{counts('split')}; {counts('position')})")

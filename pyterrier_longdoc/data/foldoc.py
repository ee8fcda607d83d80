"""Real prose offline: the Free On-line Dictionary of Computing as a passage ranking task.

FOLDOC (https://foldoc.org, editor Denis Howe, GNU FDL) is about 15,000 encyclopedic entries
on computing. Debian ships it in dictd format (``apt-get install dict-foldoc``:
``/usr/share/dictd/foldoc.dict.dz`` and ``foldoc.index``); this module reads that file, so no
download happens at run time.

The task (``foldoc_task``): definitional queries, ``"what is <term>"``, whose one relevant
passage is the first paragraph of the term's own entry **with every occurrence of the term
replaced by "this"**. Queries name a term, the relevant passage describes it without naming it:
BM25 can only match the passage through words the query and the definition share by chance
(the query's other words are "what" and "is"), while a passage that merely *mentions* the term
-- other entries cross-referencing it -- matches the query exactly. So BM25's top passages are
mostly hard negatives: over all 14,802 passages of the 2023 Debian package, PISA BM25 gives the
568 default queries RR@10 0.022 and recall@100 0.069. A cross-encoder that knows what the term
means can still tell the definition from the mentions: MiniLM after a passage stage of 120 steps
(8 triples each, 400 other FOLDOC queries, BM25 hard negatives) ranks the definition at RR@10
0.525 among it and BM25's top 9 other passages, where a random order scores 0.293. The queried terms
are single words that are whole tokens of the BERT uncased vocabulary (``ethernet``, ``compiler``,
``semaphore``...): terms a small pre-trained encoder has seen often enough to know; multi-word and obscure headwords (old
programming languages, people) only serve as non-relevant passages.

Every other entry's first paragraph (cleaned the same way, its own headword kept) is a
non-relevant passage, except entries whose headword is a variant of a queried term ("Actors"
for "actor"), which are left out so that no non-relevant passage defines a queried term.
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from .dictionaries import DictionaryTask, dictionary_entries, dictionary_task

__all__ = ["DEFAULT_PATH", "FoldocTask", "foldoc_entries", "foldoc_task"]

DEFAULT_PATH = "/usr/share/dictd/foldoc.dict.dz"
FoldocTask = DictionaryTask  # the name of version 0.2


def foldoc_entries(path: str | Path = DEFAULT_PATH) -> pd.DataFrame:
    """FOLDOC's entries as ``headword, text``: ``text`` is the first paragraph of the entry's
    body, with subject tags, URLs, e-mail addresses and cross-reference braces removed."""
    return dictionary_entries("foldoc", path)


def foldoc_task(path: str | Path = DEFAULT_PATH, **options) -> DictionaryTask:
    """Definitional queries over FOLDOC (see the module doc for the design, and
    :func:`pyterrier_longdoc.data.dictionaries.dictionary_task` for the options; here ``hide_term``
    defaults to True)."""
    return dictionary_task("foldoc", path, **options)

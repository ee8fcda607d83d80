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
0.525 among it and BM25's top 9 other passages, where a random order scores 0.293. The queried terms are single words that are whole tokens of
the BERT uncased vocabulary (``ethernet``, ``compiler``, ``semaphore``...): terms a small
pre-trained encoder has seen often enough to know; multi-word and obscure headwords (old
programming languages, people) only serve as non-relevant passages.

Every other entry's first paragraph (cleaned the same way, its own headword kept) is a
non-relevant passage, except entries whose headword is a variant of a queried term ("Actors"
for "actor"), which are left out so that no non-relevant passage defines a queried term.
"""
from __future__ import annotations

import gzip
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["DEFAULT_PATH", "FoldocTask", "foldoc_entries", "foldoc_task"]

DEFAULT_PATH = "/usr/share/dictd/foldoc.dict.dz"
_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}

_CATEGORY = re.compile(r"<[a-z][a-z ,/-]*>\s*")          # "<networking>" subject tags
_URL = re.compile(r"\(?\b(?:https?|ftp)://\S+?\)?(?=[\s}.,;]|$)|\S+@\S+\.\w+")
_SEE_ALSO = re.compile(r"\b(?:See also|See)\b[^.]*\.?\s*$")
_DATE = re.compile(r"^\(\d{4}-\d{2}-\d{2}\)$")
_WORD = re.compile(r"[a-z]+")


def _b64(text: str) -> int:
    value = 0
    for char in text:
        value = value * 64 + _B64[char]
    return value


def foldoc_entries(path: str | Path = DEFAULT_PATH) -> pd.DataFrame:
    """FOLDOC's entries as ``headword, text``: ``text`` is the first paragraph of the entry's
    body, with subject tags, URLs, e-mail addresses and cross-reference braces removed."""
    path = Path(path)
    index = path.with_name(path.name.replace(".dict.dz", ".index").replace(".dict", ".index"))
    for needed in (path, index):
        if not needed.exists():
            raise FileNotFoundError(f"{needed} not found: install Debian's dict-foldoc (apt-get install dict-foldoc) "
                                    "or pass the path of a dictd-format foldoc.dict.dz")
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".dz" else path.read_bytes()
    rows = []
    for number, line in enumerate(index.read_text(encoding="utf8").splitlines(), 1):
        fields = line.split("\t")
        if len(fields) < 3:
            raise ValueError(f"{index} line {number}: expected 'headword<TAB>offset<TAB>length', got {line!r}")
        headword, offset, length = fields[0], _b64(fields[1]), _b64(fields[2])
        if headword.startswith("00-database"):
            continue
        body = data[offset:offset + length].decode("utf8", errors="replace").split("\n", 1)
        text = _first_paragraph(body[1] if len(body) > 1 else "")
        if text:
            rows.append((headword, text))
    return pd.DataFrame(rows, columns=["headword", "text"]).drop_duplicates("headword", ignore_index=True)


def _first_paragraph(body: str) -> str:
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", body.strip())]
    for paragraph in paragraphs:
        if not paragraph or _DATE.match(paragraph) or paragraph.startswith("["):
            continue
        text = _CATEGORY.sub("", paragraph)
        text = _URL.sub("", text)
        text = text.replace("{", "").replace("}", "")
        text = " ".join(text.split())
        return text
    return ""


@dataclass
class FoldocTask:
    """``passages`` (``docno, text``), ``queries`` (``qid, query, term``) and ``qrels``
    (``qid, docno, label``, one relevant passage per query), as ``build_far_relevant`` and
    ``train_passage_ranker`` take them."""

    passages: pd.DataFrame
    queries: pd.DataFrame
    qrels: pd.DataFrame

    def subset(self, qids) -> "FoldocTask":
        """The same passages, with only the queries (and qrels) of ``qids``."""
        keep = set(map(str, qids))
        return FoldocTask(self.passages, self.queries[self.queries["qid"].isin(keep)].reset_index(drop=True),
                          self.qrels[self.qrels["qid"].isin(keep)].reset_index(drop=True))


def foldoc_task(path: str | Path = DEFAULT_PATH, *, vocabulary=None, known_only: bool = False, min_words: int = 20, max_words: int = 120,
                max_queries: int | None = None, seed: int = 0, hide_term: bool = True) -> FoldocTask:
    """Definitional queries over FOLDOC (see the module doc for the design).

    Args:
        vocabulary: the words a term must be a whole token of (a tokenizer, a path to one, or a set of
            words); default: the packaged MiniLM's (BERT uncased) vocabulary.
        min_words / max_words: a queried term's definition must have at least ``min_words`` words
            left after the term is removed; every passage is cut to its first ``max_words`` words
            (at a sentence end when there is one in the second half).
        max_queries: a random sample of the eligible terms (by ``seed``); queries keep FOLDOC's order.
        hide_term: replace the term by "this" in its own definition (the default, a test of what the
            model knows: a definition often never names its term). ``False`` gives every passage as a
            dictionary prints it, headword first (``"compiler: A program that translates..."``): a
            known-item task in which the entry must be told from entries that only mention the term.
            The same queries are eligible either way.
    """
    entries = foldoc_entries(path)
    words = _vocabulary(vocabulary)
    entries["text"] = entries["text"].map(lambda t: _cut(t, max_words))
    entries["docno"] = [f"F{i}" for i in range(len(entries))]
    key = entries["headword"].str.lower()

    eligible = []
    for docno, headword, text in zip(entries["docno"], entries["headword"], entries["text"]):
        term = headword.lower()
        if not (len(term) > 2 and all(w.isalpha() for w in term.split())):
            continue
        if known_only and term not in words:
            continue
        hidden = _hide(text, term)
        if len(hidden.split()) >= min_words and hidden.lower().count("this") <= 4:
            eligible.append((docno, term, hidden))
    covered, unique = set(), []
    for row in eligible:  # "actor", "Actor" and "actors": one query per term
        if not _forms(row[1]) & covered:
            covered |= _forms(row[1])
            unique.append(row)
    if max_queries is not None and max_queries < len(unique):
        chosen = np.sort(np.random.default_rng(seed).choice(len(unique), size=max_queries, replace=False))
        unique = [unique[i] for i in chosen]

    forms = set().union(*(_forms(term) for _, term, _ in unique))
    hidden_text = {docno: hidden for docno, _, hidden in unique}
    variants = key.isin(forms) & ~entries["docno"].isin([docno for docno, _, _ in unique])
    passages = entries[~variants][["docno", "text"]].copy()
    if hide_term:
        passages["text"] = [hidden_text.get(d, t) for d, t in zip(passages["docno"], passages["text"])]
    else:
        headwords = entries.loc[passages.index, "headword"]
        passages["text"] = [f"{h}: {t}" for h, t in zip(headwords, passages["text"])]
    queries = pd.DataFrame([(f"q{i}", f"what is {term}", term, term in words) for i, (_, term, _) in enumerate(unique)],
                           columns=["qid", "query", "term", "known"])
    qrels = pd.DataFrame({"qid": queries["qid"], "docno": [d for d, _, _ in unique], "label": 1})
    return FoldocTask(passages.reset_index(drop=True), queries, qrels)


def _forms(term: str) -> set[str]:
    """The term and its plural / singular forms."""
    forms = {term, term + "s", term + "es"}
    for suffix in ("es", "s"):
        if term.endswith(suffix):
            forms.add(term[:-len(suffix)])
    return forms


def _hide(text: str, term: str) -> str:
    """``text`` with the term (and its plural / possessive) replaced by "this"."""
    return re.sub(rf"\b{re.escape(term)}(?:s|es|'s)?\b", "this", text, flags=re.IGNORECASE)


def _cut(text: str, max_words: int) -> str:
    words = text.split()
    if len(words) <= max_words:
        return text
    cut = " ".join(words[:max_words])
    end = cut.rfind(". ")
    return cut[:end + 1] if end > len(cut) // 2 else cut


def _vocabulary(vocabulary) -> set[str]:
    if isinstance(vocabulary, (set, frozenset)):
        return {w.lower() for w in vocabulary}
    from transformers import AutoTokenizer

    if vocabulary is None:
        from .demo import packaged_minilm
        vocabulary = packaged_minilm()
    tokenizer = AutoTokenizer.from_pretrained(vocabulary) if isinstance(vocabulary, (str, Path)) else vocabulary
    return {w for w in tokenizer.get_vocab() if _WORD.fullmatch(w)}

"""Real prose offline: dictionaries as definitional passage-ranking tasks.

Debian ships several dictionaries in dictd format (``apt-get install dict-foldoc dict-gcide
dict-wn dict-jargon dict-devil``: ``/usr/share/dictd/NAME.dict.dz`` and ``NAME.index``); this module
reads those files, so no download happens at run time:

- ``foldoc``: the Free On-line Dictionary of Computing (about 15,000 entries; GNU FDL);
- ``gcide``: the GNU Collaborative International Dictionary of English (Webster's 1913 with
  WordNet additions; about 100,000 entries; GPL);
- ``wn``: WordNet 3.0's glosses (about 147,000 entries; WordNet licence);
- ``jargon``: the Jargon File (about 2,300 entries; public domain);
- ``devil``: Ambrose Bierce's The Devil's Dictionary (1911; about 1,000 entries; public domain).

The task (``dictionary_task``): definitional queries, ``"what is <term>"``, whose one relevant
passage is the first part of the term's own entry; every other entry is a non-relevant passage.
With ``hide_term=True`` every occurrence of the term in its own definition is replaced by
"this", so only a model that knows what the term means finds it; with ``hide_term=False`` every
passage reads as the dictionary prints it, headword first (a known-item task in which the entry
must be told from entries that only mention the term). The queried terms are single words that
are whole tokens of the BERT uncased vocabulary: terms a small pre-trained encoder has seen.
Entries whose headword is a variant of a queried term ("actors" for "actor") are left out, so
that no non-relevant passage defines a queried term.
"""
from __future__ import annotations

import gzip
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["DICTIONARIES", "DictionaryTask", "dictionary_entries", "dictionary_task", "dictd_path"]

DICTD = "/usr/share/dictd"
DICTIONARIES = ("foldoc", "gcide", "wn", "jargon", "devil")
_B64 = {c: i for i, c in enumerate("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}
_WORD = re.compile(r"[a-z]+")


def dictd_path(source: str) -> str:
    """Where Debian's ``dict-<source>`` package installs the dictionary."""
    if source not in DICTIONARIES:
        raise ValueError(f"unknown dictionary {source!r}; use one of {', '.join(DICTIONARIES)}")
    return f"{DICTD}/{source}.dict.dz"


def _b64(text: str) -> int:
    value = 0
    for char in text:
        value = value * 64 + _B64[char]
    return value


def dictd_bodies(path: str | Path, package: str = "dict-foldoc") -> list[tuple[str, str]]:
    """(index headword, entry body) of a dictd dictionary, one per distinct body."""
    path = Path(path)
    index = path.with_name(path.name.replace(".dict.dz", ".index").replace(".dict", ".index"))
    for needed in (path, index):
        if not needed.exists():
            raise FileNotFoundError(f"{needed} not found: install Debian's {package} (apt-get install {package}) "
                                    "or pass the path of a dictd-format .dict.dz file")
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".dz" else path.read_bytes()
    rows, seen = [], set()
    for number, line in enumerate(index.read_text(encoding="utf8").splitlines(), 1):
        fields = line.split("\t")
        if len(fields) < 3:
            raise ValueError(f"{index} line {number}: expected 'headword<TAB>offset<TAB>length', got {line!r}")
        headword, offset, length = fields[0], _b64(fields[1]), _b64(fields[2])
        if headword.startswith("00-database") or headword.startswith("00database") or offset in seen:
            continue
        seen.add(offset)
        rows.append((headword, data[offset:offset + length].decode("utf8", errors="replace")))
    return rows


# -- per dictionary: an entry body -> (its headword, its definition text), or None

_BRACES = re.compile(r"[{}]")


_CATEGORY = re.compile(r"<[a-z][a-z ,/-]*>\s*")          # "<networking>" subject tags
_URL = re.compile(r"\(?\b(?:https?|ftp)://\S+?\)?(?=[\s}.,;]|$)|\S+@\S+\.\w+")
_SEE_ALSO = re.compile(r"\b(?:See also|See)\b[^.]*\.?\s*$")
_DATE = re.compile(r"^\(\d{4}-\d{2}-\d{2}\)$")


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


def _foldoc(headword: str, body: str) -> tuple[str, str] | None:
    parts = body.split("\n", 1)
    text = _first_paragraph(parts[1] if len(parts) > 1 else "")
    return (headword, text) if text else None


_GCIDE_HEAD = re.compile(r"^\s*([^\\\n]+?)\s*(?=\\)")                 # "Compiler" of "Compiler \Com*pil"er\"
_GCIDE_DROP = re.compile(r"\\[^\\]*\\|--[A-Z][^\n]*")                    # pronunciations, --Author.
_BRACKETS = re.compile(r"\[[^\[\]]*\]")                                  # [etymology], [1913 Webster]
_GCIDE_POS = re.compile(r"^[\s,;.]*(?:\([^)]*\)[\s,;.]*)?(?:(?:[a-z]{1,5}|[A-Z][a-z]{0,4})\.[\s,;&]*)*")


def _gcide(_: str, body: str) -> tuple[str, str] | None:
    head = _GCIDE_HEAD.match(body)
    if head is None:
        return None
    text = _GCIDE_DROP.sub(" ", body[head.end():])
    while (unbracketed := _BRACKETS.sub(" ", text)) != text:  # nested: [cf. F. s['e]maphore.]
        text = unbracketed
    text = " ".join(_BRACES.sub("", text).split())
    text = _GCIDE_POS.sub("", text)
    return (head.group(1).strip(), text) if text else None


_WN_DROP = re.compile(r"\[(?:syn|ant|also|see)[^\]]*\]", re.DOTALL)
_WN_SENSE = re.compile(r"(?:^|\s)(?:(?:n|v|adj|adv|s)\s+)?\d+:\s")


def _wn(_: str, body: str) -> tuple[str, str] | None:
    parts = body.split("\n", 1)
    if len(parts) < 2:
        return None
    text = _WN_SENSE.sub(" ", _WN_DROP.sub(" ", parts[1]))
    text = " ".join(_BRACES.sub("", text).split())
    return (parts[0].strip(), text) if text else None


_LABEL = re.compile(r"^\[[^\]]*\]\s*")                                  # "[IRC; common]", "[Unix]"


def _jargon(headword: str, body: str) -> tuple[str, str] | None:
    # the first paragraph is the headword and its pronunciation; a paragraph's leading "[usage]"
    # label goes, its definition stays
    paragraphs = [_LABEL.sub("", " ".join(p.split())) for p in re.split(r"\n\s*\n", body.strip())[1:]]
    text = " ".join(p for p in paragraphs if p)
    return (headword, _BRACES.sub("", text)) if text else None


# "ABASEMENT, n.", "BABE or BABY, n.", "TZETZE (or TSETSE) FLY, n.", "IMPOSTOR n.", "ABRIDGE, v.t.",
# "ABRACADABRA.", "CUI BONO?  [Latin]": the printed headword and its part of speech; the letters' entries
# ("I is the first letter ...") start with their definition
_DEVIL_HEAD = re.compile(r"^[A-Z][A-Z' -]*(?:\(?or [A-Z'-]+\)?[A-Z' -]*)?[,.?]?\s+(?:\[[A-Za-z]+\]\s+)?"
                         r"(?:(?:[a-z]{1,5}\.)+\s+)*")


def _devil(headword: str, body: str) -> tuple[str, str] | None:
    head = _DEVIL_HEAD.match(body)
    text = body[head.end():] if head and len(head.group(0).strip(" ,.?")) > 1 else body
    # verses and their authors' initials are the entry's prose too; _underscores_ mark italics
    text = " ".join(text.replace("_", "").split())
    return (headword, text) if text else None


_CLEANERS: dict[str, Callable[[str, str], tuple[str, str] | None]] = {
    "foldoc": _foldoc, "gcide": _gcide, "wn": _wn, "jargon": _jargon, "devil": _devil}


def dictionary_entries(source: str = "foldoc", path: str | Path | None = None) -> pd.DataFrame:
    """A dictionary's entries as ``headword, text`` (the definition, cleaned of markup)."""
    path = path or dictd_path(source)
    if source not in _CLEANERS:
        raise ValueError(f"unknown dictionary {source!r}; use one of {', '.join(DICTIONARIES)}")
    clean = _CLEANERS[source]
    rows = [row for headword, body in dictd_bodies(path, f"dict-{source}") if (row := clean(headword, body))]
    return pd.DataFrame(rows, columns=["headword", "text"]).drop_duplicates("headword", ignore_index=True)


def _sample_entries(entries: pd.DataFrame, keep: set[str], size: int, seed: int) -> pd.DataFrame:
    """Every entry of ``keep`` and a seeded random sample of the others, ``size`` in all."""
    kept = entries["docno"].isin(keep)
    others = entries[~kept]
    take = max(0, min(len(others), size - int(kept.sum())))
    sample = others.sample(n=take, random_state=seed) if take < len(others) else others
    return pd.concat([entries[kept], sample]).sort_index()


@dataclass
class DictionaryTask:
    """``passages`` (``docno, text``), ``queries`` (``qid, query, term``) and ``qrels``
    (``qid, docno, label``, one relevant passage per query), as ``build_far_relevant`` and
    ``train_passage_ranker`` take them."""

    passages: pd.DataFrame
    queries: pd.DataFrame
    qrels: pd.DataFrame

    def subset(self, qids) -> DictionaryTask:
        """The same passages, with only the queries (and qrels) of ``qids``."""
        keep = set(map(str, qids))
        return DictionaryTask(self.passages, self.queries[self.queries["qid"].isin(keep)].reset_index(drop=True),
                          self.qrels[self.qrels["qid"].isin(keep)].reset_index(drop=True))


def dictionary_task(source: str = "foldoc", path: str | Path | None = None, *, entries: pd.DataFrame | None = None,
                    vocabulary=None, known_only: bool = False,
                    min_words: int = 20, max_words: int = 120, max_queries: int | None = None,
                    max_passages: int | None = None, seed: int = 0, hide_term: bool = True) -> DictionaryTask:
    """Definitional queries ("what is <term>") over a dictionary (see the module doc).

    source: ``"foldoc"``, ``"gcide"``, ``"wn"``, ``"jargon"`` or ``"devil"`` (Debian's ``dict-*`` packages);
        ``path``: its ``.dict.dz`` file (default: where Debian installs it).
    entries: the dictionary's entries (``headword, text``), instead of reading ``source``'s file (the
        real prose that ships with the package, ``data.prose.prose_entries()``).
    max_passages: keep every queried term's entry and a random sample (by ``seed``) of the
        others, up to this many passages (GCIDE and WordNet have 100,000+ entries).

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
    entries = dictionary_entries(source, path) if entries is None else entries[["headword", "text"]].copy()
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
    covered: set[str] = set()
    unique = []
    for row in eligible:  # "actor", "Actor" and "actors": one query per term
        if not _forms(row[1]) & covered:
            covered |= _forms(row[1])
            unique.append(row)
    if max_queries is not None and max_queries < len(unique):
        chosen = np.sort(np.random.default_rng(seed).choice(len(unique), size=max_queries, replace=False))
        unique = [unique[i] for i in chosen]

    if max_passages is not None:
        entries = _sample_entries(entries, {docno for docno, _, _ in unique}, max_passages, seed)
        key = entries["headword"].str.lower()
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
    return DictionaryTask(passages.reset_index(drop=True), queries, qrels)


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
        from ..packaged import packaged_minilm

        vocabulary = packaged_minilm()
    tokenizer = AutoTokenizer.from_pretrained(vocabulary) if isinstance(vocabulary, (str, Path)) else vocabulary
    return {w for w in tokenizer.get_vocab() if _WORD.fullmatch(w)}

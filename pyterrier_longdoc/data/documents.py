"""Document text for your own collections, as a PyTerrier text loader.

``TextLoader(source)`` adds document fields by ``docno`` (``bm25 >> TextLoader(docs) >> model``),
and works with PyTerrier's ``pt.text.get_text(TextLoader(docs), "text")`` too. ``source`` is:

- a DataFrame with a ``docno`` column and one column per field (e.g. ``text``);
- a dict ``{docno: text}`` (the field is ``text``) or ``{docno: {field: value}}``; a Series
  indexed by docno;
- a file: JSON lines with ``docno`` and ``text`` (Pyserini's ``id`` and ``contents`` are read
  as ``docno`` and ``text``), ``docno<TAB>text`` lines, or a folder of JSON-lines files (a
  Pyserini ``JsonCollection``);
- ``"irds:<ir_datasets id>"``: PyTerrier's own loader over the dataset's docstore
  (``pt.get_dataset(id).text_loader(fields)``); to join an ir_datasets document's fields into
  one ``text`` column use ``load_collection("irds:<id>").text`` instead.

Files and mappings are held in memory. Bad files raise :class:`MalformedInputError` naming the
file and line.
"""
from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import pandas as pd
import pyterrier as pt

from ..engine.files import MalformedInputError

Fields = Sequence[str] | str | Literal["*"]
_JSONL_SUFFIXES = (".jsonl", ".json")


def read_documents(path: str | Path, text_field: str = "text") -> pd.DataFrame:
    """``docno`` plus one string column per field, from a JSON-lines file, a folder of them, or
    ``docno<TAB>text`` lines. A docno given twice, a line that is not one JSON object with a
    docno (or ``id``), a JSON ``text_field`` that is not a string (null, a number, a list), or a
    TSV line without exactly one tab is a :class:`MalformedInputError`; other JSON fields that are
    not strings are kept as their JSON text (null as empty)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in _JSONL_SUFFIXES)
        if not files:
            raise MalformedInputError(path, None, "the folder has no .jsonl or .json files")
        rows = [row for file in files for row in _jsonl_rows(file, text_field)]
    elif not path.exists():
        raise MalformedInputError(path, None, "no such file")
    elif path.suffix in _JSONL_SUFFIXES:
        rows = list(_jsonl_rows(path, text_field))
    else:
        rows = list(_tsv_rows(path))
    first_line: dict[str, tuple[Path, int]] = {}
    for file, line, row in rows:
        seen = first_line.setdefault(row["docno"], (file, line))
        if seen != (file, line):
            raise MalformedInputError(file, line, f"docno {row['docno']!r} is also on line {seen[1]} of {seen[0]}")
    docs = pd.DataFrame([row for _, _, row in rows])
    if not len(docs):
        raise MalformedInputError(path, None, "no documents")
    return docs.fillna("").astype(str)  # a field absent from some lines is empty there


def _lines(path: Path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n").rstrip("\r")
            if line.strip():
                yield number, line


def _tsv_rows(path: Path):
    for number, line in _lines(path):
        fields = line.split("\t")
        if len(fields) != 2:
            raise MalformedInputError(path, number, f"{len(fields)} tab-separated fields, expected 2 (docno<TAB>text)")
        if not fields[0].strip():
            raise MalformedInputError(path, number, "empty docno")
        yield path, number, {"docno": fields[0].strip(), "text": fields[1]}


def _jsonl_rows(path: Path, text_field: str):
    for number, line in _lines(path):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise MalformedInputError(path, number, f"not JSON ({e.msg})") from None
        if not isinstance(record, dict):
            raise MalformedInputError(path, number, f"expected a JSON object, got {type(record).__name__}")
        # Pyserini's JsonCollection names the fields id and contents
        if "docno" not in record and "id" in record:
            record["docno"] = record.pop("id")
        if "text" not in record and "contents" in record:
            record["text"] = record.pop("contents")
        if record.get("docno") in (None, ""):
            raise MalformedInputError(path, number, "no docno (or id)")
        if text_field in record and not isinstance(record[text_field], str):
            raise MalformedInputError(path, number, f"the {text_field!r} of docno {record['docno']!r} is "
                                                    f"{json.dumps(record[text_field])[:40]}, not a string")
        yield path, number, {k: v if isinstance(v, str) else json.dumps(v) if v is not None else ""
                             for k, v in record.items()}


def _as_frame(source) -> pd.DataFrame:
    if isinstance(source, pd.DataFrame):
        if "docno" not in source.columns:
            raise ValueError(f"TextLoader: a DataFrame of documents needs a docno column, got {list(source.columns)}")
        return source
    if isinstance(source, pd.Series):
        return pd.DataFrame({"docno": source.index, source.name or "text": source.to_numpy()})
    if isinstance(source, Mapping):
        values = list(source.values())
        if values and all(isinstance(v, Mapping) for v in values):
            return pd.DataFrame([{**fields, "docno": docno} for docno, fields in source.items()])
        return pd.DataFrame({"docno": list(source), "text": values})
    return read_documents(source)


class TextLoader(pt.Transformer):
    """Adds document fields by docno from a DataFrame, dict, Series, file or ir_datasets id
    (see the module doc); every other column is kept, and existing field columns are replaced.

    Args:
        source: the documents.
        fields: the fields to add: ``"*"`` (all), one name or a list.
        verbose: a progress bar (ir_datasets sources).
    """

    schematic = {"label": "TextLoader"}

    def __init__(self, source, fields: Fields = "*", *, verbose: bool = False):
        self.source = source
        self.verbose = verbose
        self._irds = None
        if isinstance(source, str) and source.startswith("irds:"):
            # PyTerrier already reads ir_datasets docstores; use its loader as is
            dataset: Any = pt.get_dataset(source)  # an IRDSDataset: pt.datasets.Dataset declares no text_loader
            self._irds = dataset.text_loader(fields, verbose=verbose)
            self.fields = list(self._irds.fields)
            return
        docs = _as_frame(source).copy()
        docs["docno"] = docs["docno"].astype(str)
        repeated = docs["docno"][docs["docno"].duplicated()]
        if len(repeated):
            raise ValueError(f"TextLoader: {len(repeated)} docnos repeat, e.g. {list(repeated.unique()[:5])}")
        available = [c for c in docs.columns if c != "docno"]
        requested = available if fields == "*" else [fields] if isinstance(fields, str) else list(fields)
        unknown = [f for f in requested if f not in available]
        if unknown:
            raise ValueError(f"TextLoader: no field {unknown} in the documents; fields: {available}")
        self.fields = requested
        self._docs = docs.set_index("docno")[requested]

    def text_loader(self, fields: Fields = "*", *, verbose: bool = False) -> pt.Transformer:
        """The loader of ``fields`` over the same documents (what ``pt.text.get_text`` calls)."""
        if self._irds is not None:
            return TextLoader(self.source, fields, verbose=verbose)
        return TextLoader(self._docs.reset_index(), fields, verbose=verbose)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["docno"], context=self)
        if self._irds is not None:
            return self._irds(inp)
        docnos = inp["docno"].astype(str)
        missing = docnos[~docnos.isin(self._docs.index)].unique()
        if len(missing):
            raise KeyError(f"{self!r}: {len(missing)} docnos are not in the documents, e.g. {list(missing[:5])}")
        found = self._docs.loc[docnos.to_numpy()]
        return inp.assign(**{f: found[f].to_numpy() for f in self.fields})

    def fuse_rank_cutoff(self, k):
        return pt.RankCutoff(k) >> self

    def __repr__(self) -> str:
        source = self.source if isinstance(self.source, (str, Path)) else f"{type(self.source).__name__}"
        return f"TextLoader({source!s}, fields={self.fields})"


__all__ = ["MalformedInputError", "TextLoader", "read_documents"]

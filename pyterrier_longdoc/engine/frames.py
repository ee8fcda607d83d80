"""Checks of the frames users pass in, and the order of a result frame.

Every entry point (scoring, ``fit``, the passage stage, the diagnostics) checks its frames here, so
that one kind of mistake gives one kind of error everywhere: something that is not a DataFrame is
a ``TypeError``; a missing column or bad values in a column are a ``ValueError`` naming the
column and the first rows (by qid and docno where the frame has them).
"""
from __future__ import annotations

import unicodedata
from collections.abc import Iterable

import numpy as np
import pandas as pd

from .text import replace_lone_surrogates


def require_frame(frame, name: str, columns: list[str]) -> pd.DataFrame:
    """``frame`` itself when it is a DataFrame with ``columns``; a clear error otherwise."""
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{name} must be a DataFrame with columns {columns}, got {kind_of(frame)}{_call_hint(frame)}")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise ValueError(f"{name} needs columns {columns}; missing {missing} (it has {list(frame.columns)})")
    unique_columns(frame, name)
    return frame


def input_frame(inp: pd.DataFrame, columns: list[str], context) -> pd.DataFrame:
    """``inp`` itself, checked as a transformer's input: PyTerrier's column check, then one column
    per name (a second ``text`` or ``qid`` column would be read as a frame, not values)."""
    import pyterrier as pt

    try:
        pt.validate.columns(inp, includes=columns, context=context)
    except pt.validate.InputValidationError as error:
        text = [c for c in columns if c not in ("qid", "query", "docno") and c not in inp.columns]
        if not text or "docno" not in inp.columns:
            raise
        # the usual slip: a first stage's results (qid, docno) reach a model before any text does
        raise pt.validate.InputValidationError(
            f"{error.args[0]} The documents' {text[0]!r} column is missing: add a text loader before the model, "
            f"e.g. bm25 >> pyterrier_longdoc.TextLoader(documents) >> model, or bm25 >> "
            f"pt.text.get_text(dataset, {text[0]!r}) >> model.", error.modes) from None
    unique_columns(inp, f"{context!r}")
    return inp


def unique_columns(frame: pd.DataFrame, name: str) -> None:
    """A ValueError naming the column names ``frame`` has more than once."""
    twice = list(dict.fromkeys(frame.columns[frame.columns.duplicated()]))
    if twice:
        raise ValueError(f"{name}: the frame has more than one column named {', '.join(map(repr, twice))} (its "
                         f"columns: {list(frame.columns)}); keep one, e.g. frame.loc[:, ~frame.columns.duplicated()]")


#: the one document of each query in the run of a setting that cannot score (see failed_setting_run)
FAILED_SETTING_DOCNO = "<setting that does not work>"


def failed_setting_run(inp: pd.DataFrame, problem: str) -> pd.DataFrame:
    """The run of a setting that cannot score, such as ``stride`` > ``window`` reached one
    ``set_parameter`` call at a time in ``pt.GridSearch``: a warning naming it, and one placeholder
    row per query (docno ``FAILED_SETTING_DOCNO``, score 0), so that ``pt.GridScan`` scores the
    setting 0 on every measure and ``pt.GridSearch`` finishes with a valid setting, rather than
    the whole grid stopping at the first such combination."""
    from .._warn import warn

    warn(f"{problem}. This setting scores no document: its run holds one placeholder row per query (docno "
         f"{FAILED_SETTING_DOCNO!r}), so pt.GridScan scores it 0 and pt.GridSearch picks a valid setting")
    columns = [c for c in ("qid", "query") if c in inp.columns]
    run = inp[columns].drop_duplicates("qid").reset_index(drop=True)
    return run.assign(docno=FAILED_SETTING_DOCNO, score=0.0, rank=0)


def kind_of(value) -> str:
    return f"a pt.Transformer ({type(value).__name__})" if _is_pipeline(value) else type(value).__name__


def _call_hint(value) -> str:
    return " (a pipeline: call it first, e.g. pipeline(topics))" if _is_pipeline(value) else ""


def _is_pipeline(value) -> bool:
    import pyterrier as pt  # only on the error path: the engine's leaves do not load PyTerrier

    return isinstance(value, pt.Transformer)


def row_label(frame: pd.DataFrame, i: int, value) -> str:
    """Row ``i`` of ``frame`` as an error shows it: its qid and docno, and the bad value."""
    row = frame.iloc[i]
    keys = " ".join(f"{k}={row[k]!r}" for k in ("qid", "docno") if k in frame.columns)
    return f"[{keys} value={value!r} ({type(value).__name__})]"


def _examples(frame: pd.DataFrame, column: str, rows) -> str:
    values = frame[column].tolist()
    return ", ".join(row_label(frame, i, values[i]) for i in rows[:3])


def column_texts(frame: pd.DataFrame, column: str, context) -> list[str]:
    """The column as a list of str (lone surrogates replaced, with a warning); a ``ValueError``
    naming the rows for missing or non-text values."""
    values = frame[column].tolist()
    missing = [i for i, v in enumerate(values) if not isinstance(v, str) and pd.api.types.is_scalar(v) and pd.isna(v)]
    wrong = [i for i, v in enumerate(values) if not isinstance(v, str) and i not in set(missing)]
    for rows, problem in ((missing, "missing values (None/NaN)"), (wrong, "non-string values")):
        if rows:
            raise ValueError(f"{context!r}: column {column!r} has {problem} in {len(rows)} of {len(values)} rows "
                             f"(e.g. {_examples(frame, column, rows)}); fill or drop them before re-ranking")
    return replace_lone_surrogates(values, lambda i: row_label(frame, i, values[i]), f"{context!r}: column {column!r}")


def numeric_column(frame: pd.DataFrame, column: str, name: str) -> pd.Series:
    """``frame[column]`` as numbers (numeric strings such as ``"1"`` are read as numbers); a
    ``ValueError`` naming the rows whose value is missing or not a number."""
    values = pd.to_numeric(frame[column], errors="coerce")
    bad = np.flatnonzero(values.isna().to_numpy())
    if len(bad):
        raise ValueError(f"{name}: column {column!r} must hold numbers; {len(bad)} of {len(frame)} rows do not "
                         f"(e.g. {_examples(frame, column, bad)})")
    return values


def row_positions(mask: pd.Series) -> list:
    """The positions where ``mask`` holds, the first ten (for frames with no qid or docno)."""
    rows = np.flatnonzero(mask.to_numpy()).tolist()
    return rows[:10] + (["..."] if len(rows) > 10 else [])


def sort_results(results: pd.DataFrame) -> pd.DataFrame:
    """Results per qid, best first: by ``rank`` when the frame has it, else by ``score``
    descending (ties keep their order)."""
    by_rank = "rank" in results.columns
    if not by_rank and "score" not in results.columns:
        raise ValueError(f"results need a 'rank' or 'score' column to be ordered; they have {list(results.columns)} "
                         "(pt.model.add_ranks adds rank from score)")
    return results.sort_values(["qid", "rank" if by_rank else "score"], ascending=[True, by_rank], kind="stable")


RANKING = ("docno", "score", "rank")


def retrieval_queries(inp: pd.DataFrame, context) -> pd.DataFrame:
    """A first stage's queries: one row per qid, with the input's columns but an earlier ranking's."""
    import pyterrier as pt

    pt.validate.columns(inp, includes=["qid", "query"], context=context)
    return inp[[c for c in inp.columns if c not in RANKING]].drop_duplicates("qid")


def ranked_hits(queries: pd.DataFrame, hits: list[tuple]) -> pd.DataFrame:
    """``queries`` (from ``retrieval_queries``) joined with their ``(qid, docno, score)`` hits and
    ranked from 0 by score; without hits, an empty frame with the same columns."""
    import pyterrier as pt

    if not hits:
        return pd.DataFrame(columns=[*queries.columns, *RANKING])
    return pt.model.add_ranks(queries.merge(pd.DataFrame(hits, columns=["qid", "docno", "score"]), on="qid"))


def normal_form_twins(missing: Iterable[str], present: Iterable[str]) -> list[tuple[str, str]]:
    """``(id, twin)`` for each of ``missing`` that differs from a ``twin`` among ``present`` only
    in Unicode normal form (equal after NFC): the two print alike, yet are different ids. The
    library compares ids as given and never normalises them itself."""
    by_form: dict[str, str] = {}
    for docno in present:
        by_form.setdefault(unicodedata.normalize("NFC", docno), docno)
    twins = [(docno, by_form.get(unicodedata.normalize("NFC", docno))) for docno in missing]
    return [(docno, twin) for docno, twin in twins if twin is not None and twin != docno]


def describe_twins(twins: list[tuple[str, str]], missing_where: str, present_where: str) -> str:
    """A sentence naming ids that differ only in Unicode normal form, escaped so that they differ on screen."""
    shown = ", ".join(f"{ascii(a)} ({missing_where}) vs {ascii(b)} ({present_where})" for a, b in twins[:5])
    return (f"{len(twins)} of them differ{'s' if len(twins) == 1 else ''} only in Unicode normal form (NFC/NFD) from "
            f"a docno {present_where}: {shown}; ids are compared as given, so normalise both sides alike "
            "(unicodedata.normalize('NFC', docno))")


def str_ids(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its ``qid`` and ``docno`` columns (those it has) as strings: ids read from a
    file as ints then match the same ids given as strings elsewhere (a merge of int with str qids
    fails, an evaluation of int with str docnos silently matches nothing)."""
    return frame.astype({c: str for c in ("qid", "docno") if c in frame.columns})

"""Published against measured: ``pyterrier-longdoc reproduce --compare RESULTS``.

For each column of each ``results.json`` (a file, or every one under a folder): the published
value and its marks (from the registry, which may know more than the run that wrote the file), the
measured mean over seeds, their difference, and whether the difference is one that the seeds'
own variation explains.

The test: if our seeds and the paper's three seeds come from the same distribution (a faithful
reproduction), the difference of their means divided by ``s * sqrt(1/n + 1/3)`` (``s`` our seeds'
standard deviation, ``n`` their number) follows Student's t with ``n - 1`` degrees of freedom.
A cell's interval, ``mean +- t(0.975, n-1) * s * sqrt(1/n + 1/3)`` widened by the paper's
rounding, holds the published value for 95% of the cells of a faithful reproduction; a row's
verdict uses the Bonferroni level ``1 - 0.05/k`` for its ``k`` cells, so a faithful row passes
whole at least 95% of the time (``tests/applications/test_reproduce.py`` checks both rates by
simulation). A "no" says the difference is larger than seed-to-seed variation explains (p < 0.05):
a real difference of setup or data (the departures a row's plan lists, such as the first stage,
predict some), not which of the two is right. One seed has no spread: no verdict.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from .registry import find_rows
from .results import departures, not_comparable_line

__all__ = ["compare", "interval", "load_results", "row_passes"]

ROUNDING = 0.0005  # the papers print three decimals


def load_results(paths) -> list[dict]:
    """The results of every ``results.json`` given, or found under a given folder; a
    ``ValueError`` names a path with none, or a file that is not a results file."""
    files = []
    for path in map(Path, paths):
        found = sorted(path.rglob("results.json")) if path.is_dir() else [path] if path.is_file() else []
        if not found:
            raise ValueError(f"{path}: no results.json there")
        files += found
    results = []
    for file in files:
        try:
            loaded = json.loads(file.read_text())
            if not isinstance(loaded, dict) or not {"paper", "table", "row", "columns"} <= set(loaded):
                raise ValueError("not a reproduce results file (paper, table, row, columns)")
        except ValueError as error:
            raise ValueError(f"{file}: {error}") from None
        results.append({**loaded, "file": str(file)})
    return results


def _published(results: dict) -> dict[str, tuple[float | None, str]]:
    """The registry's published values of the row, by column name (the file's where the registry has no such row)."""
    try:
        row = find_rows(results["paper"], results["table"], results["row"])[0]
    except ValueError:
        return {c["column"]: (c.get("published"), c.get("sig", "")) for c in results["columns"]}
    return {cell.column.name: (cell.published, cell.sig) for cell in row.cells}


LEVEL = 0.95  # the share of a faithful reproduction's cells (or rows) that pass
PAPER_SEEDS = 3  # the papers average three seeds


def interval(values: list[float], level: float = LEVEL) -> tuple[float, float] | None:
    """Where the published value lies for ``level`` of faithful reproductions whose seeds measured
    ``values`` (None for fewer than two seeds)."""
    from scipy.stats import t

    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = t.ppf(0.5 + level / 2, n - 1) * sd * math.sqrt(1 / n + 1 / PAPER_SEEDS) + ROUNDING
    return mean - half, mean + half


def _verdict(published: float, values: list[float], level: float) -> tuple[bool | None, str]:
    bounds = interval(values, level)
    if bounds is None:
        return None, "one seed: no spread"
    inside = bounds[0] <= published <= bounds[1]
    return inside, f"{'yes' if inside else 'no'} ({bounds[0]:.3f}-{bounds[1]:.3f})"


def row_passes(cells: list[tuple[float, list[float]]], level: float = LEVEL) -> bool | None:
    """Whether every cell (published value, seeds' values) holds its published value at the
    Bonferroni level for the row (None: a cell has fewer than two seeds)."""
    verdicts = [_verdict(p, v, 1 - (1 - level) / len(cells))[0] for p, v in cells]
    return None if None in verdicts or not verdicts else all(verdicts)


def _comparable(r: dict) -> tuple[bool, list[str]]:
    """The file's comparability, recomputed from its recorded options where it has them."""
    if "options" in r:
        reasons = departures(r["options"], r.get("registry_dtype"))
        return not reasons, reasons
    return r.get("comparable", True), ["a smaller run (max_queries) or stand-in datasets"]


def compare(results: list[dict]) -> str:
    """A table per results file: column, metric, published, measured mean, difference, and whether
    a faithful reproduction explains the difference (at 95% per cell, and for the row)."""
    blocks = []
    for r in results:
        published = _published(r)
        lines = [f"{r['paper']} table {r['table']} row {r['row']}: {r.get('label', r['row'])} "
                 f"({r.get('backbone', '?')}, seeds {r.get('seeds', [])}) from {r['file']}",
                 "| column | metric | published | measured | difference | explained by the seeds (95%) |",
                 "|---|---|---|---|---|---|"]
        judged = []
        for c in r["columns"]:
            value, sig = published.get(c["column"], (None, ""))
            values = [v for v in c["measured"].values() if v is not None]
            mean = sum(values) / len(values) if values else None
            shown = "none" if value is None else f"{value:.3f}" + (f"^{sig}" if sig else "")
            measured = "none" if mean is None else f"{mean:.4f}"
            if value is None or mean is None:
                difference, inside = "-", "-"
            else:
                difference, inside = f"{mean - value:+.4f}", _verdict(value, values, LEVEL)[1]
                judged.append((value, values))
            lines.append(f"| {c['column']} | {c['metric']} | {shown} | {measured} | {difference} | {inside} |")
        passed = row_passes(judged) if judged else None
        if passed is not None:
            lines.append(f"Row: {'every' if passed else 'not every'} published value inside its interval at the "
                         f"Bonferroni level for {len(judged)} cells (a faithful reproduction passes 95% of the time).")
        comparable, reasons = _comparable(r)
        if not comparable:
            lines.append(not_comparable_line(reasons))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)

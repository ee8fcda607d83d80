"""Published against measured: ``pyterrier-longdoc reproduce --compare RESULTS``.

For each column of each ``results.json`` (a file, or every one under a folder): the published
value and its marks (from the registry, which may know more than the run that wrote the file), the
measured mean over seeds, their difference, and whether the published value lies inside the seeds'
spread (their lowest to highest value, widened by the paper's rounding to three decimals)."""
from __future__ import annotations

import json
from pathlib import Path

from .registry import find_rows

__all__ = ["compare", "load_results"]

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


def _inside(published: float, values: list[float]) -> str:
    if len(values) < 2:
        return "one seed: no spread"
    low, high = min(values), max(values)
    inside = low - ROUNDING <= published <= high + ROUNDING
    return f"{'yes' if inside else 'no'} ({low:.3f}-{high:.3f})"


def compare(results: list[dict]) -> str:
    """A table per results file: column, metric, published, measured mean, difference, inside the seeds' spread."""
    blocks = []
    for r in results:
        published = _published(r)
        lines = [f"{r['paper']} table {r['table']} row {r['row']}: {r.get('label', r['row'])} "
                 f"({r.get('backbone', '?')}, seeds {r.get('seeds', [])}) from {r['file']}",
                 "| column | metric | published | measured | difference | inside the seeds' spread |",
                 "|---|---|---|---|---|---|"]
        for c in r["columns"]:
            value, sig = published.get(c["column"], (None, ""))
            values = [v for v in c["measured"].values() if v is not None]
            mean = sum(values) / len(values) if values else None
            shown = "none" if value is None else f"{value:.3f}" + (f"^{sig}" if sig else "")
            measured = "none" if mean is None else f"{mean:.4f}"
            if value is None or mean is None:
                difference, inside = "-", "-"
            else:
                difference, inside = f"{mean - value:+.4f}", _inside(value, values)
            lines.append(f"| {c['column']} | {c['metric']} | {shown} | {measured} | {difference} | {inside} |")
        if not r.get("comparable", True):
            lines.append("Not comparable with the published values: a smaller run (max_queries) or stand-in datasets.")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)

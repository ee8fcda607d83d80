"""A row's results file: the published and measured values side by side, per seed and averaged,
and every option of the run that decides whether it is comparable with the paper.

``comparable`` is read from the recorded options (``departures``): a run is comparable when it
follows the registry's row: all of each collection's queries, the papers' datasets (no
stand-ins), training from the backbone (no ``--warm-start``, no passage stage), the row's
precision where it sets one (MOSAIC: fp32) and the papers' Robust04 split. Run files that
replace BM25 (``--run``) and a replaced ``--backbone`` are recorded, not judged: the first makes
a run closer to the papers when they are the authors' runs, the second is meant for a local copy.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

from .schema import Row

__all__ = ["departures", "not_comparable_line", "results_record", "run_options", "write_results"]


def run_options(row: Row, sources, backbone: str | None, warm_start: str | None, passage_steps: int | None,
                model_options: dict) -> dict:
    """Every option of a run that can change what it measures."""
    recipe = row.recipe
    return {"backbone": backbone, "warm_start": warm_start,
            "passage_steps": (passage_steps or recipe.passage_steps)
            if recipe.warm_start == "passage stage" and not warm_start else None,
            "dtype": model_options.get("dtype"), "datasets": dict(sources.datasets), "runs": dict(sources.runs),
            "max_queries": sources.max_queries, "fold_validation": recipe.fold_validation,
            "seeds": list(recipe.seeds)}


def departures(options: dict, row_dtype: str | None = None) -> list[str]:
    """Why a run with these options is not comparable with the published values (none: comparable)."""
    reasons = []
    if options.get("max_queries") is not None:
        reasons.append(f"a smaller run (at most {options['max_queries']} queries per collection)")
    if options.get("datasets"):
        reasons.append("stand-in datasets (" + ", ".join(f"{k}={v}" for k, v in options["datasets"].items()) + ")")
    if options.get("warm_start"):
        reasons.append(f"started from a passage cross-encoder ({options['warm_start']}), not the backbone")
    if options.get("passage_steps"):
        reasons.append(f"the library's passage stage first ({options['passage_steps']} steps)")
    if row_dtype and options.get("dtype") not in (None, row_dtype):
        reasons.append(f"precision {options['dtype']} where the paper trained in {row_dtype}")
    if options.get("fold_validation"):
        reasons.append("Robust04: three training folds and a validation fold (the papers: four, no validation)")
    return reasons


def results_record(row: Row, measured: dict, seconds: dict, options: dict, gpus: int) -> dict:
    """``results.json``'s content."""
    columns = []
    for cell in row.cells:
        values = measured[cell.column.name]
        columns.append({"column": cell.column.name, "metric": cell.column.metric, "published": cell.published,
                        "sig": cell.sig, "source": cell.source, "note": cell.note,
                        "measured": {str(s): v for s, v in values.items()},
                        "mean": sum(values.values()) / len(values) if values else math.nan})
    reasons = departures(options, row.recipe.dtype)
    return {"paper": row.paper.key, "citation": row.paper.citation, "table": row.table, "row": row.name,
            "label": row.label, "model": row.model, "backbone": options["backbone"] or row.backbone,
            "registry_backbone": row.backbone, "registry_dtype": row.recipe.dtype, "seeds": list(seconds),
            "columns": columns, "wall_hours": sum(seconds.values()) / 3600, "gpus": gpus,
            "gpu_hours": sum(seconds.values()) / 3600 * gpus, "options": options,
            "comparable": not reasons, "departures": reasons}


def not_comparable_line(reasons: list[str]) -> str:
    return "Not comparable with the published values: " + "; ".join(reasons) + "."


def write_results(results: dict, output_dir: Path) -> None:
    """``results.json``, and ``results.md``: one line per column, published beside measured."""
    (output_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    seeds = results["seeds"]
    lines = [f"# {results['label']}: {results['citation']}, table {results['table']}", "",
             "| column | metric | published | " + " | ".join(f"seed {s}" for s in seeds) + " | mean |",
             "|---" * (len(seeds) + 4) + "|"]
    for c in results["columns"]:
        published = "none" if c["published"] is None else f"{c['published']:.3f}" + (
            f"^{c['sig']}" if c.get("sig") else "")
        values = " | ".join(f"{c['measured'][str(s)]:.4f}" for s in seeds)
        lines.append(f"| {c['column']} | {c['metric']} | {published} | {values} | {c['mean']:.4f} |")
    lines += ["", f"GPU-hours: {results['gpu_hours']:.2f} ({results['gpus']} GPUs, {results['wall_hours']:.2f} hours "
              "of wall time)"]
    if results["options"].get("runs"):
        lines.append("First stage from run files: " + ", ".join(f"{k}={v}" for k, v in results["options"]["runs"].items()))
    if not results["comparable"]:
        lines.append(not_comparable_line(results["departures"]))
    (output_dir / "results.md").write_text("\n".join(lines) + "\n")

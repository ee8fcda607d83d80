"""The papers' tables, one command per row (``pyterrier-longdoc reproduce PAPER --table N --row NAME``).

- ``registry``: every row (paper, table, model, collections with their ir_datasets ids and folds,
  first stage, recipe, metric, published value and source);
- ``costs`` (``plan``): what a row downloads, stores and roughly costs, before it starts;
- ``sources``: the collections, BM25 candidates and FarRelevant collections a row reads;
- ``run``: a row end to end, and its results file (published beside measured, per seed).
"""
from .costs import gpu_hours, plan
from .registry import PAPERS, ROWS, Cell, Column, FirstStage, Paper, Recipe, Row, find_rows, with_recipe
from .run import run_row, write_results
from .sources import Sources

__all__ = ["PAPERS", "ROWS", "Cell", "Column", "FirstStage", "Paper", "Recipe", "Row", "Sources", "find_rows",
           "gpu_hours", "plan", "run_row", "with_recipe", "write_results"]

"""The papers' tables, one command per row (``pyterrier-longdoc reproduce PAPER --table N --row NAME``).

- ``registry``: every row (paper, table, model, collections with their ir_datasets ids and folds,
  first stage, recipe, metric, published value with its marks and source, notes on where the
  library departs from the paper): ``schema`` (the record types), ``columns``, ``rows``;
- ``published``: the papers' printed cells (``published.csv``);
- ``costs`` (``plan``): what a row downloads, stores and roughly costs (calibrated to the
  papers' figures), before it starts;
- ``sources``: the collections, BM25 candidates and FarRelevant collections a row reads;
- ``run``: a row end to end; ``results``: its results file (published beside measured, per
  seed, with every option that decides whether it is comparable);
- ``comparison``: results files against the published values, with an interval that a faithful
  reproduction passes for 95% of its cells.
"""
from .comparison import compare, interval, load_results, row_passes
from .costs import gpu_hours, plan
from .published import PublishedCell, published_cell, published_cells
from .registry import PAPERS, ROWS, Cell, Column, FirstStage, Paper, Recipe, Row, find_rows, with_recipe
from .results import write_results
from .run import run_row
from .sources import Sources

__all__ = ["PAPERS", "ROWS", "Cell", "Column", "FirstStage", "Paper", "PublishedCell", "Recipe", "Row", "Sources",
           "compare", "find_rows", "gpu_hours", "interval", "load_results", "plan", "published_cell", "published_cells",
           "row_passes", "run_row",
           "with_recipe", "write_results"]

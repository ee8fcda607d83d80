"""Aggregator modules, one file per model family."""

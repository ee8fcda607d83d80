"""Two small helpers shared across the package: the order of a result frame, and random
generators keyed by names so that results do not depend on the order of the input."""
from __future__ import annotations

import zlib

import numpy as np
import pandas as pd


def sort_results(results: pd.DataFrame) -> pd.DataFrame:
    """Results per qid, best first: by ``rank`` when the frame has it, else by ``score``
    descending (ties keep their order)."""
    by_rank = "rank" in results.columns
    if not by_rank and "score" not in results.columns:
        raise ValueError(f"results need a 'rank' or 'score' column to be ordered; they have {list(results.columns)} "
                         "(pt.model.add_ranks adds rank from score)")
    return results.sort_values(["qid", "rank" if by_rank else "score"], ascending=[True, by_rank], kind="stable")


def keyed_rng(seed: int, *keys: str | int) -> np.random.Generator:
    """A generator determined by ``seed`` and ``keys`` (strings hashed with crc32, not ``hash()``:
    Python salts its string hashes per process, which would break reproducibility)."""
    return np.random.default_rng([int(seed), *(zlib.crc32(k.encode("utf8")) if isinstance(k, str) else int(k)
                                                for k in keys)])

"""Random generators keyed by names, so that results do not depend on the order of the input."""
from __future__ import annotations

import zlib

import numpy as np


def keyed_rng(seed: int, *keys: str | int) -> np.random.Generator:
    """A generator determined by ``seed`` and ``keys`` (strings hashed with crc32, not ``hash()``:
    Python salts its string hashes per process, which would break reproducibility)."""
    return np.random.default_rng([int(seed), *(zlib.crc32(k.encode("utf8")) if isinstance(k, str) else int(k)
                                                for k in keys)])

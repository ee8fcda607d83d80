"""How the tutorials print warnings: one line each, the category and the message, with the folders
of this machine shortened to their last two parts (``.../warm-start-4a4ec8a2153a/cross-encoder``), so
that saved outputs read the same on every machine and leak no local paths."""
from __future__ import annotations

import re
import warnings

# an absolute path of three or more parts: keep the last two
_PATH = re.compile(r"(?<![\w.])/(?:[\w.+-]+/)+([\w.+-]+/[\w.+-]+)")


def short_paths(text: str) -> str:
    return _PATH.sub(r".../\1", text)


def short_warnings() -> None:
    warnings.formatwarning = lambda message, category, *args, **kwargs: f"{category.__name__}: {short_paths(str(message))}\n"

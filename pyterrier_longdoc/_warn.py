"""Warnings shown at the user's line: the first frame outside this package and PyTerrier, however
deep the call came (``model(df)``, a pipeline, ``predict``, ``from_pretrained``)."""
from __future__ import annotations

import contextlib
import os
import sys
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_CONTEXTLIB = os.path.abspath(contextlib.__file__)  # `with` blocks of the library's own context managers


class LongDocWarning(UserWarning):
    """A warning of pyterrier_longdoc's to its user (the test suite turns those it does not expect into errors)."""


class CroppingWarning(LongDocWarning):
    """A model read only the start of some documents or queries: the report of what it cropped and the
    setting that reads more (once per call; the runtime's ``warn_cropping=False`` leaves it out)."""


class LongDocDeprecationWarning(DeprecationWarning):
    """An old name of pyterrier_longdoc's, working for one release."""


def _internal(filename: str) -> bool:
    filename = os.path.abspath(filename)
    pyterrier = getattr(sys.modules.get("pyterrier"), "__file__", None)  # Transformer.__call__, pipelines
    return filename.startswith(_HERE) or filename == _CONTEXTLIB or (
        pyterrier is not None and filename.startswith(os.path.dirname(os.path.abspath(pyterrier)) + os.sep))


def warn(message: str, category: type[Warning] = LongDocWarning) -> None:
    """``warnings.warn`` with the stack level of the first caller outside the library."""
    frame, level = sys._getframe(1), 2
    while frame.f_back is not None and _internal(frame.f_code.co_filename):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


# the release that removes the deprecated names (window/stride for word and passage counts, PassageArguments'
# batch_size and bf16), deprecated in 0.2
REMOVED_IN = "0.3.0"


def renamed(given: dict, renames: dict[str, str], where: str, defaults: dict | None = None) -> dict:
    """``given`` (keyword arguments or saved settings) with each old name of ``renames`` (old: new)
    under its new name, with a DeprecationWarning that names the new one: old names work until
    ``REMOVED_IN``. ``None`` under an old name means not given, and so does a new name at its value in
    ``defaults``; an old and a new name given together are a TypeError."""
    out, defaults = dict(given), defaults or {}
    for old, new in renames.items():
        if out.get(old) is None:
            out.pop(old, None)
            continue
        if out.get(new) is not None and (new not in defaults or out[new] != defaults[new]):
            raise TypeError(f"{where}: give {new} only ({old} is its deprecated name)")
        warn(f"{where}: {old} is deprecated, use {new} (the same value; {old} is removed in version {REMOVED_IN})",
             LongDocDeprecationWarning)
        out[new] = out.pop(old)
    return out

"""Progress bars under the one rule of ``verbose`` (models' scoring, ``explain`` and ``fit``,
RankGPT): True, a bar from the start; None (the default), a bar once the call has run
``PROGRESS_DELAY`` seconds, so a long call shows its progress and a quick one prints nothing;
False, never. The bar is ``pt.tqdm``: on stderr, or a widget in a notebook with ipywidgets."""
from __future__ import annotations

# verbose=None: a call's bar shows once it has run this long
PROGRESS_DELAY = 3.0


def progress_bar(verbose: bool | None, disable: bool = False, **options):
    """``pt.tqdm(**options)`` under the rule of ``verbose`` (never where ``disable``)."""
    import pyterrier as pt

    return pt.tqdm(**options, disable=verbose is False or disable, delay=0 if verbose else PROGRESS_DELAY)

"""The names of :func:`~pyterrier_longdoc.training.fit`'s options, to check them where they are
given (``fit_options`` of a model, the CLI's ``--fit``) rather than when training starts."""
from __future__ import annotations

from typing import Any


def fit_option_defaults() -> dict[str, Any]:
    """The options ``fit`` takes (its keyword-only arguments), with their defaults."""
    import inspect

    from .fit import fit

    return {p.name: p.default for p in inspect.signature(fit).parameters.values() if p.kind is p.KEYWORD_ONLY}


def check_fit_options(options: dict, where: str = "fit_options") -> dict:
    """``options`` itself; a TypeError naming the unknown names and listing the valid ones."""
    if not isinstance(options, dict):
        raise TypeError(f"{where} must be a dict of fit options, got {type(options).__name__}")
    valid = list(fit_option_defaults())
    unknown = [name for name in options if name not in valid]
    if unknown:
        raise TypeError(f"{where}: unknown fit option{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(map(repr, unknown))}; valid options: {', '.join(valid)}")
    return options

"""The model registry: each model class by the short name it declares (its ``name``, once, on
the class), registered when the class is defined.

Below the reranker, so that loading a saved folder finds the class its config names. The packages that
define model classes are declared as entry points of the group ``pyterrier_longdoc.models`` (this
package's own, ``pyterrier_longdoc.models``, in pyproject.toml; a plugin adds its own), as PyTerrier
finds artifact loaders: a name not registered yet loads them, so nothing here imports a module of the
package by a computed name.
"""
from __future__ import annotations

from importlib.metadata import entry_points

ENTRY_POINT_GROUP = "pyterrier_longdoc.models"
_REGISTERED: dict[str, type] = {}  # short name -> model class, in the order the classes were defined


def register(cls: type) -> None:
    """Called when a model class is defined: it is registered under the name it declares (a subclass that
    declares none is not a model of its own); a name taken by another class is an error."""
    name = cls.__dict__.get("name")
    if not name:
        return
    taken = _REGISTERED.get(name)
    if taken is not None and f"{taken.__module__}.{taken.__qualname__}" != f"{cls.__module__}.{cls.__qualname__}":
        raise ValueError(f"model name {name!r} is taken by {taken.__module__}.{taken.__qualname__}")
    _REGISTERED[name] = cls


def load_model_packages() -> None:
    """Imports the packages that declare model classes (the entry points of ``ENTRY_POINT_GROUP``)."""
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        entry_point.load()


def model_class(name: str) -> type:
    """The model class registered under a short name such as ``"parade_attn"``."""
    if name not in _REGISTERED:
        load_model_packages()
    try:
        return _REGISTERED[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {known_names()}") from None


def registered_models() -> dict[str, type]:
    """Every model class by its short name, sorted by name (the model packages loaded first)."""
    load_model_packages()
    return dict(sorted(_REGISTERED.items()))


def known_names() -> str:
    """The short names, for error messages."""
    return ", ".join(sorted(_REGISTERED)) or (f"none registered: import pyterrier_longdoc.models (or the package "
                                              f"of a model class), or reinstall the package, whose entry points "
                                              f"({ENTRY_POINT_GROUP}) declare them")

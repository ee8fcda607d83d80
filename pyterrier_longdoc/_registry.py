"""The model registry: each model class under its short name (``"parade_attn"``).

Below the reranker, so that training and the command line find model classes by name without
importing the class that defines them; model classes register themselves when they are defined.
"""
from __future__ import annotations

import dataclasses

from ._chunking import Chunking

CHUNKING_SETTINGS = tuple(f.name for f in dataclasses.fields(Chunking))
_REGISTRY: dict[str, type] = {}


def register(cls: type) -> None:
    """Registers ``cls`` under its ``name``; a name taken by another class is an error."""
    name = cls.__dict__.get("name")
    if not name:
        return
    if name in _REGISTRY and _REGISTRY[name] is not cls:
        raise ValueError(f"model name {name!r} is taken by {_REGISTRY[name].__qualname__}")
    _REGISTRY[name] = cls


def model_class(name: str) -> type:
    """The model class registered under a short name such as ``"parade_attn"``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(sorted(_REGISTRY))}") from None


def registered_models() -> dict[str, type]:
    return dict(sorted(_REGISTRY.items()))


def known_names() -> str:
    return ", ".join(sorted(_REGISTRY))

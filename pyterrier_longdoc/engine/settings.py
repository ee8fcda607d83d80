"""Model settings: one frozen dataclass per model family, the one home of each setting's name,
default, meaning and check.

A model class names its settings class (``MaxP.Settings``); its fields are the constructor's
keyword arguments (typed for type checkers by the family's ``Options``, a ``TypedDict`` beside it: ``MaxP(path,
**options: Unpack[MaxPOptions])``; ``help(MaxP)`` lists each with its default and meaning), checked in
``__post_init__`` before anything loads, shown by ``repr`` and saved in ``config.json``. Changing
one (``set_parameter``) builds a new instance through the same checks. Units: ``window``,
``stride``, ``max_doc_tokens``, ``max_query_tokens`` and ``max_length`` count the tokenizer's
tokens, ``max_chunks`` windows.
"""
from __future__ import annotations

import copy
import dataclasses
import inspect
from dataclasses import dataclass, field
from typing import Any, TypedDict

from .chunking import CHUNKING_SETTINGS, Chunking, ChunkingOptions, ChunkingSettings
from .runtime import RuntimeOptions


def setting(default: Any, doc: str, *, derived: bool = False):
    """A settings field: its default and what it means. ``derived``: filled in while the model is
    built (saved so that loading needs nothing else), never given by hand and not shown by ``repr``."""
    value = {"default_factory": lambda: copy.deepcopy(default)} if isinstance(default, (list, dict)) else {
        "default": default}
    return field(metadata={"doc": doc, "derived": derived}, **value)


@dataclass(frozen=True)
class ModelSettings(ChunkingSettings):
    """How every model reads a document (the chunking settings, declared in ``ChunkingSettings``, the
    engine's: their types allow None where the encoder resolves it); a family's class adds its head's."""

    gradient_checkpointing: bool = setting(False, "recompute the encoder's activations in the backward pass "
                                                  "instead of keeping them (training only): less memory for long "
                                                  "documents, for one more forward pass of the encoder a step")

    def __post_init__(self):
        flag(self, "gradient_checkpointing")
        # None for max_length and max_query_tokens is resolved against the encoder; every other
        # value, and the combinations that need no encoder, are checked here, before it loads
        try:
            self.chunking(max_length=512, max_query_tokens=1)
        except ValueError as error:
            raise ValueError(f"{type(self).__name__}: {error}") from None

    def chunking(self, **resolved) -> Chunking:
        """The engine's ``Chunking``: these settings' chunking fields (the one place they are copied),
        with ``resolved`` in place of those that are None until the encoder says (``max_length``,
        ``max_query_tokens``)."""
        values = {name: getattr(self, name) for name in CHUNKING_SETTINGS}
        return Chunking(**{**values, **{k: v for k, v in resolved.items() if values[k] is None}})

    def to_dict(self) -> dict[str, Any]:
        """The settings as ``config.json`` holds them."""
        return {f.name: copy.deepcopy(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def replace(self, **changes) -> ModelSettings:
        """A new instance with ``changes``, through the same checks; an unknown name is a TypeError."""
        check_names(type(self), changes)
        return dataclasses.replace(self, **changes)

    def changed(self) -> dict[str, Any]:
        """The settings given by hand that differ from the class defaults (what ``repr`` shows)."""
        defaults = type(self)()
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if not f.metadata.get("derived") and getattr(self, f.name) != getattr(defaults, f.name)}

    @classmethod
    def defaults(cls) -> dict[str, Any]:
        return cls().to_dict()

    @classmethod
    def from_dict(cls, settings: dict, owner: str | None = None, given: dict | None = None) -> ModelSettings:
        """Settings from a dict (given, or read from ``config.json``); an unknown name is a TypeError
        naming ``owner`` (the model class). ``given``: the settings the user gave among them, which
        an error about a pair names (the other one is a default, or the saved model's)."""
        check_names(cls, settings, owner)
        if given is not None:
            check_window_and_stride(cls, settings, given, owner)
        return cls(**settings)

    @classmethod
    def parameters(cls) -> list[inspect.Parameter]:
        """The constructor's keyword parameters these settings are."""
        return [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, annotation=f.type,
                                  default=f.default_factory() if callable(f.default_factory) else f.default)
                for f in dataclasses.fields(cls) if not f.metadata.get("derived")]

    @classmethod
    def docs(cls) -> dict[str, str]:
        """What each setting means, by name."""
        return {f.name: f.metadata["doc"] for f in dataclasses.fields(cls)}


class LoadOptions(TypedDict, total=False):
    """How a model's constructor loads it (never saved; see ``LongDocReranker``)."""

    trust_remote_code: bool
    verify_weights: bool
    fit_options: dict[str, Any] | None
    seed: int | None


class ModelOptions(RuntimeOptions, LoadOptions, ChunkingOptions, total=False):
    """The keywords every model class's constructor takes, for type checkers (PEP 692): the runtime options,
    how it loads, then ``ModelSettings``' fields. Each family's ``Settings`` has its ``Options`` beside it,
    extending these with the fields it adds (``tests/project/test_typing.py`` keeps the two equal)."""

    gradient_checkpointing: bool


def check_names(cls: type[ModelSettings], settings: dict, owner: str | None = None) -> None:
    """A TypeError naming every setting ``cls`` does not have, with the valid ones."""
    valid = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(settings) - set(valid))
    if unknown:
        owner = owner or cls.__name__.removesuffix("Settings")
        raise TypeError(f"{owner} got unknown settings {unknown}; valid settings: {sorted(valid)}")


def check_window_and_stride(cls: type[ModelSettings], settings: dict, given: dict, owner: str | None) -> None:
    """A stride longer than the window skips document tokens. Where the user gave one of the two
    (``MaxP(p, window=20)`` against MaxP's stride 100), the error names the one given and says what to
    pass, rather than "stride (100) > window (20)" about a stride the user never set."""
    window, stride = settings.get("window"), settings.get("stride")
    if not (isinstance(window, int) and isinstance(stride, int) and window > 0 and stride > 0) or stride <= window:
        return  # a value wrong on its own, or both given: Chunking's own error
    owner = owner or cls.__name__.removesuffix("Settings")
    defaults = {f.name: f.default for f in dataclasses.fields(cls)}

    def other(name: str) -> str:
        return f"the default {name}" if settings[name] == defaults.get(name) else f"the model's {name}"

    if "window" in given and "stride" not in given:
        raise ValueError(f"{owner}: window {window} is smaller than {other('stride')} {stride}, so windows would "
                         f"skip document tokens: pass stride=... as well (at most {window})")
    if "stride" in given and "window" not in given:
        raise ValueError(f"{owner}: stride {stride} is larger than {other('window')} {window}, so windows would "
                         f"skip document tokens: pass window=... as well (at least {stride}), or a stride of at "
                         f"most {window}")


def positive_int(owner: ModelSettings, name: str, *, optional: bool = False) -> None:
    value = getattr(owner, name)
    if optional and value is None:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{type(owner).__name__}: {name} must be a positive integer{' or None' if optional else ''}, "
                         f"got {value!r}")


def one_of(owner: ModelSettings, name: str, choices) -> None:
    value = getattr(owner, name)
    if value not in choices:
        raise ValueError(f"{type(owner).__name__}: {name} must be one of {tuple(choices)}, got {value!r}")


def flag(owner: ModelSettings, name: str) -> None:
    if not isinstance(getattr(owner, name), bool):
        raise ValueError(f"{type(owner).__name__}: {name} must be True or False, got {getattr(owner, name)!r}")

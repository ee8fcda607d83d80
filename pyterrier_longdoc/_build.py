"""Building a model: the one path from a start to a ``(ModelConfig, LongDocModel)``.

A model starts from a saved pyterrier_longdoc folder (local or on the hub: the whole model, its
weights checked), a trained cross-encoder (a ``*ForSequenceClassification`` checkpoint: its
encoder, and its head for the models that score windows), a plain encoder (a new head, with an
``UntrainedHeadWarning``), or a model in memory (:class:`InMemory`: a copy of its encoder and
window head, e.g. a FirstP read as a MaxP). Every start then goes through the same assembly.
"""
from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from pathlib import Path

import torch

from .engine.backbone import (aggregator_encoder, encoder_max_length, load_pretrained, load_tokenizer,
                              model_from_config, refuse_pickle, remote_code_files, resolve_checkpoint)
from .engine.chunking import CHUNKING_SETTINGS, Chunking
from .engine.config import CONFIG_NAME, ModelConfig
from .engine.files import MalformedInputError
from .engine.model import LongDocModel
from ._registry import model_class
from ._warn import LongDocWarning, warn
from .aggregators.base import Aggregator
from .aggregators.heads import ClassifierHead, Head, is_sequence_classifier, split_sequence_classifier

if TYPE_CHECKING:
    from transformers import PreTrainedModel


class UntrainedHeadWarning(LongDocWarning):
    """A model was built with a new head: its scores are random until it is trained."""


@dataclass
class InMemory:
    """A built model as a start: its encoder and window head are copied, its settings kept."""

    model: LongDocModel
    settings: dict
    base_model: str | None = None


@dataclass
class _Start:
    """What a model is assembled from, whatever the source."""

    encoder: PreTrainedModel
    tokenizer: object
    head: Head | None            # the checkpoint's window head, if it has one
    trained_head: bool           # whether that head's weights are trained
    base_model: str | None
    code_files: Sequence[str] = ()  # the custom code (trust_remote_code) of its classes, saved with the model


def build_model(cls, source: str | InMemory, settings: dict, *, trust_remote_code: bool = False,
                verify_weights: bool = True, seed: int | None = None) -> tuple[ModelConfig, LongDocModel]:
    """The model of class ``cls`` (a registered model class) from ``source``, with ``settings``
    over the start's own and the class defaults; new parameters are drawn from ``seed`` when given."""
    with _seeded(seed):
        if isinstance(source, InMemory):  # a model in memory has all its settings: no class defaults
            path, saved, merged = None, None, {**source.settings, **settings}
        else:
            path = resolve_checkpoint(source)
            saved = _saved_config(cls, source, path)
            if saved is None:  # a new model: settings its folder gives (a bi-encoder's pooling, ...)
                settings = cls.source_settings(str(path or source), settings)
            merged = {**cls.defaults, **_saved_settings(cls, saved), **settings}
        # before loading anything: a wrong name or value fails fast, naming the settings given
        merged = _checked_settings(cls, merged, settings, saved, path)
        start = _start(cls, source, path, saved, trust_remote_code)
        try:
            config, model = _assemble(cls, start, merged)
        except ValueError as error:
            if saved is None or path is None:
                raise
            # a saved folder whose files disagree (config.json's model_type and the tokenizer beside it)
            raise MalformedInputError(path / CONFIG_NAME, None, f"the model it describes (model_type "
                                      f"{saved.encoder.get('model_type')!r}, with the tokenizer saved beside it, "
                                      f"{type(start.tokenizer).__name__}) cannot be built: {error}") from error
        if saved is not None and path is not None:
            model.load_weights(path, saved.weights_sha256 if verify_weights else None)
            config.fusion = saved.fusion  # chosen on validation for these weights
        elif not cls.aggregator.zero_shot:
            _warn_untrained(cls.__name__, str(start.base_model), model.aggregator, cls.aggregator.chunk_head,
                            start.trained_head)
    return config, model


def _saved_config(cls, source: str, path: Path | None) -> ModelConfig | None:
    saved = ModelConfig.read(path) if path is not None else None
    if saved is not None and saved.model != cls.name:
        raise ValueError(f"{source} holds a {saved.model!r} model, not {cls.name!r}: load it with "
                         f"{model_class(saved.model).__name__}.from_pretrained or LongDocReranker.from_pretrained")
    return saved


def _checked_settings(cls, merged: dict, given: dict, saved: ModelConfig | None, path: Path | None) -> dict:
    """``merged`` through ``cls.check_settings``; where a saved value is at fault (a hand-edited
    ``window: "wide"``), the error names the saved folder's config.json and the setting."""
    try:
        return cls.check_settings(merged, given=given).to_dict()
    except (TypeError, ValueError) as error:
        stored = {k: v for k, v in _saved_settings(cls, saved).items() if k not in given}
        if not stored or path is None or _settings_work(cls, {**cls.defaults, **stored}):
            raise  # the settings given are at fault (alone, or with the saved ones), and the error names them

        def without(name: str) -> dict:  # the saved value replaced by the class default, or left out
            return {k: v for k, v in merged.items() if k != name} | (
                {name: cls.defaults[name]} if name in cls.defaults else {})

        at_fault = ", ".join(f"{k!r} = {stored[k]!r}" for k in stored if _settings_work(cls, without(k), given))
        raise (TypeError if isinstance(error, TypeError) else ValueError)(
            f"{path / CONFIG_NAME}: its saved settings do not load{f' ({at_fault})' if at_fault else ''}: {error}") from None


def _settings_work(cls, settings: dict, given: dict | None = None) -> bool:
    try:
        cls.check_settings(settings, given=given)
    except (TypeError, ValueError):
        return False
    return True


def _saved_settings(cls, saved: ModelConfig | None) -> dict:
    """A saved model's settings; one saved before ``append_eos`` was a setting of its class keeps
    the rule it was scored with (None: an EOS where the head reads the last token)."""
    if saved is None:
        return {}
    return {"append_eos": None, **saved.settings} if "append_eos" in cls.defaults else saved.settings


def _start(cls, source: str | InMemory, path: Path | None, saved: ModelConfig | None,
           trust_remote_code: bool) -> _Start:
    """The encoder, tokenizer and window head a model is assembled from."""
    if isinstance(source, InMemory):
        head = getattr(source.model.aggregator, "head", None)
        return _Start(copy.deepcopy(source.model.encoder), source.model.tokenizer, copy.deepcopy(head),
                      trained_head=True, base_model=source.base_model, code_files=source.model.code_files)
    if saved is None or path is None:  # a new model (a saved one comes with its folder)
        loaded = load_pretrained(source, trust_remote_code=trust_remote_code,
                                 sequence_classifier=cls.aggregator.chunk_head)
        # in fp32 whatever the checkpoint's dtype (most Llama and Qwen2 are saved in bf16): the new
        # parameters are fp32, and the runtime casts to the dtype asked for (``Runtime.weights_dtype``)
        encoder, head = _split(loaded.model.float())
        if head is not None and not loaded.trained_head:
            head.reset_output_layer()
        return _Start(encoder, loaded.tokenizer, head, loaded.trained_head, source, remote_code_files(loaded.model))
    saved.warn_about_version(path)  # here only: a load reads config.json more than once
    refuse_pickle(path)
    backbone = model_from_config(saved.encoder, trust_remote_code=trust_remote_code, folder=path,
                                 sequence_classifier=saved.head_type == "sequence_classification")
    encoder, head = _split(backbone.float())  # a config saved from a bf16 model names bf16
    return _Start(encoder, load_tokenizer(str(path), trust_remote_code), head, True, saved.base_model,
                  remote_code_files(backbone))


def _split(backbone: PreTrainedModel) -> tuple[PreTrainedModel, ClassifierHead | None]:
    return split_sequence_classifier(backbone) if is_sequence_classifier(backbone) else (backbone, None)


def _assemble(cls, start: _Start, merged: dict) -> tuple[ModelConfig, LongDocModel]:
    """The engine, the head and the config of ``cls`` over the start's encoder."""
    chunk_head = cls.aggregator.chunk_head
    settings = cls.Settings(**merged)
    head_settings = {k: v for k, v in merged.items() if k not in CHUNKING_SETTINGS + cls.backbone_settings}
    aggregator = cls.aggregator(start.encoder.config.hidden_size, **cls.aggregator_args, **head_settings,
                                **({"head": start.head} if chunk_head else {}),
                                **({"load_encoder": aggregator_encoder} if cls.aggregator.loads_encoder else {}))
    model = cls.engine(start.encoder, start.tokenizer, aggregator,
                        resolved_chunking(settings, start.encoder, start.tokenizer, cls.engine))
    model.code_files = tuple(start.code_files)
    cls._prepare_backbone(model, merged)
    merged.update(aggregator.saved_settings())
    head_type = None if not chunk_head else (
        "sequence_classification" if isinstance(aggregator.head, ClassifierHead) else "linear")
    config = ModelConfig(model=cls.name, settings=merged, encoder=start.encoder.config.to_dict(),
                         head_type=head_type, base_model=start.base_model)
    return config, model


def resolved_chunking(settings, encoder, tokenizer, engine) -> Chunking:
    """The engine's ``Chunking`` from a model's ``settings``, with what the encoder makes of the chunking
    settings that are None: ``max_length`` its own maximum, ``max_query_tokens`` as many as the engine's
    query sequence holds (bi-encoders)."""
    chunk_settings = {name: getattr(settings, name) for name in CHUNKING_SETTINGS}
    resolved = {}
    if chunk_settings.get("max_length", 0) is None:
        resolved["max_length"] = encoder_max_length(encoder, tokenizer)
    if chunk_settings.get("max_query_tokens", 0) is None:
        resolved["max_query_tokens"] = engine.longest_query(tokenizer, {**chunk_settings, **resolved})
    return settings.chunking(**resolved)


def _warn_untrained(model: str, source: str, aggregator: Aggregator, chunk_head: bool, trained_head: bool) -> None:
    """An UntrainedHeadWarning naming the parameters that the checkpoint does not hold, if any."""
    trained_head = chunk_head and trained_head
    new = [name for name, _ in aggregator.named_parameters()
           if not (trained_head and (name.startswith("head.") or name in aggregator.neutral_start))]
    if not new:
        return
    listed = ", ".join(new[:6]) + (f", ... ({len(new)} in all)" if len(new) > 6 else "")
    if trained_head:
        what = (f"the cross-encoder's head is kept, but its new parameters ({listed}) are drawn at random, so its "
                "scores are not the cross-encoder's and change with the seed until fit(). Build it with seed= (or "
                "after torch.manual_seed) to make them reproducible.")
    else:
        what = (f"its {'head' if chunk_head else model + ' head'} is new ({listed}: initialised here, not read from "
                "a checkpoint), so its scores are random until fit(). To rank without training, start from a trained "
                "cross-encoder (a sequence-classification checkpoint, e.g. a folder saved by "
                "sentence_transformers.CrossEncoder) instead.")
    warn(f"{model} over {source}: {what}", UntrainedHeadWarning)


@contextlib.contextmanager
def _seeded(seed: int | None):
    """Parameters created in the block come from ``seed`` (when given); the global RNG is left as it was."""
    if seed is None:
        yield
        return
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, got {seed!r}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield

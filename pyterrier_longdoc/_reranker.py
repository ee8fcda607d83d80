"""LongDocReranker: the pt.Transformer every model is; validate -> score -> rank, and fit.

A facade by composition (``pt.Estimator`` and ``pt.Artifact`` its only bases) whose body writes every public
method: it holds its ``Runtime`` (where it runs), the engine (``LongDocModel``) and its collaborators, each
built from the parts it needs: ``ModelParameters`` (the settings, PyTerrier's parameters, what ``repr``
shows), ``Placement`` (the engine's weights on the runtime's device and dtype, and the inference copies),
``Scoring`` and ``CrossEncoderPairs`` (``predict``/``rank``); how it is built is ``_build.build_model`` (a
saved folder, a trained cross-encoder, a plain encoder); training sees it through ``training.scorer.Scorer``.
"""
from __future__ import annotations

import contextlib
import dataclasses
import inspect
import os
import textwrap
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar, cast, get_type_hints

import numpy as np
import pandas as pd
import pyterrier as pt
import torch
from typing_extensions import Self, Unpack  # typing's from Python 3.11

# its collaborators and what they write and explain
from ._explain import explain as explain_windows
from ._pairs import CrossEncoderPairs
from ._scoring import Scoring, check_finite
from .engine.weights import save_cross_encoder as write_cross_encoder
from .engine.backbone import enable_gradient_checkpointing, resolve_checkpoint
from ._build import UntrainedHeadWarning, build_model  # noqa: F401
from .engine.config import ModelConfig
from .engine.frames import column_texts, failed_setting_run, input_frame, row_label
from ._hub import hub_repository, push_folder, save_folder
from .engine.model import LongDocModel, Scored
from ._parameters import ModelParameters
from .fusion import Fusion
from ._placement import (RUNTIME_OPTION_DOCS, Placement, attention_option, device_option, placed_option, read_live,
                         runtime_option)
from ._registry import known_names, model_class, register
from .engine.runtime import CONSTRUCTOR_OPTIONS, OPTIONS as RUNTIME_OPTIONS, Runtime, hold_parameters
from .engine.settings import ModelOptions, ModelSettings
from .aggregators.base import Aggregator


Source = str | os.PathLike  # what a model loads from: a saved folder, a hub repository, a checkpoint
P = ParamSpec("P")  # a model class's constructor keywords, which from_pretrained and from_hf take
R = TypeVar("R")  # the model class from_pretrained and from_hf build


def _checked_fit_options(fit_options: dict | None) -> dict:
    from .training.arguments import check_option_names

    return dict(check_option_names(fit_options or {}))


def _hold(reranker: LongDocReranker, runtime: Runtime, fit_options: dict, source: tuple, config: ModelConfig,
          model: LongDocModel, path, given: Iterable[str] = ()) -> None:
    """What a reranker holds: its runtime, ``fit`` defaults and results, the engine with its settings
    (``ModelParameters``), where the engine runs (``Placement``); ``given``: the settings given by hand."""
    reranker.runtime, reranker.fit_options, reranker._source = runtime, fit_options, source
    reranker.history = None  # of the last fit (a DataFrame)
    reranker.training_data = reranker.training_options = None
    reranker.config, reranker.model = config, model
    cls = type(reranker)
    reranker._parameters = ModelParameters(cls.__name__, cls.Settings.from_dict(config.settings), model, config,
                                           cls.backbone_settings, given)
    reranker.fusion = Fusion.from_dict(config.fusion, f"{path}: config.json's fusion") if config.fusion else None
    model.runtime = runtime  # the engine options are the reranker's
    reranker._placement = Placement(runtime, model, fp32_embeddings=reranker.fp32_embeddings)
    reranker._placement.place_weights()
    reranker._placement.set_attention(runtime.attn_implementation)
    reranker._scoring = Scoring(cls.__name__, model, runtime, reranker._placement, reranker._parameters,
                                crops=cls.crops)
    reranker._pairs = CrossEncoderPairs(reranker._scoring, reranker._placement, runtime, reranker)
    pt.Artifact.__init__(reranker, path)


class LongDocReranker(pt.Estimator, pt.Artifact):
    """A long-document re-ranker: any registered model, on the shared engine.

    Input columns ``qid, query, docno`` and ``text_field``; output: the input with ``score``
    and ``rank`` replaced, every other column kept.

    The runtime options (``batch_size``, ``text_field``, ``device``, ``dtype``, ``verbose``,
    ``warn_cropping``, ``attn_implementation``, ``max_batch_tokens`` and the engine's ``batching``,
    ``partial_last_layer``, ``onednn_linears``) are the model's ``runtime``, never saved; each is also an
    attribute set the same way (``model.dtype = "bf16"`` as ``model.batch_size = 4``, or
    ``model.set_parameter("dtype", "bf16")``), checked when set (a device this machine lacks fails
    at once), and read at the next call.

    The settings are the fields of the model class's ``Settings`` (``Settings.docs()``), listed after the
    runtime options with their types, defaults and meaning under each model class: chunking (``window``,
    ``stride``, ``max_query_tokens``, ``max_doc_tokens``, ``max_chunks``, ``chunk_selection``, ``max_length``;
    None: the encoder's own maximum) and the model's own; they override the class defaults or the saved
    checkpoint, and are checked before anything loads. A type checker reads every keyword from the model
    class's constructor, typed by its family's ``Options`` (``MaxP(path, **options: Unpack[MaxPOptions])``,
    PEP 692), and ``from_pretrained`` and ``from_hf`` take the same. On this base class they take the chunking
    settings every model has (a saved model's own settings also work at run time; a type checker sees them on
    the model's class: ``ParadeCNN.from_pretrained(path, layers=3)``).
    """  # its Args: added by _document_settings, from each parameter's one doc

    ARTIFACT_TYPE: ClassVar[str] = "reranker"  # pt.inspect.artifact_type_format, pt_meta.json
    ARTIFACT_FORMAT: ClassVar[str] = "pyterrier_longdoc"
    # the registry's short name (None: a base); pt.Transformer's own `name` is a display string
    name: str | None = None  # type: ignore[assignment]
    crops: ClassVar[bool] = False  # True: reading only the start is the model's definition (FirstP)
    aggregator: ClassVar[type[Aggregator]]
    aggregator_args: ClassVar[dict[str, Any]] = {}  # fixed by the model class
    Settings: ClassVar[type[ModelSettings]] = ModelSettings  # user-settable, checked, saved in config.json
    defaults: ClassVar[dict[str, Any]] = ModelSettings.defaults()  # Settings' defaults, as a dict
    backbone_settings: ClassVar[tuple[str, ...]] = ("gradient_checkpointing",)  # _prepare_backbone's
    engine: ClassVar[type[LongDocModel]] = LongDocModel  # the scoring module (bi-encoders: BiEncoderModel)
    fp32_embeddings: ClassVar[bool] = True  # half-precision weights keep embeddings, LayerNorms in fp32 (Placement)
    runtime: Runtime  # where it runs (never saved)
    model: LongDocModel  # the engine: encoder, chunking and head
    config: ModelConfig  # what config.json holds
    fit_options: dict[str, Any]  # fit's defaults
    history: pd.DataFrame | None  # of the last fit
    fusion: Fusion | None  # with the first stage, chosen on validation (saved)
    training_data: dict[str, int] | None  # what the last fit read
    training_options: dict[str, Any] | None  # the last fit's options, for the model card
    path: Any  # pt.Artifact's: the folder it was loaded from

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.defaults = cls.Settings.defaults()
        register(cls)
        _document_settings(cls)

    # each model class writes its own, typed by its family's Options (PEP 692): what type checkers, inspect and
    # help read; the work is _load's
    def __init__(self, model_name_or_path: Source, **options: Unpack[ModelOptions]):
        self._load(model_name_or_path, options)

    def _load(self, model_name_or_path: Source, options: Mapping[str, Any]) -> None:
        """Builds the model from ``options``: the runtime options, how it loads (``LoadOptions``), and the
        settings (the rest, checked by the class's ``Settings``: an unknown name is a TypeError)."""
        if self.name is None:
            raise TypeError("LongDocReranker is the base class: use LongDocReranker.from_pretrained(path) "
                            f"for a saved model, or a model class ({known_names()})")
        settings = dict(options)
        runtime = Runtime(**{name: settings.pop(name) for name in CONSTRUCTOR_OPTIONS if name in settings})
        load = {name: settings.pop(name, default) for name, default in LOAD_DEFAULTS.items()}
        trust_remote_code, seed = load["trust_remote_code"], load["seed"]
        folder = saved_folder(str(model_name_or_path))
        fit_options = _checked_fit_options(load["fit_options"])  # before any weights load
        flags = {"trust_remote_code": True} if trust_remote_code else {}
        config, model = build_model(type(self), folder, settings, trust_remote_code=trust_remote_code,
                                    verify_weights=load["verify_weights"], seed=seed)
        source = (str(model_name_or_path), {**flags, **({"seed": seed} if seed is not None else {})})
        _hold(self, runtime, fit_options, source, config, model, folder, given=settings)
        self._class_defaults()

    def _class_defaults(self) -> None:
        """Defaults a model class sets on a new reranker, options given by hand kept (LLMs: a token cap, LoRA's lr)."""

    @classmethod
    def from_model(cls, model: LongDocModel, config: ModelConfig, *, fit_options: dict | None = None,
                   **runtime: Any) -> Self:
        """A reranker around a model built in memory (``LongDocModel``, e.g. another model's encoder with a
        new head) and its ``ModelConfig``; ``runtime``: the runtime options."""
        owner = cls if cls.name is not None else cast("type[Self]", model_class(config.model))  # the base: its own
        if config.model != owner.name:
            raise ValueError(f"the config is of a {config.model!r} model, not {owner.name!r}")
        reranker = owner.__new__(owner)
        source: tuple[str, dict[str, Any]] = (config.base_model or "<in memory>", {})
        _hold(reranker, Runtime(**runtime), _checked_fit_options(fit_options), source, config, model,
              config.base_model or pt.Artifact.NO_PATH)
        return reranker

    @property
    def settings(self) -> dict[str, Any]:
        """Chunking and the model's own settings, as saved in ``config.json`` (a copy: change them
        with ``set_parameter`` or as attributes, ``model.window = 20``)."""
        return self._parameters.settings.to_dict()

    @property
    def typed_settings(self) -> ModelSettings:
        """The settings as an instance of the class's ``Settings`` (frozen; each field documented)."""
        return self._parameters.settings

    def get_parameter(self, name: str) -> Any:
        """A setting of the model's ``Settings`` (``window``, ``stride``, ``k``, ...) or a runtime
        option (``batch_size``, ``dtype``, ``device``, ... every field of ``Runtime``), as it was set."""
        return getattr(self.runtime, name) if name in RUNTIME_OPTIONS else self._parameters.get(name)

    def set_parameter(self, name: str, value: Any) -> None:
        """Change one parameter in place (as ``pt.GridSearch`` does; ``model.window = 20`` is the same call):
        a setting is saved by ``save_pretrained`` and shown by ``repr`` at once. The value goes through the
        checks of the model's ``Settings``; one that changes what the weights are (``layers``, ``lora``,
        CEDR's ``max_query_tokens``) is refused, saying what to do instead. A chunking value that only a
        setting still to come makes valid (``window=20`` before ``stride=10``) waits for it, checked with the
        others when the model next reads a document: a frame then gets a warning naming the combination and
        a run that scores no document, so that a grid search finishes (the guide's "Tuning with
        pt.GridSearch"); ``predict``, ``fit`` and ``save_pretrained`` raise the error."""
        if name in RUNTIME_OPTIONS:
            object.__setattr__(self, name, value)  # the option's property: checked by the runtime
        else:
            self._parameters.set(name, value)

    def tunable_parameters(self) -> tuple[str, ...]:
        """The names ``set_parameter`` takes (``get_parameter`` also reads the other settings)."""
        return self._parameters.tunable()

    def parameter_problem(self) -> str | None:
        """Why the chunking values ``set_parameter`` took do not work together, or None."""
        return self._parameters.problem()

    def settle_parameters(self) -> None:
        """Applies the chunking values ``set_parameter`` took that waited for a partner; an error names a
        combination that does not work."""
        self._parameters.settle()

    def __getattr__(self, name: str) -> Any:
        # a setting read as an attribute (model.window), as PyTerrier's transformers hold their parameters
        if not name.startswith("_") and name in _setting_names(type(self)):
            return self._parameters.get(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        # model.window = 20 is set_parameter("window", 20); a name the model does not know (model.windw = 3)
        # is an error, not an attribute nothing reads
        if name in _setting_names(type(self)):
            self._parameters.set(name, value)
        elif name.startswith("_") or name in self.__dict__ or _declared(type(self), name):
            object.__setattr__(self, name, value)
        else:
            raise self._parameters.unknown(name)

    @classmethod
    def _prepare_backbone(cls, model: LongDocModel, settings: dict) -> None:
        """Called once the model is assembled, before saved weights are loaded: changes to the
        encoder that its ``backbone_settings`` ask for (e.g. LoRA adapters); may complete them."""
        if settings.get("gradient_checkpointing"):
            enable_gradient_checkpointing(model.encoder)

    @classmethod
    def source_settings(cls, source: str, settings: dict) -> dict:
        """The settings of a new model started from ``source``: ``settings``, completed with what
        the source's folder says (bi-encoders read its sentence-transformers configuration)."""
        return settings

    @classmethod
    def check_settings(cls, settings: dict, given: dict | None = None) -> ModelSettings:
        """``settings`` as the class's ``Settings``: a TypeError names any that is not one of its fields,
        a ValueError a value (or a pair, as ``stride`` > ``window``) that does not work; ``given``: the
        settings the user gave, which such an error names."""
        return cls.Settings.from_dict(settings, owner=cls.__name__, given=given)

    # cls typed as its constructor (PEP 612): a type checker reads the keywords of the class it is called on
    @classmethod
    def from_pretrained(cls: Callable[Concatenate[Source, P], R], model_name_or_path: Source, /, *args: P.args,
                        **options: P.kwargs) -> R:
        """Load a saved model, or start a new one from a cross-encoder or an encoder (see the class doc); the
        keywords are the class's constructor's. On the base class, the saved model's own class is used; a ``fit``
        checkpoint folder loads its latest checkpoint."""
        return _loading_class(cls, str(model_name_or_path))(model_name_or_path, *args, **options)

    # pt.Artifact.from_hf's keywords are those of any artifact; here the model class's (hence the ignore)
    @classmethod
    def from_hf(cls: Callable[Concatenate[Source, P], R], repo: str,  # type: ignore[override]
                branch: str | None = None, /, *args: P.args, **options: P.kwargs) -> R:
        """A model saved on the HuggingFace hub (``owner/name`` or ``owner/name@branch``); the keywords are the
        class's constructor's."""
        if branch is None:  # also as a keyword, as pt.Artifact.from_hf takes it
            branch = cast("str | None", options.pop("branch", None))
        source = hub_repository(repo, branch)
        return _loading_class(cls, source)(source, *args, **options)

    def __repr__(self) -> str:
        # the constructor call that rebuilds the model as it is now (set_parameter and attributes included)
        source, flags = self._source
        args = "".join(f", {k}={v!r}" for k, v in {**self.runtime.changed(), **self._parameters.shown(),
                                                   **flags}.items())
        return f"{type(self).__name__}({source!r}{args})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        input_frame(inp, ["qid", "query", "docno", self.text_field], self)
        problem = self.parameter_problem()
        if problem:  # a combination set_parameter reached (pt.GridSearch sets one value at a time)
            return failed_setting_run(inp, problem)
        queries = column_texts(inp, "query", self)
        texts = column_texts(inp, self.text_field, self)
        scores = self._scoring.inference_scores(queries, texts) if len(inp) else np.empty(0)
        check_finite(self, scores, lambda i: row_label(inp, i, scores[i]))
        ranked = pt.model.add_ranks(inp.assign(score=scores))
        return ranked.sort_values(["qid", "rank"], kind="stable").reset_index(drop=True)

    def fit(self, topics_or_res_tr: pd.DataFrame, qrels_tr: pd.DataFrame, topics_or_res_va=None, qrels_va=None, *,
            candidates=None, valid_candidates=None, **options) -> pd.DataFrame:
        """Train end to end, as a ``pt.Estimator``; returns the training history (also kept in
        ``history``). The options are :func:`pyterrier_longdoc.training.fit`'s, over ``fit_options``.

        Inside a pipeline, ``(bm25 % 100 >> text >> model).fit(train_topics, train_qrels,
        valid_topics, valid_qrels)`` runs the upstream stages and passes their results here: a
        result frame (qid, query, docno and the text column) is the candidates themselves. Called
        directly, pass topics (qid, query) and ``candidates``: a result frame or a retrieval
        pipeline run on the topics; validation topics use ``valid_candidates`` or, by default,
        that same pipeline. ``fit(topics, qrels, candidates)`` (version 0.1's call) still works.
        """
        from ._card import hyperparameters
        from .training import fit

        self.place_weights()
        hold_parameters(self.model, torch.float32, trainable_only=True)  # bf16 weights on a GPU: fp32 masters
        options = {**_stored_fit_options(self.fit_options, options), **options}
        topics, candidates, options = _fit_arguments(topics_or_res_tr, candidates, topics_or_res_va, qrels_va,
                                                     valid_candidates, options)
        self.history = fit(self, topics, qrels_tr, candidates, **options)
        self.fusion = None  # chosen for the weights before this fit
        self.training_data = {"topics": len(topics), "judgements": len(qrels_tr)}
        self.training_options = hyperparameters(options)
        return self.history

    # where it runs: its runtime, read live, and its Placement (the weights follow the runtime)
    batch_size: int = runtime_option("batch_size")
    text_field: str = runtime_option("text_field")
    verbose: bool | None = runtime_option("verbose")
    warn_cropping: bool | None = runtime_option("warn_cropping")
    max_batch_tokens: int | None = runtime_option("max_batch_tokens")
    batching: str = runtime_option("batching")
    partial_last_layer: bool = runtime_option("partial_last_layer")
    onednn_linears: bool | None = runtime_option("onednn_linears")
    dtype: str | torch.dtype | None = placed_option("dtype")  # the weights move at once
    devices: list[torch.device] = read_live(Runtime.available_devices, "the devices the model runs on")
    int8: bool = read_live(lambda runtime: runtime.int8, "whether inference quantizes the encoder to int8")
    autocast_dtype: torch.dtype | None = read_live(Runtime.autocast_dtype, "the autocast dtype (None: fp32)")
    device = device_option()  # the first device; set it to move the model (Placement)
    attn_implementation = attention_option()  # the encoder's attention kernel; set it to change it

    def place(self, device: str | torch.device | list) -> None:
        """Moves the model to ``device``, or shares inference batches among a list of devices (as
        the ``device`` argument of the constructor, and of ``predict``)."""
        self._placement.set(device=device)

    def place_weights(self) -> None:
        """The engine on the runtime's first device in its dtype (before every use)."""
        self._placement.place_weights()

    # scoring (Scoring), sentence-transformers' calls (CrossEncoderPairs) and what it writes: its collaborators'
    def autocast(self) -> contextlib.AbstractContextManager:
        """The autocast context of a call on the model's device and dtype (none for fp32)."""
        return self._scoring.autocast()

    def score_batch(self, queries: list[str], texts: list[str], progress=None, workers=None, tokens=None) -> Scored:
        """Differentiable scores of ``(queries[i], texts[i])`` (``Scoring.score_batch``: training's forward)."""
        return self._scoring.score_batch(queries, texts, progress, workers, tokens)

    def score_texts(self, queries: list[str], texts: list[str]) -> np.ndarray:
        """Inference scores of the pairs ``(queries[i], texts[i])`` as a float64 array; an error names the
        first pairs whose score is not finite."""
        return self._scoring.score_texts(queries, texts, self)

    def chunk_spans(self, text: str) -> list[tuple[int, int]]:
        """What the model reads of ``text``: the (start, end) spans of the chunks it encodes, in
        tokens of the text without special tokens (end exclusive), after every cap."""
        return self._scoring.chunk_spans(text)

    def explain(self, frame: pd.DataFrame) -> pd.DataFrame:
        return explain_windows(self, frame)

    def predict(self, inputs, batch_size: int | None = None, show_progress_bar: bool | None = None,
                activation_fn: Callable[[torch.Tensor], torch.Tensor] | None = None, apply_softmax: bool = False,
                convert_to_numpy: bool = True, convert_to_tensor: bool = False, *, prompt_name: str | None = None,
                prompt: str | None = None, device=None, pool=None, chunk_size: int | None = None):
        return self._pairs.predict(inputs, batch_size, show_progress_bar, activation_fn, apply_softmax,
                                   convert_to_numpy, convert_to_tensor, prompt_name=prompt_name, prompt=prompt,
                                   device=device, pool=pool, chunk_size=chunk_size)

    def rank(self, query: str, documents: list[str], top_k: int | None = None, return_documents: bool = False,
             batch_size: int | None = None, show_progress_bar: bool | None = None,
             activation_fn: Callable[[torch.Tensor], torch.Tensor] | None = None, *, prompt_name: str | None = None,
             prompt: str | None = None, device=None, pool=None, chunk_size: int | None = None) -> list[dict]:
        return self._pairs.rank(query, documents, top_k, return_documents, batch_size, show_progress_bar,
                                activation_fn, prompt_name=prompt_name, prompt=prompt, device=device, pool=pool,
                                chunk_size=chunk_size)

    def save_pretrained(self, path: str | os.PathLike) -> None:
        """``config.json`` (the encoder's transformers config, this library's fields under
        ``"pyterrier_longdoc"``), ``model.safetensors``, the tokenizer, a model card (``README.md``) and
        ``pt_meta.json``, which makes the folder a PyTerrier artifact: ``pt.Artifact.load(path)`` loads it.

        Saving over a saved model is atomic: the new folder is written beside ``path`` and takes its place
        in one step, so an interrupted save leaves the old model, never a mix; other entries of the old
        folder (a recipe's ``passage-stage``) are kept. The model's ``fusion`` with the first stage, where one
        was chosen, is saved in ``config.json``."""
        self.settle_parameters()
        self.config.fusion = self.fusion.to_dict() if self.fusion is not None else None
        save_folder(Path(path), self.model, self.config, self)

    def save_cross_encoder(self, path: str | os.PathLike) -> None:
        """Writes the window scorer as a standard sequence-classification folder, which
        ``sentence_transformers.CrossEncoder(path)`` and ``AutoModelForSequenceClassification``
        load, scoring a (query, window) pair as this model scores that window (FirstP, MaxP, SumP,
        KMaxAvgP, LongP: the models that score windows with that head)."""
        write_cross_encoder(self.model, Path(path), type(self).__name__)

    def push_to_hub(self, repo_id: str, *, private: bool = False, commit_message: str = "pyterrier_longdoc model",
                    token: str | None = None, revision: str | None = None) -> str:
        """Uploads what ``save_pretrained`` writes to a HuggingFace hub repository (created if
        needed); ``from_pretrained(repo_id)`` then loads it. Returns the commit URL."""
        return push_folder(self.save_pretrained, repo_id, private=private, commit_message=commit_message,
                           token=token, revision=revision)

    def to_hf(self, repo: str, *, branch: str | None = None, pretty_name: str | None = None,
              private: bool | None = None) -> None:
        """Uploads the model to a HuggingFace hub model repository (``owner/name``, or
        ``owner/name@branch``), as ``save_pretrained`` writes it; ``from_hf`` loads it back.
        ``pretty_name`` is unused: the model card names the model."""
        repo, branch = repo.split("@", 1) if "@" in repo else (repo, branch)
        self.push_to_hub(repo, private=bool(private), revision=branch)

    # the documentation of what a collaborator does, written once, beside the code that does it
    explain.__doc__ = explain_windows.__doc__
    predict.__doc__ = CrossEncoderPairs.predict.__doc__
    rank.__doc__ = CrossEncoderPairs.rank.__doc__


def _setting_names(cls: type[LongDocReranker]) -> frozenset[str]:
    return frozenset(f.name for f in dataclasses.fields(cls.Settings))


def _declared(cls: type, name: str) -> bool:
    """Whether the class has ``name`` (a method, property, class value) or declares it as an instance attribute."""
    return hasattr(cls, name) or any(name in vars(k).get("__annotations__", {}) for k in cls.__mro__)


def _stored_fit_options(fit_options: dict, options: dict) -> dict:
    """``fit_options`` under a call's own: an explicit ``args=TrainingArguments(...)`` wins for the
    fields its caller set (``args.given``); the stored options still apply to the others (a
    model's own defaults, such as the LLM classes' LoRA rate, and the data options)."""
    args = options.get("args")
    if args is None:
        return fit_options
    return {k: v for k, v in fit_options.items() if k not in args.given}


def _loading_class(cls: R, source: str) -> R:
    """The class that loads ``source``: ``cls``, or on the base class (and the families' unregistered bases), the
    saved model's own class, a subclass of it."""
    return cls if getattr(cls, "name", None) is not None else cast(R, saved_model_class(source))


def _document_settings(cls: type[LongDocReranker], arguments: bool = False) -> None:
    """The class's docstring lists its settings with what each means (``Settings.docs()``, written once
    beside each field): ``help(MaxP)`` and the API reference show them. The base's lists every constructor
    argument first (``arguments``: ``_CONSTRUCTOR_DOCS``, the runtime options' ``RUNTIME_OPTION_DOCS``)."""
    if cls.__doc__ is None or _SETTINGS_HEADING in cls.__doc__ or "\nArgs:\n" in cls.__doc__:
        return
    docs = cls.Settings.docs()
    lines = [_argument(p.name, p.annotation, docs[p.name], p.default) for p in cls.Settings.parameters()]
    heading = _SETTINGS_HEADING
    if arguments:  # the base: its constructor's own arguments, then the settings, in one Args section
        types = {name: inspect.formatannotation(t, 'typing') for name, t in get_type_hints(ModelOptions).items()}
        defaults = {**{f.name: f.default for f in dataclasses.fields(Runtime)}, **LOAD_DEFAULTS}
        heading = "\n\nArgs:\n" + _argument("model_name_or_path", "str | os.PathLike",
                                             _CONSTRUCTOR_DOCS["model_name_or_path"]) + "".join(
            _argument(name, types[name], _CONSTRUCTOR_DOCS.get(name) or RUNTIME_OPTION_DOCS[name], defaults[name])
            for name in (*CONSTRUCTOR_OPTIONS, *LOAD_DEFAULTS))
    cls.__doc__ = inspect.cleandoc(cls.__doc__) + heading + "".join(lines)


def _argument(name: str, annotation: str, doc: str, default: Any = inspect.Parameter.empty) -> str:
    """One Google-style ``Args`` line: the name, its type, what it means and its default (the signature shows
    ``**options``, typed by the class's Options: ``help`` reads the rest here)."""
    shown = "" if default is inspect.Parameter.empty else f"; default ``{default!r}``"
    return textwrap.fill(f"{name} ({annotation}): {doc.rstrip('.')}{shown}.", 110, initial_indent="    ",
                         subsequent_indent="        ", break_on_hyphens=False) + "\n"


# an Args section of their own (Google style): the reference merges each setting's type into its line
_SETTINGS_HEADING = "\n\nIts settings, the keywords after the runtime options (see LongDocReranker):\n\nArgs:\n"
# what the constructor's arguments that are not runtime options (``RUNTIME_OPTION_DOCS``) mean
_CONSTRUCTOR_DOCS = {
    "model_name_or_path": "a saved pyterrier_longdoc folder (or hub repository), which loads the whole model; a "
                          "trained cross-encoder (a transformers ``*ForSequenceClassification`` checkpoint or a "
                          "sentence-transformers ``CrossEncoder`` folder), whose encoder the model starts from and "
                          "whose own head scores the windows of FirstP, MaxP, SumP, KMaxAvgP and LongP (and AvgP's "
                          "and PARADE-Avg/Max/Sum/Attn's combined vector); or a plain HuggingFace encoder, which gets "
                          "a new head (a warning says its scores are random until ``fit``).",
    "trust_remote_code": "passed to HuggingFace; off unless you pass it.",
    "fit_options": "default options of :meth:`fit` (``epochs``, ``lr``, ``checkpoint_dir``, ...), for training "
                   "inside a pipeline, whose ``fit`` passes only the topics and qrels.",
    "verify_weights": "check the saved weights against the checksum in ``config.json``; turn it off only for "
                      "weights you changed on purpose.",
    "seed": "draws the new parameters (a new head, PARADE-Attn's attention vector; the ``UntrainedHeadWarning`` "
            "names them) from ``torch.manual_seed(seed)``, leaving torch's global random state as it was; without "
            "it they come from that global state.",
}


# LoadOptions' defaults (the runtime options' are Runtime's, the settings' their Settings')
LOAD_DEFAULTS: dict[str, Any] = {"trust_remote_code": False, "verify_weights": True, "fit_options": None, "seed": None}
_document_settings(LongDocReranker, arguments=True)


def _fit_arguments(topics_or_res, candidates, valid_topics_or_res, valid_qrels, valid_candidates,
                   options: dict) -> tuple:
    """``fit``'s (topics, candidates, options) from PyTerrier's estimator call or a direct call."""
    if candidates is None and not _is_result_frame(topics_or_res) and valid_topics_or_res is not None \
            and valid_qrels is None:  # fit(topics, qrels, candidates): validation would come with its qrels
        candidates, valid_topics_or_res = valid_topics_or_res, None
    topics, candidates = _topics_and_candidates(topics_or_res, candidates, "training")
    if valid_topics_or_res is not None:
        if "valid_topics" in options:
            raise TypeError("validation topics given twice: as the third argument and as valid_topics")
        if valid_candidates is None and not _is_result_frame(valid_topics_or_res) \
                and isinstance(candidates, pt.Transformer):
            valid_candidates = candidates
        valid_topics, valid_candidates = _topics_and_candidates(valid_topics_or_res, valid_candidates, "validation")
        options.update(valid_topics=valid_topics, valid_qrels=valid_qrels, valid_candidates=valid_candidates)
    elif valid_candidates is not None:
        options["valid_candidates"] = valid_candidates
    return topics, candidates, options


def _is_result_frame(value) -> bool:
    return isinstance(value, pd.DataFrame) and "docno" in value.columns


def _topics_and_candidates(topics_or_res, candidates, what: str):
    """(topics, candidates) of a fit argument: a result frame is both; topics need candidates."""
    if _is_result_frame(topics_or_res):
        if candidates is not None:
            raise TypeError(f"the {what} argument is already a result frame (it has docno): candidates are not "
                            "given twice")
        pt.validate.result_frame(topics_or_res, extra_columns=["query"])
        return topics_or_res[["qid", "query"]].drop_duplicates("qid").reset_index(drop=True), topics_or_res
    if candidates is None:
        raise TypeError(f"the {what} topics need candidates: pass candidates= (a result frame or a retrieval "
                        "pipeline), or fit the model inside a pipeline (first_stage >> model).fit(...)")
    return topics_or_res, candidates


def saved_model_class(source: str) -> type[LongDocReranker]:
    """The model class of a saved folder (or hub repository, or ``fit`` checkpoint folder)."""
    path = resolve_checkpoint(saved_folder(source))
    config = ModelConfig.read(path) if path is not None else None
    if config is None:
        raise ValueError(f"{source} is not a saved pyterrier_longdoc model; start a new model "
                         f"with a model class instead ({known_names()})")
    return model_class(config.model)


def saved_folder(source: str) -> str:
    """A training checkpoint folder (``fit(checkpoint_dir=...)``) stands for its latest checkpoint."""
    path = Path(source)
    if path.is_dir() and not (path / "config.json").exists():
        from .training.checkpoints import latest_checkpoint

        latest = latest_checkpoint(path)
        if latest is not None:
            return str(latest)
    return source

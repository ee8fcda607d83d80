"""LongDocReranker: the pt.Transformer every model is; validate -> score -> rank, and fit.

A thin class by composition (``pt.Estimator`` and ``pt.Artifact`` its only bases): it holds its settings
(frozen, typed), its ``Runtime`` (where it runs), the engine (``LongDocModel``) and a ``Placement`` (the
engine's weights on the runtime's device and dtype, and the inference copies); how it is built is
``_build.build_model`` (a saved folder, a trained cross-encoder, a plain encoder); scoring (``_scoring``),
``predict``/``rank`` (``_pairs``), PyTerrier's parameters (``_parameters``) and what it writes (``_hub``) are
plain functions of it, bound as its methods; training sees it through ``training.scorer.Scorer``.
"""
from __future__ import annotations

import inspect
import os
import textwrap
import types
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyterrier as pt
import torch

# what the reranker delegates to: plain functions of it, bound as its methods
from . import _hub as publishing
from . import _pairs as pairs
from . import _parameters as parameters
from . import _scoring as scoring
from .engine.backbone import enable_gradient_checkpointing, resolve_checkpoint
from ._build import UntrainedHeadWarning, build_model  # noqa: F401
from .engine.config import ModelConfig
from .engine.frames import column_texts, failed_setting_run, input_frame, row_label
from ._hub import hub_repository
from .engine.model import LongDocModel
from .fusion import Fusion
from ._placement import (RUNTIME_OPTION_DOCS, Placement, attention_option, device_option, placed_option, read_live,
                         runtime_option)
from ._registry import known_names, model_class, register, registered_models  # noqa: F401
from .engine.runtime import Runtime, hold_parameters
from .engine.settings import ModelSettings
from .aggregators.base import Aggregator


class _ClassOnly:
    """A value computed from the class and seen on the class only: ``inspect.signature(MaxP)`` reads
    the constructor's, while an instance's signature stays its ``__call__``'s."""

    def __init__(self, compute):
        self.compute = compute

    def __get__(self, instance, owner):
        if instance is not None:
            raise AttributeError("__signature__")
        return self.compute(owner)


def _with_signature(function, owner: type, signature: inspect.Signature):
    """A copy of ``function`` that ``owner`` holds as its own, with ``signature`` (what ``inspect``,
    ``help`` and the API reference show); the code, and so the behaviour, stay the same."""
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__kwdefaults__ = dict(function.__kwdefaults__ or {})
    copy.__doc__, copy.__module__, copy.__annotations__ = function.__doc__, function.__module__, function.__annotations__
    copy.__qualname__ = f"{owner.__qualname__}.{function.__name__}"
    copy.__signature__ = signature
    copy._typed_copy_of = function
    return copy


def _fit(reranker: LongDocReranker, topics_or_res_tr: pd.DataFrame, qrels_tr: pd.DataFrame, topics_or_res_va=None,
         qrels_va=None, *, candidates=None, valid_candidates=None, **options) -> pd.DataFrame:
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

    reranker.place_weights()
    hold_parameters(reranker.model, torch.float32, trainable_only=True)  # bf16 weights on a GPU: fp32 masters
    options = {**_stored_fit_options(reranker.fit_options, options), **options}
    topics, candidates, options = _fit_arguments(topics_or_res_tr, candidates, topics_or_res_va, qrels_va,
                                                 valid_candidates, options)
    reranker.history = fit(reranker, topics, qrels_tr, candidates, **options)
    reranker.fusion = None  # chosen for the weights before this fit
    reranker.training_data = {"topics": len(topics), "judgements": len(qrels_tr)}
    reranker.training_options = hyperparameters(options)
    return reranker.history


def _checked_fit_options(fit_options: dict | None) -> dict:
    from .training.arguments import check_option_names

    return dict(check_option_names(fit_options or {}))


def _hold(reranker: LongDocReranker, runtime: Runtime, fit_options: dict, source: tuple, config: ModelConfig,
          model: LongDocModel, path) -> None:
    """What a reranker holds: its runtime, ``fit`` defaults and results, the engine with its settings, where the
    engine runs (``Placement``) and the chunking values ``set_parameter`` took that wait for a partner."""
    reranker.runtime, reranker.fit_options, reranker._source = runtime, fit_options, source
    reranker.history = None  # of the last fit (a DataFrame)
    reranker.training_data = reranker.training_options = None
    reranker.config, reranker.model = config, model
    reranker.fusion = Fusion.from_dict(config.fusion, f"{path}: config.json's fusion") if config.fusion else None
    reranker._settings = type(reranker).Settings.from_dict(config.settings)
    reranker._pending_settings = {}
    model.runtime = runtime  # the engine options are the reranker's
    reranker._placement = Placement(runtime, model, fp32_embeddings=reranker.fp32_embeddings)
    reranker._placement.place_weights()
    reranker._placement.set_attention(runtime.attn_implementation)
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
    runtime options with their types, defaults and meaning under each model class (and in its signature and
    type stubs): chunking (``window``, ``stride``, ``max_query_tokens``, ``max_doc_tokens``, ``max_chunks``,
    ``chunk_selection``, ``max_length``; None: the encoder's own maximum) and the model's own; they override
    the class defaults or the saved checkpoint, and are checked before anything loads. On this base class,
    ``from_pretrained`` takes the chunking settings every model has (a saved model's own settings also work
    at run time; a type checker sees them on the model's class: ``ParadeCNN.from_pretrained(path, layers=3)``).
    """  # its Args: added by _document_settings, from each parameter's one doc

    ARTIFACT_TYPE: ClassVar[str] = "reranker"  # pt.inspect.artifact_type_format, pt_meta.json
    ARTIFACT_FORMAT: ClassVar[str] = "pyterrier_longdoc"
    name: ClassVar[str | None] = None
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
    history: pd.DataFrame | None  # of the last fit; fusion: with the first stage, chosen on validation (saved)
    fusion: Fusion | None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.defaults = cls.Settings.defaults()
        register(cls)
        _give_typed_entry_points(cls)
        _document_settings(cls)

    @_ClassOnly
    def __signature__(cls) -> inspect.Signature:
        return inspect.Signature(constructor_parameters(cls))

    def __init__(self, model_name_or_path: str | os.PathLike, *, batch_size: int = Runtime.batch_size,
                 text_field: str = "text", device: str | torch.device | list | None = None,
                 dtype: str | torch.dtype | None = None, verbose: bool | None = None, warn_cropping: bool | None = None,
                 trust_remote_code: bool = False, verify_weights: bool = True, fit_options: dict | None = None,
                 seed: int | None = None, attn_implementation: str | None = None,
                 max_batch_tokens: int | None = None, **settings):
        if self.name is None:
            raise TypeError("LongDocReranker is the base class: use LongDocReranker.from_pretrained(path) "
                            f"for a saved model, or a model class ({known_names()})")
        folder = saved_folder(str(model_name_or_path))
        runtime = Runtime(batch_size, text_field, device, dtype, verbose, warn_cropping, attn_implementation,
                          max_batch_tokens)
        fit_options = _checked_fit_options(fit_options)  # before any weights load
        flags = {"trust_remote_code": True} if trust_remote_code else {}
        config, model = build_model(type(self), folder, settings, trust_remote_code=trust_remote_code,
                                    verify_weights=verify_weights, seed=seed)
        source = (str(model_name_or_path), {**flags, **({"seed": seed} if seed is not None else {})})
        _hold(self, runtime, fit_options, source, config, model, folder)
        self._class_defaults()

    def _class_defaults(self) -> None:
        """Defaults a model class sets on a new reranker, options given by hand kept (LLMs: a token cap, LoRA's lr)."""

    @classmethod
    def from_model(cls, model: LongDocModel, config: ModelConfig, *, fit_options: dict | None = None,
                   **runtime) -> LongDocReranker:
        """A reranker around a model built in memory (``LongDocModel``, e.g. another model's encoder with a
        new head) and its ``ModelConfig``; ``runtime``: the runtime options."""
        cls = model_class(config.model) if cls.name is None else cls
        if config.model != cls.name:
            raise ValueError(f"the config is of a {config.model!r} model, not {cls.name!r}")
        reranker = cls.__new__(cls)
        source = (config.base_model or "<in memory>", {})
        _hold(reranker, Runtime(**runtime), _checked_fit_options(fit_options), source, config, model,
              config.base_model or pt.Artifact.NO_PATH)
        return reranker

    @property
    def settings(self) -> dict[str, Any]:
        """Chunking and the model's own settings, as saved in ``config.json`` (a copy: change them with ``set_parameter``)."""
        return self._settings.to_dict()

    @property
    def typed_settings(self) -> ModelSettings:
        """The settings as an instance of the class's ``Settings`` (frozen; each field documented)."""
        return self._settings

    def _replace_settings(self, **changes) -> None:
        """New settings through ``Settings``' checks; ``config.json`` and ``repr`` follow."""
        self._settings = self._settings.replace(**changes)
        self.config.settings = self._settings.to_dict()

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

    @classmethod
    def from_pretrained(cls, model_name_or_path: str | os.PathLike, **overrides) -> LongDocReranker:
        """Load a saved model, or start a new one from a cross-encoder or an encoder (see the class doc); the
        keywords are the constructor's. On the base class, the saved model's own class is used; a ``fit``
        checkpoint folder loads its latest checkpoint."""
        if cls.name is None:
            cls = saved_model_class(str(model_name_or_path))
        return cls(model_name_or_path, **overrides)

    @classmethod
    def from_hf(cls, repo: str, branch: str | None = None, **overrides) -> LongDocReranker:
        """A model saved on the HuggingFace hub (``owner/name`` or ``owner/name@branch``)."""
        return cls.from_pretrained(hub_repository(repo, branch), **overrides)

    def __repr__(self) -> str:
        # the settings as they are now (set_parameter included), where they differ from the class's
        source, flags = self._source
        current = {**self._settings.changed(), **self._pending_settings}
        args = "".join(f", {k}={v!r}" for k, v in {**self.runtime.changed(), **current, **flags}.items())
        return f"{type(self).__name__}({source!r}{args})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        input_frame(inp, ["qid", "query", "docno", self.text_field], self)
        problem = self.parameter_problem()
        if problem:  # a combination set_parameter reached (pt.GridSearch sets one value at a time)
            return failed_setting_run(inp, problem)
        queries = column_texts(inp, "query", self)
        texts = column_texts(inp, self.text_field, self)
        scores = scoring.inference_scores(self, queries, texts) if len(inp) else np.empty(0)
        scoring.check_finite(self, scores, lambda i: row_label(inp, i, scores[i]))
        ranked = pt.model.add_ranks(inp.assign(score=scores))
        return ranked.sort_values(["qid", "rank"], kind="stable").reset_index(drop=True)

    fit = _fit  # pt.Estimator's: training end to end

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

    # scoring, sentence-transformers' calls, PyTerrier's parameters and publishing: functions of the reranker
    autocast = scoring.autocast
    score_batch = scoring.score_batch
    score_texts = scoring.score_texts
    chunk_spans = scoring.chunk_spans
    explain = scoring.explain
    predict = pairs.predict
    rank = pairs.rank
    tunable_parameters = parameters.tunable_parameters
    get_parameter = parameters.get_parameter
    set_parameter = parameters.set_parameter
    parameter_problem = parameters.parameter_problem
    settle_parameters = parameters.settle_parameters
    save_pretrained = publishing.save_pretrained
    save_cross_encoder = publishing.save_cross_encoder
    push_to_hub = publishing.push_to_hub
    to_hf = publishing.to_hf


def _stored_fit_options(fit_options: dict, options: dict) -> dict:
    """``fit_options`` under a call's own: an explicit ``args=TrainingArguments(...)`` holds every setting,
    so only the stored data options (``text``, validation, ``callback``) still apply."""
    if options.get("args") is None:
        return fit_options
    from .training.arguments import DATA_OPTIONS

    return {k: v for k, v in fit_options.items() if k in DATA_OPTIONS}


def constructor_parameters(cls: type[LongDocReranker]) -> list[inspect.Parameter]:
    """The constructor's parameters: the source, the runtime options, then the fields of
    ``cls.Settings``, keyword-only, each with its type and default: the one list that
    ``inspect.signature``, the type stubs (``scripts/generate_stubs.py``) and the API reference show."""
    return entry_point_signature(cls, "__init__").parameters_without_first


def entry_point_signature(cls: type[LongDocReranker], name: str) -> _EntrySignature:
    """The signature of ``cls``'s entry point ``name`` (``ENTRY_POINTS``): the base function's own
    parameters, its ``**`` keywords replaced by those it passes on to the constructor (the runtime
    options it lacks, then the settings)."""
    function = ENTRY_POINTS[name]
    own = [p for p in inspect.signature(function).parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    names = {p.name for p in own}
    passed_on = [p for p in _RUNTIME_PARAMETERS + cls.Settings.parameters() if p.name not in names]
    returns = None if name == "__init__" else cls.__name__
    return _EntrySignature(own + passed_on, return_annotation=returns)


class _EntrySignature(inspect.Signature):
    @property
    def parameters_without_first(self) -> list[inspect.Parameter]:
        return list(self.parameters.values())[1:]


def _give_typed_entry_points(cls: type[LongDocReranker]) -> None:
    """``cls.__init__``, ``cls.from_pretrained`` and ``cls.from_hf`` with ``cls``'s own keywords, where it
    inherits the base's (a class that writes its own keeps it): ``inspect.signature(MaxP.from_pretrained)``
    lists MaxP's settings, not ``**overrides``. The code is the base's: the behaviour stays the same."""
    for name, original in ENTRY_POINTS.items():
        inherited = inspect.getattr_static(cls, name)
        function = getattr(inherited, "__func__", inherited)
        if getattr(function, "_typed_copy_of", function) is not original:
            continue
        copy = _with_signature(original, cls, entry_point_signature(cls, name))
        setattr(cls, name, copy if name == "__init__" else classmethod(copy))


def _document_settings(cls: type[LongDocReranker], arguments: bool = False) -> None:
    """The class's docstring lists its settings with what each means (``Settings.docs()``, written once
    beside each field): ``help(MaxP)`` and the API reference show them. The base's lists every constructor
    argument first (``arguments``: ``_CONSTRUCTOR_DOCS``, the runtime options' ``RUNTIME_OPTION_DOCS``)."""
    if cls.__doc__ is None or _SETTINGS_HEADING in cls.__doc__ or "\nArgs:\n" in cls.__doc__:
        return
    docs = cls.Settings.docs()
    lines = [f"    {p.name}: {docs[p.name]}" for p in cls.Settings.parameters()]
    heading = _SETTINGS_HEADING
    if arguments:  # the base: its constructor's own arguments, then the settings, in one Args section
        names = ["model_name_or_path"] + [p.name for p in _RUNTIME_PARAMETERS]
        heading = "\n\nArgs:\n" + "".join(
            textwrap.fill(f"{name}: {_CONSTRUCTOR_DOCS.get(name) or RUNTIME_OPTION_DOCS[name]}", 110,
                          initial_indent="    ", subsequent_indent="        ",
                          break_on_hyphens=False) + "\n" for name in names)
    cls.__doc__ = inspect.cleandoc(cls.__doc__) + heading + "\n".join(lines) + "\n"


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


# the functions whose ``**`` keywords are the constructor's, each given its class's signature
ENTRY_POINTS = {"__init__": LongDocReranker.__init__,
                "from_pretrained": LongDocReranker.__dict__["from_pretrained"].__func__,
                "from_hf": inspect.getattr_static(LongDocReranker, "from_hf").__func__}
_RUNTIME_PARAMETERS = [p for p in inspect.signature(LongDocReranker.__init__).parameters.values()
                       if p.name not in ("self", "model_name_or_path") and p.kind is not inspect.Parameter.VAR_KEYWORD]
_give_typed_entry_points(LongDocReranker)
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


def saved_model_class(source: str) -> type:
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

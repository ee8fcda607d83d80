"""The GPU check (issues 42, 67): MaxP over three encoder architectures, PARADE-Attn and an LLM
ranker in bf16 on one GPU, offline, in about two minutes.

For each model: documents per second with ``dtype="bf16"`` (weights held in bf16) and with
``"fp32"``, the peak GPU memory of each, and how bf16 agrees with fp32 (the largest score
difference and the mean Kendall tau of each query's ranking); and against its owners' code in bf16
on the same windows: ``CrossEncoder.predict`` for MaxP (the CrossEncoder saved from our MaxP by
``save_cross_encoder``, each document's best window) and transformers'
``AutoModelForSequenceClassification`` forward for LLMMaxP (the same id sequences). PARADE-Attn has
no outside implementation to run. Nothing is downloaded or carried: every model is its real
architecture with random weights, built from its config (``architectures.py``: MiniLM-L6,
BERT-base and ELECTRA-base under MaxP, MiniLM-L6 under PARADE-Attn, a small Llama under LLMMaxP;
``--llm PATH`` for a local checkpoint): speed, and how far bf16 moves the scores from fp32 (the
fidelity columns: the largest difference, also as a share of the fp32 scores' range, and the
Kendall tau of each query's ranking), depend on the architecture, not on trained weights.

    python benchmarks/gpu_check.py                       # cuda; writes benchmarks/results/gpu-check-<date>.txt/.json
    python benchmarks/gpu_check.py --device cpu --quick  # the smoke test: tiny models and sizes, no results file
    python benchmarks/gpu_check.py --device cpu-as-cuda --quick --results DIR   # the GPU script's test
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import _common as C  # noqa: E402
from zoo_speed import _max_per_doc, _windows, classifier_run  # noqa: E402


def peak_memory(run):
    """``run()``'s result and the peak GPU memory it allocated, in MB (None on the CPU)."""
    import torch

    if C.DEVICE == "cpu":
        return run(), None
    torch.cuda.synchronize(C.DEVICE)
    torch.cuda.reset_peak_memory_stats(C.DEVICE)
    result = run()
    torch.cuda.synchronize(C.DEVICE)
    return result, torch.cuda.max_memory_allocated(C.DEVICE) / 2 ** 20


def kendall_tau(frame, first: np.ndarray, second: np.ndarray) -> float:
    from scipy.stats import kendalltau

    taus = [kendalltau(first[rows], second[rows])[0] for rows in frame.groupby("qid").indices.values()]
    return float(np.nanmean(taus)) if taus else float("nan")


def reference_maxp(model, frame, directory: Path, batch_size: int):
    """``CrossEncoder.predict`` in bf16 of the (query, window) pairs our MaxP scores, as text (every
    word one token), and each document's best window."""
    import torch
    from sentence_transformers import CrossEncoder

    model.save_cross_encoder(directory)
    cross_encoder = CrossEncoder(str(directory), num_labels=1, device=C.DEVICE, activation_fn=torch.nn.Identity(),
                                 model_kwargs={"dtype": torch.bfloat16 if C.DEVICE != "cpu" else torch.float32})
    tokens = model.model.tokenizer.convert_ids_to_tokens
    queries, windows, doc_of = _windows(model, frame)
    pairs = [(" ".join(tokens(q)), " ".join(tokens(w))) for q, w in zip(queries, windows)]
    return lambda: _max_per_doc(np.asarray(cross_encoder.predict(pairs, batch_size=batch_size), dtype=float), doc_of)


def reference_llm(model, frame, path: str, batch_size: int):
    """transformers' forward in bf16 of the id sequences our LLMMaxP scores, each document's best."""
    import torch
    from transformers import AutoModelForSequenceClassification

    dtype = torch.bfloat16 if C.DEVICE != "cpu" else torch.float32
    reference = AutoModelForSequenceClassification.from_pretrained(path, dtype=dtype).to(C.DEVICE).eval()
    layout = model.model.layout
    queries, windows, doc_of = _windows(model, frame)
    sequences = [list(layout.prefix) + q + list(layout.middle) + w + list(layout.suffix)
                 for q, w in zip(queries, windows)]
    return classifier_run(reference, sequences, doc_of, batch_size, C.DEVICE)


def check(name: str, build, frame, reference, reps: int) -> dict:
    """One model: bf16 and fp32 speed and memory, their agreement, and the reference's speed and agreement."""
    half, full = build("bf16"), build("fp32")
    row = {"model": name, "documents": len(frame)}
    for label, model in (("bf16", half), ("fp32", full)):
        scores, memory = peak_memory(lambda model=model: C.score_fresh(model, frame))  # also the warm-up
        times = C.interleaved({label: lambda model=model: C.score_fresh(model, frame)}, reps)[label]
        row[f"{label}_scores"], row[f"{label}_docs_per_s"] = scores, len(frame) / C.median(times)
        row[f"{label}_peak_mb"] = memory
        row[f"{label}_weights"] = str(next(model.model.encoder.parameters()).dtype).removeprefix("torch.")
        C.instrument(model)  # after the timed rounds: on a GPU it waits for each encoder call's kernels
        _, stages = C.measured(lambda model=model: C.score_fresh(model, frame))
        row[f"{label}_shares"] = {"tokenize wait": stages.tokenize / stages.wall, "encoder": stages.encode / stages.wall,
                                  "plan + batches": (stages.plan + stages.batches) / stages.wall,
                                  "aggregator": stages.aggregate / stages.wall, "other": stages.other / stages.wall}
    row["bf16_vs_fp32_max_diff"] = float(np.abs(row["bf16_scores"] - row["fp32_scores"]).max())
    row["bf16_vs_fp32_relative"] = row["bf16_vs_fp32_max_diff"] / max(float(np.ptp(row["fp32_scores"])), 1e-12)
    row["bf16_vs_fp32_tau"] = kendall_tau(frame, row["bf16_scores"], row["fp32_scores"])
    if reference is not None:
        run = reference(half)
        expected = run()
        row["reference_docs_per_s"] = len(frame) / C.median(C.interleaved({"reference": run}, reps)["reference"])
        row["vs_reference_max_diff"] = float(np.abs(row["bf16_scores"] - expected).max())
    del row["bf16_scores"], row["fp32_scores"]
    return row


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), cuda:N, cpu, or cpu-as-cuda")
    parser.add_argument("--quick", action="store_true", help="tiny models and sizes (the smoke test); no results file")
    parser.add_argument("--llm", help="a local causal-LM sequence-classifier folder (default: a random Llama)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--results", help="where gpu-check-<date>.txt and .json go (default benchmarks/results; with "
                                          "--quick, nowhere unless given)")
    args = parser.parse_args(argv)
    try:
        C.use_device(args.device)
    except ValueError as error:
        print(error, file=sys.stderr)
        return 2
    started, threads = time.time(), C.set_threads(1 if C.DEVICE == "cpu" else 0)
    C.silence_loading()
    C.use_random_weights()
    warnings.simplefilter("ignore")  # the CPU smoke test's emulated bf16, the new heads' warnings
    tmp = Path(tempfile.mkdtemp())
    words = C.single_token_words(_tokenizer(C.tokenizer_path()))
    frame = C.make_corpus(words, n_queries=2 if args.quick else 32, docs_per_query=2 if args.quick else 16,
                          min_tokens=50 if args.quick else 200, max_tokens=150 if args.quick else 2000)
    reps = 1 if args.quick else args.reps
    rows = [check(name, build, frame, reference, reps) for name, build, reference in models(args, frame, tmp)]
    header = f"{C.run_header(threads)}; device {args.device}; {reps} rounds"
    text = C.table(["model", "docs", "bf16 docs/s", "fp32 docs/s", "bf16 peak MB", "fp32 peak MB", "bf16 weights",
                    "max |bf16 - fp32|", "of the fp32 range", "Kendall tau", "reference docs/s (bf16 on GPU)",
                    "max |ours - reference|"],
                   [[r["model"], r["documents"], r["bf16_docs_per_s"], r["fp32_docs_per_s"], r["bf16_peak_mb"] or "-",
                     r["fp32_peak_mb"] or "-", r["bf16_weights"], r["bf16_vs_fp32_max_diff"],
                     C.pct(r["bf16_vs_fp32_relative"]), r["bf16_vs_fp32_tau"], r.get("reference_docs_per_s", "-"),
                     r.get("vs_reference_max_diff", "-")] for r in rows],
                   title="bf16 against fp32 and against the owners' code (CrossEncoder.predict, transformers' forward)")
    shares = C.table(["model", "dtype", *rows[0]["fp32_shares"]],
                     [[r["model"], label, *(C.pct(v) for v in r[f"{label}_shares"].values())]
                      for r in rows for label in ("bf16", "fp32")],
                     title="Where the time goes (shares of one end-to-end call, the encoder's kernels waited for)")
    text += "\n\n" + shares
    took = f"took {time.time() - started:.0f} s"
    results = args.results or (None if args.quick else str(ROOT / "benchmarks" / "results"))
    return C.finish_run(results, "gpu-check", ".txt", header, text, rows, took)


def models(args, frame, tmp: Path) -> list:
    """(name, build(dtype), reference or None) of each model checked, from random weights."""
    import pyterrier_longdoc as pl

    runtime = {"device": C.DEVICE, "batch_size": args.batch_size, "seed": 0}
    encoders = {name: C.random_model(name, tiny=args.quick) for name in ("MiniLM-L6", "BERT-base", "ELECTRA-base")}
    llm = args.llm or C.random_model("Llama-small", tiny=args.quick)
    checked = [(f"MaxP ({name})", lambda dtype, path=path: pl.MaxP(path, dtype=dtype, **runtime),
                lambda model, name=name: reference_maxp(model, frame, tmp / f"cross-encoder-{name}", args.batch_size))
               for name, path in encoders.items()]
    checked.append(("PARADE-Attn (MiniLM-L6)",
                    lambda dtype: pl.ParadeAttn(encoders["MiniLM-L6"], dtype=dtype, **runtime), None))
    checked.append((f"LLMMaxP ({args.llm or 'Llama-small'})",
                    lambda dtype: pl.LLMMaxP(llm, dtype=dtype, lora=None, **runtime),
                    lambda model: reference_llm(model, frame, llm, args.batch_size)))
    return checked


def _tokenizer(folder: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


if __name__ == "__main__":
    sys.exit(main())

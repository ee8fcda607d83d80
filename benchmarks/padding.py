"""Length-sorted batching vs the same batches in input order (issue 2).

For MaxP over the same generated documents (200-3,000 tokens), prints sequences per second and the
fraction of padding tokens the encoder computes, with the engine's length-sorted batches and
with the same batch size in input order (each batch padded to its own longest sequence), plus
their ratios. FirstP (one window of up to 477 document tokens per document) is shown for
contrast. The two sides run interleaved in the same process; times are medians.

    python benchmarks/padding.py            # MiniLM-L6, about 1-2 minutes on 2 CPU cores
    python benchmarks/padding.py --quick    # tiny random BERT, a few seconds
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny random BERT, a few seconds (smoke test)")
    parser.add_argument("--model", help="encoder directory (default: MiniLM-L6, or a tiny BERT with --quick)")
    parser.add_argument("--docs", type=int, help="documents scored in the timed runs (default 12; 8 with --quick)")
    parser.add_argument("--reps", type=int, help="interleaved rounds (default 4; 2 with --quick)")
    parser.add_argument("--batch-size", type=int, default=16, help="sequences per encoder call (engine default 16)")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1; 0 = torch default)")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    import torch
    threads = C.set_threads(args.threads)
    C.silence_loading()
    from pyterrier_longdoc import FirstP, MaxP

    with tempfile.TemporaryDirectory() as tmp:
        if args.model:
            path, label = args.model, args.model
        elif args.quick:
            path, label = C.write_tiny_bert(Path(tmp) / "tiny"), "tiny random BERT (2 layers, width 32)"
        else:
            path, label = C.minilm_path(), "all-MiniLM-L6-v2"
        n_docs = args.docs or (8 if args.quick else 12)
        reps = args.reps or (2 if args.quick else 4)
        torch.manual_seed(0)
        maxp = MaxP(path, batch_size=args.batch_size)
        firstp = FirstP(path, batch_size=args.batch_size)
        C.instrument(maxp)
        words = C.single_token_words(maxp.model.tokenizer)
        frame = C.make_corpus(words, n_queries=max(1, n_docs // 4), docs_per_query=4, seed=1)[:n_docs]

        # timed: the same documents, both batchings, interleaved
        recorder = C.Recorder()
        sides = {}
        for order, policy in (("sorted", "length_sorted"), ("input", "input_order")):
            def run(policy=policy):
                maxp.model.batching = policy  # the engine's batch policy
                return C.score_fresh(maxp, frame)
            sides[order] = recorder.side(order, run)
        C.score_fresh(maxp, frame[:2])  # warm-up
        C.interleaved(sides, reps)

        # computed: padding of the engine's batches for larger sets (no encoder run)
        sizes = (n_docs, 100) if args.quick else (n_docs, 100, 1000)
        projected = []
        for model in (maxp, firstp):
            for n in sizes:
                big = frame if n == n_docs else C.make_corpus(words, n_queries=max(1, n // 100),
                                                                docs_per_query=min(n, 100), seed=2)[:n]
                projected.append((model.name, n, C.batch_padding(model, big, args.batch_size)))

    s, u = recorder.median_stats("sorted"), recorder.median_stats("input")
    per_round = [b / a for a, b in zip(recorder.walls("sorted"), recorder.walls("input"))]
    same = float(abs(recorder.results["sorted"] - recorder.results["input"]).max())
    rows = [[f"maxp, {order}", st.sequences, st.calls, f"{st.sequences / st.wall:.2f}", C.pct(st.padding),
             C.pct(st.encode / st.wall)] for order, st in (("length-sorted", s), ("input order", u))]
    rows.append(["RATIO sorted / input", "", "",
                 f"{C.median(per_round):.3f}x [{min(per_round):.2f}-{max(per_round):.2f}]",
                 f"{(u.padded_tokens / s.padded_tokens):.3f}x fewer tokens", ""])
    print(f"padding.py: MaxP (window 150, stride 100, <= 1431 doc tokens) on {label}; {len(frame)} generated "
          f"documents of 200-3000 tokens, queries of 2-10 tokens; batch size {args.batch_size}, fp32, "
          f"{threads} torch thread(s); {reps} interleaved rounds, medians; same scores both ways "
          f"(max abs diff {same:.1e})")
    print(C.table(["batching (timed)", "sequences", "encoder calls", "seq/s", "padding", "encoder share"], rows))
    print("seq/s ratio: median over rounds of time(input order)/time(length-sorted) [min-max over rounds]; "
          "padding = padding tokens / all tokens the encoder computed.")
    rows = [[name, n, p["sequences"], C.pct(p["sorted"]), C.pct(p["input"]), C.pct(p["longest"]),
             f"{(1 - p['sorted']) / (1 - p['input']):.3f}x"] for name, n, p in projected]
    print(C.table(["model", "documents", "sequences", "padding sorted", "padding input order",
                   "pad all to longest", "tokens input/sorted"], rows,
                  title="Padding of the engine's batches at larger sizes (batches built, encoder not run):"))
    print(f"total time {time.perf_counter() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

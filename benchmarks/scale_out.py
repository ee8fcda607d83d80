"""Scale-out on a Ray cluster (issue 45): ``RayScorer`` with 2 workers against one process, from
1,000 to 20,000 documents, side by side in one run.

Each size is timed in interleaved rounds: MaxP in this process (one torch thread) and
``RayScorer(maxp, workers=2)`` on a local Ray cluster of 2
one-thread workers, warm (its actors hold the model from an untimed first call, as in batch scoring
over many frames; the first call's cost is reported apart). Prints the speed-up per size, the
smallest size from which 2 workers beat one process, and whether they reach 1.6x at the largest.

    python benchmarks/scale_out.py                  # 1000,2000,5000,10000,20000 documents
    python benchmarks/scale_out.py --sizes 200,400 --quick   # the smoke test (no results file)

The model is a small random BERT (MiniLM's tokenizer, 2 layers of width 64): MiniLM would take
hours for 20,000 documents on 2 cores, and a small model is the hard case for scale-out (shipping
texts weighs more against less compute).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as C  # noqa: E402

TARGET = 1.6


def time_sizes(sizes, workers: int, reps: int, group_size: int, tmp: Path) -> list[dict]:
    import ray
    import torch

    from pyterrier_longdoc import MaxP
    from pyterrier_longdoc.scale_out import RayScorer

    path = C.write_tiny_bert(tmp / "bert", hidden=64, layers=2, intermediate=256)
    torch.manual_seed(0)
    maxp = MaxP(path, window=150, stride=100, batch_size=32)
    words = C.single_token_words(maxp.model.tokenizer)
    ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False,
             runtime_env={"env_vars": {"OMP_NUM_THREADS": "1"}})
    rows = []
    try:
        scorer = RayScorer(maxp, workers=workers, group_size=group_size)
        began = time.perf_counter()
        scorer(C.make_corpus(words, n_queries=1, docs_per_query=4, min_tokens=200, max_tokens=600, seed=1))
        first_call = time.perf_counter() - began
        for n in sizes:
            frame = C.make_corpus(words, n_queries=max(1, n // 100), docs_per_query=min(n, 100), min_tokens=200,
                                  max_tokens=600, seed=n)[:n]
            rows.append({"docs": n, **time_size(maxp, scorer, frame, reps), "first_call_s": first_call})
            print(f"{n} documents: one process {rows[-1]['one_s']:.1f} s, ray x{workers} {rows[-1]['ray_s']:.1f} s",
                  flush=True)
    finally:
        ray.shutdown()
    return rows


def time_size(maxp, scorer, frame, reps: int) -> dict:
    """One size: one process (one thread) against the warm scorer, interleaved."""
    import numpy as np

    scores = {}

    def one():
        maxp.model.tokenization.clear()  # the workers tokenize every call too
        scores["one"] = maxp(frame)

    def scaled():
        scores["ray"] = scorer(frame)

    times = C.interleaved({"one": one, "ray": scaled}, reps)
    a = scores["one"].set_index(["qid", "docno"])["score"]
    b = scores["ray"].set_index(["qid", "docno"])["score"].loc[a.index]
    return {"one_s": C.median(times["one"]), "ray_s": C.median(times["ray"]),
            "speedup": C.median(o / r for o, r in zip(times["one"], times["ray"])),
            "max_diff": float(np.abs(a.to_numpy() - b.to_numpy()).max())}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,2000,5000,10000,20000")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--group-size", type=int, default=2048, help="rows per task sent to a worker (2048)")
    parser.add_argument("--quick", action="store_true", help="the smoke test: one round, no results file")
    parser.add_argument("--results", default=str(Path(__file__).resolve().parent / "results"))
    args = parser.parse_args(argv)
    started = time.time()
    threads = C.set_threads(1)
    C.silence_loading()
    import tempfile

    sizes = [int(s) for s in args.sizes.split(",")]
    rows = time_sizes(sizes, args.workers, 1 if args.quick else args.reps, args.group_size,
                      Path(tempfile.mkdtemp()))
    pays = next((r["docs"] for r in rows if r["speedup"] > 1.0), None)
    largest = rows[-1]
    text = C.table(["docs", "one process s", f"ray x{args.workers} s", f"speed-up ray x{args.workers} / one process",
                    "max abs score diff"],
                   [[r["docs"], f"{r['one_s']:.2f}", f"{r['ray_s']:.2f}", f"{r['speedup']:.2f}x", f"{r['max_diff']:.0e}"]
                    for r in rows],
                   title=f"RayScorer(MaxP, workers={args.workers}, group_size={args.group_size}) against one process "
                         f"(medians of {1 if args.quick else args.reps} interleaved rounds; the actors' first call, "
                         f"untimed above: {rows[0]['first_call_s']:.1f} s)")
    verdict = (f"2 workers beat one process from {pays} documents on" if pays else "2 workers never beat one process")
    verdict += (f"; at {largest['docs']} documents {largest['speedup']:.2f}x (target >= {TARGET}x: "
                f"{'met' if largest['speedup'] >= TARGET else 'NOT met'})")
    header = f"{C.run_header(threads)}; Ray workers: {args.workers} of one thread each"
    return C.finish_run(None if args.quick else args.results, "scale-out", ".txt", header, text + "\n\n" + verdict,
                        rows, f"took {time.time() - started:.0f} s")


if __name__ == "__main__":
    sys.exit(main())

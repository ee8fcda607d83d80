"""Row 11 of benchmarks/run.py: peak memory of ``LongDoc`` over very long documents (issue 23).

``LongDoc(pt.apply.doc_score(...))`` scores 1, 10 and 100 documents of 1,000,000 characters each
(whitespace words, window 150, stride 75: about 1,700 passages per document), one fresh process
per size. Measured: peak RSS above the RSS with the input frame in memory (sampled every 5 ms, and
the kernel's own peak). Target: at most 8 x the documents' characters + 64 MB, i.e. linear in
the text (each passage's text exists a few times over: the passage list, the frame the scorer
gets, the scorer's output), never the document repeated once per passage (version 0.2.0: 1.8 GB
above the input for one document, 1,904 passages; killed at 20 GB for two).

    python benchmarks/longdoc_memory.py            # the three sizes, as the row prints them
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

SIZES = (1, 10, 100)
CHARS = 1_000_000


def target_mb(docs: int, chars: int) -> float:
    return (8 * docs * chars) / 2 ** 20 + 64


def rows(quick: bool = False) -> list:
    """The row's lines: one per size, each measured in its own process."""
    chars = CHARS // 10 if quick else CHARS
    found = []
    for docs in SIZES:
        result = subprocess.run([sys.executable, __file__, "--child", str(docs), "--chars", str(chars)],
                                capture_output=True, text=True, timeout=600,
                                env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"})
        if result.returncode != 0:
            problem = result.stderr.strip()[-200:]
            found.append(["11", f"LongDoc peak RSS, {docs} docs: could not run", problem, "-", "-"])
            continue
        measured = json.loads(result.stdout.strip().splitlines()[-1])
        limit = target_mb(docs, chars)
        found.append(["11", f"LongDoc peak RSS growth, {docs} doc(s) of {chars:,} chars "
                            f"({measured['passages']:,} passages, {measured['seconds']:.1f} s)",
                      f"{measured['growth_mb']:.0f} MB", f"<= {limit:.0f} MB", measured["growth_mb"] <= limit])
    return found


def measure(docs: int, chars: int) -> dict:
    """One size, in this process."""
    import resource
    import time

    import pandas as pd
    import pyterrier as pt

    from pyterrier_longdoc.wrap import LongDoc

    words = "castle river house door window book paper music song answer".split()
    text = " ".join(f"{words[i % 10]}{i % 7}" for i in range(chars // 7))[:chars]
    frame = pd.DataFrame({"qid": "q", "query": "castle", "docno": [f"d{i}" for i in range(docs)],
                          "text": [text] * docs})
    model = LongDoc(pt.apply.doc_score(lambda row: len(row["text"])), window_words=150, stride_words=75)
    page = os.sysconf("SC_PAGE_SIZE")

    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * page

    before, kernel_before = rss(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    peak, done = [before], threading.Event()

    def sample():
        while not done.wait(0.005):
            peak[0] = max(peak[0], rss())

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    started = time.perf_counter()
    passages = len(model.passages(text)) * docs
    out = model(frame)
    seconds = time.perf_counter() - started
    done.set()
    sampler.join()
    kernel_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    top = max(peak[0], rss(), kernel_after if kernel_after > kernel_before else 0)
    assert len(out) == docs
    return {"docs": docs, "chars": chars, "passages": passages, "seconds": seconds,
            "input_mb": before / 2 ** 20, "growth_mb": (top - before) / 2 ** 20}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="documents of 100,000 characters")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--chars", type=int, default=CHARS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(measure(args.child, args.chars)))
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import _common as C

    print(C.table(["#", "measure", "measured", "target", "met"], rows(args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

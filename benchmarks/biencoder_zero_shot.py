"""Bi-encoder rankers zero-shot on FOLDOC FarRelevant: FirstP vs MaxP, near and far.

    python benchmarks/biencoder_zero_shot.py               # 50 near + 50 far test queries, ~5 CPU minutes
    python benchmarks/biencoder_zero_shot.py --quick       # 5 + 5 queries: a smoke run

The packaged all-MiniLM-L6-v2 (a sentence-embedding model: mean pooling, normalised, cosine),
with no training at all, re-ranks the test candidates of ``benchmarks/effectiveness.py``'s FOLDOC
FarRelevant collection (the same documents, queries and candidates: each query's document with
its definition in the first 512 tokens (near) or after them (far), BM25's top other documents
and random ones). ``BiEncoderFirstP`` embeds the start of each document (256 tokens, the
model's input length), ``BiEncoderMaxP`` its windows of 150 tokens every 100. Reported beside
a random order and BM25 over the same candidates: RR per split, with a 95% t-interval over
queries. Writes ``benchmarks/results/biencoder-zero-shot-<date>.json`` and ``.md`` (machine,
date, commit, minutes) unless ``--no-save``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import effectiveness as E  # noqa: E402 - the FOLDOC FarRelevant collection, RR and the table

MODELS = {"bi-encoder FirstP": "BiEncoderFirstP", "bi-encoder MaxP": "BiEncoderMaxP"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5 test queries per split")
    parser.add_argument("--test-queries", type=int, default=None, help="per split (default 50)")
    parser.add_argument("--foldoc", default=None, help="path of foldoc.dict.dz (default: Debian's dict-foldoc)")
    parser.add_argument("--no-save", action="store_true", help="print only; write nothing into benchmarks/results")
    args = parser.parse_args(argv)
    args.hidden_term = False
    started, cpu_started = time.time(), E.cpu_minutes()
    import pyterrier_longdoc as pl

    sizes = dict(E.FULL, test_queries=args.test_queries or (5 if args.quick else E.FULL["test_queries"]))
    backbone = E._minilm()
    with tempfile.TemporaryDirectory() as scratch:  # BM25 indexes of the collection
        _, tests, _, description = E.foldoc_data(args, sizes, backbone, Path(scratch))
    scores, minutes = {}, {}
    for system, name in MODELS.items():
        model = getattr(pl, name)(backbone, dtype="fp32", batch_size=32)
        begun = time.time()
        # the output keeps the candidates' label column; the score is the model's
        scores[system] = {split: {0: E.reciprocal_ranks(model(frame))} for split, frame in tests.items()}
        minutes[system] = [(time.time() - begun) / 60]
    result = E.summarise(scores, tests, minutes, description)
    result.update(machine=E.machine(), date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
                  commit=_commit(), minutes_total=round((time.time() - started) / 60, 2),
                  cpu_minutes=round(E.cpu_minutes() - cpu_started, 2), backbone="all-MiniLM-L6-v2 (packaged)")
    report = (f"# Bi-encoders zero-shot on FOLDOC FarRelevant\n\n{description} (no training here: the collection's "
              f"training queries and passage triples go unused)\n\n{E.markdown(result)}\n\n"
              f"Scoring minutes: " + ", ".join(f"{k} {v[0]:.1f}" for k, v in minutes.items())
              + f". Machine: {result['machine']}; {result['date']}; commit {result['commit']}; "
              f"{result['minutes_total']:.1f} min in all ({result['cpu_minutes']:.1f} CPU minutes).\n")
    print(report)
    if not args.no_save and not args.quick:
        stem = HERE / "results" / f"biencoder-zero-shot-{result['date'][:10]}"
        stem.with_suffix(".json").write_text(json.dumps(result, indent=1))
        stem.with_suffix(".md").write_text(report)
    return 0


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())

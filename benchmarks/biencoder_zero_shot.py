"""Bi-encoder rankers zero-shot on the dictionaries' FarRelevant collections: FirstP vs MaxP, near and far.

    python benchmarks/biencoder_zero_shot.py      # GCIDE, FOLDOC and WordNet, 50 near + 50 far test queries each
    python benchmarks/biencoder_zero_shot.py --collections foldoc     # one collection
    python benchmarks/biencoder_zero_shot.py --quick --results /tmp/x # 6 + 6 queries per collection: a smoke run

The packaged all-MiniLM-L6-v2 (a sentence-embedding model: mean pooling, normalised, cosine),
with no training at all, re-ranks the test candidates of ``benchmarks/effectiveness.py``'s
FarRelevant collections (built by its ``dictionary_data`` with its sizes: the same documents,
queries and candidates: each query's document with its dictionary entry in the first 512 tokens
(near) or after them (far), BM25's top other documents and random ones). ``BiEncoderFirstP``
embeds the start of each document (256 tokens, the model's input length), ``BiEncoderMaxP`` its
windows of 150 tokens every 100. The near / far threshold is the collections' 512 tokens, so
near answers between token 254 and 512 lie beyond what this FirstP reads
(``tutorials/07_biencoder_zero_shot.ipynb`` puts the threshold at what it reads). Reported
beside a random order (its exact expected RR) and BM25 over the same candidates: RR per split,
with a 95% t-interval over queries. Writes
``biencoder-zero-shot-<collection>.json`` and ``.md`` (machine, date, commit, time taken) into
``--results`` (default ``benchmarks/results``; a ``--quick`` run writes only where ``--results``
says) unless ``--no-save``.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import effectiveness as E  # noqa: E402 - the dictionaries' FarRelevant collections, RR, tables, results files

MODELS = {"bi-encoder FirstP": "BiEncoderFirstP", "bi-encoder MaxP": "BiEncoderMaxP"}
BACKBONE = "all-MiniLM-L6-v2 (packaged)"


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collections", default=",".join(E.COLLECTIONS), help="comma-separated: gcide, foldoc, wn")
    parser.add_argument("--quick", action="store_true",
                        help="effectiveness.py's quick sizes (6 test queries per split), the real MiniLM")
    parser.add_argument("--test-queries", type=int, default=None, help="per split (default 50; --quick 6)")
    parser.add_argument("--dictionary", action="append", default=[], metavar="NAME=PATH",
                        help="a dictd .dict.dz file for a collection (default: Debian's /usr/share/dictd/NAME.dict.dz)")
    parser.add_argument("--results", default=None,
                        help="folder of the results files (default benchmarks/results; --quick: none unless given)")
    parser.add_argument("--no-save", action="store_true", help="print only; write no results file")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    started = time.time()
    collections = [c.strip() for c in args.collections.split(",") if c.strip()]
    paths = dict(item.split("=", 1) for item in args.dictionary)
    E.check_prerequisites(collections, paths, None)
    sizes = dict(E.QUICK if args.quick else E.FULL)
    if args.test_queries:
        sizes["test_queries"] = args.test_queries
    results = None if args.no_save else (Path(args.results) if args.results else
                                         None if args.quick else HERE / "results")
    if results is not None:
        results.mkdir(parents=True, exist_ok=True)
    backbone = E._minilm()
    for name in collections:
        result, report = run_collection(name, paths.get(name), sizes, backbone)
        print(report, flush=True)
        if results is not None:
            stem = results / f"biencoder-zero-shot-{name}"
            E.write_result(stem, result, result["minutes_total"], "fp32", [0], report)
            print(f"(written: {stem}.json and .md)", flush=True)
    print(f"Machine: {E.machine()}; {len(collections)} collection(s) in {(time.time() - started) / 60:.1f} min "
          f"({E.cpu_minutes():.1f} CPU minutes).")
    return 0


def run_collection(name: str, path: str | None, sizes: dict, backbone: str) -> tuple[dict, str]:
    """One collection: its table (``effectiveness.summarise``'s, with the time taken) and its report."""
    import pyterrier_longdoc as pl

    started, cpu_started = time.time(), E.cpu_minutes()
    with tempfile.TemporaryDirectory() as scratch:  # BM25 indexes of the collection
        data = E.dictionary_data(name, path, sizes, backbone, Path(scratch))
    tests, description = data["tests"], data["description"]
    scores, minutes = E.baselines(tests), {}
    for system, model_name in MODELS.items():
        model = getattr(pl, model_name)(backbone, dtype="fp32", batch_size=32)
        begun = time.time()
        # the candidates keep their label column; the score is the model's (BM25's is replaced)
        scores[system] = {split: {0: E.reciprocal_ranks(model(frame))} for split, frame in tests.items()}
        minutes[f"{system}, wall"] = [(time.time() - begun) / 60]
    result = E.summarise(scores, minutes, description)
    result.update(collection=name, backbone=BACKBONE, minutes_total=round((time.time() - started) / 60, 2),
                  cpu_minutes=round(E.cpu_minutes() - cpu_started, 2))
    report = (f"# Bi-encoders zero-shot on {name} FarRelevant\n\n{description} (no training here: the "
              f"collection's training queries and passage triples go unused; backbone {BACKBONE})\n\n"
              f"{E.markdown(result)}\n\nScoring minutes (wall): "
              + ", ".join(f"{k.removesuffix(', wall')} {v[0]:.1f}" for k, v in minutes.items())
              + f"; {result['minutes_total']:.1f} min in all ({result['cpu_minutes']:.1f} CPU minutes).\n")
    return result, report


if __name__ == "__main__":
    sys.exit(main())

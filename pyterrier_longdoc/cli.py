"""``pyterrier-longdoc demo | train | rerank``: the library from the shell, on TREC-format files."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd


def read_topics(path: str) -> pd.DataFrame:
    """TREC topic files (``<top>``) or one ``qid<TAB>query`` (or ``qid query``) per line."""
    import pyterrier as pt

    head = Path(path).read_text(errors="replace")[:4096]
    return pt.io.read_topics(path, format="trec" if "<top>" in head.lower() else "singleline")


def read_documents(path: str) -> pd.DataFrame:
    """``docno<TAB>text`` lines (.tsv) or JSON lines with ``docno`` and ``text`` (.jsonl)."""
    if path.endswith((".jsonl", ".json")):
        docs = pd.read_json(path, lines=True, dtype={"docno": str})
    else:
        docs = pd.read_csv(path, sep="\t", names=["docno", "text"], dtype=str, keep_default_na=False,
                           quoting=3, on_bad_lines="error")
    missing = {"docno", "text"} - set(docs.columns)
    if missing:
        raise SystemExit(f"{path}: documents need docno and text, missing {sorted(missing)}")
    return docs[["docno", "text"]]


def candidates_with_text(run: str, topics: pd.DataFrame, docs: pd.DataFrame) -> pd.DataFrame:
    import pyterrier as pt

    results = pt.io.read_results(run).astype({"qid": str, "docno": str})
    frame = results.merge(topics.astype({"qid": str}), on="qid").merge(docs, on="docno", how="left")
    absent = frame.loc[frame["text"].isna(), "docno"].unique()
    if len(absent):
        raise SystemExit(f"{len(absent)} documents of {run} are not in the documents file, e.g. {list(absent[:5])}")
    return frame


def parse_settings(pairs: list[str]) -> dict:
    """``key=value`` pairs; values are JSON when they parse (numbers, null), else strings."""
    settings = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep:
            raise SystemExit(f"--set takes key=value, got {pair!r}")
        try:
            settings[key] = json.loads(value)
        except json.JSONDecodeError:
            settings[key] = value
    return settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pyterrier-longdoc", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    demo = commands.add_parser("demo", help="train and compare FirstP, MaxP and PARADE-Attn on generated data, offline")
    demo.add_argument("--output", default="demo-output", help="where the index, models and plot go")
    demo.add_argument("--quick", action="store_true", help="a tiny collection, for a smoke test")
    demo.add_argument("--backbone", help="a local encoder directory (default: the packaged MiniLM)")
    demo.add_argument("--seeds", type=int, help="instead: FirstP against MaxP over this many seeds, with gains")
    demo.add_argument("--dtype", default="auto", choices=["auto", "bf16", "fp32"],
                      help="precision (default auto: bf16 on CPUs with native bf16, else fp32)")

    runtime = argparse.ArgumentParser(add_help=False)
    runtime.add_argument("--topics", required=True, help="TREC topics, or qid<TAB>query lines")
    runtime.add_argument("--run", required=True, help="first-stage results in TREC run format")
    runtime.add_argument("--docs", required=True, help="documents: docno<TAB>text lines or JSON lines")
    runtime.add_argument("--batch-size", type=int, default=16)
    runtime.add_argument("--device")
    runtime.add_argument("--dtype", help="bf16, fp16 or fp32")

    train = commands.add_parser("train", parents=[runtime], help="fine-tune a model end to end and save it")
    train.add_argument("--model", required=True, help="a model name (maxp, parade_attn, ...)")
    train.add_argument("--backbone", required=True, help="a HuggingFace encoder (hub id or directory)")
    train.add_argument("--qrels", required=True, help="TREC qrels")
    train.add_argument("--output", required=True, help="directory to save the trained model to")
    train.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="model settings, e.g. window=150")
    train.add_argument("--epochs", type=int, default=1)
    train.add_argument("--checkpoint-dir", help="resumable training checkpoints")
    train.add_argument("--fit", nargs="*", default=[], metavar="KEY=VALUE", help="fit options, e.g. lr=2e-5")

    rerank = commands.add_parser("rerank", parents=[runtime], help="re-rank a run with a saved model")
    rerank.add_argument("--model", required=True, help="a saved pyterrier_longdoc model directory")
    rerank.add_argument("--output", required=True, help="the re-ranked run, TREC format")
    rerank.add_argument("--name", default="pyterrier_longdoc", help="the run tag")

    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import run, run_seeds

        if args.seeds:
            run_seeds(args.output, seeds=args.seeds, quick=args.quick, backbone=args.backbone, dtype=args.dtype)
        else:
            run(args.output, quick=args.quick, backbone=args.backbone, dtype=args.dtype)
        return 0

    import pyterrier as pt

    from ._reranker import LongDocReranker, model_class

    topics = read_topics(args.topics)
    candidates = candidates_with_text(args.run, topics, read_documents(args.docs))
    runtime_options = dict(batch_size=args.batch_size, device=args.device, dtype=args.dtype, verbose=True)
    if args.command == "train":
        model = model_class(args.model)(args.backbone, **runtime_options, **parse_settings(args.set))
        model.fit(topics, pt.io.read_qrels(args.qrels), candidates, epochs=args.epochs,
                  checkpoint_dir=args.checkpoint_dir, **parse_settings(args.fit))
        model.save_pretrained(args.output)
        print(f"saved {model!r} to {args.output}")
    else:
        model = LongDocReranker.from_pretrained(args.model, **runtime_options)
        pt.io.write_results(model(candidates), args.output, run_name=args.name)
        print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

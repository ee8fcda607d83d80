"""Effectiveness of the CPU-scale recipe: a passage warm-up, then document-level ``fit``.

    python benchmarks/effectiveness.py                    # FOLDOC FarRelevant + synthetic, 3 seeds
    python benchmarks/effectiveness.py --quick            # tiny random BERT, seconds: a smoke run

The recipe, from the packaged MiniLM (all-MiniLM-L6-v2, no ranking head):
1. passage stage: ``train_passage_ranker`` (sentence-transformers' CrossEncoderTrainer, margin
   loss, lr 1e-4, 100 steps of 8) on (query, relevant passage, negative) triples of queries that
   are in no document collection below (FOLDOC: one BM25 hard negative and one random entry per
   query);
2. document stage: FirstP, MaxP and ParadeAttn start from that cross-encoder and are fitted
   with ``model.fit`` on the training queries' candidates (one epoch, lr 1e-4, head lr 5e-4); on
   FOLDOC, FirstP on the near training queries only, for four epochs, and PARADE-Attn's encoder
   at lr 3e-5 for three epochs (see ``document_stage``).
Zero-shot MaxP and FirstP (the warm start, no document training) are evaluated too.

Collections:
(b) FOLDOC FarRelevant: definitional queries ("what is <term>") over the Free On-line
    Dictionary of Computing (``pyterrier_longdoc.foldoc``), entries as a dictionary prints them,
    headword first (``foldoc_task(hide_term=False)``; ``--hidden-term`` runs the harder variant in
    which the definition never names its term), turned into documents of prose entries by
    ``build_far_relevant``: the relevant entry sits in the first 512 tokens (near queries) or
    after them (far queries); each query's candidates are its document, BM25's top other
    documents and random ones. Half the 100 training queries are near, half far.
(a) the synthetic collection (``pyterrier_longdoc.synthetic.make_collection``), whose passage
    stage uses its training topics' answer passages.

Reported: RR of each system per split, the mean over seeds with a 95% confidence interval
(t-interval over the queries of the seed-averaged per-query RR) and the range of the per-seed
means; a random order (its expected RR, ``H(n) / n`` for n candidates) and BM25 over the same
candidates. The targets of the recipe on (b) are checked and printed. Writes ``results.json``
(every per-seed, per-query value) into ``--output``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import warnings
import zlib
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import pandas as pd

warnings.filterwarnings("ignore")

MODELS = ("FirstP", "MaxP", "ParadeAttn")
FILLER_WORDS = 15
# CPU-scale sizes; --quick shrinks everything for a smoke run with a tiny random BERT.
FULL = dict(
    warmup_queries=400, warmup_steps=100, warmup_lr=1e-4, warmup_batch=8,
    train_queries=100, test_queries=50, max_doc_tokens=720, retrieved=5, random=4,
    fit=dict(epochs=1, lr=1e-4, head_lr=5e-4, warmup=0.1, queries_per_step=4, negatives=1, top_k=10),
    # FOLDOC's per-model settings (see document_stage); the synthetic collection trains all alike
    foldoc_models={"FirstP": {"near_only": True, "epochs": 4}, "ParadeAttn": {"lr": 3e-5, "epochs": 3}},
    windows=dict(window=240, stride=240),  # three disjoint windows cover a 720-token document
    synthetic=dict(n_queries=160, test_fraction=0.625, doc_words=(600, 700), far_start=530),
    synthetic_candidates=6,
)
QUICK = dict(
    warmup_queries=16, warmup_steps=4, warmup_lr=1e-3, warmup_batch=4,
    train_queries=8, test_queries=6, max_doc_tokens=720, retrieved=3, random=2,
    fit=dict(epochs=1, lr=1e-4, head_lr=1e-3, warmup=0.1, queries_per_step=4, negatives=1, top_k=6),
    foldoc_models={"FirstP": {"near_only": True, "epochs": 2}, "ParadeAttn": {"lr": 3e-5, "epochs": 2}},
    windows=dict(window=200, stride=150),
    synthetic=dict(n_queries=16, test_fraction=0.5, doc_words=(600, 700), far_start=530),
    synthetic_candidates=4,
)


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--collections", default="foldoc,synthetic", help="comma-separated: foldoc, synthetic")
    parser.add_argument("--output", default="effectiveness-output", help="folder for models, indexes, results.json")
    parser.add_argument("--quick", action="store_true", help="tiny random BERT, tiny sizes: a smoke run")
    parser.add_argument("--backbone", default=None, help="default: the packaged MiniLM")
    parser.add_argument("--dtype", default=None, choices=["fp32", "bf16"],
                        help="default: bf16 on CPUs with native bf16, else fp32")
    parser.add_argument("--foldoc", default=None, help="path of foldoc.dict.dz (default: Debian's dict-foldoc)")
    parser.add_argument("--hidden-term", action="store_true",
                        help="FOLDOC's harder variant: each definition has its term replaced by 'this', so only "
                             "a model that knows what the term means finds it (foldoc_task(hide_term=True))")
    parser.add_argument("--test-queries", type=int, help="FOLDOC test queries per split (default 50)")
    parser.add_argument("--train-queries", type=int, help="FOLDOC document-stage training queries, half near, half far (default 100)")
    parser.add_argument("--seed-list", help="comma-separated seeds, instead of --seeds (e.g. 1,2 in a second process)")
    parser.add_argument("--merge", nargs="+", metavar="RESULTS_JSON",
                        help="combine the FOLDOC results.json of runs over other seeds (each --seed-list) into one "
                             "table in --output, instead of running")
    parser.add_argument("--shared-passage-stage", action="store_true",
                        help="one passage stage (seed 0) shared by every seed's document stage: faster, and the "
                             "intervals then leave out the passage stage's variance")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)
    started = time.time()
    import torch

    from pyterrier_longdoc._runtime import native_bf16_cpu

    sizes = dict(QUICK if args.quick else FULL)
    for name in ("test_queries", "train_queries"):
        if getattr(args, name) is not None:
            sizes[name] = getattr(args, name)
    output = Path(args.output)
    output.mkdir(parents=True, exist_ok=True)
    backbone = args.backbone or (_tiny_backbone(output) if args.quick else _minilm())
    dtype = args.dtype or ("bf16" if native_bf16_cpu() else "fp32")
    seeds = [int(k) for k in args.seed_list.split(",")] if args.seed_list else list(range(args.seeds))
    if args.merge:
        return merge_runs(args, sizes, backbone, output)
    print(f"# Effectiveness of the passage-then-document recipe\n\nbackbone {backbone}, dtype {dtype}, "
          f"seeds {seeds}, torch threads {torch.get_num_threads()}", flush=True)

    results = {"machine": machine(), "dtype": dtype, "seeds": seeds, "sizes": _jsonable(sizes),
               "shared_passage_stage": args.shared_passage_stage, "collections": {}}
    for name in args.collections.split(","):
        build = {"foldoc": foldoc_benchmark, "synthetic": synthetic_benchmark}.get(name.strip())
        if build is None:
            raise SystemExit(f"unknown collection {name!r}; use foldoc and/or synthetic")
        results["collections"][name] = build(args, sizes, backbone, dtype, seeds, output)
        (output / "results.json").write_text(json.dumps(results, indent=1))

    minutes = (time.time() - started) / 60
    results["minutes"] = minutes
    (output / "results.json").write_text(json.dumps(results, indent=1))
    print(f"\nMachine: {results['machine']}; the whole benchmark took {minutes:.1f} min "
          f"({cpu_minutes():.1f} CPU minutes; load average at the end {os.getloadavg()[0]:.1f}).")
    return exit_status([t for c in results["collections"].values() for t in c.get("targets", [])], args.quick)


def exit_status(targets: list[dict], quick: bool) -> int:
    """1 when a target of a full run failed ("info" rows, passed None, never fail)."""
    return 1 if any(t["passed"] is False for t in targets) and not quick else 0


# ---------------------------------------------------------------------------------------------
# the recipe


def warm_up(backbone: str, triples: pd.DataFrame, directory: Path, sizes: dict, seed: int,
            dtype: str) -> tuple[str, float, float]:
    """The passage stage, in the benchmark's dtype; returns the CrossEncoder folder and the wall and
    CPU minutes it took (when it was trained, for a reused one)."""
    from pyterrier_longdoc.training.passage import train_passage_ranker

    options = dict(steps=sizes["warmup_steps"], lr=sizes["warmup_lr"], batch_size=sizes["warmup_batch"],
                   max_length=256, seed=seed, bf16=dtype == "bf16")
    content = zlib.crc32("\n".join(triples["query"] + "\t" + triples["positive"] + "\t" + triples["negative"]).encode())
    stamp = {"backbone": str(backbone), "triples": len(triples), "crc32": content, **options}
    record = Path(directory) / "passage-stage.json"
    if record.exists() and json.loads(record.read_text())["stamp"] == stamp:  # a resumed benchmark
        print(f"(passage stage of seed {seed} reused from {directory})")
        saved = json.loads(record.read_text())
        return str(directory), saved["minutes"], saved.get("cpu_minutes", saved["minutes"])
    started, cpu = time.time(), cpu_minutes()
    path = train_passage_ranker(backbone, triples, directory, **options)
    minutes, cpu = (time.time() - started) / 60, cpu_minutes() - cpu
    record.write_text(json.dumps({"stamp": stamp, "minutes": minutes, "cpu_minutes": cpu}))
    return path, minutes, cpu


def cpu_minutes() -> float:
    """CPU minutes of this process (all threads): on a shared machine, divided by the cores it is
    what the wall time of an idle machine would be."""
    return time.process_time() / 60


def document_stage(cls, warm_start: str, train: dict, sizes: dict, dtype: str, seed: int, fit: bool = True):
    """A model of class ``cls`` over the warm start, fitted on ``train`` unless ``fit`` is False,
    with ``sizes["fit"]`` updated by the model's entry of ``sizes["models"]``.

    On FOLDOC (``foldoc_models``, each chosen on seed 0, one at a time):
    - FirstP fits on the near training queries only (``train["near"]``), for four epochs: a far
      document's first 512 tokens hold no answer, and trained on them too FirstP learned to rank
      the documents that mention the query's term below the others (RR 0.384 on near test
      queries after one epoch on both halves, below a random order's 0.402; 0.779 after four
      epochs on the near half). The papers train it on MS MARCO, where answers sit early.
    - PARADE-Attn fits its encoder at 3e-5 (the demo's rate), for three epochs (75 steps): at
      1e-4 it ended near a random order (0.43 near); at 3e-5 it reached 0.78 near, 0.74 far after
      one epoch, 0.85/0.82 after two, 0.93/0.84 after three (seed 0; its fit takes about 9 CPU
      minutes, within the budget with the passage stage's 3.8)."""
    import torch

    torch.manual_seed(seed)  # a fresh head is drawn at construction
    firstp = cls.__name__ == "FirstP"
    model = cls(warm_start, dtype=dtype, batch_size=16, max_doc_tokens=sizes["max_doc_tokens"],
                **({} if firstp else sizes["windows"]))
    if fit:
        options = dict(sizes.get("models", {}).get(cls.__name__, {}))
        data = train["near"] if options.pop("near_only", False) else train
        model.fit(data["topics"], data["qrels"], data["candidates"], **{**sizes["fit"], **options, "seed": seed})
    return model


def training_data(candidates: pd.DataFrame, near_qids) -> dict:
    """``fit``'s topics, qrels and candidates, for all training queries and (``"near"``) for the near ones."""
    def frames(rows):
        rows = rows.reset_index(drop=True)
        return {"topics": rows[["qid", "query"]].drop_duplicates().reset_index(drop=True),
                "qrels": rows[["qid", "docno", "label"]], "candidates": rows}

    return {**frames(candidates), "near": frames(candidates[candidates["qid"].isin(set(near_qids))])}


def run_recipe(backbone: str, warmup_triples: pd.DataFrame, train: dict, tests: dict[str, pd.DataFrame], sizes: dict,
               dtype: str, seeds: list[int], output: Path, shared: bool = False,
               progress=None) -> tuple[dict, dict]:
    """Per-query RR of every system, seed and split: ``{system: {split: {seed: {qid: rr}}}}``;
    and the minutes each stage took per seed."""
    from pyterrier_longdoc import FirstP, MaxP, ParadeAttn

    classes = {"FirstP": FirstP, "MaxP": MaxP, "ParadeAttn": ParadeAttn}
    scores: dict = {}
    minutes: dict = {}
    for seed in seeds:
        if not shared or seed == seeds[0]:
            passage_seed = 0 if shared else seed
            warm_start, took, cpu = warm_up(backbone, warmup_triples, output / f"passage-seed{passage_seed}", sizes,
                                            passage_seed, dtype)
            minutes.setdefault("passage stage", []).append(took)
            minutes.setdefault("passage stage, CPU", []).append(cpu)
            print(f"seed {seed}: passage stage {took:.1f} min", flush=True)
        zero_shot = [("zero-shot FirstP", FirstP, False), ("zero-shot MaxP", MaxP, False)]
        if not keeps_head(warm_start):
            if seed == seeds[0]:
                print("(no zero-shot rows: this version of the library does not keep a CrossEncoder's head)")
            zero_shot = []
        for label, cls, fit in [*zero_shot, *[(name, classes[name], True) for name in MODELS]]:
            started, cpu = time.time(), cpu_minutes()
            model = document_stage(cls, warm_start, train, sizes, dtype, seed, fit=fit)
            if fit:
                minutes.setdefault(f"fit {label}", []).append((time.time() - started) / 60)
                minutes.setdefault(f"fit {label}, CPU", []).append(cpu_minutes() - cpu)
            for split, candidates in tests.items():
                scores.setdefault(label, {}).setdefault(split, {})[seed] = reciprocal_ranks(model(candidates))
            print(f"seed {seed}: {label} {time.time() - started:.0f} s  " + "  ".join(
                f"{split} RR {np.mean(list(scores[label][split][seed].values())):.3f}" for split in tests), flush=True)
            del model
        if progress is not None:  # results so far, in case the run is cut short
            progress(scores, minutes)
    return scores, minutes


def keeps_head(cross_encoder: str) -> bool:
    """Whether MaxP over a CrossEncoder folder scores a short pair as the CrossEncoder does
    (a library version that keeps the trained head), rather than with a fresh random head."""
    import torch
    from sentence_transformers import CrossEncoder

    from pyterrier_longdoc import MaxP

    pair = ("what is a compiler", "a program that translates source code into machine code")
    expected = float(CrossEncoder(cross_encoder).predict([pair], activation_fn=torch.nn.Identity())[0])
    model = MaxP(cross_encoder, dtype="fp32")
    frame = pd.DataFrame({"qid": ["q"], "query": [pair[0]], "docno": ["d"], "text": [pair[1]]})
    return abs(float(model(frame)["score"].iloc[0]) - expected) < 1e-3


def reciprocal_ranks(run: pd.DataFrame) -> dict[str, float]:
    """RR of the first relevant candidate per query (``label`` column), ties broken by input order."""
    ranked = run.sort_values(["qid", "score"], ascending=[True, False], kind="stable")
    out = {}
    for qid, group in ranked.groupby("qid", sort=False):
        hits = np.flatnonzero(group["label"].to_numpy() > 0)
        out[str(qid)] = 1.0 / (hits[0] + 1) if len(hits) else 0.0
    return out


def random_rr(candidates: pd.DataFrame) -> dict[str, float]:
    """The expected RR of a random order: for one relevant among n candidates, H(n) / n."""
    out = {}
    for qid, group in candidates.groupby("qid"):
        n, relevant = len(group), int((group["label"] > 0).sum())
        if not relevant:  # the first stage missed it
            out[str(qid)] = 0.0
            continue
        # expected 1 / (rank of the first of r relevant among n): sum over k of P(first at k) / k
        probabilities = [_first_at(k, n, relevant) for k in range(1, n - relevant + 2)]
        out[str(qid)] = float(sum(p / k for k, p in enumerate(probabilities, 1)))
    return out


def _first_at(k: int, n: int, r: int) -> float:
    from math import comb

    return comb(n - k, r - 1) / comb(n, r)


# ---------------------------------------------------------------------------------------------
# (b) FOLDOC FarRelevant


def foldoc_benchmark(args, sizes, backbone, dtype, seeds, output: Path) -> dict:
    train, tests, warmup_triples, description = foldoc_data(args, sizes, backbone, output)
    print(f"\n## (b) {description}", flush=True)

    def progress(scores, minutes):
        partial = summarise(scores, tests, minutes, description)
        (output / "foldoc-partial.json").write_text(json.dumps(partial, indent=1))
        print(markdown(partial), flush=True)

    sizes = {**sizes, "models": sizes["foldoc_models"]}
    scores, minutes = run_recipe(backbone, warmup_triples, train, tests, sizes, dtype, seeds, output / "foldoc",
                                 args.shared_passage_stage, progress)
    result = foldoc_result(scores, tests, minutes, description)
    _print(result)
    return result


def foldoc_result(scores: dict, tests: dict, minutes: dict, description: str) -> dict:
    """The FOLDOC table (see ``summarise``) with the recipe's targets checked."""
    result = summarise(scores, tests, minutes, description)
    result["targets"] = check_targets(result["table"])
    return result


def merge_runs(args, sizes, backbone, output: Path) -> int:
    """``--merge``: one FOLDOC table from runs over disjoint seeds (the same options otherwise)."""
    parts = [json.loads(Path(f).read_text()) for f in args.merge]
    scores, minutes, seeds = {}, {}, []
    for part in parts:
        if set(part["collections"]) != {"foldoc"}:
            raise SystemExit(f"--merge combines FOLDOC runs only; got {sorted(part['collections'])}")
        if part["sizes"] != parts[0]["sizes"] or part["dtype"] != parts[0]["dtype"]:
            raise SystemExit("--merge: the runs differ in their sizes or dtype")
        seeds += part["seeds"]
        run = part["collections"]["foldoc"]
        for system, by_split in run["per_query"].items():
            for split, by_seed in by_split.items():
                scores.setdefault(system, {}).setdefault(split, {}).update({int(k): v for k, v in by_seed.items()})
        for stage, values in run["minutes"].items():
            if not (stage.startswith("passage stage") and part.get("shared_passage_stage") and stage in minutes):
                minutes.setdefault(stage, []).extend(values)  # a shared passage stage is counted once
    if len(set(seeds)) != len(seeds):
        raise SystemExit(f"--merge: a seed appears twice ({sorted(seeds)})")
    _, tests, _, description = foldoc_data(args, sizes, backbone, output)
    result = foldoc_result(scores, tests, minutes, description)
    results = {"machine": parts[0]["machine"], "dtype": parts[0]["dtype"], "seeds": sorted(seeds),
               "sizes": parts[0]["sizes"], "shared_passage_stage": parts[0].get("shared_passage_stage"),
               "collections": {"foldoc": result}, "minutes": [p["minutes"] for p in parts]}
    (output / "results.json").write_text(json.dumps(results, indent=1))
    _print(result)
    return exit_status(result["targets"], args.quick)


def foldoc_data(args, sizes, backbone, output: Path) -> tuple[dict, dict, pd.DataFrame, str]:
    """FOLDOC FarRelevant: the document stage's training data, the near and far test candidates,
    the passage stage's triples and a description."""
    from pyterrier_longdoc.diagnostics import build_far_relevant
    from pyterrier_longdoc.foldoc import foldoc_task

    started = time.time()
    task = foldoc_task(args.foldoc or _foldoc_default(), vocabulary=backbone, hide_term=args.hidden_term)
    known = task.queries[task.queries["known"]].sample(frac=1.0, random_state=0)
    other = task.queries[~task.queries["known"]].sample(frac=1.0, random_state=0)
    n_train, n_test = sizes["train_queries"], sizes["test_queries"]
    if len(known) < n_train + 2 * n_test:
        raise SystemExit(f"FOLDOC has {len(known)} eligible queries, fewer than the {n_train + 2 * n_test} needed")
    # half the training queries are far ones: MaxP and PARADE learn to find the entry anywhere.
    # (Measured with 60 near training queries only: MaxP stayed below its zero-shot RR.)
    groups = {"near": pd.concat([known.iloc[:n_train // 2], known.iloc[n_train:n_train + n_test]]),
              "far": pd.concat([known.iloc[n_train // 2:n_train], known.iloc[n_train + n_test:n_train + 2 * n_test]])}
    train_qids = set(known.iloc[:n_train]["qid"])

    # documents of prose: fillers of at least FILLER_WORDS words (FOLDOC also has one-line
    # cross-references such as "avi: AVI"), every relevant entry kept whatever its length
    words = task.passages["text"].str.split().str.len()
    prose = task.passages[(words >= FILLER_WORDS) | task.passages["docno"].isin(task.qrels["docno"])]
    collections = {}
    for variant, queries in groups.items():
        retriever = _PisaRetriever(output / f"foldoc-{variant}-index")
        collections[variant] = build_far_relevant(
            prose, queries[["qid", "query"]], task.qrels, tokenizer=backbone, variant=variant,
            max_doc_tokens=sizes["max_doc_tokens"], negatives=sizes["random"], retriever=retriever,
            retrieved_negatives=sizes["retrieved"], seed=0)
        collections[variant].candidates = _with_bm25(collections[variant].candidates, retriever.bm25)
    candidates = pd.concat([c.candidates for c in collections.values()], ignore_index=True)
    documents = pd.concat([c.documents for c in collections.values()], ignore_index=True)
    tests = {variant: c.candidates[~c.candidates["qid"].isin(train_qids)].reset_index(drop=True)
             for variant, c in collections.items()}
    train = training_data(candidates[candidates["qid"].isin(train_qids)], known.iloc[:n_train // 2]["qid"])

    # the passage stage trains on queries no document collection holds (unused known terms last)
    unused = pd.concat([other, known.iloc[n_train + 2 * n_test:]])
    warmup_topics = unused.iloc[:sizes["warmup_queries"]][["qid", "query"]]
    warmup_triples = _foldoc_warmup_triples(task, warmup_topics, output / "foldoc-passage-index", seed=0)
    tokens = [c.positions["doc_tokens"] for c in collections.values()]
    description = (f"FOLDOC FarRelevant: {len(documents)} documents of {int(min(t.min() for t in tokens))}-"
                   f"{int(max(t.max() for t in tokens))} tokens (relevant passage in the first 512 tokens: near, "
                   f"after them: far); {len(train['topics'])} training queries (half near, half far; FirstP trains on the "
                   f"near half), "
                   + ", ".join(f"{len(t['qid'].unique())} {v} test queries" for v, t in tests.items())
                   + f", {candidates.groupby('qid').size().max()} candidates per query "
                   f"(the document, {sizes['retrieved']} BM25, {sizes['random']} random); passage stage on "
                   f"{len(warmup_triples)} triples of {len(warmup_topics)} other FOLDOC queries "
                   f"(built in {time.time() - started:.0f} s)")
    return train, tests, warmup_triples, description


def _foldoc_warmup_triples(task, topics: pd.DataFrame, index_dir: Path, seed: int) -> pd.DataFrame:
    """(query, definition, BM25 hard negative) triples for the passage stage."""
    from pyterrier_longdoc.training.passage import passage_triples

    retriever = _PisaRetriever(index_dir)
    bm25 = retriever(task.passages)
    run = bm25(topics)
    # one BM25 hard negative (an entry that mentions the term) and one random entry per query:
    # with hard negatives alone the ranker learns to put a mere mention below unrelated text
    hard = passage_triples(topics, task.qrels, task.passages, run, negatives_per_query=1, top_k=20, seed=seed)
    easy = passage_triples(topics, task.qrels, task.passages, negatives_per_query=1, seed=seed + 1)
    return pd.concat([hard, easy], ignore_index=True).sample(frac=1.0, random_state=seed, ignore_index=True)


class _PisaRetriever:
    """``documents -> BM25 over them`` (PISA), kept for scoring the candidates afterwards."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.bm25 = None

    def __call__(self, documents: pd.DataFrame):
        from pyterrier_pisa import PisaIndex

        from pyterrier_longdoc.demo import _native_output_silenced

        index = PisaIndex(str(self.directory), text_field="text", overwrite=True)
        with _native_output_silenced():
            index.index(documents[["docno", "text"]].to_dict("records"))
            self.bm25 = index.bm25(num_results=1000)
        return self.bm25


def _with_bm25(candidates: pd.DataFrame, bm25) -> pd.DataFrame:
    """The candidates with BM25's score (the lowest score minus 1 where BM25 did not retrieve one)."""
    run = bm25(candidates[["qid", "query"]].drop_duplicates())
    merged = candidates.merge(run[["qid", "docno", "score"]], on=["qid", "docno"], how="left")
    floor = merged["score"].min() - 1 if merged["score"].notna().any() else 0.0
    return merged.assign(score=merged["score"].fillna(floor))


# ---------------------------------------------------------------------------------------------
# (a) the synthetic collection


def synthetic_benchmark(args, sizes, backbone, dtype, seeds, output: Path) -> dict:
    from pyterrier_longdoc.demo import bm25_over
    from pyterrier_longdoc.synthetic import make_collection, passage_triples

    collection = make_collection(**sizes["synthetic"])
    train, test = collection.split("train"), collection.split("test")
    bm25 = bm25_over(collection, output / "synthetic-index")
    first_stage = bm25 % sizes["synthetic_candidates"] >> collection.get_text()
    train_candidates = first_stage(train.topics[["qid", "query"]])
    labels = collection.qrels.set_index(["qid", "docno"])["label"]

    def labelled(frame):
        keys = list(zip(frame["qid"], frame["docno"]))
        return frame.assign(label=[int(labels.get(k, 0)) for k in keys])

    tests = {}
    for split, subset in (("near", test.near()), ("far", test.far())):
        run = first_stage(subset.topics[["qid", "query"]])
        tests[split] = labelled(run)
    fit_data = {"topics": train.topics[["qid", "query"]], "qrels": train.qrels, "candidates": train_candidates}
    triples = passage_triples(train, negatives_per_query=4, seed=0)
    description = (f"synthetic collection: {len(collection.documents)} documents, {len(train.topics)} training queries, "
                   + ", ".join(f"{t['qid'].nunique()} {s} test queries" for s, t in tests.items())
                   + f", BM25's top {sizes['synthetic_candidates']} candidates; passage stage on {len(triples)} "
                   "triples of the training queries' answer passages")
    print(f"\n## (a) {description}", flush=True)
    synthetic_sizes = {**sizes, "max_doc_tokens": 1431}
    scores, minutes = run_recipe(backbone, triples, fit_data, tests, synthetic_sizes, dtype, seeds,
                                 output / "synthetic", args.shared_passage_stage)
    result = summarise(scores, tests, minutes, description)
    _print(result)
    return result


# ---------------------------------------------------------------------------------------------
# tables and targets


def summarise(scores: dict, tests: dict[str, pd.DataFrame], minutes: dict, description: str) -> dict:
    """Mean, 95% CI and seed range per system and split, with the random order and BM25."""
    from scipy import stats

    baselines = {"random order": {s: {0: random_rr(c)} for s, c in tests.items()},
                 "BM25": {s: {0: reciprocal_ranks(c.assign(score=c["score"]))} for s, c in tests.items()}}
    table = {}
    for system, by_split in {**baselines, **scores}.items():
        for split, by_seed in by_split.items():
            per_query = pd.DataFrame(by_seed).mean(axis=1)  # seed-averaged per-query RR
            means = [float(np.mean(list(v.values()))) for v in by_seed.values()]
            half = float(stats.t.ppf(0.975, len(per_query) - 1) * per_query.std(ddof=1) / np.sqrt(len(per_query))) \
                if len(per_query) > 1 else float("nan")
            table.setdefault(system, {})[split] = {"mean": float(per_query.mean()), "ci95": half,
                                                    "seed_min": min(means), "seed_max": max(means),
                                                    "queries": int(len(per_query))}
    return {"description": description, "table": table, "per_query": _jsonable(scores),
            "minutes": {k: [round(x, 2) for x in v] for k, v in minutes.items()}}


def check_targets(table: dict) -> list[dict]:
    """The recipe's targets on the FarRelevant collection."""
    far, near = ({s: table[s][split]["mean"] for s in table} for split in ("far", "near"))
    targets = [
        ("far: MaxP RR >= 2 x FirstP RR", far["MaxP"] >= 2 * far["FirstP"], f"{far['MaxP']:.3f} vs {far['FirstP']:.3f}"),
        ("far: ParadeAttn RR >= 2 x FirstP RR", far["ParadeAttn"] >= 2 * far["FirstP"],
         f"{far['ParadeAttn']:.3f} vs {far['FirstP']:.3f}"),
        ("far: |FirstP - random| <= 0.1", abs(far["FirstP"] - far["random order"]) <= 0.1,
         f"{far['FirstP']:.3f} vs {far['random order']:.3f}"),
    ]
    targets += [(f"near: {m} >= random + 0.3", near[m] >= near["random order"] + 0.3,
                 f"{near[m]:.3f} vs {near['random order']:.3f}") for m in MODELS]
    targets += [(f"{split}: {m} vs BM25", None, f"{table[m][split]['mean']:.3f} vs {table['BM25'][split]['mean']:.3f}")
                for split in ("near", "far") for m in MODELS]
    return [{"target": t, "passed": bool(p) if p is not None else None, "values": v} for t, p, v in targets]


def markdown(result: dict) -> str:
    splits = list(next(iter(result["table"].values())))
    lines = ["| system | " + " | ".join(f"RR {s} (95% CI) [seed range]" for s in splits) + " |",
             "|---|" + "---|" * len(splits)]
    for system, by_split in result["table"].items():
        cells = []
        for split in splits:
            cell = by_split[split]
            ranged = f" [{cell['seed_min']:.3f}-{cell['seed_max']:.3f}]" if cell["seed_min"] != cell["seed_max"] else ""
            cells.append(f"{cell['mean']:.3f} ± {cell['ci95']:.3f}{ranged}")
        lines.append(f"| {system} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets_markdown(result: dict) -> str:
    """The targets as a list: PASS / FAIL / info, with the values compared."""
    marks = {True: "PASS", False: "FAIL", None: "info"}
    return "\n".join(f"- {marks[t['passed']]} {t['target']}: {t['values']}" for t in result.get("targets", []))


def _print(result: dict) -> None:
    print("\n" + markdown(result))
    print("\nMinutes per seed: " + "; ".join(f"{k} {', '.join(f'{x:.1f}' for x in v)}"
                                            for k, v in result["minutes"].items()))
    times = result["minutes"]
    for model in MODELS:  # the recipe for one model: the passage stage, then its fit (slowest seed)
        if times.get("passage stage") and times.get(f"fit {model}"):
            wall = max(times["passage stage"]) + max(times[f"fit {model}"])
            cpu = max(times["passage stage, CPU"]) + max(times[f"fit {model}, CPU"])
            print(f"Recipe for {model} (passage stage + fit): {wall:.1f} min (limit 15 on 2 idle cores); "
                  f"{cpu:.1f} CPU minutes")
    if result.get("targets"):
        print(targets_markdown(result))


# ---------------------------------------------------------------------------------------------
# helpers


def machine() -> str:
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


def _minilm() -> str:
    from pyterrier_longdoc.demo import packaged_minilm

    return packaged_minilm()


def _tiny_backbone(output: Path) -> str:
    from _common import write_tiny_bert

    return str(write_tiny_bert(output / "tiny-bert"))


def _foldoc_default() -> str:
    from pyterrier_longdoc.foldoc import DEFAULT_PATH

    return DEFAULT_PATH


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value


if __name__ == "__main__":
    sys.exit(main())

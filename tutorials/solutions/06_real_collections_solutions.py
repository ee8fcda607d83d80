# Solutions to the exercises of notebook 6 (06_real_collections.ipynb): MS MARCO and Robust04.
#
# A plain Python script for a GPU machine with internet access; not executed in CI. Run it after
# the notebook, with the same LONGDOC_WORK directory: it reuses what the notebook wrote there (the
# official runs, the PISA indexes, the trained models and the re-ranked runs) and computes only
# what is missing. The cells (between "# %%" lines) can also be run one by one in an editor or
# a notebook. From the shell, choose the exercises by number (none: all of them):
#
#     LONGDOC_WORK=longdoc-real python 06_real_collections_solutions.py 2 5
#
# The first cell repeats the notebook's set-up and helpers; then one cell per exercise.

# %% Set-up and helpers, as in the notebook
import functools
import os
import shutil
import sys
import time
import warnings
from pathlib import Path

import pandas as pd
import pyterrier as pt
import torch
from pyterrier.measures import RR, P, nDCG
from pyterrier_pisa import PisaIndex

from pyterrier_longdoc import (FirstP, LongDocReranker, MaxP, ParadeAttn, ParadeMax, SumP,
                               load_collection, multi_seed_experiment)
from pyterrier_longdoc.diagnostics import (build_far_relevant, load_passage_collection,
                                           match_passages, span_positions)

warnings.filterwarnings("ignore", message="IProgress not found")
pd.set_option("display.width", 200)

assert torch.cuda.is_available(), "these solutions need a CUDA GPU (see the notebook)"
DEVICE = "cuda"
NATIVE_BF16 = torch.cuda.get_device_capability()[0] >= 8
TRAIN_DTYPE = "bf16" if NATIVE_BF16 else "fp32"  # fit has no fp16 loss scaling: bf16 or fp32
SCORE_DTYPE = "bf16" if NATIVE_BF16 else "fp16"
BACKBONE = "bert-base-uncased"
SEEDS = (0, 1, 2)
WORK = Path(os.environ.get("LONGDOC_WORK", "longdoc-real"))

NOTEBOOK_MODELS = ("FirstP", "MaxP", "ParadeAttn")
MODELS = {"FirstP": FirstP, "MaxP": MaxP, "ParadeAttn": ParadeAttn,  # the notebook's
          "ParadeMax": ParadeMax, "SumP": SumP}  # exercise 4
BATCH_SIZE = {"FirstP": 64, "MaxP": 256, "ParadeAttn": 256, "ParadeMax": 256, "SumP": 256}
# MaxP and SumP read 14 windows of a long document, PARADE's models 19 (stride 75)
QUERIES_PER_FORWARD = {"FirstP": 8, "MaxP": 4, "ParadeAttn": 2, "ParadeMax": 2, "SumP": 4}
MSMARCO_MEASURES = [RR @ 100, nDCG @ 10]
CHOSEN = {int(arg) for arg in sys.argv[1:] if arg.isdigit()}  # none given: every exercise


def selected(number):
    """Whether to run exercise `number` (from the command line; always in an editor or notebook)."""
    return not CHOSEN or number in CHOSEN


def cached(path, make):
    """The result frame of `make()`, computed once, then read back from the TREC run file `path`."""
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        pt.io.write_results(make(), str(path))
    return pt.io.read_results(str(path)).drop(columns="name", errors="ignore")


def file_name(collection):
    return collection.name.replace("/", "_")


@functools.cache
def collection(name, fold=None):
    return load_collection(name, fold=fold)


@functools.cache
def official_run(name):
    c = collection(name)
    return cached(WORK / "runs" / f"{file_name(c)}.top100.run.gz", lambda: c.candidates(100))


def top100(name):
    return pt.Transformer.from_df(official_run(name))


def validation_split():
    """The notebook's 200 validation queries and the rest of MS MARCO dev."""
    dev = collection("msmarco-document/dev")
    valid_topics = dev.topics.sample(200, random_state=0)
    return valid_topics, dev.topics.drop(valid_topics.index)


def msmarco_model(name, seed):
    """The directory of the model `name` trained on MS MARCO documents with `seed` (the
    notebook's recipe); trained on first use, resumed from its last checkpoint."""
    out = WORK / "models" / f"{name.lower()}-msmarco-seed{seed}"
    if (out / "config.json").is_file():
        return out
    train, dev = collection("msmarco-document/train"), collection("msmarco-document/dev")
    valid_topics, _ = validation_split()
    dev_run = official_run(dev.name)
    torch.manual_seed(seed)  # the new head's initial weights
    model = MODELS[name](BACKBONE, batch_size=BATCH_SIZE[name], device=DEVICE, dtype=TRAIN_DTYPE,
                         verbose=True)
    checkpoints = WORK / "checkpoints" / out.name
    history = model.fit(
        train.topics, train.qrels, official_run(train.name), text=train.text, seed=seed,
        epochs=1, loss="margin", negatives=1, top_k=100, lr=1e-5, head_lr=1e-4, weight_decay=1e-7,
        warmup=0.2, queries_per_step=16, queries_per_forward=QUERIES_PER_FORWARD[name],
        valid_topics=valid_topics, valid_qrels=dev.qrels,
        valid_candidates=dev_run[dev_run["qid"].isin(set(valid_topics["qid"]))],
        valid_metric="RR@100", checkpoint_dir=checkpoints, checkpoint_every=1000)
    model.save_pretrained(out)
    history.to_csv(WORK / "models" / f"{out.name}.history.csv", index=False)
    shutil.rmtree(checkpoints)
    del model
    torch.cuda.empty_cache()
    return out


def reranker(name, seed, device=DEVICE):
    return LongDocReranker.from_pretrained(msmarco_model(name, seed), batch_size=BATCH_SIZE[name],
                                           device=device, dtype=SCORE_DTYPE, verbose=True)


def rerank(pipeline, topics, queries_per_call=200):
    """`pipeline` run on `topics` a few hundred queries at a time: qid, docno, score, rank."""
    columns = ["qid", "docno", "score", "rank"]
    parts = [pipeline(topics.iloc[start:start + queries_per_call])[columns]
             for start in range(0, len(topics), queries_per_call)]
    return pd.concat(parts, ignore_index=True)


def msmarco_run(c, topics, name, seed):
    """The official top 100 of `topics` re-ranked by a trained model; cached (the notebook's
    file names, so its runs are reused)."""
    return cached(WORK / "runs" / f"{file_name(c)}.{name.lower()}.seed{seed}.run.gz",
                  lambda: rerank(top100(c.name) >> c.text >> reranker(name, seed), topics))


@functools.cache
def bm25_robust():
    index = PisaIndex(str(WORK / "robust04.pisa"), text_field=["title", "body"], threads=8)
    if not index.built():
        index.index(pt.get_dataset("irds:disks45/nocr/trec-robust-2004").get_corpus_iter())
    return index.bm25(num_results=100)


ROBUST_TRAINING = dict(epochs=10, loss="margin", negatives=1, top_k=100, lr=1e-5, head_lr=1e-4,
                       weight_decay=1e-7, warmup=0.2, queries_per_step=16,
                       valid_metric="nDCG@20")


def robust04_fold_run(name, seed, fold, query="title"):
    """Fine-tune the MS MARCO model on the fold's training topics, re-rank its test topics."""
    robust = load_collection(f"robust04-{query}", fold=fold)
    train_topics, train_qrels, _ = robust.split("train")
    valid_topics, valid_qrels, _ = robust.split("valid")
    first_stage = bm25_robust() % 100
    model = MODELS[name].from_pretrained(msmarco_model(name, seed), batch_size=BATCH_SIZE[name],
                                         device=DEVICE, dtype=TRAIN_DTYPE, verbose=True)
    history = model.fit(train_topics, train_qrels, first_stage, text=robust.text, seed=seed,
                        valid_topics=valid_topics, valid_qrels=valid_qrels,
                        valid_candidates=first_stage,
                        queries_per_forward=QUERIES_PER_FORWARD[name], **ROBUST_TRAINING)
    print(f"{name} seed {seed} fold {fold} ({query}): validation nDCG@20 per epoch",
          history["nDCG@20"].dropna().round(3).tolist())
    run = rerank(first_stage >> robust.text >> model, robust.topics)
    del model
    torch.cuda.empty_cache()
    return run


def robust04_run(name, seed, query="title"):
    """The cross-validated run of one model and seed: the five test folds together; cached."""
    return cached(WORK / "runs" / f"robust04-{query}.{name.lower()}.seed{seed}.run.gz",
                  lambda: pd.concat([robust04_fold_run(name, seed, fold, query)
                                     for fold in range(1, 6)], ignore_index=True))


def gains(table, measures):
    return table.set_index("name")[[f"{m} (gain)" for m in measures]]


def far_relevant_table(far_collection, models=NOTEBOOK_MODELS):
    """Zero-shot evaluation of the MS MARCO models on a FarRelevant collection (notebook, §9)."""
    candidates = far_collection.candidates.drop(columns=["label", "source"])  # random order
    random_order = pt.model.add_ranks(
        candidates.assign(score=-candidates.groupby("qid").cumcount().astype(float)))
    systems = {"random order": random_order}
    for name in models:
        systems[name] = lambda seed, name=name: reranker(name, seed)(candidates)
    return multi_seed_experiment(systems, far_collection.queries, far_collection.qrels,
                                 [RR @ 10, nDCG @ 10], seeds=SEEDS, baseline="FirstP",
                                 correction="holm", significance_mark="*")


# %% Exercise 1: Robust04 with description queries
# The same cross-validation with `robust04-desc`: the queries are the topics' descriptions, and
# the BM25 candidates are retrieved with them too. Each (model, seed) fine-tunes five more models
# from the MS MARCO ones, 20-40 minutes each on one GPU (rough estimate).
#
# What to look for: the "(gain)" columns, title next to description. Descriptions are sentences
# ("Identify documents that discuss ..."), which BERT models read better than keyword titles: Dai
# & Callan (SIGIR 2019) found BERT's gains over BM25 larger with descriptions. Whether reading
# the whole document (MaxP, PARADE-Attn) adds more over FirstP with descriptions than with
# titles is what your table answers; a difference of a few percent needs the significance
# columns before you trust it.

def exercise_1():
    bm25 = bm25_robust() % 100
    tables = {}
    for query in ("title", "desc"):
        everything = collection(f"robust04-{query}")  # no fold: all 250 topics
        systems = {"BM25": bm25}
        for name in NOTEBOOK_MODELS:
            systems[name] = lambda seed, name=name, query=query: robust04_run(name, seed, query)
        tables[query] = multi_seed_experiment(
            systems, everything.topics, everything.qrels, [nDCG @ 20, P @ 20], seeds=SEEDS,
            baseline="FirstP", correction="holm", significance_mark="*")
        print(f"\nrobust04-{query}\n", tables[query].round(3).to_string())
    print("\n", pd.concat({q: gains(t, ["nDCG@20", "P@20"]) for q, t in tables.items()}, axis=1))


if selected(1):
    exercise_1()


# %% Exercise 2: where does MaxP gain over FirstP?
# Join the seed-averaged per-query RR@100 on MS MARCO dev with the 512-token chunk in which the
# query's first relevant passage starts (section 10 of the notebook), and average per chunk.
# The re-ranked runs are cached by the notebook, so this takes minutes, mostly the matching.
#
# What to look for: in the chunk 0-511 FirstP sees the relevant passage and should be about as
# good as MaxP and PARADE-Attn; where the passage starts later, FirstP can only rank the document
# by its beginning, and MaxP and PARADE-Attn should be ahead. Because most queries fall in the
# first chunk (the positional-bias table), the overall gain stays small. Mind the query counts:
# the later chunks hold few queries, so their means are noisy.

def dev_passage_matches():
    """The notebook's section 10: relevant passages of MS MARCO dev found in their documents."""
    dev = collection("msmarco-document/dev")
    passages, _, passage_qrels = load_passage_collection("msmarco-passage/dev/small",
                                                         max_passages=0)
    relevant_passages = (passage_qrels[passage_qrels["label"] > 0]
                         .rename(columns={"docno": "passage_docno"})[["qid", "passage_docno"]]
                         .merge(passages.rename(columns={"docno": "passage_docno",
                                                         "text": "passage"}),
                                on="passage_docno"))
    pairs = dev.qrels[dev.qrels["label"] > 0][["qid", "docno"]].merge(relevant_passages, on="qid")
    documents = dev.text(pairs[["docno"]].drop_duplicates())
    return match_passages(documents, pairs), documents


def exercise_2():
    dev = collection("msmarco-document/dev")
    _, dev_test_topics = validation_split()
    systems = {name: (lambda seed, name=name: msmarco_run(dev, dev_test_topics, name, seed))
               for name in NOTEBOOK_MODELS}
    _, per_query = multi_seed_experiment(systems, dev_test_topics, dev.qrels, [RR @ 100],
                                         seeds=SEEDS, baseline="FirstP", perquery=True)
    rr = per_query[per_query["measure"] == "RR@100"].pivot(index="qid", columns="name",
                                                           values="value")

    matched, documents = dev_passage_matches()
    print(f"match rate {matched.match_rate:.1%}")
    positions = span_positions(matched.matches, documents, tokenizer=BACKBONE)  # matched rows only
    start = positions.assign(qid=positions["qid"].astype(str)).groupby("qid")["token_start"].min()
    labels = {0: "0-511", 1: "512-1023", 2: "1024+"}
    chunk = (start // 512).clip(upper=2).map(labels).rename("first relevant passage starts")

    joined = rr.join(chunk, how="inner")
    table = joined.groupby(chunk.name)[list(NOTEBOOK_MODELS)].mean()
    table.insert(0, "queries", joined.groupby(chunk.name).size())
    for name in NOTEBOOK_MODELS[1:]:
        table[f"{name} gain"] = (table[name] / table["FirstP"] - 1).map("{:+.1%}".format)
    print(table.round(3).to_string())


if selected(2):
    exercise_2()


# %% Exercise 3: FarRelevant with BM25 hard negatives
# `retriever` takes a function of the generated documents that returns a retriever over them;
# here, a PISA index of each variant's documents. `negatives=0, retrieved_negatives=9` keeps 10
# candidates per query, as with random negatives, so the random order stays comparable.
#
# What to look for: the random order's values stay about where they were (the same number of
# candidates). BM25's negatives share words with the query, so they are harder than random ones:
# expect every model to lose some effectiveness on both variants. On the far variant FirstP
# should stay near the random order (the first 512 tokens of every candidate hold only filler
# passages), while MaxP and PARADE-Attn should keep most of their lead.

def pisa_retriever(variant):
    def build(documents):
        index = PisaIndex(str(WORK / f"far-relevant-{variant}.pisa"), text_field="text",
                          overwrite=True)
        index.index(documents.to_dict("records"))
        return index.bm25(num_results=20)
    return build


def exercise_3():
    train = collection("msmarco-document/train")
    passages, queries, qrels = load_passage_collection("msmarco-passage/train/judged",
                                                       max_passages=1_000_000)
    unseen = queries[~queries["qid"].isin(set(train.topics["qid"]))]
    far_queries = unseen.sample(2000, random_state=0)  # the notebook's queries
    tables = {}
    for negatives in ("random", "BM25"):
        for variant in ("far", "near"):
            extra = (dict(negatives=9) if negatives == "random" else
                     dict(negatives=0, retriever=pisa_retriever(variant), retrieved_negatives=9))
            built = build_far_relevant(passages, far_queries, qrels, tokenizer=BACKBONE,
                                       variant=variant, first_tokens=512, max_doc_tokens=1431,
                                       seed=0, **extra)
            table = far_relevant_table(built)
            tables[(negatives, variant)] = table.set_index("name")[["RR@10", "nDCG@10"]]
    print(pd.concat(tables, axis=1).round(3).to_string())


if selected(3):
    exercise_3()


# %% Exercise 4: two more models, ParadeMax and SumP
# The same recipe (`msmarco_model` trains on first use; three seeds each, roughly 4-10 hours per
# seed on one A100-class GPU), then the notebook's tables with five models. FirstP stays the
# baseline and so the reference of the gains. Train every model on the same queries: a model
# trained with `TRAIN_QUERIES` set in the notebook is not comparable with the others.
#
# What to look for: ParadeMax takes the element-wise max of the windows' [CLS] vectors, SumP
# sums the windows' scores. Boytsov et al. find most such models within a few percent of FirstP
# on MS MARCO and TREC DL; see where these two land next to MaxP and PARADE-Attn, and whether the
# corrected tests (now over four systems) still reject.

def exercise_4():
    models = ("FirstP", "MaxP", "ParadeAttn", "ParadeMax", "SumP")
    for name in ("ParadeMax", "SumP"):
        for seed in SEEDS:
            print(name, seed, msmarco_model(name, seed))
    _, dev_test_topics = validation_split()
    results = {}
    for name in ("msmarco-document/dev", "msmarco-document/trec-dl-2019",
                 "msmarco-document/trec-dl-2020"):
        c = collection(name)
        topics = dev_test_topics if name.endswith("/dev") else c.topics
        systems = {"official top 100": top100(name)}
        for model in models:
            systems[model] = lambda seed, model=model, c=c, topics=topics: msmarco_run(
                c, topics, model, seed)
        results[name] = multi_seed_experiment(
            systems, topics, c.qrels, MSMARCO_MEASURES, seeds=SEEDS, baseline="FirstP",
            correction="holm", significance_mark="*")
    print(pd.concat({name: gains(table, ["RR@100", "nDCG@10"])
                     for name, table in results.items()}, axis=1).to_string())


if selected(4):
    exercise_4()


# %% Exercise 5: several GPUs for inference
# The same model loaded once on one GPU and once on all of them (`device=[...]`: a copy per
# device, the batches shared among the copies). We fetch the texts first, so that only scoring
# is timed, and warm each model up on a few documents.
#
# What to look for: scoring gets close to n times faster with n GPUs when the batches are large
# (tokenization and regrouping stay on the CPU, so not quite n). The batches are the same in both
# runs, so the scores agree up to rounding (bf16 / fp16 autocast).

def exercise_5():
    n = torch.cuda.device_count()
    if n < 2:
        print(f"this exercise needs two or more GPUs; this machine has {n}")
        return
    dl19 = collection("msmarco-document/trec-dl-2019")
    candidates = (top100(dl19.name) >> dl19.text)(dl19.topics)  # 43 queries x 100 documents
    results = {}
    for label, device in (("one GPU", "cuda:0"), (f"{n} GPUs", [f"cuda:{i}" for i in range(n)])):
        model = reranker("MaxP", 0, device=device)
        model.verbose = False
        model(candidates.head(50))  # warm-up: CUDA kernels, and the copies on every device
        began = time.perf_counter()
        results[label] = model(candidates)[["qid", "docno", "score"]]
        print(f"{label}: {time.perf_counter() - began:.1f} s for {len(candidates)} documents")
        del model
        torch.cuda.empty_cache()
    one, many = results.values()
    both = one.merge(many, on=["qid", "docno"], suffixes=("_one", "_many"))
    print("largest score difference:", (both["score_one"] - both["score_many"]).abs().max())


if selected(5):
    exercise_5()

"""What several test modules share: tiny models and toy tasks, frames and files to feed them.

Test modules import these from here, never from each other (a test module is not a library).
"""
import gzip
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import pyterrier_longdoc as pl
from pyterrier_longdoc.training.checkpoints import checkpoints

# --- a toy training task: the decisive words lie beyond what FirstP reads ----------------------------

TOY_SETTINGS = dict(max_doc_tokens=64, max_query_tokens=8, max_length=48)


TOY_FILLER = "the a of and to in is " * 6  # 42 tokens: the decisive words sit beyond what FirstP reads (37)


def toy_task(n_queries=8, docs_per_query=4):
    """Relevant documents say "castle" late; FirstP cannot see it, the chunk aggregations can."""
    topics = pd.DataFrame({"qid": [f"q{i}" for i in range(n_queries)],
                           "query": [f"what {w}" for w in "cat dog bird fish red blue green river".split()[:n_queries]]})
    rows, qrels = [], []
    for i, qid in enumerate(topics["qid"]):
        for j in range(docs_per_query):
            docno = f"{qid}-d{j}"
            rows.append({"qid": qid, "query": topics["query"][i], "docno": docno, "rank": j, "score": -j,
                         "text": TOY_FILLER + ("castle " if j == 2 else "house ") * 12})
            qrels.append({"qid": qid, "docno": docno, "label": int(j == 2)})
    return topics, pd.DataFrame(qrels), pd.DataFrame(rows)


def new_model(tiny_bert, cls=pl.MaxP, **runtime):
    torch.manual_seed(0)
    windows = dict(window=12, stride=6) if cls.defaults.get("window") else {}
    return cls(tiny_bert, **TOY_SETTINGS, **windows, **runtime)


FAST = dict(lr=3e-3, head_lr=3e-2, queries_per_step=4, warmup=0.0)


def train_toy(model, **options):
    topics, qrels, candidates = toy_task()
    return model.fit(topics, qrels, candidates, **{**FAST, "epochs": 6, **options}, valid_topics=topics,
                     valid_qrels=qrels, valid_candidates=candidates, valid_metric="RR@10")


def weights(model):
    return {k: v.detach().clone() for k, v in model.model.state_dict().items()}


class Interrupt(Exception):
    pass


def stop_at(step):
    """A callback that interrupts training after optimiser step ``step``."""
    def callback(row):
        if row["step"] == step:
            raise Interrupt
    return callback


def interrupted_and_resumed(tiny_bert, tmp_path, stop_at, cls=pl.ParadeAttn, runtime=None, task=None, **options):
    """(the model trained straight through, the model stopped after step ``stop_at`` and resumed
    from its checkpoint in a fresh model with a fresh RNG state, as a new process would, and
    their histories)."""
    topics, qrels, candidates = toy_task(**(task or {}))
    options = dict(checkpoint_every=1, **options)
    straight = new_model(tiny_bert, cls, **(runtime or {}))
    full_history = straight.fit(topics, qrels, candidates, checkpoint_dir=tmp_path / "straight", **options)

    class Interrupt(Exception):
        pass

    def stop(row):
        if row["step"] == stop_at:
            raise Interrupt

    with pytest.raises(Interrupt):
        new_model(tiny_bert, cls, **(runtime or {})).fit(topics, qrels, candidates, checkpoint_dir=tmp_path / "resumed",
                                                         callback=stop, **options)
    resumed = new_model(tiny_bert, cls, **(runtime or {}))
    torch.manual_seed(1234)
    history = resumed.fit(topics, qrels, candidates, checkpoint_dir=tmp_path / "resumed", **options)
    return straight, resumed, full_history, history


# --- damaged checkpoints -----------------------------------------------------------------------------

def run_to_step(tiny_bert, data, path, steps, stop_at=None, **options):
    """Two epochs of 3 steps, a checkpoint after every step; interrupted after step ``stop_at``."""
    def stop(row):
        if row["step"] == stop_at:
            raise Interrupt

    return new_model(tiny_bert).fit(*data, checkpoint_dir=path, callback=stop, **{
        **FAST, "queries_per_step": 1, "checkpoint_every": 1, "epochs": 2, **options})


def resumes_past_damage(tiny_bert, data, tmp_path, damage, expected: str) -> None:
    """``damage(folder)`` on the newest of two checkpoints: resuming warns (``expected`` names the
    problem), falls back to the older one, and ends with the model of an uninterrupted run."""
    run_to_step(tiny_bert, data, tmp_path / "straight", 6)
    reference = pl.LongDocReranker.from_pretrained(tmp_path / "straight" / "step-000006")
    with pytest.raises(Interrupt):
        run_to_step(tiny_bert, data, tmp_path / "run", 6, stop_at=4)
    assert [p.name for p in checkpoints(tmp_path / "run")] == ["step-000003", "step-000004"]
    damage(tmp_path / "run" / "step-000004")
    with pytest.warns(UserWarning, match=rf"skipped 1 damaged checkpoint.*{expected}.*resumed from .*step-000003"):
        history = run_to_step(tiny_bert, data, tmp_path / "run", 6)
    assert len(history) == 6
    resumed = pl.LongDocReranker.from_pretrained(tmp_path / "run" / "step-000006")
    for (name, a), b in zip(reference.model.state_dict().items(), resumed.model.state_dict().values()):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-6, msg=name)


# --- BeST segments: documents with the answer at a random place --------------------------------------

SEGMENT_SETTINGS = dict(max_query_tokens=8, max_doc_tokens=64, max_length=48, window=12, stride=6)


SEGMENT_FILLER = "the a of and to in is red blue green city house door window book paper music song".split()


def make_data(n_queries=3, docs_per_query=3, words=40, seed=0):
    """Each query asks for two animal words; its relevant document holds them at a random place."""
    rng = random.Random(seed)
    pairs = [("cat", "dog"), ("bird", "fish"), ("castle", "river"), ("forest", "mountain")]
    topics, qrels, candidates = [], [], []
    for i in range(n_queries):
        qid, (a, b) = f"q{i}", pairs[i % len(pairs)]
        topics.append((qid, f"{a} {b}"))
        for j in range(docs_per_query):
            body = [rng.choice(SEGMENT_FILLER) for _ in range(words)]
            if j == 0:
                at = rng.randrange(words - 1)
                body[at:at + 2] = [a, b]
            docno = f"d{i}-{j}"
            qrels.append((qid, docno, int(j == 0)))
            candidates.append((qid, docno, " ".join(body), j))
    return (pd.DataFrame(topics, columns=["qid", "query"]), pd.DataFrame(qrels, columns=["qid", "docno", "label"]),
            pd.DataFrame(candidates, columns=["qid", "docno", "text", "rank"]))


# --- cross-encoders: queries and documents of the tiny vocabulary ------------------------------------

CROSS_ENCODER_SETTINGS = dict(window=12, stride=6, max_doc_tokens=48, max_query_tokens=8)


QUERIES = ["castle river", "red dog", "what is music", "green door"]


# words of the tiny vocabulary only, so that a window's text, written back, tokenizes to the same ids
LONG_DOCS = ["the city of the castle and the river and the mountain forest house door window book paper " * 2,
        "a red dog in the house and the blue bird and the green fish of the city " * 2,
        "music song answer question alpha beta gamma of the river castle " * 2,
        "the green door " * 9]


def window_texts(model, query: str, text: str) -> list[str]:
    """The texts of the windows the model reads of ``text``, as the tokenizer writes them back."""
    tokenizer = model.model.tokenizer
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    return [tokenizer.decode(ids[s:e]) for s, e in model.chunk_spans(text)]


# --- the contract: one frame, and what scoring keeps of it -------------------------------------------

def frame():
    texts = ["the cat sat on the red mat " * n for n in (1, 3, 9, 20)] + ["", "blue river " * 30]
    rows = [{"qid": q, "query": query, "docno": f"d{i}", "text": t, "extra": i * 10, "label": float(i)}
            for q, query in (("q1", "red cat"), ("q2", "blue river castle")) for i, t in enumerate(texts)]
    return pd.DataFrame(rows)


def check_columns_kept(inp, out):
    """``out`` is ``inp`` with ``score`` and ``rank`` added, every column in place with its dtype,
    ranks following scores (also for RankGPT, tests/test_rankgpt_contract.py)."""
    assert list(out.columns[:len(inp.columns)]) == list(inp.columns)
    for column in inp.columns:
        assert out[column].dtype == inp[column].dtype, column
    assert out["score"].dtype == np.float64 and out["rank"].dtype.kind == "i"
    assert len(out) == len(inp)
    merged = out.set_index(["qid", "docno"]).loc[inp.set_index(["qid", "docno"]).index]
    assert (merged["extra"].values == inp["extra"].values).all()
    for _, group in out.groupby("qid"):  # ranks follow scores within each query
        assert (group.sort_values("rank")["score"].diff().dropna() <= 0).all()


# --- dictd dictionaries (FOLDOC stand-ins) -----------------------------------------------------------

_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def b64(value: int) -> str:
    digits = ""
    while True:
        digits = _ALPHABET[value % 64] + digits
        value //= 64
        if not value:
            return digits


def write_dictd(path, entries, compress=True):
    """A dictd pair: ``foldoc.dict(.dz)`` with the entries and ``foldoc.index`` pointing into it."""
    data, index = b"", []
    for headword, body in [("00-database-short", "\n     A test dictionary\n"), *entries]:
        chunk = f"{headword}\n\n{body}\n\n".encode()
        index.append(f"{headword}\t{b64(len(data))}\t{b64(len(chunk))}")
        data += chunk
    dict_path = path / ("foldoc.dict.dz" if compress else "foldoc.dict")
    dict_path.write_bytes(gzip.compress(data) if compress else data)
    (path / "foldoc.index").write_text("\n".join(index) + "\n")
    return dict_path


def random_dictionary(path, words, n_entries=400, seed=0):
    """Entries named by ``words`` and filler entries, with definitions made of ``words``: a
    FOLDOC stand-in large enough to build FarRelevant documents from."""
    rng = random.Random(seed)
    entries = []
    for i in range(n_entries):
        headword = words[i] if i < len(words) // 2 else f"entry{i} name"
        body = " ".join(rng.choice(words) for _ in range(rng.randint(25, 45)))
        entries.append((headword, "   " + body + "."))
    return write_dictd(path, entries)


# --- FarRelevant: passages of made-up words, query i judged on passage i --------------------------

FAR_RELEVANT_QUERIES = 12


def far_relevant_corpus(seed: int = 7, n_passages: int = 300) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Synthetic passages of random made-up words; query i is judged on passage i only."""
    rng = np.random.default_rng(seed)
    letters = list("abcdefghiklmnoprstuvy")
    vocab = ["".join(rng.choice(letters, size=int(rng.integers(2, 9)))) for _ in range(2000)]
    texts = [" ".join(rng.choice(vocab, size=int(rng.integers(20, 70)))) + "." for _ in range(n_passages)]
    passages = pd.DataFrame({"docno": [f"p{i}" for i in range(n_passages)], "text": texts})
    queries = pd.DataFrame(
        {"qid": [f"q{i}" for i in range(FAR_RELEVANT_QUERIES)],
         "query": [" ".join(texts[i].split()[:4]) for i in range(FAR_RELEVANT_QUERIES)]}
    )
    qrels = pd.DataFrame({"qid": queries["qid"], "docno": [f"p{i}" for i in range(FAR_RELEVANT_QUERIES)], "label": 1})
    return passages, queries, qrels


SMALL_MODEL = {"max_query_tokens": 8, "max_doc_tokens": 64, "max_length": 48}


def small_model(name, tiny_bert, tmp_path, **runtime):
    """A registered model over a tiny backbone (its own where it needs another than the tiny BERT)."""
    from zoo_backbones import tiny_backbone_for

    cls = pl.model_class(name)
    custom = tiny_backbone_for(name, tmp_path)
    if custom is not None:
        path, settings = custom
        return cls(path, **settings, **runtime)
    settings = dict(SMALL_MODEL)
    if cls.defaults.get("window"):
        settings.update(window=12, stride=6)
    return cls(tiny_bert, **settings, **runtime)


# the passage stage's toy task
ANIMALS = "cat dog bird fish".split()
OTHER = "red blue green castle river mountain forest city house door window book paper music song".split()


def toy_triples(n, seed):
    """Queries name an animal; the positive passage mentions it among random words, the negative
    is random words only."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        animal = rng.choice(ANIMALS)
        filler = lambda: " ".join(rng.choice(OTHER) for _ in range(6))  # noqa: E731
        rows.append((f"what is {animal}", f"{filler()} {animal} {filler()}", f"{filler()} {filler()}"))
    return rows


def pairwise_accuracy(model, triples):
    scores = model.predict([(q, p) for q, p, _ in triples] + [(q, n) for q, _, n in triples], batch_size=64,
                           activation_fn=torch.nn.Identity())  # logits: a sigmoid saturates into ties
    return float(np.mean(scores[:len(triples)] > scores[len(triples):]))


# --- the benchmarks' scripts, run as their command lines run them ------------------------------------

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def run_benchmark(script: str, *arguments):
    """``benchmarks/<script>.py``'s ``main`` with ``arguments``, in this process: its exit status and
    what it printed (``returncode``, ``stdout``, ``stderr``), as a subprocess would give them. A
    subprocess would spend its first seconds importing torch, transformers and PyTerrier, which this
    process has done; transformers' logging settings, which the benchmarks quiet, are put back after.
    Warnings are not shown, as the scripts' smoke runs ran with PYTHONWARNINGS=ignore."""
    import contextlib
    import importlib
    import io
    import sys
    import warnings
    from types import SimpleNamespace

    from transformers.utils import logging as hf_logging

    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    stdout, stderr = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                status = importlib.import_module(script).main([str(a) for a in arguments])
            except SystemExit as stop:  # argparse's refusals, and the scripts' own: what the interpreter does
                status = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
                if not isinstance(stop.code, int) and stop.code is not None:
                    print(stop.code, file=sys.stderr)
    finally:
        hf_logging.set_verbosity(verbosity)
        hf_logging.enable_progress_bar() if bars else hf_logging.disable_progress_bar()
    return SimpleNamespace(returncode=status, stdout=stdout.getvalue(), stderr=stderr.getvalue())

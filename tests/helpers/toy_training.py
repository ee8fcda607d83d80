"""Toy training tasks: documents whose decisive words lie beyond what FirstP reads, the fast
options that learn them in a few steps, interrupted and resumed runs, and BeST's segment data."""
import random

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


def no_step(row):
    raise AssertionError(f"training started (step {row['step']}) although the input was bad")


def refused_fit(tiny_bert, topics, qrels, candidates, **options):
    """fit on input that must be refused before anything is encoded or any step taken."""
    model = new_model(tiny_bert)

    def no_encoding(batch):
        raise AssertionError("a document was encoded although the input was bad")

    model.model.encode = no_encoding
    return model.fit(topics, qrels, candidates, **{**FAST, "callback": no_step, **options})


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
    with pytest.warns(pl.LongDocWarning, match=r"step-\d+: resumed at step \d+ of "):  # the newest checkpoint
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
    with pytest.warns(pl.LongDocWarning, match=r"step-000003: resumed at step 3 of 6"), \
            pytest.warns(UserWarning, match=rf"skipped 1 damaged checkpoint.*{expected}.*resumed from .*step-000003"):
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

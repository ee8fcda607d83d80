"""The contract's frame and what scoring keeps of it, and a small instance of every registered model."""
import numpy as np
import pandas as pd
import pyterrier as pt

import pyterrier_longdoc as pl


def frame():
    texts = ["the cat sat on the red mat " * n for n in (1, 3, 9, 20)] + ["", "blue river " * 30]
    rows = [{"qid": q, "query": query, "docno": f"d{i}", "text": t, "extra": i * 10, "label": float(i)}
            for q, query in (("q1", "red cat"), ("q2", "blue river castle")) for i, t in enumerate(texts)]
    return pd.DataFrame(rows)


def check_columns_kept(inp, out):
    """``out`` is ``inp`` with ``score`` and ``rank`` added, every column in place with its dtype,
    ranks following scores (also for RankGPT, tests/listwise/test_rankgpt_contract.py)."""
    assert list(out.columns[:len(inp.columns)]) == list(inp.columns)
    for column in inp.columns:
        assert out[column].dtype == inp[column].dtype, column
    assert out["score"].dtype == np.float64 and out["rank"].dtype.kind == "i"
    assert len(out) == len(inp)
    merged = out.set_index(["qid", "docno"]).loc[inp.set_index(["qid", "docno"]).index]
    assert (merged["extra"].values == inp["extra"].values).all()
    for _, group in out.groupby("qid"):  # ranks follow scores within each query
        assert (group.sort_values("rank")["score"].diff().dropna() <= 0).all()


SMALL_MODEL = {"max_query_tokens": 8, "max_doc_tokens": 64, "max_length": 48}


def small_model(name, tiny_bert, tmp_path, **runtime):
    """A registered model over a tiny backbone (its own where it needs another than the tiny BERT)."""
    from helpers.zoo_backbones import tiny_backbone_for

    cls = pl.model_class(name)
    custom = tiny_backbone_for(name, tmp_path)
    if custom is not None:
        path, settings = custom
        return cls(path, **settings, **runtime)
    settings = dict(SMALL_MODEL)
    if cls.defaults.get("window"):
        settings.update(window=12, stride=6)
    return cls(tiny_bert, **settings, **runtime)


def castle_counter():
    """A passage scorer without weights (the number of times a passage says "castle"), for LongDoc."""
    return pt.apply.doc_score(lambda row: float(row["text"].count("castle")))

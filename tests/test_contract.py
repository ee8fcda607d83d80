"""The contract every registered model keeps: empty frames, missing columns, columns kept,
save/load round trips, batch-size and row-order invariance, repr, use in pt.Experiment."""
import numpy as np
import pandas as pd
import pytest
import pyterrier as pt
from pyterrier.measures import nDCG

import pyterrier_longdoc as pl

try:  # models that need another backbone than the tiny BERT say how to build theirs
    from zoo_backbones import tiny_backbone_for
except ImportError:  # pragma: no cover
    def tiny_backbone_for(name, tmp_path):
        return None

SMALL = {"max_query_tokens": 8, "max_doc_tokens": 64, "max_length": 48}


def small_model(name, tiny_bert, tmp_path, **runtime):
    cls = pl.model_class(name)
    custom = tiny_backbone_for(name, tmp_path)
    if custom is not None:
        path, settings = custom
        return cls(path, **settings, **runtime)
    settings = dict(SMALL)
    if cls.defaults.get("window"):
        settings.update(window=12, stride=6)
    return cls(tiny_bert, **settings, **runtime)


def frame():
    texts = ["the cat sat on the red mat " * n for n in (1, 3, 9, 20)] + ["", "blue river " * 30]
    rows = [{"qid": q, "query": query, "docno": f"d{i}", "text": t, "extra": i * 10, "label": float(i)}
            for q, query in (("q1", "red cat"), ("q2", "blue river castle")) for i, t in enumerate(texts)]
    return pd.DataFrame(rows)


MODELS = sorted(pl.registered_models())


@pytest.fixture(params=MODELS)
def model(request, tiny_bert, tmp_path):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    return small_model(request.param, tiny_bert, tmp_path)


def test_empty_frame_gives_empty_frame_with_score_and_rank(model):
    out = model(frame().iloc[:0])
    assert out.empty
    assert {"score", "rank", "extra"} <= set(out.columns)


def test_missing_column_names_it_and_the_model(model):
    with pytest.raises(Exception) as error:
        model(frame().drop(columns=["text"]))
    assert "text" in str(error.value) and type(model).__name__ in str(error.value)


def test_output_keeps_every_input_column_and_dtype(model):
    inp = frame()
    check_columns_kept(inp, model(inp))


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


def test_save_load_round_trip_gives_identical_scores(model, tmp_path):
    inp = frame()
    before = model(inp)["score"].values
    model.save_pretrained(tmp_path / "saved")
    loaded = pl.LongDocReranker.from_pretrained(tmp_path / "saved")
    assert type(loaded) is type(model)
    assert loaded.settings == model.settings
    np.testing.assert_array_equal(loaded(inp)["score"].values, before)


def test_batch_size_and_row_order_do_not_change_scores(model):
    inp = frame()
    reference = model(inp).set_index(["qid", "docno"])["score"]
    model.batch_size = 1
    single = model(inp).set_index(["qid", "docno"])["score"]
    model.batch_size = 64
    shuffled = model(inp.sample(frac=1, random_state=3)).set_index(["qid", "docno"])["score"]
    # another batch is another GEMM shape, rounded otherwise by oneDNN: 1e-5 absolute, or 1e-6 of a
    # score that adds many windows (SumP)
    np.testing.assert_allclose(single.loc[reference.index], reference, atol=1e-5, rtol=1e-6)
    np.testing.assert_allclose(shuffled.loc[reference.index], reference, atol=1e-5, rtol=1e-6)


def test_repr_rebuilds_the_call(model):
    rebuilt = eval(repr(model), {type(model).__name__: type(model)})
    assert repr(rebuilt) == repr(model)
    assert rebuilt.settings == model.settings


def test_works_after_a_first_stage_in_an_experiment(model):
    inp = frame()
    first_stage = pt.Transformer.from_df(inp.drop(columns=["extra", "label"]).assign(score=0.0, rank=0))
    topics = inp[["qid", "query"]].drop_duplicates()
    qrels = inp.assign(label=(inp["docno"] == "d3").astype(int))[["qid", "docno", "label"]]
    table = pt.Experiment([first_stage, first_stage >> model], topics, qrels, [nDCG @ 10], names=["bm25", "model"])
    assert list(table["name"]) == ["bm25", "model"]


def test_chunk_spans_are_what_the_encoder_reads(model, monkeypatch):
    """``chunk_spans`` reports exactly the document tokens each encoded chunk holds."""
    encode = model.model.encode
    seen = []

    def recording(batch):
        seen.extend(batch.doc_mask.sum(1).tolist())
        return encode(batch)

    monkeypatch.setattr(model.model, "encode", recording)
    for text in frame()["text"].unique():
        seen.clear()
        model.score_texts(["red cat"], [text])
        spans = model.chunk_spans(text)
        assert sorted(end - start for start, end in spans) == sorted(seen), text[:30]
        assert spans[0][0] == 0 and all(a < b or a == b == 0 for a, b in spans)
    with pytest.raises(TypeError, match="text must be a str"):
        model.chunk_spans(None)

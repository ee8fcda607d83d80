"""The contract every registered model keeps: empty frames, missing columns, columns kept,
save/load round trips, batch-size, row-order and padding invariance, one training step, repr,
use in pt.Experiment."""
import numpy as np
import pyterrier as pt
import pytest
import torch
from helpers.contract import check_columns_kept, frame, small_model
from pyterrier.measures import nDCG

import pyterrier_longdoc as pl

# expected here, not what these tests are about: models built over a plain encoder (the tiny random BERT)
# get a new head, and documents longer than the tiny settings read are cropped
pytestmark = [pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning"),
              pytest.mark.filterwarnings("ignore::pyterrier_longdoc.CroppingWarning")]

MODELS = sorted(pl.registered_models())


@pytest.fixture(params=MODELS)
def model(request, tiny_bert, tmp_path):
    torch.manual_seed(0)
    # fp32 on any device: a GPU's default, bf16, rounds otherwise at another batch shape
    return small_model(request.param, tiny_bert, tmp_path, dtype="fp32")


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


def test_save_load_round_trip_gives_identical_scores(model, tmp_path):
    inp = frame()
    before = model(inp)["score"].values
    model.save_pretrained(tmp_path / "saved")
    # the runtime (device, dtype) is the loading machine's choice, not saved: the test's own fp32 here
    loaded = pl.LongDocReranker.from_pretrained(tmp_path / "saved", dtype="fp32")
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


def test_a_score_does_not_depend_on_the_batch_or_its_padding(model):
    """A document scored alone (no padding) and beside a long one (its sequences padded to the
    long one's length, in one batch) gets the same score."""
    texts = list(frame()["text"].unique())
    longest = max(texts, key=len)
    model.batch_size = 64  # every sequence of a call in one batch
    alone = np.array([model.score_texts(["red cat"], [text])[0] for text in texts])
    beside_the_longest = np.array([model.score_texts(["red cat", "red cat"], [text, longest])[0] for text in texts])
    # another batch shape is another GEMM, rounded otherwise by oneDNN
    np.testing.assert_allclose(beside_the_longest, alone, rtol=1e-5, atol=1e-5)


def test_one_training_step_gives_a_finite_loss_and_changes_weights(model):
    inp = frame()
    candidates = inp.assign(rank=inp.groupby("qid").cumcount())
    topics = inp[["qid", "query"]].drop_duplicates()
    # the relevant document is the one each query's start ranks last: the loss is far from 0 for every model
    # (SumP sums its windows' scores, and the longest document's lead can underflow the loss to exactly 0)
    scored = model(inp)
    last = scored.loc[scored.groupby("qid")["score"].idxmin(), ["qid", "docno"]].assign(label=1)
    qrels = inp[["qid", "docno"]].merge(last, how="left").fillna({"label": 0}).astype({"label": int})
    before = {name: p.detach().clone() for name, p in model.model.named_parameters() if p.requires_grad}
    history = model.fit(topics, qrels, candidates, epochs=1, queries_per_step=2, negatives=1, lr=1e-3, head_lr=1e-2,
                        warmup=0.0)
    assert len(history) == 1 and np.isfinite(history["loss"]).all(), history
    after = dict(model.model.named_parameters())
    changed = [name for name, value in before.items() if not torch.equal(value, after[name].detach())]
    assert changed, f"no trainable parameter of {type(model).__name__} changed in one step"


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

"""RankGPT keeps the contract of tests/models/test_contract.py that applies to a listwise re-ranker
without weights (empty frames, missing columns, columns kept, batch and row-order invariance,
repr, pt.Experiment beside the library's models), with a deterministic backend. Save/load does
not apply: RankGPT has no trained state, its repr rebuilds it."""
import pandas as pd
import pyterrier as pt
import pytest
from helpers.chat_server import ChatServer, by_overlap
from helpers.contract import check_columns_kept, frame
from pyterrier.measures import nDCG

import pyterrier_longdoc as pl
from pyterrier_longdoc.listwise import ChatBackend, OpenAIChat, RankGPT, Reply

# models built over a plain encoder (the tiny random BERT) get a new head: expected here, not what these tests are about
pytestmark = pytest.mark.filterwarnings("ignore::pyterrier_longdoc.UntrainedHeadWarning")


class OverlapChat(ChatBackend):
    """A deterministic chat model: passages by the query words they hold (see chat_server.by_overlap)."""

    def __init__(self, model="overlap"):
        self.model = model

    def complete(self, messages):
        return Reply(by_overlap(messages), 0, 0)


def candidates():  # the contract's frame, with the first stage's scores
    inp = frame()
    return inp.assign(score=-inp["text"].str.len().astype(float))


@pytest.fixture
def model():
    return RankGPT(OverlapChat(), window_passages=4, stride_passages=2)


def test_empty_frame_gives_empty_frame_with_score_and_rank(model):
    out = model(candidates().iloc[:0])
    assert out.empty and {"score", "rank", "extra"} <= set(out.columns)


def test_missing_column_names_it_and_the_model(model):
    with pytest.raises(Exception) as error:
        model(candidates().drop(columns=["text"]))
    assert "text" in str(error.value) and "RankGPT" in str(error.value)


def test_output_keeps_every_input_column_and_dtype(model):
    inp = candidates()
    check_columns_kept(inp, model(inp))


def test_batch_and_row_order_do_not_change_the_ranking(model):
    inp = candidates()
    reference = model(inp).set_index(["qid", "docno"])[["score", "rank"]]
    shuffled = model(inp.sample(frac=1, random_state=3)).set_index(["qid", "docno"])[["score", "rank"]]
    alone = pd.concat([model(group) for _, group in inp.groupby("qid")]).set_index(["qid", "docno"])
    pd.testing.assert_frame_equal(shuffled.loc[reference.index], reference)
    pd.testing.assert_frame_equal(alone.loc[reference.index, ["score", "rank"]], reference)


def test_the_first_stage_order_is_read_from_rank_then_score(model):
    inp = candidates().query("qid == 'q1'")
    by_score = RankGPT(OverlapChat(), window_passages=2, stride_passages=1, top_k=2)
    best = inp.sort_values("score", ascending=False)["docno"].tolist()
    assert by_score(inp).sort_values("rank")["docno"].tolist()[2:] == best[2:]  # below top_k: the first stage's
    reversed_ranks = inp.assign(rank=inp["score"].rank(method="first").astype(int))  # rank wins over score
    assert by_score(reversed_ranks).sort_values("rank")["docno"].tolist()[2:] == best[::-1][2:]


def test_bad_input_names_the_problem(model):
    with pytest.raises(ValueError, match="column 'text' has missing values"):
        model(candidates().assign(text=None))
    two_queries = candidates()
    two_queries.loc[0, "query"] = "another query"
    with pytest.raises(ValueError, match="qid 'q1' has rows with different query texts"):
        model(two_queries)
    for bad, problem in ((dict(window_passages=0), "window_passages must be a positive integer"),
                         (dict(stride_passages=5, window_passages=4), r"stride_passages \(5\) > window_passages \(4\)"),
                         (dict(top_k=-1), "top_k"), (dict(max_doc_tokens=1.5), "max_doc_tokens")):
        with pytest.raises(ValueError, match=problem):
            RankGPT(OverlapChat(), **bad)
    with pytest.raises(TypeError, match="must be a ChatBackend"):
        RankGPT("gpt-4o-mini")


def test_the_old_window_names_count_passages_with_a_deprecation_warning():
    with pytest.warns(DeprecationWarning, match="(window|step) is deprecated, use (window|stride)_passages") as caught:
        old = RankGPT(OverlapChat(), window=4, step=2)
    messages = " ".join(str(w.message) for w in caught)
    assert "window is deprecated, use window_passages" in messages and "step is deprecated, use stride_passages" in messages
    assert (old.window_passages, old.stride_passages) == (4, 2)
    assert repr(old) == repr(RankGPT(OverlapChat(), window_passages=4, stride_passages=2))
    assert old(candidates()).equals(RankGPT(OverlapChat(), window_passages=4, stride_passages=2)(candidates()))
    with pytest.raises(TypeError, match="give stride_passages only"):
        RankGPT(OverlapChat(), step=2, stride_passages=3)


def test_repr_rebuilds_the_call(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-shown")
    for model in (RankGPT(OverlapChat(), window_passages=4, stride_passages=2, max_doc_tokens=None),
                  RankGPT(OpenAIChat("gpt-4o-mini", max_tokens=300), context_tokens=128_000)):
        rebuilt = eval(repr(model), {"RankGPT": RankGPT, "OverlapChat": OverlapChat, "OpenAIChat": OpenAIChat})
        assert repr(rebuilt) == repr(model) and "not-shown" not in repr(model)


def test_works_in_an_experiment_beside_the_librarys_models(tiny_bert, monkeypatch):
    inp = candidates()
    first_stage = pt.Transformer.from_df(inp.drop(columns=["extra", "label"]))
    topics = inp[["qid", "query"]].drop_duplicates()
    qrels = inp.assign(label=(inp["text"].str.contains("red") & (inp["qid"] == "q1")
                              | inp["text"].str.contains("blue") & (inp["qid"] == "q2")).astype(int))
    firstp = pl.FirstP(tiny_bert, max_query_tokens=8, max_doc_tokens=64, max_length=48)
    with ChatServer(default=by_overlap) as server:  # the real client, against the local server
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)
        rankgpt = RankGPT(OpenAIChat("local-model", base_url=server.url + "/v1"))  # one window per query
        table = pt.Experiment([first_stage, first_stage >> firstp, first_stage >> rankgpt], topics,
                              qrels[["qid", "docno", "label"]], [nDCG @ 10], names=["bm25", "FirstP", "RankGPT"])
    assert list(table["name"]) == ["bm25", "FirstP", "RankGPT"]
    assert table.set_index("name").loc["RankGPT", "nDCG@10"] == pytest.approx(1.0)  # the oracle ranks all first
    assert table.set_index("name").loc["bm25", "nDCG@10"] < 1.0

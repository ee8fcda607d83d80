"""RankGPT's prompt, sliding window, token budget and permutation parsing, and its calls through
the real openai and anthropic clients against a local HTTP server (scripted and malformed
permutations, retries, cache, token counts, keys)."""
import logging
import re
import threading
import time
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from helpers.chat_server import ChatServer, passages_of, reverse

from pyterrier_longdoc.listwise import AnthropicChat, ChatCallError, ChatCalls, OpenAIChat, RankGPT
from pyterrier_longdoc.listwise.prompt import fitting_budget, parse_permutation, rankgpt_messages, window_ranges

KEY = "sk-test-a1b2c3d4e5f6g7h8"


@pytest.fixture
def server():
    with ChatServer() as running:
        yield running


@pytest.fixture
def openai_key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def candidates(n, qid="q1", query="red cat"):
    return pd.DataFrame({"qid": qid, "query": query, "docno": [f"d{i}" for i in range(n)],
                         "text": [f"document number {i} text" for i in range(n)],
                         "score": np.arange(n, 0, -1, dtype=float)})


def openai_rankgpt(server, **settings):
    settings.setdefault("backoff", 0.01)
    return RankGPT(OpenAIChat("gpt-4o-mini", base_url=server.url + "/v1"), **settings)


def docnos(out, qid="q1"):
    return out[out["qid"] == qid].sort_values("rank")["docno"].tolist()


# --- the prompt, the window, the parser -------------------------------------------------------------------

def test_prompt_is_rankgpts():
    messages = rankgpt_messages("red cat", ["first text", "second text"])
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user", "assistant", "user",
                                             "assistant", "user"]
    assert messages[0]["content"].startswith("You are RankGPT, an intelligent assistant")
    assert messages[1]["content"] == ("I will provide you with 2 passages, each indicated by number identifier []. "
                                      "\nRank the passages based on their relevance to query: red cat.")
    assert messages[3]["content"] == "[1] first text" and messages[6]["content"] == "Received passage [2]."
    assert messages[-1]["content"].startswith("Search Query: red cat. \nRank the 2 passages above")
    assert "The output format should be [] > [], e.g., [1] > [2]." in messages[-1]["content"]


def test_windows_run_from_the_bottom_up():
    assert window_ranges(100, 20, 10) == [(80, 100), (70, 90), (60, 80), (50, 70), (40, 60), (30, 50), (20, 40),
                                          (10, 30), (0, 20)]
    assert window_ranges(25, 20, 10) == [(5, 25), (0, 15)]
    assert window_ranges(10, 20, 10) == [(0, 10)]
    assert window_ranges(0, 20, 10) == []


@pytest.mark.parametrize("answer, expected, clean", [
    ("[2] > [3] > [1]", [1, 2, 0], True),
    ("[2] > [2] > [7] > [1] > banana", [1, 0, 2], False),  # repeated and out-of-range ids dropped, [3] appended
    ("Here are the 3 passages ranked: [3] > [1]. Done.", [2, 0, 1], False),  # only bracketed ids count
    ("3 > 1 > 2", [2, 0, 1], True),  # no brackets: the numbers, as RankGPT's clean_response reads them
    ("<think>[1] looks best, or [3]</think>\n[2] > [3] > [1]", [1, 2, 0], True),
    ("", [0, 1, 2], False),
    ("[0] > [-1] > [3]", [2, 0, 1], False),
])
def test_parse_permutation_repairs_what_rank_llm_repairs(answer, expected, clean):
    assert parse_permutation(answer, 3) == (expected, clean)


def test_fitting_budget_is_the_largest_that_fits():
    # 20 + 10 + 45 + 45 = 120 fits; 46 would need 122
    assert fitting_budget([10, 50, 100], fixed=20, limit=120) == 45
    assert fitting_budget([10, 50], fixed=20, limit=1000) == 50
    with pytest.raises(ValueError, match="without any passage text"):
        fitting_budget([10], fixed=200, limit=100)


# --- through the openai client ------------------------------------------------------------------------------

def test_sliding_window_matches_the_hand_computed_permutation(server, openai_key):
    out = openai_rankgpt(server)(candidates(25))
    # window [5, 25) reversed: d0..d4, d24..d5; then window [0, 15) of that reversed
    assert docnos(out) == ([f"d{i}" for i in range(15, 25)] + [f"d{i}" for i in range(4, -1, -1)]
                           + [f"d{i}" for i in range(14, 4, -1)])
    first, second = (passages_of(r["body"]["messages"]) for r in server.requests)
    assert first == [f"document number {i} text" for i in range(5, 25)]
    assert second == [f"document number {i} text" for i in [0, 1, 2, 3, 4, *range(24, 14, -1)]]
    assert server.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"  # the key comes from the environment
    assert out["score"].tolist() == list(np.arange(25.0, 0, -1)) and out["rank"].tolist() == list(range(25))


@pytest.mark.parametrize("verbose, disabled, delayed", [(None, False, True), (True, False, False), (False, True, True)])
def test_the_bar_over_queries_follows_the_models_rule(server, openai_key, monkeypatch, verbose, disabled, delayed):
    """As the models: by default a bar once a call has run a few seconds (an API call takes seconds)."""
    import pyterrier as pt

    from pyterrier_longdoc.engine.progress import PROGRESS_DELAY

    bars = []

    def recorded(iterable=None, disable=False, delay=0, unit="it", **_):
        bars.append((disable, delay, unit))
        return iterable

    monkeypatch.setattr(pt, "tqdm", recorded)
    kwargs = {} if verbose is None else {"verbose": verbose}
    openai_rankgpt(server, **kwargs)(candidates(3))
    assert bars == [(disabled, PROGRESS_DELAY if delayed else 0, "query")]


def test_top_k_leaves_the_rest_in_first_stage_order(server, openai_key):
    out = openai_rankgpt(server, top_k=4)(candidates(6))
    assert docnos(out) == ["d3", "d2", "d1", "d0", "d4", "d5"]
    assert len(server.requests) == 1 and len(passages_of(server.requests[0]["body"]["messages"])) == 4


def test_malformed_permutations_are_repaired_and_counted(server, openai_key):
    server.script = ["Sure! The ranking: [3] > [3] > [9] > [1] and that is all."]
    model = openai_rankgpt(server)
    assert docnos(model(candidates(4))) == ["d2", "d0", "d1", "d3"]
    assert model.usage["repaired_answers"] == 1


def test_answers_naming_no_passage_keep_the_first_stage_order_with_a_warning(server, openai_key):
    server.script = ["I cannot rank these."] * 2
    model = openai_rankgpt(server, window_passages=4, stride_passages=2)
    with pytest.warns(UserWarning, match=r"2 of 2 answers named no passage \(e\.g\. 'I cannot rank these\.'\), so "
                                         r"every window keeps the first stage's order"):
        out = model(candidates(6))
    assert docnos(out) == [f"d{i}" for i in range(6)] and model.usage["repaired_answers"] == 2
    server.script = ["I cannot rank these.", "[2] > [1] > [3] > [4]"]
    with pytest.warns(UserWarning, match=r"1 of 2 answers named no passage .* their windows keep"):
        openai_rankgpt(server, window_passages=4, stride_passages=2, cache=False)(candidates(6))


def test_a_bracketed_number_in_a_document_is_written_as_rank_llm_writes_it(server, openai_key):
    frame = candidates(2).assign(text=["see [1] and [ 2 ] or [x]", "[12] first"])
    openai_rankgpt(server)(frame)
    assert passages_of(server.requests[0]["body"]["messages"]) == ["see (1) and [ 2 ] or [x]", "(12) first"]


@pytest.mark.parametrize("status", [429, 500, 503])
def test_rate_limits_and_server_errors_are_retried_with_exponential_back_off(server, openai_key, status,
                                                                            monkeypatch):
    sleeps = []
    monkeypatch.setattr(time, "sleep", sleeps.append)
    server.script = [(status, "slow down")] * 3
    model = openai_rankgpt(server, backoff=0.5)
    assert docnos(model(candidates(3))) == ["d2", "d1", "d0"]
    assert len(server.requests) == 4 and sleeps == [0.5, 1.0, 2.0]
    assert model.usage["retries"] == 3 and model.usage["requests"] == 1


def test_a_lost_connection_is_retried(openai_key):
    with ChatServer() as gone:
        url = gone.url
    model = RankGPT(OpenAIChat("gpt-4o-mini", base_url=url + "/v1"), retries=1, backoff=0)
    with pytest.raises(ChatCallError, match="after 2 attempt.*APIConnectionError"):
        model(candidates(3))
    assert model.usage["retries"] == 1


def test_back_off_is_capped_and_follows_retry_after():
    class Limited(Exception):
        def __init__(self, retry_after):
            self.status_code, self.response = 429, SimpleNamespace(headers={"retry-after": retry_after})

    calls = ChatCalls(OpenAIChat("m", base_url="http://127.0.0.1:9/v1"), backoff=1.0, max_backoff=10.0)
    assert [calls._delay(Limited("0"), attempt) for attempt in range(5)] == [1.0, 2.0, 4.0, 8.0, 10.0]
    assert calls._delay(Limited("7"), 0) == 7.0 and calls._delay(Limited("99"), 0) == 10.0
    assert calls._delay(Limited("Wed, 21 Oct 2015 07:28:00 GMT"), 1) == 2.0


def test_queries_are_sent_side_by_side_with_threads(openai_key):
    both_in_flight = threading.Barrier(2, timeout=10)  # passes only when two requests are open at once

    def answer_together(messages):
        both_in_flight.wait()
        return reverse(messages)

    with ChatServer(default=answer_together) as server:
        model = openai_rankgpt(server, threads=2)
        out = model(pd.concat([candidates(3), candidates(3, qid="q2", query="blue dog")]))  # two distinct prompts
    assert docnos(out, "q1") == docnos(out, "q2") == ["d2", "d1", "d0"] and model.usage["requests"] == 2


def test_threads_send_a_prompt_two_queries_share_once(openai_key):
    """Two qids with the same query and candidates make the same prompts: with threads, as
    serially, each distinct prompt is sent once (the second query waits for the first's answer)."""
    frame = pd.concat([candidates(25), candidates(25, qid="q2")])
    with ChatServer() as server:
        serial = openai_rankgpt(server)
        expected = serial(frame)
        serial_requests = len(server.requests)
    assert serial_requests == 2 and serial.usage["cache_hits"] == 2
    both_in_flight = threading.Barrier(2, timeout=2)  # holds the first request open until the other query asks

    def answer_when_both_asked(messages):
        try:
            both_in_flight.wait()
        except threading.BrokenBarrierError:  # only one request came: the other query waits for its answer
            pass
        return reverse(messages)

    with ChatServer(default=answer_when_both_asked) as server:
        threaded = openai_rankgpt(server, threads=2)
        pd.testing.assert_frame_equal(threaded(frame), expected)
    assert len(server.requests) == serial_requests
    assert threaded.usage["requests"] == serial_requests and threaded.usage["cache_hits"] == 2


def test_other_errors_fail_at_once_and_retries_run_out(server, openai_key):
    server.script = [(400, "bad request")]
    with pytest.raises(ChatCallError, match="HTTP 400.*bad request"):
        openai_rankgpt(server)(candidates(3))
    assert len(server.requests) == 1
    server.script = [(503, "down")] * 3
    with pytest.raises(ChatCallError, match="after 3 attempt.*HTTP 503"):
        openai_rankgpt(server, retries=2)(candidates(3))
    assert len(server.requests) == 4


def test_cache_answers_a_repeated_prompt_without_a_request(server, openai_key, tmp_path):
    model = openai_rankgpt(server, cache_dir=tmp_path / "cache")
    first = model(candidates(25))
    assert len(server.requests) == 2
    pd.testing.assert_frame_equal(model(candidates(25)), first)
    assert len(server.requests) == 2 and model.usage["cache_hits"] == 2
    again = openai_rankgpt(server, cache_dir=tmp_path / "cache")  # another process: the answers on disk
    pd.testing.assert_frame_equal(again(candidates(25)), first)
    assert len(server.requests) == 2 and again.usage["requests"] == 0
    for file in (tmp_path / "cache").glob("*/*.json"):  # a damaged file is asked again and rewritten
        file.write_text("{not json")
    again = openai_rankgpt(server, cache_dir=tmp_path / "cache")
    pd.testing.assert_frame_equal(again(candidates(25)), first)
    assert len(server.requests) == 4 and all("answer" in f.read_text() for f in (tmp_path / "cache").glob("*/*"))
    uncached = openai_rankgpt(server, cache=False)
    uncached(candidates(25))
    uncached(candidates(25))
    assert len(server.requests) == 8


@pytest.mark.parametrize("content", ['{"answer": 42}', '["[2] > [1]"]', '{"text": "[2] > [1]"}'])
def test_a_cache_file_of_the_wrong_shape_is_named(server, openai_key, tmp_path, content):
    openai_rankgpt(server, cache_dir=tmp_path / "cache")(candidates(3))
    (file,) = (tmp_path / "cache").glob("*/*.json")
    file.write_text(content)  # valid JSON, but not an answer
    with pytest.raises(ValueError, match=re.escape(str(file)) + r".*expected \{\"answer\": "):
        openai_rankgpt(server, cache_dir=tmp_path / "cache")(candidates(3))


def test_tokens_sent_and_received_are_the_servers_counts(server, openai_key):
    server.usage = (321, 17)
    model = openai_rankgpt(server)
    model(pd.concat([candidates(25), candidates(5, qid="q2")]))
    assert model.usage["requests"] == 3
    assert model.usage["prompt_tokens"] == 3 * 321 and model.usage["completion_tokens"] == 3 * 17


def test_documents_are_cut_to_the_token_budget(server, openai_key, tiny_bert):
    from transformers import AutoTokenizer

    inp = candidates(2)
    inp["text"] = [" ".join(f"w{i}" for i in range(500)), "short  text\n here"]
    openai_rankgpt(server, max_doc_tokens=300)(inp)
    sent = passages_of(server.requests[-1]["body"]["messages"])
    assert sent == [" ".join(f"w{i}" for i in range(300)), "short text here"]  # RankGPT's white space kept
    openai_rankgpt(server, max_doc_tokens=None)(inp)  # LongP: whole documents
    assert passages_of(server.requests[-1]["body"]["messages"])[0] == inp["text"][0]
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    inp["text"] = ["the cat sat on the red mat " * 20, "cat"]
    openai_rankgpt(server, max_doc_tokens=9, tokenizer=tokenizer)(inp)
    cut = passages_of(server.requests[-1]["body"]["messages"])[0]
    assert inp["text"][0].startswith(cut) and len(tokenizer.tokenize(cut)) == 9


def test_a_prompt_over_the_context_gets_shorter_passages(server, openai_key):
    inp = candidates(3)
    inp["text"] = [" ".join(["word"] * 1000)] * 3
    openai_rankgpt(server, max_doc_tokens=None, context_tokens=1000)(inp)
    messages = server.requests[-1]["body"]["messages"]
    words = sum(len(m["content"].split()) + 4 for m in messages) + 200
    assert words <= 1000 and words + 3 > 1000  # the largest budget that fits, counted as RankGPT counts


def test_keys_never_appear_in_repr_errors_or_logs(server, openai_key, caplog):
    server.script = [(401, "Incorrect API key provided: {authorization}")]
    model = openai_rankgpt(server)
    with caplog.at_level(logging.DEBUG), pytest.raises(ChatCallError) as error:
        model(candidates(3))
    assert KEY in server.requests[0]["headers"]["authorization"]  # the server did echo it...
    assert "HTTP 401" in str(error.value) and KEY not in str(error.value)  # ...but the error does not
    assert error.value.__cause__ is None and error.value.__context__ is None  # nor in the exception's chain
    assert KEY not in repr(model) and KEY not in repr(model.backend) and KEY not in caplog.text


def test_no_key_and_no_local_server_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ValueError, match="environment variable OPENAI_API_KEY"):
        OpenAIChat("gpt-4o-mini")


# --- through the anthropic client ---------------------------------------------------------------------------

def test_anthropic_messages_protocol(server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server.script = [(429, "rate limited"), (529, "overloaded: {authorization}"), "[2] > [1] > [2] > [5]"]
    server.usage = (40, 3)
    model = RankGPT(AnthropicChat("claude-3-haiku-20240307", base_url=server.url), backoff=0.01)
    assert docnos(model(candidates(3))) == ["d1", "d0", "d2"]
    body = server.requests[-1]["body"]
    headers = server.requests[-1]["headers"]
    assert server.requests[-1]["path"] == "/v1/messages"
    assert KEY in (headers.get("x-api-key") or headers["authorization"])  # the header depends on the client's version
    assert body["system"].startswith("You are RankGPT") and body["messages"][0]["role"] == "user"
    assert body["temperature"] == 0 and body["max_tokens"] == 1024
    assert model.usage == {"requests": 1, "prompt_tokens": 40, "completion_tokens": 3, "cache_hits": 0,
                           "retries": 2, "repaired_answers": 1}
    server.script = [(401, "invalid x-api-key {authorization}")]
    with pytest.raises(ChatCallError, match="HTTP 401") as error:
        model(candidates(4))
    assert KEY not in str(error.value) and KEY not in repr(model)

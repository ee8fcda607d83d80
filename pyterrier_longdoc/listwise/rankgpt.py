"""RankGPT (Sun et al., "Is ChatGPT Good at Search? Investigating Large Language Models as
Re-Ranking Agents", EMNLP 2023): listwise re-ranking by a chat LLM over a sliding window."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyterrier as pt

from ..engine.frames import column_texts, input_frame
from ..engine.progress import progress_bar
from .._warn import renamed, warn
from .backends import ChatBackend
from .calls import ChatCalls
from .prompt import (ANSWER_RESERVE, MESSAGE_OVERHEAD, TokenBudget, fitting_budget, parse_permutation, passage,
                     rankgpt_messages, read_ids, window_ranges)


WINDOW_PASSAGES, STRIDE_PASSAGES = 20, 10  # Sun et al.'s sliding window: 20 passages, every 10


class RankGPT(pt.Transformer):
    """RankGPT (Sun et al., EMNLP 2023): a chat LLM orders numbered passages, 20 at a time,
    over a window sliding up from the bottom of the list in steps of 10 (OpenAI, Anthropic,
    OpenAI-compatible servers or a local transformers model).

    Each prompt asks for a permutation (``[2] > [1] > ...``) of the window's passages; as the
    window moves up, relevant documents climb to the top. A ``[N]`` inside a document is sent as
    ``(N)``, as rank_llm sends it, so that it cannot pass for a passage identifier; an answer that
    names no passage leaves its window in the first stage's order, with a warning.

    Args:
        backend: an :class:`OpenAIChat` (OpenAI, or vLLM/llama.cpp/Ollama via ``base_url``),
            :class:`AnthropicChat` or :class:`TransformersChat`.
        window_passages, stride_passages: passages per prompt and how many passages the window
            moves up (20 and 10, as the paper; rank_llm's ``window_size`` and ``stride``).
        top_k: how many candidates of each query are re-ranked (100, as the paper); the rest
            keep their order below them.
        max_doc_tokens: each document cut to its first ``max_doc_tokens`` tokens (the paper's
            FirstP variant; RankGPT's own cut is 300 words), or None for whole documents (LongP).
        context_tokens: the model's context; a prompt that would not fit (with the backend's
            answer cap, or RankGPT's 200 tokens, kept for the answer) gets a smaller budget per
            document, as RankGPT shrinks its passages. Default: the backend's own (a local
            model's), else no limit. Counted in ``tokenizer``'s units: give an API model's
            tokenizer (or a margin) when words would undercount.
        tokenizer: a HuggingFace fast tokenizer (or its name) to count tokens with; default: the
            backend's own, else white-space separated words (RankGPT's unit).
        text_field: the column with the document text.
        cache, cache_dir, retries, backoff: see :class:`~pyterrier_longdoc.listwise.ChatCalls`.
        threads: queries re-ranked at once (an API answers several requests in parallel; the
            windows of one query always run in turn, each on the previous one's order).
        verbose: a progress bar over queries: True from the start, None (default) once the call
            has run a few seconds, False never (the models' rule).
        window, step: the deprecated names of ``window_passages`` and ``stride_passages`` (a
            DeprecationWarning; they go in the next release: the library's ``window`` counts tokens).

    The candidates' first-stage order is read from ``rank`` when the input has it, else from
    ``score`` (descending), else the rows' order; ties go by docno. Output: the input with
    ``score`` (``n`` for the top document of ``n``, down to 1) and ``rank`` replaced, every other
    column kept, sorted by qid and rank. ``usage`` counts requests, tokens sent and received (as
    the server reports them), cache hits, retries and answers that were not a clean permutation.
    """

    listwise = True  # a passage's score depends on the others of its list (query_controls reads it)

    def __init__(self, backend: ChatBackend, *, window_passages: int = WINDOW_PASSAGES,
                 stride_passages: int = STRIDE_PASSAGES,
                 top_k: int | None = 100, max_doc_tokens: int | None = 300, context_tokens: int | None = None,
                 tokenizer=None, text_field: str = "text", cache: bool = True, cache_dir=None, retries: int = 6,
                 backoff: float = 1.0, threads: int = 1, verbose: bool | None = None, window: int | None = None,
                 step: int | None = None):
        window_passages, stride_passages = _window_passages(window_passages, stride_passages, window, step)
        for name, value, optional in (("window_passages", window_passages, False),
                                      ("stride_passages", stride_passages, False), ("top_k", top_k, True),
                                      ("max_doc_tokens", max_doc_tokens, True),
                                      ("context_tokens", context_tokens, True), ("threads", threads, False)):
            if not (optional and value is None) and (not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive integer{' or None' if optional else ''}, got {value!r}")
        if stride_passages > window_passages:
            raise ValueError(f"stride_passages ({stride_passages}) > window_passages ({window_passages}) would leave "
                             "documents between windows unranked")
        self.calls = ChatCalls(backend, cache=cache, cache_dir=cache_dir, retries=retries, backoff=backoff)
        self.backend, self.window_passages, self.stride_passages = backend, window_passages, stride_passages
        self.top_k = top_k
        self.max_doc_tokens, self.text_field, self.threads, self.verbose = max_doc_tokens, text_field, threads, verbose
        self.context_tokens = context_tokens if context_tokens is not None else backend.context_tokens
        if isinstance(tokenizer, str):
            from transformers import AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(tokenizer)
        self.tokenizer = tokenizer
        self.budget = TokenBudget(tokenizer if tokenizer is not None else backend.tokenizer)

    @property
    def usage(self) -> dict:
        return dict(self.calls.usage)

    def __repr__(self):
        tokenizer = "" if self.tokenizer is None else f", tokenizer={self.tokenizer.name_or_path!r}"
        return (f"RankGPT({self.backend!r}, window_passages={self.window_passages}, "
                f"stride_passages={self.stride_passages}, top_k={self.top_k}, "
                f"max_doc_tokens={self.max_doc_tokens}, context_tokens={self.context_tokens}{tokenizer})")

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        input_frame(inp, ["qid", "query", "docno", self.text_field], self)
        queries = column_texts(inp, "query", self)
        texts = column_texts(inp, self.text_field, self)
        best_first = first_stage_order(inp)
        groups = pd.Series(best_first).groupby(inp["qid"].to_numpy()[best_first], sort=True).indices
        queries_rows = []  # (query, its rows best first)
        for qid, positions in groups.items():
            rows = best_first[positions]
            if len({queries[i] for i in rows}) > 1:
                raise ValueError(f"{self!r}: qid {qid!r} has rows with different query texts "
                                 f"({sorted({queries[i] for i in rows})[:2]}); one query per qid")
            queries_rows.append((queries[rows[0]], rows))
        scores, unread = np.zeros(len(inp)), []
        with ThreadPoolExecutor(self.threads) as pool:  # the windows of a query run in turn, queries side by side
            results = pool.map(lambda item: self._rerank(item[0], [texts[i] for i in item[1]]), queries_rows)
            for (_, rows), (order, no_ids, windows) in progress_bar(
                    self.verbose, iterable=zip(queries_rows, results), total=len(queries_rows), desc="RankGPT",
                    unit="query"):
                scores[rows[order]] = np.arange(len(rows), 0, -1, dtype=np.float64)
                unread.append((no_ids, windows))
        self._warn_unread(unread)
        ranked = pt.model.add_ranks(inp.assign(score=scores))
        return ranked.sort_values(["qid", "rank"], kind="stable").reset_index(drop=True)

    def rerank(self, query: str, texts: list[str]) -> np.ndarray:
        """The new order of ``texts`` (given best first): RankGPT's sliding window over the top ``top_k``."""
        return self._rerank(query, texts)[0]

    def _rerank(self, query: str, texts: list[str]) -> tuple[np.ndarray, list[str], int]:
        """(the new order, the answers that named no passage, the number of windows)."""
        order = list(range(len(texts)))
        ends = [self.budget.ends(t) for t in texts[:self.top_k]]
        no_ids, windows = [], window_ranges(len(ends), self.window_passages, self.stride_passages)
        for start, end in windows:
            ids = order[start:end]
            answer = self.calls(self.messages(query, [texts[i] for i in ids], [ends[i] for i in ids]))
            permutation, clean = parse_permutation(answer, len(ids))
            self.calls.count(repaired_answers=int(not clean))
            if not read_ids(answer, len(ids))[0]:
                no_ids.append(answer)
            order[start:end] = [ids[j] for j in permutation]
        return np.array(order, dtype=int), no_ids, len(windows)

    def _warn_unread(self, unread: list[tuple[list[str], int]]) -> None:
        """Answers that name no passage leave their windows in the first stage's order: say so."""
        answers = [a for no_ids, _ in unread for a in no_ids]
        if answers:
            windows = sum(n for _, n in unread)
            warn(f"{self!r}: {len(answers)} of {windows} answers named no passage (e.g. {answers[0][:80]!r}), so "
                 f"{'their windows keep' if len(answers) < windows else 'every window keeps'} the first stage's "
                 "order; usage['repaired_answers'] counts them with the other repaired answers")

    def messages(self, query: str, texts: list[str], ends: list[list[int]]) -> list[dict]:
        """RankGPT's prompt for one window, each document within the token budget."""
        budget = self.max_doc_tokens
        if self.context_tokens is not None:
            empty = rankgpt_messages(query, [""] * len(texts))
            reserve = self.backend.answer_tokens or ANSWER_RESERVE
            fixed = sum(self.budget.count(m["content"]) + MESSAGE_OVERHEAD for m in empty) + reserve
            lengths = [len(e) if budget is None else min(len(e), budget) for e in ends]
            fitting = fitting_budget(lengths, fixed, self.context_tokens)
            if fitting < max(lengths, default=0):
                budget = fitting
        return rankgpt_messages(query, [passage(t, budget, e) for t, e in zip(texts, ends)])


def first_stage_order(inp: pd.DataFrame) -> np.ndarray:
    """``inp``'s row numbers in first-stage order: by ``rank``, else ``score`` descending, else as
    given; ties by docno (so the result does not depend on the rows' order)."""
    if "rank" in inp.columns:
        primary = inp["rank"].to_numpy(dtype=float)
    elif "score" in inp.columns:
        primary = -inp["score"].to_numpy(dtype=float)
    else:
        return np.arange(len(inp))
    return np.lexsort((inp["docno"].astype(str).to_numpy(), primary))


def _window_passages(window_passages: int, stride_passages: int, window, step) -> tuple:
    """The window's passages and stride, from their deprecated names ``window`` and ``step`` too."""
    given = renamed({"window_passages": window_passages, "stride_passages": stride_passages, "window": window,
                     "step": step}, {"window": "window_passages", "step": "stride_passages"}, "RankGPT",
                    defaults={"window_passages": WINDOW_PASSAGES, "stride_passages": STRIDE_PASSAGES})
    return given["window_passages"], given["stride_passages"]

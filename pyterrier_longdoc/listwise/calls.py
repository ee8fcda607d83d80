"""The calls RankGPT makes to a chat backend: answers cached by prompt, retries with exponential
back-off, and a count of the tokens sent and received."""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
import time
from concurrent.futures import Future
from pathlib import Path

from ..engine.files import MalformedInputError
from .backends import ChatBackend, Reply

USAGE_KEYS = ("requests", "prompt_tokens", "completion_tokens", "cache_hits", "retries", "repaired_answers")


class ChatCallError(RuntimeError):
    """A request that failed for good (not retryable, or out of retries); the message has the
    status and the server's words, never the API key."""


class ChatCalls:
    """Sends prompts to ``backend``, at most once per distinct prompt.

    Args:
        backend: a :class:`ChatBackend`.
        cache: keep answers in memory, keyed by the backend's settings and the messages.
        cache_dir: also keep them on disk, one JSON file per prompt (shared between runs and
            processes: files are written whole, then renamed).
        retries: further attempts after a rate limit (429), a server error (5xx) or a lost
            connection; other errors (a bad request, a wrong key) fail at once.
        backoff: seconds before the first retry, doubled each time up to ``max_backoff``; a
            ``Retry-After`` header of the server wins when it asks for longer.
    """

    def __init__(self, backend: ChatBackend, *, cache: bool = True, cache_dir: str | os.PathLike | None = None,
                 retries: int = 6, backoff: float = 1.0, max_backoff: float = 60.0):
        if not isinstance(backend, ChatBackend):
            raise TypeError(f"backend must be a ChatBackend (OpenAIChat, AnthropicChat, TransformersChat), "
                            f"got {type(backend).__name__}")
        if retries < 0 or backoff < 0:
            raise ValueError(f"retries and backoff must be >= 0, got {retries} and {backoff}")
        self.backend, self.retries, self.backoff, self.max_backoff = backend, retries, backoff, max_backoff
        self.cache: dict[str, str] | None = {} if cache or cache_dir else None  # answers by key
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.usage = dict.fromkeys(USAGE_KEYS, 0)
        self._lock = threading.Lock()
        self._in_flight: dict[str, Future] = {}  # prompts being sent, by key: threads asking the same wait for them
        self._in_flight_lock = threading.Lock()

    def count(self, **amounts: int) -> None:
        with self._lock:  # RankGPT may send several queries' prompts at once, from threads
            for name, amount in amounts.items():
                self.usage[name] += amount

    def key(self, messages: list[dict]) -> str:
        prompt = json.dumps([self.backend.settings, messages], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(prompt.encode("utf-8", "surrogatepass")).hexdigest()

    def __call__(self, messages: list[dict]) -> str:
        cache = self.cache
        if cache is None:
            return self._send(messages)
        key = self.key(messages)
        with self._in_flight_lock:  # a prompt another thread is sending is waited for, not sent again
            answer = self._cached(cache, key)
            waiting = self._in_flight.get(key) if answer is None else None
            if answer is None and waiting is None:
                self._in_flight[key] = Future()
        if waiting is not None:
            answer = waiting.result()
        if answer is not None:  # cached, or sent by the other thread
            self.count(cache_hits=1)
            return answer
        future = self._in_flight[key]
        try:
            answer = self._send(messages)
            self._store(cache, key, answer)
        except BaseException as error:
            future.set_exception(error)
            raise
        else:
            future.set_result(answer)
        finally:
            with self._in_flight_lock:
                del self._in_flight[key]
        return answer

    def _send(self, messages: list[dict]) -> str:
        reply = self._with_retries(messages)
        self.count(requests=1, prompt_tokens=reply.prompt_tokens, completion_tokens=reply.completion_tokens)
        return reply.text

    def _with_retries(self, messages: list[dict]) -> Reply:
        for attempt in range(self.retries + 1):
            try:
                return self.backend.complete(messages)
            except Exception as error:  # the clients' own exception types; the backend says which to retry
                if not self.backend.retryable(error) or attempt == self.retries:
                    failure = self._failure(error, attempt + 1)
                    break
                self.count(retries=1)
                delay = self._delay(error, attempt)
            time.sleep(delay)
        # raised out of the except block: the client's exception (its request carries the key) is not its context
        raise failure

    def _delay(self, error: Exception, attempt: int) -> float:
        delay = min(self.max_backoff, self.backoff * 2 ** attempt)
        headers = getattr(getattr(error, "response", None), "headers", None) or {}
        try:
            return min(self.max_backoff, max(delay, float(headers.get("retry-after", 0))))
        except ValueError:  # an HTTP date instead of seconds
            return delay

    def _failure(self, error: Exception, attempts: int) -> ChatCallError:
        status = getattr(error, "status_code", None)
        what = f"HTTP {status}" if status is not None else type(error).__name__
        message = self.backend.scrub(f"{self.backend!r}: request failed after {attempts} attempt(s): {what}: {error}")
        return ChatCallError(message)

    @staticmethod
    def _path(cache_dir: Path, key: str) -> Path:
        return cache_dir / key[:2] / f"{key}.json"

    def _cached(self, cache: dict[str, str], key: str) -> str | None:
        if key in cache:
            return cache[key]
        path = None if self.cache_dir is None else self._path(self.cache_dir, key)
        if path is not None and path.is_file():
            try:
                saved = json.loads(path.read_text(encoding="utf-8"))
            except ValueError:  # a damaged file (cut short) is asked again and rewritten
                return None
            if not isinstance(saved, dict) or not isinstance(saved.get("answer"), str):
                # valid JSON, but not written by ChatCalls: refused rather than guessed at or overwritten
                raise MalformedInputError(path, None, "a RankGPT cache file holding valid JSON of the "
                                          'wrong shape: expected {"answer": "<the model\'s answer text>"}, got '
                                          f"{json.dumps(saved)[:80]}; delete the file to ask the model again")
            cache[key] = saved["answer"]
            return cache[key]
        return None

    def _store(self, cache: dict[str, str], key: str, answer: str) -> None:
        cache[key] = answer
        if self.cache_dir is None:
            return
        path = self._path(self.cache_dir, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, suffix=".tmp", delete=False) as f:
            json.dump({"answer": answer}, f, ensure_ascii=False)
        os.replace(f.name, path)

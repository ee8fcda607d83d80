"""Chat backends for RankGPT: the ``openai`` client (OpenAI or any server speaking its
chat-completions protocol: vLLM, llama.cpp, Ollama) and the ``anthropic`` client (Anthropic's
messages protocol). Both are optional extras (``pip install pyterrier-longdoc[llm]``).

API keys are read from the environment only, when the client is built; they are kept inside the
client and out of every repr and error message.
"""
from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Reply:
    """The model's answer and the tokens the call cost, as the server counted them."""
    text: str
    prompt_tokens: int
    completion_tokens: int


class ChatBackend:
    """A chat model that answers a list of ``{"role", "content"}`` messages.

    Subclasses implement ``complete``; ``settings`` (everything that changes the answer) keys
    the response cache. ``tokenizer``, ``context_tokens`` and ``answer_tokens``, when a backend
    knows them, are RankGPT's defaults for the token budget."""

    model: str
    tokenizer: Any = None  # a HuggingFace tokenizer, when the backend knows it
    context_tokens: int | None = None
    _key_variable: str | None = None

    @property
    def answer_tokens(self) -> int | None:
        """The cap on an answer's length, when the backend sets one."""
        return None

    def complete(self, messages: list[dict]) -> Reply:
        raise NotImplementedError

    @property
    def settings(self) -> dict:
        return {"backend": type(self).__name__, "model": self.model}

    def retryable(self, error: Exception) -> bool:
        """Rate limits (429) and server errors (5xx, and Anthropic's 529 overload) are worth a retry."""
        status = getattr(error, "status_code", None)
        return status == 429 or (isinstance(status, int) and status >= 500)

    def scrub(self, text: str) -> str:
        """``text`` with the API key (if any) blanked out: servers may echo what they were sent."""
        key = os.environ.get(self._key_variable) if self._key_variable else None
        return text.replace(key, "***") if key and len(key) >= 4 else text

    def __repr__(self):
        options = ", ".join(f"{k}={v!r}" for k, v in self.settings.items() if k not in ("backend", "model"))
        return f"{type(self).__name__}({self.model!r}{', ' + options if options else ''})"


def _import(module: str):
    try:
        return __import__(module)
    except ImportError:
        raise ImportError(f"this backend needs the {module!r} package: pip install pyterrier-longdoc[llm] "
                          f"(or pip install {module})") from None


def _api_key(variable: str, base_url: str | None, service: str) -> str:
    key = os.environ.get(variable)
    if key:
        return key
    if base_url is None:
        raise ValueError(f"{service} needs an API key in the environment variable {variable}; set it (keys are "
                         "never taken as arguments), or give base_url for a local server without keys")
    return "EMPTY"  # local servers (vLLM, llama.cpp, Ollama) ignore it, but the clients need a value


class _APIChat(ChatBackend):
    """What the two API clients share: their settings, and connection errors as transient."""
    base_url: str | None
    temperature: float | None
    max_tokens: int | None
    _transient: tuple = ()

    @property
    def answer_tokens(self) -> int | None:
        return self.max_tokens

    @property
    def settings(self) -> dict:
        return {**super().settings, "base_url": self.base_url, "temperature": self.temperature,
                "max_tokens": self.max_tokens}

    def retryable(self, error: Exception) -> bool:
        return super().retryable(error) or isinstance(error, self._transient)


class OpenAIChat(_APIChat):
    """Chat completions through the ``openai`` client.

    Args:
        model: e.g. ``"gpt-4o-mini"``, or the name a local server gives its model.
        base_url: an OpenAI-compatible server, e.g. ``"http://localhost:8000/v1"`` (vLLM) or
            ``"http://localhost:11434/v1"`` (Ollama); default OpenAI's.
        api_key_env: the environment variable holding the key (optional with ``base_url``).
        temperature: 0, as RankGPT.
        max_tokens: a cap on the answer's length (default: the server's).
        timeout: seconds per request.
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 temperature: float = 0.0, max_tokens: int | None = None, timeout: float = 120.0):
        openai = _import("openai")
        self.model, self.base_url, self.temperature, self.max_tokens = model, base_url, temperature, max_tokens
        self._key_variable = api_key_env
        # retries are RankGPT's own (with its back-off and counts), so the client's are off
        self._client = openai.OpenAI(api_key=_api_key(api_key_env, base_url, "OpenAIChat"), base_url=base_url,
                                     max_retries=0, timeout=timeout)
        self._transient = (openai.APIConnectionError,)

    def complete(self, messages: list[dict]) -> Reply:
        options = {"max_tokens": self.max_tokens} if self.max_tokens is not None else {}
        response = self._client.chat.completions.create(model=self.model, messages=messages,
                                                        temperature=self.temperature, **options)
        usage = response.usage
        return Reply(response.choices[0].message.content or "", usage.prompt_tokens if usage else 0,
                     usage.completion_tokens if usage else 0)


class AnthropicChat(_APIChat):
    """Anthropic's messages API through the ``anthropic`` client; RankGPT's system message goes
    to ``system``, its alternating user/assistant turns to ``messages``.

    Args:
        model: e.g. ``"claude-3-haiku-20240307"``.
        base_url: another server speaking the messages protocol; default Anthropic's.
        api_key_env: the environment variable holding the key.
        temperature: 0, as RankGPT; None leaves it to the model.
        max_tokens: the answer's cap, which this API requires (a 20-passage permutation needs ~120).
        timeout: seconds per request.
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "ANTHROPIC_API_KEY",
                 temperature: float | None = 0.0, max_tokens: int = 1024, timeout: float = 120.0):
        anthropic = _import("anthropic")
        self.model, self.base_url, self.temperature, self.max_tokens = model, base_url, temperature, max_tokens
        self._key_variable = api_key_env
        self._client = anthropic.Anthropic(api_key=_api_key(api_key_env, base_url, "AnthropicChat"),
                                           base_url=base_url, max_retries=0, timeout=timeout)
        self._transient = (anthropic.APIConnectionError,)
        # newer clients dropped the temperature argument (newer models fix it); then it goes in the body
        accepted = inspect.signature(self._client.messages.create).parameters
        self._options = ({} if temperature is None else {"temperature": temperature} if "temperature" in accepted
                         else {"extra_body": {"temperature": temperature}})

    def complete(self, messages: list[dict]) -> Reply:
        system = "\n".join(m["content"] for m in messages if m["role"] == "system")
        turns = [m for m in messages if m["role"] != "system"]
        response = self._client.messages.create(model=self.model, system=system, messages=turns,
                                                max_tokens=self.max_tokens, **self._options)
        text = "".join(block.text for block in response.content if getattr(block, "type", None) == "text")
        return Reply(text, response.usage.input_tokens, response.usage.output_tokens)

"""A real HTTP server on 127.0.0.1 that speaks OpenAI's chat-completions protocol
(``POST /v1/chat/completions``) and Anthropic's messages protocol (``POST /v1/messages``), with
scripted answers: RankGPT's clients are tested through the real ``openai`` and ``anthropic``
libraries, offline."""
from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def passages_of(messages: list[dict]) -> list[str]:
    """The passages of a RankGPT prompt, in prompt order (``[i] text`` user turns)."""
    found = [re.match(r"\[(\d+)\] ?(.*)", m["content"], re.DOTALL) for m in messages if m["role"] == "user"]
    return [m.group(2) for m in found if m]


def query_of(messages: list[dict]) -> str:
    return re.search(r"Search Query: (.*?)\. \n", messages[-1]["content"], re.DOTALL).group(1)


def reverse(messages: list[dict]) -> str:
    """``[n] > ... > [1]``: the window turned upside down."""
    return " > ".join(f"[{i}]" for i in range(len(passages_of(messages)), 0, -1))


def by_overlap(messages: list[dict]) -> str:
    """A deterministic oracle: passages by how many query words they hold, then by their text."""
    words = set(query_of(messages).lower().split())
    passages = passages_of(messages)
    order = sorted(range(len(passages)), key=lambda i: (-len(words & set(passages[i].lower().split())), passages[i]))
    return " > ".join(f"[{i + 1}]" for i in order)


class ChatServer:
    """Answers each request with the next scripted item, then with ``default``; an item is an
    answer string, a function of the messages giving one, or ``(status, message)`` for an error
    (the message may use ``{authorization}``: the server echoes the key it was sent, as some do).
    ``requests`` records every request: path, headers and JSON body."""

    def __init__(self, default=reverse, usage=(11, 5)):
        self.script, self.default, self.usage, self.requests = [], default, usage, []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, path: str, headers: dict, body: dict) -> tuple[int, dict]:
        with self.lock:
            self.requests.append({"path": path, "headers": headers, "body": body})
            item = self.script.pop(0) if self.script else self.default
        anthropic = path.endswith("/messages")
        messages = body["messages"] if not anthropic else [{"role": "system", "content": body.get("system", "")},
                                                            *body["messages"]]
        if isinstance(item, tuple):
            status, message = item
            message = message.format(authorization=headers.get("authorization") or headers.get("x-api-key"))
            error = {"type": "api_error", "message": message}
            return status, {"type": "error", "error": error} if anthropic else {"error": error}
        text = item(messages) if callable(item) else item
        prompt, completion = self.usage
        if anthropic:
            return 200, {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                         "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
                         "stop_sequence": None, "usage": {"input_tokens": prompt, "output_tokens": completion}}
        return 200, {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                  "finish_reason": "stop"}],
                     "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                               "total_tokens": prompt + completion}}

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                headers = {k.lower(): v for k, v in self.headers.items()}
                status, payload = server.answer(self.path, headers, body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):  # quiet
                pass

        return Handler

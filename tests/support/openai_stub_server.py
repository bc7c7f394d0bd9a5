"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1, so the real OpenAI client runs offline.

Each POST /v1/chat/completions records its JSON body and answers with the next scripted `StubReply`; GET
/v1/models lists the `models` given (404 when none, as a server without the route). Every stub serves under a path
of its own (`http://127.0.0.1:PORT/stub-N/v1`): the backend remembers per base URL what a server serves and which
structured mode it accepted, and a later stub given the same port by the OS must not inherit that.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import count
from typing import Any


@dataclass(frozen=True)
class StubReply:
    content: str = ""
    status: int = 200
    error: str = ""
    prompt_tokens: int = 100
    completion_tokens: int = 20
    finish_reason: str = "stop"
    usage: bool = True  # False: the answer carries no usage, as some servers send
    delay_sec: float = 0.0  # wait this long before answering (a server that times out)


_STUB_NUMBERS = count(1)


class _Handler(BaseHTTPRequestHandler):
    server: _StubHTTPServer

    @property
    def route(self) -> str:
        """The request path below this stub's own prefix (the path a real server would see)."""
        return self.path.removeprefix(self.server.stub.prefix).rstrip("/")

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        models = self.server.stub.models
        found = self.route == "/v1/models" and models
        payload = {"object": "list", "data": [{"id": m, "object": "model"} for m in models]} if found else {}
        self._send(200 if found else 404, payload)

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        self.server.stub.requests.append({"path": self.route, "body": body})
        reply = self.server.stub.next_reply()
        if self.route != "/v1/chat/completions":
            reply = StubReply(status=404, error=f"no route {self.route}")
        time.sleep(reply.delay_sec)
        self._send(reply.status, self._payload(reply, body.get("model", "")))

    @staticmethod
    def _payload(reply: StubReply, model: str) -> dict[str, Any]:
        if reply.status != 200:
            return {"error": {"message": reply.error, "type": "invalid_request_error", "param": None, "code": None}}
        payload: dict[str, Any] = {
            "id": "chatcmpl-stub",
            "object": "chat.completion",
            "created": 0,
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.content},
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        if reply.usage:
            payload["usage"] = {
                "prompt_tokens": reply.prompt_tokens,
                "completion_tokens": reply.completion_tokens,
                "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            }
        return payload

    def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
        return


class _StubHTTPServer(ThreadingHTTPServer):
    stub: OpenAIStubServer


class OpenAIStubServer:
    """Use as a context manager; `url` is the base URL to give the client (ends in /v1)."""

    def __init__(self, *replies: StubReply, models: tuple[str, ...] = ()):
        self.models = models
        self.prefix = f"/stub-{next(_STUB_NUMBERS)}"
        self.requests: list[dict[str, Any]] = []
        self._replies: deque[StubReply] = deque(replies)
        self._lock = threading.Lock()
        self._http = _StubHTTPServer(("127.0.0.1", 0), _Handler)
        self._http.stub = self
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host}:{port}{self.prefix}/v1"

    def script(self, *replies: StubReply) -> None:
        with self._lock:
            self._replies.extend(replies)

    def next_reply(self) -> StubReply:
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return StubReply(status=500, error="the stub server has no scripted reply left")

    def bodies(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests]

    def __enter__(self) -> OpenAIStubServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._thread.join(timeout=5)

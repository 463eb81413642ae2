"""Shared fixtures of the content-check tests: a real local HTTP service whose replies a test scripts."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

import pytest


def pytest_configure(config: pytest.Config) -> None:
    # Until the stockade.testing plugin registers the project markers (CONTRIBUTING.md), register ours.
    for marker in ("ml: needs torch/transformers/presidio models", "slow: slower than a second"):
        config.addinivalue_line("markers", marker)


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-encoded unless bytes
    delay_s: float = 0.0


@dataclass
class ScriptedService:
    """A real HTTP server on 127.0.0.1. ``replies`` are consumed in order, then ``default`` answers."""

    Reply: ClassVar[type[Reply]] = Reply
    url: str = ""
    default: Reply = field(default_factory=lambda: Reply(body=[{"label": "non-toxic", "score": 0.99}]))
    replies: deque[Reply] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    handler: Any = None  # optional callable(request_json) -> Reply

    def next_reply(self, payload: dict[str, Any]) -> Reply:
        if self.replies:
            return self.replies.popleft()
        if self.handler is not None:
            reply: Reply = self.handler(payload)
            return reply
        return self.default


@pytest.fixture
def scripted_service() -> Iterator[ScriptedService]:
    service = ScriptedService()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            payload = json.loads(raw or b"{}")
            service.requests.append(payload)
            service.headers.append(dict(self.headers))
            reply = service.next_reply(payload)
            if reply.delay_s:
                time.sleep(reply.delay_s)
            body = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                pass

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    service.url = f"http://127.0.0.1:{server.server_address[1]}"
    yield service
    server.shutdown()
    server.server_close()

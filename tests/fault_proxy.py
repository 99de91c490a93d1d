"""An HTTP proxy in front of a real judge server that fails on request, for tests/test_faults.py.

Everything is forwarded to the upstream server except the chat completions that a planned fault takes: an
HTTP error status (with or without Retry-After), a dropped connection, a body cut short, a 200 whose body is
not JSON, or a delay and then a dropped connection. The proxy records the chat completions the upstream
answered and that reached the client, so a test can tell whether a resumed run asked for any of them again,
and when each chat completion arrived and the fault it met, so a test can tell when (and whether) it was
asked again. It listens on 127.0.0.1 only and forwards only to the upstream it was given. The server judge's
start-up probes (judge/server.py) pass untouched and unrecorded: they are asked again at every start by
design.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Sequence

from localeval.judge.server import PROBE_JSON, PROBE_SHAPE

PROBES = {json.dumps(PROBE_JSON, sort_keys=True), json.dumps(PROBE_SHAPE, sort_keys=True)}


@dataclass(frozen=True)
class Fault:
    """What the proxy does to one chat completion instead of forwarding it (`delay`: waits, then drops the
    connection: a client that waited that long has ignored its timeout, and an answer sent to a client that
    has given up could still be counted as received)."""

    kind: str  # status, drop, truncate, garbage, delay
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    def __str__(self) -> str:
        extra = "".join(f" {k}: {v}" for k, v in self.headers.items())
        return {"status": f"HTTP {self.status}{extra}", "delay": f"delay {self.seconds:g} s"}.get(self.kind, self.kind)


def status(code: int, retry_after: str | None = None) -> Fault:
    return Fault("status", code, {"Retry-After": retry_after} if retry_after is not None else {})


DROP, TRUNCATE, GARBAGE = Fault("drop"), Fault("truncate"), Fault("garbage")


def delay(seconds: float) -> Fault:
    return Fault("delay", seconds=seconds)


class FaultProxy:
    """`with FaultProxy(upstream) as proxy:`; `proxy.url` is the /v1 base URL to give --judge-url."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self._planned: deque[Fault] = deque()
        self._batches: deque[tuple[Fault, ...]] = deque()
        self._always: Fault | None = None
        self._lock = threading.Lock()
        self.answered: list[str] = []  # chat completions the upstream answered and the client received
        self.faulted: list[Fault] = []
        #: every chat completion as it arrived: time.monotonic(), what it asks (as in `answered`), the fault it met
        self.asked: list[tuple[float, str, Fault | None]] = []
        self.after_answer: Callable[[int], None] | None = None  # called with len(answered) after each one
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def plan(self, *faults: Fault, always: Fault | None = None, then: Sequence[Sequence[Fault]] = ()) -> None:
        """The next chat completions get `faults`, one each, in order; then every one gets `always`.
        `then`: more batches, each planned once a chat completion is answered with the batch before used up,
        so that a client asking one request at a time meets each batch with one request."""
        with self._lock:
            self._planned = deque(faults)
            self._batches = deque(tuple(batch) for batch in then)
            self._always = always

    def clear(self) -> None:
        self.plan()

    def _next_fault(self, body: bytes | None) -> Fault | None:
        with self._lock:
            fault = self._planned.popleft() if self._planned else self._always
            if fault is not None:
                self.faulted.append(fault)
            self.asked.append((time.monotonic(), _key(body), fault))
            return fault

    def _upstream_answered(self) -> None:
        """The next batch of faults, once the current one is used up: planned before the answer is sent, so
        that a client asking one request at a time meets it with its next request."""
        with self._lock:
            if not self._planned and self._batches:
                self._planned = deque(self._batches.popleft())

    def _answered(self, body: bytes | None) -> int:
        with self._lock:
            self.answered.append(_key(body))
            return len(self.answered)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                self._serve(None)

            def do_POST(self) -> None:
                self._serve(self.rfile.read(int(self.headers.get("Content-Length") or 0)))

            def _serve(self, body: bytes | None) -> None:
                chat = self.path.endswith("/chat/completions") and not _is_probe(body)
                fault = proxy._next_fault(body) if chat else None
                if fault is not None and fault.kind == "delay":
                    time.sleep(fault.seconds)
                    return self._drop()
                if fault is not None:
                    return self._fail(fault)
                try:
                    code, headers, payload = self._forward(body)
                except OSError:  # the upstream is gone: the client sees what it would see from a dead server
                    return self._drop()
                if chat and code == 200:
                    proxy._upstream_answered()
                if not self._reply(code, headers.get("Content-Type", "application/json"), payload):
                    return
                if chat and code == 200:
                    count = proxy._answered(body)
                    if proxy.after_answer is not None:
                        proxy.after_answer(count)

            def _forward(self, body: bytes | None) -> tuple[int, dict[str, str], bytes]:
                headers = {k: v for k, v in self.headers.items() if k.lower() in ("content-type", "authorization")}
                request = urllib.request.Request(proxy.upstream + self.path, data=body, headers=headers,
                                                 method=self.command)
                opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
                try:
                    with opener.open(request, timeout=600) as response:
                        return response.status, dict(response.headers), response.read()
                except urllib.error.HTTPError as exc:
                    return exc.code, dict(exc.headers or {}), exc.read()

            def _reply(self, code: int, content_type: str, payload: bytes, headers: dict[str, str] | None = None,
                       length: int | None = None) -> bool:
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(payload) if length is None else length))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                    self.wfile.flush()
                    return True
                except OSError:  # the client gave up (its timeout): nothing reached it
                    return False

            def _drop(self) -> None:
                self.close_connection = True
                try:
                    self.connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

            def _fail(self, fault: Fault) -> None:
                if fault.kind == "drop":
                    return self._drop()
                if fault.kind == "garbage":
                    self._reply(200, "application/json", b"<html><body>502 Bad Gateway</body></html>")
                    return
                if fault.kind == "truncate":  # announces the whole body, sends half of it, hangs up
                    body = json.dumps({"choices": [{"message": {"content": "x" * 200}}]}).encode()
                    self._reply(200, "application/json", body[: len(body) // 2], length=len(body))
                    self.close_connection = True
                    return self._drop()
                message = json.dumps({"error": {"message": f"injected {fault}"}}).encode()
                self._reply(fault.status, "application/json", message, fault.headers)

        return Handler


def _key(body: bytes | None) -> str:
    """A chat completion by what it asks: its messages and its length limit."""
    request = json.loads(body or b"{}")
    return json.dumps([request.get("messages"), request.get("max_tokens"), request.get("top_logprobs")], sort_keys=True)


def _is_probe(body: bytes | None) -> bool:
    return json.dumps(json.loads(body or b"{}").get("messages"), sort_keys=True) in PROBES

"""A scripted OpenAI-compatible HTTP server on 127.0.0.1 (standard library only), for unit tests of the
server judge's protocol handling: probes, missing features, retries, headers, proxies, redirects.

Never a stand-in for the product: the server judge runs against llama-cpp-python's real server in
test_server_judge.py. Here a word is a token, JSON answers obey the schema's probe only when told to, and
the first token's alternatives are whatever the test scripts.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from contextlib import contextmanager
from typing import Any, Iterator

LOCK = threading.Condition()  # guards the in-flight count; notified when a hold opens
#: How long a held completion waits for the others before it answers anyway (the test then fails, never hangs).
HOLD_SECONDS = 30.0
#: How long the hold stays shut once reached, so that a client sending more calls than it may shows it.
LINGER_SECONDS = 0.2


@dataclass
class Script:
    """How the fake behaves; tests change fields between calls."""

    models: list[str] = field(default_factory=lambda: ["fake-model"])
    schema_mode: str | None = "json_schema"  # the constraint it obeys: "json_schema", "grammar" or None
    top_logprobs: list[tuple[str, float]] | None = field(default_factory=lambda: [("Yes", -0.2), ("No", -1.8), (" yes", -4.0)])
    fail_next: int = 0  # answer this many requests with HTTP fail_status first
    fail_status: int = 503
    fail_on: dict[str, int] = field(default_factory=dict)  # path: answer its next N requests with fail_status
    redirect_to: str | None = None  # answer chat completions with a 307 to this URL
    # Hold each chat completion until this many are in flight at once (then LINGER_SECONDS more), then hold
    # none again (0: never). A client that sends fewer at a time never opens it: hold_until stays unchanged.
    hold_until: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    requests: list[tuple[str, str, dict[str, str], Any]] = field(default_factory=list)  # method, path, headers, body


def _handler(script: Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._record(None)
            if self._failing():
                return
            if self.path == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": m, "object": "model"} for m in script.models]})
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
            self._record(body)
            if self._failing():
                return
            if self.path == "/extras/tokenize":
                self._send(200, {"tokens": list(range(len(body["input"].split())))})
            elif self.path == "/v1/chat/completions":
                if script.redirect_to:
                    self.send_response(307)
                    self.send_header("Location", script.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with LOCK:
                    script.in_flight += 1
                    script.max_in_flight = max(script.max_in_flight, script.in_flight)
                    opens = bool(script.hold_until) and script.in_flight >= script.hold_until
                if opens:
                    time.sleep(LINGER_SECONDS)
                    with LOCK:
                        script.hold_until = 0
                        LOCK.notify_all()
                with LOCK:
                    LOCK.wait_for(lambda: not script.hold_until, timeout=HOLD_SECONDS)
                    script.in_flight -= 1
                self._send(200, self._completion(body))
            else:
                self._send(404, {"detail": "Not Found"})

        def _completion(self, body: dict[str, Any]) -> dict[str, Any]:
            mode = "json_schema" if "response_format" in body else "grammar" if "grammar" in body else None
            content = '{"probe": "zq7"}' if mode is not None and mode == script.schema_mode else "Hello there."
            choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": content},
                                      "finish_reason": "stop", "logprobs": None}
            if body.get("logprobs") and script.top_logprobs is not None:
                top = [{"token": t, "logprob": lp} for t, lp in script.top_logprobs[: body.get("top_logprobs", 0)]]
                choice["message"]["content"] = top[0]["token"] if top else ""
                choice["logprobs"] = {"content": [{"token": top[0]["token"] if top else "", "logprob": -0.2,
                                                   "top_logprobs": top}]}
            words = sum(len(m["content"].split()) for m in body["messages"])
            return {"object": "chat.completion", "model": body.get("model"), "choices": [choice],
                    "usage": {"prompt_tokens": words + 5 * len(body["messages"]), "completion_tokens": 1}}

        def _record(self, body: Any) -> None:
            script.requests.append((self.command, self.path, dict(self.headers), body))

        def _failing(self) -> bool:
            if script.fail_on.get(self.path, 0) > 0:
                script.fail_on[self.path] -= 1
                script.fail_next += 1
            if script.fail_next > 0:
                script.fail_next -= 1
                self._send(script.fail_status, {"error": {"message": "loading model" if script.fail_status == 503
                                                          else "request refused"}})
                return True
            return False

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def fake_openai_server(script: Script) -> Iterator[str]:
    """Serve `script` on a free loopback port; yields the base URL ending in /v1."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()

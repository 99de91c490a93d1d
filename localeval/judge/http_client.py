"""JSON over HTTP to one inference server, and nowhere else, with bounded retries.

Sites run their judge server inside a network they control; a request that silently went through a
proxy named in the environment, or followed a redirect to another host, would carry their data out.
So the opener ignores proxy settings and refuses redirects: every byte goes to the URL the user gave.

What is transient is retried with exponential backoff, long enough for a server to restart: connection
errors and resets, timeouts, 5xx answers, 429 (too many requests), and a 200 whose body is cut short or
is not JSON (a proxy or a server dying mid-answer). A `Retry-After` the server sends is waited instead of
the backoff, up to MAX_RETRY_AFTER. Other 4xx answers are the request's own fault and are not retried.
What is left after the retries is raised as `ServerCallError`: `server_fault` tells a server that cannot
answer now (the run stops; the same command resumes) from one that refused this one request.
"""

from __future__ import annotations

import email.utils
import json
import math
import time
import urllib.error
import urllib.request
from http.client import HTTPException
from typing import Any, Callable, Mapping, Union

from ..errors import JudgeError

#: Attempts after the first, and the first wait (doubled each time): 0.5 + 1 + ... + 16 = 31.5 s in all,
#: time for a llama.cpp server to be restarted and load its model.
RETRIES = 6
BACKOFF_SECONDS = 0.5
#: The longest Retry-After honoured; a server asking for more is waited this long.
MAX_RETRY_AFTER = 60.0
#: One judge call on a busy server may queue behind many others.
TIMEOUT_SECONDS = 600.0


class ServerCallError(JudgeError):
    """A request that failed after its retries; `status` is the HTTP status (None: no answer at all; 200:
    an answer that is not JSON); `retry_after` the seconds the server asked to wait, if it did."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None) -> None:
        self.status, self.retry_after = status, retry_after
        super().__init__(message)

    @property
    def unreachable(self) -> bool:
        return self.status is None

    @property
    def server_fault(self) -> bool:
        """The server, not the request, is at fault: no answer, an overload, an error of its own, a body
        that is not JSON. Retried; after the retries, the run stops rather than skip samples."""
        return self.status is None or self.status == 200 or self.status == 429 or self.status >= 500

    @property
    def refuses_every_request(self) -> bool:
        """A refusal that is not about this request (a key gone stale, a path or model the server no longer
        serves): every later call would meet it too, so the run stops rather than skip every sample."""
        return self.status in (401, 403, 404, 405)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None  # the 3xx is raised as an HTTPError instead of being followed


def busy(error: ServerCallError) -> bool:
    """The server is there but asks for time (429, 503), or a proxy in front of it could not reach it for a
    moment (502, 504): what a start-up probe retries before it reads a failure as the server's answer to
    it. What the probes find is part of every cache key, so a passing fault must not change it."""
    return error.status in (429, 502, 503, 504)


Retry = Union[bool, Callable[[ServerCallError], bool]]


class JsonHttp:
    """GET and POST of JSON bodies against `root` (scheme://host:port[/prefix]); thread-safe."""

    def __init__(self, root: str, headers: Mapping[str, str] | None = None, *, retries: int | None = None,
                 backoff: float | None = None, timeout: float | None = None) -> None:
        self.root = root.rstrip("/")
        self.headers = {"Content-Type": "application/json", "Accept": "application/json", **(headers or {})}
        self.retries = RETRIES if retries is None else retries
        self.backoff = BACKOFF_SECONDS if backoff is None else backoff
        self.timeout = TIMEOUT_SECONDS if timeout is None else timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())

    def get(self, path: str, *, retry: Retry = True) -> Any:
        return self._request("GET", path, None, retry)

    def post(self, path: str, body: Mapping[str, Any], *, retry: Retry = True) -> Any:
        return self._request("POST", path, json.dumps(body, ensure_ascii=False).encode("utf-8"), retry)

    def _request(self, method: str, path: str, data: bytes | None, retry: Retry) -> Any:
        """`retry`: True retries every server fault, False none, a function the faults it returns True for."""
        url = self.root + path
        attempts = 1 + (self.retries if retry else 0)
        for attempt in range(attempts):
            try:
                return self._once(method, url, data)
            except ServerCallError as exc:
                again = exc.server_fault if retry is True else bool(retry) and retry(exc)
                if not again or attempt == attempts - 1:
                    raise
                # the server's Retry-After and our backoff are both lower bounds: a "Retry-After: 0" on every
                # answer must not spend the retries in milliseconds
                wait = self.backoff * 2 ** attempt
                if exc.retry_after is not None:
                    wait = max(wait, min(exc.retry_after, MAX_RETRY_AFTER))
                time.sleep(wait)
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _once(self, method: str, url: str, data: bytes | None) -> Any:
        request = urllib.request.Request(url, data=data, method=method, headers=self.headers)
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                payload = response.read()
        except urllib.error.HTTPError as exc:
            raise ServerCallError(f"{method} {url} answered HTTP {exc.code}: {_reason(exc)}", exc.code,
                                  _retry_after(exc.headers.get("Retry-After") if exc.headers else None)) from None
        except (HTTPException, OSError) as exc:  # refused, reset, timed out, cut short, TLS, unreachable
            why = getattr(exc, "reason", None) or exc
            raise ServerCallError(f"{method} {url} failed: {why}") from None
        try:
            return json.loads(payload)
        except ValueError:
            raise ServerCallError(f"{method} {url} answered with something that is not JSON: {payload[:80]!r}", 200) from None


def _retry_after(value: str | None) -> float | None:
    """Retry-After's seconds (RFC 9110: a number of seconds, or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    try:
        seconds = float(value)
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        return None if when is None else max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):  # not a date, or a year no clock reaches
        return None


def _reason(error: urllib.error.HTTPError) -> str:
    """The server's own message (OpenAI-style {"error": {"message"}}, FastAPI's {"detail"}), on one line."""
    try:
        body = error.read().decode("utf-8", "replace")
    except (OSError, HTTPException):  # an error body cut short is still an HTTP error, named by its code
        body = ""
    message = body
    try:
        parsed = json.loads(body)
        if isinstance(parsed, dict):
            inner = parsed.get("error", parsed.get("detail", parsed))
            message = inner.get("message", str(inner)) if isinstance(inner, dict) else str(inner)
    except ValueError:
        pass
    one_line = " ".join((message or error.reason or "").split())
    return one_line[:300] or str(error.reason)

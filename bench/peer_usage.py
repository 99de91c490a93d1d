"""Requests and tokens of a peer's judge, counted from the server's own replies (bench/ragas_side.py,
bench/deepeval_side.py). Standard library only: it is imported inside each peer's venv.

A peer's OpenAI client gets HOOKS as its httpx event hooks: every chat completion request is counted when
it is sent (one the client gives up on, a timeout, counts too), and the tokens of each reply come from the
server's `usage`, re-asks after invalid JSON included, not from estimates; all of it goes to the tally in
the running context (`CURRENT`), which `counting()` opens for a block of work and times. A request cut off
by the client has no reply, so its tokens are not in the tally.
"""

from __future__ import annotations

import contextvars
import json
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator


@dataclass
class Tally:
    requests: int = 0
    prompt_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens the server reused from a slot's cache (llama-server reports them)
    completion_tokens: int = 0
    http_errors: int = 0
    seconds: float = 0.0  # the block's wall time, set when it ends


CURRENT: contextvars.ContextVar[Tally | None] = contextvars.ContextVar("current_tally", default=None)


@contextmanager
def counting() -> Iterator[Tally]:
    """A fresh tally for the requests of the block (and of the tasks it creates, which copy the context)."""
    tally = Tally()
    token = CURRENT.set(tally)
    start = time.perf_counter()
    try:
        yield tally
    finally:
        tally.seconds = round(time.perf_counter() - start, 3)
        CURRENT.reset(token)


async def _sent(request: Any) -> None:
    tally = CURRENT.get()
    if tally is not None and "/chat/completions" in str(request.url):
        tally.requests += 1


async def _answered(response: Any) -> None:
    tally = CURRENT.get()
    if tally is None or "/chat/completions" not in str(response.request.url):
        return
    await response.aread()
    if response.status_code != 200:
        tally.http_errors += 1
        return
    usage = json.loads(response.content).get("usage") or {}
    tally.prompt_tokens += int(usage.get("prompt_tokens") or 0)
    tally.cached_tokens += int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
    tally.completion_tokens += int(usage.get("completion_tokens") or 0)


HOOKS = {"request": [_sent], "response": [_answered]}

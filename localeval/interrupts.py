"""Ctrl-C and SIGTERM as a clean stop: one line, exit 130 / 143, nothing half-written, nothing lost.

Every finished judge call is already in the judge cache (one commit per call), so stopping loses no work:
what matters is that the stop unwinds like any error does (temp result files removed, the judge and its
cache closed) and then says how far the run got. The CLI installs `stop_on_signals`; a library caller
keeps Python's own KeyboardInterrupt.

`Interrupted` derives from BaseException, like KeyboardInterrupt, so that no `except Exception` in the
library or a dependency can swallow the stop. A second signal while the first one unwinds ends the
process at once: whoever presses Ctrl-C twice wants out now.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from typing import Any, Iterator

#: The signals that stop a run, and the words for them.
SIGNALS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated"}


class Interrupted(BaseException):
    """Raised in the main thread by SIGINT or SIGTERM; `done` / `total` say how far a scoring run got."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum
        self.done: int | None = None
        self.total: int | None = None

    @property
    def exit_code(self) -> int:
        """The shell's convention for a process ended by a signal: 128 + its number (130, 143)."""
        return 128 + self.signum

    def message(self) -> str:
        word = SIGNALS.get(signal.Signals(self.signum), "stopped")
        if self.total is None:
            return f"{word}: every judge call that finished is cached; the same command resumes"
        return (f"{word}: {self.done} of {self.total} samples judged and cached; the same command resumes "
                "without repeating them")


_state: dict[str, Any] = {"raised": False, "holding": 0, "pending": None}


def stop_on_signals() -> None:
    """SIGINT and SIGTERM raise `Interrupted` in the main thread; a second one exits at once."""

    def handler(signum: int, frame: Any) -> None:
        if _state["raised"]:
            os._exit(128 + signum)
        if _state["holding"]:
            _state["pending"] = signum
            return
        _state["raised"] = True
        raise Interrupted(signum)

    for signum in SIGNALS:
        signal.signal(signum, handler)


@contextmanager
def signals_held() -> Iterator[None]:
    """A signal that comes during the block stops the run right after it: for the few renames that make
    a result set, which must all happen or none (atomic.py). Python runs signal handlers in the main
    thread whichever thread the signal reached, so a flag does what a signal mask could not."""
    _state["holding"] += 1
    try:
        yield
    finally:
        _state["holding"] -= 1
    signum = _state["pending"]
    if signum is not None and not _state["holding"]:
        _state["pending"], _state["raised"] = None, True
        raise Interrupted(signum)


def leave(stop: Interrupted) -> None:
    """Say how far the run got and end the process with the signal's exit code. `os._exit`, not
    `sys.exit`: by now every file is closed and every temp removed, and a judge request still in flight
    on a server's worker thread must not hold the exit for its full timeout."""
    from .progress import end_line

    sys.stdout.flush()
    end_line(sys.stderr)  # a live progress line has no newline of its own
    sys.stderr.write(f"{stop.message()}\n")
    sys.stderr.flush()
    os._exit(stop.exit_code)

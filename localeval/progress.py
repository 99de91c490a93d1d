"""Progress of a scoring run: a live line on a terminal, a plain log line now and then otherwise.

Judge metrics take seconds per sample, so a run of a few hundred samples takes minutes to hours; the
user needs to see samples done, the rate and the time left. In CI logs and pipes a carriage-return bar
is noise, so there we print a line every LOG_EVERY seconds instead (nothing for a run shorter than that).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

LOG_EVERY = 30.0
#: Clears what a longer previous line left to the right of the cursor ("left 10m00s" -> "left 9m59s").
CLEAR_TO_END = "\x1b[K"
_line_open = False  # a live line is on the terminal without its newline


def end_line(stream: TextIO | None = None) -> None:
    """End a live progress line still open, so that what is printed next (an error, the interrupted
    message) starts a line of its own."""
    global _line_open
    if _line_open:
        stream = stream or sys.stderr
        stream.write("\n")
        stream.flush()
        _line_open = False


class Progress:
    def __init__(self, total: int, stream: TextIO | None = None, label: str = "scoring", unit: str = "samples",
                 show: bool = True) -> None:
        """`show=False` counts without printing (`-q`): an interrupted run still says how far it got."""
        self.total, self.done, self.label, self.unit, self.show = total, 0, label, unit, show
        self.stream = stream or sys.stderr
        self.live = show and self.stream.isatty()
        self.started = self._last_log = time.monotonic()
        self._logged = False

    def advance(self, n: int = 1) -> None:
        self.done += n
        now = time.monotonic()
        if self.live:
            global _line_open
            self.stream.write("\r" + self.line(now) + CLEAR_TO_END)
            self.stream.flush()
            _line_open = True
        elif self.show and (now - self._last_log >= LOG_EVERY or (self._logged and self.done == self.total)):
            self._last_log, self._logged = now, True
            self.stream.write(self.line(now) + "\n")
            self.stream.flush()

    def close(self) -> None:
        if self.live:
            end_line(self.stream)

    def line(self, now: float) -> str:
        elapsed = max(now - self.started, 1e-9)
        rate = self.done / elapsed
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        share = self.done / self.total if self.total else 1.0
        return (f"{self.label}: {self.done}/{self.total} {self.unit} ({share:.0%}), {rate:.2f} {self.unit}/s, "
                f"elapsed {_clock(elapsed)}, left {_clock(left)}")


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"

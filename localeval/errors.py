"""Exceptions the library raises; only the CLI turns them into messages and exit codes.

Every message names what is wrong and where (file, line, field, flag), so a user can fix it without a
traceback.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(message: str) -> str:
    """Messages quote user values (ids, paths, option values), which may hold newlines or terminal escape
    sequences: control characters are shown escaped, so an error is always exactly one line."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), message)


class LocalevalError(Exception):
    """A problem the user can fix: bad input, an unknown metric, a missing model."""


class InputError(LocalevalError):
    """A record that breaks the data contract, located by file, line and field."""

    def __init__(self, source: str, line: int | None, field: str | None, message: str) -> None:
        self.source = source
        self.line = line
        self.field = field
        self.message = message
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.source if self.line is None else f"{self.source}:{self.line}"
        what = f"field '{self.field}': {self.message}" if self.field else self.message
        return one_line(f"{where}: {what}")


class OptionError(LocalevalError):
    """An option value that cannot work (a malformed KEY=VALUE pair, a threshold on an unknown column)."""


class OutputError(LocalevalError):
    """Results that cannot be written where asked (a file in the way, a read-only folder, a full disk);
    the previous results there are left as they were."""


class MetricNameError(LocalevalError):
    """A metric name in --metrics that localeval does not know."""


class ModelError(LocalevalError):
    """A model that is missing, corrupt or unknown, with how to get it."""


class JudgeError(LocalevalError):
    """The judge model could not give a usable answer (prompt too long, output cut off); `raw` holds its output."""

    def __init__(self, message: str, raw: str | None = None) -> None:
        self.raw = raw
        super().__init__(message)


class JudgeServerError(LocalevalError):
    """The judge's inference server cannot be used: unreachable, or without a feature localeval needs."""

"""The one place where library errors become CLI output: one line on stderr, exit code 2."""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable

import click

from ..errors import LocalevalError, one_line
from ..progress import end_line

EXIT_USER_ERROR = 2


def user_errors(command: Callable[..., Any]) -> Callable[..., Any]:
    """Library errors are the user's to fix: print one line, no traceback (unless --debug)."""

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except LocalevalError as exc:
            root = click.get_current_context().find_root()
            if (root.obj or {}).get("debug"):
                raise
            end_line(sys.stderr)  # a run stopped mid-way: not on the end of its progress line
            click.echo(f"error: {one_line(str(exc))}", err=True)
            sys.exit(EXIT_USER_ERROR)

    return wrapper


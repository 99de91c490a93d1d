"""The `localeval` command: one module per command (group); each parses options and calls the library.

Every failure a user can cause ends in one line on stderr and exit code 2: library errors through
`errors.user_errors`, click's usage errors through `main`. Ctrl-C and SIGTERM end in one line too, with
exit code 130 / 143 (interrupts.py).
"""

from __future__ import annotations

import os
import sys
import warnings

import click

from .. import __version__
from ..errors import one_line
from ..interrupts import Interrupted, leave, stop_on_signals
from .calibrate import calibrate
from .check import check
from .compare import compare
from .errors import EXIT_USER_ERROR
from .generate import generate, retrieve
from .metrics import list_metrics
from .models import models
from .report import report
from .score import score
from .train import train


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="localeval")
@click.option("--debug", is_flag=True, help="Show full tracebacks instead of one-line errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Offline evaluation of retrieval-augmented generation."""
    ctx.obj = {"debug": debug}


for command in (score, generate, retrieve, train, list_metrics, models, calibrate, compare, report, check):
    cli.add_command(command)


def main() -> None:
    # Library warnings (e.g. an English-only embedder meeting Chinese) are for the user: one plain line.
    warnings.formatwarning = lambda message, *args, **kwargs: f"warning: {message}\n"
    stop_on_signals()
    try:
        code = cli.main(prog_name="localeval", standalone_mode=False)
    except Interrupted as stop:  # every `with` block has unwound: temps removed, judge and cache closed
        leave(stop)
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        sys.exit(1)
    except MemoryError:  # numpy's "Unable to allocate …" is one; the options that size memory say how
        click.echo("error: out of memory; ask for less (a smaller --n-boot, --parallel or --n-ctx, fewer samples "
                   "at once)", err=True)
        sys.exit(EXIT_USER_ERROR)
    except BrokenPipeError:  # `localeval metrics | head`: the reader left; stop quietly, as cat does
        sys.stdout = open(os.devnull, "w")  # Python would otherwise complain again when flushing at exit
        sys.exit(1)
    except click.ClickException as exc:  # usage errors: one line, the command named, help pointed at
        where = f"{exc.ctx.command_path}: " if getattr(exc, "ctx", None) is not None else ""
        hint = f" (see `{exc.ctx.command_path} --help`)" if isinstance(exc, click.UsageError) and exc.ctx else ""
        click.echo(f"error: {one_line(where + exc.format_message())}{hint}", err=True)
        sys.exit(EXIT_USER_ERROR if isinstance(exc, click.UsageError) else exc.exit_code)
    sys.exit(code if isinstance(code, int) else 0)


__all__ = ["cli", "main"]

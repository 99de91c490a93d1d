"""`localeval check`: a quality gate for CI; exit 0 when every threshold holds, 1 when one fails, 2 on bad input."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from ..gate import DEFAULT_BOOTSTRAP
from .errors import user_errors
from .options import FiniteFloatRange, interval_options

EXIT_GATE_FAILED = 1


@click.command()
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(path_type=Path))
@click.option("--min", "mins", multiple=True, metavar="NAME=VALUE",
              help="The metric column NAME must be at least VALUE (repeatable), e.g. --min faithfulness=0.85.")
@click.option("--max", "maxs", multiple=True, metavar="NAME=VALUE",
              help="The metric column NAME must be at most VALUE (repeatable).")
@click.option("--on", type=click.Choice(["mean", "ci-low"]), default="mean", show_default=True,
              help="Compare the mean, or the conservative end of its interval (PPI where the run has labels, else a "
                   "seeded bootstrap): the lower end for --min, the upper end for --max.")
@click.option("--max-skipped", type=FiniteFloatRange(0, 1), default=None, metavar="SHARE",
              help="Fail a column when more than this share of the samples were skipped for it (skipped samples "
                   "are not in its mean), e.g. 0 where every sample must be scored. Default: no limit.")
@interval_options(DEFAULT_BOOTSTRAP, "--on ci-low")
@user_errors
def check(run_dir: Path, mins: tuple[str, ...], maxs: tuple[str, ...], on: str, max_skipped: float | None,
          n_boot: int, confidence: float, seed: int) -> None:
    """Check a scored run against thresholds: exit 0 if all hold, 1 if one fails (the table says which), 2 on bad input."""
    from ..gate import check_run, parse_thresholds
    from .tables import check_table

    result = check_run(run_dir, parse_thresholds(mins, maxs), on, n_boot, confidence, seed, max_skipped)
    click.echo(check_table(result))
    if not result.passed:
        sys.exit(EXIT_GATE_FAILED)

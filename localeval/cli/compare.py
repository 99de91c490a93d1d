"""`localeval compare`: paired per-sample differences between runs of the same test set."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import OptionError
from ..files import check_output_file, write_json_atomic
from ..settings import parse_pairs
from .errors import user_errors
from .options import pairs_callback


@click.command()
@click.argument("run_dirs", metavar="RUN_A RUN_B [RUN...]", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-m", "--metrics", "columns", default=None, help="Comma-separated metric columns (default: every shared column).")
@click.option("--n-boot", default=10_000, show_default=True, type=click.IntRange(min=1), help="Bootstrap resamples.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0),
              help="Seed of the bootstrap's random generator.")
@click.option("--confidence", default=0.95, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Confidence level of the intervals.")
@click.option("-l", "--labels", "run_labels", multiple=True, metavar="RUN=LABELS",
              help="Human labels of one run's samples (repeatable); a pair with labels on both sides uses PPI.")
@click.option("--label-column", "label_columns", multiple=True, metavar="COLUMN=KEY",
              callback=pairs_callback("COLUMN=KEY (e.g. faithfulness=answer_faithfulness)"),
              help="Read the labels of metric COLUMN from KEY (repeatable).")
@click.option("--lower-is-better", "lower_better", multiple=True, metavar="COLUMN",
              help="A column where lower values are better (repeatable); default: higher is better.")
@click.option("-o", "--out", "out_path", type=click.Path(path_type=Path), help="Also write the comparison as JSON here.")
@user_errors
def compare(run_dirs: tuple[Path, ...], columns: str | None, n_boot: int, seed: int, confidence: float,
            run_labels: tuple[str, ...], label_columns: dict[str, str], lower_better: tuple[str, ...],
            out_path: Path | None) -> None:
    """Paired per-sample differences between runs of the same test set, with intervals and a ranking."""
    from ..data.labels import load_labels
    from ..results.runs import load_run
    from ..stats.compare import compare_runs
    from .tables import comparison_text

    if len(run_dirs) < 2:
        raise click.UsageError("give at least two runs to compare")
    if out_path:
        check_output_file(out_path)
    runs = [load_run(path, name=str(path)) for path in run_dirs]
    labels = {name: load_labels(path, next(r for r in runs if r.name == name), label_columns)
              for name, path in _run_labels(run_labels, run_dirs).items()}
    wanted = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    result = compare_runs(runs, wanted, n_boot, confidence, seed, labels, lower_better)
    click.echo(comparison_text(result))
    if out_path:
        write_json_atomic(out_path, result.as_dict())
        click.echo(f"\nresults in {out_path}", err=True)


def _run_labels(values: tuple[str, ...], runs: tuple[Path, ...]) -> dict[str, Path]:
    """RUN=LABELS pairs; RUN must be one of the compared runs (split at the last '=', since RUN is a path)."""
    names = {str(r) for r in runs}
    pairs = parse_pairs(values, "--labels", "RUN=LABELS", last=True)
    for run in pairs:
        if run not in names:
            raise OptionError(f"--labels '{run}=...': {run} is not one of the compared runs ({', '.join(sorted(names))})")
    return {run: Path(path) for run, path in pairs.items()}

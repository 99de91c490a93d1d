"""`localeval compare`: paired per-sample differences between runs of the same test set."""

from __future__ import annotations

from pathlib import Path

import click

from ..atomic import write_json_atomic
from ..files import check_output_file
from .errors import user_errors
from .options import OutPath, interval_options, pairs_callback, run_labels


@click.command()
@click.argument("run_dirs", metavar="RUN_A RUN_B [RUN...]", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-m", "--metrics", "columns", default=None, help="Comma-separated metric columns (default: every shared column).")
@interval_options(10_000, "the paired intervals")
@click.option("-l", "--labels", "run_labels_given", multiple=True, metavar="RUN=LABELS",
              help="Human labels of one run's samples (repeatable); a pair with labels on both sides uses PPI.")
@click.option("--label-column", "label_columns", multiple=True, metavar="COLUMN=KEY",
              callback=pairs_callback("COLUMN=KEY (e.g. faithfulness=answer_faithfulness)"),
              help="Read the labels of metric COLUMN from KEY (repeatable).")
@click.option("--lower-is-better", "lower_better", multiple=True, metavar="COLUMN",
              help="A column where lower values are better (repeatable); default: higher is better.")
@click.option("-o", "--out", "out_path", type=OutPath(path_type=Path), help="Also write the comparison as JSON here.")
@user_errors
def compare(run_dirs: tuple[Path, ...], columns: str | None, n_boot: int, seed: int, confidence: float,
            run_labels_given: tuple[str, ...], label_columns: dict[str, str], lower_better: tuple[str, ...],
            out_path: Path | None) -> None:
    """Paired per-sample differences between runs of the same test set, with intervals and a ranking."""
    from ..data.labels import load_labels
    from ..results.runs import load_run
    from ..stats.compare import compare_runs
    from .tables import comparison_text

    if len(run_dirs) < 2:
        raise click.UsageError("give at least two runs to compare")
    if label_columns and not run_labels_given:
        raise click.UsageError("--label-column needs --labels")
    if out_path:
        check_output_file(out_path)
    runs = [load_run(path, name=str(path)) for path in run_dirs]
    labels = {name: load_labels(path, next(r for r in runs if r.name == name), label_columns)
              for name, path in run_labels(run_labels_given, run_dirs).items()}
    wanted = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    result = compare_runs(runs, wanted, n_boot, confidence, seed, labels, lower_better)
    if out_path:  # written first: a file that cannot be written stops the command before any table is shown
        write_json_atomic(out_path, result.as_dict())
    click.echo(comparison_text(result))
    if out_path:
        click.echo(f"\nresults in {out_path}", err=True)


"""`localeval report`: one self-contained HTML file (no network needed to open it) about one or more runs."""

from __future__ import annotations

from pathlib import Path

import click

from ..gate import DEFAULT_BOOTSTRAP
from ..report import DEFAULT_MAX_SAMPLES
from .errors import user_errors
from .options import OutPath, interval_options, pairs_callback, run_labels


@click.command()
@click.argument("run_dirs", metavar="RUN_DIR [RUN_DIR...]", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", "out_path", default="report.html", show_default=True, type=OutPath(path_type=Path),
              help="The HTML file to write.")
@click.option("--title", help="The page's title (default: the run folders' names).")
@click.option("-l", "--labels", "labels_given", multiple=True, metavar="[RUN=]LABELS",
              help="Human 0/1 labels of a run's samples (repeatable; RUN= may be left out with one run): adds the "
                   "judge-vs-human view and PPI intervals.")
@click.option("--label-column", "label_columns", multiple=True, metavar="COLUMN=KEY",
              callback=pairs_callback("COLUMN=KEY (e.g. faithfulness=answer_faithfulness)"),
              help="Read the labels of metric COLUMN from KEY (repeatable).")
@click.option("--max-samples", default=DEFAULT_MAX_SAMPLES, show_default=True, type=click.IntRange(min=1),
              help="Samples embedded per run for the table and drill-down (the lowest-scoring ones when a run "
                   "has more); charts and summaries always use every sample.")
@interval_options(DEFAULT_BOOTSTRAP, "the intervals and the comparison")
@click.option("--lower-is-better", "lower_better", multiple=True, metavar="COLUMN",
              help="A column where lower values are better (repeatable); default: higher is better.")
@user_errors
def report(run_dirs: tuple[Path, ...], out_path: Path, title: str | None, labels_given: tuple[str, ...],
           label_columns: dict[str, str], max_samples: int, n_boot: int, confidence: float, seed: int,
           lower_better: tuple[str, ...]) -> None:
    """Write one self-contained HTML report (summary, charts, judge vs human, comparison, per-sample drill-down)."""
    from ..report import build_report

    if label_columns and not labels_given:
        raise click.UsageError("--label-column needs --labels")

    written = build_report(list(run_dirs), out_path, title, run_labels(labels_given, run_dirs), label_columns,
                           max_samples, n_boot, confidence, seed, lower_better)
    for run in written["runs"]:  # type: ignore[attr-defined]
        if not run["all"]:
            click.echo(f"{run['name']}: {run['n']:,} of {run['n_samples']:,} samples embedded (--max-samples)", err=True)
    if written["comparison_error"]:
        click.echo(f"warning: {written['comparison_error']}", err=True)
    click.echo(f"report in {out_path} ({written['bytes'] / 1e6:.1f} MB)", err=True)


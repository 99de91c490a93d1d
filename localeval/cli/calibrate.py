"""`localeval calibrate`: judge-vs-human agreement, the best threshold, and prediction-powered estimates."""

from __future__ import annotations

from pathlib import Path

import click

from ..files import check_output_file, write_json_atomic
from ..results.writer import CALIBRATION_FILE
from .errors import user_errors
from .options import pairs_callback


@click.command()
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(path_type=Path))
@click.option("-l", "--labels", "labels_path", required=True, type=click.Path(path_type=Path),
              help="JSONL of {\"id\": ..., \"<metric column>\": 0 or 1}; ids must be samples of RUN_DIR.")
@click.option("--label-column", "label_columns", multiple=True, metavar="COLUMN=KEY",
              callback=pairs_callback("COLUMN=KEY (e.g. faithfulness=answer_faithfulness)"),
              help="Read the labels of metric COLUMN from KEY (repeatable), e.g. faithfulness=answer_faithfulness.")
@click.option("--confidence", default=0.95, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Confidence level of the intervals.")
@click.option("--lambda-mode", "lam_mode", type=click.Choice(["min_variance", "ppi_py"]), default="min_variance",
              show_default=True,
              help="Power tuning: exact variance minimiser (never wider than labels-only) or ppi_py's formula.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the tables.")
@user_errors
def calibrate(run_dir: Path, labels_path: Path, label_columns: dict[str, str], confidence: float, lam_mode: str,
              quiet: bool) -> None:
    """Judge-vs-human agreement, the best threshold, and prediction-powered estimates of each labelled metric.

    Writes RUN_DIR/calibration.json.
    """
    from ..data.labels import load_labels
    from ..results.runs import load_run
    from ..stats.calibration import PPI_METHOD, calibration_report
    from .tables import calibration_tables

    run = load_run(run_dir)
    out_path = Path(run.source).parent / CALIBRATION_FILE
    check_output_file(out_path)
    labels = load_labels(labels_path, run, label_columns)
    report = calibration_report(run, labels, confidence, lam_mode)
    write_json_atomic(out_path, {"run": str(run_dir), "labels": str(labels_path), "method": PPI_METHOD,
                           "confidence": confidence, "ignored_label_fields": labels.ignored_fields, "metrics": report})
    if not quiet:
        click.echo(calibration_tables(report, confidence))
        click.echo(f"\nresults in {out_path}", err=True)

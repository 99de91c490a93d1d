"""`localeval calibrate`: judge-vs-human agreement, the best threshold, and prediction-powered estimates."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import OptionError
from ..atomic import write_json_atomic
from ..files import check_output_file
from ..results.writer import CALIBRATION_FILE
from .errors import user_errors
from .options import FiniteFloatRange, pairs_callback


@click.command()
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(path_type=Path))
@click.option("-l", "--labels", "labels_path", type=click.Path(path_type=Path),
              help="JSONL of {\"id\": ..., \"<metric column>\": 0 or 1}; ids must be samples of RUN_DIR. Without it, "
                   "only the chunk verdicts are calibrated (on the samples' reference_doc_ids).")
@click.option("--label-column", "label_columns", multiple=True, metavar="COLUMN=KEY",
              callback=pairs_callback("COLUMN=KEY (e.g. faithfulness=answer_faithfulness)"),
              help="Read the labels of metric COLUMN from KEY (repeatable), e.g. faithfulness=answer_faithfulness.")
@click.option("--confidence", default=0.95, show_default=True, type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
              help="Confidence level of the intervals.")
@click.option("--lambda-mode", "lam_mode", type=click.Choice(["min_variance", "ppi_py"]), default="min_variance",
              show_default=True,
              help="Power tuning: exact variance minimiser (never wider than labels-only) or ppi_py's formula.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the tables.")
@user_errors
def calibrate(run_dir: Path, labels_path: Path | None, label_columns: dict[str, str], confidence: float,
              lam_mode: str, quiet: bool) -> None:
    """Judge-vs-human agreement, the best threshold, and prediction-powered estimates of each labelled metric;
    and the verdict threshold of context_precision and passage_relevance, fitted on the chunks' relevance
    by the samples' reference_doc_ids.

    Writes RUN_DIR/calibration.json; for a samples file that is not a run's own (an edited copy, say),
    NAME.calibration.json beside it, so that it is never read as the calibration of the folder it lies in.
    """
    from ..data.labels import load_labels
    from ..results.runs import load_run, run_folder
    from ..stats.calibration import PPI_METHOD, calibration_report, run_verdict_thresholds
    from .tables import calibration_tables, verdict_threshold_table

    run = load_run(run_dir)
    folder = run_folder(run_dir)
    out_path = (folder / CALIBRATION_FILE if folder is not None
                else run_dir.with_name(f"{run_dir.stem}.{CALIBRATION_FILE}"))
    check_output_file(out_path)
    if label_columns and labels_path is None:
        raise click.UsageError("--label-column needs --labels")
    labels = load_labels(labels_path, run, label_columns) if labels_path is not None else None
    verdicts = run_verdict_thresholds(run_dir)
    if labels is None and not verdicts:
        raise OptionError(f"nothing to calibrate in {run.source}: give --labels FILE, or score context_precision or "
                          "passage_relevance on samples whose contexts have ids and whose reference_doc_ids name "
                          "a relevant document")
    report = calibration_report(run, labels, confidence, lam_mode) if labels is not None else {}
    write_json_atomic(out_path, {"run": str(run_dir), "labels": None if labels_path is None else str(labels_path),
                                 "method": PPI_METHOD, "confidence": confidence,
                                 "ignored_label_fields": labels.ignored_fields if labels is not None else [],
                                 "metrics": report, "verdict_thresholds": verdicts})
    if not quiet:
        tables = ([calibration_tables(report, confidence)] if report else []) + ([verdict_threshold_table(verdicts)]
                                                                                  if verdicts else [])
        click.echo("\n\n".join(tables))
        click.echo(f"\nresults in {out_path}", err=True)

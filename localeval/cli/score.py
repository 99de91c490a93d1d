"""`localeval score`: a test set (JSONL or CSV), or a TREC run against qrels, scored into a folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ..data.loading import container_names
from ..results.tables import TABLE_FORMATS
from .errors import user_errors
from .options import (OutPath, judge_options, judge_settings, metric_options, pairs_callback, pop_metric_options,
                      pop_ray_options, ray_options)


@click.command()
@click.argument("input_path", metavar="INPUT", required=False, type=click.Path(path_type=Path))
@click.option("-m", "--metrics", default=None,
              help="Comma-separated metric names or groups (retrieval, classical, ragas, judge, all); see `localeval metrics`. "
                   "Default: classical for INPUT, retrieval for --run.")
@click.option("-o", "--out", "out_dir", default="localeval-results", show_default=True, type=OutPath(path_type=Path),
              help="Folder for samples.jsonl, summary.json and summary.csv.")
@click.option("--format", "fmt", type=click.Choice(container_names()),
              help="The input's container (default: from the extension; a .json file starting with '[' is an array).")
@click.option("--column", "columns", multiple=True, callback=pairs_callback("FIELD=COLUMN (e.g. question=query)"),
              metavar="FIELD=COLUMN", help="Read FIELD from COLUMN (repeatable), e.g. --column question=query; any "
                                           "container. Ragas' and DeepEval's field names are read without it.")
@click.option("--table", "tables", multiple=True, type=click.Choice(TABLE_FORMATS),
              help="Also write the samples as a flat table, samples.csv or samples.parquet (repeatable): the input "
                   "fields and one column per metric, for pandas or Hugging Face datasets.")
@click.option("--criteria", "criteria", multiple=True, type=click.Path(path_type=Path), metavar="FILE|FOLDER",
              help="Your own criteria: a criterion file (TOML) or a folder of them, repeatable; each is scored as the "
                   "metric criteria.NAME beside --metrics (alone when --metrics is not given).")
@click.option("--classifier", type=click.Path(path_type=Path), metavar="DIR",
              help="A classifier judge `localeval train` wrote: it gives the verdicts it was trained for "
                   "(passage_relevance, faithfulness's statements, answer_relevance_rating) instead of the GGUF judge.")
@click.option("--run", "run_path", type=click.Path(path_type=Path), help="TREC run file (retrieval-only evaluation, with --qrels).")
@click.option("--qrels", "qrels_path", type=click.Path(path_type=Path), help="TREC qrels file (with --run).")
@metric_options
@judge_options
@click.option("-l", "--labels", "labels_path", type=click.Path(path_type=Path),
              help="Human 0/1 labels for some samples (JSONL of {id, column: 0 or 1}): adds prediction-powered "
                   "estimates and intervals to the summary.")
@click.option("--label-column", "label_columns", multiple=True, metavar="COLUMN=KEY",
              callback=pairs_callback("COLUMN=KEY (e.g. faithfulness=answer_faithfulness)"),
              help="With --labels: read the labels of metric COLUMN from KEY (repeatable).")
@ray_options
@click.option("-q", "--quiet", is_flag=True, help="Do not print the summary table.")
@user_errors
def score(input_path: Path | None, metrics: str | None, out_dir: Path, fmt: str | None, columns: dict[str, str],
          tables: tuple[str, ...], criteria: tuple[Path, ...], classifier: Path | None, run_path: Path | None, qrels_path: Path | None, labels_path: Path | None,
          label_columns: dict[str, str], quiet: bool, **kwargs: Any) -> None:
    """Score a test set (JSON Lines, a JSON array, CSV/TSV or Parquet; localeval's, Ragas' or DeepEval's field
    names), or a TREC run against qrels, and write the results to --out."""
    from ..metrics import MetricOptions
    from ..pipeline import Labelled, score_file, score_trec
    from ..results.verdicts import chunk_metrics
    from ..stats.calibration import run_verdict_thresholds
    from .tables import calibrate_hint, ppi_table, summary_table

    ray = pop_ray_options(kwargs)
    metric_values = pop_metric_options(kwargs)
    judge = judge_settings(**kwargs, classifier=str(classifier) if classifier else None)
    options = MetricOptions(judge=judge, criteria=criteria, **metric_values)
    if label_columns and not labels_path:
        raise click.UsageError("--label-column needs --labels")
    if run_path or qrels_path:
        if input_path or not (run_path and qrels_path):
            raise click.UsageError("use either INPUT, or --run together with --qrels")
        if labels_path:
            raise click.UsageError("--labels applies to INPUT test sets, not to --run")
        if ray:
            raise click.UsageError("--ray applies to INPUT test sets, not to --run")
        summary = score_trec(run_path, qrels_path, out_dir, metrics or "retrieval", options)
    elif input_path is None:
        raise click.UsageError("give an INPUT file, or --run and --qrels (with --ray, put INPUT before --ray)")
    else:
        labels = Labelled(labels_path, label_columns) if labels_path else None
        default = "" if criteria else "classical"  # --criteria alone scores just the criteria
        summary = score_file(input_path, out_dir, metrics or default, options, fmt, columns, labels,
                             progress=not quiet, ray=ray, tables=tables,
                             notice=None if quiet else (lambda line: click.echo(line, err=True)))
    if not quiet:
        click.echo(summary_table(summary["metrics"]))
        if "ppi" in summary:
            click.echo("\n" + ppi_table(summary["ppi"]))
        if any(metric in chunk_metrics() for metric in summary["metrics"]):
            hint = calibrate_hint(out_dir, run_verdict_thresholds(out_dir))
            if hint:
                click.echo("\n" + hint, err=True)
        click.echo(f"\n{summary['n_samples']} samples; results in {out_dir}/", err=True)


"""`localeval calibrate` and `localeval compare`: parse options, call the library, print tables, write JSON.

The statistics live in calibration.py (with ppi.py and agreement.py) and compare.py. Registered on the
main group in cli.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

import click

from .cli_errors import user_errors
from .errors import LocalevalError
from .calibration import PPI_METHOD, calibration_report
from .output import format_table, write_text_atomic

if TYPE_CHECKING:
    from .compare import Comparison

CALIBRATION_FILE = "calibration.json"


def _write_json(path: Path, payload: Mapping[str, Any]) -> None:
    """Atomic, NaN-free: a half-written or NaN-bearing report is worse than none."""
    write_text_atomic(path, json.dumps(payload, ensure_ascii=False, allow_nan=False, indent=2) + "\n")


def _fmt(value: Any, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def calibration_tables(report: Mapping[str, Any], confidence: float) -> str:
    """Agreement table, then the estimates table; errors as one line per column."""
    agree_rows, ppi_rows, notes = [], [], []
    for column, entry in report.items():
        if "error" in entry:
            notes.append(f"{column}: {entry['error']}")
            continue
        a = entry["agreement"]
        d, c = a["at_0.5"], a["at_chosen"]
        agree_rows.append((column, str(d["n"]), _fmt(d["accuracy"]), _fmt(d["balanced_accuracy"]), _fmt(d["kappa"]),
                           _fmt(a["threshold"], 3), _fmt(c["accuracy"]), _fmt(c["balanced_accuracy"]), _fmt(c["kappa"])))
        p = entry["ppi"]
        if "error" in p:
            notes.append(f"{column}: {p['error']}")
            continue
        ppi_rows.append(_ppi_row(column, p))
    parts = []
    if agree_rows:
        parts.append(format_table(("metric", "labels", "acc@0.5", "bacc@0.5", "kappa@0.5", "threshold", "acc@t", "bacc@t",
                             "kappa@t"), agree_rows))
        parts.append("(threshold chosen on these labels to maximise balanced accuracy: the @t figures are optimistic)")
    if ppi_rows:
        parts.append(format_table(_ppi_header(confidence), ppi_rows))
    return "\n\n".join(parts + (["\n".join(notes)] if notes else []))


def ppi_table(block: Mapping[str, Any]) -> str:
    """The estimates table for the PPI block `score --labels` puts in summary.json."""
    rows, notes = [], []
    for column, p in block["metrics"].items():
        if "error" in p:
            notes.append(f"{column}: {p['error']}")
        else:
            rows.append(_ppi_row(column, p))
    parts = [format_table(_ppi_header(block["confidence"]), rows)] if rows else []
    return "\n\n".join(parts + (["\n".join(notes)] if notes else []))


def _ppi_header(confidence: float) -> tuple[str, ...]:
    pct = f"{confidence:.0%}"
    return ("metric", "judge mean", "PPI estimate", f"PPI {pct} CI", f"labels-only {pct} CI", "lambda", "n labelled",
            "n unlabelled")


def _ppi_row(column: str, p: Mapping[str, Any]) -> tuple[str, ...]:
    return (column, _fmt(p["naive_judge_mean_all"]), _fmt(p["estimate"]), f"[{_fmt(p['ci'][0])}, {_fmt(p['ci'][1])}]",
            f"[{_fmt(p['classical_ci'][0])}, {_fmt(p['classical_ci'][1])}]", _fmt(p["lambda"], 3), str(p["n_labeled"]),
            str(p["n_unlabeled"]))


@click.command()
@click.argument("run_dir", metavar="RUN_DIR", type=click.Path(path_type=Path))
@click.option("-l", "--labels", "labels_path", required=True, type=click.Path(path_type=Path),
              help="JSONL of {\"id\": ..., \"<metric column>\": 0 or 1}; ids must be samples of RUN_DIR.")
@click.option("--label-column", "label_columns", multiple=True, metavar="COLUMN=KEY",
              help="Read the labels of metric COLUMN from KEY (repeatable), e.g. faithfulness=answer_faithfulness.")
@click.option("--confidence", default=0.95, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Confidence level of the intervals.")
@click.option("--lambda-mode", "lam_mode", type=click.Choice(["min_variance", "ppi_py"]), default="min_variance",
              show_default=True,
              help="Power tuning: exact variance minimiser (never wider than labels-only) or ppi_py's formula.")
@click.option("-q", "--quiet", is_flag=True, help="Do not print the tables.")
@user_errors
def calibrate(run_dir: Path, labels_path: Path, label_columns: tuple[str, ...], confidence: float, lam_mode: str,
              quiet: bool) -> None:
    """Judge-vs-human agreement, the best threshold, and prediction-powered estimates of each labelled metric.

    Writes RUN_DIR/calibration.json.
    """
    from .runs import load_labels, load_run, parse_mapping

    run = load_run(run_dir)
    labels = load_labels(labels_path, run, parse_mapping(label_columns))
    report = calibration_report(run, labels, confidence, lam_mode)
    out_path = Path(run.source).parent / CALIBRATION_FILE
    _write_json(out_path, {"run": str(run_dir), "labels": str(labels_path), "method": PPI_METHOD,
                           "confidence": confidence, "ignored_label_fields": labels.ignored_fields, "metrics": report})
    if not quiet:
        click.echo(calibration_tables(report, confidence))
        click.echo(f"\nresults in {out_path}", err=True)


def _parse_run_labels(values: tuple[str, ...], runs: tuple[Path, ...]) -> dict[str, Path]:
    names = {str(r) for r in runs}
    out = {}
    for value in values:
        run, sep, path = value.rpartition("=")
        if not sep or run not in names:
            raise LocalevalError(f"--labels '{value}' is not RUN=LABELS with RUN one of the compared runs "
                                 f"({', '.join(sorted(names))})")
        out[run] = Path(path)
    return out


@click.command()
@click.argument("run_dirs", metavar="RUN_A RUN_B [RUN...]", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-m", "--metrics", "columns", default=None, help="Comma-separated metric columns (default: every shared column).")
@click.option("--n-boot", default=10_000, show_default=True, type=click.IntRange(min=1), help="Bootstrap resamples.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the bootstrap's random generator.")
@click.option("--confidence", default=0.95, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Confidence level of the intervals.")
@click.option("-l", "--labels", "run_labels", multiple=True, metavar="RUN=LABELS",
              help="Human labels of one run's samples (repeatable); a pair with labels on both sides uses PPI.")
@click.option("--label-column", "label_columns", multiple=True, metavar="COLUMN=KEY",
              help="Read the labels of metric COLUMN from KEY (repeatable).")
@click.option("--lower-is-better", "lower_better", multiple=True, metavar="COLUMN",
              help="A column where lower values are better (repeatable); default: higher is better.")
@click.option("-o", "--out", "out_path", type=click.Path(path_type=Path), help="Also write the comparison as JSON here.")
@user_errors
def compare(run_dirs: tuple[Path, ...], columns: str | None, n_boot: int, seed: int, confidence: float,
            run_labels: tuple[str, ...], label_columns: tuple[str, ...], lower_better: tuple[str, ...],
            out_path: Path | None) -> None:
    """Paired per-sample differences between runs of the same test set, with intervals and a ranking."""
    from .compare import compare_runs
    from .runs import load_labels, load_run, parse_mapping

    if len(run_dirs) < 2:
        raise click.UsageError("give at least two runs to compare")
    runs = [load_run(path, name=str(path)) for path in run_dirs]
    mapping = parse_mapping(label_columns)
    labels = {name: load_labels(path, next(r for r in runs if r.name == name), mapping)
              for name, path in _parse_run_labels(run_labels, run_dirs).items()}
    wanted = [c.strip() for c in columns.split(",") if c.strip()] if columns else None
    result = compare_runs(runs, wanted, n_boot, confidence, seed, labels, lower_better)
    click.echo(comparison_text(result))
    if out_path:
        _write_json(out_path, result.as_dict())
        click.echo(f"\nresults in {out_path}", err=True)


def comparison_text(result: Comparison) -> str:
    """Per column: ranks and means, then each pair's difference, interval and verdict."""
    pct = f"{result.confidence:.0%}"
    blocks = []
    for col in result.columns:
        dropped = f", {col.n_dropped} not scored in every run" if col.n_dropped else ""
        lines = [f"{col.column} (n={col.n}{dropped})"]
        for name, rank in col.ranks.items():
            lines.append(f"  {rank}. {name}  mean {_fmt(col.means[name])}")
        for p in col.pairs:
            interval = "no interval" if p.low is None else f"{pct} CI [{p.low:+.4f}, {p.high:+.4f}] ({p.method})"
            verdict = f"{p.better} is better" if p.better else "not distinguishable"
            lines.append(f"  {p.a} - {p.b}: {p.diff:+.4f}  {interval}  -> {verdict}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) if blocks else "no metric column is shared by all runs"

"""Plain-text tables the commands print: the score summary, calibration, estimates and comparisons."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

if TYPE_CHECKING:
    from pathlib import Path

    from ..gate import CheckResult, GateResult
    from ..stats.compare import Comparison


def summary_table(metrics: dict[str, dict[str, Any]]) -> str:
    """The table the CLI prints: aligned columns, 4 decimals, '-' where no sample was scored."""
    rows = [(column, fmt(e["mean"]), fmt(e["std"]), str(e["n"]), str(e["n_skipped"])) for column, e in metrics.items()]
    return "\n".join([format_table(("metric", "mean", "std", "n", "skipped"), rows)] + _reason_lines(metrics.values()))


def format_table(header: tuple[str, ...], rows: list[tuple[str, ...]], left: tuple[int, ...] = (0,)) -> str:
    """Plain-text table: the `left` columns (the first) left-aligned, the others right-aligned, a rule under
    the header."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for i, row in enumerate([header, *rows]):
        cells = [cell.ljust(w) if k in left else cell.rjust(w) for k, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if i == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _reason_lines(entries: Iterable[dict[str, Any]]) -> list[str]:
    """Skip reasons once per metric, and metrics with the same reasons on one line."""
    by_reasons: dict[tuple[tuple[str, int], ...], list[str]] = {}
    for entry in entries:
        reasons = tuple(entry["skipped"].items())
        if reasons and entry["metric"] not in by_reasons.get(reasons, []):
            by_reasons.setdefault(reasons, []).append(entry["metric"])
    lines = []
    for reasons, metrics in by_reasons.items():
        listed = ", ".join(f"{count} {reason}" for reason, count in reasons)
        lines.append(f"skipped for {', '.join(metrics)}: {listed}")
    return ([""] + lines) if lines else []


def fmt(value: Any, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def calibration_tables(report: Mapping[str, Any], confidence: float) -> str:
    """Agreement table, then the estimates table; errors as one line per column."""
    agree_rows, ppi_rows, notes = [], [], []
    for column, entry, d, c in _agreements(report, notes):
        agree_rows.append((column, str(d["n"]), fmt(d["accuracy"]), fmt(d["balanced_accuracy"]), fmt(d["kappa"]),
                           fmt(entry["agreement"]["threshold"], 3), fmt(c["accuracy"]), fmt(c["balanced_accuracy"]),
                           fmt(c["kappa"])))
    for column, entry in report.items():  # labels of one kind have a PPI estimate and no agreement
        p = entry.get("ppi")
        if p is None:
            continue
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


def verdict_threshold_table(report: Mapping[str, Any]) -> str:
    """The chunk verdicts against reference_doc_ids, at 0.5 and at the fitted threshold, and the flag to use;
    a line for each run scored at another threshold, with the figures there."""
    rows, notes, flags = [], [], []
    for metric, entry, d, c in _agreements(report, notes):
        rows.append((metric, str(entry["n_chunks"]), str(entry["n_relevant"]), fmt(d["balanced_accuracy"]),
                     fmt(d["judge_positive_rate"]), fmt(entry["agreement"]["threshold"], 3), fmt(c["balanced_accuracy"]),
                     fmt(c["judge_positive_rate"])))
        flags.append(entry["verdict_threshold"])
        if "at_run" in entry:
            run = entry["at_run"]
            notes.append(f"{metric}: this run was scored at {fmt(run['threshold'], 3)}: bacc "
                         f"{fmt(run['balanced_accuracy'])}, yes {fmt(run['judge_positive_rate'])}")
    parts = []
    if rows:
        parts.append(format_table(("chunk verdicts", "chunks", "relevant", "bacc@0.5", "yes@0.5", "threshold", "bacc@t",
                                   "yes@t"), rows))
        parts.append("(relevant = named in the sample's reference_doc_ids; the threshold is chosen on these chunks, so "
                     "bacc@t is optimistic)\nto score with it (the judge's answers come from the cache): "
                     f"localeval score ... --verdict-threshold {','.join(flags)}")
    return "\n\n".join(parts + (["\n".join(notes)] if notes else []))


def calibrate_hint(run_dir: Path, report: Mapping[str, Any]) -> str:
    """After scoring: how each chunk-judging metric's verdicts agree with the relevance the samples' own
    reference_doc_ids give, at the threshold the run used (`verdict_threshold_report`'s at_run, else its
    at 0.5), and the command that fits a better one. The right threshold moves with the language and the
    rubric (in Chinese the judge says yes to most chunks on the question's topic), and a user who has these
    labels should see that before reading the means. Metrics whose chunks are all of one kind get no line."""
    lines = []
    for metric, entry in report.items():
        if "agreement" not in entry:
            continue
        a = entry.get("at_run") or entry["agreement"]["at_0.5"]
        c = a["confusion"]
        lines.append(f"{metric}: at threshold {fmt(a['threshold'], 3)} the chunk verdicts agree with reference_doc_ids "
                     f"in bacc {fmt(a['balanced_accuracy'], 3)} (yes to {c['tp'] + c['fp']} of {a['n']} chunks; "
                     f"{c['tp'] + c['fn']} relevant)")
    if not lines:
        return ""
    return "\n".join(lines + [f"to fit the threshold on these chunks: localeval calibrate {run_dir}"])


def _agreements(report: Mapping[str, Any], notes: list[str]) -> Iterator[tuple[str, Mapping[str, Any], Any, Any]]:
    """(name, entry, agreement at 0.5, at the chosen threshold) of each entry that has them; the others'
    errors go to `notes`, one line each."""
    for name, entry in report.items():
        if "error" in entry:
            notes.append(f"{name}: {entry['error']}")
            continue
        yield name, entry, entry["agreement"]["at_0.5"], entry["agreement"]["at_chosen"]


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
    return (column, fmt(p["naive_judge_mean_all"]), fmt(p["estimate"]), f"[{fmt(p['ci'][0])}, {fmt(p['ci'][1])}]",
            f"[{fmt(p['classical_ci'][0])}, {fmt(p['classical_ci'][1])}]", fmt(p["lambda"], 3), str(p["n_labeled"]),
            str(p["n_unlabeled"]))


def comparison_text(result: Comparison) -> str:
    """Per column: ranks and means, then each pair's difference, interval and verdict."""
    pct = f"{result.confidence:.0%}"
    blocks = []
    for col in result.columns:
        dropped = f", {col.n_dropped} not scored in every run" if col.n_dropped else ""
        lines = [f"{col.column} (n={col.n}{dropped})"]
        for name, rank in col.ranks.items():
            lines.append(f"  {rank}. {name}  mean {fmt(col.means[name])}")
        for p in col.pairs:
            if p.diff is None:
                lines.append(f"  {p.a} - {p.b}: {p.method}")
                continue
            interval = "no interval" if p.low is None else f"{pct} CI [{p.low:+.4f}, {p.high:+.4f}] ({p.method})"
            verdict = f"{p.better} is better" if p.better else "not distinguishable"
            lines.append(f"  {p.a} - {p.b}: {p.diff:+.4f}  {interval}  -> {verdict}")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) if blocks else "no metric column is shared by all runs"


def check_table(result: GateResult) -> str:
    """One row per threshold (what was compared, by how much it clears or misses), then the verdict."""
    rows = [(c.threshold.column, f"{c.threshold.bound} {c.threshold.limit:g}", fmt(c.value), c.compared,
             "-" if c.margin is None else _margin(c.margin, "+"), "pass" if c.passed else "FAIL", c.method)
            for c in result.checks]
    table = format_table(("metric", "threshold", "value", "compared", "margin", "result", "how"), rows, left=(0, 6))
    failed = result.failed
    if not failed:
        return f"{table}\n\nall {len(result.checks)} threshold(s) hold for {result.run}"
    misses = "; ".join(_miss(c) for c in failed)
    return f"{table}\n\n{len(failed)} of {len(result.checks)} threshold(s) failed for {result.run}: {misses}"


def _miss(check: CheckResult) -> str:
    """One failed threshold in words: by how much it missed, or why it could not be compared."""
    t = check.threshold
    if check.too_many_skipped:
        return f"{t.column}: {check.method}"
    missed = f"{t.column} {'below' if t.bound == 'min' else 'above'} {t.limit:g}"
    return missed + (f" by {_margin(abs(check.margin))}" if check.margin is not None else f" ({check.method})")


def _margin(margin: float, sign: str = "") -> str:
    """Four decimals, unless that would show a miss as 0.0000 (a mean of 0.84996 against 0.85)."""
    return f"{margin:{sign}.4f}" if margin == 0 or abs(margin) >= 5e-5 else f"{margin:{sign}.1e}"

"""Writing results: samples.jsonl, summary.json, summary.csv, and the table printed at the end.

All files are first written beside their final names and renamed into place only once every one of
them is complete, so an interrupted or failed run never leaves a half-written result that looks whole.
"""

from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path
from types import TracebackType
from typing import Any, Iterable

SAMPLES_FILE = "samples.jsonl"
SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"


def write_text_atomic(path: Path, text: str) -> None:
    """Write beside the target, then rename: readers see the old file or the new one, never half of one."""
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)


def dumps(obj: Any) -> str:
    """JSON that refuses NaN/Infinity: a non-finite number is a bug to surface, not a value to write."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


class ResultWriter:
    """Streams rows to a temporary samples file; `commit` writes the summaries and renames all at once."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        self._pending: dict[Path, Path] = {}
        self._rows = self._open_temp(SAMPLES_FILE)

    def _open_temp(self, name: str) -> io.TextIOWrapper:
        final = self.out_dir / name
        temp = self.out_dir / f".{name}.{os.getpid()}.tmp"
        self._pending[temp] = final
        return temp.open("w", encoding="utf-8", newline="\n")

    def write_row(self, row: dict[str, Any]) -> None:
        self._rows.write(dumps(row) + "\n")

    def rows_so_far(self) -> Path:
        """The not-yet-committed samples file, flushed, for steps that read the rows before commit."""
        self._rows.flush()
        return Path(self._rows.name)

    def commit(self, summary: dict[str, Any]) -> None:
        self._rows.close()
        with self._open_temp(SUMMARY_JSON) as handle:
            handle.write(json.dumps(summary, ensure_ascii=False, allow_nan=False, indent=2) + "\n")
        with self._open_temp(SUMMARY_CSV) as handle:
            handle.write(summary_csv(summary["metrics"]))
        for temp, final in self._pending.items():
            with temp.open("rb+") as handle:
                os.fsync(handle.fileno())
            os.replace(temp, final)
        self._pending.clear()

    def discard(self) -> None:
        self._rows.close()
        for temp in self._pending:
            temp.unlink(missing_ok=True)
        self._pending.clear()

    def __enter__(self) -> "ResultWriter":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._pending:
            self.discard()


def summary_csv(metrics: dict[str, dict[str, Any]]) -> str:
    """One row per column; skip reasons are joined as `reason=count;...` so the file stays flat."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["metric", "mean", "std", "n", "n_skipped", "skipped"])
    for column, entry in metrics.items():
        reasons = ";".join(f"{reason}={count}" for reason, count in entry["skipped"].items())
        writer.writerow([column, _num(entry["mean"]), _num(entry["std"]), entry["n"], entry["n_skipped"], reasons])
    return buffer.getvalue()


def summary_table(metrics: dict[str, dict[str, Any]]) -> str:
    """The table the CLI prints: aligned columns, 4 decimals, '-' where no sample was scored."""
    rows = [(column, _fmt(e["mean"]), _fmt(e["std"]), str(e["n"]), str(e["n_skipped"])) for column, e in metrics.items()]
    return "\n".join([format_table(("metric", "mean", "std", "n", "skipped"), rows)] + _reason_lines(metrics.values()))


def format_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Plain-text table: first column left-aligned, the others right-aligned, a rule under the header."""
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = []
    for i, row in enumerate([header, *rows]):
        cells = [row[0].ljust(widths[0])] + [cell.rjust(w) for cell, w in zip(row[1:], widths[1:])]
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


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _num(value: float | None) -> str:
    return "" if value is None else repr(value)

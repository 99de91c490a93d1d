"""Writing results: samples.jsonl, summary.json and summary.csv.

All files are first written beside their final names and renamed into place only once every one of
them is complete, so an interrupted or failed run never leaves a half-written result that looks whole.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from types import TracebackType
from typing import Any

from ..files import dumps, temp_name

SAMPLES_FILE = "samples.jsonl"
SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
#: Written into a run folder by `localeval calibrate`.
CALIBRATION_FILE = "calibration.json"


class ResultWriter:
    """Streams rows to a temporary samples file; `commit` writes the summaries and renames all at once."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = out_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        self._pending: dict[Path, Path] = {}
        self._rows = self._open_temp(SAMPLES_FILE)

    def _open_temp(self, name: str) -> io.TextIOWrapper:
        final = self.out_dir / name
        temp = temp_name(final)
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
            handle.write(dumps(summary, indent=2) + "\n")
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


def _num(value: float | None) -> str:
    return "" if value is None else repr(value)

"""Writing results: samples.jsonl, summary.json and summary.csv.

All files are first written beside their final names and renamed into place only once every one of
them is complete, together (atomic.py): an interrupted or failed run leaves the previous results as they
were, never a half-written result or a mix of old and new files that looks whole.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from types import TracebackType
from typing import Any, Sequence

from ..atomic import AtomicFiles, sweep_stale
from ..data.records import OUTPUT_KEYS
from ..files import dumps
from .tables import TABLE_FORMATS, table_name, write_table

SAMPLES_FILE = "samples.jsonl"
SUMMARY_JSON = "summary.json"
SUMMARY_CSV = "summary.csv"
#: Written into a run folder by `localeval calibrate`.
CALIBRATION_FILE = "calibration.json"
RESULT_FILES = (SAMPLES_FILE, SUMMARY_JSON, SUMMARY_CSV)


class ResultWriter:
    """Streams rows to a temporary samples file; `commit` writes the summaries and renames all at once."""

    def __init__(self, out_dir: Path, tables: Sequence[str] = ()) -> None:
        self.out_dir = out_dir
        self.tables = tuple(tables)  # formats of results/tables.py written beside samples.jsonl
        self._files = AtomicFiles(out_dir)
        for name in (CALIBRATION_FILE, *map(table_name, TABLE_FORMATS)):  # a dead run's temps of files not
            sweep_stale(out_dir / name)                                   # written this time go too
        self._rows = self._files.open(SAMPLES_FILE)
        self._inputs: dict[str, None] = {"id": None}  # the rows' input fields, first-seen order, for the tables

    def write_row(self, row: dict[str, Any]) -> None:
        self._rows.write(dumps(row) + "\n")
        if self.tables:
            self._inputs.update((key, None) for key in row if key not in OUTPUT_KEYS)

    def rows_so_far(self) -> Path:
        """The not-yet-committed samples file, flushed, for steps that read the rows before commit."""
        self._rows.flush()
        return self._rows.path

    def commit(self, summary: dict[str, Any]) -> None:
        self._rows.close()
        self._previous_tables = _tables_listed(self.out_dir / SUMMARY_JSON)
        summary["tables"] = [table_name(fmt) for fmt in self.tables]
        with self._files.open(SUMMARY_JSON) as handle:
            handle.write(dumps(summary, indent=2) + "\n")
        with self._files.open(SUMMARY_CSV) as handle:
            handle.write(summary_csv(summary["metrics"]))
        for fmt in self.tables:
            write_table(self._rows.path, fmt, list(self._inputs), list(summary["metrics"]),
                        self._files.temp(table_name(fmt)))
        # What the previous results left that these do not replace would read as theirs: `calibrate`'s fit of
        # the previous samples (`check --on ci-low` and the report would use it; calibrate again), and tables
        # of the previous rows in a format not asked for this time. They go in the commit's own step, so a
        # Ctrl-C held until the renames are done cannot leave them beside the new results.
        stale = [CALIBRATION_FILE, *(name for name in self._previous_tables if name not in summary["tables"])]
        self._files.commit(remove=stale)

    def discard(self) -> None:
        try:
            self._rows.close()
        finally:
            self._files.discard()

    def __enter__(self) -> "ResultWriter":
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.discard()


def _tables_listed(summary_path: Path) -> list[str]:
    """The tables the results already in a folder wrote (their summary.json's `tables`): only those are
    ours to remove; a samples.csv the folder held otherwise (the input itself, say) is the user's."""
    try:
        listed = json.loads(summary_path.read_text(encoding="utf-8")).get("tables")
    except (OSError, ValueError, AttributeError):
        return []
    return [name for name in listed if name in {table_name(fmt) for fmt in TABLE_FORMATS}] if isinstance(listed, list) else []


def summary_csv(metrics: dict[str, dict[str, Any]]) -> str:
    """One row per column; the skip reasons are a JSON object of reason -> count in one cell (a reason may
    hold any character: a server's error text, a URL's `?a=b&c=d`)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["metric", "mean", "std", "n", "n_skipped", "skipped"])
    for column, entry in metrics.items():
        reasons = json.dumps(entry["skipped"], ensure_ascii=False) if entry["skipped"] else ""
        writer.writerow([column, _num(entry["mean"]), _num(entry["std"]), entry["n"], entry["n_skipped"], reasons])
    return buffer.getvalue()


def _num(value: float | None) -> str:
    return "" if value is None else repr(value)

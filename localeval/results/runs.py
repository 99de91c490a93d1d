"""Reading what `localeval score` wrote (RUN_DIR/samples.jsonl), for calibration, comparison, reports
and gates.

Metric values are held as one float array per column, aligned with the run's ids, with NaN where a
sample was skipped for that metric; NaN never leaves this package (every consumer masks it first).
Ids are compared as strings, as `localeval score` writes them.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
from numpy.typing import NDArray

from ..data.loading import iter_jsonl
from ..data.records import identifier
from ..errors import InputError
from ..files import check_readable, read_text
from ..strict_json import parse_json
from .writer import CALIBRATION_FILE, SAMPLES_FILE, SUMMARY_JSON


@dataclass(frozen=True)
class ScoredRun:
    """One scored run: ids in file order and, per metric column, values aligned with them (NaN = skipped)."""

    name: str
    source: str
    ids: list[str]
    columns: dict[str, NDArray[np.float64]]
    index: dict[str, int] = field(repr=False)

    def values(self, column: str, ids: list[str]) -> NDArray[np.float64]:
        """The column's values for `ids`, in that order (ids must be in the run)."""
        return self.columns[column][[self.index[i] for i in ids]]

    def unit_columns(self) -> list[str]:
        """Columns whose scored values all lie in [0, 1]: judge probabilities, verdicts, rates."""
        out = []
        for column, values in self.columns.items():
            scored = values[~np.isnan(values)]
            if scored.size and scored.min() >= 0.0 and scored.max() <= 1.0:
                out.append(column)
        return out


def samples_path(run: Path) -> Path:
    """A RUN_DIR (holding samples.jsonl) or the samples file itself."""
    return run / SAMPLES_FILE if run.is_dir() else run


def load_run(run: Path, name: str | None = None) -> ScoredRun:
    """Read a scored run; bad lines raise InputError naming the file, line and field."""
    path = samples_path(run)
    source = str(path)
    if not path.exists():
        raise InputError(source, None, None, f"no such file; is {run} a folder written by `localeval score --out`?")
    check_readable(path)
    ids: list[str] = []
    index: dict[str, int] = {}
    cells: dict[str, list[tuple[int, float]]] = {}
    for line, record in iter_jsonl(path):
        if not isinstance(record, dict) or "id" not in record:
            raise InputError(source, line, "id", "missing; every scored sample has an id")
        sample_id = identifier(record["id"], lambda message: InputError(source, line, "id", message))
        if sample_id in index:
            raise InputError(source, line, "id", f"duplicate id '{sample_id}'")
        metrics = record.get("metrics", {})
        if not isinstance(metrics, dict):
            raise InputError(source, line, "metrics", "must be an object of column → number")
        for column, value in metrics.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InputError(source, line, f"metrics.{column}", f"must be a finite number, got {value!r}")
            cells.setdefault(column, []).append((len(ids), float(value)))
        index[sample_id] = len(ids)
        ids.append(sample_id)
    if not ids:
        raise InputError(source, None, None, "contains no samples")
    columns = {}
    for column, pairs in cells.items():
        values = np.full(len(ids), np.nan)
        positions, numbers = zip(*pairs)
        values[list(positions)] = numbers
        columns[column] = values
    return ScoredRun(name=name or str(run), source=source, ids=ids, columns=columns, index=index)


def run_folder(run: Path) -> Path:
    """The folder of a run given as RUN_DIR or as its samples file."""
    return run if run.is_dir() else run.parent


def load_summary(run: Path) -> dict[str, Any]:
    """RUN_DIR/summary.json: per-column means, settings, judge and its work, the PPI block if labelled."""
    path = run_folder(run) / SUMMARY_JSON
    if not run.exists():
        raise InputError(str(run), None, None, "no such folder; give a folder written by `localeval score --out`")
    summary = _json_object(path, f"no such file; is {run} a folder written by `localeval score --out`?")
    if not isinstance(summary.get("metrics"), dict):
        raise InputError(str(path), None, "metrics", "missing; is this a summary written by `localeval score`?")
    return summary


def load_calibration(run: Path) -> dict[str, Any] | None:
    """RUN_DIR/calibration.json (written by `localeval calibrate`), or None when the run was not calibrated."""
    path = run_folder(run) / CALIBRATION_FILE
    return _json_object(path, "") if path.exists() else None


def verdict_thresholds_used(run: Path) -> dict[str, float]:
    """Metric → the verdict threshold it was scored at, from summary.json's settings; {} for a bare samples
    file with no summary beside it. A setting that is not a probability is left out (it only adds a row)."""
    if not (run_folder(run) / SUMMARY_JSON).exists():
        return {}
    settings = load_summary(run).get("settings")
    out = {}
    for metric, entry in (settings.items() if isinstance(settings, dict) else ()):
        value = entry.get("threshold") if isinstance(entry, dict) else None
        if isinstance(value, (int, float)) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
            out[metric] = float(value)
    return out


def _json_object(path: Path, missing: str) -> dict[str, Any]:
    if not path.exists():
        raise InputError(str(path), None, None, missing)
    value = parse_json(read_text(path), str(path))
    if not isinstance(value, dict):
        raise InputError(str(path), None, None, "must hold a JSON object")
    return value


def column_listing(columns: Iterable[str]) -> str:
    names = sorted(columns)
    return ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "") if names else "no columns"


def unknown_column(column: str, columns: Mapping[str, Any]) -> str:
    """'faithfulnes' → "no metric column 'faithfulnes'; did you mean 'faithfulness'? (it has ...)"."""
    close = difflib.get_close_matches(column, list(columns), n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    return f"the run has no metric column '{column}'{hint} (it has {column_listing(columns)})"

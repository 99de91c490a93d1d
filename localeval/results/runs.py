"""Reading what `localeval score` wrote (RUN_DIR/samples.jsonl), for calibration, comparison, reports
and gates.

Metric values are held as one float array per column, aligned with the run's ids, with NaN where a
sample was skipped for that metric; NaN never leaves this package (every consumer masks it first).
Ids are compared as strings, as `localeval score` writes them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

import numpy as np
from numpy.typing import NDArray

from ..data.loading import iter_jsonl
from ..data.records import identifier
from ..errors import InputError
from ..files import check_readable, read_text
from ..limits import MAX_SCORE
from ..strict_json import finite_number, parse_json
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
            if not finite_number(value):
                raise InputError(source, line, f"metrics.{column}", f"must be a finite number, got {value!r}")
            if abs(value) > MAX_SCORE:
                raise InputError(source, line, f"metrics.{column}", f"{value:g} is beyond ±{MAX_SCORE:g}, "
                                                                    "too large to average; is this a score?")
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


def run_folder(run: Path) -> Path | None:
    """The folder of a run given as RUN_DIR or as its samples.jsonl; None for any other file, since the
    summary.json beside, say, an edited copy of the samples describes another run, not this file."""
    if run.is_dir():
        return run
    return run.parent if run.name == SAMPLES_FILE else None


def load_summary(run: Path) -> dict[str, Any]:
    """RUN_DIR/summary.json: per-column means, settings, judge and its work, the PPI block if labelled.

    Every figure a gate or a report reads from it is checked here, so a hand-edited or damaged summary
    stops with its file and field instead of a traceback (or, worse, a gate that passes on a string)."""
    if not run.exists():
        raise InputError(str(run), None, None, "no such folder; give a folder written by `localeval score --out`")
    folder = run_folder(run)
    if folder is None:
        raise InputError(str(run), None, None, "is a file, not a run folder; give the folder written by "
                                               "`localeval score --out` (or the samples.jsonl in it)")
    path = folder / SUMMARY_JSON
    summary = _json_object(path, f"no such file; is {run} a folder written by `localeval score --out`?")
    if not isinstance(summary.get("metrics"), dict):
        raise InputError(str(path), None, "metrics", "missing; is this a summary written by `localeval score`?")
    for column, entry in summary["metrics"].items():
        _check_summary_entry(str(path), f"metrics.{column}", entry)
    for key in ("settings", "versions", "judge"):
        if summary.get(key) is not None and not isinstance(summary[key], dict):
            raise InputError(str(path), None, key, "must be an object")
    ppi = summary.get("ppi")
    if ppi is not None:
        blocks = ppi.get("metrics") if isinstance(ppi, dict) else None
        if not isinstance(blocks, dict):
            raise InputError(str(path), None, "ppi.metrics", "must be an object of column → PPI estimate")
        for column, block in blocks.items():
            _check_ppi_block(str(path), f"ppi.metrics.{column}", block)
    return summary


def load_calibration(run: Path) -> dict[str, Any] | None:
    """RUN_DIR/calibration.json (written by `localeval calibrate`), or None when the run was not calibrated."""
    folder = run_folder(run)
    if folder is None or not (folder / CALIBRATION_FILE).exists():
        return None
    path = folder / CALIBRATION_FILE
    calibration = _json_object(path, "")
    entries = calibration.get("metrics", {})
    if not isinstance(entries, dict):
        raise InputError(str(path), None, "metrics", "must be an object of column → calibration")
    for column, entry in entries.items():
        if not isinstance(entry, dict):
            raise InputError(str(path), None, f"metrics.{column}", "must be an object")
        if entry.get("ppi") is not None:
            _check_ppi_block(str(path), f"metrics.{column}.ppi", entry["ppi"])
    return calibration


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _check_summary_entry(source: str, where: str, entry: Any) -> None:
    if not isinstance(entry, dict):
        raise InputError(source, None, where, "must be an object with the column's mean, std and n")
    if not isinstance(entry.get("metric", ""), str):
        raise InputError(source, None, f"{where}.metric", f"must be the metric's name, got {entry['metric']!r}")
    for key in ("mean", "std"):
        if entry.get(key) is not None and not finite_number(entry[key]):
            raise InputError(source, None, f"{where}.{key}", f"must be a finite number or null, got {entry[key]!r}")
    for key in ("n", "n_skipped"):
        value = entry.get(key, 0)
        if not _count(value):
            raise InputError(source, None, f"{where}.{key}", f"must be a count (an integer >= 0), got {value!r}")
    if not isinstance(entry.get("skipped", {}), dict):
        raise InputError(source, None, f"{where}.skipped", "must be an object of reason → count")


def _check_ppi_block(source: str, where: str, block: Any) -> None:
    """A PPI estimate as calibrate and score write it; a block with only an "error" is a column it could not
    estimate (too few labels), which readers skip."""
    if not isinstance(block, dict):
        raise InputError(source, None, where, "must be an object")
    if "ci" not in block:
        return
    ci = block["ci"]
    if not (isinstance(ci, list) and len(ci) == 2 and all(finite_number(v) for v in ci) and ci[0] <= ci[1]):
        raise InputError(source, None, f"{where}.ci", f"must be [low, high], two finite numbers, got {ci!r}")
    if not finite_number(block.get("estimate")):
        raise InputError(source, None, f"{where}.estimate", f"must be a finite number, got {block.get('estimate')!r}")
    confidence = block.get("confidence")
    if not (finite_number(confidence) and 0 < confidence < 1):
        raise InputError(source, None, f"{where}.confidence", f"must be a number between 0 and 1, got {confidence!r}")
    n = block.get("n_labeled")
    if not _count(n):
        raise InputError(source, None, f"{where}.n_labeled", f"must be a count (an integer >= 0), got {n!r}")


def verdict_thresholds_used(run: Path) -> dict[str, float]:
    """Metric → the verdict threshold it was scored at, from summary.json's settings; {} for a bare samples
    file with no summary beside it. A setting that is not a probability is left out (it only adds a row)."""
    folder = run_folder(run)
    if folder is None or not (folder / SUMMARY_JSON).exists():
        return {}
    out = {}
    for metric, entry in (load_summary(run).get("settings") or {}).items():  # an object, if any (load_summary)
        value = entry.get("threshold") if isinstance(entry, dict) else None
        if finite_number(value) and 0.0 <= value <= 1.0:
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

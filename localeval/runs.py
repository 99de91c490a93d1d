"""Reading what `localeval score` wrote (RUN_DIR/samples.jsonl) and human-label files, for calibration and
comparison.

Metric values are held as one float array per column, aligned with the run's ids, with NaN where a
sample was skipped for that metric; NaN never leaves this package (every consumer masks it first).
Ids are compared as strings, as `localeval score` writes them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from numpy.typing import NDArray

from .errors import InputError
from .loading import iter_jsonl
from .output import SAMPLES_FILE


@dataclass(frozen=True)
class Run:
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


@dataclass(frozen=True)
class Labels:
    """Human labels per metric column: id → 0/1, and where each labelled id was read (for messages)."""

    source: str
    by_column: dict[str, dict[str, int]]
    lines: dict[str, int]
    ignored_fields: list[str]


def samples_path(run: Path) -> Path:
    """A RUN_DIR (holding samples.jsonl) or the samples file itself."""
    return run / SAMPLES_FILE if run.is_dir() else run


def load_run(run: Path, name: str | None = None) -> Run:
    """Read a scored run; bad lines raise InputError naming the file, line and field."""
    path = samples_path(run)
    source = str(path)
    if not path.is_file():
        raise InputError(source, None, None, f"no such file; is {run} a folder written by `localeval score --out`?")
    ids: list[str] = []
    index: dict[str, int] = {}
    cells: dict[str, list[tuple[int, float]]] = {}
    for line, record in iter_jsonl(path):
        if not isinstance(record, dict) or "id" not in record:
            raise InputError(source, line, "id", "missing; every scored sample has an id")
        sample_id = str(record["id"])
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
    return Run(name=name or str(run), source=source, ids=ids, columns=columns, index=index)


def load_labels(path: Path, run: Run, mapping: Mapping[str, str] | None = None) -> Labels:
    """Read `{id, <column>: 0/1}` lines for the columns of `run`.

    `mapping` is column → key in the labels file (e.g. faithfulness → answer_faithfulness for ARES gold
    files); without it, every key named like one of the run's metric columns is a label. Other keys are
    ignored (reported in `ignored_fields`), so a gold test set with its questions can serve as a labels
    file. A label may be null (that sample was not labelled for that metric).
    """
    source = str(path)
    if not path.is_file():
        raise InputError(source, None, None, "no such file")
    key_to_column = {key: column for column, key in (mapping or {}).items()}
    for column in key_to_column.values():
        if column not in run.columns:
            raise InputError(source, None, None, f"--label-column: the run has no metric column '{column}'; "
                                                 f"it has {_listing(run.columns)}")
    by_column: dict[str, dict[str, int]] = {}
    lines: dict[str, int] = {}
    ignored: set[str] = set()
    for line, record in iter_jsonl(path):
        if not isinstance(record, dict) or "id" not in record:
            raise InputError(source, line, "id", "missing; each label line is {\"id\": ..., \"<metric>\": 0 or 1}")
        sample_id = str(record["id"])
        if sample_id not in run.index:
            raise InputError(source, line, "id", f"unknown id '{sample_id}': not a sample in {run.source}")
        if sample_id in lines:
            raise InputError(source, line, "id", f"duplicate id '{sample_id}' (first used on line {lines[sample_id]})")
        lines[sample_id] = line
        for key, value in record.items():
            column = key_to_column.get(key, key)
            if key == "id" or column not in run.columns:
                if key != "id":
                    ignored.add(key)
                continue
            if value is None:
                continue
            if value not in (0, 1):  # True/False compare equal to 1/0 and are accepted
                raise InputError(source, line, key, f"a label must be 0 or 1 (or null), got {value!r}")
            by_column.setdefault(column, {})[sample_id] = int(value)
    if not lines:
        raise InputError(source, None, None, "contains no labels")
    if not by_column:
        raise InputError(source, None, None, f"no label matches a metric column of the run ({_listing(run.columns)}); "
                                             "name the keys after the columns or map them with --label-column COLUMN=KEY")
    return Labels(source=source, by_column=by_column, lines=lines, ignored_fields=sorted(ignored))


def parse_mapping(values: tuple[str, ...] | list[str], flag: str = "--label-column") -> dict[str, str]:
    """'COLUMN=KEY' pairs; shared by the CLI and the bench script."""
    mapping = {}
    for value in values:
        column, sep, key = value.partition("=")
        if not sep or not column.strip() or not key.strip():
            raise InputError(flag, None, None, f"'{value}' is not COLUMN=KEY (e.g. faithfulness=answer_faithfulness)")
        mapping[column.strip()] = key.strip()
    return mapping


def _listing(columns: Mapping[str, Any]) -> str:
    names = sorted(columns)
    return ", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "") if names else "no columns"

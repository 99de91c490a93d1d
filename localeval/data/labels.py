"""Human labels for some samples of a scored run: `{"id": ..., "<metric column>": 0 or 1}` per line.

Read for calibration (agreement, thresholds), prediction-powered estimates and comparisons. Ids are
compared as strings, as `localeval score` writes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Collection, Container, Mapping

from ..errors import InputError
from ..files import check_readable
from ..results.runs import ScoredRun, column_listing
from .loading import iter_jsonl
from .records import identifier


@dataclass(frozen=True)
class Labels:
    """Human labels per metric column: id → 0/1, and where each labelled id was read (for messages)."""

    source: str
    by_column: dict[str, dict[str, int]]
    lines: dict[str, int]
    ignored_fields: list[str]


def load_labels(path: Path, run: ScoredRun, mapping: Mapping[str, str] | None = None) -> Labels:
    """Labels for the samples and metric columns of a scored run (calibrate, compare)."""
    return read_labels(path, run.index, run.columns, mapping, run.source)


def read_labels(path: Path, ids: Container[str], columns: Collection[str], mapping: Mapping[str, str] | None,
                samples_source: str) -> Labels:
    """Read `{id, <column>: 0/1}` lines for `columns` of the samples `ids` (read from `samples_source`).

    `localeval score --labels` calls this with the input's ids and the columns its metrics will write,
    before any metric runs, so a typo in the labels costs seconds, not a whole judge run.

    `mapping` is column → key in the labels file (e.g. faithfulness → answer_faithfulness for ARES gold
    files); without it, every key named like one of the columns is a label. Other keys are ignored
    (reported in `ignored_fields`), so a gold test set with its questions can serve as a labels file. A
    label may be null (that sample was not labelled for that metric).
    """
    source = str(path)
    check_readable(path)
    key_to_columns: dict[str, list[str]] = {}  # one key may label several columns (one human verdict for both)
    for column, key in (mapping or {}).items():
        key_to_columns.setdefault(key, []).append(column)
    mapped = {column for targets in key_to_columns.values() for column in targets}
    for column in mapped:
        if column not in columns:
            raise InputError(source, None, None, f"--label-column: there is no metric column '{column}'; "
                                                 f"there are {column_listing(columns)}")
    by_column: dict[str, dict[str, int]] = {}
    lines: dict[str, int] = {}
    ignored: set[str] = set()
    for line, record in iter_jsonl(path):
        if not isinstance(record, dict) or "id" not in record:
            raise InputError(source, line, "id", "missing; each label line is {\"id\": ..., \"<metric>\": 0 or 1}")
        sample_id = identifier(record["id"], lambda message: InputError(source, line, "id", message))
        if sample_id not in ids:
            raise InputError(source, line, "id", f"unknown id '{sample_id}': not a sample in {samples_source}")
        if sample_id in lines:
            raise InputError(source, line, "id", f"duplicate id '{sample_id}' (first used on line {lines[sample_id]})")
        lines[sample_id] = line
        for key, value in record.items():
            targets = key_to_columns.get(key, [key])
            # a column mapped to another key takes its labels from that key only: a key of the column's own
            # name is something else, not a second label that would silently win
            if key == "id" or targets[0] not in columns or (key not in key_to_columns and key in mapped):
                if key != "id":
                    ignored.add(key)
                continue
            if value is None:
                continue
            if isinstance(value, (list, dict)) or value not in (0, 1):  # True/False equal 1/0 and are accepted
                raise InputError(source, line, key, f"a label must be 0 or 1 (or null), got {value!r}")
            for column in targets:
                by_column.setdefault(column, {})[sample_id] = int(value)
    if not lines:
        raise InputError(source, None, None, "contains no labels")
    if not by_column:
        raise InputError(source, None, None, f"no label matches a metric column ({column_listing(columns)}); "
                                             "name the keys after the columns or map them with --label-column COLUMN=KEY")
    return Labels(source=source, by_column=by_column, lines=lines, ignored_fields=sorted(ignored))

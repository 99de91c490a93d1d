"""Reading test sets: JSON Lines or CSV, streamed record by record with their line numbers.

Files are read lazily so a million-line test set never sits in memory; validation happens per record
(see records.py) and ids are checked for duplicates as they stream past. Callers that must not half-write
output run `validate_file` first: a cheap full pass that fails on the first bad record.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..errors import InputError
from ..files import check_readable, decoded_lines
from ..strict_json import parse_json
from .records import Sample, sample_from_record

#: CSV columns that hold JSON (lists or objects); the rest are plain text.
JSON_COLUMNS = ("contexts", "reference_doc_ids", "reference_docs")
#: Fields a CSV can map columns to with --column FIELD=COLUMN.
CSV_FIELDS = ("id", "question", "answer", "reference") + JSON_COLUMNS


@dataclass(frozen=True)
class Container:
    """A file format test sets arrive in: the extensions that name it and its reader of (line, record)
    pairs. A new format is one reader and one entry in CONTAINERS; --format and detection follow."""

    name: str
    extensions: tuple[str, ...]
    read: Callable[[Path, dict[str, str]], Iterator[tuple[int, Any]]]
    #: Whether --column FIELD=COLUMN renames its fields (formats with free column names).
    maps_columns: bool


def container_names() -> list[str]:
    return [container.name for container in CONTAINERS]


def detect_format(path: Path) -> str:
    """By extension, because sniffing content would misread a CSV whose first cell holds JSON."""
    suffix = path.suffix.lower()
    for container in CONTAINERS:
        if suffix in container.extensions:
            return container.name
    known = ", ".join(e for c in CONTAINERS for e in c.extensions)
    raise InputError(str(path), None, None, f"unknown format; use a file ending in {known}, or pass --format")


def iter_records(path: Path, fmt: str | None = None, columns: Mapping[str, str] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, decoded record) pairs; decoding errors name the file and line."""
    check_readable(path)
    name = fmt or detect_format(path)
    container = next((c for c in CONTAINERS if c.name == name), None)
    if container is None:
        raise InputError(str(path), None, None, f"unknown format '{name}'; use {' or '.join(container_names())}")
    if columns and not container.maps_columns:
        mapped = " and ".join(c.name.upper() for c in CONTAINERS if c.maps_columns)
        raise InputError(str(path), None, None, f"--column applies to {mapped} input only")
    return container.read(path, dict(columns or {}))


def read_samples(path: Path, fmt: str | None = None, columns: Mapping[str, str] | None = None) -> Iterator[Sample]:
    """Validated samples in file order; a duplicate id is an error naming both lines."""
    seen: set[str] = set()
    for line, record in iter_records(path, fmt, columns):
        sample = sample_from_record(record, str(path), line)
        if sample.id in seen:
            first = _first_line_of(path, fmt, columns, sample.id)
            raise InputError(str(path), line, "id", f"duplicate id '{sample.id}' (first used on line {first})")
        seen.add(sample.id)
        yield sample


def validate_file(path: Path, fmt: str | None = None, columns: Mapping[str, str] | None = None,
                  ids: set[str] | None = None, check: Callable[[Sample], None] | None = None) -> int:
    """Check every record without keeping any; return how many there are. The ids are added to `ids` when
    it is given (to check a labels file against the input before scoring); `check` sees each sample (what
    the run's metrics need of it beyond the data contract, e.g. a criterion worded in its language)."""
    count = 0
    for sample in read_samples(path, fmt, columns):
        count += 1
        if ids is not None:
            ids.add(sample.id)
        if check is not None:
            check(sample)
    if count == 0:
        raise InputError(str(path), None, None, "contains no records")
    return count


def _first_line_of(path: Path, fmt: str | None, columns: Mapping[str, str] | None, sample_id: str) -> int:
    """Only on the error path: a second scan is cheaper than remembering a line for every id."""
    for line, record in iter_records(path, fmt, columns):
        if isinstance(record, dict) and str(record.get("id")) == sample_id:
            return line
    return 0


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line, decoded by the strict decoder (see strict_json.py)."""
    source = str(path)
    for number, text in decoded_lines(path):
        if text.strip():
            yield number, parse_json(text.rstrip("\r\n"), source, number)


def _iter_csv(path: Path, columns: dict[str, str]) -> Iterator[tuple[int, Any]]:
    """CSV rows mapped to contract fields; list-valued fields hold JSON in their cell.

    The reader is strict: a quote that is never closed, or text after a closing quote, is an error naming
    the line where the row starts, rather than rows silently merged into one cell. A header naming a
    column twice is an error too (a dict of the row would keep only the last one).
    """
    source = str(path)
    for field_name in columns:
        if field_name not in CSV_FIELDS:
            raise InputError(source, None, None, f"--column: '{field_name}' is not a field; use one of {', '.join(CSV_FIELDS)}")
    rows = _csv_rows(path)
    try:
        _, header = next(rows)
    except StopIteration:
        return
    index: dict[str, int] = {}
    for i, name in enumerate(header):
        if name in index:
            raise InputError(source, 1, None, f"column '{name}' appears twice in the header (columns {index[name] + 1} "
                                              f"and {i + 1}); rename one")
        index[name] = i
    mapping = {f: columns.get(f, f) for f in CSV_FIELDS}
    for field_name, column in columns.items():
        if column not in index:
            raise InputError(source, 1, None, f"--column {field_name}={column}: no column '{column}' in the header")
    for line, row in rows:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(source, line, None, f"has {len(row)} cells but the header has {len(header)}")
        record: dict[str, Any] = {name: row[i] for name, i in index.items()}
        for field_name, column in mapping.items():
            if column not in index:
                continue
            cell = row[index[column]]
            if column != field_name:
                record.pop(column, None)
            if cell == "":
                record[field_name] = None
            elif field_name in JSON_COLUMNS:
                record[field_name] = parse_json(cell, source, line, field_name, "cell must hold JSON")
            else:
                record[field_name] = cell
        yield line, record


def _csv_rows(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(line where the row starts, cells); a quoted cell may span lines, so rows and lines differ."""
    lines = (text for _, text in decoded_lines(path))
    reader = csv.reader(lines, dialect="excel-tab" if path.suffix.lower() == ".tsv" else "excel", strict=True)
    while True:
        start = reader.line_num + 1
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            if "unexpected end of data" in str(exc):
                message = "the row starting on this line has a quoted cell that is never closed (a missing '\"'?)"
            elif "expected after" in str(exc):
                message = ("invalid CSV: a quoted cell is followed by text before the next separator (an unbalanced "
                           "'\"' that joined rows?)")
            else:
                message = f"invalid CSV: {exc}"
            raise InputError(str(path), start, None, message) from None
        yield start, row


CONTAINERS = (
    Container("jsonl", (".jsonl", ".ndjson", ".json"), lambda path, columns: iter_jsonl(path), maps_columns=False),
    Container("csv", (".csv", ".tsv"), _iter_csv, maps_columns=True),
)

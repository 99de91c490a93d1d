"""Reading test sets: JSON Lines or CSV, streamed record by record with their line numbers.

Files are read lazily so a million-line test set never sits in memory; validation happens per record
(see records.py) and ids are checked for duplicates as they stream past. Callers that must not half-write
output run `validate_file` first: a cheap full pass that fails on the first bad record.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterator, Mapping

from ..errors import InputError
from ..files import check_readable, decoded_lines
from .records import Sample, sample_from_record

#: CSV columns that hold JSON (lists or objects); the rest are plain text.
JSON_COLUMNS = ("contexts", "reference_doc_ids", "reference_docs")
#: Fields a CSV can map columns to with --column FIELD=COLUMN.
CSV_FIELDS = ("id", "question", "answer", "reference") + JSON_COLUMNS


def detect_format(path: Path) -> str:
    """By extension, because sniffing content would misread a CSV whose first cell holds JSON."""
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".ndjson", ".json"):
        return "jsonl"
    if suffix in (".csv", ".tsv"):
        return "csv"
    raise InputError(str(path), None, None, "unknown format; use a .jsonl or .csv file, or pass --format")


def iter_records(path: Path, fmt: str | None = None, columns: Mapping[str, str] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, decoded record) pairs; decoding errors name the file and line."""
    check_readable(path)
    fmt = fmt or detect_format(path)
    if fmt == "jsonl":
        if columns:
            raise InputError(str(path), None, None, "--column applies to CSV input only")
        return iter_jsonl(path)
    if fmt == "csv":
        return _iter_csv(path, dict(columns or {}))
    raise InputError(str(path), None, None, f"unknown format '{fmt}'; use jsonl or csv")


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


def validate_file(path: Path, fmt: str | None = None, columns: Mapping[str, str] | None = None) -> int:
    """Check every record without keeping any; return how many there are."""
    count = 0
    for _ in read_samples(path, fmt, columns):
        count += 1
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
    for number, text in decoded_lines(path):
        if not text.strip():
            continue
        try:
            yield number, json.loads(text.rstrip("\r\n"))
        except json.JSONDecodeError as exc:
            raise InputError(str(path), number, None, f"invalid JSON: {exc.msg} at column {exc.colno}") from None


def _iter_csv(path: Path, columns: dict[str, str]) -> Iterator[tuple[int, Any]]:
    """CSV rows mapped to contract fields; list-valued fields hold JSON in their cell."""
    for field_name in columns:
        if field_name not in CSV_FIELDS:
            raise InputError(str(path), None, None, f"--column: '{field_name}' is not a field; use one of {', '.join(CSV_FIELDS)}")
    lines = (text for _, text in decoded_lines(path))
    reader = csv.reader(lines, dialect="excel-tab" if path.suffix.lower() == ".tsv" else "excel")
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as exc:
        raise InputError(str(path), 1, None, f"invalid CSV: {exc}") from None
    index = {name: i for i, name in enumerate(header)}
    mapping = {f: columns.get(f, f) for f in CSV_FIELDS}
    for field_name, column in columns.items():
        if column not in index:
            raise InputError(str(path), 1, None, f"--column {field_name}={column}: no column '{column}' in the header")
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise InputError(str(path), reader.line_num, None, f"invalid CSV: {exc}") from None
        if not any(cell.strip() for cell in row):
            continue
        line = reader.line_num
        if len(row) != len(header):
            raise InputError(str(path), line, None, f"has {len(row)} cells but the header has {len(header)}")
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
                try:
                    record[field_name] = json.loads(cell)
                except json.JSONDecodeError as exc:
                    raise InputError(str(path), line, field_name, f"cell must hold JSON ({exc.msg})") from None
            else:
                record[field_name] = cell
        yield line, record


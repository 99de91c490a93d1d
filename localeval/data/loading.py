"""Reading test sets: JSON Lines, a JSON array, CSV/TSV or Parquet, record by record with their line numbers.

Files are read lazily so a million-line test set never sits in memory (a Parquet file a row group at a
time; a JSON array is the one container that is parsed whole); validation happens per record (see
records.py), and `validate_file` checks ids for repeats on a hash of each. Every container's records go
through the same steps: --column renames, then the shape (shapes.py: Ragas' or DeepEval's field names, ids
from row numbers). Callers that must not half-write output run `validate_file` first: a cheap full pass
that fails on the first bad record.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import tokenize
from array import array
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

from ..errors import InputError
from ..files import check_readable, decoded_lines, read_text
from ..strict_json import check_json_value, parse_json, repeated_key
from .records import Sample, sample_from_record
from .shapes import FIELDS, LIST_FIELDS, SHAPES, RecordReader

#: The fields --column FIELD=COLUMN can fill.
COLUMN_FIELDS = ("id", *FIELDS)
#: Every field name some shape uses: an empty CSV cell of one of them means "absent".
KNOWN_FIELDS = frozenset({"id", *(name for shape in SHAPES for name in shape.fields),
                          *(ids for shape in SHAPES for ids, _ in shape.ids_of)})
#: Parquet rows are read this many at a time.
PARQUET_BATCH = 4096


@dataclass(frozen=True)
class Container:
    """A file format test sets arrive in: the extensions that name it and its reader of (line, record)
    pairs. A new format is one reader and one entry in CONTAINERS; --format and detection follow."""

    name: str
    extensions: tuple[str, ...]
    read: Callable[[Path], Iterator[tuple[int, Any]]]
    #: Whether its values are all text (CSV): a list field's cell then holds JSON.
    text_cells: bool = False


def container_names() -> list[str]:
    return [container.name for container in CONTAINERS]


def detect_format(path: Path) -> str:
    """By extension, because sniffing content would misread a CSV whose first cell holds JSON; a .json file
    is a JSON array when it starts with '[' and JSON Lines otherwise (Hugging Face's `to_json` writes lines)."""
    suffix = path.suffix.lower()
    if suffix == ".json":
        return "json" if _first_character(path) == "[" else "jsonl"
    for container in CONTAINERS:
        if suffix in container.extensions:
            return container.name
    known = ", ".join(e for c in CONTAINERS for e in c.extensions)
    raise InputError(str(path), None, None, f"unknown format; use a file ending in {known}, or pass --format")


def iter_records(path: Path, fmt: str | None = None, columns: Mapping[str, str] | None = None) -> Iterator[tuple[int, Any]]:
    """Yield (line number, record in localeval's field names) pairs; errors name the file and line."""
    return _records(path, fmt, columns, RecordReader(str(path)))


def input_notice(path: Path, fmt: str | None = None, columns: Mapping[str, str] | None = None) -> str:
    """The run's first line about its input ("read as a Ragas dataset: user_input → question, ..."), from its
    first record; call after the file has been validated."""
    reader = RecordReader(str(path))
    next(_records(path, fmt, columns, reader), None)
    return reader.describe()


def _records(path: Path, fmt: str | None, columns: Mapping[str, str] | None,
             reader: RecordReader) -> Iterator[tuple[int, Any]]:
    check_readable(path)
    source = str(path)
    name = fmt or detect_format(path)
    container = next((c for c in CONTAINERS if c.name == name), None)
    if container is None:
        raise InputError(source, None, None, f"unknown format '{name}'; use {' or '.join(container_names())}")
    renames = _column_renames(columns or {}, source)
    return _shaped(container, path, renames, reader)


def _shaped(container: Container, path: Path, renames: dict[str, str],
            reader: RecordReader) -> Iterator[tuple[int, Any]]:
    source = str(path)
    first = True
    for line, record in container.read(path):
        if isinstance(record, dict):
            if renames:
                record = _renamed(record, renames, source, line, first)
            if container.text_cells:
                record = _decoded_cells(record, source, line)
        first = False
        yield line, reader(record, line)


def _column_renames(columns: Mapping[str, str], source: str) -> dict[str, str]:
    """--column FIELD=COLUMN pairs as {COLUMN: FIELD}."""
    for field_name in columns:
        if field_name not in COLUMN_FIELDS:
            raise InputError(source, None, None, f"--column: '{field_name}' is not a field; use one of "
                                                 f"{', '.join(COLUMN_FIELDS)}")
    fields_of: dict[str, list[str]] = {}
    for field_name, column in columns.items():
        fields_of.setdefault(column, []).append(field_name)
    for column, names in fields_of.items():
        if len(names) > 1:
            raise InputError(source, None, None, f"--column: the column '{column}' is given for {' and '.join(names)}; "
                                                 "a column fills one field")
    return {column: field_name for field_name, column in columns.items() if column != field_name}


def _renamed(record: dict[str, Any], renames: dict[str, str], source: str, line: int, first: bool) -> dict[str, Any]:
    if first:
        for column, field_name in renames.items():
            if column not in record:
                raise InputError(source, line, None, f"--column {field_name}={column}: no column '{column}' in the "
                                                     f"first record (it has {', '.join(record) or 'none'})")
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = renames.get(key, key)
        if name in out:  # the record has a column of the field's own name too: one would silently win
            column = next(c for c, f in renames.items() if f == name)
            raise InputError(source, line, None, f"--column {name}={column}: the record also has a '{name}' column; "
                                                 "rename or drop one of them")
        out[name] = value
    return out


def _decoded_cells(record: dict[str, Any], source: str, line: int) -> dict[str, Any]:
    """A CSV row's cells as values: an empty cell of a known field is absent, a list field's cell is JSON
    (or the Python list literal pandas writes for a list, as Ragas' `to_csv` does)."""
    out: dict[str, Any] = {}
    for name, cell in record.items():
        if cell == "" and name in KNOWN_FIELDS:
            out[name] = None
        elif name in LIST_FIELDS:
            out[name] = _list_cell(cell, source, line, name)
        else:
            out[name] = cell
    return out


def _list_cell(cell: str, source: str, line: int, name: str) -> Any:
    """JSON first (a JSON list with an apostrophe in a text is still JSON, and its escapes are JSON's), then
    the Python list literal pandas writes; numpy's repr of an array (`['a' 'b']`, no commas) is refused, as
    Python would read it as one text joined."""
    try:
        return parse_json(cell, source, line, name, "cell must hold JSON")
    except InputError as not_json:
        if not (cell.lstrip().startswith("[") and "'" in cell):
            raise
        failure = not_json
    try:
        tree = ast.parse(cell.strip(), mode="eval").body
    except (SyntaxError, MemoryError, RecursionError, ValueError):
        raise failure from None
    if not isinstance(tree, ast.List) or not all(isinstance(item, ast.Constant) and isinstance(item.value, str)
                                                 for item in tree.elts):
        raise failure
    if any(_joined(cell, item) for item in tree.elts):
        raise InputError(source, line, name, "cell holds texts without commas between them (numpy's way of printing "
                                             "an array): write the column as lists, e.g. df[col].map(list) before to_csv")
    texts = [item.value for item in tree.elts]
    check_json_value(texts, lambda inner, message: InputError(source, line, f"{name}{inner or ''}", message))
    return texts


def _joined(cell: str, item: ast.Constant) -> bool:
    """Whether Python joined several string literals into this item ('a' 'b' is 'ab')."""
    text = ast.get_source_segment(cell.strip(), item) or ""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type == tokenize.STRING]
    except (tokenize.TokenError, SyntaxError):
        return False
    return len(tokens) > 1


def read_samples(path: Path, fmt: str | None = None, columns: Mapping[str, str] | None = None) -> Iterator[Sample]:
    """Validated samples in file order; an error names the field as the file does (a Ragas file's
    `user_input`, not `question`). Ids are checked for repeats by `validate_file`, which every reader of a
    whole file runs first."""
    reader = RecordReader(str(path))
    for line, record in _records(path, fmt, columns, reader):
        try:
            yield sample_from_record(record, str(path), line)
        except InputError as exc:
            if reader.their_field(exc.field) == exc.field:
                raise
            raise InputError(exc.source, exc.line, reader.their_field(exc.field), exc.message) from None


def validate_file(path: Path, fmt: str | None = None, columns: Mapping[str, str] | None = None,
                  ids: set[str] | None = None, check: Callable[[Sample], None] | None = None) -> int:
    """Check every record without keeping any; return how many there are. The ids are added to `ids` when
    it is given (to check a labels file against the input before scoring); `check` sees each sample (what
    the run's metrics need of it beyond the data contract, e.g. a criterion worded in its language).

    A repeated id is an error naming both lines. Only a 64-bit hash of each id is kept (8 bytes a record,
    so a file of millions of records stays out of memory); a repeated hash sends a second pass after the
    exact ids, which also tells a hash collision from a real repeat."""
    hashes = array("q")
    for sample in read_samples(path, fmt, columns):
        hashes.append(hash(sample.id))
        if ids is not None:
            ids.add(sample.id)
        if check is not None:
            check(sample)
    if not hashes:
        raise InputError(str(path), None, None, "contains no records")
    _check_repeats(path, fmt, columns, hashes)
    return len(hashes)


def _check_repeats(path: Path, fmt: str | None, columns: Mapping[str, str] | None, hashes: array) -> None:
    import numpy as np

    values, counts = np.unique(np.frombuffer(hashes, dtype=np.int64), return_counts=True)
    repeated = set(values[counts > 1].tolist())
    if not repeated:
        return
    first: dict[str, int] = {}
    for sample in read_samples(path, fmt, columns):
        if hash(sample.id) in repeated:
            if sample.id in first:
                raise InputError(str(path), sample.line, "id",
                                 f"duplicate id '{sample.id}' (first used on line {first[sample.id]})")
            first[sample.id] = sample.line or 0


def iter_jsonl(path: Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line, decoded by the strict decoder (see strict_json.py)."""
    source = str(path)
    for number, text in decoded_lines(path):
        if text.strip():
            yield number, parse_json(text.rstrip("\r\n"), source, number)


def _iter_json_array(path: Path) -> Iterator[tuple[int, Any]]:
    """The elements of a file holding one JSON array (DeepEval's saved datasets), each with the line it
    starts on. Parsed whole by the strict decoder: a large test set belongs in JSON Lines or Parquet."""
    source = str(path)
    text = read_text(path)
    value = parse_json(text, source)
    if not isinstance(value, list):
        kind = "an object" if isinstance(value, dict) else f"a {type(value).__name__}"
        raise InputError(source, None, None, f"must hold one JSON array of records, got {kind}; "
                                             "for one record per line, name the file .jsonl")
    decoder, position, line = json.JSONDecoder(), text.index("[") + 1, 1 + text[: text.index("[")].count("\n")
    for item in value:  # where each element starts, for its line number (the whole text already parsed)
        while text[position] in " \t\r\n,":
            line += text[position] == "\n"
            position += 1
        _, end = decoder.raw_decode(text, position)
        yield line, item
        line += text[position:end].count("\n")
        position = end


def _iter_csv(path: Path) -> Iterator[tuple[int, Any]]:
    """CSV rows as {column: cell}.

    The reader is strict: a quote that is never closed, or text after a closing quote, is an error naming
    the line where the row starts, rather than rows silently merged into one cell. A header naming a
    column twice is an error too (a dict of the row would keep only the last one).
    """
    source = str(path)
    rows = _csv_rows(path)
    for header_line, header in rows:  # blank lines before the header are skipped, as they are after it
        if any(cell.strip() for cell in header):
            break
    else:
        return
    _check_unique_columns(header, source, header_line, " in the header")
    for line, row in rows:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise InputError(source, line, None, f"has {len(row)} cells but the header has {len(header)}")
        yield line, dict(zip(header, row))


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


def _iter_parquet(path: Path) -> Iterator[tuple[int, Any]]:
    """A Parquet file's rows, a batch at a time (a file of millions of rows stays out of memory); a row's
    number stands for its line. Values must be what a JSON record could hold (no timestamps, no NaN)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(str(path), None, None, "reading Parquet needs pyarrow: pip install pyarrow") from None
    source = str(path)
    row = 0
    try:
        file = pq.ParquetFile(path)
        _check_unique_columns(file.schema_arrow.names, source, None, "")
        # A map column ({doc_id: grade}) reads as (key, value) pairs; a record holds it as an object.
        maps = [f.name for f in file.schema_arrow if pa.types.is_map(f.type)]
        for batch in file.iter_batches(batch_size=PARQUET_BATCH):
            try:
                records = batch.to_pylist()
            except UnicodeDecodeError:  # pyarrow decodes a whole batch at once: find the row and the column
                at, column = _undecodable(batch)
                raise InputError(source, row + at + 1, column, "holds text that is not valid UTF-8; was it written "
                                                               "with another encoding?") from None
            for record in records:
                row += 1
                for name in maps:
                    if record.get(name) is not None:
                        record[name] = _map_object(record[name], source, row, name)
                check_json_value(record, lambda field, message: InputError(source, row, field, message))
                yield row, record
    except UnicodeDecodeError:  # before any batch: the schema's column names
        raise InputError(source, None, None, "holds text that is not valid UTF-8 (its column names); was it "
                                             "written with another encoding?") from None
    except (pa.ArrowException, OSError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise InputError(source, None, None, f"is not a readable Parquet file ({first}); a truncated or "
                                             "unfinished write?") from None


def _undecodable(batch: Any) -> tuple[int, str | None]:
    """The first (row in the batch, column) of a Parquet batch whose text is not valid UTF-8."""
    for i in range(batch.num_rows):
        for name, column in zip(batch.schema.names, batch.columns):
            try:
                column.slice(i, 1).to_pylist()
            except UnicodeDecodeError:
                return i, name
    return 0, None


def _check_unique_columns(names: list[str], source: str, line: int | None, where: str) -> None:
    """A column named twice is an error (a record, a dict, would keep only the last one)."""
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        if name in seen:
            raise InputError(source, line, None, f"column '{name}' appears twice{where} (columns {seen[name] + 1} "
                                                 f"and {i + 1}); rename one")
        seen[name] = i


def _map_object(pairs: list[tuple[Any, Any]], source: str, row: int, name: str) -> dict[Any, Any]:
    """A map column's (key, value) pairs as an object; a key twice is an error, as in JSON."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise InputError(source, row, name, f"key {repeated_key(pairs)!r} appears twice in one map")
    return out


def _first_character(path: Path) -> str:
    with path.open("rb") as handle:
        start = handle.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return start[:1].decode("ascii", "replace")


CONTAINERS = (
    Container("jsonl", (".jsonl", ".ndjson"), iter_jsonl),
    Container("json", (".json",), _iter_json_array),
    Container("csv", (".csv", ".tsv"), _iter_csv, text_cells=True),
    Container("parquet", (".parquet", ".pq"), _iter_parquet),
)

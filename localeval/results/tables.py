"""samples.jsonl as a flat table beside it (`score --table csv,parquet`), for a pandas or Hugging Face user:
`pd.read_parquet("out/samples.parquet")` or `datasets.load_dataset("parquet", data_files=...)` in one call.

samples.jsonl stays the record (details, skip reasons, nested contexts); a table has one row per sample,
the input fields first (a list or object field as its JSON text; one named like a metric column as
`input.NAME`) and then one column per metric column,
empty where the metric skipped the sample. It is written from the rows already on disk, a batch at a
time, and committed with the run's other files.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..atomic import output_error
from ..data.loading import iter_jsonl
from ..errors import OptionError

TABLE_FORMATS = ("csv", "parquet")
BATCH = 4096


def table_name(fmt: str) -> str:
    return f"samples.{fmt}"


def check_tables(formats: Sequence[str]) -> tuple[str, ...]:
    """The requested formats, each once; OptionError for one localeval does not write (or cannot: pyarrow)."""
    for fmt in formats:
        if fmt not in TABLE_FORMATS:
            raise OptionError(f"--table '{fmt}' is not one of {', '.join(TABLE_FORMATS)}")
    if "parquet" in formats:
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise OptionError("--table parquet needs pyarrow: pip install pyarrow") from None
    return tuple(dict.fromkeys(formats))


def write_table(rows_file: Path, fmt: str, inputs: Sequence[str], metric_columns: Sequence[str], target: Path) -> None:
    """samples.jsonl at `rows_file` as a table of format `fmt` at `target`; `inputs` are the input fields of its
    rows, in first-seen order (the writer collects them as the rows stream past, sparing a pass here)."""
    try:
        _write_table(rows_file, fmt, input_columns(inputs, metric_columns), metric_columns, target)
    except OSError as exc:  # a full disk, a file size limit (pyarrow's I/O errors are OSErrors too)
        raise output_error(target, exc) from None


def input_columns(inputs: Sequence[str], metric_columns: Sequence[str]) -> dict[str, str]:
    """Input field -> its column in the table. A field named like a metric column (a Ragas export holds
    `faithfulness`, localeval's own samples.csv `exact_match`) becomes `input.NAME`, so that neither value
    overwrites the other."""
    taken = {*inputs, *metric_columns}
    names: dict[str, str] = {}
    for key in inputs:
        name = key
        if key in metric_columns:
            name = f"input.{key}"
            while name in taken:
                name = f"input.{name}"
            taken.add(name)
        names[key] = name
    return names


def _write_table(rows_file: Path, fmt: str, inputs: dict[str, str], metric_columns: Sequence[str],
                 target: Path) -> None:
    columns = [*inputs.values(), *metric_columns]
    if fmt == "csv":
        with target.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            for batch in _batches(rows_file, inputs, metric_columns):
                writer.writerows([["" if v is None else v for v in (row.get(c) for c in columns)] for row in batch])
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(c, pa.string()) for c in inputs.values()] + [(c, pa.float64()) for c in metric_columns])
    with pq.ParquetWriter(target, schema) as writer:
        for batch in _batches(rows_file, inputs, metric_columns):
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))


def _batches(rows_file: Path, inputs: dict[str, str], metric_columns: Sequence[str]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for _, row in iter_jsonl(rows_file):
        flat = {name: _text(row.get(key)) for key, name in inputs.items()}
        flat.update({column: row["metrics"].get(column) for column in metric_columns})
        batch.append(flat)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)

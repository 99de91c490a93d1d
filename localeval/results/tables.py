"""samples.jsonl as a flat table beside it (`score --table csv,parquet`), for a pandas or Hugging Face user:
`pd.read_parquet("out/samples.parquet")` or `datasets.load_dataset("parquet", data_files=...)` in one call.

samples.jsonl stays the record (details, skip reasons, nested contexts); a table has one row per sample,
the input fields first (a list or object field as its JSON text) and then one column per metric column,
empty where the metric skipped the sample. It is written from the rows already on disk, a batch at a
time, and committed with the run's other files.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any, Iterator, Sequence

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
    columns = [*inputs, *[c for c in metric_columns if c not in inputs]]
    if fmt == "csv":
        with target.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            for batch in _batches(rows_file, inputs, metric_columns):
                writer.writerows([["" if v is None else v for v in (row.get(c) for c in columns)] for row in batch])
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([(c, pa.string()) for c in inputs] + [(c, pa.float64()) for c in columns[len(inputs):]])
    with pq.ParquetWriter(target, schema) as writer:
        for batch in _batches(rows_file, inputs, metric_columns):
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))


def _batches(rows_file: Path, inputs: Sequence[str], metric_columns: Sequence[str]) -> Iterator[list[dict[str, Any]]]:
    batch: list[dict[str, Any]] = []
    for _, row in iter_jsonl(rows_file):
        flat = {key: _text(row.get(key)) for key in inputs}
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

"""Streaming: score a large test set (JSONL or Parquet) and print time and peak memory.

The data contract promises that a 1,000,000-line file is scored without being loaded into memory. This
script writes such a file (harness.write_synthetic_set: synthetic RAG outputs with 10 ranked contexts and
graded relevance, the set bench/ray_bench.py scores too; with --format parquet converted a batch at a time,
graded relevance as a map column), scores it with the retrieval metrics through the same path as
`localeval score`, and prints rows/s and the peak resident memory, which should stay flat as --rows grows
(compare --rows 100000 with --rows 1000000). No model runs; it writes no results file. With --classifier
DIR (a folder `localeval train` wrote) it scores a metric of that classifier instead (answer_relevance_rating
by default: one verdict per row), its verdicts cached in a judge cache in the same temporary folder.

    .venv/bin/python bench/streaming_bench.py --rows 1000000
    .venv/bin/python bench/streaming_bench.py --rows 1000000 --format parquet
    .venv/bin/python bench/streaming_bench.py --rows 100000 --classifier DIR
"""

from __future__ import annotations

import resource
import tempfile
import time
from pathlib import Path

import harness

from localeval import JudgeOptions, MetricOptions
from localeval.pipeline import score_file


def main() -> None:
    parser = harness.parser(__doc__, "seed")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--metrics", default="retrieval")
    parser.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    parser.add_argument("--classifier", type=Path, help="a trained classifier judge folder")
    args = parser.parse_args()
    if args.classifier and args.metrics == "retrieval":
        args.metrics = "answer_relevance_rating"
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "big.jsonl"
        start = time.perf_counter()
        harness.write_synthetic_set(data, args.rows, args.seed)
        if args.format == "parquet":
            data = to_parquet(data)
        written = time.perf_counter() - start
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        start = time.perf_counter()
        judge = JudgeOptions(classifier=str(args.classifier) if args.classifier else None,
                             cache=str(Path(tmp) / "judge.sqlite"), n_threads=2)
        summary = score_file(data, Path(tmp) / "out", args.metrics, MetricOptions(judge=judge))
        scored = time.perf_counter() - start
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        size_mb = data.stat().st_size / 1e6
    print(f"rows            {args.rows:,} ({size_mb:.0f} MB of {args.format}, written in {written:.1f} s)")
    print(f"metrics         {', '.join(summary['metrics'])}")
    print(f"score_file      {scored:.1f} s  ({args.rows / scored:,.0f} rows/s, validation pass included)")
    print(f"peak RSS        {peak:.0f} MB (before scoring: {rss_before:.0f} MB)")


def to_parquet(jsonl: Path, batch: int = 10_000) -> Path:
    """The JSONL set as Parquet, converted a batch of rows at a time (so writing it does not raise the peak)."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([("id", pa.string()), ("question", pa.string()), ("answer", pa.string()),
                        ("contexts", pa.list_(pa.struct([("id", pa.string()), ("text", pa.string())]))),
                        ("reference_doc_ids", pa.map_(pa.string(), pa.int64()))])
    target = jsonl.with_suffix(".parquet")
    with jsonl.open(encoding="utf-8") as lines, pq.ParquetWriter(target, schema) as writer:
        rows: list[dict] = []
        for line in lines:
            record = json.loads(line)
            record["reference_doc_ids"] = list(record["reference_doc_ids"].items())
            rows.append(record)
            if len(rows) == batch:
                writer.write_table(pa.Table.from_pylist(rows, schema=schema))
                rows = []
        if rows:
            writer.write_table(pa.Table.from_pylist(rows, schema=schema))
    jsonl.unlink()
    return target


if __name__ == "__main__":
    main()

"""The steps every way of scoring shares (this process, a Ray cluster's actors): metrics over a batch of
samples into rows, rows tallied into the summary, rows and summary written to the run folder.

pipeline.py orchestrates a run from its input; distributed/ scores the same batches on a cluster; both end
in `write_results`, so the files cannot differ by how the rows were computed.
"""

from __future__ import annotations

import math
import platform
from importlib import metadata
from itertools import islice
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, TypeVar

from .data.labels import Labels
from .data.records import Sample
from .limits import MAX_SCORE
from .metrics import Measurement, Metric, Skipped
from .metrics.judged import JudgeMetric, measure_together
from .progress import Progress
from .results.aggregate import Summary
from .results.writer import ResultWriter

T = TypeVar("T")

BATCH_SIZE = 256


def write_results(
    row_batches: Iterable[list[dict[str, Any]]], metrics: Sequence[Metric], out_dir: Path, source: str,
    extra: dict[str, Any] | None = None, labels: Labels | None = None, progress: Progress | None = None,
    judge_info: Mapping[str, Any] | None = None, tables: Sequence[str] = (),
) -> dict[str, Any]:
    """Rows (in input order) → samples.jsonl, the summary tallied from the same rows, one atomic commit.

    Every way of scoring (this process, a Ray cluster) ends here, so the files cannot differ by how the
    rows were computed. `extra` and `judge_info` are read only after the last row: a producer that learns
    them while streaming (which judge the actors loaded) may fill them in as it goes."""
    tally = new_summary(metrics)
    with ResultWriter(out_dir, tables) as writer:
        for rows in row_batches:
            tally_rows(tally, metrics, rows)
            for row in rows:
                writer.write_row(row)
            if progress:
                progress.advance(len(rows))
        if progress:
            progress.close()
        summary = build_summary(tally, metrics, source, extra, judge_info)
        if labels is not None:
            from .stats.calibration import ppi_summary

            summary["ppi"] = ppi_summary(writer.rows_so_far(), labels)
        writer.commit(summary)
    return summary


def measure_batch(batch: Sequence[Sample], metrics: Sequence[Metric], tally: Summary) -> list[dict[str, Any]]:
    """`measure_rows`, counted into `tally`."""
    rows = measure_rows(batch, metrics)
    tally_rows(tally, metrics, rows)
    return rows


def measure_rows(batch: Sequence[Sample], metrics: Sequence[Metric]) -> list[dict[str, Any]]:
    """Run every metric on the samples that carry its fields; record skips with their reasons."""
    values: list[dict[str, float]] = [{} for _ in batch]
    details: list[dict[str, Any]] = [{} for _ in batch]
    skipped: list[dict[str, str]] = [{} for _ in batch]
    chosen: dict[str, list[int]] = {}
    for metric in metrics:
        chosen[metric.name] = []
        for i, sample in enumerate(batch):
            reason = next((r for r in map(sample.missing, metric.requires) if r), None)
            if reason:
                skipped[i][metric.name] = reason
            else:
                chosen[metric.name].append(i)
    measured = _measure_all(metrics, {name: [batch[i] for i in rows] for name, rows in chosen.items()})
    for metric in metrics:
        eligible, outcomes = chosen[metric.name], measured[metric.name]
        if len(outcomes) != len(eligible):
            raise RuntimeError(f"metric {metric.name} returned {len(outcomes)} outcomes for {len(eligible)} samples")
        for i, outcome in zip(eligible, outcomes):
            outcome = _checked(outcome)
            if isinstance(outcome, Skipped):
                skipped[i][metric.name] = outcome.reason
                continue
            values[i].update(outcome.values)
            if outcome.details:
                details[i][metric.name] = outcome.details
    return [row_of(sample, values[i], details[i], skipped[i]) for i, sample in enumerate(batch)]


def _measure_all(metrics: Sequence[Metric], samples: Mapping[str, Sequence[Sample]]) -> dict[str, list[Measurement | Skipped]]:
    """Each metric's outcomes on its samples. Judge metrics whose judge keeps several calls in flight
    (--parallel above 1) are measured together, their flows in one lockstep (metrics/judged.py,
    measure_together); with one call at a time they run metric after metric, exactly as before."""
    measured: dict[str, list[Measurement | Skipped]] = {}
    together: dict[int, list[JudgeMetric]] = {}
    for metric in metrics:
        if not samples[metric.name]:
            measured[metric.name] = []
        elif isinstance(metric, JudgeMetric) and metric.kit.config.parallel > 1:
            together.setdefault(id(metric.kit), []).append(metric)
        else:
            measured[metric.name] = metric.measure(samples[metric.name])
    for group in together.values():
        for metric, outcomes in zip(group, measure_together([(m, samples[m.name]) for m in group])):
            measured[metric.name] = outcomes
    return measured


def row_of(sample: Sample, values: dict[str, float], details: dict[str, Any], skipped: dict[str, str]) -> dict[str, Any]:
    """One line of samples.jsonl: the record as given, then what the metrics made of it."""
    return {"id": sample.id, **sample.record, "metrics": values, "details": details, "skipped": skipped}


def tally_rows(tally: Summary, metrics: Sequence[Metric], rows: Sequence[Mapping[str, Any]]) -> None:
    """Count finished rows into the summary: each metric's columns, or its skip reason. Per column the
    values arrive in input order, so the streaming statistics do not depend on who computed the rows."""
    for row in rows:
        for metric in metrics:
            reason = row["skipped"].get(metric.name)
            if reason is not None:
                tally.add_skip(metric.name, reason)
            else:
                tally.add_values(metric.name, {c: row["metrics"][c] for c in metric.columns if c in row["metrics"]})
    tally.n_samples += len(rows)


def batch_size(metrics: Sequence[Metric]) -> int:
    """Judge metrics go in small windows: enough samples for the judge's sequences in flight (two per
    sequence, so a finished call always finds the next one queued), and one sample at a time for a
    sequential judge, exactly as before the batched engine; progress stays live and every finished
    window is cached at once. Cheap metrics go in large batches, so the retrieval kernels can vectorise."""
    judged = [m for m in metrics if m.uses_judge and m.kit is not None]
    if not judged:
        return BATCH_SIZE
    return judge_window(min(m.kit.config.parallel for m in judged))  # type: ignore[union-attr]


def judge_window(parallel: int) -> int:
    """Samples per window of judge metrics for a judge with `parallel` sequences in flight (batch_size)."""
    return 1 if parallel == 1 else 2 * parallel


def _checked(outcome: Measurement | Skipped) -> Measurement | Skipped:
    """A non-finite value becomes a visible skip, so no NaN ever reaches a mean; so does one beyond MAX_SCORE,
    which compare, report and calibrate would refuse to read back."""
    if not isinstance(outcome, Measurement):
        return outcome
    if not all(math.isfinite(v) for v in outcome.values.values()):
        return Skipped("metric produced a non-finite value (a localeval bug: please report it)")
    if any(abs(v) > MAX_SCORE for v in outcome.values.values()):
        return Skipped(f"metric produced a value beyond ±{MAX_SCORE:g}, too large to average (a bug in the metric)")
    return outcome


def build_summary(tally: Summary, metrics: Sequence[Metric], source: str, extra: dict[str, Any] | None = None,
                  judge_info: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """summary.json's content: per-column statistics, the settings behind them, and versions. `judge_info`
    describes the judge when it ran elsewhere (in Ray actors) rather than in this process's kit."""
    summary = {
        "input": source,
        "n_samples": tally.n_samples,
        "metrics": tally.as_dict(),
        "settings": {metric.name: metric.settings() for metric in metrics},
        **(extra or {}),
        "versions": _versions(),
    }
    judged = [m for m in metrics if isinstance(m, JudgeMetric)]
    if judged:
        info = judge_info if judge_info is not None else judged[0].kit.model_info()
        summary["judge"] = {**info, "usage": {m.name: m.usage() for m in judged}}
    return summary


def new_summary(metrics: Sequence[Metric]) -> Summary:
    names = [m.name for m in metrics]
    if len(set(names)) != len(names):
        raise ValueError("each metric may appear once")
    return Summary({m.name: m.columns for m in metrics})


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("localeval", "numpy", "rouge-score", "llama_cpp_python", "sentence-transformers", "torch"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions

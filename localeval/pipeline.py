"""The scoring pipeline: samples → metrics in batches → rows and a streaming summary.

Data flows one way: load and validate (data/) → measure (metrics/, judge/) → aggregate
(results/aggregate.py) → write (results/writer.py). A file is validated in full before any metric runs, so a bad record
on the last line stops the run before anything expensive happens and before anything is written.
"""

from __future__ import annotations

import math
import platform
from dataclasses import dataclass
from importlib import metadata
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence, TypeVar

from .data.labels import Labels, read_labels
from .data.loading import read_samples, validate_file
from .data.records import Sample, sample_from_record
from .errors import InputError
from .files import check_output_dir
from .limits import MAX_SCORE
from .metrics import Measurement, Metric, MetricOptions, Skipped, build_metrics
from .metrics.criteria import CriterionMetric, check_levels, criteria_of, language_check
from .progress import Progress
from .results.aggregate import Summary
from .results.writer import RESULT_FILES, ResultWriter
from .strict_json import check_json_value

if TYPE_CHECKING:
    from .distributed import RayOptions

T = TypeVar("T")

DEFAULT_METRICS = "classical"
BATCH_SIZE = 256


@dataclass(frozen=True)
class Labelled:
    """Human labels for some samples (JSONL of {id, column: 0/1}); `columns` maps metric column -> label key."""

    path: Path
    columns: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Result:
    """What `evaluate` returns: one row per sample (input fields + metrics/details/skipped) and the summary."""

    rows: list[dict[str, Any]]
    summary: dict[str, Any]

    @property
    def means(self) -> dict[str, float | None]:
        """Column → mean, the numbers most callers want first."""
        return {column: entry["mean"] for column, entry in self.summary["metrics"].items()}


def evaluate(
    samples: Iterable[Sample | Mapping[str, Any]],
    metrics: str | Sequence[str] = DEFAULT_METRICS,
    options: MetricOptions | None = None,
) -> Result:
    """Score in-memory samples (dicts in the input format, or Samples); the Python twin of `localeval score`."""
    built = build_metrics(metrics, options)
    check_models(built)
    tally = _new_summary(built)
    rows: list[dict[str, Any]] = []
    for batch in batched(_as_samples(samples), batch_size(built)):
        rows.extend(measure_batch(batch, built, tally))
    if not rows:
        raise InputError("<samples>", None, None, "contains no records")
    return Result(rows=rows, summary=build_summary(tally, built, source="<samples>"))


def score_file(
    path: Path,
    out_dir: Path,
    metrics: str | Sequence[str] = DEFAULT_METRICS,
    options: MetricOptions | None = None,
    fmt: str | None = None,
    columns: Mapping[str, str] | None = None,
    labels: Labelled | None = None,
    progress: bool = False,
    ray: RayOptions | None = None,
) -> dict[str, Any]:
    """Validate the whole file, then stream it through the metrics into `out_dir`; return the summary.

    With `labels`, the summary also holds the prediction-powered estimates (see stats.calibration.ppi_summary).
    `progress` reports samples done, rate and time left on stderr. With `ray`, the samples are scored by a
    pool of Ray actors (distributed/ray_runner.py); the files written are the same.
    """
    if ray is not None:  # refused before the input is read or Ray starts
        ray.check((options or MetricOptions()).judge.gpu_layers)
    built, ids = _checked_options(metrics, options, out_dir, models_here=ray is None), set() if labels else None
    criteria, check = criteria_of(built), None
    if criteria:  # a sample in a language a criterion has no wording for stops the run before the judge loads
        kit = next(m.kit for m in built if isinstance(m, CriterionMetric))
        check = language_check(criteria, kit.lang, str(path))
    total = validate_file(path, fmt, columns, ids, check)
    human = None
    if labels is not None:  # checked against the input now, not after the judge has done its work
        columns_out = [column for metric in built for column in metric.columns]
        human = read_labels(labels.path, ids or set(), columns_out, labels.columns, str(path))
    meter = Progress(total) if progress else None
    if ray is not None:
        from .distributed.ray_runner import score_file_ray

        return score_file_ray(path, out_dir, built, options or MetricOptions(), ray, total, fmt, columns, human,
                              meter)
    return _score_into(read_samples(path, fmt, columns), built, out_dir, source=str(path), labels=human,
                       progress=meter)


def score_trec(
    run_path: Path,
    qrels_path: Path,
    out_dir: Path,
    metrics: str | Sequence[str] = "retrieval",
    options: MetricOptions | None = None,
) -> dict[str, Any]:
    """trec_eval's use case: a run file against qrels; only queries in both are scored (trec_eval without -c)."""
    from .data.trec import read_qrels, read_run, samples_from_trec

    built = _checked_options(metrics, options, out_dir)
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    samples, counts = samples_from_trec(run, qrels)
    if not samples:
        raise InputError(str(run_path), None, "qid", f"no query is in both the run and {qrels_path} (the run has "
                         f"{len(run)}, e.g. {_first(run)}; the qrels {len(qrels)}, e.g. {_first(qrels)}); "
                         "are they for the same topics?")
    return _score_into(iter(samples), built, out_dir, f"{run_path} + {qrels_path}", {"trec": counts})


def _checked_options(metrics: str | Sequence[str], options: MetricOptions | None, out_dir: Path,
                     models_here: bool = True) -> list[Metric]:
    """Every option checked before the input is read and before any model loads: metric names and option
    values, where the results go, and the models, cache and prompts the metrics will use. Not
    `models_here` for a Ray run: the models are needed on the cluster's nodes, which it checks itself."""
    built = build_metrics(metrics, options)
    check_output_dir(out_dir, RESULT_FILES)
    if models_here:
        check_models(built)
    return built


def check_models(metrics: Sequence[Metric]) -> None:
    """The judge's and embedder's files, the cache and the prompts of every judge metric, checked cheaply
    (no model is loaded), so a bad --judge or --cache fails in a second rather than after other work."""
    kits: dict[int, tuple[Any, set[str]]] = {}
    for metric in metrics:
        kit = getattr(metric, "kit", None)
        if kit is not None:
            kits.setdefault(id(kit), (kit, set()))[1].update(getattr(metric, "models", ("judge",)))
    for kit, kinds in kits.values():
        kit.check(embedder="embedder" in kinds, judge="judge" in kinds)
    criteria = criteria_of(metrics)
    if any(c.levels for c in criteria):
        kit = next(m.kit for m in metrics if isinstance(m, CriterionMetric))
        from . import models

        check_levels(criteria, kit.vocabulary(), kit.options.judge or models.default("judge").name)


def _score_into(
    samples: Iterator[Sample], metrics: Sequence[Metric], out_dir: Path, source: str,
    extra: dict[str, Any] | None = None, labels: Labels | None = None, progress: Progress | None = None,
) -> dict[str, Any]:
    batches = (measure_rows(batch, metrics) for batch in batched(samples, batch_size(metrics)))
    return write_results(batches, metrics, out_dir, source, extra, labels, progress)


def write_results(
    row_batches: Iterable[list[dict[str, Any]]], metrics: Sequence[Metric], out_dir: Path, source: str,
    extra: dict[str, Any] | None = None, labels: Labels | None = None, progress: Progress | None = None,
    judge_info: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Rows (in input order) → samples.jsonl, the summary tallied from the same rows, one atomic commit.

    Every way of scoring (this process, a Ray cluster) ends here, so the files cannot differ by how the
    rows were computed. `extra` and `judge_info` are read only after the last row: a producer that learns
    them while streaming (which judge the actors loaded) may fill them in as it goes."""
    tally = _new_summary(metrics)
    with ResultWriter(out_dir) as writer:
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
    from .judge.options import parallel_of
    from .metrics.judged import JudgeMetric, measure_together

    measured: dict[str, list[Measurement | Skipped]] = {}
    together: dict[int, list[JudgeMetric]] = {}
    for metric in metrics:
        if not samples[metric.name]:
            measured[metric.name] = []
        elif isinstance(metric, JudgeMetric) and parallel_of(metric.kit.options) > 1:
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
    from .judge.options import parallel_of

    slow = [m for m in metrics if getattr(m, "slow", False)]
    if not slow:
        return BATCH_SIZE
    return judge_window(min(parallel_of(m.kit.options) for m in slow))  # type: ignore[attr-defined]


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
    judged = [m for m in metrics if hasattr(m, "usage")]
    if judged:
        info = judge_info if judge_info is not None else judged[0].kit.model_info()
        summary["judge"] = {**info, "usage": {m.name: m.usage() for m in judged}}
    return summary


def _new_summary(metrics: Sequence[Metric]) -> Summary:
    names = [m.name for m in metrics]
    if len(set(names)) != len(names):
        raise ValueError("each metric may appear once")
    return Summary({m.name: m.columns for m in metrics})


def _as_samples(items: Iterable[Sample | Mapping[str, Any]]) -> Iterator[Sample]:
    """Validate dict records like file records (item numbers stand in for line numbers)."""
    seen: set[str] = set()
    for number, item in enumerate(items, start=1):
        if isinstance(item, Sample):
            sample = item
        else:  # what a file's strict JSON decoder refuses is refused here too
            record = dict(item) if isinstance(item, Mapping) else item
            check_json_value(record, lambda field, message: InputError("<samples>", number, field, message))
            sample = sample_from_record(record, "<samples>", number)
        if sample.id in seen:
            raise InputError("<samples>", number, "id", f"duplicate id '{sample.id}'")
        seen.add(sample.id)
        yield sample


def batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def _first(ids: Mapping[str, Any]) -> str:
    return repr(next(iter(ids)))[:40]


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in ("localeval", "numpy", "rouge-score", "llama_cpp_python", "sentence-transformers", "torch"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions

"""A run from its input: samples → metrics in batches → rows and a streaming summary.

Data flows one way: load and validate (data/) → measure (metrics/, judge/) → aggregate
(results/aggregate.py) → write (results/writer.py); the steps Ray's actors share are in scoring.py. A file
is validated in full before any metric runs, so a bad record on the last line stops the run before
anything expensive happens and before anything is written.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from . import models
from .atomic import one_run_at_a_time
from .data.labels import Labels, read_labels
from .data.loading import input_notice, read_samples, validate_file
from .data.records import Sample, sample_from_record
from .distributed import RayOptions
from .errors import InputError
from .files import check_output_dir
from .interrupts import Interrupted
from .metrics import Metric, MetricOptions, build_metrics
from .metrics.criteria import CriterionMetric, check_levels, criteria_of, language_check
from .model_kit import ModelKit
from .progress import Progress
from .results.tables import TABLE_FORMATS, check_tables, table_name
from .results.writer import RESULT_FILES
from .scoring import batch_size, batched, build_summary, measure_batch, measure_rows, new_summary, write_results
from .strict_json import check_json_value

DEFAULT_METRICS = "classical"


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
    tally = new_summary(built)
    rows: list[dict[str, Any]] = []
    with models_released(built):
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
    tables: Sequence[str] = (),
    notice: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Validate the whole file, then stream it through the metrics into `out_dir`; return the summary.

    With `labels`, the summary also holds the prediction-powered estimates (see stats.calibration.ppi_summary).
    `progress` reports samples done, rate and time left on stderr. With `ray`, the samples are scored by a
    pool of Ray actors (distributed/ray_runner.py); the files written are the same. `tables` adds
    samples.csv / samples.parquet (results/tables.py); `notice` hears, once the input is validated, how it was
    read (its shape, and whether ids are row numbers).
    """
    tables = check_tables(tables)
    built = _checked_options(metrics, options, out_dir, models_here=ray is None)
    if ray is not None:  # refused before the input is read or Ray starts
        ray.check(_offloaded_judge_layers(built, options))
    with one_run_at_a_time(out_dir):
        return _validated_then_scored(path, out_dir, built, options, fmt, columns, labels, progress, ray, tables,
                                      notice)


def _validated_then_scored(path: Path, out_dir: Path, built: list[Metric], options: MetricOptions | None,
                           fmt: str | None, columns: Mapping[str, str] | None, labels: Labelled | None,
                           progress: bool, ray: RayOptions | None, tables: Sequence[str],
                           notice: Callable[[str], None] | None) -> dict[str, Any]:
    """score_file once its options are checked and the output folder is this run's."""
    ids: set[str] | None = set() if labels else None
    criteria, check = criteria_of(built), None
    if criteria:  # a sample in a language a criterion has no wording for stops the run before the judge loads
        kit = next(m.kit for m in built if isinstance(m, CriterionMetric))
        check = language_check(criteria, kit.lang, str(path))
    total = validate_file(path, fmt, columns, ids, check)
    said = input_notice(path, fmt, columns) if notice is not None else ""
    if said:
        notice(said)  # type: ignore[misc]
    human = None
    if labels is not None:  # checked against the input now, not after the judge has done its work
        columns_out = [column for metric in built for column in metric.columns]
        human = read_labels(labels.path, ids or set(), columns_out, labels.columns, str(path))
    meter = Progress(total, show=progress)
    try:
        if ray is not None:
            from .distributed.ray_runner import score_file_ray

            return score_file_ray(path, out_dir, built, options or MetricOptions(), ray, total, fmt, columns, human,
                                  meter, tables)
        return _score_into(read_samples(path, fmt, columns), built, out_dir, source=str(path), labels=human,
                           progress=meter, tables=tables)
    except Interrupted as stop:  # the CLI says how far the run got
        stop.done, stop.total = meter.done, total
        raise


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
    with one_run_at_a_time(out_dir):
        return _score_into(iter(samples), built, out_dir, f"{run_path} + {qrels_path}", {"trec": counts})


def _checked_options(metrics: str | Sequence[str], options: MetricOptions | None, out_dir: Path,
                     models_here: bool = True) -> list[Metric]:
    """Every option checked before the input is read and before any model loads: metric names and option
    values, where the results go, and the models, cache and prompts the metrics will use. Not
    `models_here` for a Ray run: the models are needed on the cluster's nodes, which it checks itself."""
    built = build_metrics(metrics, options)
    check_output_dir(out_dir, (*RESULT_FILES, *map(table_name, TABLE_FORMATS)))
    if models_here:
        check_models(built)
    else:
        check_judge_options(built)
    return built


def _offloaded_judge_layers(built: Sequence[Metric], options: MetricOptions | None) -> int | None:
    """The judge layers a Ray actor would offload; None where no actor runs a GGUF judge (no judge metric,
    or the judge on a server), so GPU settings, and $LOCALEVAL_GPU_LAYERS, do not concern the run."""
    from .distributed.actors import models_needed
    from .judge import RunConfig

    judge = (options or MetricOptions()).judge
    if judge.judge_url or "judge" not in models_needed(built):
        return None
    return RunConfig.resolve(judge).gpu_layers


def _kits(metrics: Sequence[Metric]) -> list[tuple[ModelKit, set[str]]]:
    """Each model kit the metrics share, once, with the kinds of model ("judge", "embedder") they need of it."""
    kits: dict[int, tuple[ModelKit, set[str]]] = {}
    for metric in metrics:
        if metric.models and metric.kit is not None:
            kits.setdefault(id(metric.kit), (metric.kit, set()))[1].update(metric.models)
    return list(kits.values())


def check_judge_options(metrics: Sequence[Metric]) -> None:
    """For a run whose models are on other machines (Ray's nodes): what of each judge's backend reads no file."""
    from .judge.backends import check_backend_options

    for kit, kinds in _kits(metrics):
        if "judge" in kinds:
            check_backend_options(kit.config)


def check_models(metrics: Sequence[Metric]) -> None:
    """The judge's and embedder's files, the cache and the prompts of every judge metric, checked cheaply
    (no model is loaded), so a bad --judge or --cache fails in a second rather than after other work."""
    for kit, kinds in _kits(metrics):
        kit.check(embedder="embedder" in kinds, judge="judge" in kinds)
    criteria = criteria_of(metrics)
    if any(c.levels for c in criteria):
        kit = next(m.kit for m in metrics if isinstance(m, CriterionMetric))
        check_levels(criteria, kit.vocabulary(), kit.options.judge_url or kit.config.judge or models.default("judge").name)


def _score_into(
    samples: Iterator[Sample], metrics: Sequence[Metric], out_dir: Path, source: str,
    extra: dict[str, Any] | None = None, labels: Labels | None = None, progress: Progress | None = None,
    tables: Sequence[str] = (),
) -> dict[str, Any]:
    batches = (measure_rows(batch, metrics) for batch in batched(samples, batch_size(metrics)))
    with models_released(metrics):
        return write_results(batches, metrics, out_dir, source, extra, labels, progress, tables=tables)


@contextmanager
def models_released(metrics: Sequence[Metric]) -> Iterator[None]:
    """The run's judge closed when the run ends, however it ends: a llama.cpp context holds its KV cache
    outside Python's heap, which the garbage collector does not see, so runs in one process (a notebook,
    a test session) would otherwise pile them up."""
    try:
        yield
    finally:
        for kit in {id(m.kit): m.kit for m in metrics if m.kit is not None}.values():
            kit.close()


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


def _first(ids: Mapping[str, Any]) -> str:
    return repr(next(iter(ids)))[:40]



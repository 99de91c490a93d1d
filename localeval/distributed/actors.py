"""What runs on the cluster: the scoring actor Ray Data feeds, the input feeder, the node check.

The scoring actor builds the run's metrics with its own ModelKit and loads the models its metrics declare
when it starts (once per actor, not per batch), so a node without them fails at once with a line naming
the node. Each call receives chunk descriptors (chunk number, first and last sample), fetches those
samples from the feeder and scores them in the same windows as a single-process run (`batch_size`), so
every per-sample number is the one `localeval score` would write.

Errors travel in-band: a localeval error (a missing model) comes back as a message for the driver to
raise; any other exception on a window is retried sample by sample, and a sample that still raises is
skipped for every metric with the reason, so one bad sample never sinks a chunk or the run. (A process
that dies is Ray's to retry; see ray_runner.)
"""

from __future__ import annotations

import atexit
import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .. import models
from ..data.loading import iter_records
from ..data.records import Sample, sample_from_record
from ..errors import LocalevalError, ModelError
from ..model_kit import ModelKit
from ..judge.gguf import vocabulary
from ..metrics import JudgeMetric, Metric, MetricOptions, build_metrics
from ..metrics.criteria import Criterion, check_levels, register_criterion
from ..scoring import batch_size, batched, measure_rows, row_of
from ..settings import EMBEDDER_ENV, JUDGE_ENV
from .cache_flow import ForwardingCache


def node_label() -> str:
    """How errors and the summary name the node this process runs on: Ray's node id, address, host."""
    import socket

    import ray

    return f"{ray.get_runtime_context().get_node_id()[:8]} at {ray.util.get_node_ip_address()} ({socket.gethostname()})"


def models_needed(metrics: Sequence[Metric]) -> list[str]:
    """The models the metrics load ("judge", "embedder"), in that order."""
    kinds = {kind for metric in metrics for kind in metric.models}
    return [kind for kind in ("judge", "embedder") if kind in kinds]


def check_node(kinds: Sequence[str], options: MetricOptions,
               criteria: Sequence[Criterion] = ()) -> tuple[str, str | None, str | None]:
    """On one node: (its label, what is missing there or None, the judge's sha256 there).

    Model names resolve against this node's LOCALEVAL_MODELS (or its default folder), paths against its
    filesystem: a cluster needs the files on every node, by a shared filesystem or by copies. The levels of
    level criteria are checked against the vocabulary of the judge file there, as a single process does."""
    label = node_label()
    sha256 = None
    try:
        if "judge" in kinds:
            path = models.resolve(options.judge.judge, "judge")
            # one folder per user: another user's run on this node cannot write into theirs
            memo = Path(tempfile.gettempdir()) / f"localeval-model-hashes-{os.getuid()}"
            memo.mkdir(exist_ok=True)
            sha256 = models.model_sha256(path, "judge", memo)
            if any(c.levels for c in criteria):
                check_levels(criteria, vocabulary(path), options.judge.judge or models.default("judge").name)
        if "embedder" in kinds:
            models.resolve(options.judge.embedder, "embedder")
        if options.judge.prompts_dir and not Path(options.judge.prompts_dir).is_dir():
            raise ModelError(f"--prompts {options.judge.prompts_dir} is not a folder")
    except LocalevalError as exc:
        return label, str(exc), None
    return label, None, sha256


def forget_worker_model_choices() -> None:
    """The driver resolved the judge and the embedder (its flags over its environment over the defaults) and
    an embedder it left to the defaults travels as None (a registry default for each language): a worker's
    own $LOCALEVAL_EMBEDDER or $LOCALEVAL_JUDGE must not fill it in, or the same run would score with
    another model on that node."""
    for variable in (JUDGE_ENV, EMBEDDER_ENV):
        os.environ.pop(variable, None)


def failed_row(sample: Sample, metrics: Sequence[Metric], reason: str) -> dict[str, Any]:
    """A sample no metric could score, skipped for each with the reason (counted in the summary)."""
    return row_of(sample, {}, {}, {metric.name: reason for metric in metrics})


def measure_isolated(window: Sequence[Sample], metrics: Sequence[Metric], where: str) -> list[dict[str, Any]]:
    """`measure_rows`, but an unexpected exception costs only the value of the metric and sample raising it:
    a failed window is measured again sample by sample, a failed sample metric by metric."""
    try:
        return measure_rows(window, metrics)
    except LocalevalError:
        raise
    except Exception:  # noqa: BLE001 - a bug in one metric on one sample must not lose the others
        if len(window) > 1:
            return [row for sample in window for row in measure_isolated([sample], metrics, where)]
    values: dict[str, float] = {}
    details: dict[str, Any] = {}
    skipped: dict[str, str] = {}
    for metric in metrics:
        try:
            (row,) = measure_rows(window, [metric])
        except LocalevalError:
            raise
        except Exception as exc:  # noqa: BLE001
            first = (str(exc).splitlines() or [""])[0]
            skipped[metric.name] = f"failed on node {where}: {type(exc).__name__}: {first}"
            continue
        values.update(row["metrics"])
        details.update(row["details"])
        skipped.update(row["skipped"])
    return [row_of(window[0], values, details, skipped)]


#: What the feeder serves: the input's path (for messages) and (line number, decoded record) pairs.
Records = tuple[str, list[tuple[int, Any]]]


def as_samples(records: Records) -> list[Sample]:
    """The feeder's records as Samples: done by each actor, so the feeder's one process only reads."""
    source, items = records
    return [sample_from_record(record, source, line) for line, record in items]


class InputFeeder:
    """Runs as a Ray actor on the driver's node: reads the input file once, in order, and serves chunks.

    Chunks are read ahead only as far as the highest one asked for and kept until the driver has written
    them (`release`), so a chunk Ray retries is served again and memory stays bounded by the chunks in
    flight, not by the file. The driver validated the whole file first, so records are served as decoded."""

    def __init__(self, path: str, fmt: str | None, columns: Mapping[str, str] | None, chunk_size: int) -> None:
        self._path = path
        self._reader: Iterator[list[tuple[int, Any]]] = batched(iter_records(Path(path), fmt, columns), chunk_size)
        self._chunks: dict[int, list[tuple[int, Any]]] = {}
        self._read = 0

    def records(self, chunk: int, start: int, stop: int) -> Records:
        while self._read <= chunk:
            self._chunks[self._read] = next(self._reader)
            self._read += 1
        if chunk not in self._chunks:
            raise RuntimeError(f"chunk {chunk} was asked for after the driver wrote it")
        return self._path, self._chunks[chunk][start:stop]

    def release(self, chunk: int) -> None:
        self._chunks.pop(chunk, None)


#: An actor's folder in the node's temp dir: this prefix, its process id, a dash, a random tail.
ACTOR_FOLDER = "localeval-actor-"


def private_folder() -> Path:
    """A folder for this actor's copy of the judge cache, removed when the process exits normally.

    Ray Data ends its actors with a kill, which runs no exit handler, so each new actor first removes the
    folders of earlier actors on this node whose process is gone: a node keeps at most the last run's."""
    tmp = Path(tempfile.gettempdir())
    for old in tmp.glob(f"{ACTOR_FOLDER}*"):
        pid = old.name[len(ACTOR_FOLDER):].split("-", 1)[0]
        if pid.isdigit() and not process_alive(int(pid)):
            shutil.rmtree(old, ignore_errors=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{ACTOR_FOLDER}{os.getpid()}-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


class ChunkScorer:
    """The Ray Data actor: metrics, judge and embedder loaded once; each call scores chunk descriptors."""

    def __init__(self, names: Sequence[str], options: MetricOptions, threads: int, feeder: Any, sink: Any,
                 snapshot: Any, criteria: Sequence[Criterion] = ()) -> None:
        import ray

        for criterion in criteria:  # the driver's criteria files, registered as its metrics were
            register_criterion(criterion)

        for switch in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
            os.environ[switch] = "1"
        forget_worker_model_choices()
        self.label = node_label()
        self.feeder = feeder
        self.error: tuple[str, str] | None = None
        if isinstance(snapshot, ray.ObjectRef):
            snapshot = ray.get(snapshot)
        self.cache = ForwardingCache.from_snapshot(private_folder(), snapshot, sink)
        self.kit = ModelKit.of(options.judge, cache=self.cache)
        self.metrics = build_metrics(list(names), options, self.kit)
        self.judged = [m for m in self.metrics if isinstance(m, JudgeMetric)]
        self.window = batch_size(self.metrics)
        try:
            for kind in models_needed(self.metrics):
                self.kit.load(kind)  # now: once per actor, and a missing file fails here
            if "embedder" in models_needed(self.metrics):
                import torch

                torch.set_num_threads(threads)
        except LocalevalError as exc:
            self.error = (type(exc).__name__, f"node {self.label}: {exc}")

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[Any]]:
        payloads = [pickle.dumps(self.score(int(chunk), int(start), int(stop)))
                    for chunk, start, stop in zip(batch["chunk"], batch["start"], batch["stop"])]
        return {"chunk": list(batch["chunk"]), "start": list(batch["start"]), "payload": payloads}

    def score(self, chunk: int, start: int, stop: int) -> dict[str, Any]:
        """Rows of samples [start, stop) of a chunk, the judge work they took per metric, and where."""
        import ray

        if self.error is not None:
            return {"error": self.error}
        samples = as_samples(ray.get(self.feeder.records.remote(chunk, start, stop)))
        before = {m.name: m.used() for m in self.judged}  # type: ignore[attr-defined]
        rows: list[dict[str, Any]] = []
        error: LocalevalError | None = None
        try:
            for window in batched(samples, self.window):
                rows.extend(measure_isolated(window, self.metrics, self.label))
        except LocalevalError as exc:
            error = exc
        finally:
            try:
                self.cache.flush()
            except LocalevalError as exc:  # the driver's cache took no more entries (a full disk): the run stops
                error = error or exc       # with its line, as a single process does, not a chunk written as lost
        if error is not None:
            return {"error": (type(error).__name__, f"node {self.label}: {error}")}
        usage = {m.name: (m.used() - before[m.name]).as_dict() for m in self.judged}  # type: ignore[attr-defined]
        # Which judge answered, as a single process reports it: only once it was asked something.
        asked = any(u["calls"] or u["cache_hits"] for u in usage.values())
        return {"rows": rows, "usage": usage, "node": self.label, "judge": self.kit.model_info() if asked else {}}

"""The driver of a cluster run: `localeval score INPUT --ray [ADDRESS]`.

1. Everything a single-process run checks is checked first, by `pipeline.score_file`: metric names and
   options, the output folder, then the whole input (the same one-line errors); then here, the cache file
   and every node that could hold an actor has the models (the driver's own machine need not).
2. Two helper actors go on the driver's node: the feeder reads the input file (workers need no access to
   it) and the cache sink writes the driver's judge cache (cache_flow.py).
3. Ray Data hands chunk descriptors to a pool of `ChunkScorer` actors (`map_batches` with an actor pool);
   a chunk is whole judge windows, so per-sample numbers equal a single-process run's.
4. Results arrive in any order; the driver puts them back in input order and streams them into
   `pipeline.write_results`, which tallies the summary from the rows and commits atomically, as always.

Failure: Ray restarts a dead actor and retries its chunk RETRIES times; a chunk that still fails is
scored again one sample per task, and a sample that fails that way too is written skipped with the
reason, never dropped.
"""

from __future__ import annotations

import logging
import math
import os
import pickle
import warnings
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from .. import errors, models
from ..data.labels import Labels
from ..errors import LocalevalError, ModelError, OptionError
from ..judge.backend import CallStats
from ..judge.cache import check_cache_path, set_aside_if_damaged
from ..judge.config import DEFAULT_PARALLEL_CPU, DEFAULT_PARALLEL_GPU, RunConfig
from ..metrics import JudgeMetric, Metric, MetricOptions
from ..metrics.criteria import Criterion, criteria_of
from ..models import names_a_path
from ..scoring import batch_size, judge_window, write_results
from ..progress import Progress
from . import RayOptions
from .actors import ChunkScorer, InputFeeder, as_samples, check_node, failed_row, models_needed
from .cache_flow import CacheSink, snapshot_bytes

#: Chunks of cheap metrics hold this many of their batches: enough to hide Ray's per-task cost.
CHEAP_BATCHES_PER_CHUNK = 16
#: Retries of a chunk whose actor died (Ray restarts the actor each time) before it is split up.
RETRIES = 2
LOST = "its Ray actor died on every attempt (a crash, or killed for memory; see the Ray logs)"


def score_file_ray(path: Path, out_dir: Path, metrics: Sequence[Metric], options: MetricOptions,
                   ray_options: RayOptions, total: int, fmt: str | None = None,
                   columns: Mapping[str, str] | None = None, labels: Labels | None = None,
                   meter: Progress | None = None, tables: Sequence[str] = ()) -> dict[str, Any]:
    """Score the `total` samples of `path` on a Ray cluster into `out_dir`; the files equal those of
    `pipeline.score_file`, which has checked the options, the output folder and the whole input (and read
    `labels`) before calling."""
    ray = _import_ray()
    kinds = models_needed(metrics)
    config = next((m.kit.config for m in metrics if m.kit is not None), None) or RunConfig.resolve(options.judge)
    remote_options = _for_actors(options, config, ray_options, judged="judge" in kinds)
    cache_path = config.cache_path
    if "judge" in kinds:
        check_cache_path(cache_path)
        if options.judge.move_damaged_cache:  # as a single process does, before the actors get a snapshot of it
            set_aside_if_damaged(cache_path)
    with _connected(ray, ray_options.address):
        sha256 = _check_nodes(ray, kinds, remote_options, ray_options, criteria_of(metrics))
        chunk = (judge_window(RunConfig.resolve(remote_options.judge).parallel) if "judge" in kinds
                 else batch_size(metrics) * CHEAP_BATCHES_PER_CHUNK)
        run = _Run(ray, path.absolute(), fmt, columns, metrics, remote_options, ray_options, chunk, total)
        run.start(_judges(sha256, remote_options) if "judge" in kinds else None, cache_path)
        return write_results(run.rows(), metrics, out_dir, str(path), {"ray": run.info}, labels, meter, run.judge_info,
                             tables)


def _judges(gguf_sha256: str | None, options: MetricOptions) -> list[str]:
    """The model keys of the run's cache entries: the GGUF judge's, and a classifier folder's (its verdicts
    are cached under the folder's hash), so that a resumed run's actors find both."""
    keys = [gguf_sha256] if gguf_sha256 else []
    if options.judge.classifier:
        from ..classifier.folder import check_classifier

        keys.append(check_classifier(options.judge.classifier).sha256)
    return keys


def _import_ray() -> Any:
    try:
        import ray
        import ray.data  # noqa: F401 - Ray Data is the part localeval needs
    except ImportError:
        raise OptionError("--ray needs Ray Data: pip install 'localeval[ray]'") from None
    return ray


@contextmanager
def _connected(ray: Any, address: str | None) -> Iterator[None]:
    """Join the cluster at `address`, or start a local instance for this run; leave (or stop) it after."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        ray.init(address=address or "local", include_dashboard=False, log_to_driver=False,
                 logging_level=logging.WARNING, configure_logging=True)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        first = (str(exc).strip().splitlines() or ["no answer"])[0]
        raise OptionError(f"--ray {address or ''}: cannot start or join Ray: {first}".replace("  ", " ")) from None
    try:
        context = ray.data.DataContext.get_current()
        context.enable_progress_bars = False
        context.print_on_execution_start = False
        context.max_errored_blocks = -1  # a chunk that failed every retry is redone sample by sample
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        # Its one line, "progress bars disabled", would only say that localeval shows its own.
        logging.getLogger("ray.data._internal.progress").setLevel(logging.ERROR)
        yield
    finally:
        ray.shutdown()


def _for_actors(options: MetricOptions, config: RunConfig, ray_options: RayOptions, *,
                judged: bool) -> MetricOptions:
    """The options as actors need them: the judge and embedder the driver resolved (its flags and
    environment), paths absolute (an actor's working folder is not the driver's), threads from CPUs."""
    if options.judge.judge_url:
        raise OptionError("--judge-url with --ray: the actors would all send their calls to the one server; "
                          "score with --judge-url alone, or give each actor its own judge (a GGUF) with --ray")
    settings = config.settings
    # Without --parallel, a CPU actor keeps DEFAULT_PARALLEL_CPU sequences: a node runs an actor per CPU, and
    # the single-process default's 16 KV streams (1.9 GB for the default judge) are sized for one process.
    parallel = options.judge.parallel
    gpu_layers = config.gpu_layers if judged else 0  # $LOCALEVAL_GPU_LAYERS is read only for a judge that runs
    if parallel is None:  # on a GPU, what an actor's GPU build would choose, whatever the driver's build is
        parallel = DEFAULT_PARALLEL_CPU if gpu_layers == 0 else DEFAULT_PARALLEL_GPU
    # replace(): every other judge setting travels as the driver has it.
    # the default judge by name: an actor resolving None would read its worker's own $LOCALEVAL_JUDGE
    judge = replace(options.judge, judge=_absolute(settings.judge or models.default("judge").name),
                    embedder=_absolute(settings.embedder),
                    n_threads=ray_options.threads(options.judge.n_threads), cache=None,
                    prompts_dir=_absolute(options.judge.prompts_dir), parallel=parallel, gpu_layers=gpu_layers,
                    classifier=_absolute(options.judge.classifier))
    return MetricOptions(judge=judge, **options.values)


def _absolute(name_or_path: str | None) -> str | None:
    if name_or_path is None or not names_a_path(name_or_path):
        return name_or_path  # a registry name: each node resolves it in its own models folder
    return str(Path(name_or_path).expanduser().absolute())


def _check_nodes(ray: Any, kinds: Sequence[str], options: MetricOptions, ray_options: RayOptions,
                 criteria: Sequence[Criterion]) -> str | None:
    """Every node that can hold an actor has the models; return the judge's sha256, the same on all."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    nodes = [n for n in ray.nodes() if n.get("Alive") and _fits(n.get("Resources", {}), ray_options)]
    if not nodes:
        raise OptionError(f"no node of the Ray cluster has {ray_options.cpus_per_actor:g} CPUs"
                          f"{f' and {ray_options.gpus_per_actor:g} GPUs' if ray_options.gpus_per_actor else ''} "
                          f"for an actor (--ray-cpus-per-actor, --ray-gpus-per-actor)")
    if not kinds:
        return None  # no model to look for: spare every node a worker's start-up
    check = ray.remote(num_cpus=0)(check_node)
    reports = ray.get([check.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
                       .remote(kinds, options, criteria) for n in nodes])
    for label, problem, _ in reports:
        if problem:
            raise ModelError(f"node {label}: {problem}")
    hashes = {label: sha for label, _, sha in reports}
    if len(set(hashes.values())) > 1:
        which = ", ".join(f"{sha[:12]} on {label}" for label, sha in hashes.items())
        raise ModelError(f"the judge file differs between nodes (sha256 {which}); give every node the same file")
    return next(iter(hashes.values()))


def _fits(resources: Mapping[str, float], ray_options: RayOptions) -> bool:
    return (resources.get("CPU", 0) >= ray_options.cpus_per_actor
            and resources.get("GPU", 0) >= ray_options.gpus_per_actor)


def _capacity(ray: Any, ray_options: RayOptions) -> int:
    """How many actors the alive nodes hold now (an actor cannot span nodes)."""
    fit = 0
    for node in (n for n in ray.nodes() if n.get("Alive")):
        resources = node.get("Resources", {})
        per_node = _times(resources.get("CPU", 0), ray_options.cpus_per_actor)
        if ray_options.gpus_per_actor:
            per_node = min(per_node, _times(resources.get("GPU", 0), ray_options.gpus_per_actor))
        fit += per_node
    return fit


def _times(total: float, each: float) -> int:
    """How many `each` fit in `total`, as Ray counts: 1 // 0.2 is 4.0 in floating point, and 5 fit."""
    return math.floor(total / each + 1e-9)


class _Run:
    """One cluster run's moving parts: helper actors, the Ray Data passes, rows put back in order."""

    def __init__(self, ray: Any, path: Path, fmt: str | None, columns: Mapping[str, str] | None,
                 metrics: Sequence[Metric], options: MetricOptions, ray_options: RayOptions, chunk: int, total: int):
        self.ray, self.metrics, self.options, self.ray_options = ray, metrics, options, ray_options
        self.path, self.fmt, self.columns = path, fmt, columns
        self.chunk, self.total = chunk, total
        self.n_chunks = -(-total // chunk)
        # --ray-actors, else what the nodes hold; the pool starts with what fits now and grows to that
        # number if the cluster grows (an autoscaler adding nodes), instead of waiting for all of them.
        self.capacity = _capacity(ray, ray_options)
        self.actors = min(ray_options.actors or max(1, self.capacity), self.n_chunks)
        self.judge_info: dict[str, Any] = {}
        self.info: dict[str, Any] = {
            "address": ray_options.address or "local", "ray": ray.__version__, "actors": self.actors,
            "cpus_per_actor": ray_options.cpus_per_actor, "gpus_per_actor": ray_options.gpus_per_actor,
            "threads_per_actor": options.judge.n_threads, "samples_per_chunk": chunk, "nodes": {},
            "retried_alone": 0, "lost": 0,
        }

    def start(self, judge_sha256: Sequence[str] | None, cache_path: Path) -> None:
        """The feeder and (for judge metrics) the cache sink on this node, and the cache snapshot."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        here = NodeAffinitySchedulingStrategy(self.ray.get_runtime_context().get_node_id(), soft=False)
        helper = self.ray.remote(num_cpus=0, scheduling_strategy=here)
        self.feeder = helper(InputFeeder).remote(str(self.path), self.fmt, dict(self.columns or {}), self.chunk)
        self.sink = self.snapshot = None
        if judge_sha256:
            cache_path = cache_path.absolute()
            data, count = snapshot_bytes(cache_path, judge_sha256)
            self.snapshot = self.ray.put(data)
            self.sink = helper(CacheSink).remote(str(cache_path))
            self.info["cache"] = {"path": str(cache_path), "entries_shipped": count}

    def rows(self) -> Iterator[list[dict[str, Any]]]:
        """Row lists of whole chunks, in input order; chunks that failed every retry come at the end of the
        first pass, scored one sample per task, or written as skipped."""
        done: dict[int, list[dict[str, Any]]] = {}
        following = 0
        for chunk, _, result in self._pass([(c, 0, self.chunk) for c in range(self.n_chunks)]):
            done[chunk] = self._accept(result)
            while following in done:
                yield done.pop(following)
                self.feeder.release.remote(following)
                following += 1
        if following == self.n_chunks:
            return
        redo = [c for c in range(following, self.n_chunks) if c not in done]
        alone = {}
        samples = {c: as_samples(self.ray.get(self.feeder.records.remote(c, 0, self.chunk))) for c in redo}
        self.info["retried_alone"] = sum(len(s) for s in samples.values())
        for chunk, start, result in self._pass([(c, i, i + 1) for c in redo for i in range(len(samples[c]))]):
            alone[chunk, start] = self._accept(result)
        for c in redo:
            rows = []
            for i, sample in enumerate(samples[c]):
                if (c, i) not in alone:
                    self.info["lost"] += 1
                rows.extend(alone.get((c, i)) or [failed_row(sample, self.metrics, LOST)])
            done[c] = rows
        for c in range(following, self.n_chunks):
            yield done.pop(c)
            self.feeder.release.remote(c)

    def _pass(self, descriptors: list[tuple[int, int, int]]) -> Iterator[tuple[int, int, dict[str, Any]]]:
        """One Ray Data pass over chunk descriptors with a fresh actor pool; results in finishing order."""
        ray = self.ray
        items = [{"chunk": c, "start": s, "stop": e} for c, s, e in descriptors]
        with warnings.catch_warnings():
            # Ray 2.60 has no named parameter for an actor's retries yet and warns about the generic ones;
            # without them a sample that kills its actor would be retried forever (Ray Data's default).
            warnings.simplefilter("ignore", DeprecationWarning)
            dataset = ray.data.from_items(items, override_num_blocks=len(items)).map_batches(
                ChunkScorer, batch_size=1, compute=self._pool(len(items)),
                fn_constructor_args=([m.name for m in self.metrics], self.options, self.options.judge.n_threads,
                                     self.feeder, self.sink, self.snapshot, criteria_of(self.metrics)),
                num_cpus=self.ray_options.cpus_per_actor, num_gpus=self.ray_options.gpus_per_actor or None,
                max_restarts=-1, max_task_retries=RETRIES)
        for row in dataset.iter_rows():
            yield int(row["chunk"]), int(row["start"]), pickle.loads(row["payload"])

    def _pool(self, tasks: int) -> Any:
        most = min(self.actors, tasks)
        # One chunk at a time per actor: a chunk queued behind a slow one would wait while others idle.
        return self.ray.data.ActorPoolStrategy(min_size=max(1, min(most, self.capacity)), max_size=most,
                                               max_tasks_in_flight_per_actor=1)

    def _accept(self, result: dict[str, Any]) -> list[dict[str, Any]]:
        """Count a result's judge work and node; raise the localeval error an actor reported."""
        if "error" in result:
            name, message = result["error"]
            kind = getattr(errors, name, None)
            raise (kind if kind in (ModelError, OptionError, errors.JudgeError) else LocalevalError)(message)
        for metric in self.metrics:
            # a metric that judged nothing here (it skipped every sample) adds no usage, as in a single process
            if isinstance(metric, JudgeMetric) and any((result["usage"].get(metric.name) or {}).values()):
                metric.add_usage(CallStats(**result["usage"][metric.name]))
        if result["judge"] and not self.judge_info:
            self.judge_info.update(result["judge"])
        nodes = self.info["nodes"]
        nodes[result["node"]] = nodes.get(result["node"], 0) + len(result["rows"])
        return result["rows"]

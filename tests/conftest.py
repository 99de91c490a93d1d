"""Shared fixtures: the environment is offline for every test, as it is for users in an air gap.

What a test needs beyond the package is a marker (registered in pyproject.toml):

| marker                 | needs                                                       | when it is missing             |
|------------------------|-------------------------------------------------------------|--------------------------------|
| `model(NAME, ...)`     | these registered models in the models folder                | `make models`                  |
| `default_judge`        | the registry's default judge (the 1.5B Qwen GGUF)           | `make models`                  |
| `ray`                  | Ray (it starts a Ray instance or cluster)                   | `pip install -e ".[ray]"`      |
| `browser`              | headless chromium and playwright                            | `make browser`                 |
| `install`              | setuptools and wheel (it builds wheels and installs them)   | `pip install -e ".[dev]"`      |
| `cpu_numerics`         | the judge on the CPU: its numbers do not depend on batching | unset `LOCALEVAL_GPU_LAYERS`   |

A marked test whose requirement is missing is skipped with the reason and the command that installs it.
Tests marked `model`, `default_judge` or `ray` run under the model lock (`take_model_lock`); `make test`
runs them in one pytest process and the rest in another beside it, on the second core.
`make test-fast` runs only the unmarked tests: the logic, with no model and no browser.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import sqlite3
from pathlib import Path
from typing import IO, Any, Iterable

import pytest

from .browser import INSTALL_HINT, chromium_path

EXAMPLE = Path(__file__).resolve().parent.parent / "localeval" / "resources" / "examples" / "rag_demo.jsonl"
#: Taken by every process that runs a model on this machine: these tests, the benchmarks (bench/harness.py).
MODEL_LOCK = Path("/tmp/localeval-model.lock")
LOCKED_MARKERS = ("model", "default_judge", "ray")
# One llama.cpp thread for every judge a test starts without --threads, in this process and the ones it
# starts: `make test` runs the model tests beside the other tests, and llama.cpp's threads spin.
os.environ.setdefault("LOCALEVAL_THREADS", "1")
#: How the project's own environment is installed (Makefile); any newer torch than the pinned CPU build pulls CUDA.
PIP_INSTALL = '.venv/bin/pip install -e ".[{extra}]" -c .ci/constraints.txt'


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(autouse=True)
def ray_actors_on_the_cpu(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ray's tests run CPU actors: in a test run on a GPU ($LOCALEVAL_GPU_LAYERS), offloading with actors
    that reserve no GPU would be refused before Ray starts."""
    if request.node.get_closest_marker("ray"):
        monkeypatch.delenv("LOCALEVAL_GPU_LAYERS", raising=False)


# ---- markers: what a test needs, skipped with the fix when it is missing --------------------------------

def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A model marker must name registered models."""
    from localeval.models import load_registry

    known = {spec.name for spec in load_registry()}
    for item in items:
        for marker in item.iter_markers("model"):
            unknown = [name for name in marker.args if name not in known]
            if not marker.args or unknown:
                raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.model needs registered model names, got "
                                        f"{marker.args!r}; known: {', '.join(sorted(known))}")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Skip before any fixture is set up, and before the model lock is waited for; a test that runs a model
    takes the lock here, before any of its fixtures (a module-scoped one that loads a judge included). Not
    through a fixture inserted into the test's fixture names: the parametrized cases of one test function
    share that list, so the unmarked cases would wait for the lock too."""
    reasons = missing_requirements(item)
    if reasons:
        pytest.skip("; ".join(reasons))
    if any(item.get_closest_marker(m) for m in LOCKED_MARKERS):
        take_model_lock(item.config)


def missing_requirements(item: pytest.Item) -> list[str]:
    from localeval import models
    from localeval.judge.config import can_offload
    from localeval.settings import current

    reasons = []
    names = [name for marker in item.iter_markers("model") for name in marker.args]
    if item.get_closest_marker("default_judge"):
        names.append(models.default("judge").name)
    missing = {}
    for name in dict.fromkeys(names):
        problem = models.quick_check(models.find(name))
        if problem:
            missing[name] = problem
    if missing:
        reasons.append(f"not installed: {', '.join(f'model {name} ({problem})' for name, problem in missing.items())}; "
                       f"run `make models` or `.venv/bin/localeval models install {' '.join(missing)}`")
    if item.get_closest_marker("ray") and importlib.util.find_spec("ray") is None:
        reasons.append(f"Ray is not installed: run `{PIP_INSTALL.format(extra='ray')}`")
    if item.get_closest_marker("browser"):
        if chromium_path() is None:
            reasons.append(f"chromium is not installed: {INSTALL_HINT}")
        if importlib.util.find_spec("playwright") is None:
            reasons.append(f"playwright is not installed: run `{PIP_INSTALL.format(extra='dev')}`")
    if item.get_closest_marker("cpu_numerics") and current().gpu_layers and can_offload():
        reasons.append("the judge runs on the GPU ($LOCALEVAL_GPU_LAYERS): llama.cpp's CUDA kernels round a token by "
                       "the batch it was decoded in, so equal numbers across batchings hold on the CPU only "
                       "(docs/benchmarks/gpu.md)")
    if item.get_closest_marker("install"):
        absent = [name for name in ("pip", "setuptools", "wheel") if importlib.util.find_spec(name) is None]
        if absent:
            reasons.append(f"{', '.join(absent)} not installed (wheels are built without build isolation): "
                           f"run `{PIP_INSTALL.format(extra='dev')}`")
    return reasons


#: The model lock's open file once this process holds the lock: closed, and so released, when the process ends.
_held_lock: list[IO[str]] = []


def take_model_lock(config: pytest.Config) -> None:
    """flock on /tmp/localeval-model.lock from the first test that runs a model to the end of the session, so
    that two pytest processes (or a test run and a benchmark) never run models at once: on 2 cores two
    llama.cpp processes slow each other about tenfold. Taken for every test marked model, default_judge or ray.

    Under `flock /tmp/localeval-model.lock pytest ...` the lock is already this process's (an inherited
    descriptor holds it), and is taken over rather than waited for, which would never end."""
    if _held_lock:
        return
    handle = MODEL_LOCK.open("a")
    if not _held_through_an_inherited_descriptor(handle.fileno()):
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            capture = config.pluginmanager.getplugin("capturemanager")  # None under -p no:capture
            with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
                print(f"\nwaiting for the model lock {MODEL_LOCK} (another process is running a model) ...",
                      flush=True)
            fcntl.flock(handle, fcntl.LOCK_EX)
    _held_lock.append(handle)


def _held_through_an_inherited_descriptor(own: int) -> bool:
    """True when another descriptor of this process on the lock file holds the lock (flock(1) passes its
    descriptor to the command it runs; flock on that same open file succeeds at once)."""
    target = os.fstat(own)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd == own or not _same_file(os.fstat(fd), target):
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # closed since listed, or held by another process
            continue
        return True
    return False


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


# ---- helpers and fixtures ------------------------------------------------------------------------------

def write_jsonl(path: Path, records: Iterable[Any]) -> Path:
    """Records are written as given; strings are written raw so tests can plant broken lines."""
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write((record if isinstance(record, str) else json.dumps(record, ensure_ascii=False)) + "\n")
    return path


def cached_calls(cache: Path) -> int:
    """Answers stored in a judge cache so far, read while its writer runs (SQLite WAL allows it); 0 before the
    writer has created the file or its table."""
    if not cache.exists():
        return 0
    try:  # closed at once: a reader left open keeps the writer's -wal and -shm files after it closes
        with contextlib.closing(sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=30)) as db:
            return db.execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]
    except sqlite3.OperationalError:  # created but not yet migrated
        return 0


def make_run(path: Path, values: dict[str, list[float | None]], ids: list[str] | None = None) -> Path:
    """A RUN_DIR as `localeval score` writes it; None means the metric skipped that sample."""
    path.mkdir(parents=True, exist_ok=True)
    n = len(next(iter(values.values())))
    ids = ids or [f"q{i}" for i in range(n)]
    rows = []
    for i, sample_id in enumerate(ids):
        metrics = {c: v[i] for c, v in values.items() if v[i] is not None}
        skipped = {c: "missing field 'answer'" for c, v in values.items() if v[i] is None}
        rows.append({"id": sample_id, "question": f"question {i}", "metrics": metrics, "details": {}, "skipped": skipped})
    write_jsonl(path / "samples.jsonl", rows)
    return path


@pytest.fixture
def example_path() -> Path:
    return EXAMPLE


@pytest.fixture(scope="session")
def embedder():
    """The real default embedder (MiniLM from models/), loaded once for the whole session; a test that uses
    it is marked model("all-minilm-l6-v2")."""
    from localeval.embed import load_embedder

    return load_embedder()

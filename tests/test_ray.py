"""`localeval score --ray` on a real two-node Ray cluster on this machine (a head and a worker, separate
`ray start` processes with one CPU each, so the two actors land one per node), with the real tiny judge
and both embedders: the files equal a single-process run's (in a run whose worker is killed mid-run too), a
driver killed with SIGKILL resumes without repeating a judge call, a sample that kills its actor is skipped
with the reason, and a node without the model is named in a one-line error.

The expected values are never constants: they are what the single-process `localeval score` writes for
the same input and settings (the judge is greedy and the batched engine is bit-identical to the
sequential one, tests/test_engine.py). Seconds in the judge's per-sample stats differ run to run and are
left out of the comparison. Runs whose subject is not the process (the classifier's single-process
reference, the option checks) go through click's CliRunner in this process: a subprocess would only add its
start-up. The judged runs' reference is the script: it scores the plugins' gate, which this process does not
import, and the criteria one registers its metric for the rest of the process.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest
from click.testing import CliRunner, Result

pytest.importorskip("ray.data", reason='the [ray] extra is not installed: run `.venv/bin/pip install -e ".[ray]" '
                                       '-c .ci/constraints.txt`')

from ray_cluster import RayCluster, ray_env  # noqa: E402

from localeval.cli import cli  # noqa: E402
from localeval.distributed.actors import measure_isolated  # noqa: E402
from localeval.metrics import Measurement  # noqa: E402
from localeval.data.records import sample_from_record  # noqa: E402

from .conftest import cached_calls, write_jsonl  # noqa: E402

EXAMPLE = Path(__file__).resolve().parent.parent / "localeval" / "resources" / "examples" / "rag_demo.jsonl"
#: The judged runs score the example's eight samples, six English and two Chinese: eight chunks, so each of two
#: actors takes several, and a worker killed once both have made a call, or a driver killed a third of the way
#: through, still has chunks to go (with four, an actor that loaded last could make its first call on the last
#: chunk, and the run ended before the test saw it).
JUDGED_IDS = ("q1", "q2", "q3", "q4", "q5", "q6", "q7", "q8")
LOCALEVAL = str(Path(sys.executable).parent / "localeval")
TINY = "smollm2-135m-instruct-q4_1"
# classical, a judge metric and an embedder metric: every model an actor can hold (the judge, MiniLM for the
# English samples, USE multilingual for the Chinese ones), with no generation: the tiny judge writes JSON
# slowly, and these tests are about where calls run and how their entries travel, not about what is asked.
# Last, the plugins' gate: open but in the run whose worker is killed.
METRICS = "classical,faithfulness,answer_similarity,gate_test"
# One judge sequence and one thread per actor: windows of one sample, so each sample makes a chunk.
# Statements by sentence splitting (each answer is one sentence) keep it to one judge call a sample.
JUDGE_ARGS = ["--judge", TINY, "--threads", "1", "--parallel", "1", "--n-ctx", "2048",
              "--faithfulness-statements", "sentences"]

# Metric plugins (found through their entry points, like any plugin): one whose process dies on one sample, as
# a segfaulting native library or the kernel's OOM killer would end it, and which raises on another; and a
# gate that holds a scorer mid-chunk while the test kills or counts them.
CRASH_PLUGIN = '''
import os
import time
from localeval import Measurement, Metric, register_metric


@register_metric
class CrashTest(Metric):
    """Dies on the sample with id 'q3', raises on 'q5', else the answer's length."""

    name = "crash_test"
    requires = ()
    columns = ("crash_test",)

    def settings(self):
        return {}

    def measure(self, samples):
        for s in samples:
            if s.id == "q3":
                os._exit(1)
            if s.id == "q5":
                raise ZeroDivisionError("planted")
        return [Measurement({"crash_test": float(len(s.answer or ""))}) for s in samples]


@register_metric
class GateTest(Metric):
    """The answer's length, once the gate is open. In a process whose $LOCALEVAL_TEST_GATE names a folder
    without the file 'open', a file named by the process id says it waits there, holding its samples."""

    name = "gate_test"
    requires = ()
    columns = ("gate_test",)

    def settings(self):
        return {}

    def measure(self, samples):
        gate = os.environ.get("LOCALEVAL_TEST_GATE")
        if gate and not os.path.exists(os.path.join(gate, "open")):
            open(os.path.join(gate, str(os.getpid())), "w").close()
            deadline = time.monotonic() + 600
            while not os.path.exists(os.path.join(gate, "open")) and time.monotonic() < deadline:
                time.sleep(0.05)
        return [Measurement({"gate_test": float(len(s.answer or ""))}) for s in samples]
'''


# ---- no cluster needed ---------------------------------------------------------------------------

class Explodes:
    """A metric with a bug on one sample: the others of its window must still be scored."""

    name, requires, columns = "explodes", (), ("explodes",)

    def settings(self) -> dict[str, Any]:
        return {}

    def measure(self, samples):
        if any(s.id == "bad" for s in samples):
            raise KeyError("boom")
        return [Measurement({"explodes": 1.0}) for _ in samples]


def test_a_sample_that_raises_is_skipped_with_the_reason_and_its_window_is_scored() -> None:
    samples = [sample_from_record({"id": i, "question": "q?"}, "<t>", n) for n, i in enumerate(["a", "bad", "c"], 1)]
    rows = measure_isolated(samples, [Explodes()], "n1 at 10.0.0.1 (host)")
    assert [r["metrics"] for r in rows] == [{"explodes": 1.0}, {}, {"explodes": 1.0}]
    assert rows[1]["skipped"] == {"explodes": "failed on node n1 at 10.0.0.1 (host): KeyError: 'boom'"}


def run(args: list[str], env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([LOCALEVAL, *args], capture_output=True, text=True, env=env, timeout=timeout)


def here(args: list[str], env: dict[str, str | None] | None = None) -> Result:
    """`localeval ARGS` in this process (`env` changes the environment for the call): the same command and
    files as the script, without starting Python (and importing torch) again."""
    return CliRunner().invoke(cli, args, obj={"debug": False}, env=env, catch_exceptions=False)


def test_ray_options_are_checked_before_ray_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCALEVAL_GPU_LAYERS", raising=False)  # also in a run on a GPU
    done = here(["score", str(EXAMPLE), "--ray-actors", "2", "-o", str(tmp_path / "o")])
    assert done.exit_code == 2 and "--ray-actors needs --ray" in done.stderr
    judged = ["score", str(EXAMPLE), "-m", "faithfulness", "--ray", "-o", str(tmp_path / "o")]
    done = here([*judged, "--ray-gpus-per-actor", "0.5"])
    assert done.exit_code == 2 and done.stderr.strip().splitlines() == [
        "error: --ray-gpus-per-actor 0.5 reserves GPUs the judge would not use: add --gpu-layers -1 to offload it"]
    # The classical metrics load no judge: the layers, and a malformed LOCALEVAL_GPU_LAYERS, concern no actor.
    done = here(["score", str(EXAMPLE), "--ray", "--ray-gpus-per-actor", "0.5", "-o", str(tmp_path / "o")],
                env={"LOCALEVAL_GPU_LAYERS": "all"})
    assert done.exit_code == 2 and done.stderr.strip().splitlines() == [
        "error: --ray-gpus-per-actor 0.5 reserves GPUs the judge would not use: no metric of this run loads a judge "
        "on the actors"]
    offloading = "offloads the judge, but Ray shows no GPU to an actor that reserves none: add --ray-gpus-per-actor"
    done = here([*judged, "--gpu-layers", "-1"])
    assert done.exit_code == 2 and offloading in done.stderr and done.stderr.count("\n") == 1, done.stderr
    done = here(judged, env={"LOCALEVAL_GPU_LAYERS": "-1"})
    assert done.exit_code == 2 and offloading in done.stderr, done.stderr
    done = here([*judged, "--parallel", "257"])  # the batched engine's limit, checked on the driver
    assert done.exit_code == 2 and done.stderr == ("error: --parallel 257: llama.cpp runs at most 256 sequences in one "
                                                   "context; give --parallel 256 or fewer\n"), done.stderr
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "question": "a?"}\n{"id": 2, "question": 3}\n', encoding="utf-8")
    done = here(["score", str(bad), "--ray", "-o", str(tmp_path / "o")])
    single = here(["score", str(bad), "-o", str(tmp_path / "o")])  # the same line as without --ray
    assert done.exit_code == single.exit_code == 2 and done.stderr == single.stderr
    assert done.stderr.strip().splitlines() == [f"error: {bad}:2: field 'question': must be a non-empty string (got a number)"]
    assert not (tmp_path / "o").exists()


def test_without_ray_installed_the_error_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` and `import ray.data` raise ImportError
    done = here(["score", str(EXAMPLE), "--ray", "-o", str(tmp_path / "o")])
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines() == ["error: --ray needs Ray Data: pip install 'localeval[ray]'"]


def test_cache_entries_travel_between_files_unchanged(tmp_path: Path) -> None:
    from localeval.distributed.cache_flow import snapshot_bytes
    from localeval.judge.cache import JudgeCache

    with JudgeCache(tmp_path / "driver.sqlite") as driver:
        driver.put("k1", kind="json", model_sha256="m1", prompt="p@1", value={"a": [1, "é"]}, stats={"calls": 1})
        driver.put("k2", kind="distribution", model_sha256="m2", prompt="p@1", value=[{"yes": 0.25}, 0.5], stats={})
    assert snapshot_bytes(tmp_path / "driver.sqlite", ["m1", "m2"])[1] == 2  # a GGUF judge and a classifier
    data, count = snapshot_bytes(tmp_path / "driver.sqlite", ["m1"])  # only the run's judge goes out
    assert count == 1
    (tmp_path / "actor.sqlite").write_bytes(data)
    with JudgeCache(tmp_path / "actor.sqlite") as actor, sqlite3.connect(tmp_path / "actor.sqlite") as db:
        assert actor.get("k1") == ({"a": [1, "é"]}, {"calls": 1}) and actor.get("k2") is None
        rows = db.execute("SELECT key, kind, model_sha256, prompt, value, stats, created FROM judge_calls").fetchall()
    with JudgeCache(tmp_path / "back.sqlite") as back:  # what the sink does with an actor's entries
        back.put_entries(rows)
        assert back.get("k1") == ({"a": [1, "é"]}, {"calls": 1}) and len(back) == 1


def test_actors_get_the_judge_and_the_parallel_the_driver_resolved(monkeypatch: pytest.MonkeyPatch) -> None:
    """The default judge travels by name (an actor resolving none would read its worker's $LOCALEVAL_JUDGE),
    a GPU run's --parallel is the GPU default whatever the driver's llama.cpp build, and actors are counted
    as Ray places them (1 // 0.2 is 4.0 in floating point; 5 fit)."""
    from localeval import models
    from localeval.distributed import RayOptions
    from localeval.distributed.ray_runner import _for_actors, _times
    from localeval.judge import JudgeOptions, RunConfig
    from localeval.metrics import MetricOptions

    monkeypatch.delenv("LOCALEVAL_JUDGE", raising=False)
    for gpu_layers, parallel in ((0, 4), (-1, 32)):
        options = MetricOptions(judge=JudgeOptions(gpu_layers=gpu_layers))
        shipped = _for_actors(options, RunConfig.resolve(options.judge), RayOptions(), judged=True).judge
        assert (shipped.judge, shipped.parallel) == (models.default("judge").name, parallel)
    assert (_times(1, 0.2), _times(8, 0.1), _times(4, 0.4), _times(3, 1), _times(0.5, 1)) == (5, 80, 10, 3, 0)


def test_an_actor_ignores_its_workers_own_model_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """An embedder the driver left to the defaults travels as None; the actor must not read its node's
    $LOCALEVAL_EMBEDDER (or $LOCALEVAL_JUDGE) into it."""
    from localeval.distributed.actors import forget_worker_model_choices
    from localeval.judge import JudgeOptions, RunConfig

    monkeypatch.setenv("LOCALEVAL_EMBEDDER", "/node/own/embedder")
    monkeypatch.setenv("LOCALEVAL_JUDGE", "/node/own/judge.gguf")
    assert RunConfig.resolve(JudgeOptions()).embedder == "/node/own/embedder"
    forget_worker_model_choices()
    config = RunConfig.resolve(JudgeOptions())
    assert (config.embedder, config.judge) == (None, None)
    assert RunConfig.resolve(JudgeOptions(embedder="all-minilm-l6-v2")).embedder == "all-minilm-l6-v2"


def test_a_driver_cache_that_takes_no_more_entries_is_the_actors_one_line(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The sink's OutputError (a full disk under the driver's cache) reaches the actor wrapped by Ray; the
    actor reports it as that one line, so the run stops as a single process does instead of writing every
    sample as lost."""
    import ray
    import ray.exceptions

    from localeval.distributed.cache_flow import ForwardingCache
    from localeval.errors import OutputError

    full = OutputError("judge cache /data/c.sqlite: the disk is full")

    def failed(refs: Any) -> Any:
        raise ray.exceptions.RayTaskError("put_entries", "Traceback ...", full)

    monkeypatch.setattr(ray, "get", failed)
    cache = ForwardingCache(tmp_path / "actor.sqlite", sink=None)
    cache._in_flight.append(object())
    with pytest.raises(OutputError, match="^judge cache /data/c.sqlite: the disk is full$"):
        cache.flush()
    assert cache._in_flight == [] and cache.flush() == 0


def test_an_actor_removes_the_cache_folders_of_actors_that_are_gone(tmp_path: Path, monkeypatch) -> None:
    """Ray kills its actors, so no exit handler runs: the next actor on the node clears what they left."""
    import tempfile

    from localeval.distributed.actors import ACTOR_FOLDER, private_folder

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"{ACTOR_FOLDER}{gone.stdout.strip()}-abc"
    live = tmp_path / f"{ACTOR_FOLDER}{os.getppid()}-def"  # the test runner's parent: alive
    for folder in (dead, live):
        (folder / "judge.sqlite").parent.mkdir()
        (folder / "judge.sqlite").write_bytes(b"x")
    mine = private_folder()
    assert not dead.exists() and live.exists() and mine.is_dir() and mine.name.startswith(f"{ACTOR_FOLDER}{os.getpid()}-")


@pytest.mark.ray
def test_without_an_address_a_local_instance_is_started_and_stopped(tmp_path: Path) -> None:
    before = raylets()
    done = run(["score", str(EXAMPLE), "-o", str(tmp_path / "ray"), "-q", "--ray", "--ray-actors", "2"],
               env=ray_env(secrets.token_hex(32)))
    assert done.returncode == 0, done.stderr
    assert here(["score", str(EXAMPLE), "-o", str(tmp_path / "single"), "-q"]).exit_code == 0
    assert (tmp_path / "ray" / "samples.jsonl").read_bytes() == (tmp_path / "single" / "samples.jsonl").read_bytes()
    ray_summary = json.loads((tmp_path / "ray" / "summary.json").read_text(encoding="utf-8"))
    single_summary = json.loads((tmp_path / "single" / "summary.json").read_text(encoding="utf-8"))
    assert ray_summary["metrics"] == single_summary["metrics"] and ray_summary["ray"]["address"] == "local"
    assert raylets() <= before  # the instance the run started is gone with it


def raylets() -> set[int]:
    return processes(lambda command: b"raylet" in command.split(b"\0")[0])


def processes(matches: Callable[[bytes], bool]) -> set[int]:
    """This machine's processes whose command line (/proc/PID/cmdline) `matches`."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and matches((entry / "cmdline").read_bytes()):
                found.add(int(entry.name))
        except OSError:
            pass
    return found


# ---- the two-node cluster ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The crash plugin as an installed distribution (module + dist-info with its entry point)."""
    root = tmp_path_factory.mktemp("plugin")
    (root / "localeval_crash_test.py").write_text(CRASH_PLUGIN, encoding="utf-8")
    info = root / "localeval_crash_test-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: localeval-crash-test\nVersion: 0.1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text("[localeval.metrics]\ncrash_test = localeval_crash_test:CrashTest\n"
                                           "gate_test = localeval_crash_test:GateTest\n", encoding="utf-8")
    return root


def plugin_path(plugin: Path) -> str:
    return os.pathsep.join([str(plugin), os.environ.get("PYTHONPATH", "")])


@pytest.fixture(scope="module")
def cluster(plugin: Path):
    """Both nodes with the plugins, and the gate open (the folder the nodes' $LOCALEVAL_TEST_GATE names)."""
    cluster = RayCluster()
    path, gate = plugin_path(plugin), cluster.root / "gate"
    gate.mkdir()
    (gate / "open").touch()
    try:
        cluster.head(cpus=1, PYTHONPATH=path, LOCALEVAL_TEST_GATE=str(gate))
        cluster.add_node(cpus=1, PYTHONPATH=path, LOCALEVAL_TEST_GATE=str(gate))
        cluster.plugin_path, cluster.gate = path, gate  # type: ignore[attr-defined]
        yield cluster
    finally:
        cluster.stop()


def driver_env(cluster: RayCluster, cache: Path) -> dict[str, str]:
    return cluster.env(PYTHONPATH=cluster.plugin_path, LOCALEVAL_CACHE=str(cache))  # type: ignore[attr-defined]


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """JUDGED_IDS's lines of the example."""
    records = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()]
    return write_jsonl(tmp_path_factory.mktemp("judged") / "judged.jsonl",
                       [record for record in records if record["id"] in JUDGED_IDS])


def score_args(data: Path, out: Path, *more: str) -> list[str]:
    return ["score", str(data), "-m", METRICS, *JUDGE_ARGS, "-o", str(out), "-q", *more]


def comparable(out: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """samples.jsonl without the judge's timings, and summary.json's statistics and judge identity."""
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    for row in rows:
        for detail in row["details"].values():
            detail.pop("judge", None)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    judge = {k: v for k, v in summary["judge"].items() if k != "usage"}
    return rows, {"metrics": summary["metrics"], "settings": summary["settings"], "n": summary["n_samples"],
                  "judge": judge}


def calls(out: Path) -> tuple[int, int]:
    """(model calls, cache hits) summed over the judge metrics, from summary.json."""
    usage = json.loads((out / "summary.json").read_text(encoding="utf-8"))["judge"]["usage"].values()
    return sum(u["calls"] for u in usage), sum(u["cache_hits"] for u in usage)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory, judged: Path, plugin: Path) -> tuple[Path, int]:
    """The single-process run of the same input and settings, from an empty cache: what --ray must equal. The
    script, not CliRunner: the gate plugin is not importable in this process."""
    root = tmp_path_factory.mktemp("single")
    done = run(score_args(judged, root / "out"),
               env=dict(os.environ, PYTHONPATH=plugin_path(plugin), LOCALEVAL_CACHE=str(root / "cache.sqlite")))
    assert done.returncode == 0, done.stderr
    made, _ = calls(root / "out")
    stored = cached_calls(root / "cache.sqlite")
    # Every call of this input is stored (none is cut off), so a resumed run can find each of them.
    assert stored == made > 0
    return root / "out", made


@pytest.mark.ray
@pytest.mark.model(TINY, "all-minilm-l6-v2", "use-multilingual-v3")
def test_cluster_run_with_a_worker_killed_mid_run_writes_the_single_process_files(
        cluster: RayCluster, reference: tuple[Path, int], judged: Path, tmp_path: Path) -> None:
    """SIGKILL to an actor's worker process, as the kernel's OOM killer or a lost machine would end it: Ray
    restarts the actor, its chunk is scored again, and the files, the judge's call counts and the driver's
    cache equal the single-process run's, with both nodes scoring. One run for both checks: usage is counted
    from the results that come back, and a restarted actor starts from the run's snapshot, so the kill
    changes none of it.

    The gate holds each actor on its first chunk, past loading its models and its judge call: one is killed
    there, and the gate opens once its restart holds that chunk again. Without it the actor that loaded
    first could score every chunk before the other had loaded (it did once in CI)."""
    cache, out, gate = tmp_path / "cache.sqlite", tmp_path / "out", cluster.gate  # type: ignore[attr-defined]
    (gate / "open").unlink()
    driver = subprocess.Popen([LOCALEVAL, *score_args(judged, out), "--ray", cluster.address, "--ray-actors", "2"],
                              env=driver_env(cluster, cache), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        try:
            os.kill(min(waiting_at(gate, driver, 2)), signal.SIGKILL)
            waiting_at(gate, driver, 3)  # the restarted actor, a process of its own
        finally:
            (gate / "open").touch()
            for waited in gate.iterdir():
                if waited.name.isdigit():
                    waited.unlink()
        _, stderr = driver.communicate(timeout=600)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 0, stderr
    assert comparable(out) == comparable(reference[0])
    assert calls(out) == calls(reference[0])
    ray_info = json.loads((out / "summary.json").read_text(encoding="utf-8"))["ray"]
    assert len(ray_info["nodes"]) == 2 and sum(ray_info["nodes"].values()) == len(JUDGED_IDS), ray_info  # both scored
    assert ray_info["actors"] == 2 and ray_info["lost"] == 0
    assert cached_calls(cache) == reference[1]  # the actors' entries reached the driver's cache


@pytest.mark.ray
@pytest.mark.model(TINY, "all-minilm-l6-v2", "use-multilingual-v3")
def test_killed_driver_resumes_without_repeating_a_judge_call(cluster: RayCluster, reference: tuple[Path, int],
                                                              judged: Path, tmp_path: Path) -> None:
    cache, out = tmp_path / "cache.sqlite", tmp_path / "out"
    env = driver_env(cluster, cache)
    driver = subprocess.Popen([LOCALEVAL, *score_args(judged, out), "--ray", cluster.address, "--ray-actors", "2"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        at_kill = wait_for_entries(cache, driver, at_least=reference[1] // 3)
        driver.send_signal(signal.SIGKILL)
        driver.wait(timeout=30)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert 0 < at_kill < reference[1] and not (out / "summary.json").exists()
    done = run([*score_args(judged, out), "--ray", cluster.address, "--ray-actors", "2"], env=env)
    assert done.returncode == 0, done.stderr
    assert comparable(out) == comparable(reference[0])
    shipped = json.loads((out / "summary.json").read_text(encoding="utf-8"))["ray"]["cache"]["entries_shipped"]
    made, hits = calls(out)
    # Entries the restarted run found in the driver's cache (all that the killed run's actors had sent back)
    # plus the calls it made equal the calls of an uninterrupted run: no finished call was made twice.
    assert shipped >= at_kill and made + shipped == reference[1]
    assert hits >= shipped


def waiting_at(gate: Path, driver: subprocess.Popen[str], count: int, timeout: float = 400) -> set[int]:
    """The ids of the processes that have waited at the closed gate, once there are `count` of them."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.poll() is not None:
            pytest.fail(f"the driver ended with the gate closed: {driver.stderr.read() if driver.stderr else ''}")
        held = {int(f.name) for f in gate.iterdir() if f.name.isdigit()}
        if len(held) >= count:
            return held
        time.sleep(0.1)
    pytest.fail(f"{count} processes never waited at the gate")


def wait_for_entries(cache: Path, driver: subprocess.Popen[str], at_least: int, timeout: float = 400) -> int:
    """Judge entries in the driver's cache once there are at least `at_least` (the run still going)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if driver.poll() is not None:
            pytest.fail(f"the driver ended before it could be killed: {driver.stderr.read() if driver.stderr else ''}")
        count = cached_calls(cache)
        if count >= at_least:
            return count
        time.sleep(0.2)
    pytest.fail("no judge entries reached the driver's cache")


@pytest.mark.ray
def test_a_sample_that_kills_its_actor_is_retried_then_skipped_with_the_reason(cluster: RayCluster,
                                                                               tmp_path: Path) -> None:
    out = tmp_path / "out"
    done = run(["score", str(EXAMPLE), "-m", "mrr,crash_test", "-o", str(out), "-q", "--ray", cluster.address,
                "--ray-actors", "2"], env=driver_env(cluster, tmp_path / "cache.sqlite"))
    assert done.returncode == 0, done.stderr
    rows = {row["id"]: row for row in map(json.loads, (out / "samples.jsonl").read_text(encoding="utf-8").splitlines())}
    assert list(rows) == [f"q{i}" for i in range(1, 9)]  # input order, nothing dropped
    assert rows["q3"]["metrics"] == {} and set(rows["q3"]["skipped"]) == {"mrr", "crash_test"}
    assert "its Ray actor died on every attempt" in rows["q3"]["skipped"]["crash_test"]
    assert rows["q5"]["skipped"]["crash_test"].endswith("ZeroDivisionError: planted")
    assert "mrr" in rows["q5"]["metrics"]  # the bug of one metric costs only that metric's value there
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["metrics"]["crash_test"]["n"] == 6 and summary["ray"]["lost"] == 1


def scored_alone_and_on(cluster: RayCluster, tmp_path: Path, args: list[str], actors: int, *,
                        in_this_process: bool) -> None:
    """`args` scored in one process into tmp_path/single and on the cluster into tmp_path/ray, each with a
    cache of its own: the two give the same files. `in_this_process`: the single run through CliRunner, not
    the script (not for --criteria: a criteria file registers its metric for the rest of the process)."""
    single_args, cache = [*args, "-o", str(tmp_path / "single")], str(tmp_path / "one.sqlite")
    if in_this_process:
        alone = here(single_args, env={"LOCALEVAL_CACHE": cache})
        assert alone.exit_code == 0, alone.stderr
    else:
        single = run(single_args, env=dict(os.environ, LOCALEVAL_CACHE=cache))
        assert single.returncode == 0, single.stderr
    done = run([*args, "-o", str(tmp_path / "ray"), "--ray", cluster.address, "--ray-actors", str(actors)],
               env=driver_env(cluster, tmp_path / "two.sqlite"))
    assert done.returncode == 0, done.stderr
    assert comparable(tmp_path / "ray") == comparable(tmp_path / "single")


@pytest.mark.ray
@pytest.mark.model("all-minilm-l6-v2")
def test_cluster_scores_with_a_trained_classifier_as_a_single_process_does(cluster: RayCluster, tmp_path: Path) -> None:
    from tests.test_classifier import samples, trained_classifier

    # Only the judgements these two metrics ask for: a third (answer_relevance) would be trained, saved and
    # hashed by every run for nothing.
    classifier = trained_classifier(tmp_path, "context_relevance", "answer_faithfulness")
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in samples(8)), encoding="utf-8")
    args = ["score", str(data), "-m", "passage_relevance,faithfulness", "--classifier", str(classifier), "-q"]
    scored_alone_and_on(cluster, tmp_path, args, actors=2, in_this_process=True)
    usage = json.loads((tmp_path / "ray" / "summary.json").read_text())["judge"]["usage"]
    assert all(u["classified"] == u["calls"] > 0 for u in usage.values())


@pytest.mark.ray
@pytest.mark.model(TINY)
def test_cluster_scores_criteria_as_a_single_process_does_and_checks_their_levels_on_its_nodes(
        cluster: RayCluster, tmp_path: Path) -> None:
    """A criteria file reaches the actors (each registers it as the driver did), and the levels of a levels
    criterion are checked against the judge file on every node, before any actor starts."""
    year = tmp_path / "year.toml"
    year.write_text('name = "year"\ncriterion = "The answer names a year."\nreads = ["question", "answer"]\n',
                    encoding="utf-8")
    ten = tmp_path / "ten.toml"
    ten.write_text('name = "ten"\ncriterion = "The answer is short."\nreads = ["answer"]\nscale = "levels"\n'
                   '[levels]\n1 = "long"\n2 = "medium"\n10 = "short"\n', encoding="utf-8")
    # One sample: what is checked is that the actor scores the criterion as the driver's process does.
    data = write_jsonl(tmp_path / "in.jsonl", [{"id": "a", "question": "When was the tower built?", "answer": "In 1889."}])
    scored_alone_and_on(cluster, tmp_path, ["score", str(data), "--criteria", str(year), "--judge", TINY, "--threads",
                                            "1", "-q"], actors=1, in_this_process=False)
    refused = run(["score", str(data), "--criteria", str(ten), "--judge", TINY, "-q", "-o", str(tmp_path / "ten"),
                   "--ray", cluster.address], env=driver_env(cluster, tmp_path / "three.sqlite"))
    assert refused.returncode == 2 and not (tmp_path / "ten").exists()
    (line,) = refused.stderr.strip().splitlines()
    assert line.startswith("error: node ") and line.endswith(
        f"{ten}: field 'levels.10': '10' is not a single token of the judge {TINY}; number the levels with single "
        "digits (0-9)"), line


# Last in the module: the node it adds and stops stays in the cluster's node list, and a run after it would
# be sent to that node.
@pytest.mark.ray
@pytest.mark.model(TINY, "all-minilm-l6-v2")
def test_a_node_without_the_model_is_named(cluster: RayCluster, judged: Path, tmp_path: Path) -> None:
    empty = tmp_path / "no-models"
    empty.mkdir()
    node = cluster.add_node(cpus=1, LOCALEVAL_MODELS=str(empty), PYTHONPATH=cluster.plugin_path)  # type: ignore[attr-defined]
    try:
        node_id = cluster.node_id(node)
        done = run([*score_args(judged, tmp_path / "out"), "--ray", cluster.address],
                   env=driver_env(cluster, tmp_path / "cache.sqlite"))
    finally:
        cluster.stop_node(node)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"error: node {node_id[:8]} at ") and f"{empty}/{TINY}.gguf is missing" in line, line
    assert not (tmp_path / "out").exists()


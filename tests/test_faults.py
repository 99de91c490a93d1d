"""Faults of the places sites run localeval, each against the real product and bounded in time:

- the judge on a real llama.cpp server (llama-cpp-python's, the tiny judge) behind a proxy that fails on
  request (tests/fault_proxy.py): transient faults are retried and change nothing; a server that keeps
  failing stops the run with one line, and the same command resumes without repeating an answered call;
  a server killed and restarted mid-run is waited for;
- SIGINT and SIGTERM mid-run: exit 130 / 143, one line saying how far the run got, no temp file, and a
  resume that repeats no judge call; a second run into the same output folder is refused meanwhile;
- a damaged, truncated or foreign judge cache: one line naming it, never a wrong cached answer, and
  --move-damaged-cache to move it aside;
- a full disk (a small tmpfs mounted here) under the cache and under the results: one line, the previous
  results intact, the cache readable, and a resume once there is room.

Ray's lost worker is in test_ray.py, beside the cluster it needs. Every test runs a model, so all are
marked `model` (they run under the model lock).
"""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any, Iterator

import pytest
from click.testing import CliRunner

from localeval.cli import cli
from localeval.judge import http_client
from localeval.judge.llama_server import free_port, serving, server_command
from localeval.models import find

from . import fault_proxy
from .conftest import cached_calls, write_jsonl
from .fault_proxy import FaultProxy
from .test_resume import RECORDS as CAPITALS, results, usage

TINY = "smollm2-135m-instruct-q4_1"
pytestmark = pytest.mark.model(TINY)
N_CTX = 2048
RECORDS = [
    {"id": "eiffel", "question": "When was the Eiffel Tower completed?", "answer": "The Eiffel Tower was completed in 1889.",
     "contexts": ["The Eiffel Tower is in Paris. It was completed in 1889 for the World's Fair."]},
    {"id": "curie", "question": "Where was Marie Curie born?", "answer": "She was born in Warsaw. She won two Nobel Prizes.",
     "contexts": ["Marie Curie was born in Warsaw in 1867. She won Nobel Prizes in physics and chemistry."]},
    {"id": "water", "question": "At what temperature does water boil?", "answer": "Water boils at 50 degrees.",
     "contexts": ["Water boils at 100 degrees Celsius at sea level."]},
]


def one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def leftovers(folder: Path) -> list[str]:
    """Temp, backup and journal files a run left in `folder`."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(".")) if folder.exists() else []


# ---- the judge on a server ---------------------------------------------------------------------------------

def server_args(url: str, data: Path, out: Path, cache: Path, *extra: str, parallel: int = 2) -> list[str]:
    # Verdicts only (the answers' own sentences as statements, no JSON generation): 7 chat completions, 4
    # yes/no and 3 ratings. The HTTP client retries and stops alike whatever a request asks (http_client.py);
    # statements generated through a server and a resume across its rounds are in test_server_judge.py.
    return ["score", str(data), "-m", "faithfulness,answer_relevance_rating", "--faithfulness-statements",
            "sentences", "--judge-url", url, "--parallel", str(parallel), "--n-ctx", str(N_CTX), "--cache", str(cache),
            "-o", str(out), "-q", *extra]


def invoke(args: list[str]) -> Any:
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def tiny_server(port: int, log: Any) -> Any:
    return serving(server_command(find(TINY).path(), port, n_ctx=N_CTX, threads=1), port, log=log)


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    log = (tmp_path_factory.mktemp("upstream") / "server.log").open("w")
    with log, tiny_server(free_port(), log) as (url, _):
        yield url[: -len("/v1")]


@pytest.fixture
def proxy(upstream: str) -> Iterator[FaultProxy]:
    with FaultProxy(upstream) as running:
        yield running


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_jsonl(tmp_path_factory.mktemp("data") / "data.jsonl", RECORDS)


@pytest.fixture(scope="module")
def reference(upstream: str, data: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Any], int]:
    """An uninterrupted run through a proxy that injects nothing: its results and its chat completions."""
    folder = tmp_path_factory.mktemp("reference")
    with FaultProxy(upstream) as clean:
        done = invoke(server_args(clean.url, data, folder / "out", folder / "c.sqlite"))
        assert done.exit_code == 0, done.output
        return results(folder / "out"), len(clean.answered)


@pytest.fixture
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http_client, "BACKOFF_SECONDS", 0.01)


# Three batches of faults, each met by one request in a row (6 retries allow 4): an overloaded server, broken
# answers, and an answer slower than --judge-timeout.
OVERLOADED = (fault_proxy.status(429), fault_proxy.status(429, "1"), fault_proxy.status(503),
              fault_proxy.status(503, "1"))
BROKEN = (fault_proxy.status(500), fault_proxy.DROP, fault_proxy.TRUNCATE, fault_proxy.GARBAGE)
# No answer for 24 s, then a dropped connection: with --judge-timeout 12 the client has asked again by then (a
# slow VM's real answers through the proxy fit in 12 s).
SLOW = (fault_proxy.delay(24),)


def test_transient_server_faults_are_retried_and_change_nothing(proxy: FaultProxy, data: Path, tmp_path: Path,
                                                                reference: tuple[list[Any], int],
                                                                quick_retries: None) -> None:
    """One run meets the three batches, a batch planned once the one before is used up and a request answered;
    --parallel 1, so that each batch meets one request and each Retry-After is that request's own wait."""
    proxy.plan(*OVERLOADED, then=[BROKEN, SLOW])
    done = invoke(server_args(proxy.url, data, tmp_path / "out", tmp_path / "c.sqlite", "--judge-timeout", "12",
                              parallel=1))
    assert done.exit_code == 0, done.output
    assert proxy.faulted == [*OVERLOADED, *BROKEN, *SLOW]  # every planned fault met a request
    assert results(tmp_path / "out") == reference[0]
    assert len(proxy.answered) == len(set(proxy.answered)) == reference[1]  # no answered call asked twice
    for i, (at, key, fault) in enumerate(proxy.asked):
        if fault is None:
            continue
        again = [when - at for when, asks, _ in proxy.asked[i + 1:] if asks == key]
        assert again, f"the request that met {fault} was not asked again"
        if fault.kind == "delay":
            assert again[0] < fault.seconds  # the client stopped waiting at --judge-timeout and asked again
        else:
            assert again[0] >= float(fault.headers.get("Retry-After", 0))  # Retry-After was honoured


# What stops a run, each in one run: an error status, a 200 that is not JSON, a connection dropped (then "stopped
# answering").
STOPPING = (fault_proxy.status(500), fault_proxy.GARBAGE, fault_proxy.DROP)


def test_a_server_that_keeps_failing_stops_the_run_and_the_same_command_resumes(
        proxy: FaultProxy, data: Path, tmp_path: Path, reference: tuple[list[Any], int], quick_retries: None) -> None:
    """The first fault fails every request after four answers; the same command then meets the second, then the
    third, from its start (its cached calls are not asked); then, with the server sound, it ends the run."""
    cache, out = tmp_path / "c.sqlite", tmp_path / "out"
    out.mkdir()
    for stage, fault in enumerate(STOPPING):
        since, answered = len(proxy.asked), list(proxy.answered)
        if stage == 0:  # every request fails once four are answered
            proxy.after_answer = lambda n: proxy.plan(always=STOPPING[0]) if n == 4 else None
        else:  # every request fails from the start
            proxy.after_answer = None
            proxy.plan(always=fault)
        failed = invoke(server_args(proxy.url, data, out, cache))
        line = one_error_line(failed.stderr)
        what = "stopped answering" if fault.kind == "drop" else "failed"
        assert failed.exit_code == 2 and line.startswith(f"error: judge server {proxy.url} {what} ("), line
        assert line.endswith("the same command resumes without repeating them")
        assert str(fault.status) in line if fault.kind == "status" else True
        assert list(out.iterdir()) == []  # no result, no temp file
        assert cached_calls(cache) == len(proxy.answered)  # every answer that arrived is cached
        assert not {asks for _, asks, _ in proxy.asked[since:]} & set(answered)  # nor asked again when resumed
    first = list(proxy.answered)
    assert len(first) >= 4

    proxy.after_answer = None
    proxy.clear()
    resumed = invoke(server_args(proxy.url, data, out, cache))
    assert resumed.exit_code == 0, resumed.output
    assert results(out) == reference[0]
    again = proxy.answered[len(first):]
    assert not set(first) & set(again)  # nothing answered before was asked again
    assert len(first) + len(again) == reference[1]


def test_a_server_killed_and_restarted_mid_run_is_waited_for(data: Path, tmp_path: Path,
                                                             reference: tuple[list[Any], int]) -> None:
    """The default retries (about 30 s in all) outlast a restart of the tiny judge's server on its port."""
    port = free_port()
    restarted = threading.Event()
    with ExitStack() as stack:
        log = stack.enter_context((tmp_path / "server.log").open("w"))
        _, first = stack.enter_context(tiny_server(port, log))
        proxy = stack.enter_context(FaultProxy(f"http://127.0.0.1:{port}"))

        def restart() -> None:
            first.kill()
            first.wait()
            stack.enter_context(tiny_server(port, log))
            restarted.set()

        proxy.after_answer = lambda n: threading.Thread(target=restart, daemon=True).start() if n == 3 else None
        done = invoke(server_args(proxy.url, data, tmp_path / "out", tmp_path / "c.sqlite"))
        assert done.exit_code == 0, done.output
        assert restarted.is_set()
        assert results(tmp_path / "out") == reference[0]
        assert len(proxy.answered) == len(set(proxy.answered)) == reference[1]


# ---- Ctrl-C, SIGTERM and a second run into the same folder -------------------------------------------------

def local_command(data: Path, out: Path, cache: Path) -> list[str]:
    # --parallel 2: windows of 4 samples, so a signal finds some windows done and others not started.
    return [sys.executable, "-m", "localeval", "score", str(data), "-o", str(out), "-m", "faithfulness,context_recall",
            "--judge", TINY, "--threads", "1", "--n-ctx", "2048", "--parallel", "2", "--cache", str(cache), "-q"]


@pytest.fixture(scope="module")
def capitals(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], int]:
    """The input, and an uninterrupted run's results and judge calls."""
    folder = tmp_path_factory.mktemp("capitals")
    data = write_jsonl(folder / "data.jsonl", CAPITALS)
    done = subprocess.run(local_command(data, folder / "out", folder / "c.sqlite"), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    calls, _ = usage(folder / "out")
    assert cached_calls(folder / "c.sqlite") == calls
    return data, results(folder / "out"), calls


@pytest.mark.cpu_numerics
def test_sigint_then_sigterm_mid_run_stop_cleanly_and_the_same_command_resumes(capitals: tuple[Path, list[Any], int],
                                                                              tmp_path: Path) -> None:
    """SIGINT stops the run a third of the way through its judge calls, SIGTERM stops the same command halfway
    through the rest, and the same command then ends the run without repeating a call."""
    data, whole, whole_calls = capitals
    out, cache = tmp_path / "out", tmp_path / "cache" / "judge.sqlite"
    previous = tmp_path / "previous.jsonl"
    out.mkdir()
    (out / "samples.jsonl").write_text("earlier results\n")  # what an earlier run left: kept as it was
    shutil.copy(out / "samples.jsonl", previous)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    at_stop = 0
    for leg, (signum, code, word) in enumerate([(signal.SIGINT, 130, "interrupted"),
                                                  (signal.SIGTERM, 143, "terminated")], 1):
        run = subprocess.Popen(local_command(data, out, cache), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=env)
        try:
            deadline = time.monotonic() + 300
            # the first stop after a third of the calls; the second halfway through what the first left (a stop
            # lands after the decode in flight, so it may overshoot its mark)
            mark = whole_calls // 3 if leg == 1 else at_stop + max(1, (whole_calls - at_stop) // 2)
            while cached_calls(cache) < mark and run.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert run.poll() is None, "the run ended before the signal"

            if leg == 1:  # meanwhile a second run into the same folder is refused at once, with one line
                second = subprocess.run([sys.executable, "-m", "localeval", "score", str(data), "-o", str(out), "-m",
                                         "token_f1", "-q"], capture_output=True, text=True, timeout=120)
                assert second.returncode == 2
                assert one_error_line(second.stderr) == (f"error: output folder {out} is in use by another localeval "
                                                         "run; wait until it ends, or write into another folder")

            run.send_signal(signum)
            _, stderr = run.communicate(timeout=120)
        finally:
            if run.poll() is None:
                run.kill()
        # The cache was closed: no -wal, no -shm (checked before this test's read-only look, which makes them).
        assert sorted(p.name for p in cache.parent.iterdir()) == ["judge.sqlite"]
        stopped = cached_calls(cache)
        line = one_error_line(stderr)
        assert run.returncode == code, stderr
        done, total = line.split(": ", 1)[1].split(" samples", 1)[0].split(" of ")
        assert line == (f"{word}: {done} of {total} samples judged and cached; the same command resumes without "
                        "repeating them") and int(total) == len(CAPITALS) and 0 <= int(done) < len(CAPITALS)
        assert at_stop < stopped < whole_calls
        at_stop = stopped
        assert leftovers(out) == [] and sorted(p.name for p in out.iterdir()) == ["samples.jsonl"]
        assert (out / "samples.jsonl").read_text() == previous.read_text()

    resumed = subprocess.run(local_command(data, out, cache), capture_output=True, text=True, env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    calls, _ = usage(out)
    assert calls + at_stop == whole_calls  # no judge call made twice
    assert results(out) == whole


# ---- a damaged, truncated or foreign judge cache -----------------------------------------------------------

def cli_score(data: Path, out: Path, cache: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`localeval score` as a user runs it: its own process, so warnings and errors are printed as main() does."""
    return subprocess.run([sys.executable, "-m", "localeval", "score", str(data), "-o", str(out), "-m", "faithfulness",
                           "--judge", TINY, "--threads", "1", "--n-ctx", "2048", "--parallel", "2", "--cache", str(cache),
                           "-q", *extra], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def filled_cache(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[Any]]:
    """A judge cache a run filled (out of WAL mode, so the file alone holds it), its input, and the results."""
    folder = tmp_path_factory.mktemp("filled")
    data = write_jsonl(folder / "data.jsonl", CAPITALS[:4])
    done = cli_score(data, folder / "out", folder / "c.sqlite")
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(folder / "c.sqlite") as db:
        db.execute("PRAGMA journal_mode=DELETE")
    return data, folder / "c.sqlite", results(folder / "out")


def flip_a_stored_probability(cache: Path) -> None:
    """Change one digit of a stored answer in the file's bytes, as a bad disk or copy would: SQLite reads
    the page back without complaint."""
    with sqlite3.connect(cache) as db:
        value = db.execute("SELECT value FROM judge_calls WHERE value LIKE '%0.%' LIMIT 1").fetchone()[0]
    raw = cache.read_bytes()
    at = raw.index(value.encode())
    digit = raw.index(b"0.", at) + 2
    flipped = raw[:digit] + (b"1" if raw[digit:digit + 1] != b"1" else b"2") + raw[digit + 1:]
    cache.write_bytes(flipped)


def truncate(cache: Path) -> None:
    raw = cache.read_bytes()
    cache.write_bytes(raw[: len(raw) // 2])


def scramble_a_page(cache: Path) -> None:
    raw = bytearray(cache.read_bytes())
    page = 4096  # the second page: the table's b-tree
    raw[page:page + 64] = bytes(range(64))
    cache.write_bytes(bytes(raw))


@pytest.mark.parametrize("damage", [flip_a_stored_probability, truncate, scramble_a_page], ids=lambda f: f.__name__)
def test_a_damaged_cache_is_named_in_one_line_then_moved_aside(filled_cache: tuple[Path, Path, list[Any]],
                                                               tmp_path: Path, damage: Any) -> None:
    data, source, whole = filled_cache
    cache = tmp_path / "c.sqlite"
    shutil.copy(source, cache)
    damage(cache)

    refused = cli_score(data, tmp_path / "out", cache)
    line = one_error_line(refused.stderr)
    assert refused.returncode == 2 and line.startswith(f"error: judge cache {cache} is damaged (")
    assert line.endswith("the same command with --move-damaged-cache moves it aside and starts a new cache (its calls "
                         "are made again), or point --cache at another file")
    assert not (tmp_path / "out").exists()  # no result from a cache that cannot be trusted

    moved = cli_score(data, tmp_path / "out", cache, "--move-damaged-cache")
    assert moved.returncode == 0, moved.stderr
    aside = [p for p in tmp_path.iterdir() if p.name.startswith("c.sqlite.damaged-") and "-wal" not in p.name
             and "-shm" not in p.name]
    assert len(aside) == 1
    assert one_error_line(moved.stderr).startswith(f"warning: judge cache {cache} was damaged (")
    assert moved.stderr.rstrip().endswith(f"moved to {aside[0]}, a new cache starts")
    assert results(tmp_path / "out") == whole


def test_a_sound_cache_is_not_moved_and_a_foreign_database_is_refused_untouched(
        filled_cache: tuple[Path, Path, list[Any]], tmp_path: Path) -> None:
    data, source, whole = filled_cache
    cache = tmp_path / "c.sqlite"
    shutil.copy(source, cache)
    sound = cli_score(data, tmp_path / "out", cache, "--move-damaged-cache")
    assert sound.returncode == 0 and sound.stderr == "" and results(tmp_path / "out") == whole
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("c.sqlite")) == ["c.sqlite"]

    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as db:
        db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        db.execute("INSERT INTO invoices VALUES (1, 9.5)")
    before = foreign.read_bytes()
    for extra in ((), ("--move-damaged-cache",)):
        refused = cli_score(data, tmp_path / "other", foreign, *extra)
        assert refused.returncode == 2
        assert one_error_line(refused.stderr) == (f"error: judge cache {foreign} is a SQLite database of something else "
                                                  "(tables: invoices); point --cache at another file")
    assert foreign.read_bytes() == before


# ---- a full disk ---------------------------------------------------------------------------------------------

@contextmanager
def small_disk(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `folder` (root and CAP_SYS_ADMIN: CI runs as root, as this machine does)."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True,
                             text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.strip()}); the full-disk tests need root")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def fill(disk: Path, leave: int) -> Path:
    """Take all of `disk`'s free space but `leave` bytes."""
    filler = disk / "filler"
    free = shutil.disk_usage(disk).free
    with filler.open("wb") as handle:
        handle.write(b"\0" * max(0, free - leave))
    return filler


def test_a_full_disk_under_the_results_keeps_the_previous_ones(capitals: tuple[Path, list[Any], int],
                                                               tmp_path: Path) -> None:
    data = capitals[0]
    with small_disk(tmp_path / "disk", "4m") as disk:
        out = disk / "out"
        first = CliRunner().invoke(cli, ["score", str(data), "-o", str(out), "-m", "token_f1,exact_match", "-q"])
        assert first.exit_code == 0, first.output
        before = {p.name: p.read_bytes() for p in out.iterdir()}
        filler = fill(disk, 2048)
        failed = CliRunner().invoke(cli, ["score", str(data), "-o", str(out), "-m", "token_f1,exact_match,answer_rouge_l",
                                          "-q"])
        line = one_error_line(failed.stderr)
        assert failed.exit_code == 2 and line.startswith(f"error: cannot write {out}/") and "No space left" in line
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the previous results, as they were
        filler.unlink()
        again = CliRunner().invoke(cli, ["score", str(data), "-o", str(out), "-m", "token_f1,exact_match,answer_rouge_l",
                                         "-q"])
        assert again.exit_code == 0, again.output
        assert leftovers(out) == []


@pytest.mark.cpu_numerics
def test_a_full_disk_under_the_cache_stops_the_run_and_the_cache_resumes_it(capitals: tuple[Path, list[Any], int],
                                                                            tmp_path: Path) -> None:
    data, whole, whole_calls = capitals
    with small_disk(tmp_path / "disk", "8m") as disk:
        cache = disk / "judge.sqlite"
        filler = fill(disk, 96 * 1024)
        command = local_command(data, tmp_path / "out", cache)
        failed = subprocess.run(command, capture_output=True, text=True, timeout=600)
        line = one_error_line(failed.stderr)
        assert failed.returncode == 2
        assert line.startswith(f"error: judge cache {cache}: the disk is full (") and line.endswith(
            "every call answered so far is kept: free some space and the same command resumes")
        stored = cached_calls(cache)  # the cache is still readable
        assert 0 < stored < whole_calls
        assert not (tmp_path / "out").exists()
        filler.unlink()
        resumed = subprocess.run(command, capture_output=True, text=True, timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        calls, _ = usage(tmp_path / "out")
        assert calls + stored == whole_calls
        assert results(tmp_path / "out") == whole

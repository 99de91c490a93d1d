"""kill -9 in the middle of a judge run, then run again: the same results as an uninterrupted run, no judge
call made twice, and no temp file left behind. Real processes, the real tiny judge (SmolLM2-135M), a real
SIGKILL; the judge cache (SQLite, one commit per call) is what makes the resume free.

Loads a GGUF model: marked `model`, so it runs under the model lock (tests/conftest.py takes it).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from .conftest import cached_calls, write_jsonl

TINY = "smollm2-135m-instruct-q4_1"
pytestmark = pytest.mark.model(TINY)
METRICS = "faithfulness,context_recall"
PAIRS = [("Paris", "France"), ("Berlin", "Germany"), ("Madrid", "Spain"), ("Rome", "Italy"), ("Lisbon", "Portugal"),
         ("Vienna", "Austria"), ("Athens", "Greece"), ("Oslo", "Norway")]
RECORDS = [{"id": f"s{i}", "question": f"What is the capital of {country}?",
            "answer": f"The capital of {country} is {city}. It is a large city.",
            "contexts": [f"{city} is the capital and largest city of {country}.", f"{country} is a country in Europe."],
            "reference": f"{city} is the capital of {country}."} for i, (city, country) in enumerate(PAIRS)]


def command(data: Path, out: Path, cache: Path) -> list[str]:
    # --parallel 4: one window of 8 samples, so every judge call of the run is in one round;
    # each call is cached as it finishes, so the kill finds part of the round cached.
    return [sys.executable, "-m", "localeval", "score", str(data), "-o", str(out), "-m", METRICS, "--judge", TINY,
            "--threads", "1", "--n-ctx", "2048", "--parallel", "4", "--cache", str(cache), "-q"]


def usage(out: Path) -> tuple[int, int]:
    """(model calls, cache hits) of the run, summed over the judge metrics (summary.json)."""
    per_metric = json.loads((out / "summary.json").read_text(encoding="utf-8"))["judge"]["usage"].values()
    return sum(u["calls"] for u in per_metric), sum(u["cache_hits"] for u in per_metric)


def results(out: Path) -> list[tuple[Any, ...]]:
    """What a user reads per sample: the values and the skip reasons (details hold timings, which vary)."""
    rows = [json.loads(line) for line in (out / "samples.jsonl").read_text(encoding="utf-8").splitlines()]
    return [(row["id"], row["metrics"], row["skipped"]) for row in rows]


@pytest.mark.cpu_numerics
def test_kill_9_mid_run_then_resume(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "data.jsonl", RECORDS)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}

    # An uninterrupted run, for reference.
    whole_out, whole_cache = tmp_path / "whole", tmp_path / "whole.sqlite"
    done = subprocess.run(command(data, whole_out, whole_cache), capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    whole_calls, whole_hits = usage(whole_out)
    assert cached_calls(whole_cache) == whole_calls, "a judge call failed (failed calls are not cached); the " \
                                                     "accounting below assumes none did"

    # The same run, killed with SIGKILL once about a third of its judge calls are cached.
    out, cache = tmp_path / "out", tmp_path / "judge.sqlite"
    process = subprocess.Popen(command(data, out, cache), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    target = max(2, whole_calls // 3)
    deadline = time.monotonic() + 600
    while cached_calls(cache) < target and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "the run finished before it could be killed"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    at_kill = cached_calls(cache)
    assert process.returncode == -signal.SIGKILL and 0 < at_kill < whole_calls
    assert not (out / "samples.jsonl").exists()  # no result appears half-written...
    assert list(out.glob(f".samples.jsonl.{process.pid}.tmp"))  # ...only the dead run's temp file

    # Resume: the calls cached before the kill are answered from the cache, none is repeated.
    resumed = subprocess.run(command(data, out, cache), capture_output=True, text=True, env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    calls, hits = usage(out)
    assert calls + at_kill == whole_calls, (calls, at_kill, whole_calls)
    assert hits == whole_hits + at_kill
    assert results(out) == results(whole_out)
    assert sorted(p.name for p in out.iterdir()) == ["samples.jsonl", "summary.csv", "summary.json"]

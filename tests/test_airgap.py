"""The air-gap promise, tested: `localeval score` with the judge, the embedder and classical metrics runs
inside a network namespace that has no interface but a downed loopback (`unshare -n`)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import EXAMPLE, write_jsonl

LOCALEVAL = Path(sys.executable).with_name("localeval")

pytestmark = pytest.mark.model("smollm2-135m-instruct-q4_1", "all-minilm-l6-v2")


def _can_unshare() -> str | None:
    if shutil.which("unshare") is None:
        return "the unshare command is not installed"
    probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
    return None if probe.returncode == 0 else f"this sandbox forbids new network namespaces: {probe.stderr.strip()}"


def test_score_runs_with_no_network(tmp_path: Path) -> None:
    reason = _can_unshare()
    if reason:
        pytest.skip(reason)
    no_net = subprocess.run(["unshare", "-n", sys.executable, "-c",
                             "import socket; socket.create_connection(('151.101.0.223', 443), timeout=3)"],
                            capture_output=True, text=True)
    assert no_net.returncode != 0 and "unreachable" in no_net.stderr  # the namespace really has no route out

    records = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()][:2]
    data = write_jsonl(tmp_path / "two.jsonl", records)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}  # no offline switches
    done = subprocess.run(
        ["unshare", "-n", str(LOCALEVAL), "score", str(data), "-o", str(tmp_path / "out"), "--cache",
         str(tmp_path / "judge.sqlite"), "--judge", "smollm2-135m-instruct-q4_1", "--threads", "1",
         "--n-questions", "1", "-m", "classical,faithfulness,answer_relevance"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["metrics"]["faithfulness"]["n"] == 2
    assert summary["metrics"]["answer_relevance"]["n"] == 2
    assert summary["metrics"]["mrr"]["n"] == 2

"""Shared fixtures: the environment is offline for every test, as it is for users in an air gap."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any, Iterable

import pytest

EXAMPLE = Path(__file__).resolve().parent.parent / "localeval" / "resources" / "examples" / "rag_demo.jsonl"


@pytest.fixture(autouse=True)
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


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
    try:
        with sqlite3.connect(f"file:{cache}?mode=ro", uri=True, timeout=30) as db:
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
    """The real default embedder (MiniLM from models/), loaded once for the whole session."""
    from localeval.embed import load_embedder

    return load_embedder()

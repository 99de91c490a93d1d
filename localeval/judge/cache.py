"""Persistent cache of judge calls, so a re-run (or a resumed, killed run) costs no model time.

One SQLite table in WAL mode. Every write is committed at once (autocommit), so a run killed mid-way
loses at most the call in flight. The key is a sha256 over explicit strings — model hash, prompt name,
version and file hash, the rendered prompt, call kind, schema/options, decoding settings and
CACHE_FORMAT_VERSION — so any change that could change an answer misses the cache instead of
returning a stale value. The schema is versioned with `PRAGMA user_version` and only migrated forward.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

from ..errors import JudgeError, OptionError, OutputError
from ..settings import CACHE_ENV, current

# Bump when the meaning of a stored value changes (e.g. how probabilities are normalised): old entries
# then simply stop matching.
CACHE_FORMAT_VERSION = 1

# Forward-only migrations: MIGRATIONS[i] takes the database from user_version i to i + 1.
MIGRATIONS: list[str] = [
    """
    CREATE TABLE judge_calls (
        key TEXT PRIMARY KEY,
        kind TEXT NOT NULL,
        model_sha256 TEXT NOT NULL,
        prompt TEXT NOT NULL,
        value TEXT NOT NULL,
        stats TEXT NOT NULL,
        created REAL NOT NULL
    )
    """,
]


#: One stored call as a row: (key, kind, model_sha256, prompt, value JSON, stats JSON, created).
Entry = tuple[str, str, str, str, str, str, float]
ENTRY_COLUMNS = "key, kind, model_sha256, prompt, value, stats, created"


def default_cache_path() -> Path:
    """$LOCALEVAL_CACHE (a file path) if set, else .localeval-cache/judge.sqlite under the current directory."""
    return current().cache_path


def make_key(**parts: Any) -> str:
    """sha256 of the parts as canonical JSON (sorted keys), with the cache format version mixed in."""
    payload = dict(parts, cache_format_version=CACHE_FORMAT_VERSION)
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    # surrogatepass: inputs are checked for lone surrogates, but a key must never be the place that crashes
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


SQLITE_MAGIC = b"SQLite format 3\x00"


def check_cache_path(path: Path) -> None:
    """Raise OptionError unless `path` can serve as the judge cache: an SQLite file we can read and write
    (or nothing yet, in a folder we can create files in: SQLite's WAL mode adds files beside it)."""
    from ..files import check_can_create

    where = f"judge cache {path}"
    if path.is_dir():
        raise OptionError(f"{where} is a folder; --cache (or ${CACHE_ENV}) takes a file path")
    if not path.exists():
        try:
            check_can_create(path, "judge cache")
        except OutputError as exc:
            raise OptionError(str(exc)) from None
        return
    if not path.is_file():
        raise OptionError(f"{where} is not a regular file")
    if not os.access(path, os.R_OK | os.W_OK) or not os.access(path.parent, os.W_OK | os.X_OK):
        raise OptionError(f"{where} is not writable (it or its folder is read-only, or not yours)")
    with path.open("rb") as handle:
        head = handle.read(len(SQLITE_MAGIC))
    if head and head != SQLITE_MAGIC:
        raise OptionError(f"{where} is not an SQLite file; point --cache at another file, or delete it")


class JudgeCache:
    """Key → (value, stats of the call that computed it). Values are JSON, so they round-trip exactly."""

    def __init__(self, path: str | Path | None = None, *, any_thread: bool = False) -> None:
        """`any_thread`: the owner calls from another thread than the one that opened the cache, one call
        at a time (a Ray actor: Ray Data builds it in one thread and runs its batches in another)."""
        self.path = Path(path) if path is not None else default_cache_path()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # isolation_level=None: autocommit, each INSERT is durable on return.
            self._db = sqlite3.connect(str(self.path), isolation_level=None, timeout=30.0,
                                       check_same_thread=not any_thread)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._migrate()
        except (sqlite3.Error, OSError) as exc:
            raise JudgeError(f"judge cache {self.path}: {exc}; delete it or set ${CACHE_ENV} to another file") from None

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise JudgeError(
                f"judge cache {self.path} has schema version {version}, newer than this localeval knows "
                f"({len(MIGRATIONS)}); upgrade localeval or use another cache file"
            )
        for target in range(version, len(MIGRATIONS)):
            self._db.execute("BEGIN IMMEDIATE")
            self._db.execute(MIGRATIONS[target])
            self._db.execute(f"PRAGMA user_version = {target + 1}")
            self._db.execute("COMMIT")

    def get(self, key: str) -> tuple[Any, dict[str, Any]] | None:
        with self._failures_in_one_line():
            row = self._db.execute("SELECT value, stats FROM judge_calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return json.loads(row[0]), json.loads(row[1])

    def put(self, key: str, *, kind: str, model_sha256: str, prompt: str, value: Any, stats: dict[str, Any]) -> None:
        """Store one result; `allow_nan=False` because a NaN must never be cached as an answer."""
        self.put_entries([(key, kind, model_sha256, prompt, json.dumps(value, ensure_ascii=False, allow_nan=False),
                           json.dumps(stats, allow_nan=False), time.time())])

    def put_entries(self, entries: Sequence[Entry]) -> None:
        """Store rows exactly as another cache holds them (see `Entry`), in one transaction: how entries
        made elsewhere (a Ray actor's local cache) join this file, keys and values untouched."""
        if not entries:
            return
        with self._failures_in_one_line():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(f"INSERT OR REPLACE INTO judge_calls ({ENTRY_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                                     entries)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def export(self, target: str | Path, model_sha256: str | None = None) -> int:
        """Copy the entries (of one model, when given) into a new cache file at `target`; return how many.
        A consistent snapshot, taken while other processes may be writing, small enough to ship."""
        copy = JudgeCache(target)
        copy.close()
        self._db.execute("ATTACH DATABASE ? AS snapshot", (str(target),))
        try:
            where, args = ("WHERE model_sha256 = ?", (model_sha256,)) if model_sha256 else ("", ())
            moved = self._db.execute(
                f"INSERT OR REPLACE INTO snapshot.judge_calls ({ENTRY_COLUMNS}) SELECT {ENTRY_COLUMNS} FROM judge_calls {where}",
                args).rowcount
        finally:
            self._db.execute("DETACH DATABASE snapshot")
        standalone = sqlite3.connect(str(target))  # out of WAL mode: the file alone then holds every entry
        standalone.execute("PRAGMA journal_mode=DELETE")
        standalone.close()
        return moved

    @contextmanager
    def _failures_in_one_line(self) -> Iterator[None]:
        """A full disk or a cache made read-only mid-run stops the run with one line, not a traceback."""
        try:
            yield
        except sqlite3.Error as exc:
            raise OutputError(f"judge cache {self.path}: {exc}") from None

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

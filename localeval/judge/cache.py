"""Persistent cache of judge calls, so a re-run (or a resumed, killed run) costs no model time.

One SQLite table in WAL mode. Every write is committed at once (autocommit), so a run killed mid-way
loses at most the call in flight. The key is a sha256 over explicit strings — model hash, prompt name,
version and file hash, the rendered prompt, call kind, schema/options, decoding settings and
CACHE_FORMAT_VERSION — so any change that could change an answer misses the cache instead of
returning a stale value. The schema is versioned with `PRAGMA user_version` and only migrated forward.

A cache file damaged by a crash, a full disk or a bad copy must never answer wrongly: SQLite finds a
broken page structure, and each row carries a digest of its key and content (SQLite keeps no checksum
of what a page holds), checked on every read. Damage stops the run with one line (`DamagedCache`); the
same command with --move-damaged-cache moves the file aside and starts a new one. A SQLite file of
something else is refused, never written into.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
import warnings
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
    # A digest of each row (see `row_digest`); rows stored before it have none and are read unchecked.
    "ALTER TABLE judge_calls ADD COLUMN digest TEXT",
]


#: One stored call as a row: (key, kind, model_sha256, prompt, value JSON, stats JSON, created).
Entry = tuple[str, str, str, str, str, str, float]
ENTRY_COLUMNS = "key, kind, model_sha256, prompt, value, stats, created"
#: The columns a judge cache's table has; a table named judge_calls with others is not ours.
TABLE_COLUMNS = ("key", "kind", "model_sha256", "prompt", "value", "stats", "created", "digest")
#: SQLite's own words for a file whose structure is broken (as opposed to a full disk or a locked file).
DAMAGE_WORDS = ("malformed", "not a database", "corrupt", "disk image")


class DamagedCache(OutputError):
    """A judge cache file that cannot be trusted: broken pages, a row whose digest does not match, a value
    that is not JSON. Nothing was answered from it."""

    def __init__(self, path: Path, why: str) -> None:
        self.path, self.why = path, why
        super().__init__(f"judge cache {path} is damaged ({why}); the same command with --move-damaged-cache moves "
                         f"it aside and starts a new cache (its calls are made again), or point --cache at another file")


def row_digest(key: str, value: str, stats: str) -> str:
    """What a row must still hash to when it is read back: its key and its stored content."""
    return hashlib.sha256("\x1f".join((key, value, stats)).encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _altered(key: Any, value: Any, stats: Any, digest: Any) -> str | None:
    """Why a stored row cannot be trusted, or None (a row stored before digests has none to check). A flipped
    bit in a record's header can turn a text column into a blob of the same length that SQLite's own checks
    pass: every column must still be text."""
    if not all(isinstance(v, str) for v in (key, value, stats)) or not isinstance(digest, (str, type(None))):
        return f"a stored row of call {str(key)[:12]} is not text"
    if digest is not None and digest != row_digest(key, value, stats):
        return f"the stored answer of call {key[:12]} no longer matches its digest"
    return None


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


def check_ours(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a SQLite file that holds something else (another program's database, a copy of the wrong
    file): migrating it would write localeval's table into it."""
    tables = [name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    if not tables:
        return  # a new, empty file
    version = db.execute("PRAGMA user_version").fetchone()[0]
    columns = {row[1] for row in db.execute("PRAGMA table_info(judge_calls)")}
    newer = version > len(MIGRATIONS)  # a newer localeval may have added columns, never removed ours
    if "judge_calls" not in tables or (not newer and not columns <= set(TABLE_COLUMNS)) or set(TABLE_COLUMNS[:-1]) - columns:
        shown = ", ".join(sorted(tables)[:5])
        raise OptionError(f"judge cache {path} is a SQLite database of something else (tables: {shown}); point --cache "
                          "at another file")
    if newer:  # refused here, before WAL mode rewrites its header
        raise JudgeError(f"judge cache {path} has schema version {version}, newer than this localeval knows "
                         f"({len(MIGRATIONS)}); upgrade localeval or use another cache file")


def set_aside_if_damaged(path: Path) -> Path | None:
    """Move a damaged cache file (and SQLite's -wal and -shm beside it) to PATH.damaged-TIME and return
    where; None when it is sound (every page and every row's digest checked) or absent."""
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        with JudgeCache(path) as cache:
            why = cache.damage()
    except DamagedCache as exc:  # damaged where the opening reads
        why = exc.why
    if why is None:
        return None
    aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%dT%H%M%S')}")
    for suffix in ("", "-wal", "-shm"):
        source = path.with_name(path.name + suffix)
        if source.exists():
            try:
                os.replace(source, aside.with_name(aside.name + suffix))
            except OSError as exc:
                raise OutputError(f"cannot move the damaged judge cache {source} aside: {exc.strerror or exc}") from None
    warnings.warn(f"judge cache {path} was damaged ({why}); moved to {aside}, a new cache starts", stacklevel=2)
    return aside


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
        except (sqlite3.Error, OSError) as exc:
            raise JudgeError(f"judge cache {self.path}: {exc}; delete it or set ${CACHE_ENV} to another file") from None
        try:
            with self._failures_in_one_line():
                check_ours(self._db, self.path)  # first: WAL mode would rewrite a foreign file's header
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._migrate()
        except BaseException:
            self._db.close()
            raise

    def _migrate(self) -> None:
        version = self._db.execute("PRAGMA user_version").fetchone()[0]  # a newer one: refused by check_ours
        while version < len(MIGRATIONS):
            self._db.execute("BEGIN IMMEDIATE")
            # read again inside the write lock: another run opening the same new cache may have migrated it
            version = self._db.execute("PRAGMA user_version").fetchone()[0]
            if version < len(MIGRATIONS):
                self._db.execute(MIGRATIONS[version])
                version += 1
                self._db.execute(f"PRAGMA user_version = {version}")
            self._db.execute("COMMIT")

    def get(self, key: str) -> tuple[Any, dict[str, Any]] | None:
        with self._failures_in_one_line():
            row = self._db.execute("SELECT value, stats, digest FROM judge_calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        value, stats, digest = row
        why = _altered(key, value, stats, digest)
        if why:
            raise DamagedCache(self.path, why)
        try:
            return json.loads(value), json.loads(stats)
        except (TypeError, ValueError):
            raise DamagedCache(self.path, f"the stored answer of call {key[:12]} is not JSON") from None

    def put(self, key: str, *, kind: str, model_sha256: str, prompt: str, value: Any, stats: dict[str, Any]) -> None:
        """Store one result; `allow_nan=False` because a NaN must never be cached as an answer."""
        self.put_entries([(key, kind, model_sha256, prompt, json.dumps(value, ensure_ascii=False, allow_nan=False),
                           json.dumps(stats, allow_nan=False), time.time())])

    def put_entries(self, entries: Sequence[Entry]) -> None:
        """Store rows exactly as another cache holds them (see `Entry`), in one transaction: how entries
        made elsewhere (a Ray actor's local cache) join this file, keys and values untouched."""
        if not entries:
            return
        rows = [(*entry, row_digest(entry[0], entry[4], entry[5])) for entry in entries]
        with self._failures_in_one_line():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(f"INSERT OR REPLACE INTO judge_calls ({ENTRY_COLUMNS}, digest) "
                                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def export(self, target: str | Path, model_sha256: Sequence[str] = ()) -> int:
        """Copy the entries (of these models, when given) into a new cache file at `target`; return how many.
        A consistent snapshot, taken while other processes may be writing, small enough to ship."""
        copy = JudgeCache(target)
        copy.close()
        with self._failures_in_one_line():  # a damaged page of this cache is named like any other read of it
            self._db.execute("ATTACH DATABASE ? AS snapshot", (str(target),))
            try:
                marks = ", ".join("?" * len(model_sha256))
                where, args = (f"WHERE model_sha256 IN ({marks})", tuple(model_sha256)) if model_sha256 else ("", ())
                moved = self._db.execute(
                    f"INSERT OR REPLACE INTO snapshot.judge_calls ({ENTRY_COLUMNS}, digest) "
                    f"SELECT {ENTRY_COLUMNS}, digest FROM judge_calls {where}", args).rowcount
            finally:
                self._db.execute("DETACH DATABASE snapshot")
        standalone = sqlite3.connect(str(target))  # out of WAL mode: the file alone then holds every entry
        standalone.execute("PRAGMA journal_mode=DELETE")
        standalone.close()
        return moved

    @contextmanager
    def _failures_in_one_line(self) -> Iterator[None]:
        """A damaged file, a full disk or a cache made read-only mid-run stops the run with one line, not a
        traceback; every call answered before is kept, so the same command resumes."""
        try:
            yield
        except sqlite3.Error as exc:
            why = str(exc)
            if any(word in why.lower() for word in DAMAGE_WORDS):
                raise DamagedCache(self.path, why) from None
            if "full" in why.lower():
                raise OutputError(f"judge cache {self.path}: the disk is full ({why}); every call answered so far is "
                                  "kept: free some space and the same command resumes") from None
            raise OutputError(f"judge cache {self.path}: {why}") from None

    def damage(self) -> str | None:
        """Why this cache cannot be trusted, or None: every page (SQLite's quick_check) and every row's
        digest checked, so it reads the whole file."""
        try:
            with self._failures_in_one_line():
                problems = [row[0] for row in self._db.execute("PRAGMA quick_check")]
                if problems != ["ok"]:
                    return f"quick_check: {'; '.join(problems[:3])}"
                for row in self._db.execute("SELECT key, value, stats, digest FROM judge_calls"):
                    why = _altered(*row)
                    if why:
                        return why
        except DamagedCache as exc:
            return exc.why
        return None

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM judge_calls").fetchone()[0]

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> JudgeCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

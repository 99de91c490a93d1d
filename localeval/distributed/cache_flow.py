"""The judge cache across a Ray cluster: the driver's entries go out as a snapshot, new ones come back.

Resuming a killed run must repeat no finished judge call, but actors run on other machines and their
processes die with the driver. So:

- out: at start the driver copies its cache's entries for the run's judge into a standalone SQLite file
  and ships the bytes once (an object in Ray's store); each actor opens a private copy as its cache;
- back: every entry an actor stores is also sent, as it is made, to the `CacheSink` actor, which runs on
  the driver's node and writes the driver's own cache file. Before a chunk's rows are returned, the
  actor waits until the sink has stored every entry of that chunk, so rows never reach the driver ahead
  of the calls behind them.

A driver killed at any point therefore finds, when started again, every call whose entry reached the
sink; only calls in flight at the kill are made again. Keys are the ones `Judge` makes; entries travel as
stored rows (`judge.cache.Entry`) and are never re-encoded.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Sequence

from ..errors import LocalevalError, OutputError
from ..judge.cache import Entry, JudgeCache


def snapshot_bytes(cache_path: Path, model_sha256: Sequence[str]) -> tuple[bytes, int]:
    """The driver's entries of the run's judges (the GGUF judge, and a classifier's folder) as the bytes of a
    standalone cache file, and their count."""
    with tempfile.TemporaryDirectory(prefix="localeval-snapshot-") as tmp:
        target = Path(tmp) / "judge.sqlite"
        with JudgeCache(cache_path) as cache:
            count = cache.export(target, model_sha256)
        return target.read_bytes(), count


class ForwardingCache(JudgeCache):
    """An actor's cache: a private copy of the snapshot that also sends each new entry to the sink."""

    def __init__(self, path: Path, sink: Any) -> None:
        super().__init__(path, any_thread=True)
        self._sink = sink
        self._in_flight: list[Any] = []

    @classmethod
    def from_snapshot(cls, folder: Path, snapshot: bytes | None, sink: Any) -> ForwardingCache:
        path = folder / "judge.sqlite"
        if snapshot:
            path.write_bytes(snapshot)
        return cls(path, sink)

    def put_entries(self, entries: Sequence[Entry]) -> None:
        super().put_entries(entries)
        if entries and self._sink is not None:
            self._in_flight.append(self._sink.put_entries.remote(list(entries)))

    def flush(self) -> int:
        """Wait until the sink has stored everything sent so far; return how many entries that was. The
        sink's failure (the driver's cache file full or damaged) is its own one-line error."""
        import ray

        try:
            return sum(ray.get(self._in_flight)) if self._in_flight else 0
        except ray.exceptions.RayTaskError as exc:
            cause = getattr(exc, "cause", None)
            if isinstance(cause, LocalevalError):
                raise cause from None
            raise OutputError(f"the driver's judge cache could not store this node's entries "
                              f"({type(cause).__name__ if cause else 'an error'}); see the Ray logs") from None
        except ray.exceptions.RayActorError:
            raise OutputError("the writer of the driver's judge cache died (see the Ray logs); every entry it "
                              "stored is kept, and the same command resumes") from None
        finally:
            self._in_flight.clear()


class CacheSink:
    """Runs as a Ray actor on the driver's node and writes the driver's cache file (one writer, in order)."""

    def __init__(self, cache_path: str) -> None:
        self._cache = JudgeCache(cache_path, any_thread=True)

    def put_entries(self, entries: list[Entry]) -> int:
        self._cache.put_entries([tuple(entry) for entry in entries])  # type: ignore[misc]
        return len(entries)

    def size(self) -> int:
        return len(self._cache)

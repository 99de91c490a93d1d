"""Writing result files all or nothing.

Every result file is written beside its target (`.NAME.<pid>.tmp`) and renamed into place; files that
belong together (samples.jsonl, summary.json and summary.csv; a generated test set and its index) are
renamed together by `AtomicFiles`: if any step fails, even one of the final renames, the previous
results are put back and the new ones removed, so a reader finds the old set or the new set, never a
mix. A process killed mid-run leaves only its temp files; the next run writing the same names removes
those of processes that no longer run, and a kill that fell between the final renames (a journal of
them was written first) is finished by that next run. Failures are OutputErrors naming the path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from .errors import OutputError
from .files import dumps, make_dirs
from .interrupts import signals_held

JOURNAL_PREFIX = ".localeval-commit."
_JOURNAL = re.compile(r"^\.localeval-commit\.(\d+)\.json$")


def temp_name(path: Path, suffix: str = "tmp") -> Path:
    """Where a file is written before it is renamed into place: hidden, and named after this process so
    that a later run can tell a dead writer's leftovers from a live one's (see sweep_stale)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{suffix}")


class AtomicFiles:
    """A set of files in one folder (names may include subfolders) that replace their targets together.

    `open(name)` or `temp(name)` gives the temp file to fill; `commit()` makes all of them the results at
    once; leaving the `with` block without a commit (an error, Ctrl-C) removes the temps and leaves the
    previous results untouched. Stale temps of dead processes for the same names are swept on `temp`.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._pairs: list[tuple[Path, Path]] = []
        if folder.exists() and not folder.is_dir():
            raise OutputError(f"cannot write into {folder}: it is a file, not a folder")
        self._created = not folder.exists()
        make_dirs(folder)
        recover_journals(folder)

    def temp(self, name: str) -> Path:
        final = self.folder / name
        if final.is_dir():
            raise OutputError(f"cannot write {final}: a folder of that name is in the way")
        make_dirs(final.parent)
        sweep_stale(final)
        temp = temp_name(final)
        self._pairs.append((temp, final))
        return temp

    def open(self, name: str) -> Any:
        """The temp file of `name`, open for text; OSError becomes OutputError."""
        temp = self.temp(name)
        try:
            return _Guarded(temp.open("w", encoding="utf-8", newline="\n"), temp)
        except OSError as exc:
            raise output_error(temp, exc) from None

    def commit(self, remove: Sequence[str] = ()) -> None:
        """Rename every temp into place and delete the files named in `remove` (left by previous results
        that these do not replace); on any failure restore the previous files and raise OutputError."""
        pairs, self._pairs = self._pairs, []
        if not pairs:
            return
        try:
            self._commit(pairs, remove)
        except BaseException:  # Ctrl-C during an fsync or while waiting for the folder: no temp is left behind
            _remove(temp for temp, _ in pairs)  # (a temp already renamed into place is no longer there)
            raise

    def _commit(self, pairs: list[tuple[Path, Path]], remove: Sequence[str]) -> None:
        try:
            for temp, final in pairs:
                if final.is_dir():
                    raise OutputError(f"cannot write {final}: a folder of that name is in the way")
                _fsync(temp)
        except (OSError, OutputError) as exc:
            _remove(temp for temp, _ in pairs)
            raise exc if isinstance(exc, OutputError) else output_error(temp, exc) from None
        self._created = False
        if len(pairs) == 1:  # one rename is atomic by itself
            temp, final = pairs[0]
            try:
                os.replace(temp, final)
            except OSError as exc:
                _remove([temp])
                raise output_error(final, exc) from None
            _fsync_dir(final.parent)
            _unlink_stale(self.folder, remove)
            return
        _commit_set(self.folder, pairs, remove)

    def discard(self) -> None:
        """Remove the temps (and the folder, if this run created it and left it empty)."""
        pairs, self._pairs = self._pairs, []
        _remove(temp for temp, _ in pairs)
        if self._created:
            try:
                self.folder.rmdir()  # fails, as it should, when anything is in it
            except OSError:
                pass
            self._created = False

    def __enter__(self) -> AtomicFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()


class _Guarded:
    """A text file whose OSErrors (disk full, I/O error) are OutputErrors naming it."""

    def __init__(self, handle: Any, path: Path) -> None:
        self._handle, self.path, self.name = handle, path, str(path)

    def write(self, text: str) -> None:
        try:
            self._handle.write(text)
        except OSError as exc:
            raise output_error(self.path, exc) from None

    def flush(self) -> None:
        try:
            self._handle.flush()
        except OSError as exc:
            raise output_error(self.path, exc) from None

    def close(self) -> None:
        try:
            self._handle.close()
        except OSError as exc:
            raise output_error(self.path, exc) from None

    def __enter__(self) -> _Guarded:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _commit_set(folder: Path, pairs: list[tuple[Path, Path]], remove: Sequence[str] = ()) -> None:
    """Several renames as one step: keep the old files as hard-linked backups, write a journal, rename;
    on failure put the backups back. A kill between the renames is finished by `recover_journals`."""
    with _folder_lock(folder), signals_held():
        _renames(folder, pairs)
        _unlink_stale(folder, remove)


def _unlink_stale(folder: Path, names: Sequence[str]) -> None:
    for name in names:
        try:
            (folder / name).unlink(missing_ok=True)
        except OSError as exc:
            raise OutputError(f"cannot remove {folder / name}, left by the previous results of this folder: "
                              f"{exc.strerror or exc}; delete it by hand") from None


def _renames(folder: Path, pairs: list[tuple[Path, Path]]) -> None:
    backups: dict[Path, Path] = {}
    journal = folder / f"{JOURNAL_PREFIX}{os.getpid()}.json"
    done: list[Path] = []
    try:
        for _, final in pairs:
            if final.exists():
                backup = temp_name(final, "bak")
                _link_or_copy(final, backup)
                backups[final] = backup
        _write_journal(journal, folder, pairs)
        for temp, final in pairs:
            os.replace(temp, final)
            done.append(final)
    except BaseException as exc:  # a disk error, or Ctrl-C where no handler holds it (a Python caller)
        failed = pairs[len(done)][1] if len(done) < len(pairs) else folder
        for final in done:  # roll back: the previous file, or none if there was none
            try:
                os.replace(backups[final], final) if final in backups else final.unlink()
            except OSError:
                pass
        _remove([temp for temp, _ in pairs] + list(backups.values()) + [journal])
        if not isinstance(exc, OSError):
            raise
        raise OutputError(f"cannot write {failed}: {exc.strerror or exc}; the previous results in {folder} are "
                          "unchanged") from None
    _fsync_dir(folder)
    _remove([journal, *backups.values()])


#: Folders this process holds for a whole run (`one_run_at_a_time`), as (device, inode).
_HELD: set[tuple[int, int]] = set()


@contextmanager
def one_run_at_a_time(folder: Path) -> Iterator[None]:
    """Hold `folder` for a whole run, so that a second run into it stops at once with one line instead
    of both computing for hours and the last one silently replacing the other's results. The folder is
    created if missing (and removed again, with the parents it needed, if the run leaves it empty: a run
    stopped by bad input leaves nothing behind). flock on the folder itself: the kernel drops it when the
    process dies, however it dies, and no lock file is left behind."""
    created = [p for p in (folder, *folder.parents) if not p.exists()]  # deepest first
    make_dirs(folder)
    with _opened(folder) as fd:
        if fd is None:
            yield
            return
        import fcntl

        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise OutputError(f"output folder {folder} is in use by another localeval run; wait until it ends, or "
                              "write into another folder") from None
        held = _identity(fd)
        _HELD.add(held)
        try:
            yield
        finally:
            _HELD.discard(held)
            for made in created:
                try:
                    made.rmdir()  # fails, as it should, when the run wrote anything
                except OSError:
                    break


@contextmanager
def _folder_lock(folder: Path) -> Iterator[None]:
    """Two runs committing into one folder take turns, so neither can interleave its renames with the
    other's (flock on the folder itself: no lock file is left behind). A folder this process holds for
    its run already excludes every other run."""
    with _opened(folder) as fd:
        if fd is not None and _identity(fd) not in _HELD:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield


@contextmanager
def _opened(folder: Path) -> Iterator[int | None]:
    """A descriptor of `folder` to flock, closed (and so unlocked) on the way out; None where there is
    no flock (Windows) or the folder cannot be opened: the run goes on without the lock."""
    try:
        import fcntl  # noqa: F401 - only where it exists
        fd = os.open(folder, os.O_RDONLY)
    except (ImportError, OSError):
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _identity(fd: int) -> tuple[int, int]:
    status = os.fstat(fd)
    return status.st_dev, status.st_ino


def _write_journal(journal: Path, folder: Path, pairs: list[tuple[Path, Path]]) -> None:
    """The renames about to happen, durable before the first one: a partial journal means none started."""
    entries = [[str(temp.relative_to(folder)), str(final.relative_to(folder))] for temp, final in pairs]
    with journal.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"renames": entries}) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def recover_journals(folder: Path) -> None:
    """Finish the renames of a process killed while committing (its journal is complete), then clean up."""
    try:
        names = [entry.name for entry in os.scandir(folder) if _JOURNAL.match(entry.name)]
    except OSError:
        return
    for name in names:
        pid = int(_JOURNAL.match(name).group(1))  # type: ignore[union-attr]
        if _alive(pid):
            continue
        journal = folder / name
        try:
            renames = json.loads(journal.read_text(encoding="utf-8"))["renames"]
        except (OSError, ValueError, KeyError, TypeError):
            renames = None  # cut short while being written: no rename had started; the temps are swept
        for temp_rel, final_rel in renames or []:
            temp, final = folder / temp_rel, folder / final_rel
            try:
                if temp.exists():
                    os.replace(temp, final)
            except OSError:
                pass
            _remove([final.with_name(f".{final.name}.{pid}.bak")])
        _remove([journal])


def sweep_stale(final: Path) -> None:
    """Remove `.NAME.<pid>.tmp` / `.bak` files beside `final` left by processes that no longer run.

    Only the names this run is about to write are swept, so nothing else in a user's folder is touched.
    """
    pattern = re.compile(r"^\." + re.escape(final.name) + r"\.(\d+)\.(?:tmp|bak)$")
    try:
        entries = [entry.name for entry in os.scandir(final.parent) if entry.name.startswith("." + final.name + ".")]
    except OSError:
        return
    for name in entries:
        match = pattern.match(name)
        if match and not _alive(int(match.group(1))):
            _remove([final.parent / name])


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # someone else's process (or a pid we cannot ask about): leave its files alone
    return True


def _link_or_copy(source: Path, target: Path) -> None:
    target.unlink(missing_ok=True)
    try:
        os.link(source, target)
    except OSError:  # a filesystem without hard links
        shutil.copy2(source, target)


def _fsync(path: Path) -> None:
    with path.open("rb") as handle:
        os.fsync(handle.fileno())


def _fsync_dir(folder: Path) -> None:
    """Make the renames durable; a filesystem that cannot sync a folder is not an error."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(paths: Iterable[Path]) -> None:
    for path in paths:
        try:
            path.unlink(missing_ok=True)
        except OSError:
            pass


def output_error(path: Path, exc: OSError) -> OutputError:
    return OutputError(f"cannot write {path}: {exc.strerror or exc}")


def write_text_atomic(path: Path, text: str) -> None:
    """Write beside the target, then rename: readers see the old file or the new one, never half of one."""
    with AtomicFiles(path.parent) as files:
        with files.open(path.name) as handle:
            handle.write(text)
        files.commit()


def write_json_atomic(path: Path, payload: Any) -> None:
    write_text_atomic(path, dumps(payload, indent=2) + "\n")

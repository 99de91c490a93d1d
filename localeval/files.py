"""Reading input files and writing result files, the same careful way everywhere.

Reading: a path must be a regular, readable file (a folder or a FIFO is named as such, not as "no such
file"), and text is decoded line by line as strict UTF-8, so a bad byte is reported with its line and
column instead of being scored as mojibake.

Writing: `check_output_dir` / `check_output_file` tell before any work whether results can go where
asked; every result file is then written through atomic.py (beside its target, renamed into place, all
files of a result set together), so a failure never leaves half a result. Every failure to write is an
OutputError naming the path, never a traceback.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Iterator, Sequence

from .errors import InputError, OutputError


def check_readable(path: Path) -> None:
    """Raise InputError unless `path` is a regular file this process can read."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise InputError(str(path), None, None, "no such file") from None
    except OSError as exc:
        raise InputError(str(path), None, None, f"cannot read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise InputError(str(path), None, None, "is a folder, not a file")
    if not stat.S_ISREG(mode):
        raise InputError(str(path), None, None, "is not a regular file (a pipe or device?); give a file")
    if not os.access(path, os.R_OK):
        raise InputError(str(path), None, None, "cannot read: permission denied")


def decoded_lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, text) of each line, strict UTF-8; a byte-order mark on the first line is dropped."""
    check_readable(path)
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, start=1):
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):  # dropped here, so a bad byte's column is the
                    raw = raw[3:]                                     # text's, as in the same file without it
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    message = f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
                    raise InputError(str(path), number, None, message) from None
                yield number, text
    except OSError as exc:  # e.g. EIO, or a file that vanished between the check and the read
        raise InputError(str(path), None, None, f"cannot read: {exc.strerror or exc}") from None


def read_text(path: Path) -> str:
    """A whole (small) file as strict UTF-8, with the same errors as decoded_lines."""
    return "".join(text for _, text in decoded_lines(path))


def dumps(obj: Any, indent: int | None = None) -> str:
    """JSON that refuses NaN/Infinity: a non-finite number is a bug to surface, not a value to write."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=indent)


# ---- where results may go -------------------------------------------------------------------------


def check_output_dir(folder: Path, names: Sequence[str] = ()) -> None:
    """Raise OutputError unless results can be written into `folder` (existing or creatable) under `names`.

    Called before any work, so a bad --out costs nothing; the same problems are still caught when writing.
    """
    if folder.exists() or folder.is_symlink():
        if not folder.is_dir():
            raise OutputError(f"output folder {folder} is a file; give a folder")
        if not os.access(folder, os.W_OK | os.X_OK):
            raise OutputError(f"output folder {folder} is not writable (read-only, or not yours)")
        for name in names:
            if (folder / name).is_dir():
                raise OutputError(f"cannot write {folder / name}: a folder of that name is in the way")
    else:
        check_can_create(folder, "output folder")


def check_output_file(path: Path) -> None:
    """Raise OutputError unless a file can be written at `path` (e.g. `compare -o`)."""
    if path.is_dir():
        raise OutputError(f"output file {path} is a folder; give a file name")
    parent = path.parent
    if parent.exists():
        if not parent.is_dir():
            raise OutputError(f"cannot write {path}: {parent} is a file, not a folder")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"cannot write {path}: folder {parent} is not writable (read-only, or not yours)")
    else:
        check_can_create(parent, "folder")


def check_can_create(path: Path, what: str) -> None:
    """`path` does not exist: its nearest existing ancestor must be a folder we may write into."""
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise OutputError(f"cannot create {what} {path}: {ancestor} is a file, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"cannot create {what} {path}: {ancestor} is not writable (read-only, or not yours)")


def make_dirs(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create folder {folder}: {exc.strerror or exc}") from None

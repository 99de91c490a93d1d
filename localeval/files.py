"""Reading input files and writing result files, the same careful way everywhere.

Reading: a path must be a regular, readable file (a folder or a FIFO is named as such, not as "no such
file"), and text is decoded line by line as strict UTF-8, so a bad byte is reported with its line and
column instead of being scored as mojibake. Writing: beside the target, then renamed into place, so a
reader sees the old file or the new one and never half of one.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Iterator

from .errors import InputError


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
    with path.open("rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if number == 1 else "utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    str(path), number, None, f"is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
                ) from None
            yield number, text


def read_text(path: Path) -> str:
    """A whole (small) file as strict UTF-8, with the same errors as decoded_lines."""
    return "".join(text for _, text in decoded_lines(path))


def temp_name(path: Path) -> Path:
    """Where a file is written before it is renamed into place: hidden, and named after this process so
    that a later run can tell a dead writer's leftovers from a live one's (see remove_stale_temps)."""
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def write_text_atomic(path: Path, text: str) -> None:
    """Write beside the target, then rename: readers see the old file or the new one, never half of one."""
    temp = temp_name(path)
    try:
        with temp.open("w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def dumps(obj: Any, indent: int | None = None) -> str:
    """JSON that refuses NaN/Infinity: a non-finite number is a bug to surface, not a value to write."""
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=indent)


def write_json_atomic(path: Path, payload: Any) -> None:
    write_text_atomic(path, dumps(payload, indent=2) + "\n")

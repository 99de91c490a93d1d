"""The one JSON decoder every reader of user files uses: it accepts only what can be written back as it was.

Python's `json` module is lenient where that loses data or crashes later: a repeated key silently keeps
the last value, `NaN`/`Infinity` (and `1e999`) decode to floats that no JSON writer accepts, an escaped
lone surrogate (`"\\ud800"`) decodes to a string that cannot be encoded as UTF-8, a 5,000-digit integer
cannot be turned back into text, and deep nesting overflows the recursive decoder with a RecursionError.
`parse_json` refuses each of these with an InputError naming the file, line and (where known) field, so a
bad record stops the run at validation instead of as a traceback when the results are written. Input
JSONL, CSV cells, labels, scored runs and corpus JSONL all go through it.

`check_json_value` applies the same rules to values built in memory (records given to the Python API).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Callable, Sequence

from .errors import InputError
from .limits import MAX_INT_DIGITS, MAX_JSON_DEPTH

# A JSON string (so brackets inside strings are not counted as nesting), or one bracket.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
# Only an escape can put a surrogate into decoded text (strict UTF-8 decoding refuses raw ones).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")
_SURROGATE = re.compile("[\ud800-\udfff]")
# Literals outside strings (group 1), for the column of a refused one.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"|'
_LONG_INTEGER = re.compile(_STRING + r"(-?\d{%d,})" % (MAX_INT_DIGITS + 1), re.DOTALL)
_CONSTANT = re.compile(_STRING + r"(-?(?:NaN|Infinity))", re.DOTALL)


class _Refused(ValueError):
    """Raised from inside the decoder's hooks; turned into an InputError by parse_json."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message, self.field = message, field


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Refused("appears twice in one object (a JSON reader would keep only the last value)",
                       repeated_key(pairs))
    return obj


def repeated_key(pairs: Sequence[tuple[Any, Any]]) -> Any:
    """The first key that (key, value) pairs give twice, or None: a dict of them would keep only the last
    value (a JSON object here, a Parquet map column in data/loading.py)."""
    seen: set[Any] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return None


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not a JSON number (write null for a missing value)")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:40]} is too large for a 64-bit float")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS}; "
                       "write a long id as a string)")
    return int(text)


_DECODER = json.JSONDecoder(object_pairs_hook=_object, parse_constant=_constant, parse_float=_float, parse_int=_int)


def parse_json(text: str, source: str, line: int | None = None, field: str | None = None,
               problem: str = "invalid JSON") -> Any:
    """Decode one JSON value (a JSONL line, a CSV cell, a header value); InputError if it is not faithful JSON.

    `field` names where the text came from (a CSV column) when the value itself has no field names;
    `problem` starts the message (a CSV cell says "cell must hold JSON").
    """

    def fail(message: str, inner: str | None = None, offset: int | None = None) -> InputError:
        where = ".".join(part for part in (field, inner) if part) or None
        at_line, position = line, ""
        if offset is not None:
            at_line, column = _locate(text, offset, line)
            position = f" at column {column}"
        return InputError(source, at_line, where, message + position)

    deep = _too_deep(text)
    if deep is not None:
        raise fail(f"{problem}: nested more than {MAX_JSON_DEPTH} levels deep", offset=deep)
    try:
        value = _DECODER.decode(text)
    except _Refused as exc:
        raise fail(f"{problem}: {exc.message}", exc.field, _offset_of(text, exc)) from None
    except json.JSONDecodeError as exc:
        # "Unterminated string starting at" ends in "at": the column follows without repeating it.
        raise fail(f"{problem}: {exc.msg.removesuffix(' at')}", offset=exc.pos) from None
    except RecursionError:  # a stack already deep when called; the depth check makes this rare
        raise fail(f"{problem}: nested too deeply to decode (at most {MAX_JSON_DEPTH} levels)") from None
    if _SURROGATE_ESCAPE.search(text):
        inner = _surrogate_path(value, "")
        if inner is not None:
            raise fail("holds an unpaired surrogate escape (\\ud800-\\udfff), which is not a character and "
                       "cannot be written as UTF-8", inner or None)
    return value


def finite_number(value: Any) -> bool:
    """A JSON number a mean can take: an int or float, finite, and not a bool (True is an int in Python)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_json_value(value: Any, fail: Callable[[str | None, str], Exception], path: str = "", depth: int = 0) -> None:
    """Raise fail(field, message) unless `value` is a JSON value parse_json would accept (in-memory records)."""
    if depth > MAX_JSON_DEPTH:
        raise fail(path or None, f"is nested more than {MAX_JSON_DEPTH} levels deep")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        if _SURROGATE.search(value):
            raise fail(path or None, "holds an unpaired surrogate (\\ud800-\\udfff), which cannot be written as UTF-8")
    elif isinstance(value, int):
        if value.bit_length() > MAX_INT_DIGITS * 3.33:  # ~digits * log2(10); exact enough for a sanity limit
            raise fail(path or None, f"is an integer of more than {MAX_INT_DIGITS} digits")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise fail(path or None, f"must be a finite number, got {value!r}")
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_json_value(item, fail, f"{path}[{i}]", depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise fail(path or None, f"has a key {key!r} that is not a string")
            check_json_value(key, fail, path, depth + 1)
            check_json_value(item, fail, f"{path}.{key}" if path else key, depth + 1)
    else:
        raise fail(path or None, f"is a {type(value).__name__}, which is not a JSON value")


def _locate(text: str, offset: int, line: int | None) -> tuple[int | None, int]:
    """The line and 1-based column of `offset`: a JSONL line or a cell keeps the caller's line; a whole file
    (summary.json, no line given) gets the line the offset is on, so the message says where to look."""
    start = text.rfind("\n", 0, offset) + 1
    if line is None and "\n" in text:
        line = text.count("\n", 0, offset) + 1
    return line, offset - start + 1


def _too_deep(text: str) -> int | None:
    """Offset of the first bracket nested beyond MAX_JSON_DEPTH, found without recursion."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:  # the common case: cannot be that deep
        return None
    depth = 0
    for token in _TOKENS.finditer(text):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return token.start()
        elif char in "]}":
            depth -= 1
    return None


def _offset_of(text: str, refused: _Refused) -> int | None:
    """Where a refused literal is, when it can be found without decoding again."""
    if "digits" in refused.message:
        pattern = _LONG_INTEGER
    elif "not a JSON number" in refused.message:
        pattern = _CONSTANT
    else:
        return None
    match = next((m for m in pattern.finditer(text) if m.group(1)), None)
    return match.start(1) if match else None


def _surrogate_path(value: Any, path: str) -> str | None:
    """The field holding a lone surrogate ("" for the top level), or None."""
    if isinstance(value, str):
        return path if _SURROGATE.search(value) else None
    if isinstance(value, list):
        for i, item in enumerate(value):
            found = _surrogate_path(item, f"{path}[{i}]")
            if found is not None:
                return found
    elif isinstance(value, dict):
        for key, item in value.items():
            if _SURROGATE.search(key):
                return path
            found = _surrogate_path(item, f"{path}.{key}" if path else key)
            if found is not None:
                return found
    return None
